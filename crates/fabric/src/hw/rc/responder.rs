//! The responder half (IBA 1 §9.7.5.2 for RC, §9.8 for UC): checks the PSN against the expected PSN,
//! the opcode sequence and the payload lengths, consumes receive work requests, executes RDMA WRITE
//! and READ against the caller's memory regions, and queues its answers (ACK, NAK, RDMA READ
//! responses) in PSN order.
//!
//! Invariants: RC's `epsn` only moves forward and only over requests that were executed (UC's
//! follows the PSN of each packet, IBA 1 §9.8.3); `out` is in PSN order, so an ACK never overtakes
//! the READ responses before it (the requester would take it for an implied NAK); consecutive ACKs
//! coalesce into the latest one (IBA 1 §9.7.5.2.6); at most one sequence-error NAK is outstanding
//! per gap (`nak_sent`, IBA 1 §9.7.5.2.2); a duplicate RDMA READ is answered only within one of the
//! last `max_dest_rd_atomic` READs executed (`reads`, IBA 1 §9.7.5.2.3), whose records take no
//! allocation after the QP's creation.

use super::psn::{self, add, diff, prev};
use super::{ConnectedQp, Outgoing};
use crate::hw::hca::RdmaMemory;
use crate::hw::verbs::{ConnectedAttr, QpType, RecvWr, WcOpcode, WcStatus};
use ipoib_proto::time::Instant;
use ipoib_wire::ib::{
    AethRepr, BthRepr, ExtHeaders, NakCode, Opcode, Operation, Position, Syndrome, Transport,
};
use ipoib_wire::PKey;
use std::collections::VecDeque;

/// The most a SEND First reserves for its message (the posted receive's capacity, at most this:
/// a connected-mode IPoIB receive is 65,524 bytes).
const GATHER_RESERVE: usize = 1 << 20;

/// The message being received.
#[derive(Debug)]
enum InMsg {
    Idle,
    /// A SEND: the receive it consumed and the bytes so far.
    Send {
        wr: RecvWr,
        data: Vec<u8>,
    },
    /// An RDMA WRITE: where the next byte goes and how many remain.
    Write {
        rkey: u32,
        va: u64,
        remaining: u64,
        total: u32,
    },
}

/// An answer waiting to be sent.
#[derive(Debug)]
enum RespOut {
    Ack {
        psn: u32,
        syndrome: Syndrome,
        msn: u32,
    },
    Read {
        first_psn: u32,
        data: Vec<u8>,
        sent: u32,
        npkts: u32,
        msn: u32,
        /// A re-execution of a duplicate request.
        again: bool,
    },
}

/// An RDMA READ the responder executed, kept for its duplicates (IBA 1 §9.7.5.2.3).
#[derive(Debug, Clone, Copy)]
struct ReadDone {
    first_psn: u32,
    /// Its response packets (PSNs `first_psn..first_psn + npkts`).
    npkts: u32,
    rkey: u32,
    va: u64,
    len: u32,
}

impl ReadDone {
    /// True when a duplicate at PSN `p` asking for `len` bytes at `va` under `rkey` repeats this
    /// READ or its tail: its PSN among this READ's response PSNs, its responses no more than this
    /// READ has from there on, and its bytes, under the same R_Key, within this READ's (a
    /// zero-length one reads none).
    fn covers(&self, p: u32, rkey: u32, va: u64, len: u32, mtu: usize) -> bool {
        let Ok(k) = u32::try_from(diff(p, self.first_psn)) else {
            return false;
        };
        if k >= self.npkts || psn::packets(len as usize, mtu) > self.npkts - k {
            return false;
        }
        len == 0
            || (rkey == self.rkey
                && va >= self.va
                && (va - self.va).saturating_add(u64::from(len)) <= u64::from(self.len))
    }
}

/// Responder state.
#[derive(Debug)]
pub(super) struct Responder {
    /// Expected PSN.
    pub(super) epsn: u32,
    /// Message sequence number: messages completed (IBA 1 §9.7.5.2.7), 24 bits.
    msn: u32,
    pub(super) rq: VecDeque<RecvWr>,
    msg: InMsg,
    /// RC: a sequence or RNR NAK went out and the expected PSN has not arrived since.
    nak_sent: bool,
    /// UC: skipping the rest of a lost message until the next FIRST/ONLY.
    uc_skip: bool,
    out: VecDeque<RespOut>,
    /// The last `max_dest_rd` READs executed, oldest first: the requester has no more
    /// outstanding, so no other can be repeated.
    reads: VecDeque<ReadDone>,
    min_rnr_timer: u8,
    max_dest_rd: usize,
}

/// What executing one in-sequence request did.
enum Exec {
    /// Executed; the expected PSN moves by this many.
    Done(u32),
    /// No receive posted (IBA 1 §9.7.5.2.8).
    Rnr,
    /// A class of error the responder NAKs and that ends the connection (IBA 1 §9.7.5.2.4-5).
    Fatal(NakCode),
}

impl Responder {
    pub(super) fn new(attr: &ConnectedAttr) -> Responder {
        let max_dest_rd = usize::from(attr.max_dest_rd_atomic.max(1));
        Responder {
            epsn: attr.rq_psn & psn::PSN_MASK,
            msn: 0,
            rq: VecDeque::new(),
            msg: InMsg::Idle,
            nak_sent: false,
            uc_skip: false,
            out: VecDeque::new(),
            reads: VecDeque::with_capacity(max_dest_rd),
            min_rnr_timer: attr.min_rnr_timer & 0x1f,
            max_dest_rd,
        }
    }

    /// Keeps an executed READ for its duplicates, forgetting the oldest beyond `max_dest_rd`.
    fn remember_read(&mut self, read: ReadDone) {
        if self.reads.len() >= self.max_dest_rd {
            self.reads.pop_front();
        }
        self.reads.push_back(read);
    }

    pub(super) fn clear_output(&mut self) {
        self.out.clear();
    }

    /// Receives not completed, in order (the one a partial SEND holds first).
    pub(super) fn take_pending_recvs(&mut self) -> Vec<(u64, WcOpcode)> {
        let mut v = Vec::new();
        if let InMsg::Send { wr, .. } = std::mem::replace(&mut self.msg, InMsg::Idle) {
            v.push((wr.wr_id, WcOpcode::Recv));
        }
        v.extend(self.rq.drain(..).map(|w| (w.wr_id, WcOpcode::Recv)));
        v
    }

    /// Queues an ACK, replacing an ACK still waiting at the tail (coalescing).
    fn push_ack(&mut self, psn: u32) {
        let ack = RespOut::Ack {
            psn,
            syndrome: Syndrome::Ack {
                credit_count: Syndrome::INVALID_CREDIT_COUNT,
            },
            msn: self.msn,
        };
        if let Some(RespOut::Ack {
            syndrome: Syndrome::Ack { .. },
            ..
        }) = self.out.back()
        {
            self.out.pop_back();
        }
        self.out.push_back(ack);
    }

    fn push_nak(&mut self, psn: u32, syndrome: Syndrome) {
        self.out.push_back(RespOut::Ack {
            psn,
            syndrome,
            msn: self.msn,
        });
    }

    /// READ responses queued: new ones, or re-executions of duplicates. Only new ones use the
    /// responder resources the requester counts against (max_dest_rd_atomic).
    fn reads_queued(&self, again: bool) -> usize {
        self.out
            .iter()
            .filter(|o| matches!(o, RespOut::Read { again: a, .. } if *a == again))
            .count()
    }

    /// True when [`Responder::next_output`] has a packet to give.
    pub(super) fn has_output(&self) -> bool {
        !self.out.is_empty()
    }

    /// The next answer packet.
    pub(super) fn next_output(&mut self, dest: u32, mtu: usize) -> Option<Outgoing> {
        match self.out.front_mut()? {
            RespOut::Ack { psn, syndrome, msn } => {
                let ext = ExtHeaders {
                    aeth: Some(AethRepr {
                        syndrome: *syndrome,
                        msn: *msn,
                    }),
                    ..ExtHeaders::default()
                };
                let bth = BthRepr::new(Opcode::RC_ACKNOWLEDGE, PKey(0), dest, *psn);
                self.out.pop_front();
                Some(Outgoing {
                    bth,
                    ext,
                    payload: Vec::new(),
                })
            }
            RespOut::Read {
                first_psn,
                data,
                sent,
                npkts,
                msn,
                ..
            } => {
                let k = *sent;
                let op = match (k == 0, k + 1 == *npkts) {
                    (true, true) => Operation::RdmaReadResponseOnly,
                    (true, false) => Operation::RdmaReadResponseFirst,
                    (false, true) => Operation::RdmaReadResponseLast,
                    (false, false) => Operation::RdmaReadResponseMiddle,
                };
                let start = (k as usize * mtu).min(data.len());
                let end = (start + mtu).min(data.len());
                let mut ext = ExtHeaders::default();
                if op != Operation::RdmaReadResponseMiddle {
                    ext.aeth = Some(AethRepr {
                        syndrome: Syndrome::Ack {
                            credit_count: Syndrome::INVALID_CREDIT_COUNT,
                        },
                        msn: *msn,
                    });
                }
                let out = Outgoing {
                    bth: BthRepr::new(
                        Opcode::new(Transport::Rc, op),
                        PKey(0),
                        dest,
                        add(*first_psn, k),
                    ),
                    ext,
                    payload: data[start..end].to_vec(),
                };
                *sent += 1;
                if *sent >= *npkts {
                    self.out.pop_front();
                }
                Some(out)
            }
        }
    }
}

impl ConnectedQp {
    /// A request packet (SEND, RDMA WRITE, RDMA READ request) arrived.
    pub(super) fn handle_request(
        &mut self,
        now: Instant,
        bth: &BthRepr,
        ext: &ExtHeaders,
        payload: &[u8],
        mem: &mut dyn RdmaMemory,
    ) {
        let _ = now;
        if self.qp_type == QpType::Uc {
            self.handle_uc_request(bth, ext, payload, mem);
            return;
        }
        let p = bth.psn;
        let d = diff(p, self.resp.epsn);
        if d > 0 {
            // IBA 1 §9.7.5.2.2: a PSN beyond the expected one means packets were lost; NAK once
            // with the expected PSN and drop until it arrives.
            if !self.resp.nak_sent {
                let e = self.resp.epsn;
                self.resp
                    .push_nak(e, Syndrome::Nak(NakCode::PsnSequenceError));
                self.resp.nak_sent = true;
                self.counters.seq_naks_sent += 1;
            }
            return;
        }
        if d < 0 {
            // IBA 1 §9.7.5.2.3: a duplicate is not executed again, but answered: SEND and WRITE
            // with an ACK of the latest PSN, READ by reading again.
            self.counters.duplicates += 1;
            if bth.opcode.operation() == Operation::RdmaReadRequest {
                self.reexecute_read(p, ext, &*mem);
            } else {
                let last = prev(self.resp.epsn);
                self.resp.push_ack(last);
            }
            return;
        }
        match self.execute(bth, ext, payload, mem) {
            Exec::Done(n) => {
                self.resp.epsn = add(p, n);
                self.resp.nak_sent = false;
                if bth.ack_req && bth.opcode.operation() != Operation::RdmaReadRequest {
                    self.resp.push_ack(p);
                }
            }
            Exec::Rnr => {
                let t = self.resp.min_rnr_timer;
                self.resp.push_nak(p, Syndrome::RnrNak { timer: t });
                self.resp.nak_sent = true;
                self.counters.rnr_naks_sent += 1;
            }
            Exec::Fatal(code) => {
                self.resp.push_nak(p, Syndrome::Nak(code));
                self.counters.fatal_naks_sent += 1;
                self.enter_error(None);
            }
        }
    }

    /// UC (IBA 1 §9.8.3): no answers. A PSN other than the expected one, later (packets lost)
    /// or earlier (the requester started over, or a stale packet), is a PSN error: the partial
    /// message is dropped and the responder resynchronises at the next FIRST or ONLY, at that
    /// packet's own PSN (docs/CONFORMANCE.md, "IBA reliable and unreliable connected service").
    fn handle_uc_request(
        &mut self,
        bth: &BthRepr,
        ext: &ExtHeaders,
        payload: &[u8],
        mem: &mut dyn RdmaMemory,
    ) {
        let p = bth.psn;
        if p != self.resp.epsn {
            self.abort_partial();
            self.resp.uc_skip = true;
        }
        self.resp.epsn = add(p, 1);
        let starts = matches!(
            bth.opcode.position(),
            Some(Position::First | Position::Only)
        );
        if self.resp.uc_skip && !starts {
            return;
        }
        self.resp.uc_skip = false;
        if starts && !matches!(self.resp.msg, InMsg::Idle) {
            self.abort_partial();
        }
        match self.execute(bth, ext, payload, mem) {
            Exec::Done(_) => {}
            Exec::Rnr | Exec::Fatal(_) => {
                // One message dropped: the partial one, which `abort_partial` counts, or the
                // one this packet starts.
                if matches!(self.resp.msg, InMsg::Idle) {
                    self.counters.messages_dropped += 1;
                }
                self.abort_partial();
                if !starts || !matches!(bth.opcode.position(), Some(Position::Only)) {
                    self.resp.uc_skip = true;
                }
            }
        }
    }

    /// UC: forgets the message in progress; a SEND's receive goes back to the head of the queue.
    fn abort_partial(&mut self) {
        match std::mem::replace(&mut self.resp.msg, InMsg::Idle) {
            InMsg::Idle => {}
            InMsg::Send { wr, .. } => {
                self.resp.rq.push_front(wr);
                self.counters.messages_dropped += 1;
            }
            InMsg::Write { .. } => self.counters.messages_dropped += 1,
        }
    }

    /// Executes one in-sequence request (IBA 1 §9.7.5.2.4-5 checks first, then the operation).
    fn execute(
        &mut self,
        bth: &BthRepr,
        ext: &ExtHeaders,
        payload: &[u8],
        mem: &mut dyn RdmaMemory,
    ) -> Exec {
        use Operation::*;
        let mtu = self.mtu;
        let op = bth.opcode.operation();
        // Payload length rule: FIRST and MIDDLE carry exactly one MTU, LAST 1..=MTU, ONLY at most
        // one MTU (IBA 1 §9.7.5.2.5 "length errors").
        let len_ok = match bth.opcode.position() {
            Some(Position::First | Position::Middle) => payload.len() == mtu,
            Some(Position::Last) => (1..=mtu).contains(&payload.len()),
            _ => payload.len() <= mtu,
        };
        if !len_ok {
            return Exec::Fatal(NakCode::InvalidRequest);
        }
        let imm = ext.immdt.map(|i| i.data);
        match op {
            SendFirst | SendOnly | SendOnlyWithImmediate => {
                if !matches!(self.resp.msg, InMsg::Idle) {
                    return Exec::Fatal(NakCode::InvalidRequest);
                }
                let Some(wr) = self.resp.rq.pop_front() else {
                    return Exec::Rnr;
                };
                if payload.len() > wr.capacity as usize {
                    return self.length_error(wr);
                }
                if op == SendFirst {
                    // The message is gathered into one buffer the size of the posted receive
                    // (bounded), as the HCA writes it into that buffer: no growing copies.
                    let mut data = Vec::with_capacity((wr.capacity as usize).min(GATHER_RESERVE));
                    data.extend_from_slice(payload);
                    self.resp.msg = InMsg::Send { wr, data };
                } else {
                    self.deliver(wr, payload.to_vec(), imm, WcOpcode::Recv, None);
                }
                Exec::Done(1)
            }
            SendMiddle | SendLast | SendLastWithImmediate => {
                let InMsg::Send { wr, data } = &mut self.resp.msg else {
                    return Exec::Fatal(NakCode::InvalidRequest);
                };
                if data.len() + payload.len() > wr.capacity as usize {
                    let wr = *wr;
                    self.resp.msg = InMsg::Idle;
                    return self.length_error(wr);
                }
                data.extend_from_slice(payload);
                if op != SendMiddle {
                    if let InMsg::Send { wr, data } =
                        std::mem::replace(&mut self.resp.msg, InMsg::Idle)
                    {
                        self.deliver(wr, data, imm, WcOpcode::Recv, None);
                    }
                }
                Exec::Done(1)
            }
            RdmaWriteFirst | RdmaWriteOnly | RdmaWriteOnlyWithImmediate => {
                let Some(reth) = ext.reth else {
                    return Exec::Fatal(NakCode::InvalidRequest);
                };
                let total = u64::from(reth.dma_len);
                let only = op != RdmaWriteFirst;
                if !matches!(self.resp.msg, InMsg::Idle)
                    || (only && total != payload.len() as u64)
                    || (!only && total <= payload.len() as u64)
                {
                    return Exec::Fatal(NakCode::InvalidRequest);
                }
                if op == RdmaWriteOnlyWithImmediate && self.resp.rq.is_empty() {
                    return Exec::Rnr;
                }
                // IBA 1 §9.7.5.2.5, §10.6.3.1: the R_Key, the whole range and remote write are
                // checked at the first packet, so a refused WRITE leaves the region untouched.
                // A zero-length WRITE reaches no memory: its R_Key and VA are not checked
                // (docs/CONFORMANCE.md, "IBA reliable and unreliable connected service").
                let n = payload.len();
                if total > 0 {
                    let Some(dst) = mem
                        .remote_write(reth.rkey, reth.va, total)
                        .and_then(|d| d.get_mut(..n))
                    else {
                        return Exec::Fatal(NakCode::RemoteAccessError);
                    };
                    dst.copy_from_slice(payload);
                }
                if only {
                    self.write_done(op == RdmaWriteOnlyWithImmediate, reth.dma_len, imm);
                } else {
                    self.resp.msg = InMsg::Write {
                        rkey: reth.rkey,
                        va: reth.va.wrapping_add(n as u64),
                        remaining: total - n as u64,
                        total: reth.dma_len,
                    };
                }
                Exec::Done(1)
            }
            RdmaWriteMiddle | RdmaWriteLast | RdmaWriteLastWithImmediate => {
                let InMsg::Write {
                    rkey,
                    va,
                    remaining,
                    total,
                } = self.resp.msg
                else {
                    return Exec::Fatal(NakCode::InvalidRequest);
                };
                let n = payload.len() as u64;
                let last = op != RdmaWriteMiddle;
                if (last && n != remaining) || (!last && n >= remaining) {
                    return Exec::Fatal(NakCode::InvalidRequest);
                }
                if op == RdmaWriteLastWithImmediate && self.resp.rq.is_empty() {
                    return Exec::Rnr;
                }
                // Checked again: the region may have been deregistered since the first packet.
                let Some(dst) = mem.remote_write(rkey, va, n) else {
                    return Exec::Fatal(NakCode::RemoteAccessError);
                };
                dst.copy_from_slice(payload);
                if last {
                    self.resp.msg = InMsg::Idle;
                    self.write_done(op == RdmaWriteLastWithImmediate, total, imm);
                } else {
                    self.resp.msg = InMsg::Write {
                        rkey,
                        va: va.wrapping_add(n),
                        remaining: remaining - n,
                        total,
                    };
                }
                Exec::Done(1)
            }
            RdmaReadRequest if self.qp_type == QpType::Rc => {
                let Some(reth) = ext.reth else {
                    return Exec::Fatal(NakCode::InvalidRequest);
                };
                if !matches!(self.resp.msg, InMsg::Idle)
                    || self.resp.reads_queued(false) >= self.resp.max_dest_rd
                {
                    return Exec::Fatal(NakCode::InvalidRequest);
                }
                // IBA 1 §9.7.5.2.5, §10.6.3.1: R_Key, range and remote read (none of them for
                // a zero-length READ, which reads nothing).
                let Some(data) = read_range(&*mem, reth.rkey, reth.va, reth.dma_len) else {
                    return Exec::Fatal(NakCode::RemoteAccessError);
                };
                let npkts = psn::packets(data.len(), mtu);
                self.resp.remember_read(ReadDone {
                    first_psn: bth.psn,
                    npkts,
                    rkey: reth.rkey,
                    va: reth.va,
                    len: reth.dma_len,
                });
                self.resp.msn = add(self.resp.msn, 1);
                self.resp.out.push_back(RespOut::Read {
                    first_psn: bth.psn,
                    data,
                    sent: 0,
                    npkts,
                    msn: self.resp.msn,
                    again: false,
                });
                Exec::Done(npkts)
            }
            // Atomics, SEND with invalidate and anything else: not supported here.
            _ => Exec::Fatal(NakCode::InvalidRequest),
        }
    }

    /// IBA 1 §9.7.5.2.3: a duplicate RDMA READ request is executed again from its PSN, with the
    /// memory as it is now, when it repeats a READ executed before or that READ's tail
    /// ([`ReadDone::covers`]); any other is dropped (counted), as Linux rxe's `duplicate_request`
    /// drops one outside the READ it finds (docs/CONFORMANCE.md, "IBA reliable and unreliable
    /// connected service"). Dropped too when the responder already has its limit of reads queued.
    fn reexecute_read(&mut self, p: u32, ext: &ExtHeaders, mem: &dyn RdmaMemory) {
        let Some(reth) = ext.reth else {
            self.counters.drop_malformed += 1;
            return;
        };
        let mtu = self.mtu;
        let (rkey, va, len) = (reth.rkey, reth.va, reth.dma_len);
        if !self
            .resp
            .reads
            .iter()
            .any(|r| r.covers(p, rkey, va, len, mtu))
        {
            self.counters.duplicate_reads_refused += 1;
            return;
        }
        if self.resp.reads_queued(true) >= self.resp.max_dest_rd {
            return;
        }
        let Some(data) = read_range(mem, reth.rkey, reth.va, reth.dma_len) else {
            self.counters.drop_malformed += 1;
            return;
        };
        let npkts = psn::packets(data.len(), self.mtu);
        self.resp.out.push_back(RespOut::Read {
            first_psn: p,
            data,
            sent: 0,
            npkts,
            msn: self.resp.msn,
            again: true,
        });
    }

    /// A SEND longer than the receive buffer: the receive completes with a local length error
    /// and an RC responder NAKs invalid request (IBA 1 §9.7.5.2.5, §11.6.2).
    fn length_error(&mut self, wr: RecvWr) -> Exec {
        let c = self.recv_completion(wr.wr_id, WcStatus::LocLenErr, WcOpcode::Recv);
        self.completions.push_back(c);
        Exec::Fatal(NakCode::InvalidRequest)
    }

    fn write_done(&mut self, with_imm: bool, total: u32, imm: Option<u32>) {
        self.resp.msn = add(self.resp.msn, 1);
        if with_imm {
            if let Some(wr) = self.resp.rq.pop_front() {
                self.deliver(wr, Vec::new(), imm, WcOpcode::RecvRdmaWithImm, Some(total));
                // deliver counted the message already.
                self.resp.msn = prev(self.resp.msn);
            }
        }
    }

    /// A whole message arrived: its receive completes.
    fn deliver(
        &mut self,
        wr: RecvWr,
        data: Vec<u8>,
        imm: Option<u32>,
        opcode: WcOpcode,
        byte_len: Option<u32>,
    ) {
        self.resp.msn = add(self.resp.msn, 1);
        let mut c = self.recv_completion(wr.wr_id, WcStatus::Success, opcode);
        c.byte_len = byte_len.unwrap_or(data.len() as u32);
        c.imm = imm;
        c.data = data;
        self.completions.push_back(c);
    }
}

/// The bytes an RDMA READ asks for: none, unchecked, for a zero-length READ (it reaches no
/// memory); otherwise the range when the R_Key grants remote read over all of it.
fn read_range(mem: &dyn RdmaMemory, rkey: u32, va: u64, len: u32) -> Option<Vec<u8>> {
    if len == 0 {
        return Some(Vec::new());
    }
    mem.remote_read(rkey, va, u64::from(len))
        .map(<[u8]>::to_vec)
}
