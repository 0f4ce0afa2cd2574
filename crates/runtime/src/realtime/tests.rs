use super::*;
use std::collections::BTreeMap;
use std::os::unix::net::UnixDatagram;

/// An emulation that echoes every input `DELAY` of virtual time after it arrived.
#[derive(Default)]
struct Echo {
    now: Instant,
    pending: BTreeMap<Instant, Vec<Vec<u8>>>,
    out: Vec<Vec<u8>>,
    /// (virtual time in, virtual time out) of every echo.
    log: Vec<(Instant, Instant)>,
    arrivals: Vec<Instant>,
}

const DELAY: Duration = Duration::from_millis(5);

impl Emulation for Echo {
    fn now(&self) -> Instant {
        self.now
    }
    fn next_event_at(&self) -> Option<Instant> {
        self.pending.keys().next().copied()
    }
    fn run_until(&mut self, t: Instant) {
        while let Some((&at, _)) = self.pending.iter().next() {
            if at > t {
                break;
            }
            self.now = self.now.max(at);
            for p in self.pending.remove(&at).unwrap_or_default() {
                let came = self.arrivals.remove(0);
                self.log.push((came, at));
                self.out.push(p);
            }
        }
        self.now = self.now.max(t);
    }
}

struct Sock(UnixDatagram);

impl Endpoint<Echo> for Sock {
    fn raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
    fn on_readable(&mut self, emu: &mut Echo, budget: usize) -> io::Result<usize> {
        let mut buf = [0u8; 64];
        for n in 0..budget {
            match self.0.recv(&mut buf) {
                Ok(len) => {
                    let at = emu.now + DELAY;
                    emu.pending.entry(at).or_default().push(buf[..len].to_vec());
                    emu.arrivals.push(emu.now);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(n),
                Err(e) => return Err(e),
            }
        }
        Ok(budget)
    }
    fn flush(&mut self, emu: &mut Echo) -> io::Result<usize> {
        let n = emu.out.len();
        for p in emu.out.drain(..) {
            self.0.send(&p)?;
        }
        Ok(n)
    }
}

fn pair() -> (UnixDatagram, UnixDatagram) {
    let (a, b) = UnixDatagram::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    b.set_nonblocking(true).unwrap();
    (a, b)
}

// An input enters at the emulation's current time and its output leaves only once virtual time
// reached the event (never early), and the driver sleeps rather than spins while it waits.
#[test]
fn events_run_at_their_virtual_time_and_idle_turns_sleep() {
    let (ours, theirs) = pair();
    let mut d = Driver::new(Echo::default(), Config::default()).unwrap();
    d.add(Box::new(Sock(ours))).unwrap();
    for i in 0..3u8 {
        theirs.send(&[i]).unwrap();
    }
    let deadline = Wall::now() + Duration::from_secs(10);
    let r = d.run(Some(deadline), |e| e.log.len() == 3).unwrap();
    assert_eq!(r, Outcome::Done);
    // The outputs were flushed on the turn that ran the event.
    let mut got = Vec::new();
    let mut buf = [0u8; 8];
    while let Ok(n) = theirs.recv(&mut buf) {
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, vec![0, 1, 2]);
    for &(came, left) in &d.emulation().log {
        assert_eq!(left, came + DELAY);
    }
    // 5 ms of waiting in a few sleeps, not thousands of spins.
    assert!(d.stats().turns < 50, "{:?}", d.stats());
    assert!(d.stats().sleeps >= 1);
}

// An input that comes after the driver slept enters at the present, not where the last turn
// left the emulation's clock (it was stamped up to `max_sleep` early).
#[test]
fn an_input_after_a_sleep_enters_at_the_present() {
    let (ours, theirs) = pair();
    let mut d = Driver::new(Echo::default(), Config::default()).unwrap();
    d.add(Box::new(Sock(ours))).unwrap();
    let clock = d.clock();
    let deadline = Wall::now() + Duration::from_secs(10);
    // An idle turn, then a pause with nothing due: the emulation's clock stays behind.
    d.turn(Wall::now()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let sent = Wall::now();
    theirs.send(&[7]).unwrap();
    let r = d.run(Some(deadline), |e| e.log.len() == 1).unwrap();
    assert_eq!(r, Outcome::Done);
    let came = d.emulation().log[0].0;
    assert!(
        came >= clock.virtual_at(sent),
        "entered at {came:?}, sent at {:?}",
        clock.virtual_at(sent)
    );
}

// A full batch leaves the endpoint marked ready, so the rest is read next turn without waiting
// for a new edge; every input arrives.
#[test]
fn bounded_batches_read_everything() {
    let (ours, theirs) = pair();
    let cfg = Config {
        batch: 4,
        ..Config::default()
    };
    let mut d = Driver::new(Echo::default(), cfg).unwrap();
    d.add(Box::new(Sock(ours))).unwrap();
    for i in 0..10u8 {
        theirs.send(&[i]).unwrap();
    }
    let deadline = Wall::now() + Duration::from_secs(10);
    d.turn(deadline).unwrap();
    assert_eq!(d.stats().inputs, 4);
    assert_eq!(d.stats().sleeps, 0);
    d.turn(deadline).unwrap();
    d.turn(deadline).unwrap();
    assert_eq!(d.stats().inputs, 10);
}

// A traced driver moves the same inputs; a turn's trace line counts what the turn moved, one
// flush time per endpoint, and a turn that moved nothing has no line.
#[test]
fn trace_lines_count_what_a_turn_moved() {
    let (ours, theirs) = pair();
    let mut d = Driver::new(Echo::default(), Config::default()).unwrap();
    d.add(Box::new(Sock(ours))).unwrap();
    d.set_trace(true);
    theirs.send(&[7]).unwrap();
    d.turn(Wall::now() + Duration::from_secs(10)).unwrap();
    assert_eq!(d.stats().inputs, 1);

    let before = Stats::default();
    let mut t = TurnTrace::start(before, Duration::from_micros(250), Duration::ZERO);
    t.read_done();
    t.run_done();
    t.flushed();
    t.flushed();
    let mut out = Vec::new();
    assert!(!t.write_line(before, &mut out).unwrap());
    assert!(out.is_empty());
    let after = Stats {
        inputs: 3,
        outputs: 2,
        ..before
    };
    assert!(t.write_line(after, &mut out).unwrap());
    let line = String::from_utf8(out).unwrap();
    assert!(line.starts_with("turn: in 3 out 2 read "), "{line}");
    assert!(line.contains("allowed to sleep 250 us"), "{line}");
    let flush = line
        .split("flush [")
        .nth(1)
        .unwrap()
        .split(']')
        .next()
        .unwrap();
    assert_eq!(flush.split(", ").count(), 2, "{line}");
    assert!(line.contains("away 0 us, at "), "{line}");

    // A turn that moved nothing is printed when its run took long (a periodic task).
    let mut slow = TurnTrace::start(before, Duration::ZERO, Duration::from_micros(70));
    slow.read_done();
    slow.run = SLOW_RUN;
    let mut out = Vec::new();
    assert!(slow.write_line(before, &mut out).unwrap());
    let line = String::from_utf8(out).unwrap();
    assert!(line.starts_with("turn: in 0 out 0 "), "{line}");
    assert!(line.contains(" run 500 us "), "{line}");
    assert!(line.contains("away 70 us"), "{line}");
}

// The stop file wakes the sleeping driver at once.
#[test]
fn the_stop_file_ends_the_run() {
    let (ours, _theirs) = pair();
    let (stop_r, stop_w) = pair();
    let mut d = Driver::new(Echo::default(), Config::default()).unwrap();
    d.add(Box::new(Sock(ours))).unwrap();
    d.set_stop(OwnedFd::from(stop_r)).unwrap();
    stop_w.send(&[1]).unwrap();
    let r = d
        .run(Some(Wall::now() + Duration::from_secs(30)), |_| false)
        .unwrap();
    assert_eq!(r, Outcome::Stopped);
}

#[test]
fn clock_maps_wall_onto_virtual_time() {
    let start = Wall::now();
    let c = Clock::new(start, Instant::from_nanos(1_000));
    assert_eq!(c.virtual_at(start), Instant::from_nanos(1_000));
    assert_eq!(
        c.virtual_at(start + Duration::from_millis(2)),
        Instant::from_nanos(2_001_000)
    );
    assert_eq!(
        c.wall_at(Instant::from_nanos(2_001_000)),
        start + Duration::from_millis(2)
    );
    assert_eq!(c.wall_at(Instant::ZERO), start);
}

// The control socket served as an endpoint: a client's request is answered from the emulation's
// state while the driver turns (the server's epoll descriptor inside the driver's, edge-triggered).
#[test]
fn control_socket_is_answered_between_turns() {
    use crate::control::{query, ControlServer, Request, View};
    use crate::show::{Answer, CounterSection};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("control.sock");
    let server = ControlServer::bind(&path).unwrap();
    let mut d = Driver::new(Echo::default(), Config::default()).unwrap();
    let answer: control::AnswerFn<Echo> = Box::new(|e: &Echo, _req: &Request| {
        let mut s = CounterSection::new("echo");
        s.push("echoed", e.log.len() as u64);
        Ok(Answer {
            hosts: Vec::new(),
            sections: vec![s],
        })
    });
    d.add(Box::new(control::ControlEndpoint::new(server, answer)))
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = std::sync::Arc::clone(&stop);
    let client = std::thread::spawn(move || {
        let r = query(
            &path,
            &Request::new(View::Counters),
            Duration::from_secs(10),
        );
        stop2.store(true, std::sync::atomic::Ordering::SeqCst);
        r
    });
    let end = Wall::now() + Duration::from_secs(10);
    while !stop.load(std::sync::atomic::Ordering::SeqCst) && Wall::now() < end {
        d.turn(Wall::now() + Duration::from_millis(50)).unwrap();
    }
    let text = client.join().unwrap().expect("an answer");
    assert!(text.contains("echoed"), "{text}");
    assert!(text.contains("control"), "the server's own section: {text}");
}

// Busy polling (`Config::busy_poll`): a driver that never moved anything sleeps; after a turn
// that moved something, input that comes within the window is found by polling, without a
// sleep; once the window has passed without input the driver sleeps again.
#[test]
fn busy_polling_follows_traffic_and_ends() {
    let (ours, theirs) = pair();
    let cfg = Config {
        busy_poll: Duration::from_secs(5),
        ..Config::default()
    };
    let mut d = Driver::new(Echo::default(), cfg).unwrap();
    d.add(Box::new(Sock(ours))).unwrap();
    // The first turn reads the endpoint at once (nothing there); the second has had no traffic
    // yet: it sleeps to its deadline, no polling.
    d.turn(Wall::now() + Duration::from_millis(10)).unwrap();
    d.turn(Wall::now() + Duration::from_millis(10)).unwrap();
    assert_eq!((d.stats().sleeps, d.stats().polled), (1, 0));

    // Traffic: an input; once it is read, another comes 20 ms later from another thread while
    // the driver waits (and runs the first one's echo, 5 ms after it came).
    theirs.send(&[1]).unwrap();
    let deadline = Wall::now() + Duration::from_secs(10);
    d.run(Some(deadline), |e| e.arrivals.len() == 1).unwrap();
    let before = d.stats();
    let sender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        theirs.send(&[2]).unwrap();
        theirs
    });
    d.run(Some(deadline), |e| e.arrivals.len() + e.log.len() == 2)
        .unwrap();
    let theirs = sender.join().unwrap();
    assert_eq!(d.stats().sleeps, before.sleeps, "{:?}", d.stats());
    assert_eq!(d.stats().polled, before.polled + 1, "{:?}", d.stats());

    // A short window: it passes without input, and the driver sleeps for the rest of the wait.
    d.set_busy_poll(Duration::from_millis(5));
    d.run(Some(deadline), |e| e.log.len() == 2).unwrap();
    let before = d.stats();
    d.turn(Wall::now() + Duration::from_millis(50)).unwrap();
    assert_eq!(d.stats().sleeps, before.sleeps + 1, "{:?}", d.stats());
    assert_eq!(d.stats().polled, before.polled, "{:?}", d.stats());
    drop(theirs);
}

/// Two queues: what the network endpoint read goes to the OS, what the OS endpoint read goes to
/// the network, each with an acknowledgement to the network first (as an RC responder's).
#[derive(Default)]
struct Crossing {
    now: Instant,
    from_net: Vec<Vec<u8>>,
    from_os: Vec<Vec<u8>>,
    to_os: Vec<Vec<u8>>,
    to_net: Vec<Vec<u8>>,
}

impl Emulation for Crossing {
    fn now(&self) -> Instant {
        self.now
    }
    fn next_event_at(&self) -> Option<Instant> {
        None
    }
    fn run_until(&mut self, t: Instant) {
        for p in self.from_net.drain(..) {
            self.to_net.push(b"ack".to_vec());
            self.to_os.push(p);
        }
        self.to_net.append(&mut self.from_os);
        self.now = self.now.max(t);
    }
}

/// The network side: a datagram socket.
struct Net(UnixDatagram);

impl Endpoint<Crossing> for Net {
    fn raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
    fn on_readable(&mut self, emu: &mut Crossing, budget: usize) -> io::Result<usize> {
        let mut buf = [0u8; 64];
        for n in 0..budget {
            match self.0.recv(&mut buf) {
                Ok(len) => emu.from_net.push(buf[..len].to_vec()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(n),
                Err(e) => return Err(e),
            }
        }
        Ok(budget)
    }
    fn flush(&mut self, emu: &mut Crossing) -> io::Result<usize> {
        let n = emu.to_net.len();
        for p in emu.to_net.drain(..) {
            self.0.send(&p)?;
        }
        Ok(n)
    }
}

/// The OS side, a stand-in for a TUN device whose kernel answers inside the write: the
/// "kernel" end answers each packet written before `flush` returns.
struct Os {
    ours: UnixDatagram,
    kernel: UnixDatagram,
}

impl Endpoint<Crossing> for Os {
    fn raw_fd(&self) -> RawFd {
        self.ours.as_raw_fd()
    }
    fn on_readable(&mut self, emu: &mut Crossing, budget: usize) -> io::Result<usize> {
        let mut buf = [0u8; 64];
        for n in 0..budget {
            match self.ours.recv(&mut buf) {
                Ok(len) => emu.from_os.push(buf[..len].to_vec()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(n),
                Err(e) => return Err(e),
            }
        }
        Ok(budget)
    }
    fn flush(&mut self, emu: &mut Crossing) -> io::Result<usize> {
        let n = emu.to_os.len();
        let mut buf = [0u8; 64];
        for p in emu.to_os.drain(..) {
            self.ours.send(&p)?;
            let len = self.kernel.recv(&mut buf)?;
            let mut answer = b"re:".to_vec();
            answer.extend_from_slice(&buf[..len]);
            self.kernel.send(&answer)?;
        }
        Ok(n)
    }
}

// A packet for the OS whose answer the OS gives inside the write (a ping's echo reply from a
// TUN device) is answered in the same turn: the turn writes it, reads the answer, runs the
// emulation again and only then flushes the network, so the acknowledgement and the answer
// leave together in one turn. Added with `add`, the answer took a second turn (and, on the
// network, came after the acknowledgement by a turn).
#[test]
fn an_answer_given_inside_the_write_leaves_in_the_same_turn() {
    for answering in [true, false] {
        let (net, peer) = pair();
        let (ours, kernel) = pair();
        let mut d = Driver::new(Crossing::default(), Config::default()).unwrap();
        d.add(Box::new(Net(net))).unwrap();
        let os = Box::new(Os { ours, kernel });
        if answering {
            d.add_answering(os).unwrap();
        } else {
            d.add(os).unwrap();
        }
        peer.send(b"ping").unwrap();
        d.turn(Wall::now() + Duration::from_secs(10)).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        while let Ok(n) = peer.recv(&mut buf) {
            got.push(buf[..n].to_vec());
        }
        if answering {
            assert_eq!(got, [b"ack".to_vec(), b"re:ping".to_vec()]);
            assert_eq!((d.stats().inputs, d.stats().outputs), (2, 3));
            // Nothing left for another turn.
            d.turn(Wall::now() + Duration::from_millis(20)).unwrap();
            assert_eq!(d.stats().inputs, 2);
            assert!(peer.recv(&mut buf).is_err());
        } else {
            assert_eq!(
                got,
                [b"ack".to_vec()],
                "the old order: the answer waits a turn"
            );
        }
    }
}
