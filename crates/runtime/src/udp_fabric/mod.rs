//! The subnet across processes over UDP (docs/UDP-FABRIC.md): the fabric process
//! ([`FabricProcess`], `ipoib fabric`) and a host process ([`AttachProcess`], `ipoib attach`),
//! each one sans-IO agent of `ipoib_fabric::node::remote` run on the real-time driver
//! ([`crate::realtime`]) with a non-blocking `std::net::UdpSocket` as an endpoint
//! ([`UdpEndpoint`]; an attach process adds its TUN device and its control socket).
//!
//! The driver maps wall time onto virtual time, reads at most a batch of datagrams per turn and
//! hands them to the agent at its present, runs the agent's timers up to the present plus its
//! slack, sends what came out, and sleeps in epoll until a file is readable or the next timer.
//! Send errors (a fabric not yet up answers with ICMP port unreachable, seen as `ECONNREFUSED` on
//! a connected socket, docs/DEPLOYED.md "Linux UDP sockets") are counted, never fatal: the
//! protocol's keepalives and retries recover.
//!
//! A host gets a first QPN and a seed from the wall clock and its process id
//! ([`fresh_seed`]), so a restarted host does not reuse the QPNs its peers may still hold. An
//! attach process serves the control socket `ipoib show` reads (module `attach`), and so does the
//! fabric process (module `fabric_show`).

use crate::control::{fabric_socket, BindError, ControlServer};
use crate::realtime::control::{AnswerFn, ControlEndpoint};
use crate::realtime::{Config, Driver, Endpoint};
use ipoib_fabric::hw::capture::Capture;
use ipoib_fabric::node::remote::{FabricOptions, FabricServer, Outgoing};
use ipoib_wire::pcap::{GLOBAL_HEADER_LEN, RECORD_HEADER_LEN};
use nix::sys::socket::SockaddrStorage;
use std::fs::File;
use std::io::{self, ErrorKind, Write};
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::time::{Duration, Instant as Wall};

mod attach;
mod fabric_emu;
mod fabric_show;
pub mod guid2lid;

pub use attach::{
    AttachEmu, AttachOptions, AttachOsPort, AttachProcess, CONNECTED_MTU, DATAGRAM_MTU,
};
pub use fabric_emu::FabricEmu;
pub use fabric_show::slot_name;

/// The longest sleep of a turn when nothing is due (the caller's checks run this often).
pub const MAX_WAIT: Duration = Duration::from_millis(100);
/// Room for the biggest datagram: a 4,096-byte MTU packet with every header, and the header.
const BUF_LEN: usize = 8192;

/// `udp:ADDR:PORT` (ADDR a name, an IPv4 address or a bracketed IPv6 address) as a socket
/// address.
pub fn parse_udp(s: &str) -> Result<SocketAddr, String> {
    let rest = s
        .strip_prefix("udp:")
        .ok_or_else(|| format!("{s}: expected udp:ADDR:PORT"))?;
    rest.to_socket_addrs()
        .map_err(|e| format!("{s}: {e}"))?
        .next()
        .ok_or_else(|| format!("{s}: no address"))
}

/// The receive and send buffers asked of every socket: about a thousand full datagrams, so
/// that a burst (a TCP window of an IPoIB-CM connection, thousands of InfiniBand packets) that
/// comes while the process is busy is not dropped by the kernel.
pub const SOCKET_BUFFER: usize = 8 << 20;

/// Grows `socket`'s buffers to [`SOCKET_BUFFER`]: past `net.core.rmem_max`/`wmem_max` with
/// `SO_RCVBUFFORCE`/`SO_SNDBUFFORCE` when the process may (CAP_NET_ADMIN), else as far as
/// `SO_RCVBUF`/`SO_SNDBUF` go (docs/DEPLOYED.md "Linux UDP sockets"). Best effort: a socket
/// whose buffers stay small still works, losing more in bursts.
pub fn grow_buffers(socket: &UdpSocket) {
    use nix::sys::socket::{setsockopt, sockopt};
    if setsockopt(socket, sockopt::RcvBufForce, &SOCKET_BUFFER).is_err() {
        let _ = setsockopt(socket, sockopt::RcvBuf, &SOCKET_BUFFER);
    }
    if setsockopt(socket, sockopt::SndBufForce, &SOCKET_BUFFER).is_err() {
        let _ = setsockopt(socket, sockopt::SndBuf, &SOCKET_BUFFER);
    }
}

/// A seed from the wall clock and the process id (different in every run).
pub fn fresh_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15
}

/// Counters of the process around an agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// Datagrams received.
    pub received: u64,
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams the socket refused (counted, dropped).
    pub send_errors: u64,
    /// Errors the network reported on a read for an earlier datagram (an ICMP port, host or
    /// network unreachable or prohibited that came back, docs/UDP-FABRIC.md "ICMP errors on the
    /// host's socket"):
    /// counted, read on.
    pub net_errors: u64,
}

/// The pcap file of `ipoib fabric --pcap`, written as the capture grows, up to a byte limit.
#[derive(Debug)]
struct CaptureFile {
    file: File,
    written: u64,
    limit: Option<u64>,
    /// The limit stopped the recording.
    full: bool,
    /// A write failed (a full disk), which stopped the recording; the fabric serves on.
    error: Option<String>,
}

/// An emulation that speaks datagrams: what [`UdpEndpoint`] reads goes in, what it sends comes
/// out.
pub trait DatagramPeer {
    /// A datagram from `from`, at the emulation's present.
    fn on_datagram(&mut self, from: SocketAddr, data: &[u8]);
    /// The next datagram to send, in its two parts, and to whom (`None`: the connected socket's
    /// peer).
    fn next_datagram(&mut self) -> Option<(Option<SocketAddr>, Outgoing)>;
    /// Where the endpoint counts.
    fn io_counters(&mut self) -> &mut IoCounters;
    /// The body of a datagram sent (a packet's own buffer, [`Outgoing`]), given back for the
    /// agent's next packets; by default dropped.
    fn recycle(&mut self, _body: Vec<u8>) {}
}

/// A non-blocking UDP socket as an endpoint of the driver.
///
/// Runs of datagrams to one peer leave in one system call where Linux allows it: consecutive
/// datagrams of equal length (the last may be shorter) to the same address go out as one
/// `sendmsg(2)` with `UDP_SEGMENT` (generic segmentation offload: the kernel cuts the buffer
/// into the datagrams, which arrive as separate datagrams), and the socket asks for `UDP_GRO`, so
/// that such a run arrives as one buffer with its segment size, which is cut again here
/// (docs/DEPLOYED.md "Linux UDP sockets"). A connected-mode IPoIB packet of 65,520 bytes is 16
/// or more InfiniBand packets of the path MTU: one system call on each side instead of 16. What
/// the peer receives is the same datagrams, in the same order; where the kernel refuses
/// segmentation the endpoint falls back to one `send` per datagram. Reads are batched too: one
/// `recvmmsg(2)` takes up to `RECV_BATCH` (8) datagrams or coalesced runs, and a batch that comes
/// back short means the socket is drained, so no read is spent on learning that it would block.
#[derive(Debug)]
pub struct UdpEndpoint {
    socket: UdpSocket,
    /// Room for [`RECV_BATCH`] reads, each a datagram or (`UDP_GRO` accepted) a coalesced run.
    buf: Box<[u8]>,
    /// `UDP_SEGMENT` works (until the kernel refuses it once).
    gso: bool,
    /// The datagrams of the current flush.
    out: Vec<(Option<SocketAddr>, Outgoing)>,
    /// The reads of the last `recv_batch`: sender, offset and length in `buf`, segment size.
    got: Vec<(SocketAddr, usize, usize, Option<usize>)>,
}

/// Reads in one `recvmmsg(2)` at most; `buf` holds room for each.
const RECV_BATCH: usize = 8;

/// The socket address of `a`, an IPv4 or IPv6 one.
fn socket_addr(a: &SockaddrStorage) -> Option<SocketAddr> {
    a.as_sockaddr_in()
        .map(|v4| SocketAddr::from(std::net::SocketAddrV4::from(*v4)))
        .or_else(|| {
            a.as_sockaddr_in6()
                .map(|v6| SocketAddr::from(std::net::SocketAddrV6::from(*v6)))
        })
}

/// Most datagrams in one segmented send (Linux `UDP_MAX_SEGMENTS`).
const GSO_MAX_SEGMENTS: usize = 64;
/// Most bytes in one segmented send (the payload of one IPv4 UDP datagram, less room for the
/// IPv6 header's difference).
const GSO_MAX_BYTES: usize = 65_000;

impl UdpEndpoint {
    /// Makes `socket` non-blocking and wraps it.
    pub fn new(socket: UdpSocket) -> io::Result<UdpEndpoint> {
        use nix::sys::socket::{setsockopt, sockopt};
        socket.set_nonblocking(true)?;
        let gro = setsockopt(&socket, sockopt::UdpGroSegment, &true).is_ok();
        Ok(UdpEndpoint {
            socket,
            buf: vec![0; RECV_BATCH * if gro { 65_536 } else { BUF_LEN }].into_boxed_slice(),
            gso: true,
            out: Vec::new(),
            got: Vec::with_capacity(RECV_BATCH),
        })
    }

    /// Reads what is waiting, at most `max` reads (each a datagram, or with `UDP_GRO` a coalesced
    /// run) in one `recvmmsg(2)`, into `got` (sender, offset and length in `buf`, segment size).
    /// Fewer than `max` means the socket was drained: the kernel stops at the first read that
    /// would block. `WouldBlock` when nothing was waiting.
    fn recv_batch(&mut self, max: usize) -> io::Result<usize> {
        use nix::sys::socket::{recvmmsg, ControlMessageOwned, MsgFlags, MultiHeaders};
        let slot = self.buf.len() / RECV_BATCH;
        let count = max.clamp(1, RECV_BATCH);
        // Fresh headers for every call: the kernel writes each header's control length back and
        // nix does not reset it, so reused headers would lose the next segment size.
        let mut headers =
            MultiHeaders::<SockaddrStorage>::preallocate(count, Some(nix::cmsg_space!(i32)));
        let mut iovs: Vec<[io::IoSliceMut<'_>; 1]> = self
            .buf
            .chunks_mut(slot)
            .take(count)
            .map(|b| [io::IoSliceMut::new(b)])
            .collect();
        let results = recvmmsg(
            self.socket.as_raw_fd(),
            &mut headers,
            iovs.iter_mut(),
            MsgFlags::MSG_DONTWAIT,
            None,
        )
        .map_err(io::Error::from)?;
        self.got.clear();
        let mut received = 0;
        for (i, m) in results.enumerate() {
            received = i + 1;
            let mut seg = None;
            if let Ok(cmsgs) = m.cmsgs() {
                for c in cmsgs {
                    if let ControlMessageOwned::UdpGroSegments(n) = c {
                        seg = usize::try_from(n).ok().filter(|&n| n > 0);
                    }
                }
            }
            // A datagram without a sender address (not on a UDP socket) is skipped.
            if let Some(from) = m.address.as_ref().and_then(socket_addr) {
                self.got.push((from, i * slot, m.bytes.min(slot), seg));
            }
        }
        Ok(received)
    }

    /// Sends `run` (datagrams of equal length but the last, to one peer) as one segmented
    /// send; `Err` when the kernel refused it (nothing was sent).
    fn send_run(
        &self,
        to: Option<SocketAddr>,
        run: &[(Option<SocketAddr>, Outgoing)],
    ) -> io::Result<()> {
        use nix::sys::socket::ControlMessage;
        let seg =
            u16::try_from(run[0].1.len()).map_err(|_| io::Error::from(ErrorKind::InvalidInput))?;
        self.send_parts(to, run, &[ControlMessage::UdpGsoSegments(&seg)])
    }

    /// One `sendmsg(2)` of the datagrams of `run`, each as its header and body (two buffers,
    /// nothing copied here), with `cmsg`.
    fn send_parts(
        &self,
        to: Option<SocketAddr>,
        run: &[(Option<SocketAddr>, Outgoing)],
        cmsg: &[nix::sys::socket::ControlMessage<'_>],
    ) -> io::Result<()> {
        use nix::sys::socket::{sendmsg, MsgFlags};
        let iov: Vec<io::IoSlice<'_>> = run
            .iter()
            .flat_map(|(_, d)| [io::IoSlice::new(&d.header), io::IoSlice::new(&d.body)])
            .collect();
        let addr = to.map(SockaddrStorage::from);
        sendmsg(
            self.socket.as_raw_fd(),
            &iov,
            cmsg,
            MsgFlags::empty(),
            addr.as_ref(),
        )
        .map(|_| ())
        .map_err(io::Error::from)
    }
}

/// How many datagrams from the start of `out` form one segmented send: same peer, same length
/// (the last may be shorter), within the kernel's limits.
fn run_len(out: &[(Option<SocketAddr>, Outgoing)]) -> usize {
    let Some((to, first)) = out.first() else {
        return 0;
    };
    let seg = first.len();
    let (mut n, mut bytes) = (1, seg);
    for (t, d) in &out[1..] {
        if t != to || d.len() > seg || n == GSO_MAX_SEGMENTS || bytes + d.len() > GSO_MAX_BYTES {
            break;
        }
        n += 1;
        bytes += d.len();
        if d.len() < seg {
            break;
        }
    }
    n
}

/// Errors by which Linux refuses `UDP_SEGMENT` itself (an old kernel, a device without
/// checksum offload), rather than the datagrams.
fn gso_unsupported(e: &io::Error) -> bool {
    use nix::errno::Errno;
    e.raw_os_error().is_some_and(|c| {
        [
            Errno::EIO,
            Errno::EINVAL,
            Errno::ENOPROTOOPT,
            Errno::EOPNOTSUPP,
        ]
        .iter()
        .any(|&x| x as i32 == c)
    })
}

/// Errors a UDP socket's read reports for an ICMP error that came back for an earlier datagram
/// (docs/UDP-FABRIC.md "ICMP errors on the host's socket"). None ends the process: the
/// protocol's keepalives and retries recover, or find the fabric lost.
fn reported_by_network(e: &io::Error) -> bool {
    use nix::errno::Errno;
    e.raw_os_error().is_some_and(|c| {
        [
            Errno::ECONNREFUSED,
            Errno::EHOSTUNREACH,
            Errno::ENETUNREACH,
            Errno::EHOSTDOWN,
            Errno::ENONET,
            Errno::ENOPROTOOPT,
            Errno::EACCES,
            Errno::EPROTO,
            Errno::EMSGSIZE,
        ]
        .iter()
        .any(|&x| x as i32 == c)
    })
}

impl<E: DatagramPeer> Endpoint<E> for UdpEndpoint {
    fn raw_fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }

    fn on_readable(&mut self, emu: &mut E, budget: usize) -> io::Result<usize> {
        let mut n = 0;
        while n < budget {
            let want = (budget - n).min(RECV_BATCH);
            match self.recv_batch(want) {
                Ok(got) => {
                    n += got;
                    for &(from, off, len, seg) in &self.got {
                        let seg = seg.unwrap_or(len).max(1);
                        for d in self.buf[off..off + len].chunks(seg) {
                            emu.io_counters().received += 1;
                            emu.on_datagram(from, d);
                        }
                    }
                    if got < want {
                        // Drained: the kernel stopped at a read that would block.
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // An ICMP error for an earlier datagram (module docs): read on.
                Err(e) if reported_by_network(&e) => emu.io_counters().net_errors += 1,
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }

    fn flush(&mut self, emu: &mut E) -> io::Result<usize> {
        while let Some(d) = emu.next_datagram() {
            self.out.push(d);
        }
        let total = self.out.len();
        let mut i = 0;
        while i < total {
            let run = if self.gso { run_len(&self.out[i..]) } else { 1 };
            let to = self.out[i].0;
            if run > 1 {
                match self.send_run(to, &self.out[i..i + run]) {
                    Ok(()) => {
                        emu.io_counters().sent += run as u64;
                        i += run;
                        continue;
                    }
                    // No segmentation on this path: one by one from now on.
                    Err(e) if gso_unsupported(&e) => self.gso = false,
                    // The socket's own error (an earlier datagram refused): this one alone.
                    Err(_) => {}
                }
            }
            let r = self.send_parts(to, &self.out[i..=i], &[]);
            let c = emu.io_counters();
            match r {
                Ok(_) => c.sent += 1,
                Err(_) => c.send_errors += 1,
            }
            i += 1;
        }
        // The packets' buffers go back to the agent, which builds its next packets in them.
        for (_, o) in self.out.drain(..) {
            emu.recycle(o.body);
        }
        Ok(total)
    }
}

/// `ipoib fabric`: the fabric agent on a UDP socket. See the module docs.
#[derive(Debug)]
pub struct FabricProcess {
    driver: Driver<FabricEmu>,
    local: SocketAddr,
    capture: Option<CaptureFile>,
    control: Option<std::path::PathBuf>,
}

impl FabricProcess {
    /// Builds the fabric and binds `addr`. Session ids are drawn from a fresh seed unless
    /// `opts` gives one ([`FabricOptions::session_seed`]): a restarted fabric never gives a host
    /// the id of the session it lost.
    pub fn bind(addr: SocketAddr, mut opts: FabricOptions) -> io::Result<FabricProcess> {
        opts.session_seed = opts.session_seed.or_else(|| Some(fresh_seed()));
        let server = FabricServer::build(opts).map_err(|e| io::Error::other(e.to_string()))?;
        let socket = UdpSocket::bind(addr)?;
        grow_buffers(&socket);
        let local = socket.local_addr()?;
        let emu = FabricEmu::new(server);
        let mut driver = Driver::new(emu, Config::default())?;
        driver.add(Box::new(UdpEndpoint::new(socket)?))?;
        Ok(FabricProcess {
            driver,
            local,
            capture: None,
            control: None,
        })
    }

    /// Records every packet on every link of the fabric into `path` (ERF records), written as
    /// the capture grows, until the file would pass `limit` bytes.
    pub fn capture_to(&mut self, path: &str, limit: Option<u64>) -> io::Result<()> {
        let file = File::create(path)?;
        self.driver
            .emulation_mut()
            .server
            .sim_mut()
            .set_capture(Capture::new());
        self.capture = Some(CaptureFile {
            file,
            written: 0,
            limit,
            full: false,
            error: None,
        });
        self.write_capture()
    }

    /// The capture file's bytes written so far, and whether `--pcap-limit` stopped the
    /// recording; `None` without [`FabricProcess::capture_to`].
    pub fn capture_written(&self) -> Option<(u64, bool)> {
        self.capture.as_ref().map(|c| (c.written, c.full))
    }

    /// The write error that stopped the recording (a full disk), if one did.
    pub fn capture_error(&self) -> Option<&str> {
        self.capture.as_ref().and_then(|c| c.error.as_deref())
    }

    /// Stops the driver when `fd` becomes readable (the read end of a socket pair that SIGINT
    /// and SIGTERM write to).
    pub fn set_stop(&mut self, fd: OwnedFd) -> io::Result<()> {
        self.driver.set_stop(fd)
    }

    /// Serves `ipoib show --fabric` on `path` (module `fabric_show`; its directory is made when
    /// missing), by default [`crate::control::fabric_socket`] of the bound port.
    pub fn serve_control(&mut self, path: Option<&Path>) -> Result<(), BindError> {
        let path = path.map_or_else(|| fabric_socket(self.local.port()), Path::to_path_buf);
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let server = ControlServer::bind(&path)?;
        self.control = Some(server.path().to_path_buf());
        let answer: AnswerFn<FabricEmu> = Box::new(|emu, req| emu.answer(req));
        let ep = ControlEndpoint::new(server, answer);
        self.driver
            .add(Box::new(ep))
            .map_err(|source| BindError::Io { path, source })?;
        Ok(())
    }

    /// Serves ibsim's client protocol on `cfg` ([`crate::ibsim_server`]) on this driver, for
    /// programs under `ibsim-run` on the SM's CA, the one CA in this process
    /// ([`ipoib_fabric::node::remote::FabricServer::sm_host`]): OpenSM, with no SM of ours
    /// (docs/UDP-FABRIC.md "An external SM"), or infiniband-diags. Vanished clients are probed
    /// for every 2 s, as the lab does; the server's refusals go to `tell`
    /// ([`crate::ibsim_server::IbsimEndpoint::telling`]).
    pub fn serve_ibsim(
        &mut self,
        cfg: crate::ibsim_server::ServerConfig,
        tell: crate::ibsim_server::Tell,
    ) -> io::Result<()> {
        let server = crate::ibsim_server::IbsimServer::bind(cfg)?;
        let ep =
            crate::ibsim_server::IbsimEndpoint::new(server, Duration::from_secs(2)).telling(tell);
        self.driver.emulation_mut().ibsim = Some(ep.counters());
        self.driver.add(Box::new(ep)).map(|_| ())
    }

    /// The control socket's path, when served.
    pub fn control_path(&self) -> Option<&Path> {
        self.control.as_deref()
    }

    /// Polls the socket (and the other files) without blocking for `window` after each turn
    /// that moved something before sleeping ([`crate::realtime::Config::busy_poll`]; zero: off).
    pub fn set_busy_poll(&mut self, window: Duration) {
        self.driver.set_busy_poll(window);
    }

    /// Prints each turn's timings on standard error ([`Driver::set_trace`]).
    pub fn set_trace(&mut self, on: bool) {
        self.driver.set_trace(on);
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }

    /// The agent.
    pub fn server(&self) -> &FabricServer<SocketAddr> {
        &self.driver.emulation().server
    }

    /// The agent, mutably (between turns: a fault, a port disabled, as a console would).
    pub fn server_mut(&mut self) -> &mut FabricServer<SocketAddr> {
        &mut self.driver.emulation_mut().server
    }

    /// Counters of the socket.
    pub fn counters(&self) -> IoCounters {
        self.driver.emulation().io
    }

    /// One turn of the driver, sleeping at most `max_wait`; true when the stop file fired.
    pub fn turn(&mut self, max_wait: Duration) -> io::Result<bool> {
        let w = self.driver.turn(Wall::now() + max_wait)?;
        // A capture the disk cannot take stops, not the fabric its hosts depend on.
        if let Err(e) = self.write_capture() {
            self.driver.emulation_mut().server.sim_mut().take_capture();
            if let Some(out) = &mut self.capture {
                out.error = Some(e.to_string());
            }
        }
        Ok(w == crate::realtime::Wake::Stop)
    }

    /// Turns until the stop file fires or `stop()` holds.
    pub fn run(&mut self, stop: impl Fn() -> bool) -> io::Result<()> {
        while !stop() {
            if self.turn(MAX_WAIT)? {
                break;
            }
        }
        self.write_capture()
    }

    fn write_capture(&mut self) -> io::Result<()> {
        let Some(out) = &mut self.capture else {
            return Ok(());
        };
        let sim = self.driver.emulation_mut().server.sim_mut();
        let Some(c) = sim.capture_mut() else {
            return Ok(());
        };
        let bytes = c.take_bytes();
        let room = out
            .limit
            .map_or(u64::MAX, |l| l.saturating_sub(out.written));
        if bytes.len() as u64 > room {
            // Whole records only: those that fit are written, the first that does not ends the
            // capture (the SM's sweep alone may pass a small limit in one batch).
            let fit = records_within(&bytes, room, out.written == 0);
            out.file.write_all(&bytes[..fit])?;
            out.written += fit as u64;
            out.full = true;
            sim.take_capture();
            return Ok(());
        }
        out.file.write_all(&bytes)?;
        out.written += bytes.len() as u64;
        Ok(())
    }
}

/// The length of the longest prefix of `bytes` (pcap records, after the global header when
/// `header`) that ends at a record's end and is at most `room` long (the writer's records are
/// little-endian, `ipoib_wire::pcap::PcapWriter`).
fn records_within(bytes: &[u8], room: u64, header: bool) -> usize {
    let room = usize::try_from(room).unwrap_or(usize::MAX).min(bytes.len());
    let mut end = if header { GLOBAL_HEADER_LEN } else { 0 };
    if end > room {
        return 0;
    }
    while let Some(h) = bytes.get(end..end + RECORD_HEADER_LEN) {
        let incl = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
        let next = end + RECORD_HEADER_LEN + incl;
        if next > room {
            break;
        }
        end = next;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipoib_fabric::Instant;
    use ipoib_wire::udp_fabric::HEADER_LEN;

    #[test]
    fn records_within_keeps_whole_records() {
        let mut c = Capture::new();
        let head = c.take_bytes();
        assert_eq!(head.len(), GLOBAL_HEADER_LEN);
        for i in 0..3u8 {
            c.record(Instant::ZERO, &[i; 40]);
        }
        let recs = c.take_bytes();
        let one = recs.len() / 3;
        let mut all = head.clone();
        all.extend_from_slice(&recs);
        let room = (GLOBAL_HEADER_LEN + 2 * one + one / 2) as u64;
        assert_eq!(
            records_within(&all, room, true),
            GLOBAL_HEADER_LEN + 2 * one
        );
        assert_eq!(records_within(&recs, one as u64 - 1, false), 0);
        assert_eq!(records_within(&recs, u64::MAX, false), recs.len());
        assert_eq!(records_within(&all, 10, true), 0);
    }

    /// A peer that records what it gets and sends what it is given.
    #[derive(Default)]
    struct Peer {
        got: Vec<(SocketAddr, Vec<u8>)>,
        send: std::collections::VecDeque<(Option<SocketAddr>, Vec<u8>)>,
        io: IoCounters,
    }

    impl DatagramPeer for Peer {
        fn on_datagram(&mut self, from: SocketAddr, data: &[u8]) {
            self.got.push((from, data.to_vec()));
        }
        fn next_datagram(&mut self) -> Option<(Option<SocketAddr>, Outgoing)> {
            self.send.pop_front().map(|(to, d)| (to, parts(&d)))
        }
        fn io_counters(&mut self) -> &mut IoCounters {
            &mut self.io
        }
    }

    /// `d` (at least a header long) as its two parts.
    fn parts(d: &[u8]) -> Outgoing {
        let mut header = [0; HEADER_LEN];
        header.copy_from_slice(&d[..HEADER_LEN]);
        Outgoing {
            header,
            body: d[HEADER_LEN..].to_vec(),
        }
    }

    fn datagram(len: usize, tag: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + tag * 31) as u8).collect()
    }

    /// Runs of equal-length datagrams (segmented sends, coalesced reads where the kernel offers
    /// them), a shorter last one, single ones and a run to a second peer all arrive as the same
    /// datagrams in the same order, each counted once on both sides.
    #[test]
    fn endpoint_keeps_datagrams_and_order_across_runs() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (a_addr, b_addr, c_addr) = (
            a.local_addr().unwrap(),
            b.local_addr().unwrap(),
            c.local_addr().unwrap(),
        );
        let (mut ea, mut eb, mut ec) = (
            UdpEndpoint::new(a).unwrap(),
            UdpEndpoint::new(b).unwrap(),
            UdpEndpoint::new(c).unwrap(),
        );
        let mut sender = Peer::default();
        let mut want_b = Vec::new();
        let mut want_c = Vec::new();
        let lens = [
            [1000; 20].as_slice(),
            &[300, 4120, 4120, 4120, 17, 17],
            &[900; 70],
        ]
        .concat();
        for (tag, &len) in lens.iter().enumerate() {
            let d = datagram(len, tag);
            // A few to the second peer in the middle break the runs.
            let to = if (30..33).contains(&tag) {
                c_addr
            } else {
                b_addr
            };
            if to == b_addr {
                want_b.push(d.clone());
            } else {
                want_c.push(d.clone());
            }
            sender.send.push_back((Some(to), d));
        }
        let sent = Endpoint::flush(&mut ea, &mut sender).unwrap();
        assert_eq!(sent, lens.len());
        assert_eq!(sender.io.sent, lens.len() as u64);
        assert_eq!(sender.io.send_errors, 0);
        let (mut pb, mut pc) = (Peer::default(), Peer::default());
        let deadline = Wall::now() + Duration::from_secs(5);
        while (pb.got.len() < want_b.len() || pc.got.len() < want_c.len()) && Wall::now() < deadline
        {
            Endpoint::on_readable(&mut eb, &mut pb, 64).unwrap();
            Endpoint::on_readable(&mut ec, &mut pc, 64).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(pb.got.iter().chain(&pc.got).all(|(f, _)| *f == a_addr));
        let got_b: Vec<_> = pb.got.into_iter().map(|(_, d)| d).collect();
        let got_c: Vec<_> = pc.got.into_iter().map(|(_, d)| d).collect();
        assert_eq!(got_b, want_b);
        assert_eq!(got_c, want_c);
        assert_eq!(pb.io.received, want_b.len() as u64);
    }

    /// Datagrams from several senders, none coalescible with the next, more than one
    /// `recvmmsg` holds: one call with room for all reads them all, each with its sender; with
    /// a smaller budget it stops at the budget and the next call goes on.
    #[test]
    fn batched_reads_drain_the_socket_and_keep_senders() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = rx.local_addr().unwrap();
        let mut ep = UdpEndpoint::new(rx).unwrap();
        let senders: Vec<UdpSocket> = (0..3)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        let mut want = Vec::new();
        for i in 0..30 {
            for (k, s) in senders.iter().enumerate() {
                let d = datagram(100 + i * 3 + k, i * 3 + k);
                s.send_to(&d, to).unwrap();
                want.push((s.local_addr().unwrap(), d));
            }
        }
        let mut p = Peer::default();
        let n = Endpoint::on_readable(&mut ep, &mut p, 10).unwrap();
        assert_eq!(n, 10);
        assert_eq!(p.got.len(), 10);
        let n = Endpoint::on_readable(&mut ep, &mut p, 1000).unwrap();
        assert_eq!(n, 80);
        assert_eq!(p.got, want);
        assert_eq!(p.io.received, 90);
        // Drained: the next call finds nothing.
        assert_eq!(Endpoint::on_readable(&mut ep, &mut p, 1000).unwrap(), 0);
    }

    #[test]
    fn runs_are_equal_length_to_one_peer_within_limits() {
        let p: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let q: SocketAddr = "127.0.0.1:2".parse().unwrap();
        let d = |to, len: usize| (Some(to), parts(&vec![0u8; len]));
        assert_eq!(run_len(&[]), 0);
        assert_eq!(run_len(&[d(p, 30), d(p, 30), d(p, 15), d(p, 15)]), 3);
        assert_eq!(run_len(&[d(p, 30), d(p, 31)]), 1);
        assert_eq!(run_len(&[d(p, 30), d(q, 30)]), 1);
        assert_eq!(run_len(&vec![d(p, 100); 100]), GSO_MAX_SEGMENTS);
        assert_eq!(run_len(&vec![d(p, 4120); 100]), GSO_MAX_BYTES / 4120);
    }

    #[test]
    fn udp_addresses() {
        assert_eq!(
            parse_udp("udp:127.0.0.1:4791").unwrap(),
            "127.0.0.1:4791".parse().unwrap()
        );
        assert_eq!(
            parse_udp("udp:[::1]:9").unwrap(),
            "[::1]:9".parse().unwrap()
        );
        assert!(parse_udp("127.0.0.1:4791").is_err());
        assert!(parse_udp("udp:127.0.0.1").is_err());
    }
}
