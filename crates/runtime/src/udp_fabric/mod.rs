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
use crate::realtime::{Config, Driver, Emulation, Endpoint};
use ipoib_fabric::hw::capture::Capture;
use ipoib_fabric::node::remote::{FabricOptions, FabricServer};
use ipoib_fabric::Instant;
use std::fs::File;
use std::io::{self, ErrorKind, Write};
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::time::{Duration, Instant as Wall};

mod attach;
mod fabric_show;

pub use attach::{AttachEmu, AttachOptions, AttachProcess, CONNECTED_MTU, DATAGRAM_MTU};
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
}

/// The pcap file of `ipoib fabric --pcap`, written as the capture grows, up to a byte limit.
#[derive(Debug)]
struct CaptureFile {
    file: File,
    written: u64,
    limit: Option<u64>,
}

/// An emulation that speaks datagrams: what [`UdpEndpoint`] reads goes in, what it sends comes
/// out.
pub trait DatagramPeer {
    /// A datagram from `from`, at the emulation's present.
    fn on_datagram(&mut self, from: SocketAddr, data: &[u8]);
    /// The next datagram to send, and to whom (`None`: the connected socket's peer).
    fn next_datagram(&mut self) -> Option<(Option<SocketAddr>, Vec<u8>)>;
    /// Where the endpoint counts.
    fn io_counters(&mut self) -> &mut IoCounters;
}

/// A non-blocking UDP socket as an endpoint of the driver.
#[derive(Debug)]
pub struct UdpEndpoint {
    socket: UdpSocket,
    buf: Box<[u8]>,
}

impl UdpEndpoint {
    /// Makes `socket` non-blocking and wraps it.
    pub fn new(socket: UdpSocket) -> io::Result<UdpEndpoint> {
        socket.set_nonblocking(true)?;
        Ok(UdpEndpoint {
            socket,
            buf: vec![0; BUF_LEN].into_boxed_slice(),
        })
    }
}

impl<E: DatagramPeer> Endpoint<E> for UdpEndpoint {
    fn raw_fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }

    fn on_readable(&mut self, emu: &mut E, budget: usize) -> io::Result<usize> {
        let mut n = 0;
        while n < budget {
            match self.socket.recv_from(&mut self.buf) {
                Ok((len, from)) => {
                    n += 1;
                    emu.io_counters().received += 1;
                    emu.on_datagram(from, &self.buf[..len]);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                // ECONNREFUSED for an earlier datagram (module docs), EINTR: read on.
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::ConnectionRefused | ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }

    fn flush(&mut self, emu: &mut E) -> io::Result<usize> {
        let mut n = 0;
        while let Some((to, d)) = emu.next_datagram() {
            let r = match to {
                Some(a) => self.socket.send_to(&d, a),
                None => self.socket.send(&d),
            };
            let c = emu.io_counters();
            match r {
                Ok(_) => c.sent += 1,
                Err(_) => c.send_errors += 1,
            }
            n += 1;
        }
        Ok(n)
    }
}

/// The fabric agent as the driver's emulation.
#[derive(Debug)]
pub struct FabricEmu {
    server: FabricServer<SocketAddr>,
    io: IoCounters,
}

impl FabricEmu {
    /// The agent.
    pub fn server(&self) -> &FabricServer<SocketAddr> {
        &self.server
    }
}

impl Emulation for FabricEmu {
    fn now(&self) -> Instant {
        self.server.sim().now()
    }
    fn next_event_at(&self) -> Option<Instant> {
        self.server.poll_timeout()
    }
    fn run_until(&mut self, t: Instant) {
        self.server.handle_timeout(t);
    }
}

impl DatagramPeer for FabricEmu {
    fn on_datagram(&mut self, from: SocketAddr, data: &[u8]) {
        let now = self.server.sim().now();
        self.server.handle_datagram(now, from, data);
    }
    fn next_datagram(&mut self) -> Option<(Option<SocketAddr>, Vec<u8>)> {
        self.server.poll_transmit().map(|(a, d)| (Some(a), d))
    }
    fn io_counters(&mut self) -> &mut IoCounters {
        &mut self.io
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
    /// Builds the fabric and binds `addr`.
    pub fn bind(addr: SocketAddr, opts: FabricOptions) -> io::Result<FabricProcess> {
        let server = FabricServer::build(opts).map_err(|e| io::Error::other(e.to_string()))?;
        let socket = UdpSocket::bind(addr)?;
        grow_buffers(&socket);
        let local = socket.local_addr()?;
        let emu = FabricEmu {
            server,
            io: IoCounters::default(),
        };
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
        });
        self.write_capture()
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

    /// The control socket's path, when served.
    pub fn control_path(&self) -> Option<&Path> {
        self.control.as_deref()
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }

    /// The agent.
    pub fn server(&self) -> &FabricServer<SocketAddr> {
        &self.driver.emulation().server
    }

    /// Counters of the socket.
    pub fn counters(&self) -> IoCounters {
        self.driver.emulation().io
    }

    /// One turn of the driver, sleeping at most `max_wait`; true when the stop file fired.
    pub fn turn(&mut self, max_wait: Duration) -> io::Result<bool> {
        let w = self.driver.turn(Wall::now() + max_wait)?;
        self.write_capture()?;
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
            // Whole records only: what does not fit ends the capture.
            sim.take_capture();
            return Ok(());
        }
        out.file.write_all(&bytes)?;
        out.written += bytes.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
