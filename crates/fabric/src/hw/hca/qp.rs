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
