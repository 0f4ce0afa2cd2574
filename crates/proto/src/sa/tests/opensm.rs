//! Cases where the differential test (`crates/runtime/tests/opensm_diff.rs`, our SA against
//! OpenSM 3.3.23 on ibsim) found our SA answering differently, reproduced here without ibsim. Each
//! test names the sequence steps and the OpenSM code it follows (docs/OPENSM-NOTES.md "Our SA").

use super::*;
use ipoib_wire::mad::Method;
use ipoib_wire::sa::SaAttribute;

fn rec_of(r: Result<SaResponse, SaClientError>) -> McMemberRecordRepr {
    match r.expect("success").attribute {
        Some(SaAttribute::McMemberRecord(m)) => m,
        other => panic!("{other:?}"),
    }
}

fn get(mgid: Gid) -> SaMadRepr {
    SaMadRepr::request(
        Method::Get,
        0,
        mcr_mask::MGID,
        SaAttribute::McMemberRecord(McMemberRecordRepr {
            mgid,
            ..McMemberRecordRepr::default()
        }),
    )
}

fn with_scope(mut r: McMemberRecordRepr, scope: u8) -> McMemberRecordRepr {
    r.scope = scope;
    r
}

// opensm_diff steps 1, 48-51, 70-76. OpenSM keeps the group's scope with every member
// (osm_mgrp_add_port stores it, mcmr_rcv_respond answers with it): a join or leave answers with
// the group's Scope (the partition's 2 for the broadcast group, the creator's field for created
// groups), never the request's.
#[test]
fn join_and_leave_answer_with_the_groups_scope() {
    let mut net = Net::default(3);
    let full = JoinState::FULL_MEMBER;
    let scoped = mcr_mask::JOIN | mcr_mask::SCOPE;
    for (lid, scope) in [(2, 0), (3, 5), (3, 8)] {
        let r = rec_of(net.ask(
            lid,
            join(
                with_scope(join_rec(bcast(), gid_of(lid), full), scope),
                scoped,
            ),
        ));
        assert_eq!(
            (r.scope, r.join_state),
            (2, full),
            "join from {lid} scope {scope}"
        );
    }
    let r = rec_of(net.ask(
        3,
        leave(
            with_scope(join_rec(bcast(), gid_of(3), full), 0),
            mcr_mask::JOIN,
        ),
    ));
    assert_eq!((r.scope, r.join_state), (2, JoinState(0)));

    // A group created with Scope 8 keeps 8 for every member; one created without keeps 0.
    let g = mgid("ff12:1234::17");
    let r = rec_of(net.ask(
        2,
        join(
            with_scope(join_rec(g, gid_of(2), full), 8),
            CREATE | mcr_mask::SCOPE,
        ),
    ));
    assert_eq!(r.scope, 8);
    let r = rec_of(net.ask(3, join(with_scope(join_rec(g, gid_of(3), full), 0), scoped)));
    assert_eq!(r.scope, 8);
    let r = rec_of(net.ask(
        3,
        leave(with_scope(join_rec(g, gid_of(3), full), 5), scoped),
    ));
    assert_eq!((r.scope, r.join_state), (8, JoinState(0)));
    let g0 = mgid("ff12:601b:ffff::1");
    let r = rec_of(net.ask(
        2,
        join(with_scope(join_rec(g0, gid_of(2), full), 0), CREATE),
    ));
    assert_eq!(
        r.scope, 0,
        "created groups take the request's Scope field, not the MGID's"
    );
}

// opensm_diff step 41. OpenSM osm_mgrp_remove_port: the port keeps what is left of its JoinState
// only if that holds a full bit or the group keeps other full members; otherwise the port is
// removed and the DeleteResp carries JoinState 0 (here: FullMember|SendOnlyNonMember leaves
// FullMember as the last full member).
#[test]
fn leaving_the_last_full_bit_answers_join_state_zero() {
    let mut net = Net::default(3);
    let g = mgid("ff12:601b:ffff::1");
    let five = JoinState(0x5);
    let full = JoinState::FULL_MEMBER;
    rec_of(net.ask(2, join(join_rec(g, gid_of(2), full), CREATE)));
    rec_of(net.ask(3, join(join_rec(g, gid_of(3), five), mcr_mask::JOIN)));
    // Port 2 still a full member: port 3 keeps its SendOnlyNonMember bit.
    let r = rec_of(net.ask(3, leave(join_rec(g, gid_of(3), full), mcr_mask::JOIN)));
    assert_eq!(r.join_state, JoinState::SEND_ONLY_NON_MEMBER);
    rec_of(net.ask(3, join(join_rec(g, gid_of(3), full), mcr_mask::JOIN)));
    rec_of(net.ask(2, leave(join_rec(g, gid_of(2), full), mcr_mask::JOIN)));
    // Port 3 (JoinState 5) is now the last full member: leaving FullMember removes it entirely.
    let r = rec_of(net.ask(3, leave(join_rec(g, gid_of(3), full), mcr_mask::JOIN)));
    assert_eq!(r.join_state, JoinState(0));
    assert_eq!(net.ask(2, get(g)), status(SaStatus::NoRecords));
    assert!(net.sa_events.contains(&SaEvent::GroupDeleted {
        mgid: g,
        mlid: 0xc001
    }));
}

// opensm_diff steps 77-81. OpenSM 3.3.23 accepts SendOnlyFullMember (JoinState 0x8, IBA 1.3) for
// creating a group (its ERR 1B10 reads "Join State != FullMember | SendOnlyFullMember") and counts
// it as a full member: the group goes when that member leaves.
#[test]
fn send_only_full_member_creates_and_its_leave_deletes() {
    let mut net = Net::default(3);
    let g = mgid("ff12:601b:ffff::18");
    let sof = JoinState::SEND_ONLY_FULL_MEMBER;
    let r = rec_of(net.ask(2, join(join_rec(g, gid_of(2), sof), CREATE)));
    assert_eq!((r.mlid, r.join_state), (0xc001, sof));
    assert!(net.sa_events.contains(&SaEvent::GroupCreated {
        mgid: g,
        mlid: 0xc001
    }));
    assert_eq!(rec_of(net.ask(3, get(g))).mgid, g);
    // SendOnlyNonMember still does not create (ERR 1B10).
    let other = mgid("ff12:601b:ffff::19");
    assert_eq!(
        net.ask(
            2,
            join(
                join_rec(other, gid_of(2), JoinState::SEND_ONLY_NON_MEMBER),
                CREATE
            )
        ),
        status(SaStatus::ReqInvalid)
    );
    let r = rec_of(net.ask(2, leave(join_rec(g, gid_of(2), sof), mcr_mask::JOIN)));
    assert_eq!(r.join_state, JoinState(0));
    assert_eq!(net.ask(3, get(g)), status(SaStatus::NoRecords));
    assert!(net.sa_events.contains(&SaEvent::GroupDeleted {
        mgid: g,
        mlid: 0xc001
    }));
}

// opensm_diff `our_class_port_info_matches_opensm`. OpenSM 3.3.23 answers CapabilityMask 0x2602
// and CapabilityMask2 0xb5e8 with RespTimeValue 16 (from its 200 ms transaction timeout); of those
// bits we claim the ones this SA implements: IsNoticeSupported, IsUDMulticastSupported,
// IsMultiPathSupported, IsPortInfoCapMaskMatchSupported and IsSendOnlyFullMemberSupported (which Linux IPoIB checks before joining as SendOnlyFullMember). No
// IsTrapSupported: the SA sends Reports, not Traps (OpenSM osm_sa_class_port_info.c).
#[test]
fn class_port_info_claims_what_opensm_claims_and_we_implement() {
    let mut net = Net::default(1);
    let r = net
        .ask(2, SaMadRepr::class_port_info_get(0))
        .expect("ClassPortInfo");
    let Some(SaAttribute::ClassPortInfo(c)) = r.attribute else {
        panic!("{r:?}")
    };
    assert_eq!((c.capability_mask, c.capability_mask2), (0x2602, 0x1000));
    assert_eq!(
        c.capability_mask & !0x2602,
        0,
        "a bit OpenSM does not claim"
    );
    assert_eq!(
        c.capability_mask2 & !0xb5e8,
        0,
        "a bit OpenSM does not claim"
    );
    assert_eq!(c.resp_time_value, 16);
    assert_eq!(
        (c.redirect_qp, c.redirect_qkey, c.trap_qkey),
        (1, QKey::GSI, QKey::GSI)
    );
    // OpenSM's table: 200 ms -> 268 ms (index 8) -> 16; 1 ms -> 8; beyond 2147 ms -> 19.
    let rtv = |ms| resp_time_value(Duration::from_millis(ms));
    assert_eq!(
        (rtv(200), rtv(1), rtv(268), rtv(269), rtv(10_000)),
        (16, 8, 16, 17, 19)
    );
}
