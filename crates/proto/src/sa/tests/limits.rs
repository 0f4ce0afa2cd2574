//! What the SA holds for bad input, and the header of its single answers: RMPP transfers bounded
//! in number and bytes under a flood of GetTables, InformInfo subscriptions under a flood of Sets;
//! AttributeOffset of a one-record GetResp as OpenSM fills it (docs/OPENSM-LIMITS.md).

use super::*;
use crate::sa::MAX_INFORMS;
use ipoib_wire::mad::{InformInfoRepr, Method};
use ipoib_wire::sa::{PathRecordRepr, SaAttribute};

fn pr_table(tid: u64) -> Vec<u8> {
    SaMadRepr::request(
        Method::GetTable,
        tid,
        0,
        SaAttribute::PathRecord(PathRecordRepr::default()),
    )
    .to_bytes()
    .to_vec()
}

/// Hands `mad` from `lid` straight to the SA and returns what it sends at once.
fn sa_answers(net: &mut Net, lid: u16, mad: Vec<u8>) -> Vec<MadOut> {
    let now = net.now;
    net.sa.handle_mad(
        now,
        MadIn {
            from: MadAddr::gsi(lid),
            mad,
        },
    );
    std::iter::from_fn(|| net.sa.poll_transmit(now)).collect()
}

/// Floods the SA with GetTable(PathRecord) number `from` to `to` (exclusive) from hosts 2..=7,
/// TID 0x7000 + the number, nobody acknowledging; returns (transfers started, ERR_NO_RESOURCES
/// answers).
fn flood(net: &mut Net, from: u64, to: u64) -> (usize, usize) {
    let (mut started, mut refused) = (0, 0);
    for i in from..to {
        let lid = 2 + (i % 6) as u16;
        for out in sa_answers(net, lid, pr_table(0x7000 + i)) {
            let m = SaMadRepr::parse(&out.mad).expect("SA answer parses");
            if m.header.status == MadStatus::sa(SaStatus::NoResources) {
                refused += 1;
            } else if m.rmpp.is_active() && m.rmpp.data1 == 1 {
                started += 1;
            }
        }
    }
    (started, refused)
}

// Bad input keeps memory bounded: a flood of GetTables, each opening an RMPP transfer that holds
// its whole table (64 paths here: 21 segments), opens at most `max_rmpp_transfers`; past it the
// SA answers ERR_NO_RESOURCES, as OpenSM's osm_sa_respond does when it cannot get the response's
// buffer (osm_sa.c "ERR 4C06"), counts it, and still answers a PathRecord Get. The abandoned
// transfers time out (IBA 1 §13.6.3) and free their room.
#[test]
fn a_gettable_flood_opens_at_most_the_cap_of_transfers() {
    let mut net = Net::default(6);
    let cap = net.sa.cfg().max_rmpp_transfers;
    let n = cap as u64 + 100;
    let (started, refused) = flood(&mut net, 0, n);
    assert_eq!((started, refused), (cap, 100));
    let (open, held) = net.sa.rmpp_open();
    assert_eq!(open, cap);
    assert_eq!(held, cap * 21 * 256, "each transfer holds its 21 segments");
    assert!(held <= net.sa.cfg().max_rmpp_bytes);
    assert_eq!(net.sa.stats().rmpp_refused, 100);
    assert_eq!(net.sa.stats().rmpp_started, cap as u64);
    // A PathRecord Get still gets its answer; meanwhile every abandoned transfer times out.
    let q = PathRecordRepr {
        dgid: gid_of(3),
        sgid: gid_of(2),
        ..Default::default()
    };
    let mask = ipoib_wire::sa::pr_mask::DGID | ipoib_wire::sa::pr_mask::SGID;
    let r = net.ask(
        2,
        SaMadRepr::request(Method::Get, 0, mask, SaAttribute::PathRecord(q)),
    );
    assert!(
        matches!(r, Ok(SaResponse { attribute: Some(SaAttribute::PathRecord(p)), .. }) if p.dlid == 3)
    );
    assert_eq!(net.sa.rmpp_open(), (0, 0));
    assert_eq!(net.sa.stats().rmpp_failed, cap as u64);
    // Room again: a new GetTable opens a transfer.
    assert_eq!(flood(&mut net, n, n + 1), (1, 0));
}

// The bytes held are bounded too: with room for 10 tables of 21 segments, the 11th is refused
// however many transfers the count would allow; a request resent while its transfer runs
// opens no second one.
#[test]
fn open_transfers_are_bounded_in_bytes() {
    let cfg = SaServerConfig {
        max_rmpp_bytes: 10 * 21 * 256,
        ..SaServerConfig::default()
    };
    let mut net = Net::new(default_model(6), PartitionConfig::default_config(), cfg, 7);
    assert_eq!(flood(&mut net, 0, 10), (10, 0));
    // Host 2 resends its first request (TID 0x7000) while that transfer runs: the transfer goes
    // on, the second answer is dropped (Linux user_mad.c `is_duplicate`), still 10 open.
    assert!(sa_answers(&mut net, 2, pr_table(0x7000)).is_empty());
    assert_eq!(net.sa.rmpp_open().0, 10);
    let dropped = &net.sa.stats().dropped;
    assert_eq!(
        dropped.get("answer to a request whose RMPP transfer runs"),
        Some(&1)
    );
    assert_eq!(flood(&mut net, 10, 11), (0, 1));
    assert_eq!(net.sa.rmpp_open(), (10, 10 * 21 * 256));
}

// IBA 1 §15.2.1.1: AttributeOffset is the record's length in 8-byte words. OpenSM 3.3.23's
// osm_sa_respond writes it into every answer carrying records, a GetResp of one record included
// (osm_sa.c; runtime test `opensm_diff::our_subnet_records_match_opensm` compares it): PathRecord
// 64 bytes -> 8, MCMemberRecord 52 -> 7. ClassPortInfo is no record: 0.
#[test]
fn a_single_record_answer_carries_the_records_attribute_offset() {
    let mut net = Net::default(2);
    let offset = |net: &mut Net, m: SaMadRepr| {
        let outs = sa_answers(net, 2, m.to_bytes().to_vec());
        let a = SaMadRepr::parse(&outs[0].mad).expect("answer");
        assert_eq!(a.header.status, MadStatus::SUCCESS, "{:?}", a.header);
        a.sa.attribute_offset
    };
    let q = PathRecordRepr {
        dgid: gid_of(3),
        sgid: gid_of(2),
        ..Default::default()
    };
    let mask = ipoib_wire::sa::pr_mask::DGID | ipoib_wire::sa::pr_mask::SGID;
    let get = SaMadRepr::request(Method::Get, 1, mask, SaAttribute::PathRecord(q));
    assert_eq!(offset(&mut net, get), 8);
    let rec = join_rec(bcast(), gid_of(2), JoinState::FULL_MEMBER);
    let m = join(
        rec,
        mcr_mask::MGID | mcr_mask::PORT_GID | mcr_mask::JOIN_STATE,
    );
    assert_eq!(offset(&mut net, m), 7);
    assert_eq!(offset(&mut net, SaMadRepr::class_port_info_get(2)), 0);
}

// Bad input keeps memory bounded: a flood of InformInfo Sets, each a different subscription (here
// TrapNumber 1000 + i from hosts 2..=7), keeps at most MAX_INFORMS; past it the Set is answered
// ERR_NO_RESOURCES with Subscribe 0, as OpenSM answers when it cannot allocate the subscription
// (osm_sa_informinfo.c "ERR 4306", o13-13.1.1). An unsubscription frees room for one more.
#[test]
fn an_inform_info_flood_keeps_at_most_max_informs() {
    let mut net = Net::default(6);
    let set = |net: &mut Net, i: usize, subscribe: bool| {
        let lid = 2 + (i % 6) as u16;
        let trap = 1000 + (i / 6) as u16;
        let info = InformInfoRepr::generic(subscribe, trap, 1);
        let m = SaMadRepr::request(Method::Set, i as u64, 0, SaAttribute::InformInfo(info));
        let outs = sa_answers(net, lid, m.to_bytes().to_vec());
        assert_eq!(outs.len(), 1, "one answer to Set {i}");
        SaMadRepr::parse(&outs[0].mad).expect("answer parses")
    };
    for i in 0..MAX_INFORMS {
        let a = set(&mut net, i, true);
        assert_eq!(a.header.status, MadStatus::SUCCESS, "Set {i}");
    }
    for i in MAX_INFORMS..MAX_INFORMS + 10 {
        let a = set(&mut net, i, true);
        assert_eq!(
            a.header.status,
            MadStatus::sa(SaStatus::NoResources),
            "Set {i}"
        );
        assert!(
            matches!(a.attribute, SaAttribute::InformInfo(r) if !r.subscribe),
            "Subscribe 0 in the refusal: {:?}",
            a.attribute
        );
    }
    assert_eq!(net.sa.stats().informs_refused, 10);
    assert_eq!(set(&mut net, 0, false).header.status, MadStatus::SUCCESS);
    let a = set(&mut net, MAX_INFORMS, true);
    assert_eq!(a.header.status, MadStatus::SUCCESS);
}

/// An ACK of the transfer `first` (the first DATA segment the SA sent) belongs to, as the
/// receiver writes it (`rmpp::ack_for`), with SegmentNumber `seg` and NewWindowLast `nwl`.
fn ack(first: &[u8], seg: u32, nwl: u32) -> Vec<u8> {
    crate::sa::rmpp::ack_for(first, seg, nwl).unwrap().to_vec()
}

/// The RMPP type and status of an SA answer.
fn rmpp_of(out: &MadOut) -> (ipoib_wire::mad::RmppType, ipoib_wire::mad::RmppStatus) {
    let m = SaMadRepr::parse(&out.mad).expect("SA answer parses");
    (m.rmpp.rmpp_type, m.rmpp.status)
}

// IBA 1 §13.6.3.2, as Linux `mad_rmpp.c` `process_rmpp_ack` (and OpenSM's own RMPP sender,
// `osmv_rmpp_snd.c`) reads it: an ACK of a segment the sender has not sent (past the window it
// was granted) ends the transfer with an ABORT, status S2B; an ACK whose NewWindowLast is below
// its SegmentNumber with an ABORT, status W2S. Before, the SA took the first as acknowledging
// segments it never sent and went on past them, and ended the second silently.
#[test]
fn an_ack_past_the_window_or_below_its_segment_is_aborted() {
    use ipoib_wire::mad::{RmppStatus, RmppType};
    let mut net = Net::default(6);
    let outs = sa_answers(&mut net, 2, pr_table(0x100));
    assert_eq!(outs.len(), 1, "a first window of one segment");
    let first = outs[0].mad.clone();
    // Segment 3 acknowledged while only segment 1 may have left: S2B, nothing more sent.
    let outs = sa_answers(&mut net, 2, ack(&first, 3, 40));
    assert_eq!(outs.len(), 1, "only the ABORT");
    assert_eq!(
        rmpp_of(&outs[0]),
        (RmppType::Abort, RmppStatus::SegmentNumberTooBig)
    );
    let a = SaMadRepr::parse(&outs[0].mad).unwrap();
    assert_eq!(a.header.method, Method::GetTableResp);
    assert_eq!(a.header.transaction_id, 0x100);
    assert_eq!(net.sa.rmpp_open(), (0, 0));
    // NewWindowLast below SegmentNumber: W2S.
    let outs = sa_answers(&mut net, 3, pr_table(0x101));
    let first = outs[0].mad.clone();
    let outs = sa_answers(&mut net, 3, ack(&first, 1, 0));
    assert_eq!(
        rmpp_of(&outs[0]),
        (RmppType::Abort, RmppStatus::NewWindowLastTooSmall)
    );
    assert_eq!(net.sa.rmpp_open(), (0, 0));
    assert_eq!(net.sa.stats().rmpp_failed, 2);
    // A good ACK moves the window on; an older one (smaller window) changes nothing.
    let outs = sa_answers(&mut net, 4, pr_table(0x102));
    let first = outs[0].mad.clone();
    assert_eq!(sa_answers(&mut net, 4, ack(&first, 1, 3)).len(), 2);
    assert!(sa_answers(&mut net, 4, ack(&first, 1, 2)).is_empty());
    assert_eq!(net.sa.rmpp_open().0, 1);
}
