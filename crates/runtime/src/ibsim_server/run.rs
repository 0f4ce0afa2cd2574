//! [`serve`]: the server against the wall clock, one thread. Virtual time is the subnet's time when
//! serving starts plus the wall time elapsed since; each turn runs the subnet up to the present,
//! reads the clients' datagrams (their MADs enter at the present), runs the subnet again, writes
//! what it delivered, and sleeps on the server's descriptor until a datagram comes or the next
//! event is due (at most [`ServeOptions::max_sleep`]).
//!
//! This small loop stands in until the runtime's real-time driver drives the server as one of its
//! endpoints.

use super::IbsimServer;
use ipoib_fabric::node::subnet::Subnet;
use std::io;
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
/// with the subnet: the caller may look at it or act on it there, as a turn's clients do).
pub fn serve(
    server: &mut IbsimServer,
    net: &mut Subnet,
    stop: &mut dyn FnMut(&mut Subnet) -> bool,
    opts: ServeOptions,
) -> io::Result<()> {
    let wall0 = Wall::now();
    let v0 = net.sim().now();
    let mut last_probe = wall0;
    while !stop(net) {
        let now = v0 + wall0.elapsed();
        net.sim_mut().run_until(now);
        server.poll(net)?;
        // What the clients' MADs caused within the present (the host's own reaction, local
        // answers) runs now; the rest when due.
        net.sim_mut().run_until(now);
        server.flush(net);
        if last_probe.elapsed() >= opts.probe_every {
            last_probe = Wall::now();
            server.probe(net);
        }
        let now = v0 + wall0.elapsed();
        let sleep = match net.sim().next_event_at() {
            Some(t) if t <= now => Duration::ZERO,
            Some(t) => (t - now).min(opts.max_sleep),
            None => opts.max_sleep,
        };
        if !sleep.is_zero() {
            server.wait(sleep)?;
        }
    }
    Ok(())
}
