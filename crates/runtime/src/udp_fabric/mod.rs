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

use crate::capture_file::CaptureFile;
use crate::control::{fabric_socket, BindError, ControlServer};
use crate::realtime::control::{AnswerFn, ControlEndpoint};
use crate::realtime::{Config, Driver};
use ipoib_fabric::node::remote::{FabricOptions, FabricServer};
use std::io;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{Duration, Instant as Wall};

mod attach;
mod endpoint;
mod fabric_emu;
mod fabric_show;
pub mod guid2lid;

pub use attach::{
    AttachEmu, AttachOptions, AttachOsPort, AttachProcess, CONNECTED_MTU, DATAGRAM_MTU,
};
pub use endpoint::{DatagramPeer, UdpEndpoint};
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

/// A secret key from the operating system's random source (`getrandom`): the fabric's cookie
/// secret, a host's nonce key.
fn os_key() -> io::Result<[u64; 2]> {
    let mut key = [[0u8; 8]; 2];
    for k in &mut key {
        getrandom::fill(k).map_err(|e| io::Error::other(e.to_string()))?;
    }
    Ok(key.map(u64::from_ne_bytes))
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
    /// the id of the session it lost. The attach cookies' secret comes from the operating
    /// system's random source unless `opts` gives one ([`FabricOptions::cookie_key`]): the wall
    /// clock and the process id can be guessed, and whoever knows the secret can mint a cookie
    /// for any address (docs/UDP-FABRIC.md "Limits").
    pub fn bind(addr: SocketAddr, mut opts: FabricOptions) -> io::Result<FabricProcess> {
        opts.session_seed = opts.session_seed.or_else(|| Some(fresh_seed()));
        if opts.cookie_key.is_none() {
            opts.cookie_key = Some(os_key()?);
        }
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
        let epoch = crate::capture_file::epoch_of(&self.driver.clock());
        let sim = self.driver.emulation_mut().server.sim_mut();
        self.capture = Some(CaptureFile::start(path, limit, sim, epoch)?);
        Ok(())
    }

    /// The capture file of [`FabricProcess::capture_to`]: what it holds, whether the limit or a
    /// write error stopped it.
    pub fn capture(&self) -> Option<&CaptureFile> {
        self.capture.as_ref()
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
        let w = self.driver.turn(Wall::now() + max_wait);
        // Also when the turn failed: what it recorded before is written.
        self.write_capture();
        Ok(w? == crate::realtime::Wake::Stop)
    }

    /// Turns until the stop file fires or `stop()` holds.
    pub fn run(&mut self, stop: impl Fn() -> bool) -> io::Result<()> {
        while !stop() {
            if self.turn(MAX_WAIT)? {
                break;
            }
        }
        self.write_capture();
        Ok(())
    }

    /// Writes what the capture recorded since the last turn. A capture the disk cannot take
    /// stops, not the fabric its hosts depend on ([`CaptureFile::drain`]).
    fn write_capture(&mut self) {
        if let Some(out) = &mut self.capture {
            out.drain(self.driver.emulation_mut().server.sim_mut());
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
