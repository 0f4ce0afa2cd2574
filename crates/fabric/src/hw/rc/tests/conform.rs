//! Conformance cases of IBA 1 chapter 9 driven by targeted drops or crafted requests: each one
//! failed on an older engine (named in its test).

use super::{send_wr, Pair};
use crate::hw::verbs::{QpType, SendOp, WcOpcode, WcStatus};

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
