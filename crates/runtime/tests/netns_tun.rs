//! Root-only: named namespaces, TUN devices configured over rtnetlink, and the real-time driver
//! relaying between two of them (a stand-in emulation: a wire with a fixed delay), with `ping`
//! across it. Skipped (with a message) without root or /dev/net/tun. Every namespace is removed
//! on every exit path (a guard's Drop), and every wait has a timeout.

use ipoib_fabric::Instant;
use ipoib_proto::ipoib::IpBuf;
use ipoib_runtime::netns::{self, NetNs};
use ipoib_runtime::realtime::{Config, Driver, Emulation};
use ipoib_runtime::tun::{
    LinkControl, LinkMirror, OsPort, Restored, Tun, TunConfig, TunEndpoint, FRAME_HEADROOM,
    HAND_OVER_MIN,
};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant as Wall};

#[path = "common/netns_guard.rs"]
mod netns_guard;
use netns_guard::{can_run, Guard};

fn name(tag: &str) -> String {
    format!("ipoibt-{tag}-{}", std::process::id())
}

fn ip(args: &[&str]) -> String {
    let o = Command::new("timeout")
        .arg("10")
        .arg("ip")
        .args(args)
        .output()
        .expect("ip runs");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn tun_in(ns: &str, addr: &str, mtu: u32) -> (NetNs, Tun) {
    let cfg = TunConfig {
        name: "ib0".into(),
        mtu,
        addresses: vec![(addr.parse::<IpAddr>().unwrap(), 24)],
        loopback_up: true,
        up: true,
        offload: false,
        tx_queue_len: Some(1000),
    };
    let (ns, tun) = NetNs::create(ns, move || Tun::create(&cfg)).expect("namespace");
    (ns, tun.expect("TUN device"))
}

/// A namespace with a TUN device `ib0` (MTU 2044, down, holding `addresses`) and its
/// [`LinkControl`], for the [`LinkMirror`] tests.
fn mirror_tun_in(ns: &str, addresses: &[(&str, u8)]) -> (NetNs, Tun, LinkControl) {
    let cfg = TunConfig {
        name: "ib0".into(),
        mtu: 2044,
        addresses: addresses
            .iter()
            .map(|(a, l)| (a.parse::<IpAddr>().unwrap(), *l))
            .collect(),
        loopback_up: true,
        up: false,
        offload: false,
        tx_queue_len: None,
    };
    let (ns, made) = NetNs::create(ns, move || {
        let tun = Tun::create(&cfg).map_err(|e| e.to_string())?;
        let ctl = LinkControl::open(tun.index()).map_err(|e| e.to_string())?;
        Ok::<_, String>((tun, ctl))
    })
    .expect("namespace");
    let (tun, ctl) = made.expect("TUN device");
    (ns, tun, ctl)
}

#[test]
fn namespace_with_a_configured_tun() {
    if !can_run() {
        return;
    }
    let n = name("cfg");
    let _g = Guard(vec![n.clone()]);
    let cfg = TunConfig {
        name: "ib0".into(),
        mtu: 2044,
        addresses: vec![
            ("10.9.0.1".parse().unwrap(), 24),
            ("fd00:9::1".parse().unwrap(), 64),
        ],
        loopback_up: true,
        up: true,
        offload: false,
        tx_queue_len: Some(1000),
    };
    let (ns, tun) = NetNs::create(&n, move || Tun::create(&cfg)).expect("namespace");
    let tun = tun.expect("TUN device");
    assert!(ip(&["netns", "list"]).contains(&n));
    let link = ip(&["-n", &n, "link", "show", "ib0"]);
    assert!(link.contains("mtu 2044"), "{link}");
    assert!(link.contains("qlen 1000"), "{link}");
    assert!(link.contains(",UP"), "{link}");
    let lo = ip(&["-n", &n, "link", "show", "lo"]);
    assert!(lo.contains(",UP"), "{lo}");
    let addr = ip(&["-n", &n, "addr", "show", "ib0"]);
    assert!(addr.contains("inet 10.9.0.1/24"), "{addr}");
    assert!(addr.contains("inet6 fd00:9::1/64"), "{addr}");
    let sysctl = ns
        .run_in(|| std::fs::read_to_string("/proc/sys/net/ipv4/conf/ib0/accept_local"))
        .unwrap()
        .unwrap();
    assert_eq!(sysctl.trim(), "1");
    // The device is not in the test's own namespace.
    assert!(!ip(&["link", "show"]).contains(&format!("{}: ib0", tun.index())) || tun.index() == 0);
    drop(tun);
    ns.delete().unwrap();
    assert!(!netns::exists(&n));
    assert!(!ip(&["netns", "list"]).contains(&n));
}

/// A wire between two ports with a fixed delay.
#[derive(Default)]
struct Wire {
    now: Instant,
    seq: u64,
    queue: BTreeMap<(Instant, u64), (usize, Vec<u8>)>,
    out: [Vec<Vec<u8>>; 2],
    /// Packets handed over in their own buffer ([`OsPort::frame_from_os`]).
    handed_over: u64,
}

const WIRE_DELAY: Duration = Duration::from_micros(50);

impl Emulation for Wire {
    fn now(&self) -> Instant {
        self.now
    }
    fn next_event_at(&self) -> Option<Instant> {
        self.queue.keys().next().map(|k| k.0)
    }
    fn run_until(&mut self, t: Instant) {
        while let Some(e) = self.queue.first_entry() {
            if e.key().0 > t {
                break;
            }
            self.now = self.now.max(e.key().0);
            let (to, p) = e.remove();
            self.out[to].push(p);
        }
        self.now = self.now.max(t);
    }
}

struct Side(usize);

impl OsPort<Wire> for Side {
    fn packet_from_os(&mut self, w: &mut Wire, packet: &[u8]) {
        w.seq += 1;
        let k = (w.now + WIRE_DELAY, w.seq);
        w.queue.insert(k, (1 - self.0, packet.to_vec()));
    }
    fn frame_from_os(&mut self, w: &mut Wire, frame: Vec<u8>) -> Option<Vec<u8>> {
        assert!(
            frame.len() >= FRAME_HEADROOM + HAND_OVER_MIN,
            "{}",
            frame.len()
        );
        w.handed_over += 1;
        self.packet_from_os(w, &frame[FRAME_HEADROOM..]);
        // Every other time no buffer is given back: the endpoint makes a new one.
        w.handed_over.is_multiple_of(2).then_some(frame)
    }
    fn packets_to_os(&mut self, w: &mut Wire, out: &mut dyn FnMut(IpBuf)) {
        for p in w.out[self.0].drain(..) {
            out(p.into());
        }
    }
}

#[test]
fn driver_relays_ping_between_namespaces() {
    let handed_over = relay_ping(false, 2044, &["-c", "3", "-i", "0.2"], 3);
    assert!(handed_over.is_none_or(|n| n == 0), "{handed_over:?}");
}

/// Pings of 30,000 bytes at a connected-mode MTU: each request and answer is handed over in the
/// buffer it was read into (`OsPort::frame_from_os`), and arrives whole (ping checks the data).
#[test]
fn driver_hands_large_packets_over_in_their_buffer() {
    let handed_over = relay_ping(true, 65520, &["-c", "4", "-i", "0.05", "-s", "30000"], 4);
    assert!(handed_over.is_none_or(|n| n == 8), "{handed_over:?}");
}

/// The same with the writer threads: 40 pings, 10 of them sent at once (`-l 10`) so that turns
/// carry several packets for one device and hand them to its thread, and lone ones that are
/// written on the driver's thread; every one arrives, in order (ping counts no duplicates or
/// losses), and every write is counted.
#[test]
fn driver_relays_ping_burst_with_writer_threads() {
    let handed_over = relay_ping(true, 2044, &["-c", "40", "-i", "0.01", "-l", "10"], 40);
    assert!(handed_over.is_none_or(|n| n == 0), "{handed_over:?}");
}

/// Relays `ping ping_args` over the driver at `mtu`; returns the packets handed over in their
/// buffer (`None`: skipped).
fn relay_ping(writer_threads: bool, mtu: u32, ping_args: &[&str], count: u64) -> Option<u64> {
    if !can_run() {
        return None;
    }
    let suffix = match (writer_threads, mtu > 2044) {
        (_, true) => "l",
        (true, false) => "w",
        (false, false) => "",
    };
    let (a, b) = (name(&format!("a{suffix}")), name(&format!("b{suffix}")));
    let _g = Guard(vec![a.clone(), b.clone()]);
    let net = match suffix {
        "l" => "10.9.3",
        "w" => "10.9.2",
        _ => "10.9.1",
    };
    let (_na, ta) = tun_in(&a, &format!("{net}.1"), mtu);
    let (_nb, tb) = tun_in(&b, &format!("{net}.2"), mtu);
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    let relay = std::thread::spawn(move || {
        let mut d = Driver::new(Wire::default(), Config::default()).unwrap();
        let (ea, eb) = if writer_threads {
            (
                TunEndpoint::with_writer_thread(ta, Side(0)).unwrap(),
                TunEndpoint::with_writer_thread(tb, Side(1)).unwrap(),
            )
        } else {
            (TunEndpoint::new(ta, Side(0)), TunEndpoint::new(tb, Side(1)))
        };
        let counters = [ea.counters(), eb.counters()];
        d.add(Box::new(ea)).unwrap();
        d.add(Box::new(eb)).unwrap();
        let end = Wall::now() + Duration::from_secs(30);
        while !stop2.load(Ordering::Relaxed) && Wall::now() < end {
            d.turn(Wall::now() + Duration::from_millis(50)).unwrap();
        }
        // Dropping the driver ends the writer threads once they wrote everything.
        let stats = d.stats();
        (stats, counters, d.into_emulation().handed_over)
    });
    let out = Command::new("timeout")
        .args(["20", "ip", "netns", "exec", &a, "ping", "-W", "2"])
        .args(ping_args)
        .arg(format!("{net}.2"))
        .output()
        .expect("ping runs");
    stop.store(true, Ordering::Relaxed);
    let (stats, counters, handed_over) = relay.join().expect("relay thread");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("{count} packets transmitted, {count} received")),
        "{text}"
    );
    // The pings and their answers: the idle driver slept between them.
    assert!(stats.inputs >= 2 * count, "{stats:?}");
    let written: u64 = counters
        .iter()
        .map(|c| c.to_os.load(Ordering::Relaxed))
        .sum();
    assert_eq!(written, stats.outputs, "{stats:?}");
    assert!(written >= 2 * count, "{written}");
    Some(handed_over)
}

/// The `inet6` link-local addresses (`fe80::/10`) of `ib0` in namespace `n`.
fn link_locals(n: &str) -> Vec<String> {
    ip(&[
        "-n", n, "-6", "-o", "addr", "show", "dev", "ib0", "scope", "link",
    ])
    .lines()
    .filter_map(|l| l.split("inet6 ").nth(1))
    .filter_map(|r| r.split_whitespace().next())
    .map(str::to_string)
    .collect()
}

// A TUN device following its interface as Linux IPoIB's ib0 follows its port
// (docs/DEPLOYED.md "TUN devices"): no link-local address of the kernel's making, the
// interface's once known (and another when the interface gets another); down until the first
// carrier; NO-CARRIER when the carrier goes, back when it returns, the addresses kept.
#[test]
fn link_mirror_follows_carrier_and_link_local() {
    if !can_run() {
        return;
    }
    let n = name("mirror");
    let _g = Guard(vec![n.clone()]);
    let (_ns, _tun, ctl) = mirror_tun_in(&n, &[("10.9.1.1", 24), ("fd00:9:1::1", 64)]);
    let mut m = LinkMirror::new(ctl, None);
    // No carrier yet: down, and nothing changes.
    assert!(!m.follow(false, 2044, None).unwrap());
    let link = ip(&["-n", &n, "link", "show", "ib0"]);
    assert!(!link.contains(",UP"), "{link}");
    let ll: std::net::Ipv6Addr = "fe80::2:c903:1:2".parse().unwrap();
    assert!(m.follow(true, 2044, Some(ll)).unwrap());
    assert!(m.is_up());
    let link = ip(&["-n", &n, "link", "show", "ib0"]);
    assert!(link.contains(",UP,LOWER_UP"), "{link}");
    // Give the kernel time to make an address of its own, if it would.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(link_locals(&n), vec![format!("{ll}/64")]);
    // The port goes down: NO-CARRIER, the addresses stay.
    assert!(m.follow(false, 2044, None).unwrap());
    let link = ip(&["-n", &n, "link", "show", "ib0"]);
    assert!(
        link.contains("NO-CARRIER") && link.contains(",UP"),
        "{link}"
    );
    let addr = ip(&["-n", &n, "addr", "show", "ib0"]);
    assert!(
        addr.contains("inet 10.9.1.1/24") && addr.contains("fd00:9:1::1/64"),
        "{addr}"
    );
    // Back, as another identity (another port GUID): the new link-local replaces the old.
    let ll2: std::net::Ipv6Addr = "fe80::2:c903:1:3".parse().unwrap();
    assert!(m.follow(true, 2044, Some(ll2)).unwrap());
    let link = ip(&["-n", &n, "link", "show", "ib0"]);
    assert!(link.contains(",UP,LOWER_UP"), "{link}");
    assert_eq!(link_locals(&n), vec![format!("{ll2}/64")]);
    let addr = ip(&["-n", &n, "addr", "show", "ib0"]);
    assert!(addr.contains("fd00:9:1::1/64"), "{addr}");
}

// What is done to the device by hand in its namespace and Linux IPoIB would not let stand
// (docs/LINUX-DEVICE.md): a down and up removes its IPv6 addresses, and the mirror adds the
// interface's link-local address back, as Linux makes an InfiniBand device's again from its
// GUID; an MTU above the interface's is set back to it, a smaller one kept. The kernel queues its
// link notices before `ip` returns, so each `check` sees what was done before it.
#[test]
fn link_mirror_puts_back_link_local_and_mtu_changed_by_hand() {
    if !can_run() {
        return;
    }
    let n = name("byhand");
    let _g = Guard(vec![n.clone()]);
    let (_ns, _tun, ctl) = mirror_tun_in(&n, &[("fd00:9:2::1", 64)]);
    let mut m = LinkMirror::new(ctl, None);
    // Before the mirror brought it up, nothing is put back.
    ip(&["-n", &n, "link", "set", "ib0", "mtu", "4000"]);
    assert_eq!(m.check(2044).unwrap(), vec![]);
    let ll: std::net::Ipv6Addr = "fe80::2:c903:1:4".parse().unwrap();
    assert!(m.follow(true, 2044, Some(ll)).unwrap());
    assert_eq!(m.check(2044).unwrap(), vec![]);
    assert_eq!(link_locals(&n), vec![format!("{ll}/64")]);

    // Down and up: every IPv6 address gone (keep_addr_on_down 0); the link-local one comes back.
    ip(&["-n", &n, "link", "set", "ib0", "down"]);
    ip(&["-n", &n, "link", "set", "ib0", "up"]);
    assert_eq!(link_locals(&n), Vec::<String>::new());
    assert_eq!(m.check(2044).unwrap(), vec![Restored::LinkLocal(ll)]);
    assert_eq!(link_locals(&n), vec![format!("{ll}/64")]);
    let addr = ip(&["-n", &n, "addr", "show", "ib0"]);
    assert!(!addr.contains("fd00:9:2::1"), "gone as on Linux: {addr}");
    // Down only: put back once it is up again, not before.
    ip(&["-n", &n, "link", "set", "ib0", "down"]);
    assert_eq!(m.check(2044).unwrap(), vec![]);
    ip(&["-n", &n, "link", "set", "ib0", "up"]);
    assert_eq!(m.check(2044).unwrap(), vec![Restored::LinkLocal(ll)]);
    assert_eq!(link_locals(&n), vec![format!("{ll}/64")]);

    // MTU: above the interface's, set back; below, kept.
    ip(&["-n", &n, "link", "set", "ib0", "mtu", "4000"]);
    assert_eq!(
        m.check(2044).unwrap(),
        vec![Restored::Mtu {
            asked: 4000,
            set: 2044
        }]
    );
    assert!(ip(&["-n", &n, "link", "show", "ib0"]).contains(" mtu 2044 "));
    ip(&["-n", &n, "link", "set", "ib0", "mtu", "1500"]);
    assert_eq!(m.check(2044).unwrap(), vec![]);
    assert!(ip(&["-n", &n, "link", "show", "ib0"]).contains(" mtu 1500 "));
    // Nothing changed, nothing done.
    assert_eq!(m.check(2044).unwrap(), vec![]);

    // The carrier gone, the interface has no MTU (0): a change is left alone, not set to 0
    // (refused by the kernel, "mtu 0: Invalid argument"), and the carrier's return sets the
    // interface's again.
    assert!(m.follow(false, 0, None).unwrap());
    ip(&["-n", &n, "link", "set", "ib0", "mtu", "4000"]);
    assert_eq!(m.check(0).unwrap(), vec![]);
    assert!(ip(&["-n", &n, "link", "show", "ib0"]).contains(" mtu 4000 "));
    assert!(m.follow(true, 2044, Some(ll)).unwrap());
    assert!(ip(&["-n", &n, "link", "show", "ib0"]).contains(" mtu 2044 "));
}

// The interface's MTU changes with its broadcast group's (joined again after a ClientReregister
// or an SM's change with other parameters; the carrier stays): the device follows, to the
// smaller of the interface's MTU and the one last given by hand, as Linux IPoIB sets
// `min(mcast_mtu, admin_mtu)` at every broadcast join (docs/LINUX-DEVICE.md). Before, only a
// carrier's return set the device's MTU, so the device kept the old group's.
#[test]
fn link_mirror_follows_the_broadcast_groups_mtu() {
    if !can_run() {
        return;
    }
    let n = name("mtufollow");
    let _g = Guard(vec![n.clone()]);
    let (_ns, _tun, ctl) = mirror_tun_in(&n, &[]);
    let mtu_is = |want: u32| {
        let link = ip(&["-n", &n, "link", "show", "ib0"]);
        assert!(
            link.contains(&format!(" mtu {want} ")),
            "want {want}: {link}"
        );
    };
    let followed = |from, to| vec![Restored::Followed { from, to }];
    let mut m = LinkMirror::new(ctl, None);
    assert!(m.follow(true, 2044, None).unwrap());
    assert_eq!(m.check(2044).unwrap(), vec![]);
    mtu_is(2044);
    // A 4096-byte broadcast group: up to 4092.
    assert_eq!(m.check(4092).unwrap(), followed(2044, 4092));
    mtu_is(4092);
    assert_eq!(m.check(4092).unwrap(), vec![]);
    // Given 3000 by hand: kept, and remembered.
    ip(&["-n", &n, "link", "set", "ib0", "mtu", "3000"]);
    assert_eq!(m.check(4092).unwrap(), vec![]);
    mtu_is(3000);
    // Back to a 2048-byte group: down to 2044; then 4096 again: up to the hand's 3000 only.
    assert_eq!(m.check(2044).unwrap(), followed(3000, 2044));
    mtu_is(2044);
    assert_eq!(m.check(4092).unwrap(), followed(2044, 3000));
    mtu_is(3000);
    // The carrier's return sets the same smaller of the two.
    assert!(m.follow(false, 0, None).unwrap());
    assert_eq!(m.check(0).unwrap(), vec![]);
    assert!(m.follow(true, 2044, None).unwrap());
    mtu_is(2044);
    assert_eq!(m.check(2044).unwrap(), vec![]);
    assert!(m.follow(false, 0, None).unwrap());
    assert!(m.follow(true, 4092, None).unwrap());
    mtu_is(3000);
    assert_eq!(m.check(4092).unwrap(), vec![]);
}
