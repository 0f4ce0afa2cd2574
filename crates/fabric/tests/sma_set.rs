//! What a SubnSet(PortInfo) refuses and writes beyond the port state, LID and MTU, and the
//! AttributeModifiers the SMAs refuse (IBA 1 §14.2.5, §14.2.5.6), measured against Linux's qib
//! SMA (docs/conformance/sma-set.md). The probe and fabric of `sma.rs`:
//! `probe:1 - 3:S1:5 - 2:S2:7 - 1:CA`.

#[path = "common/sma.rs"]
mod fabric;

use fabric::*;
use ipoib_fabric::hw::hca::Hca;
use ipoib_fabric::hw::link::LinkParams;
use ipoib_fabric::hw::sim::{PortRef, Simulator};
use ipoib_proto::time::Instant;
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::{MadStatus, Method};
use ipoib_wire::smp::{PortInfoRepr, PortState, SmpAttribute};
use ipoib_wire::Guid;

/// The CA's port, S2's port 0 and S2's external port 7 (to the CA).
const PORTS: [(&[u8], u32); 3] = [(TO_CA, 0), (TO_S2, 0), (TO_S2, 7)];

// Values no SMA may take (Linux's qib `subn_set_portinfo` sets status 0x001C for each): LID 0 and
// a multicast or the permissive LID as LID or MasterSMLID (of a CA port or a switch's port 0), a
// link width the port lacks or of 16 or more, a link speed the port lacks (8 to 14), a
// LinkDownDefaultState other than 0-2, OperationalVLs above VLCap (1 here). Each Set is answered
// with 0x001C and changes nothing, its valid fields neither. LID 0 and MasterSMLID 0 used to be taken, and the link fields
// were not looked at.
#[test]
fn port_info_values_no_sma_takes_are_refused_and_change_nothing() {
    let mut f = Fabric::new(11);
    assign_lids(&mut f);
    type Edit = fn(&mut PortInfoRepr);
    let lids: [(&str, Edit); 5] = [
        ("LID 0", |w| w.lid = 0),
        ("LID 0xc000", |w| w.lid = 0xc000),
        ("LID 0xffff", |w| w.lid = 0xffff),
        ("MasterSMLID 0", |w| w.master_sm_lid = 0),
        ("MasterSMLID 0xffff", |w| w.master_sm_lid = 0xffff),
    ];
    let links: [(&str, Edit); 7] = [
        ("LinkWidthEnabled 8x", |w| w.link_width_enabled = 4),
        ("LinkWidthEnabled 16", |w| w.link_width_enabled = 16),
        ("LinkSpeedEnabled 8", |w| w.link_speed_enabled = 8),
        ("LinkSpeedEnabled 14", |w| w.link_speed_enabled = 14),
        ("LinkDownDefaultState 3", |w| w.link_down_default_state = 3),
        ("OperationalVLs 2", |w| w.operational_vls = 2),
        ("OperationalVLs 5", |w| w.operational_vls = 5),
    ];
    for (path, port) in PORTS {
        // An external port's LID and MasterSMLID are port 0's and are not written through it.
        let edits = links.iter().chain(lids.iter().filter(|_| port == 0));
        for (what, edit) in edits {
            let before = get_port_info(&mut f, path, port, 0).expect("PortInfo");
            let r = set_port_info(&mut f, path, port, |w| {
                w.subnet_timeout = 9; // valid, and not written with the rest
                edit(w);
            });
            assert_eq!(
                r.status(),
                MadStatus::INVALID_ATTR_VALUE,
                "{path:?}:{port} {what}"
            );
            let after = get_port_info(&mut f, path, port, 0).expect("PortInfo");
            assert_eq!(after, before, "{path:?}:{port} {what}: nothing changed");
        }
    }
}

// The link settings a Set writes read back (IBA 1 §14.2.5.6, as qib): LinkWidthEnabled a
// supported width, or 255 for all of them; LinkSpeedEnabled SDR alone, or 15 for all; 0 changes
// neither; LinkDownDefaultState Sleep. The active width and speed stay the cable's (they change
// at the link's next training, not modelled). The Set's answer used to carry the active width
// and 7 whatever was written.
#[test]
fn link_settings_a_set_writes_read_back() {
    let mut f = Fabric::new(12);
    assign_lids(&mut f);
    for (path, port, supported) in [(TO_CA, 0, 0x0b), (TO_S2, 7, 0x03)] {
        let before = get_port_info(&mut f, path, port, 0).expect("PortInfo");
        let r = set_port_info(&mut f, path, port, |w| {
            w.link_width_enabled = 1;
            w.link_speed_enabled = 1;
            w.link_down_default_state = 1;
        });
        assert_eq!(r.status(), MadStatus::SUCCESS);
        let p = port_info(&r);
        let read = |p: &PortInfoRepr| {
            (
                p.link_width_enabled,
                p.link_speed_enabled,
                p.link_down_default_state,
            )
        };
        assert_eq!(read(&p), (1, 1, 1), "{path:?}:{port}");
        assert_eq!(
            (p.link_width_active, p.link_speed_active),
            (before.link_width_active, before.link_speed_active),
            "active as trained"
        );
        assert_eq!(
            read(&get_port_info(&mut f, path, port, 0).unwrap()),
            (1, 1, 1)
        );
        // 0: no change.
        let r = set_port_info(&mut f, path, port, |w| {
            w.link_width_enabled = 0;
            w.link_speed_enabled = 0;
            w.link_down_default_state = 0;
            w.operational_vls = 0;
        });
        assert_eq!(
            (r.status(), read(&port_info(&r))),
            (MadStatus::SUCCESS, (1, 1, 1))
        );
        // 255 and 15: everything supported.
        let r = set_port_info(&mut f, path, port, |w| {
            w.link_width_enabled = 0xff;
            w.link_speed_enabled = 15;
            w.link_down_default_state = 2;
        });
        assert_eq!(r.status(), MadStatus::SUCCESS);
        assert_eq!(read(&port_info(&r)), (supported, 7, 2), "{path:?}:{port}");
    }
}

// M_KeyViolations (and P_Key, Q_Key) are reset by writing 0; another value leaves the count (as
// qib), so that a read-modify-write loses no violation counted between its Get and its Set. A
// Set used to write whatever value it carried.
#[test]
fn violation_counters_are_reset_by_zero_only() {
    let mut f = Fabric::new(13);
    assign_lids(&mut f);
    for path in [TO_CA, TO_S1] {
        let r = set_port_info(&mut f, path, 0, |p| {
            p.mkey = 0xabcd;
            p.mkey_protect_bits = 1;
        });
        assert_eq!(r.status(), MadStatus::SUCCESS);
        // A Set without the M_Key: a violation, not answered (trap 256 comes to the probe).
        let mut w = get_port_info(&mut f, path, 0, 0xabcd).unwrap();
        w.port_state = PortState::NoStateChange;
        let set = |f: &mut Fabric, w: PortInfoRepr, mkey| {
            f.dr(
                Method::Set,
                attr::PORT_INFO,
                0,
                path,
                mkey,
                SmpAttribute::PortInfo(w),
            )
        };
        let trap = set(&mut f, w, 0).map(|r| r.header.method);
        assert_eq!(trap, Some(Method::Trap), "{path:?}: trap 256, no answer");
        w.mkey_violations = 5;
        w.pkey_violations = 6;
        w.qkey_violations = 7;
        let r = set(&mut f, w, 0xabcd).expect("answered with the M_Key");
        assert_eq!(r.status(), MadStatus::SUCCESS);
        let p = port_info(&r);
        assert_eq!(
            p.mkey_violations, 1,
            "{path:?}: the count, not the 5 written"
        );
        assert_eq!((p.pkey_violations, p.qkey_violations), (0, 0));
        w.mkey_violations = 0;
        let r = set(&mut f, w, 0xabcd).unwrap();
        assert_eq!(port_info(&r).mkey_violations, 0, "{path:?}: 0 resets");
    }
}

// IBA 1 §14.4.11, o14-12.2.1 (as qib quotes it): the answer to a SubnSet(PortInfo) with
// ClientReregister carries the bit; a later Get reads it 0. The answer used to read 0.
#[test]
fn client_reregister_is_in_the_sets_answer_only() {
    let mut f = Fabric::new(14);
    assign_lids(&mut f);
    let r = set_port_info(&mut f, TO_CA, 0, |w| w.client_reregister = true);
    assert_eq!(r.status(), MadStatus::SUCCESS);
    assert!(port_info(&r).client_reregister);
    assert_eq!(f.hca().port(1).unwrap().client_reregisters, 1);
    assert!(
        !get_port_info(&mut f, TO_CA, 0, 0)
            .unwrap()
            .client_reregister
    );
}

// IBA 1 §14.2.5 Table 145: NodeInfo's and NodeDescription's AttributeModifier is 0; another is
// answered with the attribute and status 0x001C (qib), by a CA and a switch. It used to be
// answered with success.
#[test]
fn node_info_with_a_modifier_is_invalid() {
    let mut f = Fabric::new(15);
    for path in [TO_CA, TO_S2] {
        for id in [attr::NODE_INFO, attr::NODE_DESCRIPTION] {
            let ok = f.dr(Method::Get, id, 0, path, 0, none()).unwrap();
            let bad = f.dr(Method::Get, id, 1, path, 0, none()).unwrap();
            assert_eq!(ok.status(), MadStatus::SUCCESS);
            assert_eq!(
                bad.status(),
                MadStatus::INVALID_ATTR_VALUE,
                "{path:?} {id:#x}"
            );
            assert_eq!(bad.attribute, ok.attribute, "the attribute all the same");
        }
    }
}

// IBA 1 §14.2.5.6 on a CA of two ports, reached by its port 1: PortInfo's AttributeModifier 0 and
// 1 are port 1; 2 reads port 2 (LocalPortNum still 1, the receiving port), and a Set through port
// 1 does not write port 2 (answered, nothing changed: qib); 3, past NumPorts, is an invalid
// modifier for a Get and a Set (qib and ibsim). Any modifier used to be port 1.
#[test]
fn ca_port_info_modifier_names_a_port_of_the_ca() {
    let mut f = Fabric::new(16);
    let mut sim = Simulator::new(16);
    let probe = sim.add_node(Box::<Probe>::default(), 1);
    let ca = sim.add_node(Box::new(Hca::new(Guid(CA_GUID), 2)), 2);
    let l = sim.connect(
        PortRef {
            node: probe,
            port: 1,
        },
        PortRef { node: ca, port: 1 },
        LinkParams::default(),
    );
    sim.schedule_link_state(l, Instant::ZERO, true);
    sim.run_until_idle(100);
    (f.sim, f.probe, f.ca) = (sim, probe, ca);
    let path: &[u8] = &[1];
    let r = set_port_info(&mut f, path, 0, |w| {
        w.lid = CA_LID;
        w.master_sm_lid = PROBE_LID;
    });
    assert_eq!(r.status(), MadStatus::SUCCESS);
    for m in [0, 1] {
        let p = get_port_info(&mut f, path, m, 0).unwrap();
        assert_eq!((p.lid, p.local_port_num), (CA_LID, 1), "modifier {m}");
    }
    let p2 = get_port_info(&mut f, path, 2, 0).unwrap();
    assert_eq!(
        (p2.lid, p2.local_port_num),
        (0, 1),
        "port 2, read through port 1"
    );
    assert_eq!(p2.port_state, PortState::Down, "no cable");
    let mut w = p2;
    w.lid = 0x40;
    w.master_sm_lid = PROBE_LID;
    w.port_state = PortState::NoStateChange;
    let r = f
        .dr(
            Method::Set,
            attr::PORT_INFO,
            2,
            path,
            0,
            SmpAttribute::PortInfo(w),
        )
        .unwrap();
    assert_eq!(r.status(), MadStatus::SUCCESS);
    assert_eq!(port_info(&r).lid, 0, "port 2 is not written through port 1");
    assert_eq!(f.hca().port_info(2).unwrap().lid, 0);
    assert_eq!(f.hca().port_info(1).unwrap().lid, CA_LID);
    for method in [Method::Get, Method::Set] {
        let attribute = if method == Method::Get {
            none()
        } else {
            SmpAttribute::PortInfo(w)
        };
        let r = f
            .dr(method, attr::PORT_INFO, 3, path, 0, attribute)
            .unwrap();
        assert_eq!(r.status(), MadStatus::INVALID_ATTR_VALUE, "{method:?}");
    }
    assert_eq!(f.hca().port_info(1).unwrap().lid, CA_LID);
}
