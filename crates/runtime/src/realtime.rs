//! The real-time driver: runs an emulation (a [`Simulator`], a whole [`Subnet`]) against the wall
//! clock and moves packets between it and files of the operating system (TUN devices, UDP
//! sockets, control sockets), one thread, no busy waiting unless asked for (below). (An endpoint may hand its output to
//! a thread of its own, as [`crate::tun::TunEndpoint::with_writer_thread`] does; the emulation
//! is only ever touched by the driver's thread.)
//!
//! Virtual time is wall time: the driver's [`Clock`] maps `std::time::Instant` onto the
//! emulation's [`Instant`] (virtual time at the driver's start plus the wall time elapsed since).
//! One [`Driver::turn`]:
//!
//! 1. the emulation runs up to the present when it stands behind it (after a sleep), and every
//!    [`Endpoint`] whose file was readable hands at most [`Config::batch`] inputs to the
//!    emulation at its current virtual time ([`Endpoint::on_readable`]), the present or the
//!    slack ahead of it; an endpoint that filled
//!    its batch is served again next turn before anything sleeps, so one busy file cannot starve
//!    the others or the emulation;
//! 2. the emulation runs up to the present plus [`Config::slack`] ([`Emulation::run_until`]): the
//!    chain of sub-microsecond events a packet causes (link, switch, link, host) completes in one
//!    turn instead of needing sleeps shorter than the operating system can give;
//! 3. every endpoint takes what the emulation produced for it ([`Endpoint::flush`]), the
//!    answering endpoints ([`Driver::add_answering`]: a TUN device, whose kernel may answer a
//!    packet inside the write) first: when they wrote something, the driver looks once more,
//!    without blocking, whether they became readable, reads them, runs the emulation again, and
//!    only then flushes the others, so that the answer leaves with the rest of the turn's output
//!    instead of in a turn of its own after it;
//! 4. the thread sleeps in epoll(7) (through mio) on every endpoint's file and the stop file
//!    until one is readable or the emulation's next event is due (less the slack), at most
//!    [`Config::max_sleep`]. With nothing due and nothing arriving it sleeps the whole
//!    `max_sleep`: an idle driver costs a wake-up a second. epoll counts its timeout in whole
//!    milliseconds, so sleeps shorter than [`FINE_SLEEP`] are timed by a timerfd(2) in the same
//!    epoll set, to the nanosecond (the RC engine and the connected-mode pipeline have events a
//!    few hundred microseconds apart; rounding each of those waits up to a millisecond cost
//!    connected mode most of its throughput).
//!
//! The files are watched edge-triggered: an endpoint reads until its file would block (or its
//! batch is full, and then it is served again next turn), so no readiness is lost.
//!
//! An emulation that falls behind the wall clock (more work than one core does in real time)
//! does not try to catch up event by event: it runs what was due and virtual time jumps to the
//! present; packets are then late, never lost by the driver.
//!
//! **Busy polling** ([`Config::busy_poll`], off by default): for a bounded window after the last
//! turn that moved something, the driver polls its files without blocking, yielding the CPU
//! between polls (`sched_yield(2)`), instead of sleeping in epoll; once the window has passed
//! without input it sleeps as above. A process that sleeps pays the wake-up when the next packet
//! comes: on a virtual machine an idle virtual CPU halts and waking it costs a trip through the
//! hypervisor (docs/DEPLOYED.md "Wake-ups on a virtual machine"), paid by each process a round
//! trip crosses. Polling is only ever entered after traffic, so an idle driver still sleeps.
//!
//! The stop file ([`Driver::set_stop`]) is typically the read end of a socket pair that a signal
//! handler writes to (`signal_hook::low_level::pipe`): epoll wakes at once and
//! [`Driver::turn`] reports [`Wake::Stop`], with no race between checking a flag and sleeping.
//!
//! Invariants: the emulation sees only virtual time (it never reads the clock); inputs enter at
//! the emulation's current time, which never goes back and is, when a turn starts reading, at
//! least the wall clock's present of that moment; no allocation per turn (but while
//! [`Driver::set_trace`] prints each turn's timings).

use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::{Instant, Simulator};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant as Wall};

/// The block [`keep_freed_heap`] allocates and frees: above glibc's initial mmap threshold
/// (128 KiB), at most its dynamic ceiling (32 MiB on 64-bit).
const HEAP_KEEP: usize = 16 << 20;

/// Lets the C allocator keep freed memory for reuse rather than give it back to the kernel at
/// once. In glibc, freeing a block that was mmapped raises the mmap threshold to its size and the
/// heap's trim threshold to twice that (docs/DEPLOYED.md "glibc malloc"); so after this one
/// allocation, freeing a few megabytes of 64 KiB packet buffers (connected mode) no longer shrinks
/// the heap only for the next buffers to fault their pages in again: a fifth of the CPU per
/// connected-mode packet of `examples/datapath.rs` (the lab's emulation thread in process), and
/// five times fewer page faults in the lab under iperf3 (docs/benchmarks/ip.md). It costs one
/// mmap(2) and one munmap(2).
/// [`Driver::new`] calls it.
pub fn keep_freed_heap() {
    drop(std::hint::black_box(Vec::<u8>::with_capacity(HEAP_KEEP)));
}

/// Something with virtual time that the driver runs: a [`Simulator`], or a [`Subnet`] (its
/// simulator).
pub trait Emulation {
    /// The current virtual time.
    fn now(&self) -> Instant;
    /// When the next event is due, if any.
    fn next_event_at(&self) -> Option<Instant>;
    /// Runs every event up to and including `t`, then sets the clock to `t`.
    fn run_until(&mut self, t: Instant);
}

impl Emulation for Simulator {
    fn now(&self) -> Instant {
        Simulator::now(self)
    }
    fn next_event_at(&self) -> Option<Instant> {
        Simulator::next_event_at(self)
    }
    fn run_until(&mut self, t: Instant) {
        Simulator::run_until(self, t);
    }
}

impl Emulation for Subnet {
    fn now(&self) -> Instant {
        self.sim().now()
    }
    fn next_event_at(&self) -> Option<Instant> {
        self.sim().next_event_at()
    }
    fn run_until(&mut self, t: Instant) {
        self.sim_mut().run_until(t);
    }
}

/// A file of the operating system the driver moves packets through for one part of the
/// emulation: a TUN device for one host ([`crate::tun::TunEndpoint`]), a UDP socket, a control
/// socket.
pub trait Endpoint<E> {
    /// The file to wait on for input (watched for readability, edge-triggered). It must stay
    /// open as long as the endpoint lives and be non-blocking.
    fn raw_fd(&self) -> RawFd;
    /// The file is readable (or in error): read at most `budget` inputs without blocking (or,
    /// when one read gives several, stop reading once `budget` are reached) and hand them to
    /// `emu` at its current time. Returns how many were read; fewer than `budget` only
    /// once a read would block (the file is drained: the driver waits for the next edge). An error ends the driver's turn with that error (a device that went
    /// away); a packet the endpoint cannot use is dropped and counted by the endpoint, not an
    /// error.
    fn on_readable(&mut self, emu: &mut E, budget: usize) -> io::Result<usize>;
    /// Writes what `emu` produced for this endpoint to the file; returns how many outputs.
    fn flush(&mut self, emu: &mut E) -> io::Result<usize>;
}

/// Tunables of the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// How far past the present each turn runs the emulation (module docs, step 2).
    pub slack: Duration,
    /// Inputs one endpoint hands over per turn at most (for the fabric's interfaces at most
    /// their adapter's queue, `ipoib_fabric::node::ipoib::FROM_OS_LIMIT`: module
    /// [`crate::ipoib_port`]), passed only by the inputs of one last read that gives several
    /// (a TUN device's super-packet, [`crate::tun::TunEndpoint`]).
    pub batch: usize,
    /// The longest sleep (the driver also wakes for the caller's deadline).
    pub max_sleep: Duration,
    /// Bounded busy polling (module docs, "Busy polling"): for this long after the last turn
    /// that moved something, the driver polls its files without blocking, yielding the CPU
    /// between polls, before it sleeps. Zero (the default): never.
    pub busy_poll: Duration,
}

impl Default for Config {
    /// 200 µs of slack, batches of 64, one wake-up a second when idle, no busy polling.
    fn default() -> Config {
        Config {
            slack: Duration::from_micros(200),
            batch: 64,
            max_sleep: Duration::from_secs(1),
            busy_poll: Duration::ZERO,
        }
    }
}

/// Maps wall time onto virtual time: virtual `origin` at wall `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    start: Wall,
    origin: Instant,
}

impl Clock {
    /// Virtual `origin` is wall `start`.
    pub fn new(start: Wall, origin: Instant) -> Clock {
        Clock { start, origin }
    }

    /// Virtual time at wall time `w` (the origin for a `w` before the start).
    pub fn virtual_at(&self, w: Wall) -> Instant {
        self.origin + w.saturating_duration_since(self.start)
    }

    /// Wall time at virtual time `t` (the start for a `t` before the origin).
    pub fn wall_at(&self, t: Instant) -> Wall {
        let d = t.saturating_duration_since(self.origin);
        self.start
            .checked_add(d)
            .unwrap_or(self.start + Duration::from_secs(86_400 * 365))
    }
}

/// Why [`Driver::turn`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// Some file became readable, or an event came due, or the sleep was interrupted.
    Ready,
    /// The caller's deadline passed.
    Deadline,
    /// The stop file became readable ([`Driver::set_stop`]).
    Stop,
}

/// Counts of the driver's work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Turns taken.
    pub turns: u64,
    /// Turns that slept with a non-zero timeout.
    pub sleeps: u64,
    /// Turns that found input by busy polling instead of sleeping ([`Config::busy_poll`]).
    pub polled: u64,
    /// Inputs handed to the emulation.
    pub inputs: u64,
    /// Outputs taken from it.
    pub outputs: u64,
}

/// The driver. See the module docs.
pub struct Driver<E> {
    emu: E,
    endpoints: Vec<Box<dyn Endpoint<E>>>,
    /// Per endpoint: readable at the last poll, or its last batch was full.
    ready: Vec<bool>,
    poll: Poll,
    events: Events,
    /// Times sleeps shorter than [`FINE_SLEEP`] (module docs).
    timer: TimerFd,
    stop: Option<OwnedFd>,
    stopped: bool,
    clock: Clock,
    cfg: Config,
    stats: Stats,
    /// Print each turn's timings ([`Driver::set_trace`]).
    trace: bool,
    /// When the last turn that moved something ended ([`Config::busy_poll`]).
    last_active: Option<Wall>,
    /// Per endpoint: added by [`Driver::add_answering`].
    answering: Vec<bool>,
}

impl<E> std::fmt::Debug for Driver<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("endpoints", &self.endpoints.len())
            .field("cfg", &self.cfg)
            .field("stats", &self.stats)
            .finish()
    }
}

impl<E: Emulation> Driver<E> {
    /// A driver for `emu` whose virtual time now is the present (fails only when epoll or the
    /// timerfd cannot be created).
    pub fn new(emu: E, cfg: Config) -> io::Result<Driver<E>> {
        keep_freed_heap();
        let clock = Clock::new(Wall::now(), emu.now());
        let poll = Poll::new()?;
        let flags = TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC;
        let timer = TimerFd::new(ClockId::CLOCK_MONOTONIC, flags).map_err(io::Error::from)?;
        let raw = timer.as_fd().as_raw_fd();
        poll.registry()
            .register(&mut SourceFd(&raw), TIMER, Interest::READABLE)?;
        Ok(Driver {
            emu,
            endpoints: Vec::new(),
            ready: Vec::new(),
            poll,
            events: Events::with_capacity(256),
            timer,
            stop: None,
            stopped: false,
            clock,
            cfg,
            stats: Stats::default(),
            trace: false,
            last_active: None,
            answering: Vec::new(),
        })
    }

    /// Adds an endpoint; returns its index. Its file is considered readable at first, so input
    /// that arrived before is not left waiting for an edge that already passed.
    pub fn add(&mut self, ep: Box<dyn Endpoint<E>>) -> io::Result<usize> {
        let i = self.endpoints.len();
        let fd = ep.raw_fd();
        self.poll
            .registry()
            .register(&mut SourceFd(&fd), Token(i), Interest::READABLE)?;
        self.endpoints.push(ep);
        self.ready.push(true);
        self.answering.push(false);
        Ok(i)
    }

    /// Adds an endpoint whose writes the operating system may answer within the write: a TUN
    /// device, into which Linux's stack takes a written packet inside write(2) and queues what
    /// it answers (an ICMP echo reply, an ARP reply) before the call returns (docs/UDP-FABRIC.md,
    /// "Wake-ups of a round trip"). It is flushed before the other endpoints, and when it wrote
    /// something the driver reads its answer, runs the emulation and only then flushes the
    /// others (module docs, step 3): the answer leaves in the same turn, together with what the
    /// turn had for them (an RC acknowledgement), rather than in a turn of its own after them.
    pub fn add_answering(&mut self, ep: Box<dyn Endpoint<E>>) -> io::Result<usize> {
        let i = self.add(ep)?;
        self.answering[i] = true;
        Ok(i)
    }

    /// The file whose readability stops the driver (module docs); once it was readable every
    /// later turn reports [`Wake::Stop`] too.
    pub fn set_stop(&mut self, fd: OwnedFd) -> io::Result<()> {
        let raw = fd.as_raw_fd();
        self.poll
            .registry()
            .register(&mut SourceFd(&raw), STOP, Interest::READABLE)?;
        self.stop = Some(fd);
        Ok(())
    }

    /// The emulation.
    pub fn emulation(&self) -> &E {
        &self.emu
    }

    /// The emulation, mutably (between turns; inputs given here enter at its current time).
    pub fn emulation_mut(&mut self) -> &mut E {
        &mut self.emu
    }

    /// The clock mapping wall onto virtual time.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Prints, on standard error, one line for every turn that moved something (or whose run of
    /// the emulation took 500 µs or more): the inputs and outputs, the wall time of reading the
    /// files (and the thread's CPU time of it), of running the emulation, of each endpoint's
    /// flush (the answering endpoints' first, [`Driver::add_answering`]; after `answers N us`,
    /// the time of looking for and reading their answers and running again, every endpoint's
    /// again), the sleep allowed before the turn, how long the thread was away in it (the sleep
    /// and its wake-up), and the wall-clock time at the turn's end (to line it up with
    /// `ping -D`). A diagnostic of where a packet's time goes (docs/benchmarks/udp.md,
    /// docs/benchmarks/lab-connected.md), off by default.
    pub fn set_trace(&mut self, on: bool) {
        self.trace = on;
    }

    /// Sets [`Config::busy_poll`] (zero: off).
    pub fn set_busy_poll(&mut self, window: Duration) {
        self.cfg.busy_poll = window;
    }

    /// Counts of the work done.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Ends the driver, giving the emulation back (the endpoints are dropped).
    pub fn into_emulation(self) -> E {
        self.emu
    }

    /// One turn (module docs), sleeping at most until `deadline`: the sleep comes first (none
    /// while an endpoint has input left or an event is due), then the work, so that the caller
    /// sees the effect of what woke the driver when `turn` returns.
    pub fn turn(&mut self, deadline: Wall) -> io::Result<Wake> {
        self.stats.turns += 1;
        let now = Wall::now();
        let busy = self.ready.iter().any(|&r| r);
        let mut wake = deadline.min(now + self.cfg.max_sleep);
        if let Some(t) = self.emu.next_event_at() {
            let due = self.clock.wall_at(t);
            wake = wake.min(due.checked_sub(self.cfg.slack).unwrap_or(due));
        }
        let mut timeout = if busy || self.stopped {
            Duration::ZERO
        } else {
            wake.saturating_duration_since(now)
        };
        if !timeout.is_zero() {
            if let Some(until) = self.spin_until(wake) {
                if self.busy_poll(until)? {
                    self.stats.polled += 1;
                    timeout = Duration::ZERO;
                } else {
                    timeout = wake.saturating_duration_since(Wall::now());
                }
            }
        }
        if !timeout.is_zero() {
            self.stats.sleeps += 1;
        }
        let slept_from = Wall::now();
        self.wait(timeout)?;
        let mut trace = self
            .trace
            .then(|| TurnTrace::start(self.stats, timeout, slept_from.elapsed()));

        // Inputs enter at the present. After a sleep (or a turn longer than the slack) the
        // emulation's clock stands where the last turn left it (that turn's present plus the
        // slack), up to `max_sleep` behind: an input handed over then would be stamped that much
        // early (its packets in a capture, the timers it starts, an RC ACK timeout already
        // past). What came due meanwhile runs first, as it happened first. While turns follow one
        // another the clock is ahead already (the slack), and this costs a comparison. (A traced
        // turn counts this run in its reading time.)
        let present = self.clock.virtual_at(Wall::now());
        if present > self.emu.now() {
            self.emu.run_until(present);
        }
        let batch = self.cfg.batch.max(1);
        let moved = self.stats.inputs + self.stats.outputs;
        for (i, ep) in self.endpoints.iter_mut().enumerate() {
            if !self.ready[i] {
                continue;
            }
            let n = ep.on_readable(&mut self.emu, batch)?;
            self.stats.inputs += n as u64;
            self.ready[i] = n >= batch;
        }
        if let Some(t) = &mut trace {
            t.read_done();
        }
        let target = self.clock.virtual_at(Wall::now()) + self.cfg.slack;
        let target = target.max(self.emu.now());
        self.emu.run_until(target);
        if let Some(t) = &mut trace {
            t.run_done();
        }
        // Answering endpoints first (`Driver::add_answering`).
        let mut wrote = false;
        for i in (0..self.endpoints.len()).filter(|&i| self.answering[i]) {
            let n = self.endpoints[i].flush(&mut self.emu)?;
            self.stats.outputs += n as u64;
            wrote |= n > 0;
            if let Some(t) = &mut trace {
                t.flushed();
            }
        }
        let answered = wrote && self.read_answers(batch)?;
        if let Some(t) = trace.as_mut().filter(|_| wrote) {
            t.answers_done();
        }
        for i in 0..self.endpoints.len() {
            if self.answering[i] && !answered {
                continue;
            }
            self.stats.outputs += self.endpoints[i].flush(&mut self.emu)? as u64;
            if let Some(t) = &mut trace {
                t.flushed();
            }
        }
        if self.stats.inputs + self.stats.outputs > moved {
            self.last_active = Some(Wall::now());
        }
        if let Some(t) = trace {
            t.print(self.stats);
        }
        Ok(if self.stopped {
            Wake::Stop
        } else if Wall::now() >= deadline {
            Wake::Deadline
        } else {
            Wake::Ready
        })
    }

    /// Turns until `done(emulation)` holds (checked before each turn and after it), the stop
    /// file is readable or `deadline` passes.
    pub fn run(
        &mut self,
        deadline: Option<Wall>,
        mut done: impl FnMut(&E) -> bool,
    ) -> io::Result<Outcome> {
        let far = Wall::now() + Duration::from_secs(86_400 * 365);
        let deadline = deadline.unwrap_or(far);
        loop {
            if done(&self.emu) {
                return Ok(Outcome::Done);
            }
            match self.turn(deadline)? {
                Wake::Stop => return Ok(Outcome::Stopped),
                Wake::Deadline if !done(&self.emu) => return Ok(Outcome::Deadline),
                _ => {}
            }
        }
    }

    /// After the answering endpoints wrote: polls the files without blocking, reads the
    /// answering endpoints that became readable and runs the emulation to the present plus the
    /// slack again. True when something was read. (What became readable besides stays marked
    /// ready for the next turn, which then does not sleep.)
    fn read_answers(&mut self, batch: usize) -> io::Result<bool> {
        self.wait(Duration::ZERO)?;
        let mut read = 0;
        for i in 0..self.endpoints.len() {
            if !self.answering[i] || !self.ready[i] {
                continue;
            }
            let n = self.endpoints[i].on_readable(&mut self.emu, batch)?;
            self.stats.inputs += n as u64;
            self.ready[i] = n >= batch;
            read += n;
        }
        if read == 0 {
            return Ok(false);
        }
        let target = self.clock.virtual_at(Wall::now()) + self.cfg.slack;
        let target = target.max(self.emu.now());
        self.emu.run_until(target);
        Ok(true)
    }

    /// Until when the coming sleep is to be replaced by busy polling ([`Config::busy_poll`]):
    /// the end of the window after the last turn that moved something, at most `wake`; `None`
    /// when polling is off or the window has passed.
    fn spin_until(&self, wake: Wall) -> Option<Wall> {
        if self.cfg.busy_poll.is_zero() {
            return None;
        }
        let until = (self.last_active? + self.cfg.busy_poll).min(wake);
        (Wall::now() < until).then_some(until)
    }

    /// Polls the files without blocking, yielding the CPU between polls, until one is readable
    /// (true) or `until` passes (false).
    fn busy_poll(&mut self, until: Wall) -> io::Result<bool> {
        loop {
            self.wait(Duration::ZERO)?;
            if self.stopped || self.ready.iter().any(|&r| r) {
                return Ok(true);
            }
            if Wall::now() >= until {
                return Ok(false);
            }
            std::thread::yield_now();
        }
    }

    /// Waits at most `timeout` for the endpoints' files and the stop file; marks what became
    /// readable.
    fn wait(&mut self, timeout: Duration) -> io::Result<()> {
        let mut epoll_timeout = timeout;
        if !timeout.is_zero() && timeout < FINE_SLEEP {
            // A re-armed timerfd restarts its count, so each expiry is a new edge.
            let when = Expiration::OneShot(TimeSpec::from_duration(timeout));
            self.timer
                .set(when, TimerSetTimeFlags::empty())
                .map_err(io::Error::from)?;
            epoll_timeout = FINE_SLEEP * 2;
        }
        match self.poll.poll(&mut self.events, Some(epoll_timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(e),
        }
        for ev in &self.events {
            match ev.token() {
                STOP => self.stopped = true,
                TIMER => {}
                Token(i) => {
                    if let Some(r) = self.ready.get_mut(i) {
                        *r = true;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The timings of one turn ([`Driver::set_trace`]).
struct TurnTrace {
    before: Stats,
    /// The sleep allowed, and how long the thread was away (the wait, its wake-up included).
    slept: Duration,
    away: Duration,
    start: Wall,
    cpu_start: Duration,
    read: Duration,
    read_cpu: Duration,
    run: Duration,
    flushes: Vec<Duration>,
    /// The look for the answering endpoints' answers, their read and the run after it.
    answers: Option<Duration>,
    mark: Wall,
}

/// The calling thread's CPU time (zero where the clock is missing).
fn thread_cpu() -> Duration {
    use nix::time::{clock_gettime, ClockId};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).map_or(Duration::ZERO, Duration::from)
}

impl TurnTrace {
    fn start(before: Stats, slept: Duration, away: Duration) -> TurnTrace {
        let now = Wall::now();
        TurnTrace {
            before,
            slept,
            away,
            start: now,
            cpu_start: thread_cpu(),
            read: Duration::ZERO,
            read_cpu: Duration::ZERO,
            run: Duration::ZERO,
            flushes: Vec::new(),
            answers: None,
            mark: now,
        }
    }

    fn read_done(&mut self) {
        self.mark = Wall::now();
        self.read = self.mark - self.start;
        self.read_cpu = thread_cpu().saturating_sub(self.cpu_start);
    }

    fn run_done(&mut self) {
        let now = Wall::now();
        self.run = now - self.mark;
        self.mark = now;
    }

    fn flushed(&mut self) {
        let now = Wall::now();
        self.flushes.push(now - self.mark);
        self.mark = now;
    }

    fn answers_done(&mut self) {
        let now = Wall::now();
        self.answers = Some(now - self.mark);
        self.mark = now;
    }

    /// Writes the turn's line to standard error (a closed one is no reason to stop the driver).
    fn print(self, after: Stats) {
        let _ = self.write_line(after, &mut io::stderr());
    }

    /// Writes the turn's line to `out` if it moved something; returns whether it did.
    fn write_line(&self, after: Stats, out: &mut impl Write) -> io::Result<bool> {
        let (inputs, outputs) = (
            after.inputs - self.before.inputs,
            after.outputs - self.before.outputs,
        );
        if inputs == 0 && outputs == 0 && self.run < SLOW_RUN {
            return Ok(false);
        }
        let us = |d: Duration| d.as_micros();
        let flushes: Vec<u128> = self.flushes.iter().map(|&d| us(d)).collect();
        let answers = self
            .answers
            .map(|d| format!(" answers {} us", us(d)))
            .unwrap_or_default();
        // Wall-clock time, to line the turn up with other programs' timestamps (`ping -D`).
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        writeln!(
            out,
            "turn: in {inputs} out {outputs} read {} us (cpu {} us) run {} us flush {flushes:?} \
             us{answers}, allowed to sleep {} us, away {} us, at {}.{:06}",
            us(self.read),
            us(self.read_cpu),
            us(self.run),
            us(self.slept),
            us(self.away),
            at.as_secs(),
            at.subsec_micros()
        )?;
        Ok(true)
    }
}

/// A turn that moved nothing is traced when running the emulation took this long
/// ([`Driver::set_trace`]): a periodic task that holds the thread.
const SLOW_RUN: Duration = Duration::from_micros(500);

/// The stop file's token (endpoints have their index).
const STOP: Token = Token(usize::MAX);
/// The timerfd's token.
const TIMER: Token = Token(usize::MAX - 1);

/// Sleeps shorter than this are timed by the timerfd (module docs).
pub const FINE_SLEEP: Duration = Duration::from_millis(2);

/// How [`Driver::run`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The condition held.
    Done,
    /// The stop file became readable.
    Stopped,
    /// The deadline passed first.
    Deadline,
}

pub mod control;
pub mod priority;

#[cfg(test)]
mod tests;
