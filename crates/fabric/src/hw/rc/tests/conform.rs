//! Conformance cases of IBA 1 chapter 9 driven by targeted drops or crafted requests: each one
//! failed on an older engine (named in its test).

use super::{send_wr, Pair, QPN_B};
use crate::hw::rc::{psn_add, MemoryRegion, PSN_MASK};
use crate::hw::verbs::{QpType, SendOp, WcOpcode, WcStatus};
use ipoib_wire::ib::{BthRepr, ExtHeaders, Opcode, Operation, RethRepr, Transport};
use ipoib_wire::PKey;

/// A zero-length RDMA WRITE and a zero-length RDMA READ reach no memory, so their R_Key and VA
/// are not checked (docs/CONFORMANCE.md, "IBA reliable and unreliable connected service"): with
/// no region at all at the responder, both complete successfully and the QPs stay usable. A
/// one-byte WRITE with the same R_Key still gets remote access error. Fails on the old code,
/// which NAKed both zero-length requests remote access error.
#[test]
fn zero_length_rdma_checks_no_r_key() {
    let mut pair = Pair::new(QpType::Rc, 31, 1, 0);
    let write = SendOp::RdmaWrite {
        remote_addr: 0,
        rkey: 0,
    };
    let read = SendOp::RdmaRead {
        remote_addr: 0,
        rkey: 0,
        len: 0,
        local: None,
    };
    pair.a
        .post_send(pair.now, send_wr(1, write, Vec::new()))
        .unwrap();
    pair.a
        .post_send(pair.now, send_wr(2, read, Vec::new()))
        .unwrap();
    pair.drive();
    let got: Vec<_> = pair
        .comp_a
        .iter()
        .map(|c| (c.wr_id, c.status, c.opcode, c.byte_len))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, WcStatus::Success, WcOpcode::RdmaWrite, 0),
            (2, WcStatus::Success, WcOpcode::RdmaRead, 0),
        ]
    );
    assert_eq!(pair.b.counters().fatal_naks_sent, 0);
    pair.a
        .post_send(pair.now, send_wr(3, write, vec![1]))
        .unwrap();
    pair.drive();
    assert_eq!(pair.comp_a[2].status, WcStatus::RemAccessErr);
}

/// IBA 1 §9.7.5.1.6: a READ response lost in the middle of four: the requester takes the next
/// one as an implied NAK and re-issues the READ for the missing responses only (its PSN, VA and
/// length those of the first missing packet); the data arrives once, whole, in one completion.
/// Also across the 24-bit PSN wrap (IBA 1 §9.7.1).
#[test]
fn lost_read_response_is_asked_for_again_from_its_psn() {
    for first in [100, PSN_MASK - 1] {
        lost_read_response(first);
    }
}

fn lost_read_response(first: u32) {
    let psn = |k: u32| psn_add(first, k);
    let mut pair = Pair::new(QpType::Rc, 32, 1, first);
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
    pair.mem_b = vec![MemoryRegion::new(0x1000, 9, data.clone())];
    pair.ba.drop_once = vec![psn(2)];
    let read = SendOp::RdmaRead {
        remote_addr: 0x1000,
        rkey: 9,
        len: 1000,
        local: None,
    };
    pair.a
        .post_send(pair.now, send_wr(1, read, Vec::new()))
        .unwrap();
    let after = send_wr(2, SendOp::Send, vec![5; 10]);
    pair.b
        .post_recv(crate::hw::verbs::RecvWr {
            wr_id: 3,
            capacity: 64,
        })
        .unwrap();
    pair.a.post_send(pair.now, after).unwrap();
    pair.drive();
    let got: Vec<_> = pair.comp_a.iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(got, vec![(1, WcStatus::Success), (2, WcStatus::Success)]);
    assert_eq!(pair.comp_a[0].data, data);
    assert_eq!(pair.comp_b.len(), 1, "the SEND after the READ arrives once");
    let requests: Vec<(u32, Operation)> = pair
        .ab
        .log
        .iter()
        .map(|b| (b.psn, b.opcode.operation()))
        .collect();
    use Operation::*;
    // The READ, the SEND, then the READ again from the missing response and the SEND again
    // (go-back-N), whose duplicate is ACKed, not delivered.
    assert_eq!(
        requests,
        vec![
            (psn(0), RdmaReadRequest),
            (psn(4), SendOnly),
            (psn(2), RdmaReadRequest),
            (psn(4), SendOnly),
        ]
    );
    assert_eq!(pair.a.counters().implied_naks, 1);
    assert_eq!(pair.a.counters().timeouts, 0);
    let responses: Vec<(u32, Operation)> = pair
        .ba
        .log
        .iter()
        .filter(|b| b.opcode.operation() != Acknowledge)
        .map(|b| (b.psn, b.opcode.operation()))
        .collect();
    assert_eq!(
        responses,
        vec![
            (psn(0), RdmaReadResponseFirst),
            (psn(1), RdmaReadResponseMiddle),
            (psn(2), RdmaReadResponseMiddle),
            (psn(3), RdmaReadResponseLast),
            (psn(2), RdmaReadResponseFirst),
            (psn(3), RdmaReadResponseLast),
        ]
    );
}

/// IBA 1 §9.7.5.2.8: an RDMA WRITE with immediate whose LAST packet finds no receive is RNR
/// NAKed at that packet; after the RNR timer the requester resends that packet alone, and the
/// WRITE completes once at both ends with every byte in place.
#[test]
fn rnr_nak_at_the_last_packet_of_a_write_with_immediate_resends_only_it() {
    let mut pair = Pair::new(QpType::Rc, 33, 1, 0);
    pair.mem_b = vec![MemoryRegion::new(0x1000, 9, vec![0; 700])];
    let data: Vec<u8> = (0..700u32).map(|i| (i * 3) as u8).collect();
    let op = SendOp::RdmaWriteWithImm {
        remote_addr: 0x1000,
        rkey: 9,
        imm: 0x55,
    };
    pair.a
        .post_send(pair.now, send_wr(1, op, data.clone()))
        .unwrap();
    assert!(pair.drive_until(1000, |p| p.a.counters().rnr_naks_received == 1));
    pair.b
        .post_recv(crate::hw::verbs::RecvWr {
            wr_id: 7,
            capacity: 0,
        })
        .unwrap();
    pair.drive();
    let psns: Vec<u32> = pair.ab.log.iter().map(|b| b.psn).collect();
    assert_eq!(psns, vec![0, 1, 2, 2]);
    assert_eq!(pair.mem_b[0].bytes, data);
    assert_eq!(pair.comp_a.len(), 1);
    assert_eq!(pair.comp_a[0].status, WcStatus::Success);
    let got: Vec<_> = pair
        .comp_b
        .iter()
        .map(|c| (c.wr_id, c.status, c.opcode, c.imm, c.byte_len))
        .collect();
    assert_eq!(
        got,
        vec![(
            7,
            WcStatus::Success,
            WcOpcode::RecvRdmaWithImm,
            Some(0x55),
            700
        )]
    );
}

/// IBA 1 §9.7.5.2.3: a duplicate RDMA READ request is answered by reading again, but only within
/// the READ it repeats: the responder finds the READ it executed whose response PSNs hold the
/// duplicate's PSN, and answers when the duplicate names that READ's R_Key, bytes within its
/// range, and no more responses than that READ has from the duplicate's PSN on (Linux rxe
/// `duplicate_request`, which drops the others). Crafted duplicates after a 1000-byte READ at
/// PSN 0-3 and a SEND at PSN 4: the tail from PSN 1 is answered (PSNs 1-3, the bytes from offset
/// 256); a duplicate at PSN 0 for bytes outside the READ, one with another R_Key, one at PSN 2
/// asking for four responses, and one at the SEND's PSN are dropped and counted. Fails on the
/// old code, which read whatever a duplicate's RETH named (the bytes at 2000, outside the READ).
#[test]
fn a_duplicate_read_is_answered_only_within_the_read_it_repeats() {
    let mut pair = Pair::new(QpType::Rc, 34, 1, 0);
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 13) as u8).collect();
    pair.mem_b = vec![
        MemoryRegion::new(0x1000, 9, data.clone()),
        MemoryRegion::new(0x8000, 10, data.clone()),
    ];
    let read = SendOp::RdmaRead {
        remote_addr: 0x1000,
        rkey: 9,
        len: 1000,
        local: None,
    };
    pair.a
        .post_send(pair.now, send_wr(1, read, Vec::new()))
        .unwrap();
    pair.b
        .post_recv(crate::hw::verbs::RecvWr {
            wr_id: 2,
            capacity: 64,
        })
        .unwrap();
    pair.a
        .post_send(pair.now, send_wr(2, SendOp::Send, vec![5; 10]))
        .unwrap();
    pair.drive();
    assert_eq!(pair.comp_a.len(), 2);
    assert_eq!(pair.b.expected_psn(), 5);
    let mut duplicate = |psn: u32, va: u64, rkey: u32, len: u32| {
        let bth = BthRepr::new(
            Opcode::new(Transport::Rc, Operation::RdmaReadRequest),
            PKey(0),
            QPN_B,
            psn,
        );
        let ext = ExtHeaders {
            reth: Some(RethRepr {
                va,
                rkey,
                dma_len: len,
            }),
            ..ExtHeaders::default()
        };
        pair.b
            .handle_packet(pair.now, &bth, &ext, &[], &mut pair.mem_b);
        std::iter::from_fn(|| pair.b.poll_transmit(pair.now))
            .map(|o| (o.bth.psn, o.bth.opcode.operation(), o.payload))
            .collect::<Vec<_>>()
    };
    use Operation::*;
    assert_eq!(
        duplicate(1, 0x1000 + 256, 9, 744),
        vec![
            (1, RdmaReadResponseFirst, data[256..512].to_vec()),
            (2, RdmaReadResponseMiddle, data[512..768].to_vec()),
            (3, RdmaReadResponseLast, data[768..1000].to_vec()),
        ]
    );
    assert_eq!(
        duplicate(0, 0x1000 + 2000, 9, 100),
        vec![],
        "outside the READ"
    );
    assert_eq!(duplicate(0, 0x8000, 10, 1000), vec![], "another R_Key");
    assert_eq!(duplicate(2, 0x1000, 9, 1000), vec![], "beyond its PSNs");
    assert_eq!(duplicate(4, 0x1000, 9, 100), vec![], "the SEND's PSN");
    let c = pair.b.counters();
    assert_eq!((c.duplicates, c.duplicate_reads_refused), (5, 4));
    assert_eq!(pair.b.state(), crate::hw::verbs::QpState::Rts);
}
