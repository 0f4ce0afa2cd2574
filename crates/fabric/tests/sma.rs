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
    LftBlockRepr, MftBlockRepr, NodeType, PKeyTableRepr, PortState, SmInfoRepr, SmState,
    SmpAttribute, SwitchInfoRepr,
};
use ipoib_wire::{Guid, Mtu, PKey};

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

// IBA 1 §14.2.5.6: a switch port's MTUCap is its cable's MTU where the topology gives one
// (`Switch::set_port_mtu_cap`): PortInfo reports it, and a NeighborMTU above it is refused with
// status 0x001C, nothing changed; one at it is taken.
#[test]
fn neighbor_mtu_above_a_narrow_cables_mtu_cap_is_refused() {
    use ipoib_fabric::hw::switch::Switch;
    let mut f = Fabric::new(3);
    let s2 = f.s2;
    let sw = f.sim.node_mut::<Switch>(s2).unwrap();
    assert!(sw.set_port_mtu_cap(7, Mtu::Mtu2048));
    assert!(!sw.set_port_mtu_cap(9, Mtu::Mtu2048), "no port 9");
    assert!(
        !sw.set_port_mtu_cap(7, Mtu::Unknown(6)),
        "an undefined code"
    );
    let before = f.switch(s2).port_mtu(7);
    assert_eq!(before, Some(Mtu::Mtu4096));
    let r = set_port_info(&mut f, TO_S2, 7, |p| {
        assert_eq!(p.mtu_cap, Mtu::Mtu2048);
        p.neighbor_mtu = Mtu::Mtu4096;
    });
    assert_eq!(r.status(), MadStatus::INVALID_ATTR_VALUE);
    assert_eq!(f.switch(s2).port_mtu(7), before);
    let r = set_port_info(&mut f, TO_S2, 7, |p| p.neighbor_mtu = Mtu::Mtu2048);
    assert_eq!(r.status(), MadStatus::SUCCESS);
    assert_eq!(f.switch(s2).port_mtu(7), Some(Mtu::Mtu2048));
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
    assert_eq!(s.linear_fdb_top, S2_LID);
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
    for (path, lid) in [(TO_CA, CA_LID), (TO_S1, S1_LID)] {
        // A LID and the SM's: a Set of LID or MasterSMLID 0 is refused (docs/conformance/
        // sma-set.md).
        let r = set_port_info(&mut f, path, 0, |p| {
            p.lid = lid;
            p.master_sm_lid = PROBE_LID;
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
    // The table holds every MLID the SA hands out, 0xC000-0xFFFE: block 511 (0xFFE0-0xFFFF) is
    // written too. With a table of 1,024 MLIDs the Set was refused, and groups past 0xC3FF
    // (`ipoib demo --hosts 1100 --topology fat-tree`) got no forwarding.
    b.port_masks = [0; 32];
    b.port_masks[30] = 1 << 3;
    let r = f
        .dr(
            Method::Set,
            attr::MULTICAST_FORWARDING_TABLE,
            511,
            TO_S1,
            0,
            SmpAttribute::MulticastForwardingTable(b),
        )
        .unwrap();
    assert_eq!(
        r.status(),
        MadStatus::SUCCESS,
        "block 511 is within the cap"
    );
    assert_eq!(f.switch(f.s1).mft(0xfffe), Some(&[3u8][..]));
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
    // IBA 1 §14.4.1: the SM_Key goes only to a requester that presents it (in the SMInfo of
    // its SubnGet); the M_Key field is no key to it.
    let asking = |sm_key| SmpAttribute::SmInfo(SmInfoRepr { sm_key, ..info });
    let r = f
        .dr(Method::Get, attr::SM_INFO, 0, TO_CA, 0, asking(0x5eed))
        .unwrap();
    assert_eq!(r.attribute, SmpAttribute::SmInfo(info), "the right key");
    let r = f
        .dr(Method::Get, attr::SM_INFO, 0, TO_CA, 0x5eed, asking(0x5eee))
        .unwrap();
    assert_eq!(
        r.attribute,
        SmpAttribute::SmInfo(SmInfoRepr { sm_key: 0, ..info }),
        "a wrong key"
    );
    // A SubnSet(SMInfo) (HANDOVER, ...) is the SM's to answer (IBA 1 §14.4.1): the SMA keeps
    // out, and with no SM program on QP0 nothing answers.
    let set = f.dr(Method::Set, attr::SM_INFO, 1, TO_CA, 0, asking(0x5eed));
    assert_eq!(set, None);
}

// IBA 1 §14.2.5.1 trap 128, §14.2.5.4 PortStateChange: a switch whose port's link changes
// sends Trap(Notice 128) to its master SM and sets PortStateChange until the SM clears it.
#[test]
fn trap_128_on_link_change() {
    let mut f = Fabric::new(8);
    assign_lids(&mut f);
    let s = clear_port_state_change(&mut f);
    assert!(!s.port_state_change, "writing 1 clears it");
    let trap = one_smp(f.set_ca_link(false)).expect("a trap");
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

// IBA 1 §14.2.5.4: writing 1 to PortStateChange clears the changes the SM read; a link that
// changed after its SubnGet(SwitchInfo) (a host attached while OpenSM sweeps, its trap 128 not
// yet sendable) keeps the bit set for the SM's next read, which a light sweep makes
// (docs/OPENSM-LIMITS.md "A host attached while OpenSM sweeps").
#[test]
fn a_link_change_after_the_read_survives_the_write_of_one() {
    let mut f = Fabric::new(8);
    assign_lids(&mut f);
    assert!(!clear_port_state_change(&mut f).port_state_change);
    assert!(!switch_info(&mut f).port_state_change);
    // The CA's link goes down after the SM's read, before its write.
    let trap = one_smp(f.set_ca_link(false));
    assert_eq!(trap.map(|t| t.header.method), Some(Method::Trap));
    let s = write_one_to_port_state_change(&mut f);
    assert!(s.port_state_change, "a change the SM has not read stays");
    assert!(
        write_one_to_port_state_change(&mut f).port_state_change,
        "a Set's answer is no read"
    );
    assert!(
        switch_info(&mut f).port_state_change,
        "the next read sees it"
    );
    assert!(
        !write_one_to_port_state_change(&mut f).port_state_change,
        "once read, writing 1 clears it"
    );
    assert!(!switch_info(&mut f).port_state_change);
}

// IBA 1 §14.2.5.4 SwitchInfo:PortStateChange: the link state machine's changes set it, a
// SubnSet's do not (Armed, Active written by the SM); writing Down takes the link down, which does.
#[test]
fn port_state_change_not_set_by_subn_set() {
    let mut f = Fabric::new(8);
    assign_lids(&mut f);
    let psc = |f: &mut Fabric| {
        let r = f
            .lid(Method::Get, attr::SWITCH_INFO, 0, S2_LID, 0, none())
            .unwrap();
        let SmpAttribute::SwitchInfo(s) = r.attribute else {
            panic!()
        };
        s.port_state_change
    };
    let clear = |f: &mut Fabric| {
        clear_port_state_change(f);
    };
    // Down with the cable in: the link goes down and retrains to Init.
    clear(&mut f);
    set_port_info(&mut f, TO_S2, 7, |p| p.port_state = PortState::Down);
    assert_eq!(f.switch(f.s2).port_state(7), Some(HwState::Init));
    assert!(psc(&mut f));
    clear(&mut f);
    assert!(!psc(&mut f));
    set_port_info(&mut f, TO_S2, 7, |p| p.port_state = PortState::Armed);
    set_port_info(&mut f, TO_S2, 7, |p| p.port_state = PortState::Active);
    assert_eq!(f.switch(f.s2).port_state(7), Some(HwState::Active));
    assert!(!psc(&mut f), "SubnSet Armed, Active leave it clear");
}

use ipoib_wire::smp::SmpRoute;

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

// IBA 1 §13.4.7 Table 113: a ClassVersion other than 1 is answered "bad version" (0x0004), a
// request method the SMA does not have "method unsupported" (0x0008), with its response method.
#[test]
fn bad_version_and_unsupported_method() {
    let mut f = Fabric::new(12);
    for path in [TO_S1, TO_CA] {
        let mut smp = f.smp(Method::Get, attr::NODE_INFO, 0, Some(path), 0, none());
        smp[2] = 2;
        let r = one_smp(f.exchange(ipoib_fabric::hw::sma::smp_packet(0xffff, 0xffff, 0, &smp)))
            .expect("answered");
        assert_eq!(r.status(), MadStatus::BAD_VERSION);
    }
    let r = f
        .dr(Method::Send, attr::NODE_INFO, 0, TO_S1, 0, none())
        .expect("answered");
    assert_eq!(r.status(), MadStatus::METHOD_UNSUPPORTED);
    assert_eq!(u8::from(r.header.method), 0x83);
}

// IBA 1 §14.2.4.1, §14.2.5.1: a switch that knows its SM sends Trap(Notice 256, Bad M_Key) for an
// SMP that failed the check, naming the method, attribute and M_Key, and for a directed-route
// SMP its DRSLID, hop count and return path.
#[test]
fn bad_mkey_trap_256() {
    use ipoib_wire::mad::BadMKeyTrap;
    let mut f = Fabric::new(13);
    assign_lids(&mut f);
    set_port_info(&mut f, TO_S1, 0, |p| {
        p.mkey = 0x5eed;
        p.mkey_protect_bits = 2;
    });
    let smp = f.smp(Method::Get, attr::PORT_INFO, 4, Some(TO_S1), 0x0bad, none());
    let back = f.exchange(ipoib_fabric::hw::sma::smp_packet(0xffff, 0xffff, 0, &smp));
    let trap = one_smp(back).expect("a trap instead of an answer");
    assert_eq!((trap.header.method, trap.mkey), (Method::Trap, 0x5eed));
    let SmpAttribute::Notice(n) = trap.attribute else {
        panic!("{:?}", trap.attribute)
    };
    let t = BadMKeyTrap::from_notice(&n).expect("trap 256");
    assert_eq!(
        (t.lid, t.method, t.attribute_id, t.attribute_modifier),
        (S1_LID, 1, attr::PORT_INFO, 4)
    );
    assert_eq!((t.mkey, t.dr_notice, t.dr_hop_count), (0x0bad, true, 1));
    assert_eq!(
        &t.dr_return_path[..2],
        &[0, 3],
        "ReturnPath[1] is the port it came in by"
    );
    assert_eq!(f.switch(f.s1).stats().traps_sent, 1);
}

/// As an SM does: SubnGet(SwitchInfo) of switch 2, then SubnSet(SwitchInfo) writing 1 to
/// PortStateChange, which clears the changes read (IBA 1 §14.2.5.4); the SwitchInfo of the
/// Set's GetResp.
fn clear_port_state_change(f: &mut Fabric) -> SwitchInfoRepr {
    switch_info(f);
    write_one_to_port_state_change(f)
}

/// SubnGet(SwitchInfo) of switch 2 by LID.
fn switch_info(f: &mut Fabric) -> SwitchInfoRepr {
    let r = f
        .lid(Method::Get, attr::SWITCH_INFO, 0, S2_LID, 0, none())
        .unwrap();
    let SmpAttribute::SwitchInfo(s) = r.attribute else {
        panic!("a SwitchInfo answer: {r:?}")
    };
    s
}

/// SubnSet(SwitchInfo) of switch 2 writing 1 to PortStateChange; the SwitchInfo of the GetResp.
fn write_one_to_port_state_change(f: &mut Fabric) -> SwitchInfoRepr {
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
        panic!("a SwitchInfo answer: {r:?}")
    };
    s
}

// IBA 1 §7.2 (the link state machine's ActiveTrigger; docs/DEPLOYED.md "The link state machine:
// Armed to Active"): an Armed port that receives a data packet (here a PMA request, QP1 on VL0)
// goes Active by itself, a CA's port and a switch's port alike, and the answer leaves by it; of
// a switch only the port that received it (S2's port 7, Armed too, stays Armed), and no
// PortStateChange is set (IBA 1 §14.2.5.4). A subnet management packet (VL15) leaves a port
// Armed.
#[test]
fn an_armed_port_goes_active_on_a_data_packet() {
    use ipoib_wire::mad::attr::perf as perf_attr;
    let mut f = Fabric::new(13);
    assign_lids(&mut f);
    for (path, port) in [(TO_CA, 0), (TO_S2, 2), (TO_S2, 7)] {
        for state in [PortState::Down, PortState::Armed] {
            let r = set_port_info(&mut f, path, port, |p| p.port_state = state);
            assert_eq!(r.status(), MadStatus::SUCCESS);
        }
    }
    clear_port_state_change(&mut f);
    // SMPs by LID and by directed route through the Armed ports: still Armed.
    assert!(f
        .lid(Method::Get, attr::NODE_INFO, 0, CA_LID, 0, none())
        .is_some());
    assert_eq!(f.hca().port(1).unwrap().state, HwState::Armed);
    assert_eq!(f.switch(f.s2).port_state(2), Some(HwState::Armed));
    // A PMA request to the switch comes in by S2's port 2.
    assert!(f.perf_get(perf_attr::PORT_COUNTERS, 2, S2_LID).is_some());
    assert_eq!(f.switch(f.s2).port_state(2), Some(HwState::Active));
    assert_eq!(f.switch(f.s2).port_state(7), Some(HwState::Armed));
    // Through S2's port 7 (Armed) no data packet leaves for the CA: S2 Active on 7 first.
    let r = set_port_info(&mut f, TO_S2, 7, |p| p.port_state = PortState::Active);
    assert_eq!(r.status(), MadStatus::SUCCESS);
    assert_eq!(f.hca().port(1).unwrap().state, HwState::Armed);
    assert!(f.perf_get(perf_attr::PORT_COUNTERS, 1, CA_LID).is_some());
    assert_eq!(f.hca().port(1).unwrap().state, HwState::Active);
    let r = f.lid(Method::Get, attr::SWITCH_INFO, 0, S2_LID, 0, none());
    let Some(SmpAttribute::SwitchInfo(s)) = r.map(|r| r.attribute) else {
        panic!("a SwitchInfo answer")
    };
    assert!(
        !s.port_state_change,
        "Armed to Active sets no PortStateChange"
    );
}

// IBA 1 §14.2.5.6: a LID-routed SubnSet(PortInfo) giving a port a new LID, from a umad user
// (`smpquery`, `ibportstate`) on host 0. To host 1's port and to a switch's port 0 the answer
// arrives, routed by its DLID (the requester's LID); its SLID is the answering port's LID when it
// leaves, the new one, as Linux builds a QP0 answer's LRH (`qib_ud.c` `qib_make_ud_req`:
// `ppd->lid` at the send; docs/DEPLOYED.md "A SubnSet(PortInfo) that changes the LID"). To the
// requester's own port the answer is lost, as with Linux and ibsim: the request was looped back
// to the port's LID, the answer goes to that LID, which is no longer the port's, so it leaves by
// the link and the switch sends nothing back out of the port it came in by.
#[test]
fn a_lid_routed_set_of_a_new_lid_is_answered_from_the_new_lid() {
    use ipoib_fabric::hw::topology::Topology;
    use ipoib_fabric::node::host::Host;
    use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
    use ipoib_proto::mad_agent::MadAddr;
    use ipoib_wire::smp::SmpMadRepr;
    use std::time::Duration;
    let topo = Topology::parse_net(ipoib_fabric::testing::nets::NET).unwrap();
    let mut net = Subnet::build(SubnetOptions::new(topo, 3)).unwrap();
    net.sim_mut().run_for(Duration::from_millis(5));
    let h0 = net.host(0);
    let user = net
        .sim_mut()
        .with_node::<Host, _>(h0.node, |h, _, _| h.umad_attach())
        .unwrap();
    let lid_of = |net: &Subnet, i: usize| {
        let h = net.host_device(i);
        h.hca().port(h.mgmt_port()).unwrap().lid
    };
    let own = lid_of(&net, 0);
    let h1 = lid_of(&net, 1);
    let sw = net.switches().next().unwrap().1.lid();
    let mut f = Fabric::new(0); // only for its MAD builders
    let ask = |net: &mut Subnet, to: u16, mad: &[u8]| {
        let to = MadAddr {
            qpn: 0,
            ..MadAddr::gsi(to)
        };
        net.with_host(0, |h, _| h.umad_send(user, to, mad).unwrap());
        net.sim_mut().run_for(Duration::from_millis(1));
        let host = net.sim_mut().node_mut::<Host>(h0.node).unwrap();
        host.umad_take(user)
    };
    for (old, new, answered) in [(h1, 0x41, true), (sw, 0x42, true), (own, 0x43, false)] {
        let get = f.smp(Method::Get, attr::PORT_INFO, 0, None, 0, none());
        let got = ask(&mut net, old, &get);
        assert_eq!(got.len(), 1, "PortInfo of LID {old}");
        let mut p = port_info(&SmpMadRepr::parse(&got[0].mad).unwrap());
        p.lid = new;
        p.port_state = PortState::NoStateChange;
        let set = SmpAttribute::PortInfo(p);
        let set = f.smp(Method::Set, attr::PORT_INFO, 0, None, 0, set);
        let got = ask(&mut net, old, &set);
        if !answered {
            assert!(got.is_empty(), "the own port's answer went to its old LID");
            assert_eq!(lid_of(&net, 0), new);
            continue;
        }
        assert_eq!(got.len(), 1, "the answer to the Set at LID {old}");
        let r = SmpMadRepr::parse(&got[0].mad).unwrap();
        assert_eq!((r.status(), port_info(&r).lid), (MadStatus::SUCCESS, new));
        assert_eq!(got[0].from.lid, new, "the answer's SLID");
    }
}
