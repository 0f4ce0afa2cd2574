//! The subnet management agents of switches and HCAs over the simulator (IBA 1 chapter 14): a
//! probe standing where an SM would be reads and writes attributes by directed route through two
//! switches to a CA, then by LID once the LIDs and forwarding tables are written.

#[path = "common/sma.rs"]
mod fabric;

use fabric::*;
use ipoib_fabric::hw::hca::HcaDropReason;
use ipoib_fabric::hw::mgmt::PortState as HwState;
use ipoib_fabric::hw::switch::SwitchDropReason;
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::{MadStatus, Method};
use ipoib_wire::smp::{
    LftBlockRepr, MftBlockRepr, NodeType, PKeyTableRepr, PortInfoRepr, PortState, SmInfoRepr,
    SmState, SmpAttribute, SmpMadRepr, SwitchInfoRepr,
};
use ipoib_wire::{Guid, Mtu, PKey};

fn port_info(r: &SmpMadRepr) -> PortInfoRepr {
    match r.attribute {
        SmpAttribute::PortInfo(p) => p,
        ref a => panic!("not a PortInfo: {a:?}"),
    }
}

fn get_port_info(f: &mut Fabric, path: &[u8], port: u32, mkey: u64) -> Option<PortInfoRepr> {
    f.dr(Method::Get, attr::PORT_INFO, port, path, mkey, none())
        .map(|r| port_info(&r))
}

/// SubnSet(PortInfo) along `path` of what `edit` makes of the current value.
fn set_port_info(
    f: &mut Fabric,
    path: &[u8],
    port: u32,
    edit: impl FnOnce(&mut PortInfoRepr),
) -> SmpMadRepr {
    let mut p = get_port_info(f, path, port, 0).expect("PortInfo");
    p.port_state = PortState::NoStateChange;
    edit(&mut p);
    f.dr(
        Method::Set,
        attr::PORT_INFO,
        port,
        path,
        0,
        SmpAttribute::PortInfo(p),
    )
    .expect("an answer")
}

// IBA 1 §14.2.2.2 C14-9, §14.2.2.3 C14-13: a directed-route SubnGet walks through two switches
// to the CA, which answers for the port it came in by; the answer comes back with D set along
// the ReturnPath the switches filled in.
#[test]
fn directed_route_through_two_switches_to_a_ca_and_back() {
    let mut f = Fabric::new(1);
    let r = f
        .dr(Method::Get, attr::NODE_INFO, 0, TO_CA, 0, none())
        .expect("the CA answers");
    assert_eq!(r.header.method, Method::GetResp);
    assert_eq!(r.status(), MadStatus::SUCCESS);
    assert_eq!(r.direction(), Some(true), "D bit on the way back");
    assert_eq!((r.hop_count(), r.hop_pointer()), (Some(3), Some(1)));
    let SmpRoute::Directed(d) = r.route else {
        panic!("directed")
    };
    assert_eq!(
        &d.return_path[1..4],
        &[3, 2, 1],
        "ports each hop came in by"
    );
    assert_eq!(&d.initial_path[1..4], TO_CA);
    let SmpAttribute::NodeInfo(n) = r.attribute else {
        panic!("{:?}", r.attribute)
    };
    assert_eq!(n.node_type, NodeType::ChannelAdapter);
    assert_eq!(
        (n.node_guid, n.port_guid),
        (Guid(CA_GUID), Guid(CA_GUID + 1))
    );
    assert_eq!(n.local_port_num, 1);
    // One hop: S1 answers as a switch, for port 3 it was reached by.
    let r = f
        .dr(Method::Get, attr::NODE_INFO, 0, TO_S1, 0, none())
        .unwrap();
    let SmpAttribute::NodeInfo(n) = r.attribute else {
        panic!()
    };
    assert_eq!(
        (n.node_type, n.num_ports, n.local_port_num),
        (NodeType::Switch, 8, 3)
    );
    assert_eq!(
        f.switch(f.s1).stats().smp_forwarded,
        2,
        "the CA's request and answer"
    );
    let r = f
        .dr(Method::Get, attr::NODE_DESCRIPTION, 0, TO_S2, 0, none())
        .unwrap();
    let SmpAttribute::NodeDescription(d) = r.attribute else {
        panic!()
    };
    assert_eq!(d.text(), "S2 leaf");
}

// IBA 1 §14.2.2.2 C14-9: a CA does not forward; a path naming a port the switch lacks is
// dropped; both are counted.
#[test]
fn directed_route_discards() {
    let mut f = Fabric::new(2);
    assert!(f
        .dr(Method::Get, attr::NODE_INFO, 0, &[1, 5, 7, 1], 0, none())
        .is_none());
    assert_eq!(f.hca().counters().drops(HcaDropReason::SmpDiscarded), 1);
    assert!(f
        .dr(Method::Get, attr::NODE_INFO, 0, &[1, 9], 0, none())
        .is_none());
    assert_eq!(
        f.switch(f.s1)
            .stats()
            .dropped(SwitchDropReason::SmpDiscarded),
        1
    );
}

// IBA 1 §14.2.5.6, §7.2: SubnSet(PortInfo) drives the port state machine: Init -> Armed ->
// Active; Active straight from Init is refused with status 0x001C and changes nothing.
#[test]
fn port_info_set_armed_then_active() {
    let mut f = Fabric::new(3);
    let p = get_port_info(&mut f, TO_CA, 0, 0).unwrap();
    assert_eq!(p.port_state, PortState::Init);
    let r = set_port_info(&mut f, TO_CA, 0, |p| p.port_state = PortState::Active);
    assert_eq!(r.status(), MadStatus::INVALID_ATTR_VALUE);
    assert_eq!(port_info(&r).port_state, PortState::Init);
    let r = set_port_info(&mut f, TO_CA, 0, |p| {
        p.port_state = PortState::Armed;
        p.lid = CA_LID;
        p.master_sm_lid = PROBE_LID;
        p.neighbor_mtu = Mtu::Mtu2048;
    });
    assert_eq!(r.status(), MadStatus::SUCCESS);
    assert_eq!(port_info(&r).port_state, PortState::Armed);
    let port = f.hca().port(1).unwrap().clone();
    assert_eq!(
        (port.state, port.lid, port.sm_lid, port.mtu),
        (HwState::Armed, 7, 1, Mtu::Mtu2048)
    );
    let r = set_port_info(&mut f, TO_CA, 0, |p| p.port_state = PortState::Active);
    assert_eq!(port_info(&r).port_state, PortState::Active);
    assert_eq!(f.hca().port(1).unwrap().state, HwState::Active);
    // A switch port the same way, and an MTU above MTUCap is refused.
    let r = set_port_info(&mut f, TO_S2, 7, |p| p.port_state = PortState::Armed);
    assert_eq!(port_info(&r).port_state, PortState::Armed);
    assert_eq!(f.switch(f.s2).port_state(7), Some(HwState::Armed));
    let r = set_port_info(&mut f, TO_S2, 7, |p| p.neighbor_mtu = Mtu::Unknown(6));
    assert_eq!(r.status(), MadStatus::INVALID_ATTR_VALUE);
    assert_eq!(f.switch(f.s2).port_mtu(7), Some(Mtu::Mtu4096));
}

/// Gives every node its LID and both switches their LFTs by directed route.
fn assign_lids(f: &mut Fabric) {
    for (path, lid) in [(TO_S1, S1_LID), (TO_S2, S2_LID), (TO_CA, CA_LID)] {
        let r = set_port_info(f, path, 0, |p| {
            p.lid = lid;
            p.master_sm_lid = PROBE_LID;
        });
        assert_eq!(r.status(), MadStatus::SUCCESS);
    }
    for (path, routes) in [
        (
            TO_S1,
            [(PROBE_LID, 3), (CA_LID, 5), (S1_LID, 0), (S2_LID, 5)],
        ),
        (
            TO_S2,
            [(PROBE_LID, 2), (CA_LID, 7), (S1_LID, 2), (S2_LID, 0)],
        ),
    ] {
        let mut b = LftBlockRepr { ports: [255; 64] };
        for (lid, port) in routes {
            b.ports[usize::from(lid)] = port;
        }
        let r = f
            .dr(
                Method::Set,
                attr::LINEAR_FORWARDING_TABLE,
                0,
                path,
                0,
                SmpAttribute::LinearForwardingTable(b),
            )
            .unwrap();
        assert_eq!(r.attribute, SmpAttribute::LinearForwardingTable(b));
    }
    for path in [TO_CA, TO_S2] {
        let port = if path == TO_CA { 0 } else { 7 };
        set_port_info(f, path, port, |p| p.port_state = PortState::Armed);
        set_port_info(f, path, port, |p| p.port_state = PortState::Active);
    }
}

// IBA 1 §14.2.5.10, §18.2.4.1: an LFT written by SubnSet is the table packets are forwarded by;
// IBA 1 §14.2.1.1: LID-routed SMPs reach the CA's and the switch's SMAs once LIDs are set.
#[test]
fn lft_set_then_lid_routed_smps_and_data_follow_it() {
    let mut f = Fabric::new(4);
    assign_lids(&mut f);
    assert_eq!(
        &f.switch(f.s1).lft()[..12],
        &[255, 3, 255, 255, 255, 255, 255, 5, 255, 255, 0, 5]
    );
    let r = f
        .lid(Method::Get, attr::NODE_INFO, 0, CA_LID, 0, none())
        .expect("CA by LID");
    let SmpAttribute::NodeInfo(n) = r.attribute else {
        panic!()
    };
    assert_eq!(n.node_guid, Guid(CA_GUID));
    assert_eq!(r.direction(), None);
    let r = f
        .lid(Method::Get, attr::SWITCH_INFO, 0, S2_LID, 0, none())
        .expect("S2 by LID");
    let SmpAttribute::SwitchInfo(s) = r.attribute else {
        panic!()
    };
    assert_eq!(s.linear_fdb_top, 63);
    // Data: a PerfMgt GMP on VL0 is forwarded by the same LFTs to the CA's QP1 and back.
    let before = f.switch(f.s1).stats().forwarded;
    assert!(f.perf_get(0x0012, 1, CA_LID).is_some());
    assert_eq!(f.switch(f.s1).stats().forwarded, before + 2);
    // Unicast LID 7 dropped once the LFT says 255.
    let mut b = LftBlockRepr { ports: [255; 64] };
    b.ports[usize::from(PROBE_LID)] = 2;
    f.lid(
        Method::Set,
        attr::LINEAR_FORWARDING_TABLE,
        0,
        S2_LID,
        0,
        SmpAttribute::LinearForwardingTable(b),
    )
    .expect("S2 answers");
    assert!(f
        .lid(Method::Get, attr::NODE_INFO, 0, CA_LID, 0, none())
        .is_none());
    assert_eq!(f.switch(f.s2).stats().dropped(SwitchDropReason::LftDrop), 1);
}

// IBA 1 §14.2.4.1-2: with M_Key protection 2 a SubnGet without the key is not answered and
// counted in M_KeyViolations; with the key it is answered.
#[test]
fn mkey_violation_counted() {
    let mut f = Fabric::new(5);
    for path in [TO_CA, TO_S1] {
        let r = set_port_info(&mut f, path, 0, |p| {
            p.mkey = 0xabcd;
            p.mkey_protect_bits = 2;
        });
        assert_eq!(port_info(&r).mkey, 0xabcd);
        assert!(
            get_port_info(&mut f, path, 0, 0).is_none(),
            "no answer without the M_Key"
        );
        assert!(f
            .dr(
                Method::Set,
                attr::SWITCH_INFO,
                0,
                path,
                0,
                SmpAttribute::SwitchInfo(SwitchInfoRepr::default())
            )
            .is_none());
        let p = get_port_info(&mut f, path, 0, 0xabcd).expect("answered with the M_Key");
        assert_eq!(p.mkey_violations, 2);
    }
    assert_eq!(f.hca().counters().drops(HcaDropReason::SmpDiscarded), 2);
    assert_eq!(f.switch(f.s1).mkey_guard().violations, 2);
    // Protection 1: the Get passes, the M_Key reads 0.
    let mut p = get_port_info(&mut f, TO_CA, 0, 0xabcd).unwrap();
    p.mkey_protect_bits = 1;
    p.port_state = PortState::NoStateChange;
    f.dr(
        Method::Set,
        attr::PORT_INFO,
        0,
        TO_CA,
        0xabcd,
        SmpAttribute::PortInfo(p),
    )
    .unwrap();
    assert_eq!(get_port_info(&mut f, TO_CA, 0, 0).unwrap().mkey, 0);
}

// IBA 1 §14.2.5.7, §14.2.5.12: P_KeyTable and MulticastForwardingTable Sets write the tables
// the `Config` writes write.
#[test]
fn pkey_table_and_mft_sets() {
    let mut f = Fabric::new(6);
    let mut t = PKeyTableRepr::default();
    t.pkeys[0] = PKey(0xffff);
    t.pkeys[1] = PKey(0x8001);
    let r = f
        .dr(
            Method::Set,
            attr::P_KEY_TABLE,
            0,
            TO_CA,
            0,
            SmpAttribute::PKeyTable(t),
        )
        .unwrap();
    assert_eq!(r.attribute, SmpAttribute::PKeyTable(t));
    assert_eq!(
        f.hca().port(1).unwrap().pkeys,
        vec![PKey(0xffff), PKey(0x8001)]
    );
    let r = f
        .dr(Method::Get, attr::P_KEY_TABLE, 4, TO_CA, 0, none())
        .unwrap();
    assert_eq!(
        r.status(),
        MadStatus::INVALID_ATTR_VALUE,
        "block 4 is past PartitionCap"
    );
    let mut b = MftBlockRepr {
        port_masks: [0; 32],
    };
    b.port_masks[1] = 1 << 2 | 1 << 5;
    f.dr(
        Method::Set,
        attr::MULTICAST_FORWARDING_TABLE,
        0,
        TO_S1,
        0,
        SmpAttribute::MulticastForwardingTable(b),
    )
    .unwrap();
    assert_eq!(f.switch(f.s1).mft(0xc001), Some(&[2u8, 5][..]));
    let r = f
        .dr(
            Method::Get,
            attr::MULTICAST_FORWARDING_TABLE,
            0,
            TO_S1,
            0,
            none(),
        )
        .unwrap();
    assert_eq!(r.attribute, SmpAttribute::MulticastForwardingTable(b));
}

// IBA 1 §14.2.5.13, §13.4.7: SMInfo is answered only where an SM runs; elsewhere status 0x000C.
#[test]
fn sm_info_only_where_an_sm_runs() {
    let mut f = Fabric::new(7);
    let r = f
        .dr(Method::Get, attr::SM_INFO, 0, TO_CA, 0, none())
        .unwrap();
    assert_eq!(r.status(), MadStatus::METHOD_ATTR_UNSUPPORTED);
    let r = f
        .dr(Method::Get, attr::SM_INFO, 0, TO_S1, 0, none())
        .unwrap();
    assert_eq!(r.status(), MadStatus::METHOD_ATTR_UNSUPPORTED);
    let info = SmInfoRepr {
        guid: Guid(CA_GUID + 1),
        sm_key: 0x5eed,
        act_count: 9,
        priority: 3,
        sm_state: SmState::Standby,
    };
    let ca = f.ca;
    f.sim
        .with_node::<ipoib_fabric::hw::hca::Hca, _>(ca, |h, _, _| h.set_sm_info(1, Some(info)));
    let r = f
        .dr(Method::Get, attr::SM_INFO, 0, TO_CA, 0, none())
        .unwrap();
    assert_eq!(
        r.attribute,
        SmpAttribute::SmInfo(SmInfoRepr { sm_key: 0, ..info })
    );
}

// IBA 1 §14.2.5.1 trap 128, §14.2.5.4 PortStateChange: a switch whose port's link changes
// sends Trap(Notice 128) to its master SM and sets PortStateChange until the SM clears it.
#[test]
fn trap_128_on_link_change() {
    let mut f = Fabric::new(8);
    assign_lids(&mut f);
    let r = f
        .lid(
            Method::Set,
            attr::SWITCH_INFO,
            0,
            S2_LID,
            0,
            SmpAttribute::SwitchInfo(SwitchInfoRepr {
                port_state_change: true,
                linear_fdb_top: 63,
                ..SwitchInfoRepr::default()
            }),
        )
        .unwrap();
    let SmpAttribute::SwitchInfo(s) = r.attribute else {
        panic!()
    };
    assert!(!s.port_state_change, "writing 1 clears it");
    let link = f
        .sim
        .link_of(ipoib_fabric::hw::sim::PortRef {
            node: f.ca,
            port: 1,
        })
        .unwrap();
    let at = f.sim.now();
    f.sim.schedule_link_state(link, at, false);
    f.sim.run_until_idle(1000);
    let inbox = std::mem::take(&mut f.sim.node_mut::<Probe>(f.probe).unwrap().inbox);
    let trap = one_smp(inbox).expect("a trap");
    assert_eq!(trap.header.method, Method::Trap);
    let SmpAttribute::Notice(n) = trap.attribute else {
        panic!()
    };
    assert_eq!(
        (n.trap_number(), n.trap_lid_addr()),
        (Some(128), Some(S2_LID))
    );
    let r = f
        .lid(Method::Get, attr::SWITCH_INFO, 0, S2_LID, 0, none())
        .unwrap();
    let SmpAttribute::SwitchInfo(s) = r.attribute else {
        panic!()
    };
    assert!(s.port_state_change);
    assert_eq!(f.switch(f.s2).port_state(7), Some(HwState::Down));
}

use ipoib_wire::smp::SmpRoute;

/// Packets and 4-byte words (LRH through ICRC) the link carried from `from`.
fn link_sent(f: &Fabric, from: PortRef) -> (u64, u64) {
    let l = f.sim.link(f.sim.link_of(from).unwrap());
    let side = usize::from(l.ends[1] == from);
    let s = l.dirs[side].stats;
    (s.sent, (s.bytes - 2 * s.sent) / 4)
}

// IBA 1 §16.1.3.5, §16.1.4.11: the PMA's counters are the traffic the link carried: the CA's
// PortCountersExtended and the switch's PortCounters equal the simulator's link counts.
#[test]
fn perf_counters_equal_the_fabric_counts() {
    let mut f = Fabric::new(9);
    assign_lids(&mut f);
    for _ in 0..5 {
        f.lid(Method::Get, attr::NODE_INFO, 0, CA_LID, 0, none())
            .unwrap();
    }
    let resp = f
        .perf_get(perf_attr::PORT_COUNTERS_EXTENDED, 1, CA_LID)
        .expect("PMA answer");
    let ext = PortCountersExtRepr::parse(&resp[PERF_DATA_OFFSET..]).unwrap();
    let ca = PortRef {
        node: f.ca,
        port: 1,
    };
    let s2 = PortRef {
        node: f.s2,
        port: 7,
    };
    let (ca_pkts, ca_words) = link_sent(&f, ca);
    let (s2_pkts, s2_words) = link_sent(&f, s2);
    // The answer itself left after the counters were read: one packet of 256 + 36 bytes.
    assert_eq!(ext.port_xmit_pkts, ca_pkts - 1);
    assert_eq!(ext.port_xmit_data, ca_words - (256 + 36 - 2) / 4);
    assert_eq!((ext.port_rcv_pkts, ext.port_rcv_data), (s2_pkts, s2_words));
    assert_eq!(ext.port_unicast_rcv_pkts, s2_pkts);
    // Three SubnGet/SubnSet pairs, five SubnGets and this Get.
    assert_eq!(ext.port_rcv_pkts, 12);
    let resp = f
        .perf_get(perf_attr::PORT_COUNTERS, 7, S2_LID)
        .expect("switch PMA");
    let pc = PortCountersRepr::parse(&resp[PERF_DATA_OFFSET..]).unwrap();
    let (ca_pkts, ca_words) = link_sent(&f, ca);
    let (s2_pkts, s2_words) = link_sent(&f, s2);
    assert_eq!(
        (u64::from(pc.port_xmit_pkts), u64::from(pc.port_xmit_data)),
        (s2_pkts, s2_words)
    );
    assert_eq!(
        (u64::from(pc.port_rcv_pkts), u64::from(pc.port_rcv_data)),
        (ca_pkts, ca_words)
    );
    assert_eq!(f.switch(f.s2).port_traffic(7).unwrap().xmit_pkts, s2_pkts);
    // An attribute the PMA does not have: status 0x000C.
    let resp = f.perf_get(0x0010, 1, CA_LID).unwrap();
    assert_eq!(&resp[4..6], &[0x00, 0x0c]);
}

use ipoib_fabric::hw::hca::Hca;
use ipoib_fabric::hw::sim::{Device, PortRef, Tx};
use ipoib_fabric::hw::sma;
use ipoib_fabric::hw::switch::Switch;
use ipoib_proto::time::Instant;
use ipoib_wire::mad::attr::perf as perf_attr;
use ipoib_wire::perf::{PortCountersExtRepr, PortCountersRepr, PERF_DATA_OFFSET};
use proptest::prelude::*;

proptest! {
    // No SMP, however wrong its hop fields, paths, method, attribute or data, panics an SMA
    // (a switch or a CA), and each answers with at most one packet.
    #[test]
    fn random_smps_never_panic(
        mad in proptest::collection::vec(any::<u8>(), 256),
        dr: bool, class_version in 0u8..3, method in prop_oneof![Just(1u8), Just(2), Just(7), any::<u8>()],
        attribute in prop_oneof![0x10u16..0x21, any::<u16>()],
        hops in (any::<u8>(), 0u8..70), port in 0u8..10, lids in (any::<u16>(), any::<u16>()),
        perf: bool,
    ) {
        let mut mad = mad;
        mad[0] = 1;
        mad[1] = if perf { 0x04 } else if dr { 0x81 } else { 0x01 };
        mad[2] = class_version;
        mad[3] = method;
        mad[16..18].copy_from_slice(&attribute.to_be_bytes());
        (mad[6], mad[7]) = hops;
        let packet = if perf {
            sma::gmp_packet(lids.0, lids.1, 0, ipoib_wire::PKey::DEFAULT, 1, &mad)
        } else {
            sma::smp_packet(lids.0, lids.1, 0, &mad)
        };
        let mut sw = Switch::new(ipoib_wire::Guid(1), 8, "s");
        let mut hca = Hca::new(ipoib_wire::Guid(2), 2);
        let mut tx = Tx::default();
        hca.link_state(Instant::ZERO, 1, true, &mut tx);
        for dev in [&mut sw as &mut dyn Device, &mut hca] {
            let mut tx = Tx::default();
            dev.receive(Instant::ZERO, port, packet.clone(), &mut tx);
            dev.receive(Instant::ZERO, port, packet[..packet.len() / 2].to_vec(), &mut tx);
            prop_assert!(tx.drain().count() <= 1);
        }
    }
}

// IBA 1 §14.2.5.13, §14.2.5.2: in a built subnet the SM's port answers SMInfo as the master
// and every HCA's SMA its node description from the topology.
#[test]
fn built_subnet_names_the_sm_and_the_nodes() {
    use ipoib_fabric::hw::topology::Topology;
    use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
    let topo = Topology::parse_net(ipoib_fabric::testing::nets::NET).unwrap();
    let net = Subnet::build(SubnetOptions::new(topo, 1)).unwrap();
    let sm_host = net.host_device(0).hca();
    let info = sm_host
        .port(1)
        .unwrap()
        .sm_info
        .expect("the SM runs on host 0's port");
    assert_eq!(
        (info.guid, info.sm_state),
        (sm_host.port(1).unwrap().guid, SmState::Master)
    );
    assert!(net.host_device(1).hca().port(1).unwrap().sm_info.is_none());
    let h = net.host(1).topo_node;
    assert_eq!(
        net.host_device(1).hca().node_description(),
        net.topology().nodes()[h].desc
    );
}

// IBA 1 §14.2.5.5, §14.2.5.8, §14.2.5.9: GUIDInfo, SLtoVLMappingTable and VLArbitrationTable
// read back what was written, by port (and input port) on a switch; read-only attributes refuse
// a Set with status 0x000C; a block past the table, 0x001C.
#[test]
fn tables_read_back_what_was_written() {
    use ipoib_wire::smp::{SlToVlTableRepr, VlArbEntry, VlArbTableRepr};
    let mut f = Fabric::new(10);
    let r = f
        .dr(Method::Get, attr::GUID_INFO, 0, TO_CA, 0, none())
        .unwrap();
    let SmpAttribute::GuidInfo(g) = r.attribute else {
        panic!()
    };
    assert_eq!((g.guids[0], g.guids[1]), (Guid(CA_GUID + 1), Guid(0)));
    let r = f
        .dr(Method::Get, attr::NODE_DESCRIPTION, 0, TO_CA, 0, none())
        .unwrap();
    assert!(
        matches!(r.attribute, SmpAttribute::NodeDescription(d) if d.text() == "ipoib-fabric HCA")
    );
    let mut sl2vl = SlToVlTableRepr::default();
    sl2vl.vls[3] = 1;
    let mut arb = VlArbTableRepr::default();
    arb.entries[0] = VlArbEntry {
        vl: 0,
        weight: 0xff,
    };
    for (path, sl_mod, arb_mod) in [(TO_CA, 0, 1 << 16), (TO_S2, 2 << 8 | 7, 1 << 16 | 7)] {
        let set = f
            .dr(
                Method::Set,
                attr::SL_TO_VL_MAPPING_TABLE,
                sl_mod,
                path,
                0,
                SmpAttribute::SlToVlMappingTable(sl2vl),
            )
            .unwrap();
        assert_eq!(set.attribute, SmpAttribute::SlToVlMappingTable(sl2vl));
        let get = f
            .dr(
                Method::Get,
                attr::SL_TO_VL_MAPPING_TABLE,
                sl_mod,
                path,
                0,
                none(),
            )
            .unwrap();
        assert_eq!(get.attribute, SmpAttribute::SlToVlMappingTable(sl2vl));
        f.dr(
            Method::Set,
            attr::VL_ARBITRATION_TABLE,
            arb_mod,
            path,
            0,
            SmpAttribute::VlArbitrationTable(arb),
        )
        .unwrap();
        let get = f
            .dr(
                Method::Get,
                attr::VL_ARBITRATION_TABLE,
                arb_mod,
                path,
                0,
                none(),
            )
            .unwrap();
        assert_eq!(get.attribute, SmpAttribute::VlArbitrationTable(arb));
        let bad = f
            .dr(
                Method::Get,
                attr::VL_ARBITRATION_TABLE,
                5 << 16,
                path,
                0,
                none(),
            )
            .unwrap();
        assert_eq!(bad.status(), MadStatus::INVALID_ATTR_VALUE);
        let ro = f
            .dr(Method::Set, attr::NODE_INFO, 0, path, 0, none())
            .unwrap();
        assert_eq!(ro.status(), MadStatus::METHOD_ATTR_UNSUPPORTED);
    }
    // Another input port of the switch keeps its own (default) table.
    let other = f
        .dr(
            Method::Get,
            attr::SL_TO_VL_MAPPING_TABLE,
            3 << 8 | 7,
            TO_S2,
            0,
            none(),
        )
        .unwrap();
    assert_eq!(
        other.attribute,
        SmpAttribute::SlToVlMappingTable(SlToVlTableRepr::default())
    );
    let bad = f
        .dr(Method::Get, attr::PORT_INFO, 9, TO_S2, 0, none())
        .unwrap();
    assert_eq!(
        bad.status(),
        MadStatus::INVALID_ATTR_VALUE,
        "S2 has ports 0-8"
    );
}

// IBA 1 §14.2.2.2 C14-9:1, §14.2.2.3 C14-13: an SM on an HCA's QP0 posts a directed-route
// SubnGet with HopPointer 0; its port moves the pointer to 1 and sends it out of
// InitialPath[1]; the CA's answer comes back through the switch to the SM's QP0.
#[test]
fn an_sm_on_qp0_reads_by_directed_route() {
    use ipoib_fabric::hw::hca::special_qpn;
    use ipoib_fabric::hw::link::LinkParams;
    use ipoib_fabric::hw::sim::Simulator;
    use ipoib_fabric::hw::verbs::{AddressHandle, RecvWr, SendWr, UdDest, WcOpcode, WcStatus};
    use ipoib_wire::QKey;
    let mut sim = Simulator::new(11);
    let sm = sim.add_node(Box::new(Hca::new(Guid(0x10), 2)), 2);
    let sw = sim.add_node(Box::new(Switch::new(Guid(S1_GUID), 8, "S1")), 8);
    let ca = sim.add_node(Box::new(Hca::new(Guid(CA_GUID), 1)), 1);
    let p = |node, port| PortRef { node, port };
    let l1 = sim.connect(p(sm, 2), p(sw, 3), LinkParams::default());
    let l2 = sim.connect(p(sw, 5), p(ca, 1), LinkParams::default());
    for l in [l1, l2] {
        sim.schedule_link_state(l, Instant::ZERO, true);
    }
    sim.run_until_idle(100);
    let mut f = Fabric::new(0); // only for its SMP builder
    let mut mad = f.smp(Method::Get, attr::NODE_INFO, 0, Some(&[2, 5]), 0, none());
    mad[6] = 0; // HopPointer 0: the sending port moves it
    let qp0 = special_qpn(2, 0);
    let send = |h: &mut Hca, path_port: u8, wr_id: u64| {
        let mut m = mad;
        m[129] = path_port;
        let mut wr = SendWr::send(wr_id, m.to_vec());
        wr.ud = Some(UdDest {
            ah: AddressHandle {
                dlid: 0xffff,
                sl: 0,
                src_path_bits: 0,
                grh: None,
                port: 2,
            },
            remote_qpn: 0,
            remote_qkey: QKey(0),
            pkey_index: None,
        });
        h.post_send(qp0, wr).unwrap();
    };
    sim.with_node::<Hca, _>(sm, |h, _, _| {
        h.post_recv(
            qp0,
            RecvWr {
                wr_id: 7,
                capacity: 512,
            },
        )
        .unwrap();
        send(h, 2, 1);
        send(h, 1, 2); // InitialPath[1] names another port: not sent
    });
    sim.run_until_idle(1000);
    let h = sim.node_mut::<Hca>(sm).unwrap();
    let cq = h.special_cq(2).unwrap();
    let done = h.poll_cq(cq, 10);
    let bad = done
        .iter()
        .find(|c| c.wr_id == 2)
        .expect("a completion for the bad path");
    assert_eq!(bad.status, WcStatus::LocQpOpErr);
    let got = done
        .iter()
        .find(|c| c.opcode == WcOpcode::Recv)
        .expect("the answer reached QP0");
    let r = SmpMadRepr::parse(&got.data[got.data.len() - 256..]).unwrap();
    assert_eq!(
        (r.header.method, r.direction()),
        (Method::GetResp, Some(true))
    );
    let SmpAttribute::NodeInfo(n) = r.attribute else {
        panic!("{:?}", r.attribute)
    };
    assert_eq!((n.node_guid, n.local_port_num), (Guid(CA_GUID), 1));
    let SmpRoute::Directed(d) = r.route else {
        panic!()
    };
    assert_eq!(&d.return_path[1..3], &[3, 1]);
    assert_eq!(sim.node::<Hca>(ca).unwrap().counters().smp_answered, 1);
}
