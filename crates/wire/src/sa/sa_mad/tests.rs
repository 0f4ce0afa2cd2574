use super::*;
use crate::describe::Collect;
use crate::mad::strategy::{arb_gid, arb_header, arb_rmpp};
use crate::mad::{attr, NoticeRepr, SaStatus};
use crate::sa::mcmember::tests::{arb_mcmember, bcast_join, bcast_join_bytes};
use crate::sa::mcr_mask;
use proptest::prelude::*;

const TID: u64 = 0x1234;
const MASK: u64 = mcr_mask::MGID
    | mcr_mask::PORT_GID
    | mcr_mask::Q_KEY
    | mcr_mask::MTU_SELECTOR
    | mcr_mask::MTU
    | mcr_mask::P_KEY
    | mcr_mask::JOIN_STATE;

/// SubnAdmSet(MCMemberRecord) joining the IPoIB broadcast group as FullMember: class 3 version 2,
/// method 0x02, TID 0x1234, attribute 0x0038, no RMPP, SM_Key 0, ComponentMask 0x100b7, the record
/// at byte 56 (IBA 1 §15.2.1, IBA 1 §15.2.5.17; draft-ietf-ipoib-ip-over-infiniband-06 §5).
fn join_mad() -> [u8; 256] {
    let mut b = [0u8; 256];
    b[..24].copy_from_slice(&[
        0x01, 0x03, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x12,
        0x34, 0x00, 0x38, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ]);
    b[48..56].copy_from_slice(&[0, 0, 0, 0, 0, 0x01, 0x00, 0xb7]);
    b[56..108].copy_from_slice(&bcast_join_bytes());
    b
}

// IBA 1 §15.2.1, IBA 1 §15.2.5.17
#[test]
fn build_join_known_answer() {
    let r = SaMadRepr::mcmember_join(TID, bcast_join(), MASK);
    assert_eq!(MASK, 0x100b7);
    assert_eq!(r.to_bytes(), join_mad());
    assert_eq!(r.buffer_len(), 256);
}

// IBA 1 §15.2.1
#[test]
fn parse_join() {
    let r = SaMadRepr::parse(&join_mad()).unwrap();
    assert_eq!(r.header.method, Method::Set);
    assert_eq!(r.header.attribute_id, attr::sa::MC_MEMBER_RECORD);
    assert_eq!(r.sa.component_mask, MASK);
    assert_eq!(r.attribute, SaAttribute::McMemberRecord(bcast_join()));
    assert!(!r.is_table());
    assert_eq!(r.records().next(), None);
    assert_eq!(r, SaMadRepr::mcmember_join(TID, bcast_join(), MASK));
}

// IBA 1 §13.4.4: only SubnAdm MADs are SA MADs.
#[test]
fn other_class_is_unsupported() {
    let mut b = join_mad();
    b[1] = 0x07;
    assert_eq!(SaMadRepr::parse(&b), Err(Error::Unsupported));
    assert_eq!(SaMadRepr::parse(&b[..255]), Err(Error::Truncated));
}

// IBA 1 §15.2.2, IBA 1 §13.4.6.2
#[test]
fn responses() {
    let join = SaMadRepr::mcmember_join(TID, bcast_join(), MASK);
    let granted = McMemberRecordRepr {
        mlid: 0xc000,
        ..bcast_join()
    };
    let resp = join.response(MadStatus::SUCCESS, SaAttribute::McMemberRecord(granted));
    assert_eq!(resp.header.method, Method::GetResp);
    assert_eq!(resp.header.transaction_id, TID);
    assert_eq!(resp.sa.component_mask, MASK);
    let bytes = resp.to_bytes();
    assert_eq!(bytes[3], 0x81);
    assert_eq!(&bytes[56 + 36..56 + 38], &[0xc0, 0x00]);
    assert_eq!(SaMadRepr::parse(&bytes).unwrap(), resp);

    let leave = SaMadRepr::mcmember_leave(TID + 1, bcast_join(), MASK);
    assert_eq!(leave.to_bytes()[3], 0x15);
    let err = leave.response(
        MadStatus::sa(SaStatus::ReqInvalid),
        SaAttribute::McMemberRecord(bcast_join()),
    );
    assert_eq!(err.header.method, Method::DeleteResp);
    assert_eq!(&err.to_bytes()[3..6], &[0x95, 0x02, 0x00]);
}

// IBA 1 §15.2.1.1, IBA 1 §13.6.2: GetTableResp in one MAD, records 56 bytes apart.
#[test]
fn table_response_round_trip() {
    let req = SaMadRepr::request(
        Method::GetTable,
        7,
        mcr_mask::MGID,
        SaAttribute::McMemberRecord(bcast_join()),
    );
    let recs: Vec<SaAttribute> = (0..3)
        .map(|i| {
            SaAttribute::McMemberRecord(McMemberRecordRepr {
                mlid: 0xc000 + i,
                ..bcast_join()
            })
        })
        .collect();
    let resp = req.table_response(MadStatus::SUCCESS, &recs).unwrap();
    let b = resp.to_bytes();
    assert_eq!(b[3], 0x92);
    assert_eq!(&b[24..36], &[1, 1, 0x07, 0, 0, 0, 0, 1, 0, 0, 0, 20 + 168]);
    assert_eq!(&b[44..46], &[0, 7]);
    assert_eq!(&b[56 + 56..56 + 56 + 16], bcast_join().mgid.as_bytes());
    let back = SaMadRepr::parse(&b).unwrap();
    assert_eq!(back, resp);
    assert!(back.is_table());
    let got: Vec<SaAttribute> = back.records().map(|r| r.unwrap()).collect();
    assert_eq!(got, recs);

    // Zero records: PayloadLength 20, an empty table.
    let empty = req.table_response(MadStatus::SUCCESS, &[]).unwrap();
    let back = SaMadRepr::parse(&empty.to_bytes()).unwrap();
    assert_eq!(back.records().record_count(), 0);

    // Four MCMemberRecords (224 bytes) need multi-segment RMPP.
    let four = [recs[0]; 4];
    assert_eq!(
        req.table_response(MadStatus::SUCCESS, &four),
        Err(Error::Unsupported)
    );
    let mut payload = [0u8; 224];
    assert_eq!(
        emit_records(attr::sa::MC_MEMBER_RECORD, &four, &mut payload),
        Ok(224)
    );
    assert_eq!(
        emit_records(attr::sa::PATH_RECORD, &four, &mut payload),
        Err(Error::Truncated)
    );
    let mut big = [0u8; 256];
    assert_eq!(
        emit_records(attr::sa::PATH_RECORD, &four, &mut big),
        Err(Error::Malformed)
    );
}

// IBA 1 §15.2.1
#[test]
fn describe_join() {
    let mut c = Collect::default();
    SaMadRepr::parse(&join_mad()).unwrap().describe(&mut c);
    assert_eq!(c.get("mad.method"), Some("Set (0x2)"));
    assert_eq!(c.get("sa.component_mask"), Some("0x00000000000100b7"));
    assert_eq!(
        c.get("mc_member_record.mgid"),
        Some("ff12:401b:ffff::ffff:ffff")
    );
    assert_eq!(c.get("mc_member_record.join_state"), Some("0x1"));
    assert_eq!(c.get("rmpp.type"), Some("None (0x0)"));
}

#[test]
fn describe_table_and_notice() {
    let req = SaMadRepr::request(
        Method::GetTable,
        7,
        0,
        SaAttribute::McMemberRecord(bcast_join()),
    );
    let resp = req
        .table_response(
            MadStatus::SUCCESS,
            &[SaAttribute::McMemberRecord(bcast_join())],
        )
        .unwrap();
    let mut c = Collect::default();
    resp.describe(&mut c);
    assert_eq!(c.get("records.count"), Some("1"));
    assert_eq!(
        c.get("records.record_0.attribute"),
        Some("mc_member_record")
    );
    assert_eq!(c.get("records.record_0.q_key"), Some("0x00000b1b"));

    let n = NoticeRepr::gid_trap(66, bcast_join().mgid, 1, bcast_join().port_gid);
    let report = SaMadRepr::request(Method::Report, 9, 0, SaAttribute::Notice(n));
    let back = SaMadRepr::parse(&report.to_bytes()).unwrap();
    assert_eq!(back.attribute, SaAttribute::Notice(n));
    let mut c = Collect::default();
    back.describe(&mut c);
    assert_eq!(c.get("notice.gid"), Some("ff12:401b:ffff::ffff:ffff"));
}

fn arb_sa_mad() -> impl Strategy<Value = SaMadRepr> {
    (
        arb_header(),
        (any::<u64>(), any::<u16>(), any::<u64>()),
        arb_mcmember(),
        arb_gid(),
    )
        .prop_map(|(h, (k, off, mask), mc, g)| {
            // Single-attribute MADs only: tables are covered by table_response_round_trip.
            let method = match u8::from(h.method) {
                0x92 | 0x94 => Method::Get,
                _ => h.method,
            };
            let (attribute_id, attribute) = if g.0[0] & 1 == 0 {
                (attr::sa::MC_MEMBER_RECORD, SaAttribute::McMemberRecord(mc))
            } else {
                let n = NoticeRepr::gid_trap(u16::from(g.0[1]), g, off, mc.port_gid);
                (attr::sa::NOTICE, SaAttribute::Notice(n))
            };
            SaMadRepr {
                header: MadHeaderRepr {
                    mgmt_class: MgmtClass::SubnAdm,
                    method,
                    attribute_id,
                    ..h
                },
                rmpp: RmppRepr::NONE,
                sa: SaHeaderRepr {
                    sm_key: k,
                    attribute_offset: off,
                    component_mask: mask,
                },
                attribute,
            }
        })
}

proptest! {
    #[test]
    fn emit_parse_identity(r in arb_sa_mad()) {
        prop_assert_eq!(SaMadRepr::parse(&r.to_bytes()).unwrap(), r);
    }

    #[test]
    fn rmpp_survives(r in arb_sa_mad(), rmpp in arb_rmpp()) {
        let r = SaMadRepr { rmpp, ..r };
        let back = SaMadRepr::parse(&r.to_bytes()).unwrap();
        prop_assert_eq!(back.rmpp, rmpp);
        prop_assert_eq!(back.header, r.header);
    }

    #[test]
    fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = SaMadRepr::parse(&data);
        if data.len() >= 256 {
            let mut b = data.clone();
            b[1] = 0x03;
            if let Ok(r) = SaMadRepr::parse(&b) {
                let mut c = Collect::default();
                r.describe(&mut c);
                let _ = r.to_bytes();
            }
        }
    }
}
