//! Helpers shared by the subnet scenario tests: a guard that prints the seed of a failing test,
//! and verbs shortcuts for a UD QP on a subnet host.

#![allow(dead_code)]

use ipoib_fabric::hw::hca::{CqId, ModifyQp, QpInit};
use ipoib_fabric::hw::verbs::{
    AddressHandle, Completion, GlobalRoute, QpType, Qpn, RecvWr, SendOp, SendWr, UdDest, WcOpcode,
};
use ipoib_fabric::node::host::Host;
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::Instant;
use ipoib_wire::Gid;
use std::time::Duration;

/// The seed a scenario runs with: `default`, or the value of `IPOIB_SEED` when set, so that a seed a
/// failing run printed can be replayed (`IPOIB_SEED=42 cargo test -p ipoib-fabric --test subnet_mcast`).
pub fn seed(default: u64) -> u64 {
    std::env::var("IPOIB_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Prints the seed when the test panics (replay it with `IPOIB_SEED`, see [`seed`]).
pub struct SeedGuard(pub u64);

impl Drop for SeedGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "failing seed: {} (replay with IPOIB_SEED={})",
                self.0, self.0
            );
        }
    }
}

/// Simulated time `secs` seconds after zero.
pub fn at(secs: u64) -> Instant {
    Instant::ZERO + Duration::from_secs(secs)
}

/// A UD QP on host `i`'s port 1 in RTS with `qkey` and P_Key index `pkey_index`, 16 receives posted.
pub fn ud_qp(net: &mut Subnet, i: usize, qkey: u32, pkey_index: u16) -> (Qpn, CqId) {
    let node = net.host(i).node;
    net.sim_mut()
        .with_node::<Host, _>(node, |h, _, _| {
            let hca = h.hca_mut();
            let cq = hca.create_cq();
            let qpn = hca
                .create_qp(QpInit {
                    qp_type: QpType::Ud,
                    port: 1,
                    send_cq: cq,
                    recv_cq: cq,
                    privileged: false,
                    sq_sig_all: false,
                })
                .expect("create UD QP");
            for m in [
                ModifyQp::Init {
                    port: 1,
                    pkey_index,
                    qkey,
                },
                ModifyQp::Rtr(None),
                ModifyQp::Rts(None),
            ] {
                hca.modify_qp(qpn, m).expect("modify UD QP");
            }
            for w in 0..16 {
                hca.post_recv(
                    qpn,
                    RecvWr {
                        wr_id: w,
                        capacity: 4096 + 40,
                    },
                )
                .expect("post recv");
            }
            (qpn, cq)
        })
        .expect("host")
}

/// Posts one UD SEND of `data` from host `i`'s `qpn` to `dlid`/`dqpn` with `qkey` (a GRH to
/// `dgid` when given, as multicast needs).
#[allow(clippy::too_many_arguments)]
pub fn send_ud(
    net: &mut Subnet,
    i: usize,
    qpn: Qpn,
    dlid: u16,
    dqpn: Qpn,
    qkey: u32,
    dgid: Option<Gid>,
    data: &[u8],
) {
    let node = net.host(i).node;
    net.sim_mut()
        .with_node::<Host, _>(node, |h, _, _| {
            let wr = SendWr {
                wr_id: 1,
                op: SendOp::Send,
                data: data.to_vec(),
                ud: Some(UdDest {
                    ah: AddressHandle {
                        dlid,
                        sl: 0,
                        src_path_bits: 0,
                        grh: dgid.map(|g| GlobalRoute {
                            dgid: g,
                            sgid_index: 0,
                            flow_label: 0,
                            hop_limit: 1,
                            tclass: 0,
                        }),
                        port: 1,
                    },
                    remote_qpn: dqpn,
                    remote_qkey: qkey,
                    pkey_index: None,
                }),
                signaled: false,
                solicited: false,
            };
            h.hca_mut().post_send(qpn, wr).expect("post send");
        })
        .expect("host");
}

/// Receive completions waiting on host `i`'s `cq`.
pub fn received(net: &mut Subnet, i: usize, cq: CqId) -> Vec<Completion> {
    let node = net.host(i).node;
    net.sim_mut()
        .with_node::<Host, _>(node, |h, _, _| h.hca_mut().poll_cq(cq, usize::MAX))
        .expect("host")
        .into_iter()
        .filter(|c| c.opcode == WcOpcode::Recv)
        .collect()
}
