//! LIDs assigned and paths resolvable between all hosts of a fat tree.
//! A 64-host fat tree comes up with the SM on host 0; every host gets a distinct LID, and every
//! host asks the SA, with real MADs on QP1 through its SaClient, for the paths from itself to every
//! port (PathRecord GetTable by SGID, IBA 1 §15.2.5.16, answered over RMPP, IBA 1 §13.6). Each
//! record must name the right LIDs, MTU and rate, and its route (walked through the switches' real
//! LFTs) must have the fat tree's hop count: 2 links within a leaf, 4 across the spines.

use ipoib_fabric::hw::mgmt::PortState;
use ipoib_fabric::hw::switch::Switch;
use ipoib_fabric::hw::topology::{End, NodeKind, Topology};
use ipoib_fabric::node::host::Host;
use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
use ipoib_fabric::testing::{at, seed, SeedGuard};
use ipoib_proto::sa::SaClientEvent;
use ipoib_wire::mad::Method;
use ipoib_wire::sa::{pr_mask, PathRecordRepr, SaAttribute, SaMadRepr};
use ipoib_wire::PKey;
use std::collections::BTreeSet;
use std::time::Duration;

/// Links crossed from host `s`'s port to the CA answering `dlid`, following the LFTs the SM wrote
/// into the switch devices.
fn hops_through_lfts(net: &Subnet, s: usize, dlid: u16) -> Option<usize> {
    let topo = net.topology();
    let mut at = End {
        node: net.host(s).topo_node,
        port: 1,
    };
    for hops in 1..16 {
        let (peer, _) = topo.peer(at.node, at.port)?;
        if topo.nodes()[peer.node].kind == NodeKind::Ca {
            let lid = net.lid(net.host_of_topo_node(peer.node)?);
            return (lid == dlid).then_some(hops);
        }
        let sw = net.sim().node::<Switch>(net.built().nodes[peer.node])?;
        let out = *sw.lft().get(usize::from(dlid))?;
        at = End {
            node: peer.node,
            port: out,
        };
    }
    None
}

// IBA 1 §15.2.5.16 PathRecord; IBA 1 §13.6 RMPP; OpenSM osm_lid_mgr.c / minhop routing.
#[test]
fn fat_tree_lids_and_all_paths_through_the_sa() {
    let seed = seed(3);
    let _g = SeedGuard(seed);
    let n = 64;
    let topo = Topology::fat_tree(n).unwrap();
    let mut net = Subnet::build(SubnetOptions::new(topo, seed)).unwrap();
    assert!(net.run_until_joined(at(10)), "every host joined");
    // LIDs: assigned, distinct, Active, as the SM computed them.
    let mut lids = BTreeSet::new();
    for i in 0..n {
        let p = net.host_device(i).hca().port(1).unwrap().clone();
        assert_eq!(p.state, PortState::Active, "host {i} Active");
        assert_ne!(p.lid, 0, "host {i} has a LID");
        assert_eq!(p.sm_lid, net.lid(0), "host {i} knows the SM");
        assert_eq!(
            Some(p.lid),
            net.plan().lid(net.host(i).topo_node, 1),
            "host {i}: the LID the SM assigned"
        );
        assert!(lids.insert(p.lid), "LID {} given twice", p.lid);
    }
    // Every host asks for its paths to every port (SGID only: all destinations).
    let reqs: Vec<_> = (0..n)
        .map(|i| {
            let rec = PathRecordRepr {
                sgid: net.gid(i),
                ..PathRecordRepr::default()
            };
            let m = SaMadRepr::request(
                Method::GetTable,
                0,
                pr_mask::SGID,
                SaAttribute::PathRecord(rec),
            );
            net.sa_request(i, m)
        })
        .collect();
    net.sim_mut().run_for(Duration::from_millis(50));
    let leaf_of = |net: &Subnet, i: usize| {
        let topo = net.topology();
        topo.peer(net.host(i).topo_node, 1).unwrap().0.node
    };
    let mut pairs = 0;
    for (i, req) in reqs.into_iter().enumerate() {
        let events = net.take_sa_events(i);
        let resp = events
            .into_iter()
            .find_map(|e| match e {
                SaClientEvent::Response { id, result } if id == req => Some(result),
                _ => None,
            })
            .unwrap_or_else(|| panic!("host {i}: no PathRecord answer"))
            .unwrap_or_else(|e| panic!("host {i}: {e}"));
        // Every end port: the hosts' and the switches' management ports 0 (IBA 1 §15.2.5.16).
        let switches = net.topology().switches().count();
        assert_eq!(
            resp.records.len(),
            n + switches,
            "host {i}: a path to every end port"
        );
        let mut seen = BTreeSet::new();
        for r in &resp.records {
            let SaAttribute::PathRecord(p) = r else {
                panic!("host {i}: not a PathRecord: {r:?}")
            };
            let Some(j) = (0..n).find(|&j| net.gid(j) == p.dgid) else {
                continue; // a switch's port 0
            };
            assert!(seen.insert(j), "host {i}: one path per destination");
            assert_eq!(p.slid, net.lid(i));
            assert_eq!(p.dlid, net.lid(j), "host {i} -> {j}: DLID");
            assert_eq!(u8::from(p.mtu), 5, "4096-byte MTU on every link");
            assert_eq!(u8::from(p.rate), 7, "40 Gb/s on every link");
            assert_eq!(p.pkey, PKey(0xffff), "default partition");
            assert!(p.reversible);
            let want = if i == j {
                0
            } else if leaf_of(&net, i) == leaf_of(&net, j) {
                2
            } else {
                4
            };
            let hops = if i == j {
                Some(0)
            } else {
                hops_through_lfts(&net, i, p.dlid)
            };
            assert_eq!(hops, Some(want), "host {i} -> {j}: hops through the LFTs");
            pairs += 1;
        }
    }
    assert_eq!(pairs, n * n);
    let sa = net.sa().stats();
    assert_eq!(
        sa.rmpp_done, n as u64,
        "every table went over RMPP and finished"
    );
    assert_eq!(sa.rmpp_failed, 0);
    // The queries really crossed the fabric as QP1 MADs.
    let mads_in = net.host_device(0).counters().mads_in;
    assert!(mads_in >= 2 * n as u64, "SM host handled {mads_in} MADs");
    let _ = net.sim().node::<Host>(net.host(1).node).unwrap();
}
