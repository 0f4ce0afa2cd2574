//! Connected-mode traffic (IBA 1 §9.2-9.7; RFC 4755 §4): an IPoIB-CM frame in three RC SEND
//! packets, an RC SEND Only, its ACK, RDMA WRITE and READ requests, an RNR NAK, a UC SEND Only.

use super::cm::{A11_QPN_A, A11_QPN_B, PSN_A, PSN_B};
use super::ipoib::echo_frame;
use super::{connected, pattern, Sample, A, B, P_KEY};
use crate::ib::{AethRepr, BthRepr, ExtHeaders, Opcode, Operation, RethRepr, Syndrome, Transport};

/// The path MTU of the samples' connections in bytes (MTU code 4 in the REQs is 2048; the
/// multi-packet sample uses 1024 to stay small, which a 2048 path also allows).
const SEGMENT: usize = 1024;
/// The UC QP B listens on in the UC sample.
const UC_QPN_B: u32 = 0x4c;

pub(super) fn samples() -> Vec<Sample> {
    let mut v = send_first_middle_last();
    v.extend([
        Sample::new("rc_send_only_ipoib_cm", send_only()),
        Sample::new("rc_ack", ack()),
        Sample::new("rc_rdma_write_only", rdma_write_only()),
        Sample::new("rc_rdma_read_request", rdma_read_request()),
        Sample::new("rc_rnr_nak", rnr_nak()),
        Sample::new("uc_send_only_ipoib_cm", uc_send_only()),
    ]);
    v
}

fn op(t: Transport, o: Operation) -> Opcode {
    Opcode::new(t, o)
}

/// A 2432-byte IPoIB-CM frame (an ICMP echo request with 2400 bytes of data) from A to B's RC QP,
/// cut at the path MTU: FIRST and MIDDLE carry exactly 1024 bytes, LAST the rest and AckReq
/// (IBA 1 §9.2, §9.7.2; RFC 4755 §4: one IPoIB frame per message).
fn send_first_middle_last() -> Vec<Sample> {
    let f = echo_frame(&A, &B, true, 2, 2400);
    let parts = [
        (
            "rc_send_first_ipoib_cm",
            Operation::SendFirst,
            &f[..SEGMENT],
        ),
        (
            "rc_send_middle",
            Operation::SendMiddle,
            &f[SEGMENT..2 * SEGMENT],
        ),
        ("rc_send_last", Operation::SendLast, &f[2 * SEGMENT..]),
    ];
    parts
        .iter()
        .zip(0u32..)
        .map(|(&(name, o, data), i)| {
            let mut bth = BthRepr::new(op(Transport::Rc, o), P_KEY, B.cm_qpn, PSN_A + i);
            bth.ack_req = o == Operation::SendLast;
            Sample::new(name, connected(&A, B.lid, bth, ExtHeaders::default(), data))
        })
        .collect()
}

/// B's echo reply to A over B's own connection, solicited and acknowledged.
fn send_only() -> Vec<u8> {
    let f = echo_frame(&B, &A, false, 1, 56);
    let mut bth = BthRepr::new(Opcode::RC_SEND_ONLY, P_KEY, A.cm_qpn, PSN_B);
    bth.ack_req = true;
    connected(&B, A.lid, bth, ExtHeaders::default(), &f)
}

fn aeth(syndrome: Syndrome, msn: u32) -> ExtHeaders {
    ExtHeaders {
        aeth: Some(AethRepr { syndrome, msn }),
        ..ExtHeaders::default()
    }
}

/// B acknowledges the three-packet message (PSN of its LAST; MSN 1; credit count 31, "invalid",
/// because B's QP uses an SRQ; IBA 1 §9.7.5.1).
fn ack() -> Vec<u8> {
    let bth = BthRepr::new(Opcode::RC_ACKNOWLEDGE, P_KEY, A.cm_qpn, PSN_A + 2);
    let syndrome = Syndrome::Ack {
        credit_count: Syndrome::INVALID_CREDIT_COUNT,
    };
    connected(&B, A.lid, bth, aeth(syndrome, 1), &[])
}

fn reth(va: u64, dma_len: u32) -> ExtHeaders {
    ExtHeaders {
        reth: Some(RethRepr {
            va,
            rkey: 0x1234_abcd,
            dma_len,
        }),
        ..ExtHeaders::default()
    }
}

/// A writes 64 bytes into B's buffer on the iSER connection (RETH: VA, R_Key, DMA length).
fn rdma_write_only() -> Vec<u8> {
    let data = pattern(64);
    let mut bth = BthRepr::new(
        op(Transport::Rc, Operation::RdmaWriteOnly),
        P_KEY,
        A11_QPN_B,
        0x11_1111,
    );
    bth.ack_req = true;
    connected(
        &A,
        B.lid,
        bth,
        reth(0x0000_7f00_0000_1000, data.len() as u32),
        &data,
    )
}

/// A asks to read 4096 bytes from B's buffer.
fn rdma_read_request() -> Vec<u8> {
    let bth = BthRepr::new(
        op(Transport::Rc, Operation::RdmaReadRequest),
        P_KEY,
        A11_QPN_B,
        0x11_1112,
    );
    connected(&A, B.lid, bth, reth(0x0000_7f00_0000_2000, 4096), &[])
}

/// B has no receive buffer posted: RNR NAK with timer code 14 (1.28 ms; IBA 1 §9.7.5.2.8).
fn rnr_nak() -> Vec<u8> {
    let bth = BthRepr::new(Opcode::RC_ACKNOWLEDGE, P_KEY, A11_QPN_A, 0x11_1113);
    connected(&B, A.lid, bth, aeth(Syndrome::RnrNak { timer: 14 }, 1), &[])
}

/// IPoIB-CM over UC (RFC 4755 §4 allows UC): one echo request in a UC SEND Only.
fn uc_send_only() -> Vec<u8> {
    let f = echo_frame(&A, &B, true, 3, 56);
    let bth = BthRepr::new(Opcode::UC_SEND_ONLY, P_KEY, UC_QPN_B, 0x00_0001);
    connected(&A, B.lid, bth, ExtHeaders::default(), &f)
}
