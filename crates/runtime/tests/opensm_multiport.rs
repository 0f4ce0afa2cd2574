//! Multi-port HCAs against the real OpenSM on ibsim: on ibsim's own examples with two-port HCAs
//! (`net`, where Hca2 is cabled only on its port 2, and `net.2sw2path4hca2port`, where every
//! HCA cables both ports), and on two nets with ports reachable only through a CA (which does
//! not forward directed-route SMPs, IBA 1 §14.2.2), our subnet manager gives a LID to exactly the
//! CA ports OpenSM gives one to, with the same port GUIDs and node GUIDs (IBA 1 §4.1.1: each CA port its own LID and
//! port GUID, the node GUID shared), every LID distinct, and the SM's port LID 1 in both. OpenSM
//! numbers the other LIDs in its own order (`osm_lid_mgr.c`), so LID values beyond the SM's are
//! not compared. Skips, saying so, only when ibsim or OpenSM is not installed.

mod ibsim_harness;

use ibsim_harness::{Fabric, Setup};
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
use ipoib_fabric::testing::nets::{B2B, ISO, NET, NET_2PORT};
use ipoib_fabric::Instant;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// (port GUID -> (node GUID, LID)) of every CA port with a LID, as our SM configured the HCAs.
/// With `all`, every host must join and every cabled CA port have a LID; without, the ports
/// behind a CA have none (and their hosts do not join).
fn ours(net: &str, all: bool) -> BTreeMap<u64, (u64, u16)> {
    let topo = Topology::parse_net(net).expect("net file");
    let mut subnet = Subnet::build(SubnetOptions::new(topo, 1)).expect("subnet");
    let joined = subnet.run_until_joined(Instant::ZERO + Duration::from_secs(10));
    assert!(joined || !all, "every host joined");
    assert_eq!(subnet.behind_ca().is_empty(), all, "ports behind a CA");
    let mut out = BTreeMap::new();
    for (end, guid, lid) in subnet.cabled_ca_ports() {
        let node_guid = subnet.topology().nodes()[end.node].guid.0;
        if !all && lid == 0 {
            continue;
        }
        assert_ne!(lid, 0, "port {} of node {} has no LID", end.port, end.node);
        assert!(out.insert(guid.0, (node_guid, lid)).is_none());
    }
    out
}

/// The same map from OpenSM's subnet dump, once it lists `cas` Active CA ports.
fn opensm(net: &str, cas: usize) -> Option<BTreeMap<u64, (u64, u16)>> {
    // The first CA runs OpenSM, as ours runs the SM on the first host.
    let sm = net
        .lines()
        .find_map(|l| l.strip_prefix("Hca").and_then(|r| r.split('"').nth(1)))
        .expect("a CA");
    let mut fabric = match Fabric::start(net, None, sm, sm) {
        Ok(Setup::Ready(f)) => f,
        Ok(Setup::Skip(why)) => {
            eprintln!("SKIP: OpenSM multi-port comparison: {why}");
            return None;
        }
        Err(e) => panic!("ibsim/OpenSM failed to start:\n{e}"),
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let ports = fabric
        .wait_ca_ports(cas, deadline)
        .unwrap_or_else(|e| panic!("{e}\n{}", fabric.logs()));
    Some(
        ports
            .into_iter()
            .map(|p| (p.port_guid, (p.node_guid, p.lid)))
            .collect(),
    )
}

fn compare(name: &str, net: &str, want_guids: &[u64]) {
    compare_with(name, net, want_guids, true)
}

/// [`compare`], where `all` says whether every cabled CA port is reached.
fn compare_with(name: &str, net: &str, want_guids: &[u64], all: bool) {
    let ours = ours(net, all);
    let want: BTreeSet<u64> = want_guids.iter().copied().collect();
    assert_eq!(
        ours.keys().copied().collect::<BTreeSet<_>>(),
        want,
        "{name}: our CA ports with a LID"
    );
    let lids: BTreeSet<u16> = ours.values().map(|v| v.1).collect();
    assert_eq!(lids.len(), ours.len(), "{name}: distinct LIDs {ours:x?}");
    let Some(theirs) = opensm(net, want.len()) else {
        return;
    };
    eprintln!("{name}: ours (port GUID: node GUID, LID) {ours:x?}\nOpenSM {theirs:x?}");
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>(),
        "{name}: the CA ports with a LID"
    );
    for (g, (node, _)) in &theirs {
        assert_eq!(ours[g].0, *node, "{name}: node GUID of port {g:#x}");
    }
    let sm_port = want_guids[0];
    assert_eq!(
        (ours[&sm_port].1, theirs[&sm_port].1),
        (1, 1),
        "{name}: the SM's port has LID 1"
    );
    let their_lids: BTreeSet<u16> = theirs.values().map(|v| v.1).collect();
    assert_eq!(their_lids.len(), theirs.len(), "{name}: OpenSM's LIDs");
}

// IBA 1 §4.1.1 (a LID and a port GUID per CA port); docs/IBSIM.md "ibsim" (port GUID = node
// GUID + port number).
#[test]
fn net_example_ports_match_opensm() {
    // Hca1 0x100000 (ports 0x100001, 0x100002), Hca2 0x100003 (port 2: 0x100005).
    compare("net", NET, &[0x10_0001, 0x10_0005]);
}

#[test]
fn two_port_example_ports_match_opensm() {
    compare(
        "net.2sw2path4hca2port",
        NET_2PORT,
        &[0x10_0001, 0x10_0002, 0x10_0004, 0x10_0005],
    );
}

// IBA 1 §14.2.2: a CA does not forward directed-route SMPs, so neither OpenSM nor our SM reaches
// Hca2's port 1 (behind Hca2 itself) or Switch2.
#[test]
fn port_behind_a_ca_matches_opensm() {
    // H1 0x100000 (port 0x100001), H2 0x100002 (port 2: 0x100004).
    compare_with("iso", ISO, &[0x10_0001, 0x10_0004], false);
}

// IBA 1 §14.2.2: Hca3, cabled back to back to Hca2's port 1, is not reached, nor is that port.
#[test]
fn ca_back_to_back_to_another_host_matches_opensm() {
    compare_with("b2b", B2B, &[0x10_0001, 0x10_0004], false);
}
