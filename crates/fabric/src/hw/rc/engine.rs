//! [`RcEngine`]: the [`ConnectedQp`] behind the HCA's connected-QP hook
//! ([`crate::hw::hca::ConnectedEngine`]). It adds the part of the QP life cycle before the connection
//! exists: Reset and Init, where receives may already be posted (IBA 1 §10.3.1, §10.8.3); the
//! engine proper is built at RTR, when the connection attributes are known.
//!
//! Invariants: `qp` is `Some` from RTR until the next Reset; receives posted in Init are handed to
//! it in order; packets whose SLID is not the path's DLID are dropped and counted (IBA 1 §9.6.1.2).
//! Output depends on the inputs only, never on `now` alone (an RNR wait ends in `handle_timeout`,
//! the window opens on an ACK), as the HCA's hook requires of an engine it stops polling once
//! drained ([`crate::hw::hca::ConnectedEngine`]).

use super::{Config, ConnectedQp, Error};
use crate::hw::hca::{
    ConnectedEngine, EngineFactory, PacketSource, RdmaMemory, TransportPacket, VerbsError,
};
use crate::hw::verbs::{
    Completion, ConnectedAttr, QpState, QpType, Qpn, RecvWr, SendWr, WcOpcode, WcStatus,
};
use ipoib_proto::time::Instant;
use ipoib_wire::ib::{BthRepr, ExtHeaders};
use std::collections::VecDeque;

/// One RC/UC QP as the HCA hosts it.
#[derive(Debug)]
pub struct RcEngine {
    qp_type: QpType,
    qpn: Qpn,
    config: Config,
    state: QpState,
    qp: Option<ConnectedQp>,
    /// Receives posted in Init, before the engine exists.
    early_recvs: Vec<RecvWr>,
    /// Flush completions produced without an engine.
    flushed: VecDeque<Completion>,
}

/// The factory to install with [`crate::hw::hca::Hca::set_engine_factory`].
pub fn engine_factory() -> EngineFactory {
    engine_factory_with(Config::default())
}

/// [`engine_factory`] with engine limits of the caller's (a larger send window for a host whose
/// peers are a network away: `crate::node::remote`).
pub fn engine_factory_with(config: Config) -> EngineFactory {
    Box::new(move |qp_type, qpn| Box::new(RcEngine::new(qp_type, qpn, config)))
}

impl RcEngine {
    /// A QP in Reset.
    pub fn new(qp_type: QpType, qpn: Qpn, config: Config) -> RcEngine {
        RcEngine {
            qp_type,
            qpn,
            config,
            state: QpState::Reset,
            qp: None,
            early_recvs: Vec::new(),
            flushed: VecDeque::new(),
        }
    }

    /// The engine, from RTR on.
    pub fn connected(&self) -> Option<&ConnectedQp> {
        self.qp.as_ref()
    }

    fn map_err(&self, e: Error) -> VerbsError {
        match e {
            Error::InvalidState(state) => VerbsError::WrongState {
                qpn: self.qpn,
                state,
            },
            Error::UnsupportedOp => VerbsError::Unsupported("RDMA READ on UC (IBA 1 §9.8)"),
            Error::TooLong(len) => VerbsError::MessageTooLong {
                len,
                max: super::MAX_MESSAGE,
            },
            Error::QueueFull => VerbsError::InvalidArgument("work queue full"),
            Error::InvalidAttr(what) => VerbsError::InvalidArgument(what),
        }
    }

    fn flush_completion(&self, wr_id: u64, opcode: WcOpcode) -> Completion {
        Completion {
            wr_id,
            status: WcStatus::WrFlushErr,
            opcode,
            qpn: self.qpn,
            byte_len: 0,
            imm: None,
            src_qp: 0,
            slid: 0,
            sl: 0,
            dlid_path_bits: 0,
            pkey_index: 0,
            grh: None,
            data: Vec::new(),
        }
    }
}

impl ConnectedEngine for RcEngine {
    fn modify(
        &mut self,
        _now: Instant,
        to: QpState,
        attr: Option<&ConnectedAttr>,
    ) -> Result<(), VerbsError> {
        let from = self.state();
        match to {
            QpState::Reset => {
                self.qp = None;
                self.early_recvs.clear();
                self.flushed.clear();
            }
            QpState::Init => {}
            QpState::Rtr => {
                let a = attr.ok_or(VerbsError::InvalidArgument("RC/UC RTR needs ConnectedAttr"))?;
                let mut qp = ConnectedQp::with_config(self.qp_type, self.qpn, *a, self.config)
                    .map_err(|e| self.map_err(e))?;
                qp.state = QpState::Rtr;
                for r in std::mem::take(&mut self.early_recvs) {
                    qp.post_recv(r).map_err(|e| self.map_err(e))?;
                }
                self.qp = Some(qp);
            }
            QpState::Rts => {
                let Some(qp) = self.qp.as_mut() else {
                    return Err(VerbsError::InvalidTransition { from, to });
                };
                if let Err(e) = qp.ready_to_send(attr) {
                    return Err(self.map_err(e));
                }
            }
            QpState::Err => match self.qp.as_mut() {
                Some(qp) => qp.set_error(),
                None => {
                    let recvs: Vec<RecvWr> = self.early_recvs.drain(..).collect();
                    for r in recvs {
                        let c = self.flush_completion(r.wr_id, WcOpcode::Recv);
                        self.flushed.push_back(c);
                    }
                }
            },
            QpState::Sqd | QpState::Sqe => {
                return Err(VerbsError::Unsupported("SQD/SQE on RC/UC"));
            }
        }
        self.state = to;
        Ok(())
    }

    fn state(&self) -> QpState {
        match &self.qp {
            Some(qp) => qp.state(),
            None => self.state,
        }
    }

    fn post_send(&mut self, now: Instant, wr: SendWr) -> Result<(), VerbsError> {
        match self.qp.as_mut() {
            Some(qp) => qp.post_send(now, wr).map_err(|e| self.map_err(e)),
            None if self.state == QpState::Err => {
                let c = self.flush_completion(wr.wr_id, WcOpcode::Send);
                self.flushed.push_back(c);
                Ok(())
            }
            None => Err(VerbsError::WrongState {
                qpn: self.qpn,
                state: self.state,
            }),
        }
    }

    fn post_recv(&mut self, wr: RecvWr) -> Result<(), VerbsError> {
        match self.qp.as_mut() {
            Some(qp) => qp.post_recv(wr).map_err(|e| self.map_err(e)),
            None => match self.state {
                QpState::Init => {
                    self.early_recvs.push(wr);
                    Ok(())
                }
                QpState::Err => {
                    let c = self.flush_completion(wr.wr_id, WcOpcode::Recv);
                    self.flushed.push_back(c);
                    Ok(())
                }
                state => Err(VerbsError::WrongState {
                    qpn: self.qpn,
                    state,
                }),
            },
        }
    }

    fn handle_packet(
        &mut self,
        now: Instant,
        from: PacketSource,
        pkt: TransportPacket,
        mem: &mut dyn RdmaMemory,
    ) {
        let Some(qp) = self.qp.as_mut() else {
            return;
        };
        if from.slid != qp.attr().path.dlid {
            qp.count_bad_source();
            return;
        }
        qp.handle_packet(now, &pkt.bth, &pkt.ext, &pkt.payload, mem);
    }

    fn handle_packet_parts(
        &mut self,
        now: Instant,
        from: PacketSource,
        bth: BthRepr,
        ext: ExtHeaders,
        payload: &[u8],
        mem: &mut dyn RdmaMemory,
    ) {
        let Some(qp) = self.qp.as_mut() else {
            return;
        };
        if from.slid != qp.attr().path.dlid {
            qp.count_bad_source();
            return;
        }
        qp.handle_packet(now, &bth, &ext, payload, mem);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<TransportPacket> {
        self.poll_transmit_from(now, &Vec::<crate::hw::rc::MemoryRegion>::new())
    }

    fn poll_transmit_from(
        &mut self,
        now: Instant,
        mem: &dyn RdmaMemory,
    ) -> Option<TransportPacket> {
        let o = self.qp.as_mut()?.poll_transmit_from(now, mem)?;
        Some(TransportPacket {
            bth: o.bth,
            ext: o.ext,
            payload: o.payload,
        })
    }

    fn transmit_with(
        &mut self,
        now: Instant,
        mem: &dyn RdmaMemory,
        frame: &mut dyn FnMut(&BthRepr, &ExtHeaders, &[u8]),
    ) -> bool {
        match self.qp.as_mut() {
            Some(qp) => qp.transmit_with(now, mem, frame),
            None => false,
        }
    }

    fn has_work(&self) -> bool {
        !self.flushed.is_empty() || self.qp.as_ref().is_some_and(ConnectedQp::has_work)
    }

    fn poll_completion(&mut self) -> Option<Completion> {
        if let Some(c) = self.flushed.pop_front() {
            return Some(c);
        }
        self.qp.as_mut()?.poll_completion()
    }

    fn take_spent(&mut self) -> Option<Vec<u8>> {
        self.qp.as_mut()?.take_spent()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.qp.as_ref()?.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        if let Some(qp) = self.qp.as_mut() {
            qp.handle_timeout(now);
        }
    }
}
