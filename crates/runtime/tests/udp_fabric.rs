//! `ipoib fabric` and two `ipoib attach` hosts in one process over loopback UDP (no TUN): the
//! hosts attach, get LIDs, join the broadcast group and ping each other through the fabric
//! process's switch and SM (docs/UDP-FABRIC.md); then the fabric restarts on the same port and
//! the hosts attach again and ping again.

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::remote::{FabricOptions, HostLinkConfig};
use ipoib_fabric::node::subnet::SubnetOptions;
use ipoib_runtime::control::{Request, View};
use ipoib_runtime::tun::{OsPort, TunCounters, FRAME_HEADROOM};
use ipoib_runtime::udp_fabric::{AttachOptions, AttachOsPort, AttachProcess, FabricProcess};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

const TURN: Duration = Duration::from_millis(1);
/// How long the test waits for what must happen: long enough for a loaded machine (2 cores
/// shared by parallel tests); only a failing test waits this long.
const LONG: Duration = Duration::from_secs(30);

/// The fabric's silence timeout and a host's `dead_after`: far beyond any stall of the test's one
/// thread on a loaded machine (with 500 ms, a test at nice 19 beside two busy loops saw host 1
/// lose its link, and its carrier, to such a stall). A restarted fabric is found at once: it
/// answers a Keepalive of a session it does not have with the reject UnknownSession.
const SILENCE: Duration = Duration::from_secs(10);

fn fabric(addr: SocketAddr) -> FabricProcess {
    let mut o = FabricOptions::new(SubnetOptions::new(Topology::single_switch(3).unwrap(), 1));
    o.timeout = 2 * SILENCE;
    FabricProcess::bind(addr, o).expect("bind the fabric")
}

fn host(fabric: SocketAddr, i: u8, seed: u64) -> AttachProcess {
    let mut o = AttachOptions::new(fabric);
    o.ipv4 = Some((Ipv4Addr::new(10, 9, 0, i), 24));
    o.ipv6_on = false;
    o.seed = seed;
    o.link = HostLinkConfig {
        retry: Duration::from_millis(50),
        keepalive: Duration::from_millis(100),
        dead_after: SILENCE,
    };
    AttachProcess::connect(&o).expect("attach socket")
}

/// Turns everything until `done` or `limit` of wall time.
fn run(
    f: &mut FabricProcess,
    hosts: &mut [AttachProcess],
    limit: Duration,
    mut done: impl FnMut(&FabricProcess, &[AttachProcess]) -> bool,
) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if done(f, hosts) {
            return true;
        }
        f.turn(TURN).unwrap();
        for h in hosts.iter_mut() {
            h.turn(TURN).unwrap();
        }
    }
    done(f, hosts)
}

fn carrier(hosts: &[AttachProcess]) -> bool {
    hosts.iter().all(|h| h.app().is_some_and(|a| a.carrier()))
}

fn ping(f: &mut FabricProcess, hosts: &mut [AttachProcess], from: usize, to: Ipv4Addr) -> bool {
    let Some(k) = hosts[from]
        .with_app(|a, now| a.ping(now, to.into()).ok())
        .flatten()
    else {
        return false;
    };
    run(f, hosts, LONG, |_, h| {
        h[from]
            .app()
            .and_then(|a| a.ip().pings().get(k).and_then(|p| p.reply_at))
            .is_some()
    })
}

#[test]
fn two_hosts_ping_through_a_fabric_process_and_survive_its_restart() {
    let mut f = fabric("127.0.0.1:0".parse().unwrap());
    let addr = f.local_addr().unwrap();
    let mut hosts = vec![host(addr, 1, 11), host(addr, 2, 22)];
    assert!(
        run(&mut f, &mut hosts, LONG, |_, h| carrier(h)),
        "hosts did not come up: {hosts:?}"
    );
    assert_eq!(f.server().counters().attached, 2);
    assert!(
        ping(&mut f, &mut hosts, 0, Ipv4Addr::new(10, 9, 0, 2)),
        "1 -> 2"
    );
    assert!(
        ping(&mut f, &mut hosts, 1, Ipv4Addr::new(10, 9, 0, 1)),
        "2 -> 1"
    );
    // Different first QPNs from different seeds: a restarted host would not reuse its QPNs.
    let qpns: Vec<u32> = hosts.iter().map(|h| h.app().unwrap().qpn()).collect();
    assert_ne!(qpns[0], qpns[1]);

    // The fabric process restarts on the same port.
    drop(f);
    let restarted = Instant::now();
    let mut f = fabric(addr);
    assert!(
        run(&mut f, &mut hosts, LONG, |f, h| {
            f.server().counters().attached == 2 && carrier(h)
        }),
        "hosts did not come back: {hosts:?}"
    );
    // Found by the fabric's reject UnknownSession, not by `dead_after` of silence.
    assert!(restarted.elapsed() < SILENCE, "{:?}", restarted.elapsed());
    assert!(hosts.iter().all(|h| h.host().link().counters().lost >= 1));
    assert!(
        ping(&mut f, &mut hosts, 0, Ipv4Addr::new(10, 9, 0, 2)),
        "after restart"
    );

    // Detach frees the slot at once.
    hosts[1].detach().unwrap();
    assert!(run(&mut f, &mut hosts[..1], LONG, |f, _| {
        f.server().counters().detached == 1
    }));
}

/// The Internet checksum (RFC 1071).
fn checksum(b: &[u8]) -> u16 {
    let mut sum = 0u32;
    for c in b.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An IPv4 ICMP echo request (RFC 792) from `src` to `dst`.
fn echo_request(src: Ipv4Addr, dst: Ipv4Addr) -> Vec<u8> {
    let mut p = vec![
        0x45, 0, 0, 36, 0, 1, 0x40, 0, 64, 1, 0, 0, // version, IHL, total 36, DF, TTL, ICMP
    ];
    p.extend_from_slice(&src.octets());
    p.extend_from_slice(&dst.octets());
    let c = checksum(&p);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    let mut icmp = vec![
        8, 0, 0, 0, 0x12, 0x34, 0, 1, b'p', b'i', b'n', b'g', 0, 0, 0, 0,
    ];
    let c = checksum(&icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(&icmp);
    p
}

// The operating system's IP over the fabric process: what one host's OS sends comes out at the
// other's OS (external IP layer, the path a TUN device uses).
#[test]
fn external_ip_layers_exchange_packets_through_a_fabric_process() {
    let mut f = fabric("127.0.0.1:0".parse().unwrap());
    let addr = f.local_addr().unwrap();
    let mut hosts: Vec<AttachProcess> = (1..=2u8)
        .map(|i| {
            let mut o = AttachOptions::new(addr);
            o.ipv4 = Some((Ipv4Addr::new(10, 9, 0, i), 24));
            o.ipv6_on = false;
            o.seed = u64::from(i) * 7;
            o.external = true;
            AttachProcess::connect(&o).unwrap()
        })
        .collect();
    let req = echo_request(Ipv4Addr::new(10, 9, 0, 1), Ipv4Addr::new(10, 9, 0, 2));
    // What a TUN device hands over before the host is built (no adapter yet) is dropped and
    // counted (section `attach`, `no_adapter`): a copied packet and one in its own buffer.
    let mut frame = vec![0; FRAME_HEADROOM];
    frame.extend_from_slice(&req);
    AttachOsPort.packet_from_os(hosts[0].emu_mut(), &req);
    let back = AttachOsPort.frame_from_os(hosts[0].emu_mut(), frame.clone());
    assert_eq!(back, Some(frame), "the buffer comes back");
    assert!(run(&mut f, &mut hosts, LONG, |_, h| { carrier(h) }));
    hosts[0].from_os(&req);
    let mut got = Vec::new();
    let end = Instant::now() + LONG;
    while got.is_empty() && Instant::now() < end {
        f.turn(TURN).unwrap();
        for h in hosts.iter_mut() {
            h.turn(TURN).unwrap();
        }
        hosts[1].drain_to_os(|p| got.push(p.to_vec()));
    }
    assert_eq!(
        got,
        vec![req],
        "the echo request reached the other OS unchanged"
    );
    // `ipoib show counters` of the process: without a TUN device no section `tun`; with one,
    // the device's counters (here set by hand: a device needs root, crates/runtime/tests/
    // netns_tun.rs), as `ip -s link` shows a NIC's.
    let counters = Request::new(View::Counters);
    let attach = |h: &AttachProcess, name: &str| {
        let a = h.emu().answer("ib0", &counters).unwrap();
        let s = a.sections.iter().find(|s| s.name == "attach").unwrap();
        s.counters.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    };
    assert_eq!(attach(&hosts[0], "no_adapter"), Some(2));
    assert_eq!(attach(&hosts[1], "no_adapter"), Some(0));
    let sections = |h: &AttachProcess| -> Vec<String> {
        let a = h.emu().answer("ib0", &counters).unwrap();
        a.hosts[0].counters.iter().map(|s| s.name.clone()).collect()
    };
    assert!(!sections(&hosts[1]).contains(&"tun".to_string()));
    let tun = Arc::new(TunCounters::default());
    tun.to_os.store(1, Ordering::Relaxed);
    tun.write_errors.store(2, Ordering::Relaxed);
    hosts[1].emu_mut().set_tun_counters(Arc::clone(&tun));
    assert_eq!(sections(&hosts[1]).last().map(String::as_str), Some("tun"));
    let a = hosts[1].emu().answer("ib0", &counters).unwrap();
    let rows: serde_json::Value = serde_json::from_str(&a.render(View::Counters, true)).unwrap();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["section"] == "tun")
        .expect("a tun row");
    assert_eq!(row["host"], "ib0");
    assert_eq!(row["counters"]["to_os"], 1);
    assert_eq!(row["counters"]["write_errors"], 2);
    assert_eq!(row["counters"]["from_os"], 0);
    // Read when asked: a later count shows.
    tun.to_os.store(5, Ordering::Relaxed);
    let text = hosts[1]
        .emu()
        .answer("ib0", &counters)
        .unwrap()
        .render(View::Counters, false);
    assert!(text.contains("ib0 tun:\n"), "{text}");
    assert!(text.contains("    to_os           5\n"), "{text}");
}

/// Disables (or enables) the switch port facing the slot of `host` in the fabric process, as a
/// SubnSet(PortInfo) PortPhysicalState Disabled (Polling) makes the switch's SMA do
/// (`Tx::set_port_enabled`, IBA 1 §14.2.5.6, §5.6.2.1).
fn set_switch_end(f: &mut FabricProcess, host: &AttachProcess, enabled: bool) {
    use ipoib_fabric::hw::sim::PortRef;
    use ipoib_fabric::hw::switch::Switch;
    let guid = host.host().identity().unwrap().node_guid;
    let s = f.server();
    let i = (0..s.slot_count())
        .find(|&i| s.slot(i).is_some_and(|r| r.node_guid() == guid))
        .unwrap();
    let node = s.built().nodes[s.slot_topo_node(i).unwrap()];
    let port = s.slot(i).unwrap().port();
    let link = s.sim().link_of(PortRef { node, port }).unwrap();
    let end = s.sim().link(link).ends.into_iter().find(|e| e.node != node);
    let end = end.unwrap();
    f.server_mut()
        .sim_mut()
        .with_node::<Switch, _>(end.node, |_, _, tx| tx.set_port_enabled(end.port, enabled))
        .unwrap();
}

/// The HCA port of an attached host: (state, link up).
fn host_port(h: &AttachProcess) -> (ipoib_fabric::hw::mgmt::PortState, bool) {
    let port = h.host().identity().unwrap().port;
    let p = h.host().host().unwrap().hca().port(port).unwrap();
    (p.state, p.phys_up)
}

// docs/UDP-FABRIC.md "PortState Down is the link", over real datagrams: the switch port facing
// host 2 disabled at the fabric, host 2's port goes Down with its link and its interface loses
// carrier (a PortConfig Down); enabled again, the link trains, the SM's sweep brings the port
// Active by PortConfigs, the interface joins again and pings get through both ways.
#[test]
fn a_switch_port_disabled_at_the_fabric_takes_the_hosts_link_down_and_polling_brings_it_back() {
    use ipoib_fabric::hw::mgmt::PortState;
    let mut f = fabric("127.0.0.1:0".parse().unwrap());
    let addr = f.local_addr().unwrap();
    let mut hosts = vec![host(addr, 1, 31), host(addr, 2, 32)];
    assert!(
        run(&mut f, &mut hosts, LONG, |_, h| carrier(h)),
        "hosts did not come up: {hosts:?}"
    );
    set_switch_end(&mut f, &hosts[1], false);
    assert!(
        run(&mut f, &mut hosts, LONG, |_, h| {
            !h[1].app().is_some_and(|a| a.carrier())
        }),
        "host 2 kept its carrier"
    );
    assert!(run(&mut f, &mut hosts, LONG, |_, h| host_port(&h[1])
        == (PortState::Down, false)));
    assert!(hosts[0].app().unwrap().carrier(), "host 1 keeps its own");
    set_switch_end(&mut f, &hosts[1], true);
    assert!(
        run(&mut f, &mut hosts, LONG, |_, h| carrier(h)),
        "host 2 did not come back: {hosts:?}"
    );
    assert_eq!(host_port(&hosts[1]), (PortState::Active, true));
    assert!(
        ping(&mut f, &mut hosts, 0, Ipv4Addr::new(10, 9, 0, 2)),
        "1 -> 2"
    );
    assert!(
        ping(&mut f, &mut hosts, 1, Ipv4Addr::new(10, 9, 0, 1)),
        "2 -> 1"
    );
}
