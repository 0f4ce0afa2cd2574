//! UD verbs shortcuts on a subnet host: a QP in RTS with receives posted, a SEND, the receive
//! completions.

use crate::hw::hca::{CqId, ModifyQp, QpInit};
use crate::hw::verbs::{
    AddressHandle, Completion, GlobalRoute, QpType, Qpn, RecvWr, SendOp, SendWr, UdDest, WcOpcode,
};
use crate::node::host::Host;
use crate::node::subnet::Subnet;
use ipoib_wire::Gid;
use ipoib_wire::QKey;

/// A UD QP on host `i`'s port 1 in RTS with `qkey` and P_Key index `pkey_index`, 16 receives posted.
pub fn ud_qp(net: &mut Subnet, i: usize, qkey: QKey, pkey_index: u16) -> (Qpn, CqId) {
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
    qkey: QKey,
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
                local: None,
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
