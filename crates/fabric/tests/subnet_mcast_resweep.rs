//! Multicast forwarding after a re-sweep that renumbers the discovered nodes: our SM numbers the
//! nodes of each discovery in GUID order (`crates/fabric/src/node/sm/discover.rs`), and every CA
//! GUID is below every switch GUID (ibsim's numbering, `crates/fabric/src/hw/topology/gen.rs`),
//! so when a host's cable is pulled every switch moves down one place. After the trap 128 and
//! the sweep it brings (IBA 1 §14.2.5.1), every switch's MulticastForwardingTable must still be
//! what the group's tree needs there (IBA 1 §14.2.5.12, §18.2.4.3.1), so that a broadcast
//! (IPoIB's ARP and ND, draft-ietf-ipoib-ip-over-infiniband-06 §5) reaches every member left.

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::*;
use ipoib_fabric::Config;
use ipoib_wire::Guid;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

/// Two switches: h0 (the SM's host) and x on s1, b and c on s2.
const NET: &str = r#"
Switch 8 "s1"
[1] "h0"[1]
[2] "x"[1]
[3] "s2"[3]

Switch 8 "s2"
[1] "b"[1]
[2] "c"[1]
[3] "s1"[3]

Hca 1 "h0"
[1] "s1"[1]

Hca 1 "x"
[1] "s1"[2]

Hca 1 "b"
[1] "s2"[1]

Hca 1 "c"
[1] "s2"[2]
"#;

fn host(net: &Subnet, name: &str) -> usize {
    (0..net.host_count())
        .find(|&i| net.topology().nodes()[net.host(i).topo_node].name == name)
        .expect("host")
}

/// Per MLID of every SA group, per switch node GUID: the ports the SM's current brain's tree over
/// the members it knows needs there.
fn wanted(net: &Subnet) -> BTreeMap<u16, BTreeMap<Guid, Vec<u8>>> {
    let sm = net.sm().manager().expect("brain");
    let lid_of: BTreeMap<Guid, u16> = sm
        .ca_ports()
        .map(|(lid, e)| (sm.topology().nodes()[e.node].port_guid(e.port), lid))
        .collect();
    let mut out = BTreeMap::new();
    for g in net.sa().groups() {
        let lids: Vec<u16> = g
            .members
            .iter()
            .filter_map(|m| lid_of.get(&Guid(m.0.interface_id())).copied())
            .collect();
        let mut tree = BTreeMap::new();
        for (node, c) in sm.multicast_tree(g.record.mlid, &lids) {
            if let Config::Mft { ports, .. } = c {
                tree.insert(sm.topology().nodes()[node.0].guid, ports);
            }
        }
        out.insert(g.record.mlid, tree);
    }
    out
}

/// Plugs cable `cable` in or out and runs until the SM swept again and its multicast writes
/// landed.
fn resweep(net: &mut Subnet, cable: usize, up: bool) {
    let generation = net.smp_sm().unwrap().generation();
    assert_eq!(net.set_cable(cable, up), Ok(true));
    let deadline = net.sim().now() + Duration::from_secs(2);
    net.run_until_with(deadline, |n| {
        n.smp_sm().unwrap().generation() > generation && n.is_settled()
    });
    assert!(
        net.smp_sm().unwrap().generation() > generation,
        "swept again"
    );
    assert!(net.is_settled());
}

/// Every switch's MFT is the tree's entry there, and empty where the tree does not pass.
fn check_mfts(net: &Subnet, when: &str) {
    let want = wanted(net);
    assert!(!want.is_empty());
    for (mlid, tree) in &want {
        for (_, sw) in net.switches() {
            let has = sw.mft(*mlid).unwrap_or_default();
            let needs = tree.get(&sw.guid()).map_or(&[][..], |p| p.as_slice());
            assert_eq!(has, needs, "{when}: switch {} MLID {mlid:#x}", sw.name());
        }
    }
}

// IBA 1 §14.2.5.1 (trap 128, the SM sweeps again), §14.2.5.12 (the MFT blocks the SM sets).
#[test]
fn every_switch_keeps_its_tree_when_a_host_cable_renumbers_the_switches() {
    let seed = seed(5);
    let _g = SeedGuard(seed);
    let mut opts = options(Topology::parse_net(NET).unwrap(), seed);
    // IPv4 only: the groups are the broadcast group and IPv4's, whose trees all span both
    // switches.
    opts.ipoib.as_mut().unwrap().ipv6 = false;
    let mut net = up(opts, false);
    let (x, b) = (host(&net, "x"), host(&net, "b"));
    assert_eq!(host(&net, "h0"), 0, "h0 runs the SM");
    let xnode = net.host(x).topo_node;
    let cable = net
        .topology()
        .links()
        .iter()
        .position(|l| l.a.node == xnode || l.b.node == xnode)
        .unwrap();
    check_mfts(&net, "up");

    // x's cable out: s1 sends trap 128, the SM sweeps again and finds one CA fewer, so both
    // switches move down one place.
    resweep(&mut net, cable, false);
    check_mfts(&net, "x out");
    // x's cable back in: both switches move up one place again; s1 needs x's port back.
    resweep(&mut net, cable, true);
    let deadline = net.sim().now() + Duration::from_secs(5);
    assert!(net.run_until_joined(deadline), "x joined again");
    check_mfts(&net, "x back");

    // A broadcast from b reaches h0 and x.
    for i in [0, x] {
        net.with_ipoib(i, |a, _| a.ip_mut().listen(IpAddr::V4(Ipv4Addr::BROADCAST)));
    }
    net.with_ipoib(b, |a, _| {
        a.ip_mut()
            .send_udp(4000, IpAddr::V4(Ipv4Addr::BROADCAST), 5000, b"all")
    })
    .unwrap()
    .unwrap();
    let deadline = net.sim().now() + Duration::from_millis(50);
    net.run_until_with(deadline, |n| {
        [0, x]
            .iter()
            .all(|&m| !app(n, m).ip().udp_received().is_empty())
    });
    for m in [0, x] {
        let got = app(&net, m).ip().udp_received();
        assert_eq!(got.len(), 1, "host {m} got the broadcast");
        assert_eq!(got[0].payload, b"all");
    }
}
