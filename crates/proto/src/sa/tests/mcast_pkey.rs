//! The P_Key component of a join to an existing group, checked as OpenSM 3.3.23 checks it
//! (`osm_sa_mcmember_record.c` `mcmr_rcv_join_mgrp`): with `mcgroup_join_validation` (default
//! TRUE) `validate_other_comp_fields` refuses a P_Key component whose base differs from the
//! group's (ERR 1B32) or that is limited where the group's is limited too (ERR 1B31), both
//! answered ERR_REQ_INVALID (ERR 1B1A); a mask without the P_Key bit compares nothing. IBA 1
//! o15-0.2.4 item 5: the other components given must match the group's. Measured against OpenSM by
//! hand, docs/IPOIB-JOINS.md.

use super::*;

/// Default and P1 (0x0001, written 0x8001 as OpenSM allows), both IPoIB, every port full.
fn p1_net(cfg: SaServerConfig) -> Net {
    let (model, parts) = partitioned_model(
        2,
        "Default=0x7fff, ipoib : ALL=full ;\nP1=0x8001, ipoib : ALL=full ;",
    );
    Net::new(model, parts, cfg, 5)
}

fn with_pkey(mgid: Gid, lid: u16, pkey: u16) -> McMemberRecordRepr {
    let mut r = join_rec(mgid, gid_of(lid), JoinState::FULL_MEMBER);
    r.pkey = PKey(pkey);
    r
}

const JOIN_PKEY: u64 = mcr_mask::JOIN | mcr_mask::P_KEY;

fn group_pkey(net: &Net, mgid: Gid) -> PKey {
    net.sa
        .groups()
        .iter()
        .find(|g| g.record.mgid == mgid)
        .expect("group")
        .record
        .pkey
}

// OpenSM `validate_other_comp_fields` ERR 1B32 and ERR 1B31, under `mcgroup_join_validation`.
#[test]
fn a_joins_pkey_component_must_match_the_groups() {
    let mut net = p1_net(SaServerConfig::default());
    let b1 = mgid("ff12:401b:8001::ffff:ffff");
    assert_eq!(group_pkey(&net, b1), PKey(0x8001));
    // The interface's own P_Key (full): joined, and the answer carries the group's.
    let r = net.ask(2, join(with_pkey(b1, 2, 0x8001), JOIN_PKEY));
    assert_eq!(
        r.expect("joined").attribute.map(|a| match a {
            ipoib_wire::sa::SaAttribute::McMemberRecord(m) => m.pkey,
            _ => PKey(0),
        }),
        Some(PKey(0x8001))
    );
    // ERR 1B32: another partition's P_Key.
    assert_eq!(
        net.ask(3, join(with_pkey(b1, 3, 0xffff), JOIN_PKEY)),
        status(SaStatus::ReqInvalid)
    );
    // The same record without the P_Key bit: nothing compared, joined.
    assert!(net
        .ask(3, join(with_pkey(b1, 3, 0xffff), mcr_mask::JOIN))
        .is_ok());
    // A limited P_Key of the partition matches the full one of the group.
    assert!(net
        .ask(2, join(with_pkey(b1, 2, 0x0001), JOIN_PKEY))
        .is_ok());

    // ERR 1B31: a group created with a limited P_Key refuses a limited P_Key component, and takes
    // the full one.
    let lim = mgid("ff15::5eed");
    let mut c = with_pkey(lim, 2, 0x0001);
    c.scope = 5;
    assert!(net.ask(2, join(c, mcr_mask::CREATE)).is_ok());
    assert_eq!(group_pkey(&net, lim), PKey(0x0001));
    assert_eq!(
        net.ask(3, join(with_pkey(lim, 3, 0x0001), JOIN_PKEY)),
        status(SaStatus::ReqInvalid)
    );
    assert!(net
        .ask(3, join(with_pkey(lim, 3, 0x8001), JOIN_PKEY))
        .is_ok());
}

// OpenSM `mcgroup_join_validation FALSE`: `validate_other_comp_fields` is skipped, so a P_Key of
// another partition joins the group (the port is in the group's partition: ERR 1B14 passes).
#[test]
fn without_join_validation_the_pkey_component_is_not_compared() {
    let mut net = p1_net(SaServerConfig {
        join_validation: false,
        ..SaServerConfig::default()
    });
    let b1 = mgid("ff12:401b:8001::ffff:ffff");
    assert!(net
        .ask(3, join(with_pkey(b1, 3, 0xffff), JOIN_PKEY))
        .is_ok());
}
