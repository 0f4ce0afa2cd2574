//! A switch's SMA and the links of its ports, measured against ibsim under OpenSM
//! (docs/OPENSM-NOTES.md "ibsim against our fabric"): LinearFDBTop as the SM writes it, and
//! `ibportstate` disabling and enabling a port. The probe and fabric of `sma.rs`.

#[path = "common/sma.rs"]
mod fabric;

use fabric::*;
use ipoib_fabric::hw::switch::SwitchDropReason;
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::{MadStatus, Method};
use ipoib_wire::smp::{MftBlockRepr, PortPhysState, PortState, SmpAttribute};

// IBA 1 §14.2.5.4, §14.2.5.10: LinearFDBTop moves only by SubnSet(SwitchInfo). OpenSM sets it
// (11 on a subnet of 11 LIDs) before it writes LFT block 0, LIDs 0-63: the block leaves it at 11,
// as ibsim's switches do, and a DLID above it is discarded though the block routes it. The
// switch used to extend LinearFDBTop to the block's end (63).
#[test]
fn an_lft_block_above_linear_fdb_top_leaves_it_and_dlids_above_it_drop() {
    let mut f = Fabric::new(4);
    assign_lids(&mut f);
    let top = CA_LID - 1;
    let s = set_lft_top(&mut f, TO_S2, top);
    assert_eq!(s.linear_fdb_top, top);
    // The block reads back as written, entries above the top included.
    set_lft_block(
        &mut f,
        TO_S2,
        &[(PROBE_LID, 2), (CA_LID, 7), (S1_LID, 2), (S2_LID, 0)],
    );
    let r = f
        .dr(Method::Get, attr::SWITCH_INFO, 0, TO_S2, 0, none())
        .expect("S2 answers");
    let SmpAttribute::SwitchInfo(s) = r.attribute else {
        panic!("a SwitchInfo answer: {r:?}")
    };
    assert_eq!(s.linear_fdb_top, top);
    assert_eq!(f.switch(f.s2).lft().len(), usize::from(top) + 1);
    // The CA's LID is above S2's top: S1 forwards the SMP to S2, which discards it.
    let before = f.switch(f.s2).stats().dropped(SwitchDropReason::UnknownLid);
    assert!(f
        .lid(Method::Get, attr::NODE_INFO, 0, CA_LID, 0, none())
        .is_none());
    assert_eq!(
        f.switch(f.s2).stats().dropped(SwitchDropReason::UnknownLid),
        before + 1
    );
    // Raised again, the entry written above the old top is used.
    set_lft_top(&mut f, TO_S2, S2_LID);
    assert!(f
        .lid(Method::Get, attr::NODE_INFO, 0, CA_LID, 0, none())
        .is_some());
}

// IBA 1 §14.2.5.6 PortPhysicalState, §5.6.2.1: `ibportstate S2 7 disable` writes Disabled to
// S2's port 7 (to the CA). The answer and S2's PortInfo then say Disabled; the link goes down
// (S2's port Down, trap 128 to the SM, LinkDowned counted, the CA out of reach). `ibportstate S2
// 7 enable` writes Polling: the link trains again, both ends LinkUp in Init and another trap 128,
// as a cable plugged back. Both writes used to be ignored and the link stayed up.
#[test]
fn port_phys_state_disabled_takes_the_link_down_and_polling_brings_it_back() {
    let mut f = Fabric::new(4);
    assign_lids(&mut f);
    for (write, phys, state) in [
        (
            PortPhysState::Disabled,
            PortPhysState::Disabled,
            PortState::Down,
        ),
        (
            PortPhysState::Polling,
            PortPhysState::LinkUp,
            PortState::Init,
        ),
    ] {
        let smps = set_phys(&mut f, TO_S2, 7, write);
        assert_eq!(smps.len(), 2, "the answer and a trap: {smps:?}");
        assert_eq!(smps[0].status(), MadStatus::SUCCESS);
        if write == PortPhysState::Disabled {
            assert_eq!(port_info(&smps[0]).port_phys_state, PortPhysState::Disabled);
        }
        let SmpAttribute::Notice(n) = smps[1].attribute else {
            panic!("a trap: {:?}", smps[1])
        };
        assert_eq!(
            (n.trap_number(), n.trap_lid_addr()),
            (Some(128), Some(S2_LID))
        );
        let p = get_port_info(&mut f, TO_S2, 7, 0).expect("S2 answers");
        assert_eq!((p.port_phys_state, p.port_state), (phys, state));
        let ca = get_port_info(&mut f, TO_CA, 1, 0);
        assert_eq!(
            ca.map(|c| (c.port_phys_state, c.port_state)),
            (write == PortPhysState::Polling).then_some((PortPhysState::LinkUp, PortState::Init)),
            "the CA out of reach while S2's port is disabled"
        );
        assert_eq!(f.port_counters(7, S2_LID).link_downed_counter, 1);
    }
}

// IBA 1 §14.2.5.6, §5.6.2.1: a disabled port's link stays down whatever its cable does, and a
// port enabled again trains only with its cable there. `ibportstate S2 7 disable`, the cable
// pulled (nothing changes for either end: no trap 128), `enable` (Polling: no cable, no link,
// the CA out of reach), the cable plugged back (LinkUp, Init, a trap 128, the CA answers).
#[test]
fn a_disabled_port_links_again_only_enabled_and_plugged() {
    let mut f = Fabric::new(4);
    assign_lids(&mut f);
    let link = f.ca_link();
    assert_eq!(set_phys(&mut f, TO_S2, 7, PortPhysState::Disabled).len(), 2);
    let traps = f.switch(f.s2).stats().traps_sent;
    let at = f.sim.now();
    f.sim.schedule_link_state(link, at, false);
    f.sim.run_until_idle(1000);
    let inbox = std::mem::take(&mut f.sim.node_mut::<Probe>(f.probe).unwrap().inbox);
    assert!(
        inbox.is_empty(),
        "a disabled port's cable pulled changes no link state: {:?}",
        one_smp(inbox)
    );
    assert_eq!(f.switch(f.s2).stats().traps_sent, traps);
    let back = set_phys(&mut f, TO_S2, 7, PortPhysState::Polling);
    assert_eq!(back.len(), 1, "the answer alone, no link came up: {back:?}");
    let p = get_port_info(&mut f, TO_S2, 7, 0).expect("S2 answers");
    assert_eq!(
        (p.port_phys_state, p.port_state),
        (PortPhysState::Polling, PortState::Down)
    );
    assert!(get_port_info(&mut f, TO_CA, 1, 0).is_none(), "no cable");
    let at = f.sim.now();
    f.sim.schedule_link_state(link, at, true);
    f.sim.run_until_idle(1000);
    let inbox = std::mem::take(&mut f.sim.node_mut::<Probe>(f.probe).unwrap().inbox);
    let trap = one_smp(inbox).expect("a trap 128 for the link up");
    assert_eq!(trap.header.method, Method::Trap);
    let p = get_port_info(&mut f, TO_S2, 7, 0).expect("S2 answers");
    assert_eq!(
        (p.port_phys_state, p.port_state),
        (PortPhysState::LinkUp, PortState::Init)
    );
    let ca = get_port_info(&mut f, TO_CA, 1, 0).expect("the CA answers");
    assert_eq!(
        (ca.port_phys_state, ca.port_state),
        (PortPhysState::LinkUp, PortState::Init)
    );
}

// IBA 1 §14.2.5.6: `ibportstate S1 3 disable` from the SM behind S1's port 3, the port its SMP
// came in by: the answer leaves before the link goes down (as with ibsim and hardware, where
// the tool says it is about to cut itself off), and S1 is out of reach afterwards.
#[test]
fn disabling_the_port_the_smp_came_in_by_answers_first() {
    let mut f = Fabric::new(4);
    assign_lids(&mut f);
    let mut w = get_port_info(&mut f, TO_S1, 3, 0).expect("S1 answers");
    w.port_state = PortState::NoStateChange;
    w.port_phys_state = PortPhysState::Disabled;
    let r = f
        .dr(
            Method::Set,
            attr::PORT_INFO,
            3,
            TO_S1,
            0,
            SmpAttribute::PortInfo(w),
        )
        .expect("the answer came back before the link went down");
    assert_eq!(r.status(), MadStatus::SUCCESS);
    assert_eq!(port_info(&r).port_phys_state, PortPhysState::Disabled);
    assert!(get_port_info(&mut f, TO_S1, 3, 0).is_none(), "cut off");
}

/// S1's SwitchInfo:MulticastFDBTop.
fn multicast_fdb_top(f: &mut Fabric) -> u16 {
    let r = f
        .dr(Method::Get, attr::SWITCH_INFO, 0, TO_S1, 0, none())
        .expect("S1 answers");
    let SmpAttribute::SwitchInfo(s) = r.attribute else {
        panic!("a SwitchInfo answer: {r:?}")
    };
    s.multicast_fdb_top
}

/// MFT block `block` of S1 with `mlid_index` (within the block) sent to ports 2 and 5.
fn set_mft_entry(f: &mut Fabric, block: u32, mlid_index: usize) {
    let mut b = MftBlockRepr {
        port_masks: [0; 32],
    };
    b.port_masks[mlid_index] = 1 << 2 | 1 << 5;
    let r = f
        .dr(
            Method::Set,
            attr::MULTICAST_FORWARDING_TABLE,
            block,
            TO_S1,
            0,
            SmpAttribute::MulticastForwardingTable(b),
        )
        .expect("S1 answers");
    assert_eq!(r.status(), MadStatus::SUCCESS);
}

// IBA 1 §14.2.5.4 SwitchInfo:MulticastFDBTop is an MLID: the top of the multicast forwarding
// table, a value below 0xC000 meaning no entry (OpenSM `osm_mcast_mgr.c` writes
// `IB_LID_MCAST_START_HO + ... - 1`; `ibroute -M` ends its dump there and warns "illegal top mlid"
// below 0xBFFF). The switch answered the entry's index from 0xC000, and `ibroute -M` printed
// "dump_multicast_tables: illegal top mlid 7" on a subnet whose highest group was 0xC007
// (docs/OPENSM-NOTES.md "Diags on a fat tree").
#[test]
fn multicast_fdb_top_is_the_highest_mlid_in_use() {
    let mut f = Fabric::new(4);
    assign_lids(&mut f);
    assert_eq!(multicast_fdb_top(&mut f), 0, "no entry: below 0xC000");
    set_mft_entry(&mut f, 0, 7);
    assert_eq!(multicast_fdb_top(&mut f), 0xc007);
    // Block 1 holds MLIDs 0xC020-0xC03F.
    set_mft_entry(&mut f, 1, 2);
    assert_eq!(multicast_fdb_top(&mut f), 0xc022);
}

// IBA 1 §13.4.7: a Get or Set of a management class the switch has no agent for (Congestion
// Control 0x21, Annex A10, which is optional; a vendor class as `vendstat` sends) is answered
// GetResp with status 0x000C (method/attribute unsupported) and the request's TID, attribute and
// data, as Linux's MAD layer answers one no agent registered (`mad.c`
// `generate_unmatched_resp`, docs/DIAGS.md) and as our HCAs' hosts do; a request of another
// method, and a response, get nothing. `ibccquery` and `vendstat -N` against a switch then fail
// at once with that status instead of waiting for a timeout. The switch used to drop them all.
#[test]
fn a_gmp_of_a_class_the_switch_does_not_serve_is_answered_unsupported() {
    use ipoib_wire::mad::{MadHeaderRepr, MgmtClass, MAD_LEN};
    let mut f = Fabric::new(5);
    assign_lids(&mut f);
    for (class, method, answered) in [
        (MgmtClass::Cc, Method::Get, true),
        (MgmtClass::Cc, Method::Set, true),
        (MgmtClass::from(0x0a), Method::Get, true),
        (MgmtClass::Cc, Method::GetResp, false),
        (MgmtClass::Cc, Method::from(0x06), false),
    ] {
        let mut mad = [0u8; MAD_LEN];
        let h = MadHeaderRepr {
            base_version: 1,
            mgmt_class: class,
            class_version: 2,
            method,
            status: MadStatus::SUCCESS,
            class_specific: 0,
            transaction_id: 0x1234_5678,
            attribute_id: 0x0011,
            attribute_modifier: 3,
        };
        h.emit(&mut mad);
        mad[100] = 0xab;
        let packet = ipoib_fabric::hw::sma::gmp_packet(
            PROBE_LID,
            S1_LID,
            0,
            ipoib_wire::PKey::DEFAULT,
            1,
            &mad,
        );
        let back = f.exchange(packet);
        if !answered {
            assert!(back.is_empty(), "{class:?} {method:?} answered");
            continue;
        }
        let [one] = back.as_slice() else {
            panic!("{class:?} {method:?}: {} answers", back.len());
        };
        let p = ipoib_wire::packet::Packet::parse(one).unwrap();
        let r = MadHeaderRepr::parse_bytes(p.payload).unwrap();
        assert_eq!(
            r,
            h.response(Method::GetResp, MadStatus::METHOD_ATTR_UNSUPPORTED)
        );
        assert_eq!(p.payload[100], 0xab);
        assert_eq!(p.ext.deth.map(|d| d.src_qp), Some(1));
    }
}
