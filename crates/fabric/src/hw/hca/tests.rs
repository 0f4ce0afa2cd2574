//! Scenario tests of the HCA: two HCAs cabled back to back, configured directly with
//! `Config::Port` (no switch, no SM).

mod checks;
mod connected;
mod keys;
mod mcast;
mod mr;
mod sched;
mod spares;
mod traps;
mod ud;

use super::*;
use crate::hw::link::{LinkId, LinkParams};
use crate::hw::mgmt::{PortConfig, PortState};
use crate::hw::rc::engine_factory;
use crate::hw::sim::{NodeId, PortRef, Simulator};
use crate::hw::verbs::{AddressHandle, GlobalRoute, UdDest};
use ipoib_wire::PKey;
use ipoib_wire::{Mtu, Rate};

pub(crate) const GUID_A: u64 = 0x0002_c903_0000_1000;
pub(crate) const GUID_B: u64 = 0x0002_c903_0000_2000;

pub(crate) fn port_config(lid: u16, pkeys: Vec<u16>) -> PortConfig {
    PortConfig {
        port: 1,
        lid,
        lmc: 0,
        sm_lid: 1,
        sm_sl: 0,
        subnet_prefix: Gid::DEFAULT_SUBNET_PREFIX,
        state: PortState::Active,
        mtu: Mtu::Mtu2048,
        rate: Rate::Gbps10,
        pkeys: pkeys.into_iter().map(PKey).collect(),
    }
}

pub(crate) fn configure<T: Device>(sim: &mut Simulator, node: NodeId, pc: PortConfig) {
    sim.with_node::<T, _>(node, |d, now, tx| d.configure(now, Config::Port(pc), tx));
}

pub(crate) struct Pair {
    pub sim: Simulator,
    pub a: NodeId,
    pub b: NodeId,
    pub link: LinkId,
}

/// Two single-port HCAs with the RC engine, LIDs 1 (a) and 2 (b), default partition, Active,
/// MTU 2048.
pub(crate) fn pair(seed: u64) -> Pair {
    let mut sim = Simulator::new(seed);
    let hca = |guid| Box::new(Hca::new(Guid(guid), 1).with_engine(engine_factory()));
    let a = sim.add_node(hca(GUID_A), 1);
    let b = sim.add_node(hca(GUID_B), 1);
    let link = sim.connect(
        PortRef { node: a, port: 1 },
        PortRef { node: b, port: 1 },
        LinkParams::default(),
    );
    configure::<Hca>(&mut sim, a, port_config(1, vec![0xffff]));
    configure::<Hca>(&mut sim, b, port_config(2, vec![0xffff]));
    Pair { sim, a, b, link }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct UdEnd {
    pub qpn: Qpn,
    pub cq: CqId,
}

/// A UD QP in RTS with `recvs` receive buffers of 4096 + 40 bytes.
pub(crate) fn ud_qp(
    sim: &mut Simulator,
    node: NodeId,
    qkey: QKey,
    pkey_index: u16,
    recvs: u64,
) -> UdEnd {
    sim.with_node::<Hca, _>(node, |h, _, _| make_ud_qp(h, qkey, pkey_index, recvs))
        .unwrap()
}

/// A UD QP in RTS on `h`'s port 1 with `recvs` receive buffers of 4096 + 40 bytes.
pub(crate) fn make_ud_qp(h: &mut Hca, qkey: QKey, pkey_index: u16, recvs: u64) -> UdEnd {
    {
        let cq = h.create_cq();
        let qpn = h
            .create_qp(QpInit {
                qp_type: QpType::Ud,
                port: 1,
                send_cq: cq,
                recv_cq: cq,
                privileged: false,
                sq_sig_all: false,
            })
            .unwrap();
        h.modify_qp(
            qpn,
            ModifyQp::Init {
                port: 1,
                pkey_index,
                qkey,
            },
        )
        .unwrap();
        h.modify_qp(qpn, ModifyQp::Rtr(None)).unwrap();
        h.modify_qp(qpn, ModifyQp::Rts(None)).unwrap();
        for i in 0..recvs {
            h.post_recv(
                qpn,
                RecvWr {
                    wr_id: 1000 + i,
                    capacity: 4096 + 40,
                },
            )
            .unwrap();
        }
        UdEnd { qpn, cq }
    }
}

pub(crate) fn dest(dlid: u16, qpn: Qpn, qkey: QKey) -> UdDest {
    UdDest {
        ah: AddressHandle {
            dlid,
            sl: 0,
            src_path_bits: 0,
            grh: None,
            port: 1,
        },
        remote_qpn: qpn,
        remote_qkey: qkey,
        pkey_index: None,
    }
}

pub(crate) fn with_grh(mut d: UdDest, dgid: Gid) -> UdDest {
    d.ah.grh = Some(GlobalRoute {
        dgid,
        sgid_index: 0,
        flow_label: 0,
        hop_limit: 1,
        tclass: 0,
    });
    d
}

pub(crate) fn wr(id: u64, data: &[u8], d: UdDest) -> SendWr {
    SendWr {
        wr_id: id,
        op: SendOp::Send,
        data: data.to_vec(),
        local: None,
        ud: Some(d),
        signaled: true,
        solicited: false,
    }
}

/// Posts `w` on `qpn` of `node` and runs the simulator until nothing is left to do.
pub(crate) fn send(sim: &mut Simulator, node: NodeId, qpn: Qpn, w: SendWr) {
    sim.with_node::<Hca, _>(node, |h, _, _| h.post_send(qpn, w))
        .unwrap()
        .unwrap();
    sim.run_until_idle(10_000);
}

/// Sends `data` (work request `id`) from QP `from` of host a to QP `to` of host b (LID 2) with
/// Q_Key `qkey`.
pub(crate) fn datagram_a_to_b(p: &mut Pair, from: Qpn, to: Qpn, id: u64, data: &[u8], qkey: QKey) {
    send(&mut p.sim, p.a, from, wr(id, data, dest(2, to, qkey)));
}

/// [`datagram_a_to_b`] with Q_Key 0x1.
pub(crate) fn send_a_to_b(p: &mut Pair, from: Qpn, to: Qpn, id: u64, data: &[u8]) {
    datagram_a_to_b(p, from, to, id, data, QKey(0x1));
}

pub(crate) fn poll(sim: &mut Simulator, node: NodeId, cq: CqId) -> Vec<Completion> {
    sim.with_node::<Hca, _>(node, |h, _, _| h.poll_cq(cq, usize::MAX))
        .unwrap()
}

pub(crate) fn counters(sim: &Simulator, node: NodeId) -> HcaCounters {
    sim.node::<Hca>(node).unwrap().counters().clone()
}

/// [`Hca::completions_waiting`] is every CQ's length summed, through completions pushed by
/// traffic (sends on one HCA, receives on the other), pushed to no CQ, and taken by
/// `poll_one` and `poll_cq`.
#[test]
fn completions_waiting_is_the_sum_over_cqs() {
    let sum = |h: &Hca| h.cqs.iter().map(VecDeque::len).sum::<usize>();
    let mut p = pair(7);
    let a = ud_qp(&mut p.sim, p.a, QKey(0x1111), 0, 0);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x1111), 0, 4);
    for i in 0..3 {
        send(
            &mut p.sim,
            p.a,
            a.qpn,
            wr(i, b"x", dest(2, b.qpn, QKey(0x1111))),
        );
    }
    for (node, cq) in [(p.a, a.cq), (p.b, b.cq)] {
        let h = p.sim.node_mut::<Hca>(node).unwrap();
        assert_eq!(h.completions_waiting(), 3);
        assert_eq!(h.completions_waiting(), sum(h));
        h.push_completion(
            CqId(999),
            super::ud::send_completion(9, WcStatus::Success, a.qpn, 0),
        );
        assert_eq!(h.completions_waiting(), 3);
        assert!(h.poll_one(cq).is_some());
        assert_eq!((h.completions_waiting(), sum(h)), (2, 2));
        assert_eq!(h.poll_cq(cq, 1).len(), 1);
        assert_eq!((h.completions_waiting(), sum(h)), (1, 1));
        assert_eq!(h.poll_cq(cq, usize::MAX).len(), 1);
        assert_eq!((h.completions_waiting(), sum(h)), (0, 0));
        assert!(h.poll_one(cq).is_none());
        assert_eq!(h.completions_waiting(), 0);
    }
}
