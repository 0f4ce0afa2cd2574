//! The engine inside the emulated HCA ([`crate::hw::hca::Hca`] with [`crate::hw::rc::engine_factory`]):
//! two hosts on a simulated link with faults, RC and UC QPs set up through create_qp / modify_qp,
//! packets framed by the HCA (LRH, P_Key, ICRC, VCRC) and checked by the receiving HCA.

use super::Pool;
use crate::hw::hca::tests::{pair, Pair as HcaPair};
use crate::hw::hca::{CqId, Hca, HcaDropReason, ModifyQp, QpInit};
use crate::hw::link::Fault;
use crate::hw::rc::engine_factory;
use crate::hw::sim::{NodeId, Simulator};
use crate::hw::verbs::{
    AddressHandle, ConnectedAttr, QpState, QpType, Qpn, RecvWr, SendOp, SendWr, WcOpcode, WcStatus,
};
use ipoib_wire::Mtu;
use ipoib_wire::QKey;
use std::time::Duration;

pub(super) struct End {
    pub node: NodeId,
    pub qpn: Qpn,
    pub cq: CqId,
}

pub(super) fn create(sim: &mut Simulator, node: NodeId, qp_type: QpType) -> End {
    sim.with_node::<Hca, _>(node, |h, _, _| {
        h.set_engine_factory(engine_factory());
        let cq = h.create_cq();
        let init = QpInit {
            qp_type,
            port: 1,
            send_cq: cq,
            recv_cq: cq,
            privileged: false,
            sq_sig_all: true,
        };
        let qpn = h.create_qp(init).expect("RC/UC QP with the rc engine");
        End { node, qpn, cq }
    })
    .expect("hca")
}

/// Init (with `recvs` receives posted already there), RTR, RTS towards `peer` at LID `dlid`.
fn connect(sim: &mut Simulator, end: &End, peer: Qpn, dlid: u16, recvs: u64) {
    connect_with(sim, end, peer, dlid, recvs, |_| {});
}

/// As `connect`, with a hook to change the connection attributes.
pub(super) fn connect_with(
    sim: &mut Simulator,
    end: &End,
    peer: Qpn,
    dlid: u16,
    recvs: u64,
    tweak: impl Fn(&mut ConnectedAttr),
) {
    let mut attr = ConnectedAttr {
        path: AddressHandle {
            dlid,
            sl: 0,
            src_path_bits: 0,
            grh: None,
            port: 1,
        },
        dest_qpn: peer,
        rq_psn: 0x00ff_ff00,
        sq_psn: 0x00ff_ff00,
        path_mtu: Mtu::Mtu2048,
        pkey_index: 0,
        retry_count: 7,
        rnr_retry: 7,
        timeout: 10,
        min_rnr_timer: 1,
        max_rd_atomic: 4,
        max_dest_rd_atomic: 4,
    };
    tweak(&mut attr);
    sim.with_node::<Hca, _>(end.node, |h, _, _| {
        let init = ModifyQp::Init {
            port: 1,
            pkey_index: 0,
            qkey: QKey(0),
        };
        h.modify_qp(end.qpn, init).unwrap();
        for i in 0..recvs {
            let r = RecvWr {
                wr_id: i,
                capacity: 1 << 16,
            };
            h.post_recv(end.qpn, r).unwrap();
        }
        h.modify_qp(end.qpn, ModifyQp::Rtr(Some(attr))).unwrap();
        h.modify_qp(end.qpn, ModifyQp::Rts(Some(attr))).unwrap();
        assert_eq!(h.qp_info(end.qpn).unwrap().state, QpState::Rts);
    });
}

/// Two connected QPs over a link with 10% drop and 1% corruption, and, when `dup_and_reorder`,
/// 2% duplication and 5% reordering besides.
fn setup(seed: u64, qp_type: QpType, recvs: u64, dup_and_reorder: bool) -> (HcaPair, End, End) {
    let mut p = pair(seed);
    p.sim.run_until_idle(100);
    let a = create(&mut p.sim, p.a, qp_type);
    let b = create(&mut p.sim, p.b, qp_type);
    connect(&mut p.sim, &a, b.qpn, 2, 0);
    connect(&mut p.sim, &b, a.qpn, 1, recvs);
    let mut faults = vec![Fault::Drop(0.10), Fault::Corrupt(0.01)];
    if dup_and_reorder {
        faults.push(Fault::Duplicate(0.02));
        faults.push(Fault::Reorder {
            p: 0.05,
            delay: Duration::from_micros(3),
        });
    }
    p.sim.set_faults(p.link, None, faults);
    (p, a, b)
}

fn post_all(sim: &mut Simulator, a: &End, msgs: &[Vec<u8>]) {
    sim.with_node::<Hca, _>(a.node, |h, _, _| {
        for (i, m) in msgs.iter().enumerate() {
            let wr = SendWr {
                wr_id: i as u64,
                op: SendOp::Send,
                data: m.clone(),
                local: None,
                ud: None,
                signaled: true,
                solicited: false,
            };
            h.post_send(a.qpn, wr).unwrap();
        }
    });
}

pub(super) fn run_until_completions(sim: &mut Simulator, end: &End, n: usize) {
    let deadline = sim.now() + Duration::from_secs(60);
    let (node, cq) = (end.node, end.cq);
    let done = sim.run_while_not(deadline, |s| {
        s.node::<Hca>(node).map_or(0, |h| h.cq_len(cq)) >= n
    });
    assert!(done, "{n} completions by {deadline}");
}

/// Over the simulator: RC between two HCAs delivers messages of mixed sizes
/// exactly once and in order through a link with 10% drop, duplication, reordering and corruption
/// (the receiving HCA's CRC checks drop corrupted packets; IBA 1 §9.7 does the rest).
#[test]
fn rc_between_hcas_exactly_once_under_faults() {
    let n = 200;
    let (mut p, a, b) = setup(31, QpType::Rc, n as u64, true);
    let pool = Pool::new(1 << 16);
    let msgs: Vec<Vec<u8>> = (0..n)
        .map(|i| pool.message(i as u64, 1 + (i * 7919) % (16 << 10)))
        .collect();
    post_all(&mut p.sim, &a, &msgs);
    run_until_completions(&mut p.sim, &b, n);
    run_until_completions(&mut p.sim, &a, n);
    let got = p
        .sim
        .with_node::<Hca, _>(b.node, |h, _, _| h.poll_cq(b.cq, usize::MAX))
        .unwrap();
    assert_eq!(got.len(), n);
    for (i, c) in got.iter().enumerate() {
        assert_eq!(
            (c.wr_id, c.status, c.opcode),
            (i as u64, WcStatus::Success, WcOpcode::Recv)
        );
        assert!(c.data == msgs[i], "message {i}");
        assert_eq!((c.src_qp, c.slid), (a.qpn, 1));
    }
    let sent = p
        .sim
        .with_node::<Hca, _>(a.node, |h, _, _| h.poll_cq(a.cq, usize::MAX))
        .unwrap();
    assert!(sent
        .iter()
        .enumerate()
        .all(|(i, c)| c.wr_id == i as u64 && c.status == WcStatus::Success));
    p.sim.run_until_idle(1_000_000);
    assert_eq!(
        p.sim.with_node::<Hca, _>(b.node, |h, _, _| h.cq_len(b.cq)),
        Some(0),
        "no duplicates"
    );
    let cb = p.sim.node::<Hca>(b.node).unwrap().counters().clone();
    assert!(cb.drops(HcaDropReason::BadIcrc) + cb.drops(HcaDropReason::BadVcrc) > 0);
}

/// Over the simulator: UC loses only whole messages. Through a link that drops and corrupts,
/// every message arrives whole or not at all, at most once and in order; through one that also
/// duplicates and reorders (which an IB path does not, IBA 1 §9.5), still whole, but a duplicated
/// or late FIRST or ONLY is a PSN error the responder resynchronises at (IBA 1 §9.8.3), so a
/// message may arrive again or out of order.
#[test]
fn uc_between_hcas_loses_only_whole_messages() {
    uc_between_hcas(false);
    uc_between_hcas(true);
}

fn uc_between_hcas(dup_and_reorder: bool) {
    let n = 400;
    let (mut p, a, b) = setup(32, QpType::Uc, n as u64, dup_and_reorder);
    let pool = Pool::new(1 << 14);
    let size = |i: usize| 4 + (i * 7919) % 9000;
    let msgs: Vec<Vec<u8>> = (0..n).map(|i| pool.message(i as u64, size(i))).collect();
    post_all(&mut p.sim, &a, &msgs);
    run_until_completions(&mut p.sim, &a, n);
    let t = p.sim.now() + Duration::from_millis(10);
    p.sim.run_while_not(t, |_| false);
    let got = p
        .sim
        .with_node::<Hca, _>(b.node, |h, _, _| h.poll_cq(b.cq, usize::MAX))
        .unwrap();
    let mut last = None;
    let mut tags = std::collections::BTreeSet::new();
    for c in &got {
        assert_eq!(c.status, WcStatus::Success);
        let tag = u32::from_le_bytes(c.data[..4].try_into().unwrap()) as usize;
        assert!(c.data == msgs[tag], "message {tag} whole");
        if !dup_and_reorder {
            assert!(last < Some(tag), "at most once, in order");
        }
        last = Some(tag);
        tags.insert(tag);
    }
    assert!(!tags.is_empty() && tags.len() < n, "{} of {n}", tags.len());
}

/// A QP without a connection yet: receives posted in Init survive to RTR; Error flushes them.
#[test]
fn init_receives_and_flush_through_hca() {
    let mut p = pair(33);
    p.sim.run_until_idle(100);
    let a = create(&mut p.sim, p.a, QpType::Rc);
    p.sim.with_node::<Hca, _>(a.node, |h, _, _| {
        let init = ModifyQp::Init {
            port: 1,
            pkey_index: 0,
            qkey: QKey(0),
        };
        h.modify_qp(a.qpn, init).unwrap();
        h.post_recv(
            a.qpn,
            RecvWr {
                wr_id: 5,
                capacity: 8,
            },
        )
        .unwrap();
        h.modify_qp(a.qpn, ModifyQp::Error).unwrap();
    });
    p.sim.run_until_idle(100);
    let got = p
        .sim
        .with_node::<Hca, _>(a.node, |h, _, _| h.poll_cq(a.cq, 8))
        .unwrap();
    let st: Vec<_> = got.iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(st, vec![(5, WcStatus::WrFlushErr)]);
}
