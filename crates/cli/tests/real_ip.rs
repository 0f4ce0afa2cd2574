//! Linux's IP stack end to end over our IPoIB, as root: 3-host labs (`ipoib lab`) where the
//! programs of each host's network namespace talk over the emulated fabric.
//!
//! - Datagram mode: `ping` over IPv4 and IPv6 between every ordered pair of hosts; each host's
//!   interface resolved its peers by ARP and ND over IB to their 20-byte link-layer addresses
//!   (RFC 4391 §9.1.1), which `ipoib show neigh` lists, while Linux holds no neighbour on the TUN
//!   device; an iperf3 TCP stream over IPv4 and one over IPv6, which `ipoib show counters`
//!   shows at the TUN devices (super-packets cut, runs written coalesced); IP multicast (IPv4
//!   and IPv6) reaches the host whose program joined the group and not the host that did not.
//! - Connected mode (RFC 4755): `ib0` has MTU 65520, an iperf3 TCP stream runs over RC
//!   connections that `ipoib show conns` lists with that MTU.
//! - Partitions: with h3 alone in another IPoIB partition, h1 reaches h2 and not h3.
//! - The subnet across processes: `ipoib fabric` on a loopback UDP port and three `ipoib attach`
//!   processes in namespaces of the test's own; ping over IPv4 and IPv6 between every pair; one
//!   host killed (SIGKILL) and started again comes back with a new QPN and is reached again;
//!   each process's `ipoib show counters` has its TUN device's counters (section `tun`);
//!   SIGTERM ends everything with status 0.
//!
//! Every wait has a timeout; guards stop the lab (`ipoib lab down`), kill the programs they
//! started by PID and delete the namespaces they made however a test ends, and each test checks
//! that nothing is left. One test at a time ([`common::serial`]). Skipped with a message when not
//! root, without /dev/net/tun, ip, ping, iperf3, python3 or ss, or while another lab runs.

mod common;

use common::{
    ipoib, leftovers, run, serial, show_json, show_json_in, skip_reason, Lab, Netns, Reaped,
    Talker, BIN,
};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TOOLS: [&str; 5] = ["ip", "ping", "iperf3", "python3", "ss"];
const HOSTS: [&str; 3] = ["h1", "h2", "h3"];

fn skipped() -> bool {
    match skip_reason(&TOOLS) {
        Some(why) => {
            eprintln!("skipped: {why}");
            true
        }
        None => false,
    }
}

/// `ipoib lab exec HOST -- ARGS` with a timeout: status and standard output.
fn exec(host: &str, args: &[&str], timeout: Duration) -> (std::process::ExitStatus, String) {
    let mut all = vec!["lab", "exec", host, "--"];
    all.extend_from_slice(args);
    ipoib(&all, timeout).unwrap_or_else(|| panic!("{all:?} still ran after {timeout:?}"))
}

/// `ping FAMILY -c 2` from `from` to `to` (by name); panics unless both answers came back.
fn ping(from: &str, to: &str, family: &str, addr: &str) {
    let args = ["ping", family, "-c", "2", "-i", "0.2", "-W", "5", to];
    let (st, out) = exec(from, &args, Duration::from_secs(30));
    assert!(st.success(), "{from}: ping {family} {to}: {st}\n{out}");
    assert!(
        out.contains("2 received"),
        "{from}: ping {family} {to}:\n{out}"
    );
    assert!(out.contains(addr), "{to} resolved to {addr}: {out}");
}

/// An iperf3 TCP stream of 2 s from `client` to `server`'s `addr`: the bytes the server received.
fn iperf3(client: &str, server: &str, addr: &str) -> u64 {
    let _server = Reaped::spawn(
        Command::new(BIN)
            .args([
                "lab", "exec", server, "--", "iperf3", "-s", "-1", "-B", addr,
            ])
            .stdout(Stdio::null()),
    );
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let (_, out) = exec(server, &["ss", "-ltn"], Duration::from_secs(10));
        let listening = if addr.contains(':') {
            format!("[{addr}]:5201")
        } else {
            format!("{addr}:5201")
        };
        if out.contains(&listening) {
            break;
        }
        assert!(
            Instant::now() < end,
            "no iperf3 server on {addr}:5201:\n{out}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let args = [
        "iperf3",
        "-c",
        addr,
        "-t",
        "2",
        "-J",
        "--connect-timeout",
        "5000",
    ];
    let (st, out) = exec(client, &args, Duration::from_secs(40));
    let j: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("iperf3 -J: {e}\n{out}"));
    assert!(
        st.success() && j.get("error").is_none(),
        "iperf3: {st}\n{out}"
    );
    j["end"]["sum_received"]["bytes"]
        .as_u64()
        .unwrap_or_else(|| panic!("no sum_received in\n{out}"))
}

/// `ipoib show --host HOST VIEW --json`.
fn show(host: &str, view: &str) -> Vec<Value> {
    show_json(&["show", "--host", host, view])
}

/// A counter of `ipoib show counters` (section `tx`, `rx`, `interface`, ...); panics when there
/// is no such counter.
fn counter(host: &str, section: &str, name: &str) -> u64 {
    let rows = show(host, "counters");
    rows.iter()
        .find(|r| r["section"] == section)
        .and_then(|r| r["counters"][name].as_u64())
        .unwrap_or_else(|| panic!("{host}: no counter {section} {name} in {rows:?}"))
}

/// `ip -o link show dev ib0` in `host`.
fn link(host: &str) -> String {
    let (st, out) = exec(
        host,
        &["ip", "-o", "link", "show", "dev", "ib0"],
        Duration::from_secs(10),
    );
    assert!(st.success(), "{host}: ip link: {st}");
    out
}

/// Stops the lab with `ipoib lab down` and checks that nothing of it is left.
fn down_and_check(lab: Lab, pids: &[u32]) {
    let (st, out) = ipoib(&["lab", "down"], Duration::from_secs(30)).expect("down within 30 s");
    assert!(st.success(), "lab down: {st} {out}");
    let mut all = pids.to_vec();
    all.push(lab.pid());
    drop(lab);
    assert_eq!(leftovers(HOSTS.len(), &all), Vec::<String>::new());
}

// Receives on 239.1.1.2 and ff12::4242 (port 5002) after joining both on ib0 (IGMP and MLD
// reports, which our interface snoops into IB joins); prints what arrives until its standard
// input closes (leaving the groups earlier would end the delivery).
const RECEIVER: &str = "import select,socket,struct,sys,time
i=socket.if_nametoindex('ib0')
a=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)
a.bind(('',5002))
a.setsockopt(socket.IPPROTO_IP,socket.IP_ADD_MEMBERSHIP,socket.inet_aton('239.1.1.2')+socket.inet_aton('10.0.0.2'))
b=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM)
b.setsockopt(socket.IPPROTO_IPV6,socket.IPV6_V6ONLY,1)
b.bind(('::',5002))
b.setsockopt(socket.IPPROTO_IPV6,socket.IPV6_JOIN_GROUP,socket.inet_pton(socket.AF_INET6,'ff12::4242')+struct.pack('@I',i))
print('joined',flush=True)
end=time.time()+60
while time.time()<end:
    r,_,_=select.select([a,b,sys.stdin],[],[],1)
    if sys.stdin in r and not sys.stdin.read(1): break
    for s in r:
        if s is not sys.stdin: print(s.recv(100).decode(),flush=True)";
// Sends COUNT (its argument) datagrams to each group from h1.
const SENDER: &str = "import socket,sys,time
COUNT=int(sys.argv[1])
i=socket.if_nametoindex('ib0')
a=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)
a.setsockopt(socket.IPPROTO_IP,socket.IP_MULTICAST_IF,socket.inet_aton('10.0.0.1'))
b=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM)
b.setsockopt(socket.IPPROTO_IPV6,socket.IPV6_MULTICAST_IF,i)
for n in range(COUNT):
    a.sendto(b'v4 over the fabric',('239.1.1.2',5002))
    b.sendto(b'v6 over the fabric',('ff12::4242',5002,0,i))
    time.sleep(0.05)";
// Counts the packets to 239.1.1.2 and to ff12::4242 that ib0 receives (a packet socket sees
// them before IP drops a group nobody joined; a TUN device has no link header), until its
// standard input closes; then prints "counts V4 V6 ALL".
const SNIFFER: &str = "import select,socket,sys,time
s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW,socket.htons(3))
s.bind(('ib0',0))
print('ready',flush=True)
g4=socket.inet_aton('239.1.1.2');g6=socket.inet_pton(socket.AF_INET6,'ff12::4242')
n=[0,0,0];end=time.time()+60
while time.time()<end:
    r,_,_=select.select([s,sys.stdin],[],[],1)
    if sys.stdin in r and not sys.stdin.read(1): break
    if s in r:
        p,a=s.recvfrom(70000)
        if a[2]==socket.PACKET_OUTGOING: continue
        n[2]+=1
        if p[0]>>4==4 and p[16:20]==g4: n[0]+=1
        if p[0]>>4==6 and p[24:40]==g6: n[1]+=1
print('counts',*n,flush=True)";

/// `python3 -c SCRIPT ARGS` in `host`.
fn python(host: &str, script: &str, args: &[&str]) -> Talker {
    Talker::spawn(
        Command::new(BIN)
            .args(["lab", "exec", host, "--", "python3", "-c", script])
            .args(args),
    )
}

/// The MGID of ff12::4242 in the default partition (RFC 4391 §4: the group's scope, the IPv6
/// signature 0x601b, the P_Key, the group's low 80 bits). `ipoib show` names it ff02::4242: an
/// MGID does not hold the group's flags (crates/runtime/src/show/mod.rs `ip_group`).
const MGID6: &str = "ff12:601b:ffff::4242";

/// The IP groups and MGIDs `host`'s interface is attached to (`ipoib show mcast`).
fn attached_groups(host: &str) -> Vec<String> {
    show(host, "mcast")
        .iter()
        .filter(|r| r["attached"] == true)
        .flat_map(|r| [r["group"].as_str(), r["mgid"].as_str()])
        .flatten()
        .map(str::to_string)
        .collect()
}

/// Datagrams sent to each group (SENDER).
const COUNT: usize = 10;

/// h2 joins 239.1.1.2 and ff12::4242, h3 joins neither; h1 sends to both. Returns the PIDs of
/// the programs it ran.
fn multicast_reaches_members_only() -> Vec<u32> {
    let mut sniff2 = python("h2", SNIFFER, &[]);
    let mut sniff3 = python("h3", SNIFFER, &[]);
    for s in [&mut sniff2, &mut sniff3] {
        s.wait_for("ready", Duration::from_secs(15))
            .unwrap_or_else(|| panic!("sniffer not ready: {:?}", s.seen));
    }
    let mut rx = python("h2", RECEIVER, &[]);
    rx.wait_for("joined", Duration::from_secs(15))
        .unwrap_or_else(|| panic!("receiver did not join: {:?}", rx.seen));
    // Linux's reports reach the interface, which joins the IB groups (RFC 4391 §5.2).
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let g = attached_groups("h2");
        if g.iter().any(|g| g == "239.1.1.2") && g.iter().any(|g| g == MGID6) {
            break;
        }
        assert!(
            Instant::now() < end,
            "h2 not attached to both groups: {g:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let tx = python("h1", SENDER, &[&COUNT.to_string()]);
    let pids = vec![
        sniff2.proc.pid(),
        sniff3.proc.pid(),
        rx.proc.pid(),
        tx.proc.pid(),
    ];
    tx.finish(Duration::from_secs(20));
    // Every datagram arrives (the sender's send-only join queues the first ones, RFC 4391 §5.2).
    let all = |seen: &[String]| {
        ["v4", "v6"].map(|f| {
            seen.iter()
                .filter(|l| *l == &format!("{f} over the fabric"))
                .count()
        })
    };
    let _ = rx.wait_until(|seen| all(seen) == [COUNT; 2], Duration::from_secs(10));
    let got = rx.finish(Duration::from_secs(10));
    assert_eq!(all(&got), [COUNT; 2], "h2 (v4, v6): {got:?}");
    let counts = |lines: Vec<String>| -> [u64; 3] {
        let l = lines
            .iter()
            .find_map(|l| l.strip_prefix("counts "))
            .unwrap_or_else(|| panic!("sniffer: {lines:?}"))
            .to_string();
        let v: Vec<u64> = l.split(' ').filter_map(|x| x.parse().ok()).collect();
        [v[0], v[1], v[2]]
    };
    let c2 = counts(sniff2.finish(Duration::from_secs(10)));
    let c3 = counts(sniff3.finish(Duration::from_secs(10)));
    // The member's ib0 saw the group's datagrams (the sniffer works); the other host's saw none
    // (the switch forwards a multicast packet to the group's members only, IBA 1 §7.11).
    assert_eq!(
        [c2[0], c2[1]],
        [COUNT as u64; 2],
        "h2's ib0 (v4, v6, all): {c2:?}"
    );
    assert_eq!([c3[0], c3[1]], [0, 0], "h3's ib0 (v4, v6, all): {c3:?}");
    let g3 = attached_groups("h3");
    assert!(
        !g3.iter().any(|g| g == "239.1.1.2" || g == MGID6),
        "h3 attached to {g3:?}"
    );
    pids
}

#[test]
fn datagram_lab_pings_all_pairs_resolves_by_arp_and_nd_carries_tcp_and_multicast() {
    let _one = serial();
    if skipped() {
        return;
    }
    let lab = Lab::start(&["--hosts", "3"]);
    assert_eq!(lab.hosts.len(), 3, "{}", lab.table);
    for h in &lab.hosts {
        assert_eq!(h.mtu, 2044, "{}", lab.table);
    }
    for from in HOSTS {
        for to in HOSTS.iter().filter(|&&t| t != from) {
            let peer = lab.host(to);
            ping(from, to, "-4", &peer.ipv4);
            ping(from, to, "-6", &peer.ipv6);
        }
    }
    // The neighbours are our interfaces', resolved over IB: each host holds every peer's two
    // addresses with the peer's own 20-byte link-layer address (flags, QPN, GID; RFC 4391
    // §9.1.1), which the lab printed for that peer.
    for from in HOSTS {
        let neigh = show(from, "neigh");
        for to in HOSTS.iter().filter(|&&t| t != from) {
            let peer = lab.host(to);
            assert_eq!(peer.lladdr.split(':').count(), 20, "{}", peer.lladdr);
            for ip in [&peer.ipv4, &peer.ipv6] {
                let row = neigh.iter().find(|r| r["dst"] == ip.as_str());
                let lladdr = row.and_then(|r| r["lladdr"].as_str());
                assert_eq!(
                    lladdr,
                    Some(peer.lladdr.as_str()),
                    "{from} -> {ip}: {neigh:?}"
                );
            }
        }
        // Linux itself holds none: a TUN device is ARPHRD_NONE and NOARP (docs/DEPLOYED.md).
        let (st, out) = exec(
            from,
            &["ip", "neigh", "show", "dev", "ib0"],
            Duration::from_secs(10),
        );
        assert!(
            st.success() && out.trim().is_empty(),
            "{from}: ip neigh: {out}"
        );
        let l = link(from);
        assert!(l.contains("NOARP") && l.contains("link/none"), "{l}");
    }
    // On the wire: h1 sent ARP requests and got replies for its two peers, and its ND
    // solicitations were answered (RFC 4391 §9.1, RFC 4861 §7.2).
    for (section, name) in [
        ("tx", "arp_requests"),
        ("rx", "arp_replies"),
        ("tx", "nd_solicits"),
        ("rx", "nd_adverts"),
    ] {
        let n = counter("h1", section, name);
        assert!(n >= 2, "h1 {section} {name}: {n}");
    }

    // Each host's TUN device (section `tun`): its 8 echo requests and 8 replies went through
    // it each way at least; no TCP yet, so no super-packet and no coalesced write.
    for h in HOSTS {
        let tun = |name| counter(h, "tun", name);
        assert!(tun("from_os") >= 16 && tun("to_os") >= 16, "{h}");
        assert!(
            tun("from_os_bytes") >= 16 * 84 && tun("to_os_bytes") >= 16 * 84,
            "{h}"
        );
        for name in ["from_os_gso", "to_os_gso", "offload_errors", "write_errors"] {
            assert_eq!(tun(name), 0, "{h} tun {name}");
        }
    }
    let before = counter("h2", "tun", "to_os");

    let bytes = iperf3("h1", "h2", "10.0.0.2");
    assert!(bytes > 1 << 20, "iperf3 h1 -> h2: {bytes} bytes");
    // Over IPv6 too: h2's TUN device takes runs of its segments as TCPv6 GSO packets
    // (docs/LINUX-DEVICE.md "Offload at the TUN device").
    let bytes = iperf3("h1", "h2", "fd00::2");
    assert!(bytes > 1 << 20, "iperf3 -6 h1 -> h2: {bytes} bytes");
    // The streams show at the devices: h1's kernel gave super-packets (cut, none refused), h2's
    // device took runs of segments in single writes, and the megabytes went through both.
    assert!(counter("h1", "tun", "from_os_gso") > 0);
    assert!(counter("h2", "tun", "to_os_gso") > 0);
    assert!(counter("h2", "tun", "to_os") - before > (2 << 20) / 2044);
    assert!(counter("h1", "tun", "from_os_bytes") > 2 << 20);
    for h in ["h1", "h2"] {
        assert_eq!(counter(h, "tun", "offload_errors"), 0, "{h}");
    }
    let (st, out) = ipoib(
        &["show", "--host", "h2", "counters"],
        Duration::from_secs(10),
    )
    .expect("show within 10 s");
    assert!(
        st.success() && out.contains("h2 tun:\n    from_os "),
        "{out}"
    );

    let pids = multicast_reaches_members_only();
    down_and_check(lab, &pids);
}

#[test]
fn connected_lab_carries_tcp_over_rc_connections_at_mtu_65520() {
    let _one = serial();
    if skipped() {
        return;
    }
    let lab = Lab::start(&["--hosts", "3", "--mode", "connected"]);
    assert!(lab.table.contains("(connected mode)"), "{}", lab.table);
    for h in HOSTS {
        assert_eq!(lab.host(h).mtu, 65520, "{}", lab.table);
        // The link-layer address announces connected mode (RFC 4755 §3.1: the R bit).
        assert!(lab.host(h).lladdr.starts_with("80:"), "{}", lab.table);
        let l = link(h);
        assert!(l.contains("mtu 65520"), "{h}: {l}");
    }
    ping("h1", "h3", "-4", "10.0.0.3");
    ping("h1", "h3", "-6", "fd00::3");
    let bytes = iperf3("h1", "h2", "10.0.0.2");
    assert!(bytes > 1 << 20, "iperf3 h1 -> h2: {bytes} bytes");
    // RFC 4755 §3.3: the connections carry IP packets up to 65520 bytes; h1's to h2 carried
    // the stream, h2 received it.
    let h1 = &lab.host("h1").lladdr;
    let h2 = &lab.host("h2").lladdr;
    let conns = show_json(&["show", "conns"]);
    let sent = conns.iter().any(|c| {
        c["host"] == "h1"
            && c["peer"] == h2.as_str()
            && c["mode"] == "RC"
            && c["state"] == "up"
            && c["mtu"] == 65520
            && c["tx_packets"].as_u64() > Some(100)
    });
    assert!(
        sent,
        "no RC connection h1 -> h2 at MTU 65520 that carried: {conns:?}"
    );
    let received = conns.iter().any(|c| {
        c["host"] == "h2"
            && c["peer"] == h1.as_str()
            && c["mode"] == "RC"
            && c["mtu"] == 65520
            && c["rx_packets"].as_u64() > Some(100)
    });
    assert!(received, "no RC connection of h2 from h1: {conns:?}");
    for c in &conns {
        assert_eq!(c["mtu"], 65520, "{c}");
    }
    down_and_check(lab, &[]);
}

// h3 is alone in partition 0x0010 (listed first, so it is h3's first IPoIB partition, where its
// ib0 runs); h1 and h2 run on the default partition. The port GUID is h3's in the
// single-switch topology (GID fe80::10:5, checked below).
const PARTITIONS: &str = "Apart=0x0010, ipoib : 0x0000000000100005=full ;
Default=0x7fff, ipoib : ALL=full ;
";

#[test]
fn a_host_in_another_partition_is_unreachable() {
    let _one = serial();
    if skipped() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("partitions.conf");
    std::fs::write(&file, PARTITIONS).expect("write partitions.conf");
    let lab = Lab::start(&[
        "--hosts",
        "3",
        "--partitions",
        file.to_str().expect("UTF-8 path"),
    ]);
    assert_eq!(lab.host("h3").gid, "fe80::10:5", "{}", lab.table);
    // The table says which partition each host is in (it had no P_Key column).
    for (h, pkey) in [("h1", "0xffff"), ("h2", "0xffff"), ("h3", "0x8010")] {
        let row = lab.host(h);
        assert_eq!((&*row.pkey, &*row.member), (pkey, "full"), "{}", lab.table);
    }
    ping("h1", "h2", "-4", "10.0.0.2");
    let args = ["ping", "-4", "-c", "2", "-i", "0.2", "-W", "1", "h3"];
    let (st, out) = exec("h1", &args, Duration::from_secs(20));
    assert_eq!(st.code(), Some(1), "ping h3: {out}");
    assert!(out.contains("100% packet loss"), "{out}");
    // Why: h3's interface is attached to its own partition's groups only (the P_Key 0x8010 in
    // their MGIDs, RFC 4391 §4), h1's broadcast group is the default partition's; h1's ARP
    // request never reached h3, and h1 holds no address for 10.0.0.3.
    let groups = |h: &str| -> Vec<String> {
        show(h, "mcast")
            .iter()
            .filter(|r| r["attached"] == true)
            .filter_map(|r| r["mgid"].as_str().map(str::to_string))
            .collect()
    };
    let g1 = groups("h1");
    let g3 = groups("h3");
    assert!(
        g1.iter().any(|m| m == "ff12:401b:ffff::ffff:ffff"),
        "{g1:?}"
    );
    assert!(
        g3.iter().any(|m| m == "ff12:401b:8010::ffff:ffff"),
        "{g3:?}"
    );
    assert!(g3.iter().all(|m| m.contains(":8010:")), "{g3:?}");
    let neigh = show("h1", "neigh");
    let h3 = neigh.iter().find(|r| r["dst"] == "10.0.0.3");
    assert!(
        h3.is_none_or(|r| r["lladdr"].is_null()),
        "h1 resolved 10.0.0.3: {neigh:?}"
    );
    assert!(counter("h1", "tx", "arp_requests") >= 1);
    assert_eq!(counter("h3", "rx", "arp_requests"), 0);
    down_and_check(lab, &[]);
}

/// `ping FAMILY -c 1 -W 1 ADDR` in namespace `ns` until one answer comes back or `timeout`
/// passed: how long it took, if it did.
fn ping_until(ns: &str, family: &str, addr: &str, timeout: Duration) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        let (st, _) = run(
            Command::new("ip").args([
                "netns", "exec", ns, "ping", family, "-c", "1", "-W", "1", addr,
            ]),
            Duration::from_secs(10),
        )?;
        if st.success() {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// The link-layer address the interface of the attach process of `dev` in namespace `ns` holds
/// for `ip`.
fn attach_neighbour(run_dir: &Path, ns: &str, dev: &str, ip: &str) -> Option<String> {
    show_json_in(
        Some(run_dir),
        &["show", "--netns", ns, "--dev", dev, "neigh"],
    )
    .iter()
    .find(|r| r["dst"] == ip)
    .and_then(|r| r["lladdr"].as_str())
    .map(str::to_string)
}

/// `ipoib attach` of host `i` (1-based) into namespace `ns`.
fn attach(run_dir: &Path, fabric: &str, i: usize, ns: &str) -> Talker {
    let mut t = Talker::spawn_stderr(
        Command::new(BIN)
            .env("IPOIB_RUN_DIR", run_dir)
            .args(["attach", "--fabric", fabric, "--dev", &format!("ib{i}")])
            .args(["--netns", ns, "--ip", &format!("10.0.0.{i}/24")])
            .args(["--ip6", &format!("fd00::{i}/64")]),
    );
    // The fabric gives a killed host's slot to a new process only after its silence timeout
    // (3 s): until then it answers "no free slot" and the process tries again.
    let up = format!("ib{i}: carrier up");
    t.wait_for(&up, Duration::from_secs(30))
        .unwrap_or_else(|| panic!("no {up:?}: {:?}", t.seen));
    t
}

// The subnet across processes (docs/UDP-FABRIC.md): `ipoib fabric` on a loopback UDP port and
// three `ipoib attach` processes, each with its TUN device in a network namespace of its own.
#[test]
fn udp_fabric_hosts_ping_all_pairs_and_a_killed_host_comes_back_with_a_new_qpn() {
    let _one = serial();
    if let Some(why) = skip_reason(&["ip", "ping"]) {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let run_dir = dir.path();
    let names: Vec<String> = (1..=3)
        .map(|i| format!("ipoib-e2e{}-{i}", std::process::id()))
        .collect();
    let ns = Netns::add(names.clone());
    let mut fabric = Talker::spawn_stderr(Command::new(BIN).env("IPOIB_RUN_DIR", run_dir).args([
        "fabric",
        "--listen",
        "udp:127.0.0.1:0",
        "--hosts",
        "4",
    ]));
    let l = fabric
        .wait_for("listening on udp:", Duration::from_secs(20))
        .unwrap_or_else(|| panic!("fabric: {:?}", fabric.seen));
    let addr = common::listen_addr(&l);
    let mut hosts: Vec<Talker> = (1..=3)
        .map(|i| attach(run_dir, &addr, i, &names[i - 1]))
        .collect();
    let mut pids = vec![fabric.proc.pid()];
    pids.extend(hosts.iter().map(|h| h.proc.pid()));

    for a in 1..=3 {
        for b in (1..=3).filter(|&b| b != a) {
            for (family, to) in [("-4", format!("10.0.0.{b}")), ("-6", format!("fd00::{b}"))] {
                let args = ["netns", "exec", &names[a - 1], "ping", family, "-c", "2"];
                let (st, out) = run(
                    Command::new("ip")
                        .args(args)
                        .args(["-i", "0.2", "-W", "5", &to]),
                    Duration::from_secs(30),
                )
                .expect("ping within 30 s");
                assert!(
                    st.success() && out.contains("2 received"),
                    "h{a} -> {to}: {out}"
                );
            }
        }
    }

    // Each process's TUN device (`ipoib show counters`, section `tun`): its 8 echo requests and
    // 8 replies each way at least, no TCP so no super-packet or coalesced write; nothing the
    // device gave was dropped for want of an adapter (section `attach`).
    for (i, n) in names.iter().enumerate() {
        let dev = format!("ib{}", i + 1);
        let rows = show_json_in(
            Some(run_dir),
            &["show", "--netns", n, "--dev", &dev, "counters"],
        );
        let get = |section: &str, name: &str| {
            rows.iter()
                .find(|r| r["section"] == section && r["host"] == dev.as_str())
                .or_else(|| rows.iter().find(|r| r["section"] == section))
                .and_then(|r| r["counters"][name].as_u64())
                .unwrap_or_else(|| panic!("{dev}: no {section} {name} in {rows:?}"))
        };
        assert!(
            get("tun", "from_os") >= 16 && get("tun", "to_os") >= 16,
            "{rows:?}"
        );
        for name in ["from_os_gso", "to_os_gso", "offload_errors", "write_errors"] {
            assert_eq!(get("tun", name), 0, "{dev} tun {name}");
        }
        assert_eq!(get("attach", "no_adapter"), 0, "{dev}");
    }

    // Host 3 dies without a word (SIGKILL) and starts again: a new process, a new QP (RFC 4391
    // §9.1.1: the QPN is part of its link-layer address), the same slot and GID.
    let before =
        attach_neighbour(run_dir, &names[0], "ib1", "10.0.0.3").expect("ib1 knows 10.0.0.3");
    let old = hosts.pop().expect("three hosts");
    let pid = nix::unistd::Pid::from_raw(old.proc.pid() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("kill -9");
    drop(old);
    let restarted = Instant::now();
    hosts.push(attach(run_dir, &addr, 3, &names[2]));
    pids.push(hosts[2].proc.pid());
    // IPv4: the new interface's gratuitous ARP reaches the peers.
    for (i, from) in names[..2].iter().enumerate() {
        let t = ping_until(from, "-4", "10.0.0.3", Duration::from_secs(20));
        assert!(
            t.is_some(),
            "h{} never reached the restarted h3 over IPv4",
            i + 1
        );
    }
    let after =
        attach_neighbour(run_dir, &names[0], "ib1", "10.0.0.3").expect("ib1 knows 10.0.0.3");
    // Bytes 1-3 the QPN, 4-19 the GID.
    assert_ne!(before[3..11], after[3..11], "QPN: {before} then {after}");
    assert_eq!(before[12..], after[12..], "GID: {before} then {after}");
    // IPv6: the new interface's unsolicited Neighbor Advertisements (RFC 4861 §7.2.6, Override
    // set) replace the peers' entries for fd00::3 once its DAD passes (§7.2.5); without them the
    // old QPN stayed until neighbour unreachability detection gave up, about 30 s
    // (docs/DEPLOYED.md "What the end-to-end test reads on Linux").
    let t6 = ping_until(&names[0], "-6", "fd00::3", Duration::from_secs(20));
    assert!(t6.is_some(), "h1 never reached the restarted h3 over IPv6");
    eprintln!(
        "restarted h3: reached over IPv4 and IPv6 {:.1} s after its start",
        restarted.elapsed().as_secs_f64()
    );

    // SIGTERM: every process detaches and ends with 0, and removes its control socket.
    for (i, h) in hosts.into_iter().enumerate() {
        let (st, lines) = h.terminate(Duration::from_secs(10));
        assert!(
            st.is_some_and(|s| s.success()),
            "h{}: {st:?} {lines:?}",
            i + 1
        );
    }
    let (st, lines) = fabric.terminate(Duration::from_secs(10));
    assert!(st.is_some_and(|s| s.success()), "fabric: {st:?} {lines:?}");
    drop(ns);
    let mut left = leftovers(0, &pids);
    for n in &names {
        if Path::new(&format!("/run/netns/{n}")).exists() {
            left.push(n.clone());
        }
    }
    let sockets = std::fs::read_dir(run_dir).expect("run dir");
    left.extend(sockets.flatten().map(|e| e.path().display().to_string()));
    assert_eq!(left, Vec::<String>::new());
}
