use super::*;
use crate::hw::link::LinkParams;
use crate::hw::mgmt::{PortConfig, PortState};
use crate::hw::sim::{Device, Simulator, Tx};
use crate::hw::switch::tests::ud;
use crate::hw::switch::{Switch, SwitchDropReason, LFT_DROP};
use crate::hw::topology::{build, Built, TopoNode};
use ipoib_proto::time::Instant;
use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// A stand-in channel adapter: records the configuration it gets and every packet it receives.
#[derive(Debug, Default)]
struct Host {
    config: Vec<PortConfig>,
    got: Vec<(u8, Vec<u8>)>,
}

impl Device for Host {
    fn receive(&mut self, _now: Instant, port: u8, packet: Vec<u8>, _tx: &mut Tx) {
        self.got.push((port, packet));
    }
    fn handle_timeout(&mut self, _now: Instant, _tx: &mut Tx) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn configure(&mut self, _now: Instant, config: Config, _tx: &mut Tx) {
        if let Config::Port(p) = config {
            self.config.push(p);
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

fn host(_: usize, _: &TopoNode, _: ipoib_proto::rng::Rng) -> Box<dyn Device> {
    Box::new(Host::default())
}

/// Builds `topo` with stand-in hosts, computes the SM with its port on the first CA port, and
/// delivers the bring-up configuration.
fn up(topo: Topology) -> (Simulator, Built, SubnetManager) {
    let mut sim = Simulator::new(1);
    let built = build(&topo, &mut sim, LinkParams::default(), host);
    let sm_port = topo.first_ca_port().unwrap();
    let sm = SubnetManager::new(topo, built.nodes.clone(), sm_port, SmOptions::default()).unwrap();
    let writes = sm.bring_up();
    let from = built.nodes[sm_port.node];
    sim.with_node::<Host, _>(from, |_, _, tx| {
        for (id, c) in writes {
            tx.configure(id, c);
        }
    });
    sim.run_until_idle(u64::MAX);
    (sim, built, sm)
}

/// Every CA port and switch has a unique LID; every switch's LFT routes every LID; SubnetModel
/// paths exist between the sampled CA pairs with the minimal hop count `hops(a, b)`.
fn check_subnet(sm: &SubnetManager, step: usize, hops: impl Fn(End, End) -> u8) {
    let topo = sm.topology();
    let mut lids = BTreeSet::new();
    for n in 0..topo.nodes().len() {
        let ports: Vec<u8> = match topo.nodes()[n].kind {
            NodeKind::Switch => vec![0],
            NodeKind::Ca => (1..=topo.nodes()[n].ports)
                .filter(|&p| topo.peer(n, p).is_some())
                .collect(),
        };
        for p in ports {
            let lid = sm
                .lid(n, p)
                .expect("every cabled port and switch has a LID");
            assert!(lids.insert(lid), "LID {lid} given twice");
            assert_eq!(sm.owner(lid), Some(End { node: n, port: p }));
        }
    }
    assert_eq!(sm.sm_lid(), 1);
    let cas: Vec<(u16, End)> = sm.ca_ports().collect();
    for s in topo.switches() {
        let lft = sm.lft(s).unwrap();
        for &lid in &lids {
            assert_ne!(
                lft[usize::from(lid)],
                LFT_DROP,
                "switch {s} has no route to {lid}"
            );
        }
    }
    let model = sm.subnet_model();
    for (i, &(a, ea)) in cas.iter().enumerate().step_by(step) {
        for &(b, eb) in cas.iter().skip(i % step).step_by(step) {
            let p = model
                .path(a, b)
                .unwrap_or_else(|| panic!("no path {a} -> {b}"));
            assert_eq!(p.hops, hops(ea, eb), "{a} -> {b}");
        }
    }
}

#[test]
fn single_switch_with_8_hosts_comes_up() {
    let (sim, built, sm) = up(Topology::single_switch(8).unwrap());
    check_subnet(&sm, 1, |a, b| if a == b { 0 } else { 2 });
    // Every host got its LID, the SM LID and Active through the simulator.
    for h in 0..8 {
        let c = &sim.node::<Host>(built.nodes[h]).unwrap().config;
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].lid, sm.lid(h, 1).unwrap());
        assert_eq!(c[0].sm_lid, 1);
        assert_eq!(c[0].state, PortState::Active);
        assert_eq!(c[0].subnet_prefix, ipoib_wire::Gid::DEFAULT_SUBNET_PREFIX);
        assert_eq!(c[0].pkeys, vec![PKey(0xffff)]);
    }
    let sw = sim.node::<Switch>(built.nodes[8]).unwrap();
    assert_eq!(sw.lid(), sm.lid(8, 0).unwrap());
    assert_eq!(sw.lft(), sm.lft(8).unwrap());
    assert_eq!(sw.port_state(3), Some(PortState::Active));
}

/// Fat-tree hop count: 0 to itself, 2 on the same leaf, 4 across the spines.
fn fat_hops(topo: &Topology) -> impl Fn(End, End) -> u8 + '_ {
    move |a, b| {
        if a == b {
            0
        } else if topo.peer(a.node, a.port).unwrap().0.node
            == topo.peer(b.node, b.port).unwrap().0.node
        {
            2
        } else {
            4
        }
    }
}

#[test]
fn fat_tree_64_routes_every_pair_minimally_and_balances() {
    let topo = Topology::fat_tree(64).unwrap();
    let mut sim = Simulator::new(1);
    let built = build(&topo, &mut sim, LinkParams::default(), host);
    let sm = SubnetManager::new(
        topo.clone(),
        built.nodes,
        End { node: 0, port: 1 },
        SmOptions::default(),
    )
    .unwrap();
    check_subnet(&sm, 1, fat_hops(&topo));
    // Deterministic: the same topology gives the same writes.
    let again = SubnetManager::new(
        topo.clone(),
        (0..topo.nodes().len()).map(NodeId).collect(),
        End { node: 0, port: 1 },
        SmOptions::default(),
    )
    .unwrap();
    assert_eq!(again.bring_up(), sm.bring_up());
    assert_eq!(again.subnet_model(), sm.subnet_model());
    // Leaf 0's routes to the hosts of the other leaves spread evenly over its 18 uplinks.
    let leaf0 = topo.find("leaf0").unwrap();
    let lft = sm.lft(leaf0).unwrap();
    let mut per_port = [0u32; 37];
    for (lid, e) in sm.ca_ports() {
        if topo.peer(e.node, e.port).unwrap().0.node != leaf0 {
            per_port[usize::from(lft[usize::from(lid)])] += 1;
        }
    }
    let up = &per_port[19..=36];
    assert_eq!(up.iter().sum::<u32>(), 64 - 18);
    assert!(
        up.iter().max().unwrap() - up.iter().min().unwrap() <= 1,
        "{up:?}"
    );
}

#[test]
fn fat_tree_648_comes_up() {
    let topo = Topology::fat_tree(648).unwrap();
    let mut sim = Simulator::new(1);
    let built = build(&topo, &mut sim, LinkParams::default(), host);
    let sm = SubnetManager::new(
        topo.clone(),
        built.nodes,
        End { node: 0, port: 1 },
        SmOptions::default(),
    )
    .unwrap();
    assert_eq!(sm.max_lid() as usize, 648 + 36 + 18);
    check_subnet(&sm, 11, fat_hops(&topo));
    assert_eq!(sm.bring_up().len(), 54 * (1 + 36 + 1) + 648);
}

#[test]
fn unicast_and_multicast_cross_the_fat_tree() {
    let (mut sim, built, sm) = up(Topology::fat_tree(64).unwrap());
    let lid = |h: usize| sm.lid(h, 1).unwrap();
    // Unicast host 0 -> host 63 (leaf 0 -> spine -> leaf 3).
    let p = ud(lid(0), lid(63), 100, PKey(0xffff));
    sim.with_node::<Host, _>(built.nodes[0], |_, _, tx| tx.send(1, p.clone()));
    sim.run_until_idle(1000);
    assert_eq!(sim.node::<Host>(built.nodes[63]).unwrap().got, vec![(1, p)]);
    // Multicast: members 1, 5, 20, 40, 63 (three leaves); host 5 sends.
    let mlid = 0xc005;
    let members = [1, 5, 20, 40, 63];
    let member_lids: Vec<u16> = members.iter().map(|&h| lid(h)).collect();
    let writes = sm.multicast_tree(mlid, &member_lids);
    assert!(writes.len() >= 4, "three leaves and a spine: {writes:?}");
    sim.with_node::<Host, _>(built.nodes[0], |_, _, tx| {
        for (id, c) in writes {
            tx.configure(id, c);
        }
    });
    sim.run_until_idle(10_000);
    let m = ud(lid(5), mlid, 64, PKey(0xffff));
    sim.with_node::<Host, _>(built.nodes[5], |_, _, tx| tx.send(1, m.clone()));
    sim.run_until_idle(10_000);
    for h in 0..64 {
        let got = &sim.node::<Host>(built.nodes[h]).unwrap().got;
        let copies = got.iter().filter(|(_, p)| *p == m).count();
        let want = usize::from(members.contains(&h) && h != 5);
        assert_eq!(copies, want, "host {h}");
    }
    // Unknown LID: dropped and counted at host 0's leaf.
    let leaf0 = built.nodes[sm.topology().find("leaf0").unwrap()];
    let bad = ud(lid(0), sm.max_lid() + 5, 16, PKey(0xffff));
    sim.with_node::<Host, _>(built.nodes[0], |_, _, tx| tx.send(1, bad));
    // Oversized: 5000 bytes of payload over 4096-MTU links, past the leaf port's MTUCap: a
    // malformed packet where it arrives (IBA 1 §7.7; `crate::hw::sma::rcv_malformed`).
    let big = ud(lid(0), lid(63), 5000, PKey(0xffff));
    sim.with_node::<Host, _>(built.nodes[0], |_, _, tx| tx.send(1, big));
    sim.run_until_idle(1000);
    let st = sim.node::<Switch>(leaf0).unwrap().stats();
    assert_eq!(st.dropped(SwitchDropReason::UnknownLid), 1);
    assert_eq!(st.dropped(SwitchDropReason::Malformed), 1);
    assert_eq!(sim.node::<Host>(built.nodes[63]).unwrap().got.len(), 2);
}

#[test]
fn multicast_tree_is_loop_free_and_updates() {
    let topo = Topology::fat_tree(100).unwrap();
    let mut sim = Simulator::new(1);
    let built = build(&topo, &mut sim, LinkParams::default(), host);
    let sm = SubnetManager::new(
        topo.clone(),
        built.nodes.clone(),
        End { node: 0, port: 1 },
        SmOptions::default(),
    )
    .unwrap();
    let lids: Vec<u16> = (0..100).map(|h| sm.lid(h, 1).unwrap()).collect();
    let all = sm.multicast_tree(0xc000, &lids);
    // Every leaf plus one spine (the root); edges = switches - 1 (a tree).
    assert_eq!(all.len(), 6 + 1);
    let spine_ids: BTreeSet<_> = topo
        .switches()
        .filter(|&s| topo.nodes()[s].name.starts_with("spine"))
        .map(|s| built.nodes[s])
        .collect();
    let root: Vec<_> = all
        .iter()
        .filter(|(id, _)| spine_ids.contains(id))
        .collect();
    assert_eq!(root.len(), 1);
    let inter_switch: usize = all
        .iter()
        .map(|(id, c)| match c {
            Config::Mft { ports, .. } => {
                let n = built.nodes.iter().position(|x| x == id).unwrap();
                ports
                    .iter()
                    .filter(|&&p| {
                        topo.nodes()[topo.peer(n, p).unwrap().0.node].kind == NodeKind::Switch
                    })
                    .count()
            }
            _ => 0,
        })
        .sum();
    assert_eq!(inter_switch, 2 * (all.len() - 1));
    // Another MLID may take another spine.
    let other = sm.multicast_tree(0xc001, &lids);
    assert_ne!(all, other);
    // Shrinking to one leaf: that leaf only; the rest get cleared.
    let small = sm.multicast_tree(0xc000, &lids[..3]);
    assert_eq!(small.len(), 1);
    let ch = mft_changes(&all, &small);
    assert_eq!(ch.len(), 7);
    assert_eq!(
        ch.iter()
            .filter(|(_, c)| matches!(c, Config::Mft { ports, .. } if ports.is_empty()))
            .count(),
        6
    );
    assert!(sm.multicast_tree(0x1234, &lids).is_empty());
}

#[test]
fn partitions_give_pkey_tables() {
    let topo = Topology::single_switch(4).unwrap();
    let g2 = topo.nodes()[2].port_guid(1);
    let g3 = topo.nodes()[3].port_guid(1);
    let opts = SmOptions {
        partitions: vec![
            PartitionSpec::default_partition(),
            PartitionSpec {
                pkey: PKey(0x0012),
                members: PartitionMembers::Ports(vec![
                    (g2, Membership::Full),
                    (g3, Membership::Limited),
                ]),
                switches: Vec::new(),
            },
        ],
        ..SmOptions::default()
    };
    let nodes = (0..5).map(NodeId).collect();
    let sm = SubnetManager::new(topo, nodes, End { node: 0, port: 1 }, opts).unwrap();
    assert_eq!(
        sm.pkey_table(End { node: 0, port: 1 }),
        vec![PKey(0xffff), PKey(0x8012)]
    );
    assert_eq!(sm.pkey_table(End { node: 1, port: 1 }), vec![PKey(0xffff)]);
    assert_eq!(
        sm.pkey_table(End { node: 2, port: 1 }),
        vec![PKey(0xffff), PKey(0x8012)]
    );
    assert_eq!(
        sm.pkey_table(End { node: 3, port: 1 }),
        vec![PKey(0xffff), PKey(0x0012)]
    );
    let model = sm.subnet_model();
    assert_eq!(model.ports[3].pkeys, vec![PKey(0xffff), PKey(0x0012)]);
}

// OpenSM pkey_mgr_update_port: "ERR 0512: Failed to set PKey ... because Pkey table is full"
// (measured on ibsim, docs/OPENSM-NOTES.md): a port gets at most PartitionCap P_Keys.
#[test]
fn pkey_tables_stop_at_the_partition_cap() {
    let topo = Topology::single_switch(2).unwrap();
    let g1 = topo.nodes()[1].port_guid(1);
    let mut partitions = vec![PartitionSpec::default_partition()];
    partitions.extend((1..=200u16).map(|k| PartitionSpec {
        pkey: PKey(k),
        members: PartitionMembers::Ports(vec![(g1, Membership::Full)]),
        switches: Vec::new(),
    }));
    let opts = SmOptions {
        partitions,
        ..SmOptions::default()
    };
    let nodes = (0..3).map(NodeId).collect();
    let sm = SubnetManager::new(topo, nodes, End { node: 0, port: 1 }, opts).unwrap();
    let cap = usize::from(crate::hw::hca::PKEY_TABLE_SIZE);
    for node in [0, 1] {
        let e = End { node, port: 1 };
        let t = sm.pkey_table(e);
        assert_eq!(t.len(), cap);
        assert_eq!(t[0], PKey(0xffff), "the default partition first");
        assert_eq!(t[cap - 1], PKey(0x8000 | (cap as u16 - 1)));
        let out = sm.pkeys_left_out(e);
        assert_eq!(out.len(), 201 - cap);
        assert_eq!(out[0], PKey(0x8000 | cap as u16));
    }
    let e = End { node: 2, port: 1 };
    assert_eq!(sm.pkey_table(e), vec![PKey(0xffff)]);
    assert!(sm.pkeys_left_out(e).is_empty());
    assert_eq!(sm.subnet_model().ports[1].pkeys.len(), cap);
}

/// `n` 4-port switches in a line (`S0`..), host `H0` on the first and `H1` on the last; hosts are
/// nodes 0 and 1, so the SM runs on `H0`.
fn chain(n: usize) -> Topology {
    let mut t = Topology::new();
    let h0 = t.add_node(NodeKind::Ca, "H0", Guid(0x10_0000), 1);
    let h1 = t.add_node(NodeKind::Ca, "H1", Guid(0x10_0002), 1);
    let sw: Vec<usize> = (0..n)
        .map(|i| {
            t.add_node(
                NodeKind::Switch,
                format!("S{i}"),
                Guid(0x20_0000 + i as u64),
                4,
            )
        })
        .collect();
    let e = |node, port| End { node, port };
    t.connect(e(h0, 1), e(sw[0], 1), None, None).unwrap();
    t.connect(e(h1, 1), e(sw[n - 1], 1), None, None).unwrap();
    for w in sw.windows(2) {
        t.connect(e(w[0], 3), e(w[1], 2), None, None).unwrap();
    }
    t
}

// IBA 1 §14.2.2: a directed route has at most 63 hops; OpenSM 3.3.23 on ibsim configures the far
// host of a 62-switch chain (63 hops) and not of a 63-switch one (docs/OPENSM-NOTES.md).
#[test]
fn nodes_beyond_63_hops_are_not_reached() {
    let (sim, built, sm) = up(chain(62));
    assert!(sm.unreached().is_empty());
    assert_eq!(sm.hops_from_sm(1), Some(MAX_DR_HOPS));
    assert!(sm.lid(1, 1).is_some());
    assert_eq!(
        sim.node::<Host>(built.nodes[1]).unwrap().config.len(),
        1,
        "H1 configured"
    );
    let model = sm.subnet_model();
    let (a, b) = (sm.lid(0, 1).unwrap(), sm.lid(1, 1).unwrap());
    assert_eq!(model.path(a, b).map(|p| p.hops), Some(63));

    let (sim, built, sm) = up(chain(64));
    let s63 = 2 + 63;
    assert_eq!(sm.unreached(), vec![(1, 65), (s63, 64)]);
    assert_eq!(sm.lid(1, 1), None);
    assert_eq!(sm.lid(s63, 0), None);
    assert!(
        sm.lid(s63 - 1, 0).is_some(),
        "S62, 63 hops away, is reached"
    );
    assert!(sim.node::<Host>(built.nodes[1]).unwrap().config.is_empty());
    assert!(
        sim.node::<Switch>(built.nodes[s63])
            .unwrap()
            .lft()
            .iter()
            .all(|&p| p == LFT_DROP),
        "S63 is never programmed"
    );
    // The reached switches route among the reached LIDs only, and nothing through S63.
    let s62 = sm.lft(s63 - 1).unwrap();
    assert!(s62.iter().all(|&p| p != 3), "{s62:?}");
}

// IBA 1 §14.2.2: only switches forward directed-route SMPs, so a CA is no shortcut. A dual-homed
// CA D joins S0 (port 1) to S63 (port 2) of a 64-switch chain: over D, S63 would be 3 cables from
// the SM, but its directed route runs along the chain, 64 hops, beyond reach. D's port 1 is reached,
// its port 2 (65 hops) is not.
#[test]
fn hops_count_directed_routes_over_switches_only() {
    let mut t = chain(64);
    let d = t.add_node(NodeKind::Ca, "D", Guid(0x30_0000), 2);
    let (s0, s63) = (2, 2 + 63);
    let e = |node, port| End { node, port };
    t.connect(e(d, 1), e(s0, 4), None, None).unwrap();
    t.connect(e(d, 2), e(s63, 4), None, None).unwrap();
    let without_routes = unreachable(&t, t.first_ca_port().unwrap());
    let (_, _, sm) = up(t);
    assert_eq!(without_routes, (sm.unreached(), sm.behind_ca().to_vec()));
    assert_eq!(sm.hops_from_sm(s63), Some(64));
    assert_eq!(sm.hops_from_sm(d), Some(2));
    assert_eq!(sm.unreached(), vec![(1, 65), (s63, 64)]);
    assert!(sm.lid(d, 1).is_some());
    assert_eq!((sm.lid(d, 2), sm.lid(s63, 0)), (None, None));
    assert!(sm.behind_ca().is_empty(), "everything has a directed route");
}

// IBA 1 §14.2.2, §14.2.5.6: a CA port is reached only on a path that ends at it; what lies behind
// another CA gets no LID. The LIDs of the reached ports keep the walk's order.
#[test]
fn ports_behind_a_ca_get_no_lid() {
    let mut t = Topology::new();
    let h1 = t.add_node(NodeKind::Ca, "H1", Guid(0x10_0000), 1);
    let h2 = t.add_node(NodeKind::Ca, "H2", Guid(0x10_0002), 2);
    let s1 = t.add_node(NodeKind::Switch, "S1", Guid(0x20_0000), 4);
    let s2 = t.add_node(NodeKind::Switch, "S2", Guid(0x20_0001), 4);
    let h3 = t.add_node(NodeKind::Ca, "H3", Guid(0x10_0005), 1);
    let e = |node, port| End { node, port };
    t.connect(e(h1, 1), e(s1, 1), None, None).unwrap();
    t.connect(e(h2, 2), e(s1, 2), None, None).unwrap();
    t.connect(e(h2, 1), e(s2, 1), None, None).unwrap();
    t.connect(e(s2, 2), e(h3, 1), None, None).unwrap();
    let without_routes = unreachable(&t, t.first_ca_port().unwrap());
    assert_eq!(
        unreachable(&t, e(s1, 1)),
        (Vec::new(), Vec::new()),
        "no CA port"
    );
    let (sim, built, sm) = up(t);
    assert_eq!(without_routes, (sm.unreached(), sm.behind_ca().to_vec()));
    assert_eq!(
        (sm.lid(h1, 1), sm.lid(s1, 0), sm.lid(h2, 2)),
        (Some(1), Some(2), Some(3))
    );
    assert_eq!(
        (sm.lid(h2, 1), sm.lid(s2, 0), sm.lid(h3, 1)),
        (None, None, None)
    );
    assert_eq!(sm.behind_ca(), &[e(h2, 1), e(s2, 0), e(h3, 1)]);
    assert_eq!((sm.hops_from_sm(h2), sm.hops_from_sm(s2)), (Some(2), None));
    assert!(sm.unreached().is_empty());
    assert_eq!(sm.max_lid(), 3);
    let h2_config = &sim.node::<Host>(built.nodes[h2]).unwrap().config;
    assert_eq!(
        h2_config
            .iter()
            .map(|c| (c.port, c.lid))
            .collect::<Vec<_>>(),
        vec![(2, 3)],
        "only port 2 configured"
    );
    assert!(sim.node::<Host>(built.nodes[h3]).unwrap().config.is_empty());
}

#[test]
fn bad_sm_port_and_node_count_are_errors() {
    let topo = Topology::single_switch(2).unwrap();
    let nodes: Vec<NodeId> = (0..3).map(NodeId).collect();
    assert!(matches!(
        SubnetManager::new(
            topo.clone(),
            nodes.clone(),
            End { node: 2, port: 1 },
            SmOptions::default()
        ),
        Err(SmError::BadSmPort(_))
    ));
    assert!(SubnetManager::new(
        topo.clone(),
        nodes[..2].to_vec(),
        End { node: 0, port: 1 },
        SmOptions::default()
    )
    .is_err());
    assert!(
        SubnetManager::new(topo, nodes, End { node: 0, port: 1 }, SmOptions::default()).is_ok()
    );
}

/// Each ibsim example (the embedded one everywhere, Debian's when installed) loads, builds, comes
/// up, and carries a packet between the two HCAs furthest apart.
#[test]
fn ibsim_examples_load_build_and_come_up() {
    let mut topos = vec![(
        "embedded net.2sw2path4hca2port".to_string(),
        Topology::parse_net(crate::hw::topology::tests::NET_2SW2PATH4HCA2PORT).unwrap(),
    )];
    let dir = std::path::Path::new("/usr/share/doc/ibsim-utils/net-examples");
    if dir.is_dir() {
        for n in [
            "net",
            "net.1",
            "net.2sw2path",
            "net.2sw2path4hca",
            "net.2sw2path4hca2port",
        ] {
            topos.push((n.to_string(), Topology::load_net(dir.join(n)).unwrap()));
        }
    } else {
        eprintln!("skipped the Debian files: {} missing", dir.display());
    }
    for (name, topo) in topos {
        let (mut sim, built, sm) = up(topo);
        check_subnet(&sm, 1, |a, b| {
            // Minimal hops by a breadth-first walk over the topology (CAs do not forward).
            let t = sm.topology();
            if a == b {
                return 0;
            }
            let mut seen = vec![false; t.nodes().len()];
            let mut q =
                std::collections::VecDeque::from([(t.peer(a.node, a.port).unwrap().0, 1u8)]);
            while let Some((e, d)) = q.pop_front() {
                if e == b {
                    return d;
                }
                if t.nodes()[e.node].kind == NodeKind::Ca
                    || std::mem::replace(&mut seen[e.node], true)
                {
                    continue;
                }
                for p in 1..=t.nodes()[e.node].ports {
                    if let Some((n, _)) = t.peer(e.node, p) {
                        q.push_back((n, d + 1));
                    }
                }
            }
            panic!("{name}: no path");
        });
        let cas: Vec<(u16, End)> = sm.ca_ports().collect();
        let (a, ea) = cas[0];
        let (b, eb) = *cas.last().unwrap();
        let p = ud(a, b, 32, PKey(0xffff));
        sim.with_node::<Host, _>(built.nodes[ea.node], |_, _, tx| tx.send(ea.port, p.clone()));
        sim.run_for(Duration::from_millis(1));
        let got = &sim.node::<Host>(built.nodes[eb.node]).unwrap().got;
        assert_eq!(got, &vec![(eb.port, p)], "{name}");
    }
}

/// h0 (the SM) on s0; s0 cabled to s1 and s2, s1 to s2; h1 on s1, h2 on s2; optionally without
/// the cable s0-s1, without h1's cable, with h3 on s2.
fn triangle(s0_s1: bool, h1: bool, h3: bool) -> Topology {
    let mut t = Topology::new();
    let h: Vec<usize> = (0..4)
        .map(|i| t.add_node(NodeKind::Ca, format!("h{i}"), Guid(0x100 + 2 * i), 1))
        .collect();
    let s: Vec<usize> = (0..3)
        .map(|i| t.add_node(NodeKind::Switch, format!("s{i}"), Guid(0x200 + i), 4))
        .collect();
    let e = |node, port| End { node, port };
    t.connect(e(h[0], 1), e(s[0], 1), None, None).unwrap();
    if s0_s1 {
        t.connect(e(s[0], 2), e(s[1], 1), None, None).unwrap();
    }
    t.connect(e(s[0], 3), e(s[2], 1), None, None).unwrap();
    t.connect(e(s[1], 2), e(s[2], 2), None, None).unwrap();
    if h1 {
        t.connect(e(h[1], 1), e(s[1], 3), None, None).unwrap();
    }
    t.connect(e(h[2], 1), e(s[2], 3), None, None).unwrap();
    if h3 {
        t.connect(e(h[3], 1), e(s[2], 4), None, None).unwrap();
    }
    t
}

/// LIDs of h0..h3 (port 1) and s0..s2 (0: none).
fn lids_of(sm: &SubnetManager) -> Vec<u16> {
    (0..7)
        .map(|n| sm.lid(n, if n < 4 { 1 } else { 0 }).unwrap_or(0))
        .collect()
}

// OpenSM's guid2lid (`osm_lid_mgr.c`): a port in the table keeps its LID whatever order the walk
// meets it in; new ports get the lowest LIDs the table does not hold (an absent port's stays
// reserved); without a table the walk's order decides.
#[test]
fn known_ports_keep_their_lids_when_the_walk_order_changes() {
    let sm_port = End { node: 0, port: 1 };
    let brain = |t: Topology, known: &BTreeMap<Guid, u16>| {
        let n = t.nodes().len();
        SubnetManager::with_lids(
            t,
            (0..n).map(NodeId).collect(),
            sm_port,
            SmOptions::default(),
            known,
        )
        .unwrap()
    };
    let none = BTreeMap::new();
    let first = brain(triangle(true, true, false), &none);
    // Walk: h0, s0, s1, s2, h1, h2.
    assert_eq!(lids_of(&first), vec![1, 5, 6, 0, 2, 3, 4]);
    let table = first.port_lids();
    assert_eq!(table.len(), 6);
    assert_eq!(
        table.get(&Guid(0x101)),
        Some(&1),
        "h0 port 1 by its port GUID"
    );
    assert_eq!(table.get(&Guid(0x201)), Some(&3), "s1 by its node GUID");
    // Without the cable s0-s1 the walk meets s2 before s1, and h2 before h1.
    assert_eq!(
        lids_of(&brain(triangle(false, true, false), &none)),
        vec![1, 6, 5, 0, 2, 4, 3]
    );
    assert_eq!(
        lids_of(&brain(triangle(false, true, false), &table)),
        lids_of(&first)
    );
    // h1 gone and h3 new: h3 gets LID 7, not h1's 5.
    let next = brain(triangle(false, false, true), &table);
    assert_eq!(lids_of(&next), vec![1, 0, 6, 7, 2, 3, 4]);
    // Routes reach every LID the table kept, over the cable that is left.
    let s0 = next.lft(4).unwrap();
    assert_eq!((s0[1], s0[3], s0[6], s0[7]), (1, 3, 3, 3));
    assert_eq!(s0[5], LFT_DROP, "h1's reserved LID routes nowhere");
}

/// The routing is computed at its first use, not with the LIDs: a plan asked only for LIDs and
/// P_Keys (`Subnet`'s, beside an SM that computes its own) never pays for it; the LFTs it gives
/// when asked are those of the bring-up.
#[test]
fn routing_is_computed_at_first_use() {
    let topo = Topology::fat_tree(64).unwrap();
    let nodes: Vec<NodeId> = (0..topo.nodes().len()).map(NodeId).collect();
    let sm_port = End { node: 0, port: 1 };
    let sm = SubnetManager::new(topo.clone(), nodes, sm_port, SmOptions::default()).unwrap();
    assert!(
        sm.route.get().is_none(),
        "no routing before it is asked for"
    );
    assert!(sm.lid(sm_port.node, sm_port.port).is_some_and(|l| l != 0));
    assert!(sm.route.get().is_none(), "LIDs need no routing");
    let lfts: Vec<Vec<u8>> = sm
        .bring_up()
        .into_iter()
        .filter_map(|(_, c)| match c {
            Config::Lft(l) => Some(l),
            _ => None,
        })
        .collect();
    assert!(sm.route.get().is_some());
    let s = topo.switches().next().unwrap();
    assert_eq!(sm.lft(s), Some(lfts[0].as_slice()));
}
