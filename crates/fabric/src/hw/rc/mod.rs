//! The transport engine of one reliable-connection (RC) or unreliable-connection (UC) queue pair,
//! as a state machine with no IO and no clock (quinn-proto's shape): work requests go in through
//! [`ConnectedQp::post_send`] / [`ConnectedQp::post_recv`], packets through
//! [`ConnectedQp::handle_packet`]; packets come out of [`ConnectedQp::poll_transmit`], completions
//! out of [`ConnectedQp::poll_completion`], and the one timer through
//! [`ConnectedQp::poll_timeout`] / [`ConnectedQp::handle_timeout`].
//!
//! The HCA hosting the engine owns everything below the BTH: it builds LRH/GRH, fills the P_Key,
//! PadCnt, ICRC and VCRC of outgoing packets, and checks CRCs, LIDs and the P_Key of incoming ones
//! before calling [`ConnectedQp::handle_packet`]. The engine checks the destination QP, the QP
//! state, the transport of the opcode, the PSN and the opcode sequence.
//!
//! What it implements (IBA 1 ch. 9):
//! - §9.5 transaction ordering: requests are executed and acknowledged in PSN order; completions
//!   are returned in work-request order.
//! - §9.7 reliable service (RC): PSNs, cumulative and coalesced ACKs with the MSN in the AETH,
//!   retransmission on the local ACK timeout bounded by `retry_count`, RNR NAK with the RNR timer
//!   table bounded by `rnr_retry` (7 = infinite), duplicate detection and re-ACK, PSN sequence
//!   error NAK answered by go-back-N from the NAKed PSN, RDMA WRITE and RDMA READ (with re-execution
//!   of duplicate READ requests within the READ they repeat, and implied NAKs at the
//!   requester). Atomics are answered with NAK invalid request.
//! - §9.7.5.2.5, §10.6.3.1 memory: RDMA WRITE and READ requests reach only what the caller's
//!   [`RdmaMemory`] grants (the HCA's registered regions: R_Key, range, remote write or read), else
//!   NAK remote access error, which the requester completes with `RemAccessErr`; RDMA READ
//!   response data lands in the local region the work request names ([`crate::hw::verbs::LocalBuf`],
//!   local write), else the READ completes with `LocProtErr`. Without a `LocalBuf` the data comes
//!   back in the completion.
//! - §9.8 unreliable connection (UC): no ACKs; a lost packet loses its whole message: the
//!   responder, on a PSN other than the expected one (later or earlier, §9.8.3), drops the
//!   partial message and resynchronises at the next FIRST/ONLY, at that packet's PSN.
//! - §10.3.1 error state: on retry exhaustion the failing WR completes with `RetryExcErr` or
//!   `RnrRetryExcErr` and every other outstanding WR (send and receive) with `WrFlushErr`.
//!
//! Invariants:
//! - An RC requester never has more than `Config::max_outstanding` PSNs (and never 2^23 or more)
//!   between its oldest unacknowledged PSN and its next new PSN.
//! - A receive completion carries a whole message, delivered once, in order (RC), or not at all (UC).
//! - Bad input never panics: it is dropped and counted in [`Counters`], or NAKed as IBA 1 §9.7.5
//!   requires.

mod engine;
mod psn;
mod requester;
mod responder;
#[cfg(test)]
mod tests;

pub use engine::{engine_factory, engine_factory_with, RcEngine};
pub use psn::{add as psn_add, diff as psn_diff, PSN_MASK};

use crate::hw::hca::RdmaMemory;
use crate::hw::verbs::{
    Completion, ConnectedAttr, QpState, QpType, Qpn, RecvWr, SendWr, WcOpcode, WcStatus,
};
use ipoib_proto::time::Instant;
use ipoib_wire::ib::{BthRepr, ExtHeaders, Operation, Transport};
use requester::Requester;
use responder::Responder;
use std::collections::VecDeque;

/// Largest message (IBA 1 §9.7.2: messages up to 2^31 bytes).
pub const MAX_MESSAGE: usize = 1 << 31;

/// Why a command was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The QP is not in a state that allows the command.
    #[error("queue pair in state {0:?}")]
    InvalidState(QpState),
    /// The operation does not exist on this transport (RDMA READ on UC).
    #[error("operation not supported on this transport")]
    UnsupportedOp,
    /// The message is longer than 2^31 bytes.
    #[error("message of {0} bytes exceeds 2^31")]
    TooLong(usize),
    /// The work queue is full.
    #[error("work queue full")]
    QueueFull,
    /// The attributes are invalid (the path MTU code).
    #[error("invalid attribute: {0}")]
    InvalidAttr(&'static str),
}

/// A packet to send: the transport headers and payload. The HCA fills the BTH P_Key and PadCnt and
/// wraps it in LRH (and GRH when the path has one), ICRC and VCRC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// Base transport header (P_Key zero: the HCA fills it).
    pub bth: BthRepr,
    /// Extended transport headers.
    pub ext: ExtHeaders,
    /// Payload, at most one path MTU.
    pub payload: Vec<u8>,
}

/// A memory region for the engine on its own (its tests), where no HCA lends its registered
/// regions: a list of these is an [`RdmaMemory`]. Its one key serves as R_Key and L_Key; local
/// write is always granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryRegion {
    /// Virtual address of `bytes[0]`.
    pub addr: u64,
    /// Remote key (and local key).
    pub rkey: u32,
    /// The memory.
    pub bytes: Vec<u8>,
    /// Remote writes allowed (IBV_ACCESS_REMOTE_WRITE).
    pub remote_write: bool,
    /// Remote reads allowed (IBV_ACCESS_REMOTE_READ).
    pub remote_read: bool,
}

impl MemoryRegion {
    /// A region open to remote reads and writes.
    pub fn new(addr: u64, rkey: u32, bytes: Vec<u8>) -> MemoryRegion {
        MemoryRegion {
            addr,
            rkey,
            bytes,
            remote_write: true,
            remote_read: true,
        }
    }

    /// The byte range `[va, va + len)` of the region, when `rkey` matches and the range lies inside.
    fn range(&self, rkey: u32, va: u64, len: u64) -> Option<core::ops::Range<usize>> {
        if rkey != self.rkey || va < self.addr {
            return None;
        }
        let start = usize::try_from(va - self.addr).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        (end <= self.bytes.len()).then_some(start..end)
    }
}

impl RdmaMemory for Vec<MemoryRegion> {
    fn remote_write(&mut self, rkey: u32, va: u64, len: u64) -> Option<&mut [u8]> {
        self.iter_mut()
            .filter(|m| m.remote_write)
            .find_map(|m| m.range(rkey, va, len).and_then(|r| m.bytes.get_mut(r)))
    }

    fn remote_read(&self, rkey: u32, va: u64, len: u64) -> Option<&[u8]> {
        self.iter()
            .filter(|m| m.remote_read)
            .find_map(|m| m.range(rkey, va, len).and_then(|r| m.bytes.get(r)))
    }

    fn local_write(&mut self, lkey: u32, addr: u64, len: u64) -> Option<&mut [u8]> {
        self.iter_mut()
            .find_map(|m| m.range(lkey, addr, len).and_then(|r| m.bytes.get_mut(r)))
    }

    fn local_read(&self, lkey: u32, addr: u64, len: u64) -> Option<&[u8]> {
        self.iter()
            .find_map(|m| m.range(lkey, addr, len).and_then(|r| m.bytes.get(r)))
    }
}

/// Engine limits that are not connection attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Most PSNs an RC requester keeps unacknowledged (a real HCA's send window); below 2^23.
    pub max_outstanding: u32,
    /// Most send work requests queued and not completed.
    pub max_send_wr: usize,
    /// Most receive work requests posted and not consumed.
    pub max_recv_wr: usize,
    /// Every successful send completes (ibv `sq_sig_all`); otherwise only `signaled` ones do.
    pub sq_sig_all: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_outstanding: 128,
            max_send_wr: 1 << 16,
            max_recv_wr: 1 << 16,
            sq_sig_all: true,
        }
    }
}

/// What happened on the QP, for tests and diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Packets handed out by `poll_transmit`.
    pub packets_sent: u64,
    /// Packets accepted by `handle_packet` (before PSN checks).
    pub packets_received: u64,
    /// Request packets sent again (go-back-N after a timeout, NAK or RNR NAK).
    pub retransmissions: u64,
    /// Local ACK timeouts that led to a retry.
    pub timeouts: u64,
    /// Duplicate requests seen by the responder (re-ACKed or re-executed).
    pub duplicates: u64,
    /// Duplicate or stale responses ignored by the requester.
    pub stale_responses: u64,
    /// PSN sequence error NAKs sent.
    pub seq_naks_sent: u64,
    /// PSN sequence error NAKs received (and acted on).
    pub seq_naks_received: u64,
    /// Implied NAKs: a response beyond an unfinished RDMA READ (IBA 1 §9.7.5.1.6).
    pub implied_naks: u64,
    /// RNR NAKs sent.
    pub rnr_naks_sent: u64,
    /// RNR NAKs received.
    pub rnr_naks_received: u64,
    /// Other NAKs (invalid request, remote access, remote operational) sent.
    pub fatal_naks_sent: u64,
    /// Other NAKs received.
    pub fatal_naks_received: u64,
    /// UC: messages dropped because a packet was lost or no receive was posted.
    pub messages_dropped: u64,
    /// Dropped: source LID is not the connection's peer (counted by the host, see
    /// [`ConnectedQp::count_bad_source`]).
    pub drop_source: u64,
    /// Dropped: destination QP is not this one.
    pub drop_wrong_qp: u64,
    /// Dropped: QP state does not accept packets.
    pub drop_state: u64,
    /// Dropped: opcode of another transport, undefined, or out of sequence (UC).
    pub drop_opcode: u64,
    /// Dropped: a required extended header is missing or a response is malformed.
    pub drop_malformed: u64,
    /// Dropped: a duplicate RDMA READ request that repeats no READ among the last
    /// `max_dest_rd_atomic` executed, or asks for another R_Key, bytes outside that READ or more
    /// responses than it has from its PSN on (IBA 1 §9.7.5.2.3).
    pub duplicate_reads_refused: u64,
}

/// Buffers of completed sends a QP keeps for [`ConnectedQp::take_spent`], at most.
pub const SPENT_KEPT: usize = 16;

/// One RC or UC queue pair's transport engine.
#[derive(Debug)]
pub struct ConnectedQp {
    qp_type: QpType,
    qpn: Qpn,
    attr: ConnectedAttr,
    config: Config,
    state: QpState,
    mtu: usize,
    req: Requester,
    resp: Responder,
    completions: VecDeque<Completion>,
    /// Buffers of SENDs completed, for the HCA to reuse ([`ConnectedQp::take_spent`]).
    spent: Vec<Vec<u8>>,
    counters: Counters,
}

impl ConnectedQp {
    /// A QP in RTS with `attr` (modify_qp to RTR then RTS in one step).
    pub fn new(qp_type: QpType, qpn: Qpn, attr: ConnectedAttr) -> Result<ConnectedQp, Error> {
        Self::with_config(qp_type, qpn, attr, Config::default())
    }

    /// As [`ConnectedQp::new`] with engine limits.
    pub fn with_config(
        qp_type: QpType,
        qpn: Qpn,
        attr: ConnectedAttr,
        config: Config,
    ) -> Result<ConnectedQp, Error> {
        if qp_type == QpType::Ud {
            return Err(Error::UnsupportedOp);
        }
        let mtu = attr
            .path_mtu
            .bytes()
            .ok_or(Error::InvalidAttr("path_mtu"))? as usize;
        let mut config = config;
        config.max_outstanding = config.max_outstanding.clamp(1, psn::PSN_HALF - 1);
        Ok(ConnectedQp {
            qp_type,
            qpn: qpn & PSN_MASK,
            attr,
            config,
            state: QpState::Rts,
            mtu,
            req: Requester::new(&attr),
            resp: Responder::new(&attr),
            completions: VecDeque::new(),
            spent: Vec::new(),
            counters: Counters::default(),
        })
    }

    /// A QP in RTR: it receives but does not send until [`ConnectedQp::ready_to_send`].
    pub fn new_rtr(qp_type: QpType, qpn: Qpn, attr: ConnectedAttr) -> Result<ConnectedQp, Error> {
        let mut qp = Self::new(qp_type, qpn, attr)?;
        qp.state = QpState::Rtr;
        Ok(qp)
    }

    /// RTR -> RTS (IBA 1 §10.3.1), optionally with the send-side attributes of the RTS
    /// transition (`sq_psn`, `timeout`, `retry_count`, `rnr_retry`, `max_rd_atomic`). RTS -> RTS
    /// keeps the send queue and takes no new attributes.
    pub fn ready_to_send(&mut self, attr: Option<&ConnectedAttr>) -> Result<(), Error> {
        match self.state {
            QpState::Rtr => {
                if let Some(a) = attr {
                    self.attr.sq_psn = a.sq_psn;
                    self.attr.timeout = a.timeout;
                    self.attr.retry_count = a.retry_count;
                    self.attr.rnr_retry = a.rnr_retry;
                    self.attr.max_rd_atomic = a.max_rd_atomic;
                    // Nothing can have been posted in RTR, so the requester starts afresh.
                    self.req = Requester::new(&self.attr);
                }
                self.state = QpState::Rts;
                Ok(())
            }
            QpState::Rts => Ok(()),
            s => Err(Error::InvalidState(s)),
        }
    }

    /// Counts a packet the host dropped because its source is not this connection's peer
    /// (IBA 1 §9.6.1.2: SLID must be the path's DLID).
    pub fn count_bad_source(&mut self) {
        self.counters.drop_source += 1;
    }

    /// Moves the QP to the error state: every outstanding work request completes with
    /// `WrFlushErr` (IBA 1 §10.3.1). Nothing more is sent or accepted.
    pub fn set_error(&mut self) {
        self.resp.clear_output();
        self.enter_error(None);
    }

    /// The QP state.
    pub fn state(&self) -> QpState {
        self.state
    }
    /// This QP's number.
    pub fn qpn(&self) -> Qpn {
        self.qpn
    }
    /// RC or UC.
    pub fn qp_type(&self) -> QpType {
        self.qp_type
    }
    /// The connection attributes.
    pub fn attr(&self) -> &ConnectedAttr {
        &self.attr
    }
    /// What happened so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
    /// The next PSN a new request will take.
    pub fn next_send_psn(&self) -> u32 {
        self.req.next_psn
    }
    /// The PSN the responder expects next.
    pub fn expected_psn(&self) -> u32 {
        self.resp.epsn
    }
    /// PSNs sent and not yet acknowledged (RC requester window in use).
    pub fn outstanding_psns(&self) -> u32 {
        self.req.in_flight()
    }
    /// Send work requests not yet completed.
    pub fn send_queue_len(&self) -> usize {
        self.req.sq.len()
    }
    /// Receive work requests posted and not yet consumed.
    pub fn recv_queue_len(&self) -> usize {
        self.resp.rq.len()
    }

    /// Queues a send work request (IBA 1 §11.4.1.1). In the error state it is accepted and completes
    /// at once with `WrFlushErr`, as verbs does.
    pub fn post_send(&mut self, _now: Instant, wr: SendWr) -> Result<(), Error> {
        let len = match wr.op {
            crate::hw::verbs::SendOp::RdmaRead { len, .. } => len as usize,
            _ => wr.data_len(),
        };
        // IBA 1 §9.7.1.1: a READ of 2^23 or more response packets (2^31 bytes at a 256-byte MTU)
        // could never be outstanding, so it is refused here rather than left waiting forever.
        let read = matches!(wr.op, crate::hw::verbs::SendOp::RdmaRead { .. });
        if len > MAX_MESSAGE || (read && psn::packets(len, self.mtu) >= psn::PSN_HALF) {
            return Err(Error::TooLong(len));
        }
        if self.qp_type == QpType::Uc && matches!(wr.op, crate::hw::verbs::SendOp::RdmaRead { .. })
        {
            return Err(Error::UnsupportedOp);
        }
        match self.state {
            QpState::Rts => {}
            QpState::Err => {
                let c = self.send_completion(&wr, WcStatus::WrFlushErr, Vec::new());
                self.completions.push_back(c);
                return Ok(());
            }
            s => return Err(Error::InvalidState(s)),
        }
        if self.req.sq.len() >= self.config.max_send_wr {
            return Err(Error::QueueFull);
        }
        self.req.push(wr, len, self.mtu);
        Ok(())
    }

    /// Posts a receive buffer. Allowed from RTR on (and, as verbs, in the error state, where it
    /// completes at once with `WrFlushErr`).
    pub fn post_recv(&mut self, wr: RecvWr) -> Result<(), Error> {
        match self.state {
            QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe => {}
            QpState::Err => {
                let c = self.recv_completion(wr.wr_id, WcStatus::WrFlushErr, WcOpcode::Recv);
                self.completions.push_back(c);
                return Ok(());
            }
            s => return Err(Error::InvalidState(s)),
        }
        if self.resp.rq.len() >= self.config.max_recv_wr {
            return Err(Error::QueueFull);
        }
        self.resp.rq.push_back(wr);
        Ok(())
    }

    /// A packet for this QP arrived (CRCs, LIDs and P_Key already checked by the HCA). `mem` holds
    /// the regions RDMA WRITE and READ requests may reach and RDMA READ responses land in.
    pub fn handle_packet(
        &mut self,
        now: Instant,
        bth: &BthRepr,
        ext: &ExtHeaders,
        payload: &[u8],
        mem: &mut dyn RdmaMemory,
    ) {
        if bth.dest_qp != self.qpn {
            self.counters.drop_wrong_qp += 1;
            return;
        }
        if !matches!(
            self.state,
            QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
        ) {
            self.counters.drop_state += 1;
            return;
        }
        let want = match self.qp_type {
            QpType::Rc => Transport::Rc,
            _ => Transport::Uc,
        };
        if bth.opcode.transport() != want || !bth.opcode.is_defined() {
            self.counters.drop_opcode += 1;
            return;
        }
        self.counters.packets_received += 1;
        match bth.opcode.operation() {
            Operation::Acknowledge
            | Operation::AtomicAcknowledge
            | Operation::RdmaReadResponseFirst
            | Operation::RdmaReadResponseMiddle
            | Operation::RdmaReadResponseLast
            | Operation::RdmaReadResponseOnly => self.handle_response(now, bth, ext, payload, mem),
            _ => self.handle_request(now, bth, ext, payload, mem),
        }
    }

    /// The next packet to send: responses first (ACK, NAK, RDMA READ responses, in PSN order), then
    /// requests (new ones within the window, or retransmissions). With no memory to read, a
    /// request whose bytes lie in a registered region ([`SendWr::local`]) fails with a local
    /// protection error: [`ConnectedQp::poll_transmit_from`] is the call that lends it.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing> {
        self.poll_transmit_from(now, &Vec::<MemoryRegion>::new())
    }

    /// [`ConnectedQp::poll_transmit`], reading the bytes of SEND and RDMA WRITE requests that
    /// name a registered region ([`SendWr::local`]) from `mem` as each packet is built.
    pub fn poll_transmit_from(&mut self, now: Instant, mem: &dyn RdmaMemory) -> Option<Outgoing> {
        let mut out = None;
        self.transmit_with(now, mem, &mut |bth, ext, payload| {
            out = Some(Outgoing {
                bth: *bth,
                ext: *ext,
                payload: payload.to_vec(),
            })
        });
        out
    }

    /// [`ConnectedQp::poll_transmit_from`] without an [`Outgoing`]: `frame` gets the next
    /// packet's headers and its payload borrowed from the work request (or `mem`), so the caller
    /// copies it once, into the packet it builds. Returns false when there is nothing to send.
    pub fn transmit_with(
        &mut self,
        now: Instant,
        mem: &dyn RdmaMemory,
        frame: &mut dyn FnMut(&BthRepr, &ExtHeaders, &[u8]),
    ) -> bool {
        let sent = match self.resp.next_output(self.qpn_dest(), self.mtu) {
            Some(o) => {
                frame(&o.bth, &o.ext, &o.payload);
                true
            }
            None => self.next_request(now, mem, frame),
        };
        if sent {
            self.counters.packets_sent += 1;
        }
        sent
    }

    /// False only when there is nothing to give: no response or acknowledgement queued, no
    /// work request the requester has yet to send or send again (its window, state and RNR
    /// wait not considered: true then), no completion and no spent buffer. So when false,
    /// [`ConnectedQp::transmit_with`] returns false with no other effect.
    pub fn has_work(&self) -> bool {
        self.resp.has_output()
            || self.req.has_unsent()
            || !self.completions.is_empty()
            || !self.spent.is_empty()
    }

    /// The next completion.
    pub fn poll_completion(&mut self) -> Option<Completion> {
        self.completions.pop_front()
    }

    /// The buffer of a send work request that completed (its bytes are no longer needed: the
    /// message was acknowledged, or the request failed or was flushed), at most [`SPENT_KEPT`]
    /// of them, last first; the HCA hands them on for reuse, which changes no packet.
    pub fn take_spent(&mut self) -> Option<Vec<u8>> {
        self.spent.pop()
    }

    /// When [`ConnectedQp::handle_timeout`] is next needed.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.state == QpState::Err {
            return None;
        }
        self.req.poll_timeout()
    }

    /// Runs the timers that are due; harmless when called early or twice.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.state == QpState::Err {
            return;
        }
        self.requester_timeout(now);
    }

    fn qpn_dest(&self) -> Qpn {
        self.attr.dest_qpn & PSN_MASK
    }

    fn transport(&self) -> Transport {
        match self.qp_type {
            QpType::Rc => Transport::Rc,
            _ => Transport::Uc,
        }
    }

    /// Enters the error state: the failing send WR (if any) completes with `status`, then every
    /// other send and receive WR with `WrFlushErr` (IBA 1 §10.3.1, §11.6.2).
    fn enter_error(&mut self, failed: Option<WcStatus>) {
        if self.state == QpState::Err {
            return;
        }
        self.state = QpState::Err;
        let mut first = failed;
        let sq = std::mem::take(&mut self.req.sq);
        for w in sq {
            let status = first.take().unwrap_or(WcStatus::WrFlushErr);
            let c = self.send_completion(&w.wr, status, Vec::new());
            self.completions.push_back(c);
        }
        self.req.clear();
        for (wr_id, opcode) in self.resp.take_pending_recvs() {
            let c = self.recv_completion(wr_id, WcStatus::WrFlushErr, opcode);
            self.completions.push_back(c);
        }
    }

    fn send_completion(&self, wr: &SendWr, status: WcStatus, data: Vec<u8>) -> Completion {
        use crate::hw::verbs::SendOp;
        let (opcode, byte_len) = match wr.op {
            SendOp::Send | SendOp::SendWithImm(_) => (WcOpcode::Send, wr.data_len()),
            SendOp::RdmaWrite { .. } | SendOp::RdmaWriteWithImm { .. } => {
                (WcOpcode::RdmaWrite, wr.data_len())
            }
            SendOp::RdmaRead { len, .. } => (WcOpcode::RdmaRead, len as usize),
        };
        Completion {
            wr_id: wr.wr_id,
            status,
            opcode,
            qpn: self.qpn,
            byte_len: if status == WcStatus::Success {
                byte_len as u32
            } else {
                0
            },
            imm: None,
            src_qp: 0,
            slid: 0,
            sl: 0,
            dlid_path_bits: 0,
            pkey_index: self.attr.pkey_index,
            grh: None,
            data,
        }
    }

    fn recv_completion(&self, wr_id: u64, status: WcStatus, opcode: WcOpcode) -> Completion {
        Completion {
            wr_id,
            status,
            opcode,
            qpn: self.qpn,
            byte_len: 0,
            imm: None,
            src_qp: self.qpn_dest(),
            slid: self.attr.path.dlid,
            sl: self.attr.path.sl,
            dlid_path_bits: self.attr.path.src_path_bits,
            pkey_index: self.attr.pkey_index,
            grh: None,
            data: Vec::new(),
        }
    }
}
