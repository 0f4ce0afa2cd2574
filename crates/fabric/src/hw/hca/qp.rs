//! Queue pairs: creation parameters, the modify_qp request, the state diagram, and the per-QP
//! record the HCA keeps (receive queue, P_Key index, Q_Key, PSN, transport kind).
//!
//! Invariants: a QP's handle never changes; QP0 and QP1 of port `p` have the handles
//! [`special_qpn`]`(p, 0)` and `(p, 1)`, every other QP's handle is its 24-bit wire QPN. Receive
//! WRs are consumed strictly in posting order (IBA 1 §10.8.3).

use super::connected::ConnectedEngine;
use super::error::{CqId, VerbsError};
use crate::hw::verbs::{ConnectedAttr, QpState, QpType, Qpn, RecvWr};
use ipoib_wire::QKey;
use std::collections::VecDeque;

/// Handle of QP0 (`n` = 0) or QP1 (`n` = 1) of `port`: the port number above the 24 QPN bits, so
/// that the special QPs of different ports are told apart. The wire QPN is `handle & 0xFFFFFF`.
pub const fn special_qpn(port: u8, n: u32) -> Qpn {
    ((port as u32) << 24) | (n & 1)
}

/// The 24-bit QPN a handle carries on the wire.
pub const fn wire_qpn(handle: Qpn) -> Qpn {
    handle & 0x00ff_ffff
}

/// What `create_qp` needs (ibv_qp_init_attr, reduced).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpInit {
    /// Transport service.
    pub qp_type: QpType,
    /// The port the QP is bound to (may be changed by the INIT transition).
    pub port: u8,
    /// CQ of send completions.
    pub send_cq: CqId,
    /// CQ of receive completions.
    pub recv_cq: CqId,
    /// A privileged consumer may send with a controlled Q_Key (high bit set, IBA 1 §10.2.4).
    pub privileged: bool,
    /// Every send completes with a completion, not only those asking for one.
    pub sq_sig_all: bool,
}

/// A modify_qp request: the target state and the attributes that transition takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModifyQp {
    /// To Reset: the queues are emptied without completions.
    Reset,
    /// To Init: port, P_Key index and Q_Key (Q_Key ignored for RC/UC).
    Init {
        /// Port.
        port: u8,
        /// P_Key index.
        pkey_index: u16,
        /// Q_Key (UD).
        qkey: QKey,
    },
    /// To RTR; RC/UC need their connection attributes, UD takes `None`.
    Rtr(Option<ConnectedAttr>),
    /// To RTS; RC/UC may repeat their connection attributes, UD takes `None`.
    Rts(Option<ConnectedAttr>),
    /// To SQD.
    Sqd,
    /// To Error: everything outstanding completes with WrFlushErr.
    Error,
}

impl ModifyQp {
    /// The state this request moves to.
    pub fn target(&self) -> QpState {
        match self {
            ModifyQp::Reset => QpState::Reset,
            ModifyQp::Init { .. } => QpState::Init,
            ModifyQp::Rtr(_) => QpState::Rtr,
            ModifyQp::Rts(_) => QpState::Rts,
            ModifyQp::Sqd => QpState::Sqd,
            ModifyQp::Error => QpState::Err,
        }
    }
}

/// The QP state diagram (IBA 1 §10.3.1, Figure 124; ibv_modify_qp): any state to Reset or Error;
/// Reset→Init; Init→Init/RTR; RTR→RTS; RTS→RTS/SQD; SQD→SQD/RTS; SQE→RTS.
pub fn transition_allowed(from: QpState, to: QpState) -> bool {
    use QpState::*;
    matches!(
        (from, to),
        (_, Reset)
            | (_, Err)
            | (Reset, Init)
            | (Init, Init)
            | (Init, Rtr)
            | (Rtr, Rts)
            | (Rts, Rts)
            | (Rts, Sqd)
            | (Sqd, Sqd)
            | (Sqd, Rts)
            | (Sqe, Rts)
    )
}

/// True in the states where a QP accepts incoming packets (IBA 1 §10.3.1: from RTR on).
pub fn can_receive(s: QpState) -> bool {
    matches!(s, QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe)
}

/// Transport machinery of a QP.
pub(crate) enum QpKind {
    /// UD (including QP0/QP1): handled by the HCA itself.
    Ud,
    /// RC or UC: the connected-QP engine does the transport, the HCA the link/network layers.
    Connected(Box<dyn ConnectedEngine>),
}

/// One QP.
pub(crate) struct Qp {
    pub handle: Qpn,
    pub qp_type: QpType,
    /// `Some(0)` / `Some(1)` for QP0 / QP1.
    pub special: Option<u8>,
    pub port: u8,
    pub state: QpState,
    pub send_cq: CqId,
    pub recv_cq: CqId,
    pub privileged: bool,
    pub sq_sig_all: bool,
    pub pkey_index: u16,
    pub qkey: QKey,
    /// Next PSN of a UD send (IBA 1 §9.8.3.1: any value, incremented per packet).
    pub next_psn: u32,
    pub recv: VecDeque<RecvWr>,
    pub kind: QpKind,
    /// RC/UC: the path and peer, from RTR/RTS.
    pub connected: Option<ConnectedAttr>,
}

impl Qp {
    pub fn new(handle: Qpn, init: &QpInit, special: Option<u8>, kind: QpKind) -> Qp {
        Qp {
            handle,
            qp_type: init.qp_type,
            special,
            port: init.port,
            state: QpState::Reset,
            send_cq: init.send_cq,
            recv_cq: init.recv_cq,
            privileged: init.privileged,
            sq_sig_all: init.sq_sig_all,
            pkey_index: 0,
            qkey: QKey(0),
            next_psn: 0,
            recv: VecDeque::new(),
            kind,
            connected: None,
        }
    }

    /// Checks that a receive may be posted (IBA 1 §10.8.3: not in Reset).
    pub fn check_post_recv(&self) -> Result<(), VerbsError> {
        if self.state == QpState::Reset {
            return Err(VerbsError::WrongState {
                qpn: self.handle,
                state: self.state,
            });
        }
        Ok(())
    }
}

/// The HCA's QPs by handle: a `Vec` kept sorted by handle, searched by halving. An HCA holds a
/// few QPs (QP0, QP1 and IPoIB's UD QP on most hosts), and a `BTreeMap` leaf has room for
/// eleven: 1.6 KiB a host of which two thirds stayed empty (docs/benchmarks/subnet-rounds.md,
/// "What a host holds"). Iteration is in handle order, as the map's was.
#[derive(Default)]
pub(crate) struct QpTable(Vec<(Qpn, Qp)>);

impl QpTable {
    pub(crate) fn with_capacity(n: usize) -> QpTable {
        QpTable(Vec::with_capacity(n))
    }

    fn find(&self, qpn: Qpn) -> Result<usize, usize> {
        self.0.binary_search_by_key(&qpn, |(q, _)| *q)
    }

    pub(crate) fn get(&self, qpn: &Qpn) -> Option<&Qp> {
        self.find(*qpn).ok().map(|i| &self.0[i].1)
    }

    pub(crate) fn get_mut(&mut self, qpn: &Qpn) -> Option<&mut Qp> {
        self.find(*qpn).ok().map(|i| &mut self.0[i].1)
    }

    pub(crate) fn contains_key(&self, qpn: &Qpn) -> bool {
        self.find(*qpn).is_ok()
    }

    /// Puts `qp` under `qpn`, replacing (and returning) one already there.
    pub(crate) fn insert(&mut self, qpn: Qpn, qp: Qp) -> Option<Qp> {
        match self.find(qpn) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, qp)),
            Err(i) => {
                self.0.insert(i, (qpn, qp));
                None
            }
        }
    }

    pub(crate) fn remove(&mut self, qpn: &Qpn) -> Option<Qp> {
        self.find(*qpn).ok().map(|i| self.0.remove(i).1)
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &Qp> {
        self.0.iter().map(|(_, q)| q)
    }
}

impl std::ops::Index<&Qpn> for QpTable {
    type Output = Qp;

    fn index(&self, qpn: &Qpn) -> &Qp {
        self.get(qpn).expect("no QP with this handle")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::verbs::QpType;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn qp(qpn: Qpn) -> Qp {
        let init = QpInit {
            qp_type: QpType::Ud,
            port: 1,
            send_cq: CqId(0),
            recv_cq: CqId(0),
            privileged: false,
            sq_sig_all: false,
        };
        Qp::new(qpn, &init, None, QpKind::Ud)
    }

    proptest! {
        /// The table answers as the `BTreeMap` it replaced: the same QPs found, replaced and
        /// removed, and walked in handle order.
        #[test]
        fn qp_table_answers_as_a_btree_map(ops in prop::collection::vec((0u8..3, 0u32..12), 0..60)) {
            let (mut t, mut m) = (QpTable::default(), BTreeMap::new());
            for (op, k) in ops {
                let qpn = if k >= 10 { special_qpn(1, k - 10) } else { k };
                match op {
                    0 => prop_assert_eq!(
                        t.insert(qpn, qp(qpn)).map(|q| q.handle),
                        m.insert(qpn, qp(qpn)).map(|q| q.handle)
                    ),
                    1 => prop_assert_eq!(
                        t.remove(&qpn).map(|q| q.handle),
                        m.remove(&qpn).map(|q| q.handle)
                    ),
                    _ => {
                        prop_assert_eq!(t.contains_key(&qpn), m.contains_key(&qpn));
                        prop_assert_eq!(t.get(&qpn).map(|q| q.handle), m.get(&qpn).map(|q| q.handle));
                        prop_assert_eq!(t.get_mut(&qpn).is_some(), m.get_mut(&qpn).is_some());
                    }
                }
                let walked: Vec<Qpn> = t.values().map(|q| q.handle).collect();
                prop_assert_eq!(walked, m.keys().copied().collect::<Vec<_>>());
            }
        }
    }
}
