//! Root-only: TUN devices with segmentation offload (`TunConfig::offload`, docs/LINUX-DEVICE.md
//! "Offload at the TUN device") in two namespaces, the real-time driver relaying between them, a
//! TCP stream of 4 MiB across (over IPv4, and over IPv6). The kernel hands the endpoint TCP super-packets; what it gives
//! the emulation must be whole IP packets of at most the MTU with valid checksums (checked here
//! and by tshark on a capture of them), no more per batch than the driver's budget and one
//! super-packet's (at most `tun::GSO_MAX_SEGS`, also when the receiver advertises a small MSS),
//! and the stream must arrive unchanged, the receiving side writing runs of
//! segments as one GSO packet each; a device that refuses writes (down) has every packet it
//! refused counted as dropped and none as written or coalesced. Skipped (with a
//! message) without root or /dev/net/tun. The namespaces are removed on every exit path, every
//! wait is bounded.

use ipoib_fabric::Instant;
use ipoib_proto::ipoib::IpBuf;
use ipoib_runtime::netns::NetNs;
use ipoib_runtime::realtime::{Config, Driver, Emulation, Endpoint};
use ipoib_runtime::tun::{OsPort, Tun, TunConfig, TunCounters, TunEndpoint};
use ipoib_runtime::{gro, gso};
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant as Wall};

const MTU: u32 = 2044;
const STREAM: usize = 4 << 20;

#[path = "common/netns_guard.rs"]
mod netns_guard;
use netns_guard::{can_run, Guard};

/// A namespace `ns` with a TUN device of IPv4 address `v4`/24 and IPv6 address `v6`/64.
fn tun_in(ns: &str, v4: &str, v6: &str) -> (NetNs, Tun) {
    let cfg = TunConfig {
        name: "ib0".into(),
        mtu: MTU,
        addresses: vec![
            (v4.parse::<IpAddr>().unwrap(), 24),
            (v6.parse::<IpAddr>().unwrap(), 64),
        ],
        loopback_up: true,
        up: true,
        offload: true,
        tx_queue_len: Some(4096),
    };
    let (ns, tun) = NetNs::create(ns, move || Tun::create(&cfg)).expect("namespace");
    (ns, tun.expect("TUN device"))
}

/// A wire that delivers every packet at once to the other side and keeps a copy of each.
#[derive(Default)]
struct Wire {
    now: Instant,
    out: [Vec<Vec<u8>>; 2],
    seen: Vec<Vec<u8>>,
    /// Packets handed over since the last end of a batch, and the most in one batch.
    batch: usize,
    largest_batch: usize,
}

impl Emulation for Wire {
    fn now(&self) -> Instant {
        self.now
    }
    fn next_event_at(&self) -> Option<Instant> {
        None
    }
    fn run_until(&mut self, t: Instant) {
        self.now = self.now.max(t);
    }
}

struct Side(usize);

impl OsPort<Wire> for Side {
    fn packet_from_os(&mut self, w: &mut Wire, packet: &[u8]) {
        w.seen.push(packet.to_vec());
        w.out[1 - self.0].push(packet.to_vec());
        w.batch += 1;
    }
    fn end_of_batch(&mut self, w: &mut Wire) {
        w.largest_batch = w.largest_batch.max(std::mem::take(&mut w.batch));
    }
    fn packets_to_os(&mut self, w: &mut Wire, out: &mut dyn FnMut(IpBuf)) {
        for p in w.out[self.0].drain(..) {
            out(p.into());
        }
    }
}

/// RFC 1071 §4.1, word by word.
fn rfc1071(data: &[u8]) -> u16 {
    let mut acc: u32 = 0;
    for w in data.chunks(2) {
        acc += u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]));
    }
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// An IPv4 TCP packet's header and TCP checksums verify (RFC 791 §3.1, RFC 793 §3.1).
fn ipv4_tcp_valid(p: &[u8]) -> bool {
    let ihl = usize::from(p[0] & 0xf) * 4;
    let mut pseudo = p[12..20].to_vec();
    pseudo.extend_from_slice(&[0, p[9]]);
    pseudo.extend_from_slice(&((p.len() - ihl) as u16).to_be_bytes());
    pseudo.extend_from_slice(&p[ihl..]);
    rfc1071(&p[..ihl]) == 0 && rfc1071(&pseudo) == 0
}

/// An IPv6 TCP packet (no extension headers) whose TCP checksum verifies (RFC 8200 §8.1).
fn ipv6_tcp_valid(p: &[u8]) -> bool {
    let mut pseudo = p[8..40].to_vec();
    pseudo.extend_from_slice(&((p.len() - 40) as u32).to_be_bytes());
    pseudo.extend_from_slice(&[0, 0, 0, 6]);
    pseudo.extend_from_slice(&p[40..]);
    p[6] == 6
        && usize::from(u16::from_be_bytes([p[4], p[5]])) == p.len() - 40
        && rfc1071(&pseudo) == 0
}

/// `packets` as a pcap file of raw IP (LINKTYPE_RAW, 101).
fn pcap(packets: &[Vec<u8>]) -> Vec<u8> {
    let mut f = Vec::new();
    for v in [0xa1b2_c3d4u32.to_le_bytes(), [2, 0, 4, 0]] {
        f.extend_from_slice(&v);
    }
    for v in [0u32, 0, 65_535, 101] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    for p in packets {
        for v in [0u32, 0, p.len() as u32, p.len() as u32] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        f.extend_from_slice(p);
    }
    f
}

/// What one stream through the relay left: each side's counters, every packet handed to the
/// emulation, the most handed over in one batch.
struct Relayed {
    counters: [Arc<TunCounters>; 2],
    seen: Vec<Vec<u8>>,
    largest_batch: usize,
}

/// A stream of `STREAM` bytes from a to b through the relay, over IPv6 if `v6` (the receiver
/// advertising `mss` when given, `TCP_MAXSEG` on its listening socket), which must arrive
/// unchanged.
fn relay_stream(tag: &str, mss: Option<u32>, v6: bool) -> Relayed {
    let pid = std::process::id();
    let (a, b) = (
        format!("ipoibt-{tag}a-{pid}"),
        format!("ipoibt-{tag}b-{pid}"),
    );
    let _g = Guard(vec![a.clone(), b.clone()]);
    let (na, ta) = tun_in(&a, "10.9.7.1", "fd00:9:7::1");
    let (nb, tb) = tun_in(&b, "10.9.7.2", "fd00:9:7::2");
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    let relay = std::thread::spawn(move || {
        let mut d = Driver::new(Wire::default(), Config::default()).unwrap();
        let (ea, eb) = (TunEndpoint::new(ta, Side(0)), TunEndpoint::new(tb, Side(1)));
        let counters = [ea.counters(), eb.counters()];
        d.add(Box::new(ea)).unwrap();
        d.add(Box::new(eb)).unwrap();
        let end = Wall::now() + Duration::from_secs(60);
        while !stop2.load(Ordering::Relaxed) && Wall::now() < end {
            d.turn(Wall::now() + Duration::from_millis(20)).unwrap();
        }
        let w = d.into_emulation();
        (counters, w.seen, w.largest_batch)
    });
    let to: SocketAddr = if v6 {
        "[fd00:9:7::2]:5201"
    } else {
        "10.9.7.2:5201"
    }
    .parse()
    .unwrap();
    let listener = nb
        .run_in(move || TcpListener::bind(to))
        .unwrap()
        .expect("listen in b");
    if let Some(mss) = mss {
        nix::sys::socket::setsockopt(&listener, nix::sys::socket::sockopt::TcpMaxSeg, &mss)
            .expect("TCP_MAXSEG");
    }
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).map(|_| got)
    });
    let data: Vec<u8> = (0..STREAM).map(|i| (i % 251) as u8).collect();
    let sent = data.clone();
    let mut c = na
        .run_in(move || TcpStream::connect_timeout(&to, Duration::from_secs(10)))
        .unwrap()
        .expect("connect from a");
    c.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    c.write_all(&sent).expect("send the stream");
    c.shutdown(std::net::Shutdown::Write).unwrap();
    let got = server.join().expect("server thread").expect("receive");
    stop.store(true, Ordering::Relaxed);
    let (counters, seen, largest_batch) = relay.join().expect("relay thread");
    assert!(
        got == data,
        "the stream arrived changed: {} bytes",
        got.len()
    );
    Relayed {
        counters,
        seen,
        largest_batch,
    }
}

#[test]
fn tcp_super_packets_leave_as_whole_packets_with_valid_checksums() {
    if !can_run() {
        return;
    }
    let Relayed {
        counters,
        seen,
        largest_batch,
    } = relay_stream("o", None, false);

    // The receiving side wrote runs of segments as one packet each, and the stream is whole.
    let coalesced = counters[1].to_os_gso.load(Ordering::Relaxed);
    eprintln!("coalesced writes: {coalesced}");
    assert!(coalesced > 0, "no run of segments was coalesced");
    assert_eq!(counters[1].write_errors.load(Ordering::Relaxed), 0);
    let gso = counters[0].from_os_gso.load(Ordering::Relaxed);
    eprintln!(
        "sender: {} packets handed over, {gso} super-packets cut; receiver: {} packets written",
        counters[0].from_os.load(Ordering::Relaxed),
        counters[1].to_os.load(Ordering::Relaxed)
    );
    assert!(gso > 0, "the kernel gave no super-packet");
    assert_eq!(counters[0].offload_errors.load(Ordering::Relaxed), 0);
    // The driver's budget counts packets handed over, not reads: a batch passes it by one
    // super-packet's segments at most (65,535 bytes / an MSS of 1,992 at this MTU), well within
    // what an interface queues (`ipoib_fabric::node::ipoib::FROM_OS_LIMIT`).
    let budget = Config::default().batch;
    eprintln!("largest batch handed over: {largest_batch} packets (budget {budget})");
    assert!(
        largest_batch <= budget + 33,
        "{largest_batch} packets in one batch"
    );
    let tcp: Vec<&Vec<u8>> = seen
        .iter()
        .filter(|p| p[0] >> 4 == 4 && p[9] == 6)
        .collect();
    assert!(tcp.len() > STREAM / 2044, "{} TCP packets", tcp.len());
    for p in &tcp {
        assert!(p.len() <= MTU as usize, "a packet of {} bytes", p.len());
        assert!(ipv4_tcp_valid(p), "bad checksum: {:02x?}", &p[..40]);
    }

    // tshark agrees: every IP header and TCP checksum is good.
    let fields = ["ip.checksum.status", "tcp.checksum.status", "ip.len"];
    let Some(lines) = tshark(&seen, "ip && tcp", &fields) else {
        return;
    };
    assert_eq!(lines.len(), tcp.len());
    for f in lines {
        // 1: Good (tshark's proto_checksum_enum_e).
        assert_eq!(&f[..2], ["1", "1"], "{f:?}");
        assert!(f[2].parse::<u32>().unwrap() <= MTU, "{f:?}");
    }
}

/// The `fields` tshark shows for each packet of `packets` its display filter `filter` takes,
/// with IP and TCP checksums checked; `None` (and a message) without tshark.
fn tshark(packets: &[Vec<u8>], filter: &str, fields: &[&str]) -> Option<Vec<Vec<String>>> {
    if Command::new("tshark").arg("-v").output().is_err() {
        eprintln!("tshark missing: capture not checked by it");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("offload.pcap");
    std::fs::write(&file, pcap(packets)).unwrap();
    let out = Command::new("timeout")
        .arg("60")
        .arg("tshark")
        .args(["-n", "-r"])
        .arg(&file)
        .args([
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "tcp.check_checksum:TRUE",
        ])
        .args(["-Y", filter, "-T", "fields"])
        .args(fields.iter().flat_map(|f| ["-e", f]))
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.lines()
            .map(|l| l.split('\t').map(str::to_string).collect())
            .collect(),
    )
}

#[test]
fn ipv6_tcp_super_packets_leave_whole_and_runs_come_back_coalesced() {
    if !can_run() {
        return;
    }
    let Relayed { counters, seen, .. } = relay_stream("6", None, true);
    // The receiving side wrote runs of IPv6 segments as one packet each (the only TCP here).
    let coalesced = counters[1].to_os_gso.load(Ordering::Relaxed);
    eprintln!(
        "coalesced writes: {coalesced} of {} packets written",
        counters[1].to_os.load(Ordering::Relaxed)
    );
    assert!(coalesced > 0, "no run of IPv6 segments was coalesced");
    assert_eq!(counters[1].write_errors.load(Ordering::Relaxed), 0);
    assert!(counters[0].from_os_gso.load(Ordering::Relaxed) > 0);
    assert_eq!(counters[0].offload_errors.load(Ordering::Relaxed), 0);
    let tcp: Vec<&Vec<u8>> = seen
        .iter()
        .filter(|p| p[0] >> 4 == 6 && p[6] == 6)
        .collect();
    assert!(tcp.len() > STREAM / 2044, "{} TCP packets", tcp.len());
    assert!(!seen.iter().any(|p| p[0] >> 4 == 4 && p[9] == 6));
    for p in &tcp {
        assert!(p.len() <= MTU as usize, "a packet of {} bytes", p.len());
        assert!(ipv6_tcp_valid(p), "bad checksum: {:02x?}", &p[..60]);
    }
    let fields = ["tcp.checksum.status", "ipv6.plen"];
    let Some(lines) = tshark(&seen, "ipv6 && tcp", &fields) else {
        return;
    };
    assert_eq!(lines.len(), tcp.len());
    for f in lines {
        assert_eq!(f[0], "1", "{f:?}");
        assert!(f[1].parse::<u32>().unwrap() + 40 <= MTU, "{f:?}");
    }
}

#[test]
fn a_small_mss_does_not_make_a_batch_larger_than_an_interface_queues() {
    if !can_run() {
        return;
    }
    // A receiver that advertises an MSS of 200 (a peer may: Linux's tcp_min_snd_mss is 48)
    // gets super-packets of up to 65,535 / 200 = 327 segments unless the device caps them
    // (`gso_max_segs`, docs/LINUX-DEVICE.md): one read would pass the interface's queue.
    let r = relay_stream("m", Some(200), false);
    let limit = ipoib_fabric::node::ipoib::FROM_OS_LIMIT;
    eprintln!(
        "largest batch handed over: {} packets, {} super-packets",
        r.largest_batch,
        r.counters[0].from_os_gso.load(Ordering::Relaxed)
    );
    assert!(
        r.largest_batch <= limit,
        "{} packets in one batch",
        r.largest_batch
    );
    let tcp = r.seen.iter().filter(|p| p[0] >> 4 == 4 && p[9] == 6);
    assert!(tcp.clone().count() > STREAM / 200, "the MSS was not taken");
    for p in tcp {
        assert!(p.len() <= 20 + 32 + 200, "a packet of {} bytes", p.len());
    }
}

/// Three in-order TCP segments of one connection (IPv4, DF, ACK; cut by `gso::segment` from one
/// super-packet, so with valid checksums), which a device with offload takes as one write.
fn tcp_run() -> Vec<Vec<u8>> {
    let mut p = vec![0u8; 40];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&3040u16.to_be_bytes());
    p[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
    p[6] = 0x40; // DF
    p[8] = 64;
    p[9] = 6;
    p[12..16].copy_from_slice(&[10, 9, 1, 2]);
    p[16..20].copy_from_slice(&[10, 9, 1, 1]);
    p[20..22].copy_from_slice(&5000u16.to_be_bytes());
    p[22..24].copy_from_slice(&6000u16.to_be_bytes());
    p[24..28].copy_from_slice(&1000u32.to_be_bytes());
    p[28..32].copy_from_slice(&1u32.to_be_bytes());
    p[32] = 0x50; // 20 bytes of TCP header
    p[33] = 0x10; // ACK
    p[34..36].copy_from_slice(&0xffffu16.to_be_bytes());
    p.extend((0..3000).map(|i| i as u8));
    let h = gso::VnetHdr {
        flags: gso::F_NEEDS_CSUM,
        gso_type: gso::GSO_TCPV4,
        hdr_len: 40,
        gso_size: 1000,
        csum_start: 20,
        csum_offset: 16,
    };
    let mut segs = Vec::new();
    gso::segment(&h, &p, 0, &mut |s| segs.push(s)).unwrap();
    assert_eq!(gro::run_len(&segs), 3, "the segments make one run");
    segs
}

// A device that refuses writes (down: write(2) fails with EIO, docs/LINUX-DEVICE.md) drops what
// the emulation had for the OS: every packet counts in write_errors, none in to_os, and a
// refused run of segments is no coalesced write (to_os_gso). Up again, the same packets go:
// one coalesced write for the run, one for the other packet.
#[test]
fn refused_writes_count_every_packet_as_dropped_and_none_as_written() {
    if !can_run() {
        return;
    }
    let n = format!("ipoibo-w-{}", std::process::id());
    let _g = Guard(vec![n.clone()]);
    let cfg = TunConfig {
        name: "ib0".into(),
        mtu: MTU,
        addresses: vec![("10.9.1.1".parse::<IpAddr>().unwrap(), 24)],
        loopback_up: true,
        up: false,
        offload: true,
        tx_queue_len: None,
    };
    let (ns, tun) = NetNs::create(&n, move || Tun::create(&cfg)).expect("namespace");
    let mut ep = TunEndpoint::new(tun.expect("TUN device"), Side(0));
    let c = ep.counters();
    let mut packets = tcp_run();
    // Any other packet: it goes alone.
    let mut other = packets[0].clone();
    other[20..22].copy_from_slice(&5001u16.to_be_bytes());
    packets.push(other);
    let bytes: u64 = packets.iter().map(|p| p.len() as u64).sum();
    let mut w = Wire::default();
    w.out[0] = packets.clone();
    assert_eq!(ep.flush(&mut w).unwrap(), 4);
    let get = |f: &std::sync::atomic::AtomicU64| f.load(Ordering::Relaxed);
    assert_eq!(
        [get(&c.write_errors), get(&c.to_os), get(&c.to_os_bytes)],
        [4, 0, 0]
    );
    assert_eq!(get(&c.to_os_gso), 0, "a refused run is no coalesced write");

    let up = Command::new("ip")
        .args(["-n", &n, "link", "set", "ib0", "up"])
        .status()
        .expect("ip runs");
    assert!(up.success());
    w.out[0] = packets;
    assert_eq!(ep.flush(&mut w).unwrap(), 4);
    assert_eq!(
        [get(&c.write_errors), get(&c.to_os), get(&c.to_os_bytes)],
        [4, 4, bytes]
    );
    assert_eq!(get(&c.to_os_gso), 1);
    drop(ep);
    ns.delete().unwrap();
}
