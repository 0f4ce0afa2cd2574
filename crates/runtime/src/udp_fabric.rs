//! The subnet across processes over UDP (docs/UDP-FABRIC.md): the fabric process
//! ([`FabricProcess`], `ipoib fabric`) and a host process ([`AttachProcess`], `ipoib attach`),
//! each one sans-IO agent of `ipoib_fabric::node::remote` driven against the wall clock over a
//! `std::net::UdpSocket`.
//!
//! Virtual time is wall time since the process started ([`WallClock`]). One turn
//! ([`FabricProcess::turn`], [`AttachProcess::turn`]): wait for a datagram at most until the
//! agent's next timer (the socket's read timeout, so no busy waiting), read what is there without
//! blocking up to [`BATCH`] datagrams, hand them to the agent at the present, run its timers up to
//! the present plus [`SLACK`] (the chain of sub-microsecond events one packet causes completes in
//! one turn), and send what it produced. Send errors (a fabric not yet up answers with ICMP port
//! unreachable, seen as `ECONNREFUSED` on the next call) are counted, never fatal: the protocol's
//! keepalives and retries recover.
//!
//! A host gets a first QPN and a seed from the wall clock and its process id
//! ([`fresh_seed`]), so a restarted host does not reuse the QPNs its peers may still hold.

use ipoib_fabric::hw::capture::Capture;
use ipoib_fabric::node::host::Host;
use ipoib_fabric::node::ipoib::{IpoibApp, IpoibHandle};
use ipoib_fabric::node::remote::{
    FabricOptions, FabricServer, HostLinkConfig, HostLinkEvent, InstallFn, RemoteHost,
};
use ipoib_fabric::Instant;
use ipoib_proto::ipoib::{ConnectedConfig, InterfaceConfig, Ipv4Config};
use ipoib_wire::udp_fabric::AttachAccept;
use ipoib_wire::{Guid, PKey};
use std::cell::Cell;
use std::fs::File;
use std::io::{self, ErrorKind, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::rc::Rc;
use std::time::Duration;

/// Datagrams read per turn at most, so that timers run between batches.
pub const BATCH: usize = 64;
/// How far past the present a turn runs the agent.
pub const SLACK: Duration = Duration::from_micros(200);
/// The longest wait for a datagram (the caller's stop flag is looked at this often).
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

/// A seed from the wall clock and the process id (different in every run).
pub fn fresh_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15
}

/// Wall time onto virtual time: virtual zero at the clock's creation.
#[derive(Debug, Clone, Copy)]
pub struct WallClock {
    start: std::time::Instant,
}

impl WallClock {
    /// Virtual zero is now.
    pub fn start() -> WallClock {
        WallClock {
            start: std::time::Instant::now(),
        }
    }

    /// The present as virtual time.
    pub fn now(&self) -> Instant {
        Instant::ZERO + self.start.elapsed()
    }

    /// How long until virtual `t` (zero when past).
    pub fn until(&self, t: Instant) -> Duration {
        t.saturating_duration_since(self.now())
    }
}

/// Waits at most `wait` for a datagram, then reads up to [`BATCH`] without blocking.
fn read_batch(
    socket: &UdpSocket,
    buf: &mut [u8],
    wait: Duration,
    mut on: impl FnMut(SocketAddr, &[u8]),
) -> io::Result<usize> {
    let mut n = 0;
    if wait.is_zero() {
        socket.set_nonblocking(true)?;
    } else {
        socket.set_nonblocking(false)?;
        socket.set_read_timeout(Some(wait))?;
    }
    loop {
        match socket.recv_from(buf) {
            Ok((len, from)) => {
                on(from, &buf[..len]);
                n += 1;
                if n >= BATCH {
                    break;
                }
                if n == 1 {
                    socket.set_nonblocking(true)?;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock
                        | ErrorKind::TimedOut
                        | ErrorKind::Interrupted
                        | ErrorKind::ConnectionRefused
                ) =>
            {
                break;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(n)
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

/// `ipoib fabric`: the fabric agent on a UDP socket. See the module docs.
#[derive(Debug)]
pub struct FabricProcess {
    server: FabricServer<SocketAddr>,
    socket: UdpSocket,
    clock: WallClock,
    capture: Option<CaptureFile>,
    counters: IoCounters,
    buf: Vec<u8>,
}

impl FabricProcess {
    /// Builds the fabric and binds `addr`.
    pub fn bind(addr: SocketAddr, opts: FabricOptions) -> io::Result<FabricProcess> {
        let server = FabricServer::build(opts).map_err(|e| io::Error::other(e.to_string()))?;
        let socket = UdpSocket::bind(addr)?;
        Ok(FabricProcess {
            server,
            socket,
            clock: WallClock::start(),
            capture: None,
            counters: IoCounters::default(),
            buf: vec![0; BUF_LEN],
        })
    }

    /// Records every packet on every link of the fabric into `path` (ERF records), written as
    /// the capture grows, until the file reaches `limit` bytes.
    pub fn capture_to(&mut self, path: &str, limit: Option<u64>) -> io::Result<()> {
        let file = File::create(path)?;
        self.server.sim_mut().set_capture(Capture::new());
        self.capture = Some(CaptureFile {
            file,
            written: 0,
            limit,
        });
        self.write_capture()
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// The agent.
    pub fn server(&self) -> &FabricServer<SocketAddr> {
        &self.server
    }

    /// Counters of the socket.
    pub fn counters(&self) -> IoCounters {
        self.counters
    }

    /// One turn (module docs), waiting at most `max_wait`.
    pub fn turn(&mut self, max_wait: Duration) -> io::Result<()> {
        let wait = self
            .server
            .poll_timeout()
            .map_or(max_wait, |t| self.clock.until(t).min(max_wait));
        let (server, clock) = (&mut self.server, self.clock);
        let n = read_batch(&self.socket, &mut self.buf, wait, |from, d| {
            server.handle_datagram(clock.now(), from, d);
        })?;
        self.counters.received += n as u64;
        self.server.handle_timeout(self.clock.now() + SLACK);
        while let Some((to, d)) = self.server.poll_transmit() {
            match self.socket.send_to(&d, to) {
                Ok(_) => self.counters.sent += 1,
                Err(_) => self.counters.send_errors += 1,
            }
        }
        self.write_capture()
    }

    /// Turns until `stop()` holds.
    pub fn run(&mut self, stop: impl Fn() -> bool) -> io::Result<()> {
        while !stop() {
            self.turn(MAX_WAIT)?;
        }
        self.write_capture()
    }

    fn write_capture(&mut self) -> io::Result<()> {
        let Some(out) = &mut self.capture else {
            return Ok(());
        };
        let Some(c) = self.server.sim_mut().capture_mut() else {
            return Ok(());
        };
        let bytes = c.take_bytes();
        let room = out
            .limit
            .map_or(u64::MAX, |l| l.saturating_sub(out.written));
        let n = (bytes.len() as u64).min(room) as usize;
        // Whole records only: a record cut at the limit would end the file in the middle of one.
        let keep = if n < bytes.len() {
            // Stop capturing: what follows would not be written anyway.
            self.server.sim_mut().take_capture();
            0
        } else {
            n
        };
        out.file.write_all(&bytes[..keep])?;
        out.written += keep as u64;
        Ok(())
    }
}

/// What `ipoib attach` runs.
#[derive(Debug, Clone)]
pub struct AttachOptions {
    /// The fabric.
    pub fabric: SocketAddr,
    /// IPv4 address and prefix length.
    pub ipv4: Option<(Ipv4Addr, u8)>,
    /// IPv6 addresses (besides the link-local one from the port GUID).
    pub ipv6: Vec<(Ipv6Addr, u8)>,
    /// IPv6 on.
    pub ipv6_on: bool,
    /// Connected mode (RFC 4755).
    pub connected: bool,
    /// The partition.
    pub pkey: PKey,
    /// The protocol's timers.
    pub link: HostLinkConfig,
    /// Seed of the host's random choices and its first QPN ([`fresh_seed`] by default).
    pub seed: u64,
}

impl AttachOptions {
    /// Defaults for `fabric`: no address, IPv6 link-local on, datagram mode, the default
    /// partition, a fresh seed.
    pub fn new(fabric: SocketAddr) -> AttachOptions {
        AttachOptions {
            fabric,
            ipv4: None,
            ipv6: Vec::new(),
            ipv6_on: true,
            connected: false,
            pkey: PKey::DEFAULT,
            link: HostLinkConfig::default(),
            seed: fresh_seed(),
        }
    }

    /// The interface configuration of these options.
    pub fn interface_config(&self) -> InterfaceConfig {
        let mut cfg = InterfaceConfig::new(Guid(0), 0);
        cfg.pkey = self.pkey;
        cfg.ipv4 = self.ipv4.map(|(addr, prefix_len)| Ipv4Config {
            addr,
            prefix_len,
            gateway: None,
        });
        cfg.ipv6 = self.ipv6_on || !self.ipv6.is_empty();
        cfg.ipv6_static = self.ipv6.clone();
        if self.connected {
            cfg.connected = Some(ConnectedConfig::rc());
        }
        cfg
    }
}

/// `ipoib attach`: one host on a UDP socket connected to the fabric. Its IP layer is, for now,
/// the built-in one of [`IpoibApp::install`] (it answers ARP, ND and pings); the TUN device for
/// the operating system's IP comes with the external-IP interface.
pub struct AttachProcess {
    host: RemoteHost,
    ipoib: Rc<Cell<Option<IpoibHandle>>>,
    socket: UdpSocket,
    clock: WallClock,
    counters: IoCounters,
    buf: Vec<u8>,
}

impl std::fmt::Debug for AttachProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttachProcess")
            .field("host", &self.host)
            .field("counters", &self.counters)
            .finish()
    }
}

impl AttachProcess {
    /// A host that starts attaching to `opts.fabric` at once.
    pub fn connect(opts: &AttachOptions) -> io::Result<AttachProcess> {
        let any: SocketAddr = if opts.fabric.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let socket = UdpSocket::bind(any)?;
        socket.connect(opts.fabric)?;
        let ipoib = Rc::new(Cell::new(None));
        let slot = ipoib.clone();
        let cfg = opts.interface_config();
        let install: InstallFn = Box::new(move |h: &mut Host, _a: &AttachAccept, rng| {
            slot.set(IpoibApp::install(h, cfg.clone(), rng).ok());
        });
        let clock = WallClock::start();
        // The first QPN from the seed: 0x100.. below the top of the 24-bit space.
        let first_qpn = 0x100 + (opts.seed % 0x00ff_0000) as u32;
        let host = RemoteHost::new(clock.now(), opts.link, opts.seed, Some(first_qpn), install);
        Ok(AttachProcess {
            host,
            ipoib,
            socket,
            clock,
            counters: IoCounters::default(),
            buf: vec![0; BUF_LEN],
        })
    }

    /// The host agent.
    pub fn host(&self) -> &RemoteHost {
        &self.host
    }

    /// The IPoIB adapter, once the host is built.
    pub fn app(&self) -> Option<&IpoibApp> {
        let h = self.ipoib.get()?;
        self.host.host()?.app::<IpoibApp>(h.app)
    }

    /// Counters of the socket.
    pub fn counters(&self) -> IoCounters {
        self.counters
    }

    /// The next status change of the attachment.
    pub fn poll_status(&mut self) -> Option<HostLinkEvent> {
        self.host.poll_status()
    }

    /// Runs `f` on the IPoIB adapter now (a ping, a join), then lets the host act.
    pub fn with_app<R>(&mut self, f: impl FnOnce(&mut IpoibApp, Instant) -> R) -> Option<R> {
        let h = self.ipoib.get()?;
        let now = self.clock.now();
        let r = self
            .host
            .with_host(now, |host, now| {
                host.app_mut::<IpoibApp>(h.app).map(|a| f(a, now))
            })
            .flatten();
        self.send();
        r
    }

    /// One turn (module docs), waiting at most `max_wait`.
    pub fn turn(&mut self, max_wait: Duration) -> io::Result<()> {
        let wait = self
            .host
            .poll_timeout()
            .map_or(max_wait, |t| self.clock.until(t).min(max_wait));
        let (host, clock, fabric) = (&mut self.host, self.clock, self.socket.peer_addr()?);
        let n = read_batch(&self.socket, &mut self.buf, wait, |from, d| {
            if from == fabric {
                host.handle_datagram(clock.now(), d);
            }
        })?;
        self.counters.received += n as u64;
        self.host.handle_timeout(self.clock.now() + SLACK);
        self.send();
        Ok(())
    }

    /// Turns until `stop()` holds.
    pub fn run(&mut self, stop: impl Fn() -> bool) -> io::Result<()> {
        while !stop() {
            self.turn(MAX_WAIT)?;
        }
        Ok(())
    }

    /// Leaves the fabric: Detach, sent at once.
    pub fn detach(&mut self) {
        self.host.detach(self.clock.now());
        self.send();
    }

    fn send(&mut self) {
        while let Some(d) = self.host.poll_transmit() {
            match self.socket.send(&d) {
                Ok(_) => self.counters.sent += 1,
                Err(_) => self.counters.send_errors += 1,
            }
        }
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
