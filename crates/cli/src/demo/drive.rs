//! Runs the demo's simulation a bounded number of events at a time, so that between steps it can
//! notice Ctrl-C ([`crate::interrupt`]), draw a progress line, and write the capture out as it
//! grows instead of holding it in memory.
//!
//! The two waiting loops here take the same steps as `Subnet::run_until_joined_with` and
//! `Subnet::run_until_with` (the same slices of simulated time, checked at the same instants), so
//! a run driven from here puts the same packets on the links at the same times, byte for byte.

use crate::interrupt::{Interrupt, Signal};
use ipoib_fabric::hw::capture::Capture;
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::Instant;
use std::fs::File;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant as Wall};

/// Events run between two looks at the signal flag, the progress line and the capture.
const CHUNK: usize = 10_000;
/// Capture bytes held before they are written to the file.
const CAPTURE_WRITE: usize = 1 << 20;

/// The demo's phases, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    BringUp,
    Ipv4First,
    Ipv4Then,
    Ipv6Dad,
    Ipv6First,
    Ipv6Then,
    Multicast,
    /// The bulk transfer in connected mode (RFC 4755).
    BulkConnected,
    /// The sender going back to datagram mode, its connections released.
    ModeSwitch,
    /// The bulk transfer in datagram mode.
    BulkDatagram,
}

impl Phase {
    /// For people: "the bring-up", "the first IPv4 pings", ...
    pub fn describe(self) -> &'static str {
        match self {
            Phase::BringUp => "the bring-up",
            Phase::Ipv4First => "the first IPv4 pings",
            Phase::Ipv4Then => "the second IPv4 pings",
            Phase::Ipv6Dad => "IPv6 duplicate address detection",
            Phase::Ipv6First => "the first IPv6 pings",
            Phase::Ipv6Then => "the second IPv6 pings",
            Phase::Multicast => "the multicast test",
            Phase::BulkConnected => "the connected-mode bulk transfer",
            Phase::ModeSwitch => "the switch to datagram mode",
            Phase::BulkDatagram => "the datagram-mode bulk transfer",
        }
    }

    /// A short name for JSON and the progress line.
    pub fn name(self) -> &'static str {
        match self {
            Phase::BringUp => "bring-up",
            Phase::Ipv4First => "ipv4-first",
            Phase::Ipv4Then => "ipv4-then",
            Phase::Ipv6Dad => "ipv6-dad",
            Phase::Ipv6First => "ipv6-first",
            Phase::Ipv6Then => "ipv6-then",
            Phase::Multicast => "multicast",
            Phase::BulkConnected => "bulk-connected",
            Phase::ModeSwitch => "mode-switch",
            Phase::BulkDatagram => "bulk-datagram",
        }
    }
}

/// The run stopped on a signal, during a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted {
    pub signal: Signal,
    pub phase: Phase,
}

/// When to draw the progress line.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// On a terminal, once the run has taken a second (as `ipoib sim` does).
    Auto,
    /// From the start: a line redrawn in place on a terminal, else a line a second (for logs).
    Always,
    /// Never.
    Never,
}

/// What a phase counts for the progress line: (done, of, what).
pub type Meter<'a> = &'a dyn Fn(&Subnet) -> (usize, usize, &'static str);

/// The progress line on standard error.
struct Progress {
    start: Wall,
    mode: ProgressMode,
    terminal: bool,
    last: Option<Wall>,
    /// Characters of the line last drawn in place (a shorter one is padded over it).
    width: usize,
}

impl Progress {
    fn due(&self) -> bool {
        let on = match self.mode {
            ProgressMode::Never => false,
            ProgressMode::Auto => self.terminal && self.start.elapsed() >= Duration::from_secs(1),
            ProgressMode::Always => true,
        };
        let every = if self.terminal {
            Duration::from_millis(100)
        } else {
            Duration::from_secs(1)
        };
        on && match self.last {
            Some(t) => t.elapsed() >= every,
            None => true,
        }
    }

    fn draw(&mut self, phase: Phase, (done, of, what): (usize, usize, &str), sim: Duration) {
        self.last = Some(Wall::now());
        let line = format!(
            "ipoib demo: {}: {done}/{of} {what}, {} simulated, {:.1} s",
            phase.name(),
            super::report::human(sim),
            self.start.elapsed().as_secs_f64()
        );
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let n = line.chars().count();
            let pad = self.width.saturating_sub(n);
            let _ = write!(err, "\r{line}{}", " ".repeat(pad));
            self.width = n;
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    /// Ends a line drawn in place, so that what follows starts on its own line.
    fn finish(&mut self) {
        if self.terminal && self.width > 0 {
            note!();
            self.width = 0;
        }
    }
}

/// The pcap file, written as the capture grows.
struct CaptureFile {
    path: String,
    file: File,
    error: Option<std::io::Error>,
    /// The capture taken off the simulator while it is paused ([`Driver::pause_capture`]).
    paused: Option<Capture>,
}

impl CaptureFile {
    fn write(&mut self, bytes: &[u8]) {
        if self.error.is_none() {
            if let Err(e) = self.file.write_all(bytes) {
                self.error = Some(e);
            }
        }
    }
}

/// Drives a [`Subnet`] for the demo. See the module docs.
pub struct Driver {
    interrupt: Interrupt,
    progress: Progress,
    capture: Option<CaptureFile>,
    phase: Phase,
}

impl Driver {
    /// A driver that writes the capture to `pcap` (created now, so that an unwritable path fails
    /// before the run).
    pub fn new(
        interrupt: Interrupt,
        progress: ProgressMode,
        start: Wall,
        pcap: &str,
    ) -> Result<Driver, String> {
        let file = File::create(pcap).map_err(|e| format!("--pcap {pcap}: {e}"))?;
        Ok(Driver {
            interrupt,
            progress: Progress {
                start,
                mode: progress,
                terminal: std::io::stderr().is_terminal(),
                last: None,
                width: 0,
            },
            capture: Some(CaptureFile {
                path: pcap.to_string(),
                file,
                error: None,
                paused: None,
            }),
            phase: Phase::BringUp,
        })
    }

    /// Enters `phase` (for the progress line and the partial report).
    pub fn phase(&mut self, phase: Phase) {
        self.phase = phase;
    }

    /// Looks at the signal flag, the progress line and the capture.
    fn check(&mut self, net: &mut Subnet, meter: Meter<'_>) -> Result<(), Interrupted> {
        self.write_capture(net, CAPTURE_WRITE);
        if let Some(signal) = self.interrupt.signal() {
            self.progress.finish();
            return Err(Interrupted {
                signal,
                phase: self.phase,
            });
        }
        if self.progress.due() {
            let now = net.sim().now() - Instant::ZERO;
            self.progress.draw(self.phase, meter(net), now);
        }
        Ok(())
    }

    fn write_capture(&mut self, net: &mut Subnet, min: usize) {
        let (Some(out), Some(c)) = (self.capture.as_mut(), net.sim_mut().capture_mut()) else {
            return;
        };
        if c.pending_len() >= min {
            let bytes = c.take_bytes();
            out.write(&bytes);
        }
    }

    /// Runs every event up to `until` (as `Simulator::run_until`), [`CHUNK`] events at a time.
    pub fn run_until(
        &mut self,
        net: &mut Subnet,
        until: Instant,
        meter: Meter<'_>,
    ) -> Result<(), Interrupted> {
        loop {
            self.check(net, meter)?;
            let sim = net.sim_mut();
            let mut n = 0;
            while n < CHUNK && sim.next_event_at().is_some_and(|t| t <= until) {
                sim.step();
                n += 1;
            }
            if n < CHUNK {
                sim.run_until(until);
                return Ok(());
            }
        }
    }

    /// `Subnet::run_until_joined`: until every host has carrier and the SM wrote the multicast
    /// trees, or `deadline`; true when all joined.
    pub fn run_until_joined(
        &mut self,
        net: &mut Subnet,
        deadline: Instant,
    ) -> Result<bool, Interrupted> {
        let hosts = net.host_count();
        let mut waiting: Vec<usize> = (0..hosts).collect();
        let min_slice = Duration::from_micros(50);
        let mut slice = min_slice;
        let meter: Meter<'_> = &|n| (n.carrier_count(), hosts, "hosts with carrier");
        loop {
            let before = waiting.len();
            waiting.retain(|&i| !net.is_joined(i));
            if waiting.is_empty() && net.is_settled() {
                return Ok(true);
            }
            if net.sim().now() >= deadline {
                return Ok(waiting.is_empty());
            }
            slice = if waiting.len() < before {
                min_slice
            } else {
                (slice * 2).min(Duration::from_millis(50))
            };
            let next = net.sim().next_event_at().unwrap_or(deadline);
            let until = (next.max(net.sim().now()) + slice).min(deadline);
            self.run_until(net, until, meter)?;
        }
    }

    /// `Subnet::run_until_with`: until `done` holds or `deadline`, looking at `done` between
    /// slices of simulated time (10 µs doubling to 10 ms). True when `done` held.
    pub fn run_until_with(
        &mut self,
        net: &mut Subnet,
        deadline: Instant,
        done: impl Fn(&Subnet) -> bool,
        meter: Meter<'_>,
    ) -> Result<bool, Interrupted> {
        let mut slice = Duration::from_micros(10);
        loop {
            if done(net) {
                return Ok(true);
            }
            if net.sim().now() >= deadline {
                return Ok(false);
            }
            let next = net.sim().next_event_at().unwrap_or(deadline);
            let until = (next.max(net.sim().now()) + slice).min(deadline);
            self.run_until(net, until, meter)?;
            slice = (slice * 2).min(Duration::from_millis(10));
        }
    }

    /// Stops recording packets: what the capture holds is written out and the capture is kept
    /// aside, its packet count and limit with it, until [`Driver::resume_capture`].
    pub fn pause_capture(&mut self, net: &mut Subnet) {
        self.write_capture(net, 0);
        if let Some(out) = self.capture.as_mut() {
            if out.paused.is_none() {
                out.paused = net.sim_mut().take_capture();
            }
        }
    }

    /// Records packets again, in the capture [`Driver::pause_capture`] kept aside.
    pub fn resume_capture(&mut self, net: &mut Subnet) {
        if let Some(c) = self.capture.as_mut().and_then(|out| out.paused.take()) {
            net.sim_mut().set_capture(c);
        }
    }

    /// Runs one event at a time until `step` says the work is done (true) or no event is left
    /// before `deadline` (false). `step` runs before the first event and after every one, so it
    /// can feed the simulation at the instant something happened (a sender's window opening),
    /// which the slices of [`Driver::run_until_with`] would blur.
    pub fn run_stepwise(
        &mut self,
        net: &mut Subnet,
        deadline: Instant,
        step: &mut dyn FnMut(&mut Subnet) -> bool,
        meter: Meter<'_>,
    ) -> Result<bool, Interrupted> {
        loop {
            self.check(net, meter)?;
            for _ in 0..CHUNK {
                if step(net) {
                    return Ok(true);
                }
                if net.sim().next_event_at().is_none_or(|t| t > deadline) {
                    net.sim_mut().run_until(deadline);
                    return Ok(step(net));
                }
                net.sim_mut().step();
            }
        }
    }

    /// Ends the progress line, writes the rest of the capture and closes the file: (packets
    /// kept, packets not kept), or the write error.
    pub fn finish(&mut self, net: &mut Subnet) -> Result<(u64, u64), String> {
        self.progress.finish();
        let Some(mut out) = self.capture.take() else {
            return Ok((0, 0));
        };
        let Some(c) = out.paused.take().or_else(|| net.sim_mut().take_capture()) else {
            return Ok((0, 0));
        };
        let counts = (c.packets(), c.skipped());
        out.write(&c.into_bytes());
        if out.error.is_none() {
            if let Err(e) = out.file.flush() {
                out.error = Some(e);
            }
        }
        match out.error {
            Some(e) => Err(format!("{}: {e}", out.path)),
            None => Ok(counts),
        }
    }
}
