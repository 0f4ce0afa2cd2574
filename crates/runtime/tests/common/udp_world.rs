//! Three UDP fabric processes in one, without sockets or TUN devices, on one virtual clock: the
//! runtime's own agents ([`FabricEmu`], two [`AttachEmu`] with their OS side [`AttachOsPort`])
//! driven as the real-time driver drives them (`ipoib_runtime::realtime::Driver::turn`): a turn
//! hands the datagrams due to a process (and the packets its OS sent) to the agent at its
//! present, runs it to the turn's time plus the driver's slack of 200 µs, and takes what it
//! sends. Datagrams reach the other process 10 µs later, in memory. Nothing depends on wall
//! time. Used by `examples/udppath.rs` (instructions per packet) and `tests/udp_memory.rs`.
//!
//! In datagram mode with offload ([`World::with_mode`]) the hosts' TUN devices are as `ipoib
//! attach` opens them (docs/LINUX-DEVICE.md "Offload at the TUN device"): a read may be a TCP
//! super-packet, cut by `ipoib_runtime::gso` as `TunEndpoint::on_readable` cuts it, and the
//! packets for the OS go through the writer thread's receive offload (`ipoib_runtime::gro`,
//! [`tun_writer`]).
#![allow(dead_code)]

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::remote::{FabricOptions, FabricServer, Outgoing};
use ipoib_fabric::node::subnet::SubnetOptions;
use ipoib_fabric::Instant;
use ipoib_proto::ipoib::IpBuf;
use ipoib_runtime::gso::{self, VnetHdr};
use ipoib_runtime::realtime::Emulation;
use ipoib_runtime::tun::{OsPort, FRAME_HEADROOM, HAND_OVER_MIN, READ_BUFFER};
use ipoib_runtime::udp_fabric::{AttachEmu, AttachOptions, AttachOsPort, DatagramPeer, FabricEmu};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

/// IP packets host A hands over per batch (one TCP window's worth per answer).
pub const BATCH: usize = 16;
/// The driver's slack (`realtime::Config::default`).
pub const SLACK: Duration = Duration::from_micros(200);
/// From a process's send to the other's receive.
pub const LATENCY: Duration = Duration::from_micros(10);

/// Where a datagram goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proc {
    A,
    Fabric,
    B,
}

pub fn fabric_addr() -> SocketAddr {
    (Ipv4Addr::LOCALHOST, 4000).into()
}

pub fn host_addr(i: u16) -> SocketAddr {
    (Ipv4Addr::LOCALHOST, 5000 + i).into()
}

/// An IPv4 UDP packet of `len` bytes from 10.0.0.`from` to 10.0.0.`to` (header checksum right).
pub fn ipv4(len: usize, from: u8, to: u8) -> Vec<u8> {
    let mut p = vec![0x5a; len];
    let h = &mut p[..20];
    h[..12].copy_from_slice(&[0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 17, 0, 0]);
    h[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    h[12..16].copy_from_slice(&Ipv4Addr::new(10, 0, 0, from).octets());
    h[16..20].copy_from_slice(&Ipv4Addr::new(10, 0, 0, to).octets());
    let mut sum = 0u32;
    for w in h.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    h[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    p[20..22].copy_from_slice(&40000u16.to_be_bytes());
    p[22..24].copy_from_slice(&5001u16.to_be_bytes());
    p[24..26].copy_from_slice(&((len - 20) as u16).to_be_bytes());
    p
}

/// One read of a TUN device: the virtio header the kernel put in front of the packet (all zero
/// for a whole packet, `gso::PLAIN_HDR`) and the packet.
pub type OsRead<'a> = (VnetHdr, &'a [u8]);

/// A whole packet as a read of a TUN device.
pub fn plain(p: &[u8]) -> OsRead<'_> {
    (VnetHdr::default(), p)
}

/// Payload bytes of a TCP segment at MTU 2,044 (`attach::DATAGRAM_MTU`): less the IPv4 header,
/// the TCP header and its timestamps option (20 + 20 + 12 bytes).
pub const DGRAM_MSS: u16 = 1_992;

/// A TCP super-packet as a TUN device with offload hands it over (`IFF_VNET_HDR`,
/// docs/LINUX-DEVICE.md "Offload at the TUN device"): IPv4 from 10.0.0.`from` to 10.0.0.`to`
/// (DF, identification `id`), TCP with the timestamps option (32 bytes), sequence number `seq`,
/// `segs` segments of `mss` payload bytes; the virtio header asks for TCPv4 segmentation and
/// the checksum (`VIRTIO_NET_HDR_F_NEEDS_CSUM`), whose field holds the pseudo-header's sum.
pub fn tcp_super(from: u8, to: u8, id: u16, seq: u32, mss: u16, segs: usize) -> (VnetHdr, Vec<u8>) {
    let head = 20 + 32;
    let len = head + usize::from(mss) * segs;
    let mut p = vec![0x5a; len];
    p[..12].copy_from_slice(&[0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 6, 0, 0]);
    p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[12..16].copy_from_slice(&Ipv4Addr::new(10, 0, 0, from).octets());
    p[16..20].copy_from_slice(&Ipv4Addr::new(10, 0, 0, to).octets());
    let c = gso::checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    let t = &mut p[20..head];
    t[..4].copy_from_slice(&[0x9c, 0x40, 0x14, 0x51]); // ports 40000, 5201
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&1u32.to_be_bytes());
    t[12..14].copy_from_slice(&[8 << 4, 0x18]); // 32 bytes; ACK, PSH
    t[14..16].copy_from_slice(&512u16.to_be_bytes());
    t[16..20].copy_from_slice(&[0; 4]);
    t[20..32].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 1]); // NOP NOP TS
    let hdr = VnetHdr {
        flags: gso::F_NEEDS_CSUM,
        gso_type: gso::GSO_TCPV4,
        hdr_len: head as u16,
        gso_size: mss,
        csum_start: 20,
        csum_offset: 16,
    };
    (hdr, p)
}

/// One attach process: its agent, the datagrams its last flush sent (their bodies given back at
/// its next turn, as `UdpEndpoint::flush` gives them after sending), its TUN read buffer, what
/// it gave its OS.
pub struct Host {
    pub emu: AttachEmu,
    pub os: AttachOsPort,
    pub sent: Vec<Outgoing>,
    pub buf: Vec<u8>,
    pub to_os: Vec<IpBuf>,
    pub delivered: usize,
    pub delivered_bytes: u64,
    /// The TUN device has offload: the writer thread coalesces runs of TCP segments.
    pub offload: bool,
    /// Writes to the TUN device (a coalesced run is one).
    pub writes: usize,
}

impl Host {
    pub fn new(i: u16) -> Host {
        Host::with_mode(i, true)
    }

    /// Connected mode, or datagram mode with offload at the TUN device.
    pub fn with_mode(i: u16, connected: bool) -> Host {
        let mut o = AttachOptions::new(fabric_addr());
        o.ipv4 = Some((Ipv4Addr::new(10, 0, 0, 2 + i as u8), 24));
        o.ipv6_on = false;
        o.connected = connected;
        o.external = true;
        o.seed = 0x5eed_0000 + u64::from(i);
        Host {
            emu: AttachEmu::new(&o),
            os: AttachOsPort,
            sent: Vec::new(),
            buf: vec![0; READ_BUFFER],
            to_os: Vec::new(),
            delivered: 0,
            delivered_bytes: 0,
            offload: !connected,
            writes: 0,
        }
    }
}

/// The three processes and the datagrams between them.
pub struct World {
    pub a: Host,
    pub b: Host,
    pub fabric: FabricEmu,
    pub fabric_sent: Vec<(SocketAddr, Outgoing)>,
    /// (due, to, from, datagram).
    pub wire: Vec<(Instant, Proc, SocketAddr, Vec<u8>)>,
    pub now: Instant,
}

/// A host's turn (the driver's: the socket's datagrams, then the TUN device's packets and the
/// end of its batch, the run to the turn's time plus the slack, the socket's flush, the TUN
/// device's flush). `packets`: what the OS sent, each read as `TunEndpoint::on_readable` reads
/// it (the read itself, the kernel's copy, in `os_read`; a super-packet cut by `gso::segment`).
#[inline(always)]
fn turn_host<const SIDE: u8>(h: &mut Host, now: Instant, data: &[Vec<u8>], packets: &[OsRead]) {
    // The bodies of what the last flush sent go back, as `UdpEndpoint::flush` gives them.
    for o in h.sent.drain(..) {
        h.emu.recycle(o.body);
    }
    // The packets of the last turn for the OS, written by the writer thread, come back, as
    // `TunEndpoint::flush` gives them back.
    for p in h.to_os.drain(..) {
        h.os.recycle_to_os(&mut h.emu, p);
    }
    for d in data {
        h.emu.on_datagram(fabric_addr(), d);
    }
    for &(hdr, p) in packets {
        let len = os_read::<SIDE>(&mut h.buf, p);
        let packet = &mut h.buf[FRAME_HEADROOM..FRAME_HEADROOM + len];
        if hdr.is_gso() {
            let (os, emu) = (&mut h.os, &mut h.emu);
            gso::segment_into(&hdr, packet, FRAME_HEADROOM, &mut |f| {
                // A spare buffer given back is not needed: `buf` stays.
                let _ = os.frame_from_os(emu, f);
                os.segment_buffer(emu).unwrap_or_default()
            })
            .expect("a well-formed super-packet");
            continue;
        }
        if hdr.flags & gso::F_NEEDS_CSUM != 0 {
            gso::complete_checksum(&hdr, packet).expect("a well-formed packet");
        }
        if len >= HAND_OVER_MIN {
            let mut frame = std::mem::take(&mut h.buf);
            frame.truncate(FRAME_HEADROOM + len);
            // As `TunEndpoint::on_readable`: the buffer handed back is the next read's.
            h.buf = match h.os.frame_from_os(&mut h.emu, frame) {
                Some(mut b) if b.capacity() >= READ_BUFFER => {
                    b.resize(READ_BUFFER, 0);
                    b
                }
                _ => vec![0; READ_BUFFER],
            };
        } else {
            h.os.packet_from_os(&mut h.emu, &h.buf[FRAME_HEADROOM..FRAME_HEADROOM + len]);
        }
    }
    if !packets.is_empty() {
        h.os.end_of_batch(&mut h.emu);
    }
    let target = (now + SLACK).max(h.emu.now());
    h.emu.run_until(target);
    while let Some((_, o)) = h.emu.next_datagram() {
        h.sent.push(o);
    }
    // The TUN writer thread takes the batch; its buffers come back at the next turn.
    let got = &mut h.to_os;
    h.os.packets_to_os(&mut h.emu, &mut |p| got.push(p));
    h.delivered += h.to_os.len();
    h.delivered_bytes += h.to_os.iter().map(|p| p.len() as u64).sum::<u64>();
}

/// Host A's turn (a function of its own for callgrind).
#[inline(never)]
pub fn turn_a(h: &mut Host, now: Instant, data: &[Vec<u8>], packets: &[OsRead]) {
    turn_host::<0>(h, now, data, packets);
}

/// Host B's turn (a function of its own for callgrind).
#[inline(never)]
pub fn turn_b(h: &mut Host, now: Instant, data: &[Vec<u8>], packets: &[OsRead]) {
    turn_host::<1>(h, now, data, packets);
}

/// Host A's TUN writer thread (a function of its own for callgrind).
#[inline(never)]
pub fn writer_a(batch: &[IpBuf]) -> usize {
    tun_writer::<0>(batch)
}

/// Host B's TUN writer thread (a function of its own for callgrind).
#[inline(never)]
pub fn writer_b(batch: &[IpBuf]) -> usize {
    tun_writer::<1>(batch)
}

/// The work of host `SIDE`'s TUN writer thread on the batch of a turn, before its write(2)s
/// (`tun::writer::write_batch` on a device with offload): each run of TCP segments that
/// coalesce becomes one GSO packet (`gro::run_len`, `gro::coalesce`). Returns the writes.
#[inline(always)]
pub fn tun_writer<const SIDE: u8>(batch: &[IpBuf]) -> usize {
    // Two functions of different code, which the compiler does not merge.
    std::hint::black_box(SIDE);
    let (mut i, mut writes) = (0, 0);
    while i < batch.len() {
        let run = ipoib_runtime::gro::run_len(&batch[i..]).max(1);
        if run > 1 {
            std::hint::black_box(ipoib_runtime::gro::coalesce(&batch[i..i + run]));
        }
        i += run;
        writes += 1;
    }
    writes
}

#[inline(never)]
pub fn turn_fabric(
    f: &mut FabricEmu,
    sent: &mut Vec<(SocketAddr, Outgoing)>,
    now: Instant,
    data: &[(SocketAddr, Vec<u8>)],
) {
    for (_, o) in sent.drain(..) {
        f.recycle(o.body);
    }
    for (from, d) in data {
        f.on_datagram(*from, d);
    }
    let target = (now + SLACK).max(f.now());
    f.run_until(target);
    while let Some((to, o)) = f.next_datagram() {
        sent.push((to.unwrap_or_else(fabric_addr), o));
    }
}

/// The kernel's copy of a datagram in `sendmsg(2)` (header and body joined).
#[inline(never)]
pub fn kernel_send(o: &Outgoing) -> Vec<u8> {
    o.to_vec()
}

/// The TUN read(2) of host `SIDE`: `p` copied into the read buffer after the headroom; its
/// length.
#[inline(never)]
pub fn os_read<const SIDE: u8>(buf: &mut [u8], p: &[u8]) -> usize {
    std::hint::black_box(SIDE);
    buf[FRAME_HEADROOM..FRAME_HEADROOM + p.len()].copy_from_slice(p);
    p.len()
}

impl World {
    /// Connected mode.
    pub fn new(pcap: bool) -> World {
        World::with_mode(pcap, true)
    }

    /// Connected mode, or datagram mode with offload at the TUN devices.
    pub fn with_mode(pcap: bool, connected: bool) -> World {
        let mut so = SubnetOptions::new(Topology::single_switch(3).expect("topology"), 7);
        so.capture = pcap;
        let server = FabricServer::build(FabricOptions::new(so)).expect("fabric");
        World {
            a: Host::with_mode(0, connected),
            b: Host::with_mode(1, connected),
            fabric: FabricEmu::new(server),
            fabric_sent: Vec::new(),
            wire: Vec::new(),
            now: Instant::ZERO,
        }
    }

    /// Takes the datagrams due for `to`.
    pub fn due(&mut self, to: Proc) -> Vec<(SocketAddr, Vec<u8>)> {
        let now = self.now;
        let (due, rest) = std::mem::take(&mut self.wire)
            .into_iter()
            .partition(|w| w.1 == to && w.0 <= now);
        self.wire = rest;
        due.into_iter().map(|(_, _, from, d)| (from, d)).collect()
    }

    /// True when process `p` turns now: a datagram for it is due, or its next event is within
    /// the slack (the driver wakes that much before it).
    pub fn wakes(&self, p: Proc, next: Option<Instant>) -> bool {
        self.wire.iter().any(|w| w.1 == p && w.0 <= self.now)
            || next.is_some_and(|t| t <= self.now + SLACK)
    }

    /// One round: each process that has something to do turns once, A, the fabric, B; then the
    /// clock moves on to the next thing due.
    pub fn round(&mut self, os_a: &[OsRead], os_b: &[OsRead]) {
        self.turns(os_a, os_b);
        self.advance();
    }

    /// Each process that has something to do turns once, A, the fabric, B.
    pub fn turns(&mut self, os_a: &[OsRead], os_b: &[OsRead]) {
        let now = self.now;
        let due = now + LATENCY;
        if !os_a.is_empty() || self.wakes(Proc::A, self.a.emu.next_event_at()) {
            let data: Vec<Vec<u8>> = self.due(Proc::A).into_iter().map(|d| d.1).collect();
            turn_a(&mut self.a, now, &data, os_a);
            if self.a.offload {
                self.a.writes += writer_a(&self.a.to_os);
            }
            for o in &self.a.sent {
                self.wire
                    .push((due, Proc::Fabric, host_addr(0), kernel_send(o)));
            }
        }
        if self.wakes(Proc::Fabric, self.fabric.next_event_at()) {
            let data = self.due(Proc::Fabric);
            turn_fabric(&mut self.fabric, &mut self.fabric_sent, now, &data);
            for (to, o) in &self.fabric_sent {
                let p = if *to == host_addr(0) {
                    Proc::A
                } else {
                    Proc::B
                };
                self.wire.push((due, p, fabric_addr(), kernel_send(o)));
            }
        }
        if !os_b.is_empty() || self.wakes(Proc::B, self.b.emu.next_event_at()) {
            let data: Vec<Vec<u8>> = self.due(Proc::B).into_iter().map(|d| d.1).collect();
            turn_b(&mut self.b, now, &data, os_b);
            if self.b.offload {
                self.b.writes += writer_b(&self.b.to_os);
            }
            for o in &self.b.sent {
                self.wire
                    .push((due, Proc::Fabric, host_addr(1), kernel_send(o)));
            }
        }
    }

    /// On to the next thing due: a datagram's arrival, or a process's wake-up.
    pub fn advance(&mut self) {
        let now = self.now;
        let mut next = self.wire.iter().map(|w| w.0).min();
        for t in [
            self.a.emu.next_event_at(),
            self.b.emu.next_event_at(),
            self.fabric.next_event_at(),
        ]
        .into_iter()
        .flatten()
        {
            let t = Instant::from_nanos(t.as_nanos().saturating_sub(SLACK.as_nanos() as u64));
            next = Some(next.map_or(t, |n: Instant| n.min(t)));
        }
        self.now = next.map_or(now + LATENCY, |t| t.max(now + LATENCY));
    }

    /// Rounds until `done` or `limit` of virtual time passed; true when `done` held. The clock
    /// stays at the turns that made `done` hold (it does not jump to the next timer of an idle
    /// world).
    pub fn run(&mut self, limit: Duration, done: impl Fn(&World) -> bool) -> bool {
        let end = self.now + limit;
        if done(self) {
            return true;
        }
        loop {
            if self.now > end {
                return false;
            }
            self.turns(&[], &[]);
            if done(self) {
                return true;
            }
            self.advance();
        }
    }

    pub fn send_a(&mut self, p: &[u8], k: usize) {
        let packets = vec![plain(p); k];
        self.round(&packets, &[]);
    }

    /// Host A's OS hands over these reads in one turn.
    pub fn send_a_reads(&mut self, reads: &[OsRead]) {
        self.round(reads, &[]);
    }

    pub fn send_b(&mut self, p: &[u8]) {
        self.round(&[], &[plain(p)]);
    }
}
