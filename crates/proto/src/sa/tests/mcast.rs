//! MCMemberRecord behaviour against OpenSM's (osm_sa_mcmember_record.c; docs/DEPLOYED.md).

use super::*;
use ipoib_wire::mad::{InformInfoRepr, Method, MgmtClass};
use ipoib_wire::sa::{SaAttribute, SaHeaderRepr};
use ipoib_wire::{PKey, QKey};

fn subscribe(net: &mut Net, lid: u16, trap: u16) {
    let r = net.ask(
        lid,
        SaMadRepr::request(
            Method::Set,
            0,
            0,
            SaAttribute::InformInfo(InformInfoRepr::generic(true, trap, 1)),
        ),
    );
    assert!(r.is_ok(), "{r:?}");
}

fn rec_of(r: Result<SaResponse, SaClientError>) -> McMemberRecordRepr {
    match r.expect("success").attribute {
        Some(SaAttribute::McMemberRecord(m)) => m,
        other => panic!("{other:?}"),
    }
}

// docs/DEPLOYED.md: broadcast group pre-created; OpenSM osm_mgrp_add_port/remove_port: JoinState
// union,
// trap 66 on the first FullMember, trap 67 when the last one leaves; well-known groups stay.
#[test]
fn broadcast_join_leave_membership_and_traps() {
    let mut net = Net::default(4);
    assert_eq!(
        net.sa_events,
        vec![SaEvent::GroupCreated {
            mgid: bcast(),
            mlid: 0xc000
        }]
    );
    subscribe(&mut net, 5, 66);
    subscribe(&mut net, 4, 0xffff);
    let full = JoinState::FULL_MEMBER;
    let r = rec_of(net.ask(2, join(join_rec(bcast(), gid_of(2), full), mcr_mask::JOIN)));
    assert_eq!(
        (r.mlid, r.qkey, r.pkey, u8::from(r.mtu), u8::from(r.rate)),
        (0xc000, QKey(0x0b1b), PKey(0xffff), 4, 3)
    );
    assert_eq!(r.mtu_selector, Selector::Exactly);
    assert_eq!(net.reports(5), vec![(66, bcast())]);
    assert_eq!(net.reports(4), vec![(66, bcast())]);
    // A NonMember join then a FullMember join of the same port: union of the JoinStates.
    let r = rec_of(net.ask(
        3,
        join(
            join_rec(bcast(), gid_of(3), JoinState::NON_MEMBER),
            mcr_mask::JOIN,
        ),
    ));
    assert_eq!(r.join_state, JoinState::NON_MEMBER);
    let r = rec_of(net.ask(3, join(join_rec(bcast(), gid_of(3), full), mcr_mask::JOIN)));
    assert_eq!(r.join_state, JoinState(3));
    assert_eq!(net.reports(5).len(), 1, "no second trap 66");
    let g = &net.sa.groups()[0];
    assert_eq!(
        g.members,
        vec![(gid_of(2), full), (gid_of(3), JoinState(3))]
    );
    // The same member records, one port at a time (what `ipoib sim` checks joins against).
    assert_eq!(net.sa.member_join_state(&bcast(), &gid_of(2)), Some(full));
    assert_eq!(
        net.sa.member_join_state(&bcast(), &gid_of(3)),
        Some(JoinState(3))
    );
    assert_eq!(net.sa.member_join_state(&bcast(), &gid_of(4)), None);
    assert_eq!(net.sa.member_join_state(&gid_of(2), &gid_of(2)), None);
    assert_eq!(net.sa.group_mgids().collect::<Vec<_>>(), vec![&bcast()]);
    // Leaving the full bit of port 3 keeps its NonMember bit.
    let r = rec_of(net.ask(3, leave(join_rec(bcast(), gid_of(3), full), mcr_mask::JOIN)));
    assert_eq!(r.join_state, JoinState::NON_MEMBER);
    // The last FullMember leaves: trap 67, members dropped, the well-known group stays.
    net.ask(2, leave(join_rec(bcast(), gid_of(2), full), mcr_mask::JOIN))
        .unwrap();
    assert_eq!(net.reports(4), vec![(66, bcast()), (67, bcast())]);
    assert_eq!(net.reports(5), vec![(66, bcast())], "subscribed to 66 only");
    let g = &net.sa.groups()[0];
    assert!(g.members.is_empty() && g.well_known);
    assert!(net.sa_events.contains(&SaEvent::McastGroup {
        mgid: bcast(),
        mlid: 0xc000,
        members: vec![(gid_of(2), full), (gid_of(3), JoinState(3))],
    }));
    assert!(!net
        .sa_events
        .iter()
        .any(|e| matches!(e, SaEvent::GroupDeleted { .. })));
    assert_eq!(net.sa.stats().reports_lost, 0);
}

// OpenSM mcmr_rcv_create_new_mgrp/get_new_mlid/osm_mgrp_cleanup: groups created by a FullMember join,
// MLIDs from 0xC000 up, freed and reused when the group goes.
#[test]
fn joins_create_groups_with_mlids_and_last_leave_deletes() {
    let mut net = Net::default(3);
    let g1 = mgid("ff12:601b:ffff::1");
    let g2 = mgid("ff12:601b:ffff::2");
    let full = JoinState::FULL_MEMBER;
    let r1 = rec_of(net.ask(2, join(join_rec(g1, gid_of(2), full), CREATE)));
    let r2 = rec_of(net.ask(3, join(join_rec(g2, gid_of(3), full), CREATE)));
    assert_eq!((r1.mlid, r2.mlid), (0xc001, 0xc002));
    // Group created with the port's MTU and rate when no selector is given (MTU 4, rate 7).
    assert_eq!((u8::from(r1.mtu), u8::from(r1.rate)), (4, 7));
    // A SendOnlyNonMember join does not create and does not make a FullMember.
    net.ask(
        4,
        join(
            join_rec(g1, gid_of(4), JoinState::SEND_ONLY_NON_MEMBER),
            mcr_mask::JOIN,
        ),
    )
    .unwrap();
    net.ask(2, leave(join_rec(g1, gid_of(2), full), mcr_mask::JOIN))
        .unwrap();
    assert!(net.sa_events.contains(&SaEvent::GroupDeleted {
        mgid: g1,
        mlid: 0xc001
    }));
    assert_eq!(net.sa.groups().len(), 2);
    let g3 = mgid("ff12:601b:ffff::3");
    let r3 = rec_of(net.ask(3, join(join_rec(g3, gid_of(3), full), CREATE)));
    assert_eq!(r3.mlid, 0xc001, "freed MLID reused");
}

// OpenSM build_new_mgid: ff1<scope>:a01b:<subnet prefix> + counter (host order) in bytes 10..14.
#[test]
fn zero_mgid_is_assigned_by_the_sa() {
    let mut net = Net::default(2);
    let full = JoinState::FULL_MEMBER;
    let a = rec_of(net.ask(2, join(join_rec(Gid::ZERO, gid_of(2), full), CREATE)));
    let b = rec_of(net.ask(2, join(join_rec(Gid::ZERO, gid_of(2), full), CREATE)));
    assert_eq!(a.mgid, mgid("ff12:a01b:fe80::"));
    assert_eq!(b.mgid, mgid("ff12:a01b:fe80:0:0:100::"));
    let mut rec = join_rec(Gid::ZERO, gid_of(3), full);
    rec.scope = 5;
    let c = rec_of(net.ask(3, join(rec, CREATE | mcr_mask::SCOPE)));
    assert_eq!(c.mgid, mgid("ff15:a01b:fe80:0:0:200::"));
    assert_eq!(c.mlid, 0xc003);
}

// osm_sa_mcmember_record.c: every error of a join, in OpenSM's order (see server/mcast.rs docs).
#[test]
fn join_error_statuses_match_opensm() {
    use SaStatus::*;
    let mut model = default_model(3);
    // LID 5: only in partition 0x0001 (full); LID 6: MTU 2 (512).
    model.ports.push(ca(5, &[0x8001], 4, 7, 5));
    model.ports.push(ca(6, &[0xffff], 2, 7, 6));
    let mut sw = model.switches[0].clone();
    sw.ports.push(SwitchPort {
        mtu: Mtu::Mtu4096,
        rate: Rate::Gbps40,
        peer: Peer::Ca(4),
    });
    sw.ports.push(SwitchPort {
        mtu: Mtu::Mtu4096,
        rate: Rate::Gbps40,
        peer: Peer::Ca(5),
    });
    sw.lft[5] = 5;
    sw.lft[6] = 6;
    model.switches[0] = sw;
    let cfg = SaServerConfig {
        max_mlid: 0xc001,
        ..SaServerConfig::default()
    };
    let mut net = Net::new(model, PartitionConfig::default_config(), cfg, 1);
    let full = JoinState::FULL_MEMBER;
    let g = mgid("ff12:601b:ffff::9");
    let j = |r: McMemberRecordRepr, mask| join(r, mask);
    // 1B18: Set without MGID|PortGID|JoinState.
    assert_eq!(
        net.ask(
            2,
            j(
                join_rec(g, gid_of(2), full),
                mcr_mask::MGID | mcr_mask::PORT_GID
            )
        ),
        status(ReqInsufficientComponents)
    );
    // Invalid MTU code with its selector.
    let mut r = join_rec(g, gid_of(2), full);
    r.mtu = Mtu::Unknown(7);
    assert_eq!(
        net.ask(2, j(r, CREATE | mcr_mask::MTU | mcr_mask::MTU_SELECTOR)),
        status(ReqInvalid)
    );
    // PortGID with another subnet prefix.
    assert_eq!(
        net.ask(
            2,
            j(join_rec(g, Gid::new(0xfec0 << 48, 0x1002), full), CREATE)
        ),
        status(ReqInvalidGid)
    );
    // PortGID of no known port (docs/IBSIM.md: ibsim node GUID vs port GUID).
    assert_eq!(
        net.ask(2, j(join_rec(g, gid_of(99), full), CREATE)),
        status(ReqInvalid)
    );
    // Proxy join for a port sharing no P_Key with the requester.
    assert_eq!(
        net.ask(2, j(join_rec(bcast(), gid_of(5), full), mcr_mask::JOIN)),
        status(ReqInvalid)
    );
    // Invalid P_Key (base 0).
    let mut r = join_rec(g, gid_of(2), full);
    r.pkey = PKey(0x8000);
    assert_eq!(net.ask(2, j(r, CREATE)), status(ReqInvalid));
    // 1B10: creating with a JoinState without FullMember.
    assert_eq!(
        net.ask(2, j(join_rec(g, gid_of(2), JoinState::NON_MEMBER), CREATE)),
        status(ReqInvalid)
    );
    // 1B11: creating without Q_Key/TClass/P_Key/FlowLabel/SL.
    assert_eq!(
        net.ask(2, j(join_rec(g, gid_of(2), full), mcr_mask::JOIN)),
        status(ReqInsufficientComponents)
    );
    // 1B22: requested MGID invalid (0xA01B signature with link-local scope).
    assert_eq!(
        net.ask(
            2,
            j(join_rec(mgid("ff12:a01b::5"), gid_of(2), full), CREATE)
        ),
        status(ReqInvalid)
    );
    // 1B1B: IPoIB group whose broadcast group (P_Key 0x8123) does not exist.
    assert_eq!(
        net.ask(
            2,
            j(join_rec(mgid("ff12:401b:8123::5"), gid_of(2), full), CREATE)
        ),
        status(ReqInvalid)
    );
    // 1B1C: IPoIB group disagreeing with its broadcast group (Q_Key).
    let mut r = join_rec(g, gid_of(2), full);
    r.qkey = QKey(0x1234);
    assert_eq!(net.ask(2, j(r, CREATE)), status(ReqInvalid));
    // 1B26: not realizable: MTU greater than 4 on a port whose MTU is 4.
    let mut r = join_rec(g, gid_of(2), full);
    r.mtu_selector = Selector::GreaterThan;
    r.mtu = Mtu::Mtu2048;
    assert_eq!(
        net.ask(2, j(r, CREATE | mcr_mask::MTU | mcr_mask::MTU_SELECTOR)),
        status(ReqInvalid)
    );
    // 1B12: existing group, MTU selector not met (group MTU 4, asked exactly 5); JoinState 0.
    let mut r = join_rec(bcast(), gid_of(2), full);
    r.mtu = Mtu::Mtu4096;
    assert_eq!(
        net.ask(2, j(r, mcr_mask::JOIN | mcr_mask::MTU_SELECTOR)),
        status(ReqInvalid)
    );
    assert_eq!(
        net.ask(
            2,
            j(join_rec(bcast(), gid_of(2), JoinState(0)), mcr_mask::JOIN)
        ),
        status(ReqInvalid)
    );
    // 1B12 (validate_port_caps): the port's MTU (512) is below the group's (2048).
    assert_eq!(
        net.ask(6, j(join_rec(bcast(), gid_of(6), full), mcr_mask::JOIN)),
        status(ReqInvalid)
    );
    // 1B1A: existing group, other Q_Key.
    let mut r = join_rec(bcast(), gid_of(2), full);
    r.qkey = QKey(7);
    assert_eq!(net.ask(2, j(r, CREATE)), status(ReqInvalid));
    // 1B14: the port is not in the group's partition.
    assert_eq!(
        net.ask(5, j(join_rec(bcast(), gid_of(5), full), mcr_mask::JOIN)),
        status(ReqInvalid)
    );
    // 1B19: no MLID left (max_mlid 0xC001: one creation fits).
    assert!(net.ask(2, j(join_rec(g, gid_of(2), full), CREATE)).is_ok());
    assert_eq!(
        net.ask(
            2,
            j(join_rec(mgid("ff12:601b:ffff::a"), gid_of(2), full), CREATE)
        ),
        status(NoResources)
    );
    assert_eq!(
        net.sa.stats().no_mlid,
        1,
        "counted, so the user can be told"
    );
    // 1B13: port 2 is a member by its own join; port 3 may not change it (no ProxyJoin).
    assert_eq!(
        net.ask(
            3,
            j(
                join_rec(g, gid_of(2), JoinState::NON_MEMBER),
                mcr_mask::JOIN
            )
        ),
        status(ReqInvalid)
    );
    // OpenSM allows a proxy join for a port sharing a P_Key; it is then a proxy member.
    assert!(net
        .ask(3, j(join_rec(g, gid_of(4), full), mcr_mask::JOIN))
        .is_ok());
    assert_eq!(
        net.sa
            .groups()
            .iter()
            .find(|x| x.record.mgid == g)
            .unwrap()
            .members
            .len(),
        2
    );
}

// osm_sa_mcmember_record.c mcmr_rcv_leave_mgrp/validate_delete (o15-0.1.14).
#[test]
fn leave_error_statuses_match_opensm() {
    use SaStatus::*;
    let mut net = Net::default(3);
    let full = JoinState::FULL_MEMBER;
    net.ask(
        2,
        join(
            join_rec(bcast(), gid_of(2), JoinState::NON_MEMBER),
            mcr_mask::JOIN,
        ),
    )
    .unwrap();
    let l = |r, mask| leave(r, mask);
    assert_eq!(
        net.ask(2, l(join_rec(bcast(), gid_of(2), full), mcr_mask::MGID)),
        status(ReqInsufficientComponents)
    );
    assert_eq!(
        net.ask(
            2,
            l(join_rec(bcast(), Gid::new(1, 0x1002), full), mcr_mask::JOIN)
        ),
        status(ReqInvalidGid)
    );
    assert_eq!(
        net.ask(
            2,
            l(join_rec(mgid("ff12::77"), gid_of(2), full), mcr_mask::JOIN)
        ),
        status(ReqInvalid)
    );
    assert_eq!(
        net.ask(3, l(join_rec(bcast(), gid_of(3), full), mcr_mask::JOIN)),
        status(ReqInvalid)
    );
    // JoinState bits not held (FullMember) -> invalid; another requester, no ProxyJoin -> invalid.
    assert_eq!(
        net.ask(2, l(join_rec(bcast(), gid_of(2), full), mcr_mask::JOIN)),
        status(ReqInvalid)
    );
    assert_eq!(
        net.ask(
            3,
            l(
                join_rec(bcast(), gid_of(2), JoinState::NON_MEMBER),
                mcr_mask::JOIN
            )
        ),
        status(ReqInvalid)
    );
    let r = rec_of(net.ask(
        2,
        l(
            join_rec(bcast(), gid_of(2), JoinState::NON_MEMBER),
            mcr_mask::JOIN,
        ),
    ));
    assert_eq!(r.join_state, JoinState(0));
    assert!(net.sa.groups()[0].members.is_empty());
}

// OpenSM validate_more_comp_fields / mgrp_request_is_realizable: selectors (docs/DEPLOYED.md: 0
// greater
// than, 1 less than, 2 exactly, 3 largest available).
#[test]
fn mtu_and_rate_selectors() {
    let mut net = Net::default(2);
    let full = JoinState::FULL_MEMBER;
    let sel =
        CREATE | mcr_mask::MTU | mcr_mask::MTU_SELECTOR | mcr_mask::RATE | mcr_mask::RATE_SELECTOR;
    let mut r = join_rec(mgid("ff12:601b:ffff::10"), gid_of(2), full);
    r.mtu_selector = Selector::LessThan;
    r.mtu = Mtu::Mtu4096;
    r.rate_selector = Selector::LessThan;
    r.rate = Rate::Gbps40;
    let c = rec_of(net.ask(2, join(r, sel)));
    assert_eq!(
        (u8::from(c.mtu), u8::from(c.rate)),
        (4, 4),
        "one below: 2048, 30 Gb/s"
    );
    let mut r = join_rec(mgid("ff12:601b:ffff::11"), gid_of(2), full);
    r.mtu_selector = Selector::LargestAvailable;
    r.rate_selector = Selector::GreaterThan;
    r.rate = Rate::Gbps10;
    let c = rec_of(net.ask(2, join(r, sel)));
    assert_eq!(
        (u8::from(c.mtu), u8::from(c.rate)),
        (4, 7),
        "port's own MTU and rate"
    );
    // Joining an existing group: rate "greater than 20" holds for 40, "less than 40" does not.
    let mut r = join_rec(mgid("ff12:601b:ffff::11"), gid_of(3), full);
    r.rate_selector = Selector::GreaterThan;
    r.rate = Rate::Gbps20;
    assert!(net
        .ask(3, join(r, mcr_mask::JOIN | mcr_mask::RATE_SELECTOR))
        .is_ok());
    r.rate_selector = Selector::LessThan;
    r.rate = Rate::Gbps40;
    assert_eq!(
        net.ask(3, join(r, mcr_mask::JOIN | mcr_mask::RATE_SELECTOR)),
        status(SaStatus::ReqInvalid)
    );
}

// OpenSM mcmr_query_mgrp: untrusted queries zero PortGID/JoinState/ProxyJoin; trusted ones
// (SM_Key given) list every member; Get with several matches is ERR_TOO_MANY_RECORDS.
#[test]
fn get_and_gettable_queries() {
    let mut net = Net::default(3);
    let full = JoinState::FULL_MEMBER;
    net.ask(2, join(join_rec(bcast(), gid_of(2), full), mcr_mask::JOIN))
        .unwrap();
    net.ask(
        3,
        join(
            join_rec(bcast(), gid_of(3), JoinState::NON_MEMBER),
            mcr_mask::JOIN,
        ),
    )
    .unwrap();
    net.ask(
        3,
        join(join_rec(mgid("ff12:601b:ffff::1"), gid_of(3), full), CREATE),
    )
    .unwrap();
    let q = |method, mask, sm_key, rec: McMemberRecordRepr| {
        let mut m = SaMadRepr::request(method, 0, mask, SaAttribute::McMemberRecord(rec));
        m.sa = SaHeaderRepr { sm_key, ..m.sa };
        m
    };
    let any = McMemberRecordRepr::default();
    let t = net.ask(4, q(Method::GetTable, 0, 0, any)).unwrap();
    assert_eq!(t.records.len(), 2);
    for r in &t.records {
        let SaAttribute::McMemberRecord(r) = r else {
            panic!()
        };
        assert_eq!((r.port_gid, r.join_state), (Gid::ZERO, JoinState(0)));
    }
    assert_eq!(
        net.ask(4, q(Method::Get, 0, 0, any)),
        status(SaStatus::TooManyRecords)
    );
    let one = net
        .ask(
            4,
            q(
                Method::Get,
                mcr_mask::MGID,
                0,
                join_rec(bcast(), Gid::ZERO, full),
            ),
        )
        .unwrap();
    assert!(matches!(one.attribute, Some(SaAttribute::McMemberRecord(r)) if r.mlid == 0xc000));
    assert_eq!(
        net.ask(
            4,
            q(
                Method::Get,
                mcr_mask::MGID,
                0,
                join_rec(mgid("ff12::5"), Gid::ZERO, full)
            )
        ),
        status(SaStatus::NoRecords)
    );
    let t = net
        .ask(
            4,
            q(
                Method::GetTable,
                mcr_mask::MGID,
                1,
                join_rec(bcast(), Gid::ZERO, full),
            ),
        )
        .unwrap();
    let members: Vec<(Gid, JoinState)> = t
        .records
        .iter()
        .map(|r| match r {
            SaAttribute::McMemberRecord(r) => (r.port_gid, r.join_state),
            _ => panic!(),
        })
        .collect();
    assert_eq!(
        members,
        vec![(gid_of(2), full), (gid_of(3), JoinState::NON_MEMBER)]
    );
    // Trusted, JoinState component: only the full member.
    let t = net
        .ask(
            4,
            q(
                Method::GetTable,
                mcr_mask::MGID | mcr_mask::JOIN_STATE,
                1,
                join_rec(bcast(), Gid::ZERO, full),
            ),
        )
        .unwrap();
    assert_eq!(t.records.len(), 1);
    // A wrong non-zero SM_Key is discarded unanswered (OpenSM osm_sa_mad_ctrl.c).
    assert_eq!(
        net.ask(4, q(Method::GetTable, 0, 99, any)),
        Err(SaClientError::Timeout)
    );
}

// OpenSM mcmr_by_comp_mask: a requester sees only groups of its partitions.
#[test]
fn partition_membership_is_enforced() {
    let (model, parts) = blue_partition();
    assert_eq!(model.ports[2].pkeys, vec![PKey(0xffff), PKey(0x8002)]);
    let mut net = Net::new(model, parts, SaServerConfig::default(), 3);
    let blue = mgid("ff12:401b:8002::ffff:ffff");
    assert_eq!(net.sa.groups().len(), 2);
    let mut r = join_rec(blue, gid_of(3), JoinState::FULL_MEMBER);
    r.pkey = PKey(0x8002);
    assert!(net.ask(3, join(r, mcr_mask::JOIN)).is_ok());
    r.port_gid = gid_of(2);
    assert_eq!(
        net.ask(2, join(r, mcr_mask::JOIN)),
        status(SaStatus::ReqInvalid)
    );
    let t = net
        .ask(
            2,
            SaMadRepr::request(
                Method::GetTable,
                0,
                0,
                SaAttribute::McMemberRecord(McMemberRecordRepr::default()),
            ),
        )
        .unwrap();
    assert_eq!(
        t.records.len(),
        1,
        "host 2 sees only the default partition's group"
    );
}

// IBA 1 §13.4.7 / OpenSM 3.3.23 osm_sa_mad_ctrl.c: a method or attribute the SA does not serve
// is dropped unanswered ("ERR 1A05", "ERR 1A01"), so is a Set with no handler ("ERR 1A02"); a
// wrong class version and a method a served attribute lacks get their MAD statuses (runtime test
// `opensm_sa_edges` measured each).
#[test]
fn unsupported_requests_dropped_or_get_mad_statuses() {
    let mut net = Net::default(1);
    let ask_raw = |net: &mut Net, f: &dyn Fn(&mut SaMadRepr)| {
        let mut m = SaMadRepr::class_port_info_get(0);
        f(&mut m);
        net.ask(2, m)
    };
    let st = |s: MadStatus| Err(SaClientError::Status(s));
    assert_eq!(
        // TraceRecord, which neither OpenSM nor this SA serves.
        ask_raw(&mut net, &|m| m.header.attribute_id = 0x0039),
        Err(SaClientError::Timeout)
    );
    assert_eq!(
        ask_raw(&mut net, &|m| m.header.method = Method::Send),
        Err(SaClientError::Timeout)
    );
    // The client sends an unanswered request 4 times (SaClientConfig's default): each dropped.
    let dropped = &net.sa.stats().dropped;
    assert_eq!(dropped.get("attribute unsupported"), Some(&4));
    assert_eq!(dropped.get("method unsupported"), Some(&4));
    assert_eq!(
        ask_raw(&mut net, &|m| m.header.class_version = 1),
        st(MadStatus::BAD_VERSION)
    );
    // ClassPortInfo: Set has no handler (dropped), GetTable and GetMulti are ERR_REQ_INVALID.
    assert_eq!(
        ask_raw(&mut net, &|m| m.header.method = Method::Set),
        Err(SaClientError::Timeout)
    );
    for method in [Method::GetTable, Method::GetMulti] {
        assert_eq!(
            ask_raw(&mut net, &|m| m.header.method = method),
            Err(SaClientError::Status(MadStatus::sa(SaStatus::ReqInvalid)))
        );
    }
    let cpi = ask_raw(&mut net, &|_| ()).unwrap();
    assert!(
        matches!(cpi.attribute, Some(SaAttribute::ClassPortInfo(c)) if c.resp_time_value == 16)
    );
    // PathRecord Set has no handler either (dropped); InformInfo Get is not supported.
    let pr = SaMadRepr::request(
        Method::Set,
        0,
        0,
        SaAttribute::PathRecord(Default::default()),
    );
    assert_eq!(net.ask(2, pr), Err(SaClientError::Timeout));
    let ii = SaMadRepr::request(
        Method::Get,
        0,
        0,
        SaAttribute::InformInfo(Default::default()),
    );
    assert_eq!(net.ask(2, ii), st(MadStatus::METHOD_ATTR_UNSUPPORTED));
    assert_eq!(MgmtClass::SubnAdm.name(), "SubnAdm");
}

// OpenSM osm_sa_informinfo.c: unsubscribing what was never subscribed is ERR_REQ_INVALID (4307);
// after unsubscribing no more reports.
#[test]
fn inform_unsubscribe() {
    let mut net = Net::default(3);
    let set = |sub: bool, trap| {
        SaMadRepr::request(
            Method::Set,
            0,
            0,
            SaAttribute::InformInfo(InformInfoRepr::generic(sub, trap, 1)),
        )
    };
    assert_eq!(net.ask(4, set(false, 66)), status(SaStatus::ReqInvalid));
    let mut bad = set(true, 256);
    bad.sa.sm_key = 0;
    assert_eq!(
        net.ask(4, bad),
        status(SaStatus::ReqInvalid),
        "security trap without SM_Key"
    );
    net.ask(4, set(true, 66)).unwrap();
    net.ask(4, set(false, 66)).unwrap();
    net.ask(
        2,
        join(
            join_rec(bcast(), gid_of(2), JoinState::FULL_MEMBER),
            mcr_mask::JOIN,
        ),
    )
    .unwrap();
    assert!(net.reports(4).is_empty());
}

// OpenSM osm_inform.c: a Report is resent until a ReportResp; bounded tries.
#[test]
fn reports_are_retransmitted_until_acknowledged() {
    let mut net = Net::default(3);
    subscribe(&mut net, 4, 66);
    subscribe(&mut net, 3, 66);
    // Host 4 loses its first two ReportResps; host 3 never answers.
    let mut lost4 = 0;
    net.filter = Box::new(move |from, m| {
        let resp = m.mad.get(3) == Some(&0x86);
        if resp && from == 4 && lost4 < 2 {
            lost4 += 1;
            return true;
        }
        resp && from == 3
    });
    net.ask(
        2,
        join(
            join_rec(bcast(), gid_of(2), JoinState::FULL_MEMBER),
            mcr_mask::JOIN,
        ),
    )
    .unwrap();
    net.run_for(Duration::from_secs(5));
    // Host 4 saw the report three times (first + 2 resends), host 3 report_tries times.
    assert_eq!(net.reports(4).len(), 3);
    assert_eq!(net.reports(3).len(), 4);
    assert_eq!(net.sa.stats().reports_sent, 7);
    assert_eq!(net.sa.stats().reports_lost, 1);
    assert_eq!(net.sa.poll_timeout(), None);
}

proptest::proptest! {
    // Bad input never panics (docs/ARCHITECTURE.md "Rules"): bad MADs never panic the server or the client.
    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300), class_sa in proptest::prelude::any::<bool>()) {
        let mut net = Net::default(2);
        let mut b = bytes;
        if class_sa && b.len() > 3 {
            b[0] = 1;
            b[1] = 3;
            b[2] = 2;
        }
        let from = MadAddr::gsi(2);
        net.sa.handle_mad(net.now, MadIn { from, mad: b.clone() });
        let now = net.now;
        net.client(2).handle_mad(now, MadIn { from: MadAddr::gsi(1), mad: b });
        net.run_for(Duration::from_secs(1));
    }
}

// SaServer::poll_event: membership changes are coalesced per group (one list, not one per join).
#[test]
fn many_joins_coalesce_into_one_membership_event() {
    let mut net = Net::default(200);
    let now = net.now;
    for lid in 2..=201u16 {
        let m = join(
            join_rec(bcast(), gid_of(lid), JoinState::FULL_MEMBER),
            mcr_mask::JOIN,
        );
        net.client(lid).request(now, m, MadAddr::gsi(SA_LID));
    }
    net.run_for(Duration::from_secs(1));
    let lists: Vec<usize> = net
        .sa_events
        .iter()
        .filter_map(|e| match e {
            SaEvent::McastGroup { members, .. } => Some(members.len()),
            _ => None,
        })
        .collect();
    assert_eq!(lists, vec![200]);
    assert_eq!(net.sa.groups()[0].members.len(), 200);
}

// SaServer::has_events: true while a created-group event or a membership change waits, false once
// drained, without consuming anything.
#[test]
fn has_events_reports_pending_membership_without_draining() {
    let mut net = Net::default(3);
    assert!(
        !net.sa.has_events(),
        "Net drained the pre-created group's event"
    );
    let now = net.now;
    let m = join(
        join_rec(bcast(), gid_of(2), JoinState::FULL_MEMBER),
        mcr_mask::JOIN,
    );
    net.sa.handle_mad(
        now,
        MadIn {
            from: MadAddr::gsi(2),
            mad: m.to_bytes().to_vec(),
        },
    );
    assert!(net.sa.has_events());
    assert!(net.sa.has_events(), "asking does not drain");
    assert!(matches!(
        net.sa.poll_event(),
        Some(SaEvent::McastGroup { ref members, .. }) if members.len() == 1
    ));
    assert!(!net.sa.has_events());
}
