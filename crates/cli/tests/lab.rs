//! `ipoib lab` as root: a 3-host lab comes up (its emulation thread under `--rt-priority`),
//! `ping` over IPv4 and IPv6 between two hosts through `ipoib lab exec` (by host name), `ipoib show` finds the neighbours they resolved, a
//! UDP datagram to an IP multicast group reaches a listener in another host (python3),
//! `ip link set ib0 down`/`up` and `mtu` in a host are put right as Linux IPoIB would,
//! `ipoib lab down` stops it, and then no namespace,
//! namespace file, `/etc/netns` directory, state file or lab process is left; so too after a
//! Ctrl-C while the hosts come up, which the lab names. Every wait has a
//! timeout, and a guard removes the lab however the test ends. Skipped with a message when not
//! root, without /dev/net/tun or ping, or while another lab runs.

mod common;

use common::{ipoib, leftovers, serial, skip_reason, Lab, Reaped, BIN};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RECEIVER: &str = "import socket,struct
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)
s.bind(('',5001))
s.setsockopt(socket.IPPROTO_IP,socket.IP_ADD_MEMBERSHIP,struct.pack('4s4s',socket.inet_aton('239.1.1.1'),socket.inet_aton('10.0.0.2')))
s.settimeout(10)
print(s.recvfrom(100)[0].decode())";
const SENDER: &str = "import socket,time
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP,socket.IP_MULTICAST_IF,socket.inet_aton('10.0.0.1'))
for i in range(10):
    s.sendto(b'over the fabric',('239.1.1.1',5001)); time.sleep(0.1)";

fn multicast_reaches_a_listener() {
    let rx = Reaped::spawn(
        Command::new(BIN)
            .args(["lab", "exec", "h2", "--", "python3", "-c", RECEIVER])
            .stdout(Stdio::piped()),
    );
    // Joined once the interface holds the group (IGMP snooping).
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, out) = ipoib(&["show", "--host", "h2", "mcast"], Duration::from_secs(10))
            .expect("show within 10 s");
        if out.contains("239.1.1.1") {
            break;
        }
        assert!(Instant::now() < end, "h2 never joined 239.1.1.1:\n{out}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (st, _) = ipoib(
        &["lab", "exec", "h1", "--", "python3", "-c", SENDER],
        Duration::from_secs(20),
    )
    .expect("sender within 20 s");
    assert!(st.success(), "sender: {st}");
    let (text, _) = rx.finish(Duration::from_secs(15));
    assert!(text.contains("over the fabric"), "receiver: {text}");
}

/// `ip link set ib0 down` and `up` in h2 take its IPv6 addresses (keep_addr_on_down 0); the lab
/// gives back the link-local one `ll2`, as Linux makes an InfiniBand device's again from its GUID
/// when it comes up, so h1 reaches it again; an MTU below the interface's stays, one above is set
/// back to it, as Linux IPoIB's `ipoib_change_mtu` allows no more (docs/LINUX-DEVICE.md).
fn ib0_changed_by_hand_is_put_back(ll2: &str) {
    let sh = |h: &str, cmd: &str| {
        let (st, out) = ipoib(
            &["lab", "exec", h, "--", "sh", "-c", cmd],
            Duration::from_secs(10),
        )
        .expect("sh within 10 s");
        assert!(st.success(), "{cmd}: {st}\n{out}");
        out
    };
    // Until `want` holds of the output of `cmd` in h2, at most 10 s.
    let wait_for = |cmd: &str, want: &dyn Fn(&str) -> bool| {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let out = sh("h2", cmd);
            if want(&out) {
                return out;
            }
            assert!(Instant::now() < end, "{cmd}: never as wanted:\n{out}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    sh(
        "h2",
        "ip link set ib0 mtu 1500 && ip link set ib0 down && ip link set ib0 up",
    );
    wait_for("ip -6 -o addr show dev ib0 scope link", &|o| {
        o.contains(ll2)
    });
    // Seen with the down: the smaller MTU stays.
    let link = sh("h2", "ip -o link show ib0");
    assert!(link.contains(" mtu 1500 "), "{link}");
    let dst = format!("{ll2}%ib0");
    let args = [
        "lab", "exec", "h1", "--", "ping", "-6", "-c", "2", "-i", "0.2", "-W", "5", &dst,
    ];
    let (st, out) = ipoib(&args, Duration::from_secs(30)).expect("ping within 30 s");
    assert!(st.success(), "ping -6 {dst} after down and up: {st}\n{out}");
    sh("h2", "ip link set ib0 mtu 4000");
    wait_for("ip -o link show ib0", &|o| o.contains(" mtu 2044 "));
    // The lab's own address, gone with the down as on Linux, back by hand for what follows.
    sh("h2", "ip -6 addr add fd00::2/64 dev ib0 nodad");
}

#[test]
fn three_host_lab_pings_over_ipv4_and_ipv6_and_leaves_nothing() {
    let _one = serial();
    if let Some(why) = skip_reason(&["ping"]) {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("lab.pcap");
    let err = dir.path().join("stderr");
    let args = [
        "--hosts",
        "3",
        "--rt-priority",
        "1",
        "--pcap",
        pcap.to_str().unwrap(),
    ];
    let began = common::unix_secs() as u64;
    let lab = Lab::start_to(&args, std::fs::File::create(&err).unwrap());
    let (pid, table) = (lab.pid(), &lab.table);
    assert!(table.contains("3 hosts up"), "{table}");
    for h in ["h1", "h2", "h3"] {
        assert!(table.contains(&format!("\n{h} ")), "{h} in\n{table}");
    }
    // --rt-priority: the emulation's thread (the main one) is SCHED_FIFO (1), the three TUN
    // writer threads keep the default policy (0).
    let policies = thread_policies(pid);
    assert_eq!(
        policies.get(&pid),
        Some(&("ipoib".to_string(), 1)),
        "{policies:?}"
    );
    let writers: Vec<u32> = policies
        .values()
        .filter(|(comm, _)| comm.starts_with("write-"))
        .map(|&(_, p)| p)
        .collect();
    assert_eq!(writers, vec![0, 0, 0], "{policies:?}");

    for (family, addr) in [("-4", "10.0.0.2"), ("-6", "fd00::2")] {
        let args = [
            "lab", "exec", "h1", "--", "ping", family, "-c", "2", "-i", "0.2", "-W", "5", "h2",
        ];
        let (st, out) = ipoib(&args, Duration::from_secs(30)).expect("ping within 30 s");
        assert!(st.success(), "ping {family} h2: {st}\n{out}");
        assert!(out.contains("2 received"), "{out}");
        assert!(out.contains(addr), "h2 resolved to {addr}: {out}");
    }
    // IPv6 link-local: each ib0 holds one link-local address, its interface's (from the port
    // GUID, draft-ietf-ipoib-ip-over-infiniband-06 §8), the one ND is answered for, so a ping to
    // fe80::...%ib0 of a peer works (docs/DEPLOYED.md "TUN devices").
    let link_local = |h: &str| {
        let args = [
            "lab", "exec", h, "--", "ip", "-6", "-o", "addr", "show", "dev", "ib0", "scope", "link",
        ];
        let (st, out) = ipoib(&args, Duration::from_secs(10)).expect("ip within 10 s");
        assert!(st.success(), "{out}");
        let lls: Vec<String> = out
            .lines()
            .filter_map(|l| l.split("inet6 ").nth(1))
            .filter_map(|r| r.split('/').next())
            .map(str::to_string)
            .collect();
        assert_eq!(lls.len(), 1, "one link-local address on {h}'s ib0: {out}");
        lls[0].clone()
    };
    let ll2 = link_local("h2");
    assert!(ll2.starts_with("fe80::"), "{ll2}");
    assert_ne!(link_local("h1"), ll2);
    let dst = format!("{ll2}%ib0");
    let args = [
        "lab", "exec", "h1", "--", "ping", "-6", "-c", "2", "-i", "0.2", "-W", "5", &dst,
    ];
    let (st, out) = ipoib(&args, Duration::from_secs(30)).expect("ping within 30 s");
    assert!(st.success(), "ping -6 {dst}: {st}\n{out}");
    assert!(out.contains("2 received"), "{out}");
    ib0_changed_by_hand_is_put_back(&ll2);
    // The neighbours live in our interfaces (Linux keeps none on a TUN device): `ipoib show`
    // reads them from the lab's control socket.
    let (st, out) = ipoib(&["show", "--host", "h1", "neigh"], Duration::from_secs(10))
        .expect("show within 10 s");
    assert!(st.success(), "show: {st} {out}");
    assert!(out.contains("10.0.0.2") && out.contains("fd00::2"), "{out}");
    // IP multicast: Linux's IGMP report for 239.1.1.1 in h2 makes its interface join the group
    // (snooping), and a datagram h1 sends to the group reaches the program in h2.
    if common::installed("python3") {
        multicast_reaches_a_listener();
    } else {
        eprintln!("multicast part skipped: needs python3");
    }
    // The exit status is the command's.
    let (st, _) = ipoib(
        &["lab", "exec", "h2", "--", "false"],
        Duration::from_secs(10),
    )
    .expect("false within 10 s");
    assert_eq!(st.code(), Some(1));

    let (st, out) = ipoib(&["lab", "down"], Duration::from_secs(30)).expect("down within 30 s");
    assert!(st.success(), "lab down: {st} {out}");
    // The lab removed its namespaces itself on SIGTERM; none was deleted by hand.
    assert!(
        out.contains(&format!(
            "stopped the lab (pid {pid}) and removed its 3 network namespaces.\n"
        )),
        "{out}"
    );
    drop(lab);
    assert_eq!(leftovers(3, &[pid]), Vec::<String>::new());
    lab_pcap_holds_the_pings(&pcap, &std::fs::read_to_string(&err).unwrap());
    // Time-stamped by the wall clock: the first packet (the SM's first SMP) within the test.
    let bytes = std::fs::read(&pcap).unwrap();
    let first = u64::from(u32::from_le_bytes(bytes[24..28].try_into().unwrap()));
    let end = common::unix_secs() as u64;
    assert!(
        (began..=end).contains(&first),
        "first packet at {first}, the test ran from {began} to {end}"
    );
}

/// `--pcap`: the lab recorded its links from the bring-up on; on its way out it said how many
/// packets the file holds, `ipoib decode` reads that many with every CRC good, and tshark (where
/// installed) finds h1's pings to h2 in them, over IPv4 and IPv6, each on both links of its path
/// (h1 to the switch, the switch to h2).
fn lab_pcap_holds_the_pings(pcap: &Path, stderr: &str) {
    let (line, packets) = common::pcap_said(stderr, "ipoib lab", pcap);
    let bytes = std::fs::metadata(pcap).unwrap().len();
    assert!(
        line.ends_with(&format!(" packets, {bytes} bytes")),
        "{line}"
    );
    common::assert_decodes(pcap, packets);
    if !common::installed("tshark") {
        eprintln!("tshark part skipped: not installed");
        return;
    }
    for filter in [
        "icmp.type == 8 && ip.src == 10.0.0.1 && ip.dst == 10.0.0.2",
        "icmp.type == 0 && ip.src == 10.0.0.2 && ip.dst == 10.0.0.1",
        "icmpv6.type == 128 && ipv6.src == fd00::1 && ipv6.dst == fd00::2",
        "icmpv6.type == 129 && ipv6.src == fd00::2 && ipv6.dst == fd00::1",
    ] {
        let o = Command::new("tshark")
            .args(["-r", pcap.to_str().unwrap(), "-Y", filter])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let n = String::from_utf8_lossy(&o.stdout).lines().count();
        // Two pings each way and family, each packet on two links.
        assert_eq!(n, 4, "{filter}: {n} packets");
    }
}

/// `--pcap-limit` below the pcap file's header, and a `--pcap` the lab cannot create, are
/// refused before anything is made (status 2, naming the option).
#[test]
fn a_pcap_the_lab_cannot_write_is_refused_before_anything_is_made() {
    let _one = serial();
    if let Some(why) = skip_reason(&[]) {
        eprintln!("skipped: {why}");
        return;
    }
    let run = tempfile::tempdir().unwrap();
    let missing = run.path().join("no-such-dir").join("x.pcap");
    let missing = missing.to_str().unwrap();
    let cases = [
        (
            vec!["--pcap", "x.pcap", "--pcap-limit", "10"],
            "ipoib lab: --pcap-limit 10: at least 24 bytes, the pcap file's header\n".to_string(),
        ),
        (
            vec!["--pcap", missing],
            format!("ipoib lab: --pcap {missing}: No such file or directory (os error 2)\n"),
        ),
    ];
    for (args, want) in cases {
        let o = Command::new(BIN)
            .current_dir(run.path())
            .env("IPOIB_RUN_DIR", run.path())
            .arg("lab")
            .args(&args)
            .output()
            .expect("run ipoib lab");
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&o.stderr), want, "{args:?}");
        assert!(!run.path().join("lab").join("lab.json").exists());
        assert!(!run.path().join("x.pcap").exists());
        assert!(!Path::new("/run/netns/ipoib-h1").exists());
    }
}

/// Each thread of process `pid`: its name and scheduling policy (sched(7): 0 `SCHED_OTHER`, 1
/// `SCHED_FIFO`), fields 2 and 41 of `/proc/PID/task/TID/stat` (proc(5)).
fn thread_policies(pid: u32) -> std::collections::BTreeMap<u32, (String, u32)> {
    let mut out = std::collections::BTreeMap::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/task")).expect("the lab's threads") {
        let e = e.unwrap();
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let tid: u32 = e.file_name().to_string_lossy().parse().unwrap();
        let (head, rest) = stat.rsplit_once(')').unwrap();
        let comm = head.split_once('(').unwrap().1.to_string();
        let policy = rest
            .split_whitespace()
            .nth(41 - 3)
            .unwrap()
            .parse()
            .unwrap();
        out.insert(tid, (comm, policy));
    }
    out
}

/// A lab whose process dies without cleaning up (SIGKILL) is found by `ipoib lab down`, which
/// removes its namespaces, their /etc/netns files and its state file.
#[test]
fn killed_lab_is_cleaned_by_lab_down() {
    let _one = serial();
    if let Some(why) = skip_reason(&[]) {
        eprintln!("skipped: {why}");
        return;
    }
    let lab = Lab::start(&["--hosts", "2"]);
    let pid = lab.pid();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill -9 the lab");
    // Dead (a zombie until the guard reaps it), not yet cleaned.
    let dead = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
            s.rsplit(')').next().is_some_and(|r| r.starts_with(" Z"))
        })
    };
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end && !dead() {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(dead(), "the lab outlived SIGKILL");
    // Killed, it removed nothing.
    assert!(
        std::path::Path::new("/run/netns/ipoib-h1").exists(),
        "{:?}",
        leftovers(2, &[pid])
    );
    let (st, out) = ipoib(&["lab", "down"], Duration::from_secs(30)).expect("lab down in 30 s");
    assert!(st.success(), "lab down: {st}\n{out}");
    let left = leftovers(2, &[pid]);
    assert!(
        left.iter().all(|l| l.contains("process")),
        "left after lab down: {left:?}"
    );
    drop(lab);
    assert!(
        leftovers(2, &[pid]).is_empty(),
        "{:?}",
        leftovers(2, &[pid])
    );
}

/// `--hosts` beyond the lab's 254 (one /24) is refused with the lab's bound, not the single
/// switch's advice to take a fat tree (whose lab has the same bound). Its own RUN_DIR: the lock
/// of a running lab is not taken, and nothing is made before the refusal.
#[test]
fn too_many_hosts_names_the_labs_bound() {
    if let Some(why) = skip_reason(&[]) {
        eprintln!("skipped: {why}");
        return;
    }
    let run = tempfile::tempdir().unwrap();
    for topology in ["single-switch", "fat-tree"] {
        let o = Command::new(BIN)
            .env("IPOIB_RUN_DIR", run.path())
            .args(["lab", "--hosts", "255", "--topology", topology])
            .output()
            .expect("run ipoib lab");
        assert_eq!(o.status.code(), Some(2), "{topology}");
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            "ipoib lab: at most 254 hosts, not 255\n",
            "{topology}"
        );
    }
}

/// `--rt-priority` takes SCHED_FIFO's priorities, 1 to 99: others are refused before anything
/// is made (status 2, naming the option).
#[test]
fn rt_priority_out_of_range_is_refused() {
    if let Some(why) = skip_reason(&[]) {
        eprintln!("skipped: {why}");
        return;
    }
    let run = tempfile::tempdir().unwrap();
    for p in ["0", "100"] {
        let o = Command::new(BIN)
            .env("IPOIB_RUN_DIR", run.path())
            .args(["lab", "--rt-priority", p])
            .output()
            .expect("run ipoib lab");
        assert_eq!(o.status.code(), Some(2), "{p}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("--rt-priority"),
            "{p}"
        );
        assert!(!run.path().join("lab").join("lab.json").exists());
    }
}

/// Ctrl-C while the hosts come up (the second or so before carrier): the lab says it stopped
/// before they were up, exits 0 as on any signal, and leaves nothing behind.
#[test]
fn interrupted_while_coming_up_says_so_and_leaves_nothing() {
    let _one = serial();
    if let Some(why) = skip_reason(&[]) {
        eprintln!("skipped: {why}");
        return;
    }
    let mut lab = common::Talker::spawn_stderr(Command::new(BIN).args(["lab", "--hosts", "2"]));
    let pid = lab.proc.pid();
    // The control socket is bound once the namespaces and TUN devices are made, just before
    // the hosts are brought up.
    let sock = std::path::Path::new("/run/ipoib/lab/control.sock");
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end && !sock.exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(sock.exists(), "no control socket: {:?}", lab.seen);
    assert_eq!(lab.interrupt_and_wait(), 0, "{:?}", lab.seen);
    assert!(
        lab.seen
            .iter()
            .any(|l| l.contains("stopped before the hosts came up")),
        "{:?}",
        lab.seen
    );
    assert!(
        leftovers(2, &[pid]).is_empty(),
        "{:?}",
        leftovers(2, &[pid])
    );
}

/// Runs `ipoib lab down` when dropped if a lab of `hosts` hosts left something: a test that
/// fails leaves no namespace behind.
struct Down(usize);

impl Drop for Down {
    fn drop(&mut self) {
        if !leftovers(self.0, &[]).is_empty() {
            let _ = ipoib(&["lab", "down"], Duration::from_secs(60));
        }
    }
}

/// A SIGINT in the lab's first steps, before any namespace of its own (here while it removes
/// the 254 namespaces of a lab that was killed, and builds its subnet), is not lost when the lab
/// began with SIGINT ignored, as a script's `ipoib lab &` does: it stops there, status 0, and
/// nothing is left. It used to be discarded (the handler came after those steps), and the lab
/// made its namespaces and ran until killed.
#[test]
fn sigint_in_the_first_steps_is_not_lost() {
    let _one = serial();
    if let Some(why) = skip_reason(&[]) {
        eprintln!("skipped: {why}");
        return;
    }
    let _down = Down(254);
    // A lab killed once its namespaces are made: the next one removes them first.
    let mut killed = Reaped::spawn(
        Command::new(BIN)
            .args(["lab", "--topology", "fat-tree", "--hosts", "254"])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let last = std::path::Path::new("/run/netns/ipoib-h254");
    let end = Instant::now() + Duration::from_secs(60);
    while !last.exists() {
        assert!(Instant::now() < end, "the first lab made no ipoib-h254");
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = killed.0.kill();
    let _ = killed.0.wait();
    let mut lab = common::Talker::with_sigint_ignored(
        &["lab", "--topology", "fat-tree", "--hosts", "254"],
        None,
    );
    let pid = lab.proc.pid();
    // While it removes them (h1 first): its first step.
    let first = std::path::Path::new("/run/netns/ipoib-h1");
    let end = Instant::now() + Duration::from_secs(20);
    while first.exists() {
        assert!(Instant::now() < end, "the stale lab was not removed");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(lab.interrupt_and_wait(), 0, "{:?}", lab.seen);
    assert!(
        lab.seen
            .iter()
            .any(|l| l.contains("SIGINT while the lab started: stopped")
                || l.contains("SIGINT while the subnet was built: stopped")),
        "{:?}",
        lab.seen
    );
    let left = leftovers(254, &[pid]);
    assert!(left.is_empty(), "{left:?}");
}

/// A SIGINT while the namespaces and TUN devices are made stops the lab at the next host, not
/// once all 254 are made and brought up: it names the step, exits 0 and removes every namespace
/// it made (`ip netns list` has none of the lab's after).
#[test]
fn sigint_while_the_namespaces_are_made_stops_there_and_leaves_nothing() {
    let _one = serial();
    if let Some(why) = skip_reason(&[]) {
        eprintln!("skipped: {why}");
        return;
    }
    let _down = Down(254);
    let mut lab = common::Talker::with_sigint_ignored(
        &["lab", "--topology", "fat-tree", "--hosts", "254"],
        None,
    );
    let pid = lab.proc.pid();
    let first = std::path::Path::new("/run/netns/ipoib-h1");
    let end = Instant::now() + Duration::from_secs(60);
    while !first.exists() {
        assert!(Instant::now() < end, "no namespace made: {:?}", lab.seen);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(lab.interrupt_and_wait(), 0, "{:?}", lab.seen);
    assert!(
        lab.seen
            .iter()
            .any(|l| l.contains("SIGINT while the namespaces were made: stopped")),
        "{:?}",
        lab.seen
    );
    let left = leftovers(254, &[pid]);
    assert!(left.is_empty(), "{left:?}");
}

/// A host the subnet manager cannot reach (cabled only through another host's second port, which
/// does not forward SMPs) never comes up. The lab said so only after its 30 s wait, as "no
/// carrier or IPv6 not ready"; it now warns at the start, as `sim` and `demo` do (then Ctrl-C).
#[test]
fn a_host_the_sm_cannot_reach_is_named_at_the_start() {
    let _one = serial();
    if let Some(why) = skip_reason(&[]) {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("split.net");
    std::fs::write(&net, common::SPLIT_NET).unwrap();
    let _down = Down(3);
    let mut lab = common::Talker::spawn_stderr(Command::new(BIN).args([
        "lab",
        "--topology",
        net.to_str().unwrap(),
    ]));
    let pid = lab.proc.pid();
    let w = lab.expect("ipoib lab: warning: the subnet manager cannot reach 2 CA port(s)");
    assert!(w.ends_with("H2 port 2, H3 port 1"), "{w}");
    assert_eq!(lab.interrupt_and_wait(), 0, "{:?}", lab.seen);
    assert!(
        leftovers(3, &[pid]).is_empty(),
        "{:?}",
        leftovers(3, &[pid])
    );
}

/// A lab of one host says "1 host up" (it said "1 hosts up") and its one host's command.
#[test]
fn a_lab_of_one_host_says_so_in_the_singular() {
    let _one = serial();
    if let Some(why) = skip_reason(&[]) {
        eprintln!("skipped: {why}");
        return;
    }
    let lab = Lab::start(&["--hosts", "1"]);
    let pid = lab.pid();
    assert!(
        lab.table.starts_with("ipoib lab: 1 host up in "),
        "{}",
        lab.table
    );
    assert!(
        lab.table
            .contains("Run `ipoib lab exec h1 -- ip addr` (or `ip netns exec ipoib-h1 ...`)"),
        "{}",
        lab.table
    );
    drop(lab);
    assert!(
        leftovers(1, &[pid]).is_empty(),
        "{:?}",
        leftovers(1, &[pid])
    );
}

/// Removes the namespace and /etc/netns directory of `ipoib-h2` when dropped.
struct Taken;

impl Drop for Taken {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", "ipoib-h2"])
            .status();
        let _ = std::fs::remove_dir_all("/etc/netns/ipoib-h2");
    }
}

/// A namespace `ipoib-h2` that a lab of another run directory made (its /etc/netns hosts file
/// there): the lab refused it as "not made by a lab" and advised `ip netns del`, which would take
/// a running lab's host away; it now names the other lab as the likely owner.
#[test]
fn a_namespace_of_another_run_directorys_lab_is_named_so() {
    let _one = serial();
    if let Some(why) = skip_reason(&["ip"]) {
        eprintln!("skipped: {why}");
        return;
    }
    if !leftovers(2, &[]).is_empty() {
        eprintln!("skipped: ipoib-h1 or ipoib-h2 exists");
        return;
    }
    let _taken = Taken;
    assert!(Command::new("ip")
        .args(["netns", "add", "ipoib-h2"])
        .status()
        .unwrap()
        .success());
    std::fs::create_dir_all("/etc/netns/ipoib-h2").unwrap();
    std::fs::write("/etc/netns/ipoib-h2/hosts", "10.0.0.2 h2\n").unwrap();
    let run = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args(["lab", "--hosts", "2"])
        .env("IPOIB_RUN_DIR", run.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "ipoib lab: network namespace ipoib-h2 exists already, with the \
         /etc/netns/ipoib-h2/hosts a lab writes: a lab of another run directory (IPOIB_RUN_DIR) \
         may be running; stop it with `ipoib lab down` under its IPOIB_RUN_DIR, or, if none \
         runs, remove the namespace with `ip netns del ipoib-h2`\n"
    );
    // Nothing of the refused lab, and the namespace it did not own left as it was.
    assert!(!Path::new("/run/netns/ipoib-h1").exists());
    assert!(Path::new("/run/netns/ipoib-h2").exists());
}

/// A lab.json no lab wrote (here garbage) blocked `lab`, `lab down` and `lab exec` with a JSON
/// parser's "expected value at line 1 column 1" and no way out; the error now says it is no lab
/// state file and how to remove it. (A run directory of its own: no lab is touched.)
#[test]
fn a_state_file_no_lab_wrote_is_named_with_the_way_out() {
    if let Some(why) = skip_reason(&[]) {
        eprintln!("skipped: {why}");
        return;
    }
    let run = tempfile::tempdir().unwrap();
    std::fs::create_dir(run.path().join("lab")).unwrap();
    let file = run.path().join("lab").join("lab.json");
    std::fs::write(&file, "garbage{").unwrap();
    for args in [
        &["lab", "down"][..],
        &["lab", "exec", "h1", "--", "true"][..],
    ] {
        let o = Command::new(BIN)
            .args(args)
            .env("IPOIB_RUN_DIR", run.path())
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        let want = format!("{}: not a lab state file (", file.display());
        assert!(e.contains(&want), "{args:?}: {e}");
        assert!(
            e.contains(&format!("remove it (`rm {}`", file.display())),
            "{e}"
        );
    }
}
