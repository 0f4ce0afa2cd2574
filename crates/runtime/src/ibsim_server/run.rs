//! [`serve`]: the server against the wall clock, one thread, on the runtime's real-time driver
//! ([`crate::realtime`]): the server is one [`Endpoint`] of a [`Driver`] whose emulation is the
//! subnet. Each turn the driver hands the clients' datagrams to the subnet at its present
//! ([`IbsimServer::poll`]), runs the subnet up to the present, writes what it delivered
//! ([`IbsimServer::flush`]), and sleeps on the server's descriptor until a datagram comes or the
//! next event is due (at most [`ServeOptions::max_sleep`]). Between turns the clients are probed
//! ([`IbsimServer::probe`]) and the caller is asked whether to stop.

use super::IbsimServer;
use crate::realtime::{Config, Driver, Emulation, Endpoint};
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::Instant;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant as Wall};

/// Tunables of [`serve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeOptions {
    /// The longest sleep.
    pub max_sleep: Duration,
    /// How often clients are probed for having vanished ([`IbsimServer::probe`]).
    pub probe_every: Duration,
}

impl Default for ServeOptions {
    /// 100 ms sleeps, a probe every 2 s.
    fn default() -> ServeOptions {
        ServeOptions {
            max_sleep: Duration::from_millis(100),
            probe_every: Duration::from_secs(2),
        }
    }
}

/// What the driver runs: the subnet, with the server beside it (borrowed from [`serve`]'s
/// caller, so the endpoint itself holds only the descriptor).
struct Served<'a> {
    server: &'a mut IbsimServer,
    net: &'a mut Subnet,
}

impl Emulation for Served<'_> {
    fn now(&self) -> Instant {
        self.net.now()
    }
    fn next_event_at(&self) -> Option<Instant> {
        self.net.next_event_at()
    }
    fn run_until(&mut self, t: Instant) {
        self.net.run_until(t);
    }
}

/// The server as an endpoint of the driver: its descriptor ([`IbsimServer::poll_fd`]) is
/// readable when a datagram waits on any of its sockets.
struct ServerEndpoint {
    fd: RawFd,
}

impl<'a> Endpoint<Served<'a>> for ServerEndpoint {
    fn raw_fd(&self) -> RawFd {
        self.fd
    }

    /// One [`IbsimServer::poll`] (which stops after a few rounds of ready sockets). The driver
    /// watches the descriptor edge-triggered, so while a datagram may be left (poll said so and
    /// [`IbsimServer::pending`] confirms it) this reports the full budget and the driver serves
    /// the server again next turn; 0 once everything was read (every socket would block: the
    /// next datagram is a new edge).
    fn on_readable(&mut self, emu: &mut Served<'a>, budget: usize) -> io::Result<usize> {
        let left = emu.server.poll(emu.net)? && emu.server.pending()?;
        Ok(if left { budget } else { 0 })
    }

    fn flush(&mut self, emu: &mut Served<'a>) -> io::Result<usize> {
        let before = emu.server.counters().mads_out;
        emu.server.flush(emu.net);
        Ok(usize::try_from(emu.server.counters().mads_out - before).unwrap_or(usize::MAX))
    }
}

/// Runs `server` on `net` until `stop` says so (asked at least every `max_sleep`, between turns,
/// with the server and the subnet: the caller may look at them or act on them there, as a turn's
/// clients do; [`IbsimServer::take_refusals`], say).
pub fn serve(
    server: &mut IbsimServer,
    net: &mut Subnet,
    stop: &mut dyn FnMut(&mut IbsimServer, &mut Subnet) -> bool,
    opts: ServeOptions,
) -> io::Result<()> {
    let fd = server.poll_fd().as_raw_fd();
    let cfg = Config {
        max_sleep: opts.max_sleep,
        ..Config::default()
    };
    let mut driver = Driver::new(Served { server, net }, cfg)?;
    driver.add(Box::new(ServerEndpoint { fd }))?;
    let mut last_probe = Wall::now();
    loop {
        let emu = driver.emulation_mut();
        if stop(emu.server, emu.net) {
            return Ok(());
        }
        if last_probe.elapsed() >= opts.probe_every {
            last_probe = Wall::now();
            emu.server.probe(emu.net);
        }
        let next_probe = last_probe + opts.probe_every;
        driver.turn(next_probe.min(Wall::now() + opts.max_sleep))?;
    }
}

/// The server as an endpoint of a driver whose emulation is the subnet itself, beside other
/// endpoints (`ipoib lab --sm opensm`: the hosts' TUN devices and OpenSM's ibsim client on one
/// driver). It owns the server; clients are probed for having vanished from
/// [`Endpoint::flush`], at most every `probe_every`.
pub struct IbsimEndpoint {
    server: IbsimServer,
    probe_every: Duration,
    last_probe: Wall,
}

impl std::fmt::Debug for IbsimEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IbsimEndpoint")
            .field("server", &self.server)
            .finish()
    }
}

impl IbsimEndpoint {
    /// Serves `server`, probing its clients every `probe_every`.
    pub fn new(server: IbsimServer, probe_every: Duration) -> IbsimEndpoint {
        IbsimEndpoint {
            server,
            probe_every,
            last_probe: Wall::now(),
        }
    }
}

impl Endpoint<Subnet> for IbsimEndpoint {
    fn raw_fd(&self) -> RawFd {
        self.server.poll_fd().as_raw_fd()
    }

    /// As the server's own endpoint's: one [`IbsimServer::poll`], the full budget while a datagram
    /// is left.
    fn on_readable(&mut self, net: &mut Subnet, budget: usize) -> io::Result<usize> {
        self.server.poll(net)?;
        Ok(if self.server.pending()? { budget } else { 0 })
    }

    fn flush(&mut self, net: &mut Subnet) -> io::Result<usize> {
        if self.last_probe.elapsed() >= self.probe_every {
            self.last_probe = Wall::now();
            self.server.probe(net);
        }
        let before = self.server.counters().mads_out;
        self.server.flush(net);
        Ok(usize::try_from(self.server.counters().mads_out - before).unwrap_or(usize::MAX))
    }
}
