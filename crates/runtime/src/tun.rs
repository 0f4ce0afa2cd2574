//! TUN devices as the operating system's side of an emulated IPoIB interface: the kernel's IP
//! stack sends its packets into the device, an emulated interface carries them over the fabric,
//! and what the interface delivers is written back into the device.
//!
//! - [`Tun::create`] opens a layer-3 TUN device without packet information (`IFF_TUN |
//!   IFF_NO_PI`: each read(2) is one bare IPv4 or IPv6 packet, each write(2) takes one) in the
//!   network namespace of the calling thread (docs/DEPLOYED.md "TUN devices"), non-blocking, and
//!   configures it over rtnetlink ([`crate::netlink`]): MTU, queue length, with offload
//!   [`GSO_MAX_SEGS`], addresses, `lo` up, and
//!   `net.ipv4.conf.<dev>.accept_local=1`, without which Linux drops as martians the ICMP
//!   "fragmentation needed" answers the interface builds for the OS from the local address;
//!   `net.ipv6.conf.<dev>.addr_gen_mode=1` (none), so that the kernel makes no IPv6 link-local
//!   address of its own (for a TUN device a random one, docs/DEPLOYED.md "TUN devices"): the
//!   device is to carry the emulated interface's, made from its port GUID
//!   (draft-ietf-ipoib-ip-over-infiniband-06 §8), the one its ND answers for; link up at once or
//!   later through a [`LinkControl`] (when the interface has carrier, as Linux IPoIB's `ib0` has
//!   none before its broadcast join), which also mirrors later losses of carrier
//!   ([`LinkControl::set_carrier`], as Linux IPoIB calls `netif_carrier_off`).
//! - [`TunEndpoint`] is a [`crate::realtime::Endpoint`]: it reads the device in batches into a
//!   buffer with room for the encapsulation header in front and hands each packet to an
//!   [`OsPort`] (how one interface of the emulation takes and gives OS packets): a small one
//!   copied, the buffer kept; one of [`HAND_OVER_MIN`] bytes or more in the buffer itself, which
//!   becomes the frame the interface sends, the next packets going into a buffer the emulation
//!   gives back (a message's, once sent) or a new one. It writes what the port has back, on the
//!   emulation's thread or ([`TunEndpoint::with_writer_thread`]) on a thread of its own. Counts
//!   in [`TunCounters`], no logging per packet.
//!
//! The device exists while its file is open: dropping the [`Tun`] removes it.

mod link;
mod writer;

use crate::gso::{self, VnetHdr, VNET_HDR_LEN};
use crate::netlink::{NetlinkError, Rtnl};
use crate::realtime::Endpoint;
use ipoib_proto::ipoib::IpBuf;
pub use link::{link_local, LinkControl, LinkMirror, Restored, LINK_LOCAL_PREFIX};
use std::io::{self, ErrorKind, IoSlice, IoSliceMut};
use std::net::IpAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use writer::{write_batch, Writer};

/// The largest packet a TUN device gives (its MTU is at most 65535).
pub const MAX_PACKET: usize = 65_536;

/// Free bytes in front of a packet read from the device: room for the IPoIB encapsulation
/// header (draft-ietf-ipoib-ip-over-infiniband-06 §6), which the interface writes there.
pub const FRAME_HEADROOM: usize = ipoib_wire::ipoib::encap::HEADER_LEN;

/// Packets from this size on are handed to the interface in the buffer they were read into
/// ([`OsPort::frame_from_os`]), and the endpoint reads the next ones into the buffer the
/// emulation gives back (a connected-mode message's, once acknowledged) or else a new one, which
/// must be zeroed first: both cost less than copying the packet (up to 65,520 bytes in connected
/// mode); smaller packets are copied and the buffer kept.
pub const HAND_OVER_MIN: usize = 8 << 10;

/// A `txqueuelen` long enough that one TCP stream over the emulation loses no packet in the
/// device's queue (measured: with the default 500, a 5-second iperf3 stream in datagram mode
/// lost 12,000 to 27,000 packets there; with 4096, none).
pub const TX_QUEUE_LEN: u32 = 4096;

/// Segments in one super-packet of a device with offload at most (its `gso_max_segs`; the
/// kernel cuts larger ones itself, docs/LINUX-DEVICE.md): one read then hands an interface at
/// most this many packets past the driver's budget, within what it queues
/// (`ipoib_fabric::node::ipoib::FROM_OS_LIMIT`, 256, with the default budget of 64) whatever
/// MSS the peer asked for; at a datagram-mode MTU a 64 KiB super-packet has 33.
pub const GSO_MAX_SEGS: u32 = 64;

/// How to configure a new device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunConfig {
    /// Interface name (at most 15 bytes), e.g. `ib0`.
    pub name: String,
    /// MTU: 2044 for IPoIB datagram mode on a 2048-byte IB MTU (RFC 4391 §3), 65520 for
    /// connected mode (RFC 4755 §3.3).
    pub mtu: u32,
    /// Addresses with their prefix lengths (the interface's IPv6 link-local address among them
    /// when it is known: the kernel makes none).
    pub addresses: Vec<(IpAddr, u8)>,
    /// Packets the device queues towards its reader (`txqueuelen`); `None` keeps the default
    /// (500). A TUN device has no flow control: a packet sent while the queue is full is dropped
    /// (docs/DEPLOYED.md "TUN devices"), which TCP takes for congestion, so a reader that is
    /// sometimes slower than the sender wants a longer queue ([`TX_QUEUE_LEN`]).
    pub tx_queue_len: Option<u32>,
    /// Bring the namespace's loopback device up too (a fresh namespace has it down).
    pub loopback_up: bool,
    /// Bring the device up at once; otherwise it stays down until [`LinkControl::set`] brings
    /// it up (e.g. when the emulated interface gets carrier).
    pub up: bool,
    /// Segmentation and checksum offload at the device ([`crate::gso`]): the kernel may give
    /// TCP super-packets with partial checksums, which [`TunEndpoint`] cuts into whole packets
    /// of at most the MTU with complete checksums; what is written to the device carries a
    /// header asking nothing (checksums verified by the receiving stack as always).
    pub offload: bool,
}

/// Why a device could not be made or configured.
#[derive(Debug, thiserror::Error)]
pub enum TunError {
    /// Opening `/dev/net/tun` or `TUNSETIFF` failed.
    #[error("TUN device {name}: {source}")]
    Open {
        /// The device name.
        name: String,
        /// The error.
        source: io::Error,
    },
    /// A system call on the device failed.
    #[error("TUN device {name}: {what}: {source}")]
    Os {
        /// The device name.
        name: String,
        /// What was being done.
        what: &'static str,
        /// The error.
        source: io::Error,
    },
    /// An rtnetlink request failed.
    #[error("TUN device {name}: {source}")]
    Netlink {
        /// The device name.
        name: String,
        /// The error.
        source: NetlinkError,
    },
}

/// An open TUN device. See the module docs.
pub struct Tun {
    dev: tun_rs::SyncDevice,
    name: String,
    index: u32,
    offload: bool,
}

impl std::fmt::Debug for Tun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tun")
            .field("name", &self.name)
            .field("index", &self.index)
            .field("offload", &self.offload)
            .finish()
    }
}

/// Index of interface `name` in the calling thread's namespace.
fn index_of(name: &str) -> io::Result<u32> {
    nix::net::if_::if_nametoindex(name).map_err(io::Error::from)
}

impl Tun {
    /// Creates and configures the device in the calling thread's network namespace (module docs).
    pub fn create(cfg: &TunConfig) -> Result<Tun, TunError> {
        let name = cfg.name.clone();
        let os = |what: &'static str| {
            let name = name.clone();
            move |source: io::Error| TunError::Os { name, what, source }
        };
        let nl = |source: NetlinkError| TunError::Netlink {
            name: name.clone(),
            source,
        };
        // Layer 3 without packet information, offloads as asked; left down (`up` below) and
        // not configured by the crate (rtnetlink below).
        let dev = tun_rs::DeviceBuilder::new()
            .name(&cfg.name)
            .layer(tun_rs::Layer::L3)
            .packet_information(false)
            .offload(cfg.offload)
            .inherit_enable_state()
            .build_sync()
            .map_err(|source| TunError::Open {
                name: name.clone(),
                source,
            })?;
        dev.set_nonblocking(true).map_err(os("set O_NONBLOCK"))?;
        let index = index_of(&cfg.name).map_err(os("if_nametoindex"))?;
        let mut rtnl = Rtnl::open().map_err(nl)?;
        if cfg.loopback_up {
            let lo = index_of("lo").map_err(os("if_nametoindex(lo)"))?;
            rtnl.set_link(lo, None, true).map_err(nl)?;
        }
        rtnl.set_link(index, Some(cfg.mtu), false).map_err(nl)?;
        if let Some(len) = cfg.tx_queue_len {
            rtnl.set_txqueuelen(index, len).map_err(nl)?;
        }
        if cfg.offload {
            rtnl.set_gso_max_segs(index, GSO_MAX_SEGS).map_err(nl)?;
        }
        for &(a, len) in &cfg.addresses {
            rtnl.add_address(index, a, len).map_err(nl)?;
        }
        set_sysctl(&format!("net/ipv4/conf/{}/accept_local", cfg.name), "1")
            .map_err(os("sysctl accept_local=1"))?;
        // Before the device is up, when the kernel would make its link-local address. No such
        // file: IPv6 is off in this namespace, nothing to stop.
        match set_sysctl(&format!("net/ipv6/conf/{}/addr_gen_mode", cfg.name), "1") {
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            r => r.map_err(os("sysctl addr_gen_mode=1"))?,
        }
        if cfg.up {
            rtnl.set_link(index, None, true).map_err(nl)?;
        }
        Ok(Tun {
            dev,
            name,
            index,
            offload: cfg.offload,
        })
    }

    /// The interface name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The interface index (in its namespace).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The device was opened with offload ([`TunConfig::offload`]).
    pub fn offload(&self) -> bool {
        self.offload
    }

    /// Reads one packet; `WouldBlock` when none is waiting. On a device with offload, its
    /// virtio header (readv(2): the packet lands in `buf` with no copy), else a plain one.
    pub fn recv_with_hdr(&self, buf: &mut [u8]) -> io::Result<(VnetHdr, usize)> {
        if !self.offload {
            return self.dev.recv(buf).map(|n| (VnetHdr::default(), n));
        }
        let mut h = [0u8; VNET_HDR_LEN];
        let n = self
            .dev
            .recv_vectored(&mut [IoSliceMut::new(&mut h), IoSliceMut::new(buf)])?;
        match n.checked_sub(VNET_HDR_LEN) {
            Some(n) => Ok((VnetHdr::parse(&h), n)),
            None => Err(io::Error::new(
                ErrorKind::InvalidData,
                "short virtio header",
            )),
        }
    }

    /// Reads one whole packet with complete checksums; `WouldBlock` when none is waiting. A
    /// super-packet of a device with offload is an error (`InvalidData`): see
    /// [`TunEndpoint`], which cuts them.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        let (h, n) = self.recv_with_hdr(buf)?;
        let bad = |e: gso::GsoError| io::Error::new(ErrorKind::InvalidData, e);
        if h.is_gso() {
            return Err(io::Error::new(ErrorKind::InvalidData, "GSO super-packet"));
        }
        if h.flags & gso::F_NEEDS_CSUM != 0 {
            gso::complete_checksum(&h, &mut buf[..n]).map_err(bad)?;
        }
        Ok(n)
    }

    /// Writes one packet (on a device with offload, behind a virtio header asking nothing,
    /// writev(2): no copy).
    pub fn send(&self, packet: &[u8]) -> io::Result<usize> {
        if !self.offload {
            return self.dev.send(packet);
        }
        let n = self
            .dev
            .send_vectored(&[IoSlice::new(&gso::PLAIN_HDR), IoSlice::new(packet)])?;
        Ok(n.saturating_sub(VNET_HDR_LEN))
    }

    /// Writes one packet that starts with its virtio header (a device with offload only).
    pub fn send_with_hdr(&self, packet: &[u8]) -> io::Result<usize> {
        if !self.offload {
            return Err(io::Error::new(ErrorKind::InvalidInput, "no offload"));
        }
        Ok(self.dev.send(packet)?.saturating_sub(VNET_HDR_LEN))
    }
}

impl AsRawFd for Tun {
    fn as_raw_fd(&self) -> RawFd {
        self.dev.as_raw_fd()
    }
}

/// The device's file, e.g. for readv(2) and writev(2) (`nix::sys::uio`).
impl AsFd for Tun {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.dev.as_fd()
    }
}

/// Writes `value` to `/proc/sys/<key>` (e.g. `net/ipv4/conf/ib0/accept_local`), for the network
/// namespace of the calling thread (the `net/` tree is per namespace).
pub fn set_sysctl(key: &str, value: &str) -> io::Result<()> {
    std::fs::write(format!("/proc/sys/{key}"), value)
}

/// How one interface of an emulation takes packets from the OS and gives packets to it.
pub trait OsPort<E> {
    /// One IP packet the OS sent on the link, handed to the interface at the emulation's current
    /// time. The interface may only queue it until [`OsPort::end_of_batch`].
    fn packet_from_os(&mut self, emu: &mut E, packet: &[u8]);
    /// [`OsPort::packet_from_os`] for a packet in a buffer of its own after [`FRAME_HEADROOM`]
    /// free bytes (what `ipoib_proto::ipoib::ip_frame` makes), which the interface may keep as
    /// the frame it sends, with no copy. Returns a buffer the endpoint may read the next packets
    /// into (its bytes stale), if the emulation has one to spare. By default the packet is
    /// copied and its buffer given back.
    fn frame_from_os(&mut self, emu: &mut E, frame: Vec<u8>) -> Option<Vec<u8>> {
        if let Some(p) = frame.get(FRAME_HEADROOM..) {
            self.packet_from_os(emu, p);
        }
        Some(frame)
    }
    /// An allocation to build the next segment of a super-packet in
    /// ([`crate::gso::segment_into`]; a spent packet's, its bytes stale), if the emulation has
    /// one to spare: then the segments cost no allocation each. None by default.
    fn segment_buffer(&mut self, _emu: &mut E) -> Option<Vec<u8>> {
        None
    }
    /// The batch of packets from the OS is complete: let the interface act on them (at the
    /// emulation's current time).
    fn end_of_batch(&mut self, _emu: &mut E) {}
    /// Calls `out` with every packet the interface has for the OS, oldest first (each in the
    /// buffer it was received in, [`IpBuf`]).
    fn packets_to_os(&mut self, emu: &mut E, out: &mut dyn FnMut(IpBuf));
    /// A packet [`OsPort::packets_to_os`] gave, written to the OS and done with, given back so
    /// that the emulation receives its next packets in its allocation ([`IpBuf::into_allocation`])
    /// rather than in a new one. Dropped by default.
    fn recycle_to_os(&mut self, _emu: &mut E, _packet: IpBuf) {}
}

/// Packets through one [`TunEndpoint`] (shared, readable while the driver runs).
#[derive(Debug, Default)]
pub struct TunCounters {
    /// Packets read from the device (sent by the OS).
    pub from_os: AtomicU64,
    /// Their bytes.
    pub from_os_bytes: AtomicU64,
    /// Packets written to the device (delivered to the OS).
    pub to_os: AtomicU64,
    /// Their bytes.
    pub to_os_bytes: AtomicU64,
    /// Packets for the OS that the device refused (dropped).
    pub write_errors: AtomicU64,
    /// Super-packets read from a device with offload (each counted in `from_os` as the
    /// packets it was cut into).
    pub from_os_gso: AtomicU64,
    /// Packets from the OS dropped because their offload header was malformed.
    pub offload_errors: AtomicU64,
    /// Writes to a device with offload that carried several TCP segments as one (each segment
    /// counted in `to_os`).
    pub to_os_gso: AtomicU64,
}

/// Batches of packets the emulation's thread may have handed to a device's writer thread and
/// not yet written: past this the emulation's thread waits (the device's own queue and TCP's
/// window bound what comes; no packet is dropped here).
pub const WRITE_BATCHES: usize = 16;

/// A turn's packets for the OS up to this many are written on the emulation's thread when the
/// writer thread is idle and was handed nothing for [`INLINE_AFTER_IDLE`]: a lone packet of
/// sparse traffic (a ping) then does not wait for another thread to be scheduled, which on a
/// loaded machine costs up to a millisecond, while a stream (whose turns often carry one
/// packet too: an ACK, a 64 KiB connected-mode segment) stays on the writer thread.
pub const INLINE_WRITES: usize = 1;

/// See [`INLINE_WRITES`].
pub const INLINE_AFTER_IDLE: Duration = Duration::from_millis(2);

/// The length of a buffer a packet is read into: [`FRAME_HEADROOM`], then the largest packet.
pub const READ_BUFFER: usize = FRAME_HEADROOM + MAX_PACKET;

/// A new buffer to read a packet into.
fn read_buffer() -> Vec<u8> {
    vec![0; READ_BUFFER]
}

/// A TUN device bound to one interface of the emulation. See the module docs.
pub struct TunEndpoint<P> {
    tun: Arc<Tun>,
    port: P,
    /// [`FRAME_HEADROOM`] bytes, then room for the largest packet.
    buf: Vec<u8>,
    counters: Arc<TunCounters>,
    writer: Option<Writer>,
    /// Packets for the OS of the current turn.
    batch: Vec<IpBuf>,
}

impl<P> TunEndpoint<P> {
    /// Binds `tun` to `port`; packets for the OS are written on the emulation's thread.
    pub fn new(tun: Tun, port: P) -> TunEndpoint<P> {
        TunEndpoint {
            tun: Arc::new(tun),
            port,
            buf: read_buffer(),
            counters: Arc::default(),
            writer: None,
            batch: Vec::new(),
        }
    }

    /// Binds `tun` to `port`; packets for the OS are written by a thread of the endpoint's own
    /// (`Writer`), handed over once per turn. Fails when the thread or the duplicate of the
    /// device's file cannot be made.
    pub fn with_writer_thread(tun: Tun, port: P) -> io::Result<TunEndpoint<P>> {
        let mut ep = TunEndpoint::new(tun, port);
        ep.writer = Some(Writer::spawn(
            Arc::clone(&ep.tun),
            Arc::clone(&ep.counters),
        )?);
        Ok(ep)
    }

    /// Its counters.
    pub fn counters(&self) -> Arc<TunCounters> {
        Arc::clone(&self.counters)
    }
}

impl<E, P: OsPort<E>> Endpoint<E> for TunEndpoint<P> {
    fn raw_fd(&self) -> RawFd {
        self.tun.as_raw_fd()
    }

    fn on_readable(&mut self, emu: &mut E, budget: usize) -> io::Result<usize> {
        // Reads, packets handed over (a super-packet's segments each), bytes. The budget is
        // in packets handed over, which the interface queues until `end_of_batch`
        // (`ipoib_fabric::node::ipoib::FROM_OS_LIMIT`): the last super-packet may pass it by
        // its segments (at most [`GSO_MAX_SEGS`]).
        let (mut n, mut packets, mut bytes) = (0, 0usize, 0u64);
        let r = loop {
            if packets >= budget {
                break Ok(());
            }
            let (h, len) = match self.tun.recv_with_hdr(&mut self.buf[FRAME_HEADROOM..]) {
                Ok(r) => r,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => break Err(e),
            };
            n += 1;
            let packet = &mut self.buf[FRAME_HEADROOM..FRAME_HEADROOM + len];
            if h.is_gso() {
                let port = &mut self.port;
                let cut = gso::segment_into(&h, packet, FRAME_HEADROOM, &mut |f| {
                    packets += 1;
                    bytes += (f.len() - FRAME_HEADROOM) as u64;
                    // A spare buffer given back is not needed: `buf` stays.
                    let _ = port.frame_from_os(emu, f);
                    port.segment_buffer(emu).unwrap_or_default()
                });
                let c = match cut {
                    Ok(_) => &self.counters.from_os_gso,
                    Err(_) => &self.counters.offload_errors,
                };
                c.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if h.flags & gso::F_NEEDS_CSUM != 0 && gso::complete_checksum(&h, packet).is_err() {
                self.counters.offload_errors.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            packets += 1;
            bytes += len as u64;
            if len >= HAND_OVER_MIN {
                let mut frame = std::mem::take(&mut self.buf);
                frame.truncate(FRAME_HEADROOM + len);
                self.buf = match self.port.frame_from_os(emu, frame) {
                    Some(mut b) if b.capacity() >= READ_BUFFER => {
                        // Only the bytes past its old length are zeroed.
                        b.resize(READ_BUFFER, 0);
                        b
                    }
                    _ => read_buffer(),
                };
            } else {
                let end = FRAME_HEADROOM + len;
                self.port
                    .packet_from_os(emu, &self.buf[FRAME_HEADROOM..end]);
            }
        };
        if n > 0 {
            self.port.end_of_batch(emu);
        }
        self.counters
            .from_os
            .fetch_add(packets as u64, Ordering::Relaxed);
        self.counters
            .from_os_bytes
            .fetch_add(bytes, Ordering::Relaxed);
        // Fewer than the budget only when drained.
        r.map(|()| packets)
    }

    fn flush(&mut self, emu: &mut E) -> io::Result<usize> {
        let batch = &mut self.batch;
        self.port.packets_to_os(emu, &mut |p| batch.push(p));
        let n = self.batch.len();
        if n == 0 {
            return Ok(0);
        }
        let inline = match &self.writer {
            None => true,
            Some(w) => {
                n <= INLINE_WRITES
                    && w.pending.load(Ordering::Acquire) == 0
                    && w.last_handoff
                        .is_none_or(|t| t.elapsed() >= INLINE_AFTER_IDLE)
            }
        };
        let Some(w) = self.writer.as_mut().filter(|_| !inline) else {
            let tun = &self.tun;
            write_batch(tun, &self.batch, &self.counters);
            for p in self.batch.drain(..) {
                self.port.recycle_to_os(emu, p);
            }
            return Ok(n);
        };
        w.pending.fetch_add(1, Ordering::Relaxed);
        w.last_handoff = Some(Instant::now());
        // The packets of a returned batch go back to the emulation here, on the thread that
        // allocated them (glibc's malloc frees another thread's memory under its arena's lock):
        // what the port does not keep is freed.
        let mut next = w.empties.try_recv().unwrap_or_default();
        for p in next.drain(..) {
            self.port.recycle_to_os(emu, p);
        }
        let full = std::mem::replace(&mut self.batch, next);
        match w.batches.as_ref().map(|tx| tx.send(full)) {
            Some(Ok(())) => Ok(n),
            // The thread ended (it only does when it panicked): the device is unusable.
            _ => Err(io::Error::other("TUN writer thread ended")),
        }
    }
}
