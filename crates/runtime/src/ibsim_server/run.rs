//! [`serve`]: the server against the wall clock, one thread, turning as the runtime's real-time
//! driver does ([`crate::realtime`]) with the server as its only file. Each turn sleeps on the
//! server's sockets until a datagram comes or the subnet's next event is due (at most
//! [`ServeOptions::max_sleep`]), hands the clients' datagrams to the subnet at its present
//! ([`IbsimServer::poll_wait`]), runs the subnet up to the present and writes what it delivered
//! ([`IbsimServer::flush`]). Between turns the clients are probed ([`IbsimServer::probe`]) and
//! the caller is asked whether to stop. [`IbsimEndpoint`] is the server as one endpoint of a
//! driver beside others (`ipoib lab`, `ipoib fabric --ibsim`).

use super::{IbsimNet, IbsimServer, ServerCounters};
use crate::realtime::{keep_freed_heap, Clock, Config, Endpoint};
use ipoib_fabric::node::subnet::Subnet;
use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
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

/// Runs `server` on `net` until `stop` says so (asked at least every `max_sleep`, between turns,
/// with the server and the subnet: the caller may look at them or act on them there, as a turn's
/// clients do; [`IbsimServer::take_refusals`], say).
///
/// The turns of the real-time driver ([`crate::realtime`], module docs) with the server as the
/// only file: virtual time is wall time ([`Clock`]); a turn sleeps until a datagram comes or the
/// subnet's next event is due less the driver's slack (at most `max_sleep`, none while the
/// server may have datagrams left), hands what came to the subnet at its present (run to the wall
/// clock's present first after a sleep, [`IbsimServer::poll_wait`]), runs the subnet to the present plus the slack and writes what
/// it delivered ([`IbsimServer::flush`]). It sleeps on the server's own epoll set, not on a
/// driver's set holding the server's descriptor: one epoll_wait(2) a turn instead of two, which
/// is most of what a turn costs beside the subnet's work when each turn answers one MAD (an SM's
/// sweep, docs/benchmarks/subnet.md).
pub fn serve(
    server: &mut IbsimServer,
    net: &mut Subnet,
    stop: &mut dyn FnMut(&mut IbsimServer, &mut Subnet) -> bool,
    opts: ServeOptions,
) -> io::Result<()> {
    keep_freed_heap();
    let slack = Config::default().slack;
    let clock = Clock::new(Wall::now(), net.sim().now());
    server.clock = Some(clock);
    // The next probe's instant: a turn compares instants, cheaper than measuring the time
    // since the last probe (`Instant` differences are normalised `Duration`s).
    let mut next_probe = Wall::now() + opts.probe_every;
    // Read at once: a datagram may have come before.
    let mut left = true;
    loop {
        if stop(server, net) {
            return Ok(());
        }
        let now = Wall::now();
        if now >= next_probe {
            next_probe = now + opts.probe_every;
            server.probe(net);
        }
        // No sleep while datagrams may be left (most turns of a sweep): the sleep's end is
        // worked out only for a turn that may sleep.
        let timeout = if left {
            Duration::ZERO
        } else {
            let mut wake = next_probe.min(now + opts.max_sleep);
            if let Some(t) = net.sim().next_event_at() {
                let due = clock.wall_at(t);
                wake = wake.min(due.checked_sub(slack).unwrap_or(due));
            }
            wake.saturating_duration_since(now)
        };
        left = server.poll_wait(net, timeout)?;
        let target = clock.virtual_at(Wall::now()) + slack;
        let target = target.max(net.sim().now());
        net.sim_mut().run_until(target);
        server.flush(net);
    }
}

/// The server as an endpoint of a driver whose emulation is the subnet itself, beside other
/// endpoints (`ipoib lab --sm opensm`: the hosts' TUN devices and OpenSM's ibsim client on one
/// driver; `ipoib fabric --ibsim`: the hosts' UDP socket and OpenSM's client on the SM's CA). It owns the server; clients are probed for having vanished from
/// [`Endpoint::flush`], at most every `probe_every`.
pub struct IbsimEndpoint {
    server: IbsimServer,
    /// The server's counters as of the end of its last read or flush, for the owner's
    /// `ipoib show counters` ([`IbsimEndpoint::counters`]).
    shown: Rc<Cell<ServerCounters>>,
    probe_every: Duration,
    last_probe: Wall,
    tell: Option<Tell>,
}

/// Where an [`IbsimEndpoint`] tells its server's refusals ([`IbsimServer::told_refusals`]), a
/// line each.
pub type Tell = Box<dyn FnMut(&str)>;

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
            shown: Rc::new(Cell::new(*server.counters())),
            server,
            probe_every,
            last_probe: Wall::now(),
            tell: None,
        }
    }

    /// Tells the server's refusals to `tell` after each turn, as `ipoib ibsim-server` prints
    /// them (a client learns no reason for its refusal: docs/IBSIM.md).
    pub fn telling(mut self, tell: Tell) -> IbsimEndpoint {
        self.tell = Some(tell);
        self
    }

    /// The server.
    pub fn server(&self) -> &IbsimServer {
        &self.server
    }

    /// The server's counters, kept up to date after each read and flush, for whoever adds the
    /// endpoint to its driver and shows them (`ipoib show counters`, section `ibsim`:
    /// [`ServerCounters::section`]).
    pub fn counters(&self) -> Rc<Cell<ServerCounters>> {
        self.shown.clone()
    }
}

impl<N: IbsimNet> Endpoint<N> for IbsimEndpoint {
    fn raw_fd(&self) -> RawFd {
        self.server.poll_fd().as_raw_fd()
    }

    /// As the server's own endpoint's: one [`IbsimServer::poll`], the full budget while a datagram
    /// is left.
    fn on_readable(&mut self, net: &mut N, budget: usize) -> io::Result<usize> {
        let polled = self.server.poll(net);
        self.shown.set(*self.server.counters());
        polled?;
        Ok(if self.server.pending()? { budget } else { 0 })
    }

    fn flush(&mut self, net: &mut N) -> io::Result<usize> {
        if self.last_probe.elapsed() >= self.probe_every {
            self.last_probe = Wall::now();
            self.server.probe(net);
        }
        if let Some(tell) = self.tell.as_mut() {
            for line in self.server.told_refusals() {
                tell(&line);
            }
        }
        let before = self.server.counters().mads_out;
        self.server.flush(net);
        self.shown.set(*self.server.counters());
        Ok(usize::try_from(self.server.counters().mads_out - before).unwrap_or(usize::MAX))
    }
}
