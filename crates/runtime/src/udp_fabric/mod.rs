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
//! ([`fresh_seed`]), so a restarted host does not reuse the QPNs its peers may still hold. An
//! attach process serves the control socket `ipoib show` reads (module `attach`).

use ipoib_fabric::hw::capture::Capture;
use ipoib_fabric::node::remote::{FabricOptions, FabricServer};
use ipoib_fabric::Instant;
use std::fs::File;
use std::io::{self, ErrorKind, Write};
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::time::Duration;

mod attach;

pub use attach::{AttachOptions, AttachProcess};

/// Datagrams read per turn at most, so that timers run between batches.
pub const BATCH: usize = 64;
/// How far past the present a turn runs the agent.
pub const SLACK: Duration = Duration::from_micros(200);
/// The longest wait for a datagram (the caller's stop flag is looked at this often).
pub const MAX_WAIT: Duration = Duration::from_millis(100);
/// Room for the biggest datagram: a 4,096-byte MTU packet with every header, and the header.
pub(crate) const BUF_LEN: usize = 8192;

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
pub(crate) fn read_batch(
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
        grow_buffers(&socket);
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
