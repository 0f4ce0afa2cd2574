//! SMInfoRecord and InformInfoRecord against OpenSM's rules (osm_sa_sminfo_record.c,
//! osm_sa_informinfo.c): the records given, component masks, P_Key visibility, SM_Key.

use super::*;
use ipoib_wire::mad::{InformInfoRepr, Method};
use ipoib_wire::sa::{iir_mask, smir_mask, InformInfoRecordRepr, SaAttribute, SmInfoRecordRepr};
use ipoib_wire::smp::{SmInfoRepr, SmState};

fn records(r: Result<SaResponse, SaClientError>) -> Vec<SaAttribute> {
    let r = r.expect("success");
    match r.attribute {
        Some(a) if r.records.is_empty() => vec![a],
        _ => r.records,
    }
}

fn master() -> SmInfoRepr {
    SmInfoRepr {
        guid: Guid(0x1000 + u64::from(SA_LID)),
        sm_key: 1,
        act_count: 77,
        priority: 3,
        sm_state: SmState::Master,
    }
}

fn net_with_sm(model: SubnetModel) -> Net {
    let mut m = model;
    m.sms = vec![master()];
    Net::new(
        m,
        PartitionConfig::default_config(),
        SaServerConfig::default(),
        3,
    )
}

fn smir_q(lid: u16, sm_info: SmInfoRepr) -> SaAttribute {
    SaAttribute::SmInfoRecord(SmInfoRecordRepr { lid, sm_info })
}

fn smirs(r: Result<SaResponse, SaClientError>) -> Vec<SmInfoRecordRepr> {
    records(r)
        .into_iter()
        .map(|a| match a {
            SaAttribute::SmInfoRecord(s) => s,
            other => panic!("{other:?}"),
        })
        .collect()
}

// IBA 1 §15.2.5.10; OpenSM osm_smir_rcv_process: the master's record, LID its port's, SM_Key 0
// even to a trusted request; LID, GUID, Priority and SMState select.
#[test]
fn sm_info_record_lists_the_master() {
    let mut net = net_with_sm(default_model(2));
    let q = SmInfoRepr {
        sm_key: 0,
        act_count: 0,
        ..master()
    };
    let all = smirs(net.ask(2, SaMadRepr::request(Method::GetTable, 1, 0, smir_q(0, q))));
    let mut want = master();
    want.sm_key = 0;
    assert_eq!(
        all,
        [SmInfoRecordRepr {
            lid: SA_LID,
            sm_info: want
        }]
    );
    // Get by LID, and by GUID/Priority/SMState.
    let by = |mask: u64, lid: u16, qi: SmInfoRepr, net: &mut Net| {
        net.ask(
            3,
            SaMadRepr::request(Method::GetTable, 0, mask, smir_q(lid, qi)),
        )
        .map(|r| r.records.len())
    };
    assert_eq!(by(smir_mask::LID, SA_LID, q, &mut net), Ok(1));
    assert_eq!(by(smir_mask::LID, 2, q, &mut net), Ok(0), "no SM at LID 2");
    assert_eq!(
        by(smir_mask::GUID | smir_mask::PRIORITY, 0, q, &mut net),
        Ok(1)
    );
    let other = SmInfoRepr { priority: 4, ..q };
    assert_eq!(by(smir_mask::PRIORITY, 0, other, &mut net), Ok(0));
    let standby = SmInfoRepr {
        sm_state: SmState::Standby,
        ..q
    };
    assert_eq!(by(smir_mask::SM_STATE, 0, standby, &mut net), Ok(0));
    // ActCount and SM_Key select nothing (OpenSM compares neither).
    assert_eq!(
        by(smir_mask::ACT_COUNT | smir_mask::SM_KEY, 0, q, &mut net),
        Ok(1)
    );
    let get = net.ask(
        2,
        SaMadRepr::request(Method::Get, 0, smir_mask::LID, smir_q(2, q)),
    );
    assert_eq!(get, status(SaStatus::NoRecords));
}

// OpenSM "ERR 2805: Cannot get SMInfo record due to pkey violation": no answer at all.
#[test]
fn sm_info_record_is_not_given_across_partitions() {
    let mut m = default_model(2);
    m.ports[2].pkeys = vec![PKey(0x8002)]; // LID 3
    let mut net = net_with_sm(m);
    let r = net.ask(
        3,
        SaMadRepr::request(Method::GetTable, 0, 0, smir_q(0, master())),
    );
    assert_eq!(r.err(), Some(SaClientError::Timeout));
    assert_eq!(
        smirs(net.ask(
            2,
            SaMadRepr::request(Method::GetTable, 0, 0, smir_q(0, master()))
        ))
        .len(),
        1
    );
}

// A model without SMs (no sweep yet) lists none.
#[test]
fn sm_info_record_without_sms_is_empty() {
    let mut net = Net::default(1);
    let r = net.ask(
        2,
        SaMadRepr::request(Method::GetTable, 0, 0, smir_q(0, master())),
    );
    assert_eq!(r.map(|r| r.records.len()), Ok(0));
}

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

fn iir_q(gid: Gid) -> SaAttribute {
    SaAttribute::InformInfoRecord(InformInfoRecordRepr {
        subscriber_gid: gid,
        subscriber_enum: 0,
        inform_info: InformInfoRepr::default(),
    })
}

fn iirs(r: Result<SaResponse, SaClientError>) -> Vec<InformInfoRecordRepr> {
    records(r)
        .into_iter()
        .map(|a| match a {
            SaAttribute::InformInfoRecord(s) => s,
            other => panic!("{other:?}"),
        })
        .collect()
}

// IBA 1 §15.2.5.12; OpenSM infr_rcv_process_get_method: every subscription in the order made,
// SubscriberGID the subscriber's port GID, Enum 0, InformInfo as kept (QPN the subscriber's QP);
// SubscriberGID selects; no SM_Key needed; unsubscribing removes the record.
#[test]
fn inform_info_records_list_the_subscriptions() {
    let mut net = Net::default(3);
    subscribe(&mut net, 2, 64);
    subscribe(&mut net, 3, 65);
    subscribe(&mut net, 2, 66);
    let all = iirs(net.ask(
        4,
        SaMadRepr::request(Method::GetTable, 0, 0, iir_q(Gid::ZERO)),
    ));
    let seen: Vec<(Gid, u16, u16)> = all
        .iter()
        .map(|r| {
            (
                r.subscriber_gid,
                r.subscriber_enum,
                r.inform_info.trap_number_or_device_id,
            )
        })
        .collect();
    assert_eq!(
        seen,
        [(gid_of(2), 0, 64), (gid_of(3), 0, 65), (gid_of(2), 0, 66)]
    );
    assert!(all
        .iter()
        .all(|r| r.inform_info.subscribe && r.inform_info.qpn == 1));
    let mine = iirs(net.ask(
        4,
        SaMadRepr::request(
            Method::GetTable,
            0,
            iir_mask::SUBSCRIBER_GID,
            iir_q(gid_of(3)),
        ),
    ));
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0].inform_info.trap_number_or_device_id, 65);
    let r = net.ask(
        4,
        SaMadRepr::request(Method::Get, 0, iir_mask::SUBSCRIBER_GID, iir_q(gid_of(2))),
    );
    assert_eq!(r, status(SaStatus::TooManyRecords));
    let r = net.ask(
        4,
        SaMadRepr::request(Method::GetTable, 0, iir_mask::ENUM, {
            let mut q = iir_q(Gid::ZERO);
            if let SaAttribute::InformInfoRecord(ref mut x) = q {
                x.subscriber_enum = 1;
            }
            q
        }),
    );
    assert_eq!(r.map(|r| r.records.len()), Ok(0), "Enum is always 0");
    // Unsubscribe: gone from the table.
    let un = net.ask(
        3,
        SaMadRepr::request(
            Method::Set,
            0,
            0,
            SaAttribute::InformInfo(InformInfoRepr::generic(false, 65, 1)),
        ),
    );
    assert!(un.is_ok(), "{un:?}");
    let all = iirs(net.ask(
        4,
        SaMadRepr::request(Method::GetTable, 0, 0, iir_q(Gid::ZERO)),
    ));
    assert_eq!(all.len(), 2);
}

// OpenSM osm_physp_share_pkey between requester and subscriber.
#[test]
fn inform_info_records_follow_pkey_visibility() {
    let mut m = default_model(3);
    m.ports[2].pkeys = vec![PKey(0x8002)]; // LID 3
    let mut net = Net::new(
        m,
        PartitionConfig::default_config(),
        SaServerConfig::default(),
        1,
    );
    subscribe(&mut net, 2, 64);
    subscribe(&mut net, 3, 64);
    let gids = |net: &mut Net, from: u16| -> Vec<Gid> {
        iirs(net.ask(
            from,
            SaMadRepr::request(Method::GetTable, 0, 0, iir_q(Gid::ZERO)),
        ))
        .iter()
        .map(|r| r.subscriber_gid)
        .collect()
    };
    assert_eq!(gids(&mut net, 4), [gid_of(2)]);
    assert_eq!(gids(&mut net, 3), [gid_of(3)]);
}

// IBA 1 o13-14.1.1 (OpenSM osm_sa_informinfo.c `__validate_ports_access_rights`, "ERR 4305"): a
// subscription is refused, ERR_REQ_INVALID with Subscribe 0 (o13-13.1.1), when its trap source is
// a GID of no port or of a port sharing no P_Key with the requester, or a LID range (LIDRangeEnd
// 0: the begin alone) past the LIDs given out or holding such a port; LIDRangeBegin 0xFFFF is
// every port. Before, the SA took every such subscription.
#[test]
fn a_subscription_to_a_source_the_requester_may_not_reach_is_refused() {
    let mut m = default_model(3);
    m.ports[2].pkeys = vec![PKey(0x8002)]; // LID 3 shares no P_Key with the others
    let mut net = Net::new(
        m,
        PartitionConfig::default_config(),
        SaServerConfig::default(),
        1,
    );
    let set = |net: &mut Net, gid: Gid, begin: u16, end: u16| {
        let info = InformInfoRepr {
            gid,
            lid_range_begin: begin,
            lid_range_end: end,
            ..InformInfoRepr::generic(true, 64, 1)
        };
        let m = SaMadRepr::request(Method::Set, 9, 0, SaAttribute::InformInfo(info));
        let now = net.now;
        net.sa.handle_mad(
            now,
            MadIn {
                from: MadAddr::gsi(2),
                mad: m.to_bytes().to_vec(),
            },
        );
        let out = net.sa.poll_transmit(now).expect("an answer");
        let a = SaMadRepr::parse(&out.mad).expect("answer parses");
        let subscribe = matches!(a.attribute, SaAttribute::InformInfo(r) if r.subscribe);
        (a.header.status, subscribe)
    };
    let all = InformInfoRepr::ALL_16;
    let refused = (MadStatus::sa(SaStatus::ReqInvalid), false);
    assert_eq!(set(&mut net, gid_of(4), all, 0), (MadStatus::SUCCESS, true));
    assert_eq!(
        set(&mut net, gid_of(0x900), all, 0),
        refused,
        "no such port"
    );
    assert_eq!(set(&mut net, gid_of(3), all, 0), refused, "no shared P_Key");
    assert_eq!(set(&mut net, Gid::ZERO, 4, 0), (MadStatus::SUCCESS, true));
    assert_eq!(
        set(&mut net, Gid::ZERO, 2, 4),
        refused,
        "LID 3 in the range"
    );
    assert_eq!(
        set(&mut net, Gid::ZERO, 4, 0xbfff),
        refused,
        "past the LIDs"
    );
    assert_eq!(set(&mut net, Gid::ZERO, all, 0), (MadStatus::SUCCESS, true));
    let subs = iirs(net.ask(
        4,
        SaMadRepr::request(Method::GetTable, 0, 0, iir_q(Gid::ZERO)),
    ));
    assert_eq!(subs.len(), 3, "only the accepted ones are kept");
}
