//! Our SM by SMPs ([`SmMode::Ours`]): it discovers the subnet with directed-route SubnGets and
//! programs it with SubnSets (IBA 1 chapter 14; `crate::node::sm::sweep`), and the devices end up
//! as the brain plans from the topology ([`Subnet::plan`], a [`SubnetManager`]): its LIDs, SM
//! LID, P_Key tables, MTUs and LFTs, every port Active, on every host and switch. Hosts then join
//! their broadcast group and ping each other, and the sweep is real packets in the capture.

mod common;

use common::topos::{chain, hosts_and_switches};
use ipoib_fabric::hw::switch::Switch;
use ipoib_fabric::hw::topology::{End, NodeKind, Topology};
use ipoib_fabric::node::host::Host;
use ipoib_fabric::node::sm::{SubnetManager, SweepPhase};
use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
use ipoib_fabric::testing::*;
use ipoib_fabric::{Config, PortConfig, PortState};
use ipoib_proto::subnet::{CaPort, SubnetModel, SwitchNode};
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::{Method, MgmtClass};
use ipoib_wire::packet::Packet;
use ipoib_wire::pcap::CaptureReader;
use ipoib_wire::smp::{PortInfoRepr, PortPhysState, SmpAttribute, SmpMadRepr, SwitchInfoRepr};
use ipoib_wire::{Guid, Mtu, PKey};
use std::collections::BTreeSet;
use std::time::Duration;

/// Limited members by default; two hosts of the generated topologies (GUIDs 0x100000 + 2i, port
/// GUID + 1) full members of an IPoIB partition besides.
const CONF: &str = "\
Default=0x7fff : ALL=limited, SELF=full ;
PartA=0x8001, ipoib : 0x100003=full, 0x100005=full ;
";

fn build(topo: &Topology) -> Subnet {
    let mut o = SubnetOptions::new(topo.clone(), 3);
    o.partitions = Some(ipoib_proto::partitions::parse(CONF).unwrap());
    let mut net = Subnet::build(o).unwrap();
    assert!(net.run_until_joined(at(2)), "every host joined");
    net
}

fn ca_line(name: &str, p: &PortConfig) -> String {
    format!(
        "{} port {}: lid {} sm {} sl {} prefix {:x} {:?} {:?} {:?} {:?}",
        name, p.port, p.lid, p.sm_lid, p.sm_sl, p.subnet_prefix, p.state, p.mtu, p.rate, p.pkeys
    )
}

fn switch_port_line(name: &str, p: u8, state: PortState, mtu: Mtu, pkeys: &[PKey]) -> String {
    format!(
        "{name} port {p}: {:?} {:?} {:?}",
        Some(state),
        Some(mtu),
        Some(pkeys)
    )
}

/// The devices as the brain plans them for `net`'s topology ([`SubnetManager::bring_up`]: the
/// values, per device, that the SM's SubnSets carry), in [`device_state`]'s form.
fn planned_state(net: &Subnet) -> Vec<String> {
    let plan: &SubnetManager = net.plan();
    let mut out = Vec::new();
    let values = plan.bring_up();
    for (n, node) in net.topology().nodes().iter().enumerate() {
        let id = net.built().nodes[n];
        let mine = values.iter().filter(|(to, _)| *to == id).map(|(_, c)| c);
        let ports: Vec<&PortConfig> = mine
            .clone()
            .filter_map(|c| match c {
                Config::Port(p) => Some(p),
                _ => None,
            })
            .collect();
        match node.kind {
            NodeKind::Ca => {
                for p in net.topology().cabled_ports(n) {
                    let pc = ports
                        .iter()
                        .find(|c| c.port == p)
                        .expect("a planned CA port");
                    out.push(ca_line(&node.name, pc));
                }
            }
            NodeKind::Switch => {
                let lft = mine
                    .filter_map(|c| match c {
                        Config::Lft(l) => Some(l.clone()),
                        _ => None,
                    })
                    .next()
                    .unwrap_or_default();
                let p0 = ports.iter().find(|c| c.port == 0).expect("port 0 planned");
                out.push(format!(
                    "{}: lid {} sm {} lft {:?}",
                    node.name, p0.lid, p0.sm_lid, lft
                ));
                for p in &ports {
                    out.push(switch_port_line(
                        &node.name, p.port, p.state, p.mtu, &p.pkeys,
                    ));
                }
            }
        }
    }
    out
}

/// What the SM set in every device: per CA port (LID, SM LID, state, MTU, P_Keys), per switch
/// (LID, SM LID, LFT, per port state, MTU, P_Keys).
fn device_state(net: &Subnet) -> Vec<String> {
    let mut out = Vec::new();
    for (n, node) in net.topology().nodes().iter().enumerate() {
        let id = net.built().nodes[n];
        match node.kind {
            NodeKind::Ca => {
                let hca = net.sim().node::<Host>(id).unwrap().hca();
                for p in net.topology().cabled_ports(n) {
                    out.push(ca_line(&node.name, &hca.port(p).unwrap().config()));
                }
            }
            NodeKind::Switch => {
                let sw = net.sim().node::<Switch>(id).unwrap();
                out.push(format!(
                    "{}: lid {} sm {} lft {:?}",
                    node.name,
                    sw.lid(),
                    sw.sm_lid(),
                    sw.lft()
                ));
                for p in (0..=node.ports).filter(|&p| p == 0 || net.topology().peer(n, p).is_some())
                {
                    out.push(format!(
                        "{} port {p}: {:?} {:?} {:?}",
                        node.name,
                        sw.port_state(p),
                        sw.port_mtu(p),
                        sw.port_pkeys(p)
                    ));
                }
            }
        }
    }
    out
}

// IBA 1 §14.2.5 (PortInfo, P_KeyTable, SwitchInfo, LinearForwardingTable), §7.2 (Init, Armed,
// Active): the SM by SMPs leaves every device as the brain plans it from the topology, on one
// switch, a two-level fat tree and a chain of three switches.
#[test]
fn smps_configure_the_devices_as_the_plan_says() {
    for topo in [
        Topology::single_switch(3).unwrap(),
        Topology::fat_tree(40).unwrap(),
        chain(),
    ] {
        let smp = build(&topo);
        let a = smp.smp_sm().expect("the SMP agent");
        assert_eq!(a.phase(), SweepPhase::Done);
        let s = a.stats();
        assert_eq!(
            s.nodes as usize,
            topo.nodes().len(),
            "every node discovered"
        );
        assert_eq!((s.discovery_failures, s.set_failures), (0, 0), "{s:?}");
        assert!(s.sets > 0 && s.done_at.is_some());
        let (d, m) = (planned_state(&smp), device_state(&smp));
        let part_a = d.iter().filter(|l| l.contains("8001")).count();
        assert!(part_a >= 2, "PartA's P_Key in tables: {d:#?}");
        assert_eq!(d.len(), m.len());
        for (x, y) in d.iter().zip(&m) {
            assert_eq!(x, y);
        }
        for i in 0..smp.host_count() {
            assert_eq!(smp.host_port(i).unwrap().state, PortState::Active);
        }
        assert_eq!(
            smp.sm().manager().map(|b| b.max_lid()),
            Some(smp.plan().max_lid())
        );
    }
}

// IBA 1 §14.2.5.6 SubnetTimeOut, §14.2.5.4 LifeTimeValue and PortStateChange: the SM writes
// OpenSM's defaults (18, docs/OPENSM-NOTES.md "Our SM against OpenSM") to every port and
// switch, and clears PortStateChange (write 1) once it has configured the switch; the direct
// path, which writes no SwitchInfo, leaves them 0.
#[test]
fn the_sweep_sets_timeouts_and_clears_port_state_change() {
    use ipoib_fabric::node::sm::{LIFE_TIME_VALUE, SUBNET_TIMEOUT};
    let topo = chain();
    let net = build(&topo);
    for (n, node) in topo.nodes().iter().enumerate() {
        let id = net.built().nodes[n];
        match node.kind {
            NodeKind::Ca => {
                let hca = net.sim().node::<Host>(id).unwrap().hca();
                for p in topo.cabled_ports(n) {
                    let t = hca.port_info(p).unwrap().subnet_timeout;
                    assert_eq!(t, SUBNET_TIMEOUT, "{} port {p}", node.name);
                }
            }
            NodeKind::Switch => {
                let si = net.sim().node::<Switch>(id).unwrap().switch_info();
                assert_eq!(si.life_time_value, LIFE_TIME_VALUE, "{}", node.name);
                assert!(!si.port_state_change, "{}", node.name);
            }
        }
    }
    assert_eq!(SUBNET_TIMEOUT, 18);
}

/// The SA model's CA port of the node `guid`.
fn model_ca_port(model: &SubnetModel, guid: Guid) -> &CaPort {
    model.ports.iter().find(|p| p.node_guid == guid).unwrap()
}

/// The SA model's switch `guid`.
fn model_switch(model: &SubnetModel, guid: Guid) -> &SwitchNode {
    model.switches.iter().find(|s| s.guid == guid).unwrap()
}

// IBA 1 §15.2.5.2: a NodeRecord holds the node's NodeInfo; the SA's model of the subnet has the
// NodeInfo facts the SM read by SMPs (vendor, device, revision, P_Key capacity), not made-up ones.
#[test]
fn the_sa_model_has_the_node_info_the_sweep_read() {
    let topo = chain();
    let net = build(&topo);
    let model = net.sm().manager().expect("swept").subnet_model();
    for (n, node) in topo.nodes().iter().enumerate() {
        let id = net.built().nodes[n];
        let (read, facts) = match node.kind {
            NodeKind::Ca => {
                let hca = net.sim().node::<Host>(id).unwrap().hca();
                let p = model_ca_port(&model, node.guid);
                (hca.node_info(1), p.node)
            }
            NodeKind::Switch => {
                let sw = net.sim().node::<Switch>(id).unwrap();
                let s = model_switch(&model, node.guid);
                (sw.node_info(0), s.node)
            }
        };
        assert_eq!(
            (facts.vendor_id, facts.device_id, facts.revision),
            (read.vendor_id, read.device_id, read.revision),
            "{}",
            node.name
        );
        assert_eq!(facts.partition_cap, read.partition_cap, "{}", node.name);
        assert_eq!(facts.num_ports, read.num_ports, "{}", node.name);
        assert_ne!(facts.vendor_id, 0, "{}", node.name);
    }
}

// IBA 1 §15.2.5.3: a PortInfoRecord holds the port's PortInfo; the SA's model of the subnet has
// the PortInfo the SM read by SMPs with what it then set (capability mask, supported and enabled
// widths and speeds, LinkDownDefaultState, SubnetTimeOut...), so it gives what every port answers.
#[test]
fn the_sa_model_has_the_port_info_the_sweep_read() {
    let topo = chain();
    let net = build(&topo);
    let model = net.sm().manager().expect("swept").subnet_model();
    for (n, node) in topo.nodes().iter().enumerate() {
        let id = net.built().nodes[n];
        match node.kind {
            NodeKind::Ca => {
                let hca = net.sim().node::<Host>(id).unwrap().hca();
                let p = model_ca_port(&model, node.guid);
                let answered = hca.port_info(1).unwrap();
                assert_eq!(model.ca_port_info(p), answered, "{}", node.name);
                assert_eq!(answered.subnet_timeout, 18, "{}", node.name);
            }
            NodeKind::Switch => {
                let sw = net.sim().node::<Switch>(id).unwrap();
                let s = model_switch(&model, node.guid);
                for port in 0..=node.ports {
                    let pi = model.switch_port_info(s, port).unwrap();
                    let mut answered = sw.port_info_of(port, pi.local_port_num).unwrap();
                    if port != 0 {
                        // Only port 0 has a LID, GidPrefix and MasterSMLID (IBA 1 §14.2.5.6);
                        // the model gives 0 on the others, as OpenSM's SA does under ibsim.
                        (answered.gid_prefix, answered.lid, answered.master_sm_lid) = (0, 0, 0);
                    }
                    assert_eq!(pi, answered, "{} port {port}", node.name);
                }
            }
        }
    }
}

// IBA 1 §15.2.5.11: a P_KeyTableRecord holds the port's P_Key table. The SA's model has the
// table the SM wrote on every switch port with a cable, those between switches too (every
// partition, full): `saquery --smkey 1 PKTR` gave no record for them on a fat tree (OpenSM gives
// one per cabled switch port; docs/OPENSM-NOTES.md "Diags on a fat tree").
#[test]
fn the_sa_model_has_the_pkey_tables_of_every_cabled_switch_port() {
    let topo = chain();
    let net = build(&topo);
    let model = net.sm().manager().expect("swept").subnet_model();
    let mut between_switches = 0;
    for (n, node) in topo.nodes().iter().enumerate() {
        if node.kind != NodeKind::Switch {
            continue;
        }
        let sw = net
            .sim()
            .node::<Switch>(net.built().nodes[n])
            .expect("a switch");
        let s = model_switch(&model, node.guid);
        for port in 0..=node.ports {
            let cabled = if port != 0 {
                topo.peer(n, port)
            } else {
                Some((End { node: n, port }, 0))
            };
            let Some((peer, _)) = cabled else {
                continue; // no cable: the SM writes no table there
            };
            if port != 0 && topo.nodes()[peer.node].kind == NodeKind::Switch {
                between_switches += 1;
            }
            let held = sw.port_pkeys(port).expect("the port");
            assert!(!held.is_empty(), "{} port {port}", node.name);
            assert_eq!(
                model.switch_port_pkeys(s, port),
                held,
                "{} port {port}",
                node.name
            );
        }
    }
    assert_eq!(between_switches, 4, "both ends of two cables");
}

// IBA 1 §15.2.5.5: a SwitchInfoRecord holds the switch's SwitchInfo; the SA's model gives, for
// every switch, what its SMA answers SubnGet(SwitchInfo) with once the hosts joined: the
// SwitchInfo read, with the LinearFDBTop and LifeTimeValue the SM set, and the MulticastFDBTop
// of the MFT blocks written after the sweep read it (OpenSM's record follows the switch's from
// its next light sweep on, docs/OPENSM-MFT.md).
#[test]
fn switch_info_records_are_what_the_smas_hold() {
    let topo = chain();
    let net = build(&topo);
    let model = net.sa().subnet();
    let (mut switches, mut tops) = (0, 0);
    for (n, node) in topo.nodes().iter().enumerate() {
        if node.kind == NodeKind::Ca {
            assert!(
                !model.switch_infos.contains_key(&node.guid),
                "{}",
                node.name
            );
            continue;
        }
        let sw = net.sim().node::<Switch>(net.built().nodes[n]).unwrap();
        assert_eq!(
            model.switch_infos.get(&node.guid).copied(),
            Some(sw.switch_info()),
            "{}",
            node.name
        );
        switches += 1;
        tops += usize::from(sw.switch_info().multicast_fdb_top != 0);
    }
    assert!(switches >= 2, "{switches}");
    assert!(tops >= 1, "an MFT written after the sweep");
}

// IBA 1 §15.2.5.8: a MulticastForwardingTableRecord holds a block of a switch's MFT; the SA's
// model has, for every switch, every block up to its highest written and every position, what
// the SMA answers SubnGet(MulticastForwardingTable) with once the hosts joined (the SM wrote
// those blocks after it gave the SA the model), and the SMA holds no MLID above them.
#[test]
fn mft_records_are_what_the_smas_hold() {
    // The default partition, every host a full member: every switch is on the broadcast tree.
    let topo = chain();
    let mut net = Subnet::build(SubnetOptions::new(topo.clone(), 3)).unwrap();
    assert!(net.run_until_joined(at(2)) && net.is_settled());
    let model = &net.sa().subnet().mfts;
    let mut blocks = 0;
    for (n, node) in topo.nodes().iter().enumerate() {
        let written: Vec<_> = model.keys().filter(|k| k.0 == node.guid).collect();
        if node.kind == NodeKind::Ca {
            assert!(written.is_empty(), "{}", node.name);
            continue;
        }
        let sw = net.sim().node::<Switch>(net.built().nodes[n]).unwrap();
        let top = written.iter().map(|k| k.1).max().expect("a block written");
        for block in 0..=top + 1 {
            for position in 0..=(node.ports / 16) {
                // What the SMA's MulticastForwardingTable block holds (`hw::switch::sma`).
                let mut held = [0u16; 32];
                for (i, mask) in held.iter_mut().enumerate() {
                    let mlid = 0xc000 + 32 * block + i as u16;
                    for &p in sw.mft(mlid).into_iter().flatten() {
                        if u16::from(p) / 16 == u16::from(position) {
                            *mask |= 1 << (p % 16);
                        }
                    }
                }
                let sa = model.get(&(node.guid, block, position));
                if block > top {
                    assert_eq!(held, [0; 32], "{} above block {top}", node.name);
                    continue;
                }
                let sa = sa.map_or([0; 32], |b| b.port_masks);
                assert_eq!(sa, held, "{} block {block} position {position}", node.name);
                blocks += usize::from(held != [0; 32]);
            }
        }
    }
    assert!(blocks >= 3, "{blocks} non-empty blocks");
}

// IBA 1 §15.2.5.4, §15.2.5.9: SLtoVLMappingTableRecords and VLArbitrationTableRecords hold the
// ports' tables; the SA's model gives, for every pair of a switch's ports, every CA port and
// every block, what the SMA holds (our SM writes none: all zero, as OpenSM's SA gives them on
// the same fabric; docs/OPENSM-NOTES.md "Subnet records").
#[test]
fn qos_table_records_are_what_the_smas_hold() {
    let topo = chain();
    let net = build(&topo);
    let model = net.sm().manager().expect("swept").subnet_model();
    let sl2vl = |k| model.sl2vl.get(&k).copied().unwrap_or_default();
    let vlarb = |k| model.vlarb.get(&k).copied().unwrap_or_default();
    let mut tables = 0;
    for (n, node) in topo.nodes().iter().enumerate() {
        let id = net.built().nodes[n];
        if node.kind == NodeKind::Ca {
            let port = net.sim().node::<Host>(id).unwrap().hca().port(1).unwrap();
            assert_eq!(sl2vl((node.guid, 1, 0)), port.sl2vl, "{}", node.name);
            for b in 1..=4u8 {
                let held = port.vlarb[usize::from(b - 1)];
                assert_eq!(vlarb((node.guid, 1, b)), held, "{} {b}", node.name);
            }
            tables += 5;
            continue;
        }
        let sw = net.sim().node::<Switch>(id).unwrap();
        for out in 0..=node.ports {
            for input in 0..=node.ports {
                let held = sw.sl_to_vl(input, out);
                assert_eq!(
                    sl2vl((node.guid, out, input)),
                    held,
                    "{} {input}->{out}",
                    node.name
                );
                tables += 1;
            }
            for b in 1..=4 {
                let held = sw.vl_arbitration(out, b);
                assert_eq!(vlarb((node.guid, out, b)), held, "{} {out} {b}", node.name);
                tables += 1;
            }
        }
    }
    assert!(tables > 40, "{tables}");
}

// draft-ietf-ipoib-ip-over-infiniband-06 §9.2: with the SM by SMPs, hosts resolve and ping each
// other over the routes and the broadcast group it programmed (MFTs set by SMPs).
#[test]
fn hosts_ping_over_a_subnet_brought_up_by_smps() {
    let n = 8;
    let mut net = up(options(Topology::fat_tree(n).unwrap(), 11), false);
    let sent = ping_pairs(&mut net, &all_pairs(n), v4, Duration::from_secs(2));
    for &s in &sent {
        assert!(rtt(&net, s).is_some(), "{} -> {} unanswered", s.0, s.1);
    }
    let a = net.smp_sm().unwrap();
    assert!(a.stats().mft_sets > 0, "MFTs set by SMPs: {:?}", a.stats());
    assert_eq!(a.stats().set_failures, 0);
}

// IBA 1 §14.2.1.2, §14.2.2: the sweep is directed-route SMPs on the wire, from the SM's port:
// NodeInfo, NodeDescription and PortInfo gets, then PortInfo, P_KeyTable, LFT and SwitchInfo
// sets, every one answered by a GetResp, and they decode (the reader strips the ERF header).
#[test]
fn the_sweep_is_directed_route_smps_in_the_capture() {
    let mut o = SubnetOptions::new(chain(), 5);
    o.capture = true;
    let mut net = Subnet::build(o).unwrap();
    assert!(net.run_until_joined(at(2)));
    let bytes = net.sim_mut().take_capture().unwrap().into_bytes();
    let mut seen = BTreeSet::new();
    let (mut requests, mut responses) = (0, 0);
    for p in CaptureReader::read_all(&bytes[..]).unwrap() {
        let Ok(pkt) = Packet::parse(&p.data) else {
            continue;
        };
        let Ok(smp) = SmpMadRepr::parse(pkt.payload) else {
            continue;
        };
        if smp.header.mgmt_class != MgmtClass::SubnDirectedRoute {
            continue;
        }
        let m = smp.header.method;
        if m == Method::GetResp {
            responses += 1;
        } else {
            requests += 1;
            seen.insert((u8::from(m), smp.header.attribute_id));
        }
    }
    for (m, a) in [
        (Method::Get, attr::NODE_INFO),
        (Method::Get, attr::NODE_DESCRIPTION),
        (Method::Get, attr::PORT_INFO),
        (Method::Set, attr::PORT_INFO),
        (Method::Set, attr::P_KEY_TABLE),
        (Method::Set, attr::LINEAR_FORWARDING_TABLE),
        (Method::Set, attr::SWITCH_INFO),
    ] {
        assert!(seen.contains(&(u8::from(m), a)), "{m:?} {a:#x}: {seen:x?}");
    }
    // Hop-0 SMPs to the SM's own port never reach the wire; the rest are answered once each.
    assert!(
        requests > 20 && responses == requests,
        "{requests} {responses}"
    );
}

/// sw0 and sw1 joined by two cables (sw0 port 2 - sw1 port 2, sw0 port 3 - sw1 port 3); h0, h1
/// on sw0 ports 1 and 4, h2, h3 on sw1 ports 1 and 4.
fn two_cables() -> Topology {
    let mut t = Topology::new();
    let (h, s) = hosts_and_switches(&mut t, 4, 2);
    let e = |node, port| End { node, port };
    for (host, sw, port) in [(0, 0, 1), (1, 0, 4), (2, 1, 1), (3, 1, 4)] {
        t.connect(e(h[host], 1), e(s[sw], port), None, None)
            .unwrap();
    }
    for p in [2, 3] {
        t.connect(e(s[0], p), e(s[1], p), None, None).unwrap();
    }
    t
}

// IBA 1 §14.2.5.1 (trap 128 on a link state change), §14.4 (the SM sweeps the subnet): a cable
// between the switches goes down; the switch's trap makes the SM sweep again, and the new LFTs
// route around the cable; the hosts behind it are still reached, with their LIDs unchanged.
#[test]
fn a_trap_128_sweep_routes_around_a_link_gone_down() {
    let topo = two_cables();
    let mut net = up(options(topo.clone(), 9), false);
    let lids: Vec<u16> = (0..4).map(|i| net.lid(i)).collect();
    let sw0 = net.built().nodes[4];
    let lft =
        |net: &Subnet, lid: u16| net.sim().node::<Switch>(sw0).unwrap().lft()[usize::from(lid)];
    // The cable sw0 uses toward h2: take it down.
    let used = lft(&net, lids[2]);
    assert!(used == 2 || used == 3, "{used}");
    let cable = topo
        .links()
        .iter()
        .position(|l| {
            l.a == End {
                node: 4,
                port: used,
            }
        })
        .unwrap();
    let sweeps = net.smp_sm().unwrap().stats().sweeps;
    let now = net.sim().now();
    let link = net.built().links[cable];
    net.sim_mut().schedule_link_state(link, now, false);
    net.sim_mut().run_for(Duration::from_millis(5));
    let s = net.smp_sm().unwrap().stats();
    assert!(s.traps >= 1 && s.sweeps > sweeps, "{s:?}");
    assert_eq!(net.smp_sm().unwrap().phase(), SweepPhase::Done);
    let other = 5 - used;
    for i in [2, 3] {
        assert_eq!(lft(&net, lids[i]), other, "h{i} now over the other cable");
    }
    assert_eq!(
        (0..4).map(|i| net.lid(i)).collect::<Vec<_>>(),
        lids,
        "LIDs kept"
    );
    let sent = ping_pairs(&mut net, &all_pairs(4), v4, Duration::from_secs(2));
    for &p in &sent {
        assert!(rtt(&net, p).is_some(), "{} -> {} unanswered", p.0, p.1);
    }
}

// OpenSM's periodic heavy sweep (`sweep_interval`): with nothing changed, every sweep
// rediscovers the subnet and sets nothing (every PortInfo, P_Key table and LFT block already
// holds what the brain computes again), and the hosts stay joined.
#[test]
fn periodic_sweeps_of_an_unchanged_subnet_set_nothing() {
    let mut o = SubnetOptions::new(Topology::fat_tree(40).unwrap(), 4);
    o.smp.sweep_interval = Some(Duration::from_millis(1));
    let mut net = Subnet::build(o).unwrap();
    assert!(net.run_until_joined(at(2)));
    let before = net.smp_sm().unwrap().stats();
    let generation = net.smp_sm().unwrap().generation();
    net.sim_mut().run_for(Duration::from_millis(10));
    let after = net.smp_sm().unwrap().stats();
    assert!(after.sweeps >= before.sweeps + 5, "{before:?} {after:?}");
    assert!(net.smp_sm().unwrap().generation() > generation);
    assert_eq!(after.sets, before.sets, "nothing set again");
    assert_eq!(after.set_failures + after.discovery_failures, 0);
    assert_eq!(net.joined_count(), 40);
}

/// h0 (the SM) on sw0 port 1; sw0 port 2 - sw1 port 1, sw0 port 3 - sw2 port 1, sw1 port 2 -
/// sw2 port 2; h1 on sw1 port 3, h2 on sw2 port 3. The breadth-first walk from h0 meets sw1
/// before sw2 and h1 before h2; without the cable sw0-sw1, sw2 before sw1 and h2 before h1.
fn triangle() -> Topology {
    let mut t = Topology::new();
    let (h, s) = hosts_and_switches(&mut t, 3, 3);
    let e = |node, port| End { node, port };
    for (a, b) in [
        (e(h[0], 1), e(s[0], 1)),
        (e(s[0], 2), e(s[1], 1)),
        (e(s[0], 3), e(s[2], 1)),
        (e(s[1], 2), e(s[2], 2)),
        (e(s[1], 3), e(h[1], 1)),
        (e(s[2], 3), e(h[2], 1)),
    ] {
        t.connect(a, b, None, None).unwrap();
    }
    t
}

/// LIDs of the hosts, then of the switches, as the devices hold them.
fn device_lids(net: &Subnet) -> Vec<u16> {
    let hosts = (0..net.host_count()).map(|i| net.lid(i));
    hosts.chain(net.switches().map(|(_, s)| s.lid())).collect()
}

// OpenSM's guid2lid (`osm_lid_mgr.c`), IBA 1 §14.2.5.1: the cable sw0-sw1 goes down, the trap
// 128 sweep walks the subnet in another order (numbered afresh it would swap sw1 and sw2, h1 and
// h2), and every port keeps the LID it had; the subnet is routed over the cables left.
#[test]
fn lids_survive_a_link_down_that_changes_the_walk_order() {
    let topo = triangle();
    let mut net = up(options(topo.clone(), 13), false);
    let lids = device_lids(&net);
    assert_eq!(lids, vec![1, 5, 6, 2, 3, 4], "h0 h1 h2 sw0 sw1 sw2");
    // The walk without the cable: numbered afresh, the LIDs would not be those.
    let mut cut = Topology::new();
    for n in topo.nodes() {
        cut.add_node(n.kind, n.name.clone(), n.guid, n.ports);
    }
    let gone = topo
        .links()
        .iter()
        .position(|l| (l.a, l.b) == (End { node: 3, port: 2 }, End { node: 4, port: 1 }))
        .unwrap();
    for (_, l) in topo.links().iter().enumerate().filter(|&(i, _)| i != gone) {
        cut.connect(l.a, l.b, None, None).unwrap();
    }
    let n = cut.nodes().len();
    let fresh = SubnetManager::new(
        cut,
        (0..n).map(ipoib_fabric::NodeId).collect(),
        End { node: 0, port: 1 },
        Default::default(),
    )
    .unwrap();
    let fresh_lids: Vec<u16> = [(0, 1), (1, 1), (2, 1), (3, 0), (4, 0), (5, 0)]
        .iter()
        .map(|&(n, p)| fresh.lid(n, p).unwrap())
        .collect();
    assert_eq!(fresh_lids, vec![1, 6, 5, 2, 4, 3], "the walk order changed");
    let sweeps = net.smp_sm().unwrap().stats().sweeps;
    let now = net.sim().now();
    let link = net.built().links[gone];
    net.sim_mut().schedule_link_state(link, now, false);
    net.sim_mut().run_for(Duration::from_millis(5));
    let s = net.smp_sm().unwrap().stats();
    assert!(s.traps >= 1 && s.sweeps > sweeps, "{s:?}");
    assert_eq!(net.smp_sm().unwrap().phase(), SweepPhase::Done);
    assert_eq!(device_lids(&net), lids, "LIDs kept");
    let brain = net.smp_sm().unwrap().manager().unwrap();
    assert_eq!(brain.topology().links().len(), topo.links().len() - 1);
    let sent = ping_pairs(&mut net, &all_pairs(3), v4, Duration::from_secs(2));
    for &p in &sent {
        assert!(rtt(&net, p).is_some(), "{} -> {} unanswered", p.0, p.1);
    }
}

/// Delivers a LID-routed SubnSet of `attribute` (modifier `modifier`) from h0 (the SM's host, on
/// `sw`'s port 1) to switch `sw`, as a tool on h0 would send it.
fn set_on_switch(
    net: &mut Subnet,
    sw: ipoib_fabric::NodeId,
    modifier: u32,
    attribute: SmpAttribute,
) {
    let sw_lid = net.sim().node::<Switch>(sw).unwrap().lid();
    let id = match attribute {
        SmpAttribute::SwitchInfo(_) => attr::SWITCH_INFO,
        _ => attr::PORT_INFO,
    };
    let mut s = SmpMadRepr::lid_routed_get(0x5151, id, modifier);
    s.header.method = Method::Set;
    s.attribute = attribute;
    let packet = ipoib_fabric::hw::sma::smp_packet(net.lid(0), sw_lid, 0, &s.to_bytes());
    net.sim_mut().with_node::<Switch, _>(sw, |sw, now, tx| {
        ipoib_fabric::hw::sim::Device::receive(sw, now, 1, packet, tx)
    });
}

// IBA 1 §14.2.5.6: our SM's sweeps leave a port disabled (`ibportstate disable`) as it is: the
// trap 128 of its link going down makes the SM sweep and route around it, the host behind it
// stays without a link through the periodic sweeps, the others stay joined; enabled again
// (Polling), the link trains, the trap's sweep brings the host up and it joins again.
#[test]
fn our_sm_sweeps_around_a_disabled_port_and_brings_it_up_when_enabled() {
    let mut o = options(two_cables(), 9);
    o.smp.sweep_interval = Some(Duration::from_millis(2));
    let mut net = up(o, false);
    let sw0 = net.built().nodes[4];
    // h1 on sw0 port 4.
    let phys = |net: &mut Subnet, p| {
        let w = PortInfoRepr {
            port_state: ipoib_wire::smp::PortState::NoStateChange,
            port_phys_state: p,
            ..PortInfoRepr::default()
        };
        set_on_switch(net, sw0, 4, SmpAttribute::PortInfo(w));
    };
    let sweeps = net.smp_sm().unwrap().stats().sweeps;
    phys(&mut net, PortPhysState::Disabled);
    net.sim_mut().run_for(Duration::from_millis(20));
    let s = net.smp_sm().unwrap().stats();
    assert!(s.traps >= 1 && s.sweeps >= sweeps + 5, "{s:?}");
    assert_eq!(
        net.sim().node::<Switch>(sw0).unwrap().port_state(4),
        Some(PortState::Down)
    );
    assert_eq!(
        net.host_device(1).hca().port(1).unwrap().state,
        PortState::Down
    );
    for i in [0, 2, 3] {
        assert!(net.is_joined(i), "h{i} joined");
    }
    phys(&mut net, PortPhysState::Polling);
    let deadline = net.sim().now() + Duration::from_secs(5);
    assert!(net.run_until_joined(deadline), "h1 up and joined again");
    assert_eq!(
        net.host_device(1).hca().port(1).unwrap().state,
        PortState::Active
    );
}

// IBA 1 §14.2.5.4: DLIDs above a switch's LinearFDBTop are discarded. One lowered behind the
// SM's back (another SM, a tool's SubnSet) cuts the hosts above it off; OpenSM reads every
// switch's SwitchInfo in its sweeps and sets the top again where it differs from the highest LID
// it routes (`osm_ucast_mgr.c`, ucast_mgr_set_fwd_top); so does ours. Comparing with the top it
// set last, it would leave the hosts cut off through every later sweep.
#[test]
fn a_linear_fdb_top_lowered_by_another_is_set_again_by_the_next_sweep() {
    let mut o = options(two_cables(), 9);
    o.smp.sweep_interval = Some(Duration::from_millis(1));
    let mut net = up(o, false);
    let sw0 = net.built().nodes[4];
    let routed = |net: &Subnet| net.sim().node::<Switch>(sw0).unwrap().lft().len();
    let full = routed(&net);
    assert!(full > 2, "{full}");
    // A LID-routed SubnSet(SwitchInfo) LinearFDBTop 1 to sw0 from h0.
    let si = SwitchInfoRepr {
        linear_fdb_top: 1,
        ..Default::default()
    };
    set_on_switch(&mut net, sw0, 0, SmpAttribute::SwitchInfo(si));
    net.sim_mut().run_for(Duration::from_micros(100));
    assert_eq!(routed(&net), 2, "the top lowered to LID 1");
    let sweeps = net.smp_sm().unwrap().stats().sweeps;
    net.sim_mut().run_for(Duration::from_millis(10));
    assert!(net.smp_sm().unwrap().stats().sweeps >= sweeps + 5);
    assert_eq!(routed(&net), full, "the next sweeps set the top again");
}
