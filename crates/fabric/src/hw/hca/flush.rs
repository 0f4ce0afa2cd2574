//! Sending what the HCA queued ([`Hca::flush`]): SMA and PMA answers, UD work requests, and
//! the output and completions of the RC/UC engines with work (module `sched`).

use super::{push_into, ud, Hca, HcaDropReason, QpKind};
use crate::hw::sim::Tx;
use crate::hw::verbs::{QpState, WcStatus};
use ipoib_proto::time::Instant;

/// An RC/UC packet with less payload than this (an acknowledgement, a short message; the
/// smallest MTU is 256 bytes, IBA 1 §14.2.5.6) is built in a small allocation
/// ([`Tx::spare_small`]), not in a data packet's ([`Hca::flush`]).
const SMALL_PAYLOAD: usize = 256;

impl Hca {
    /// True when [`Hca::flush`] would do nothing at all: no SMA answer, no work request, no
    /// RC/UC engine with work, and no port a SubnSet changed ([`Hca::take_port_changes`]).
    pub(crate) fn is_settled(&self) -> bool {
        self.sma_out.is_empty()
            && self.sendq.is_empty()
            && !self.sched.has_ready()
            && !self.connected_dirty
            && self.sma_changed.is_empty()
            && self.port_requests.is_empty()
    }

    /// True when the last packet received ([`crate::hw::sim::Device::receive_frame`]) was a
    /// SEND or RDMA WRITE First or Middle that its RC/UC engine took and that left it with
    /// nothing to give (no acknowledgement asked for, no completion: IBA 1 §9.7.5.2, §9.8.3),
    /// its timer where it was, and the HCA has nothing to flush: the packet started or added
    /// to the message being received (a SEND First takes its receive WQE, which software sees
    /// only in its completion, IBA 1 §11.4.2) and changed nothing else software could see.
    pub fn took_quietly(&self) -> bool {
        self.rx_quiet && self.is_settled()
    }

    /// Sends everything queued (UD work requests, RC/UC engine output) out of the ports through
    /// `tx`; returns the packets sent.
    pub fn flush(&mut self, now: Instant, tx: &mut Tx) -> usize {
        self.last_now = self.last_now.max(now);
        // Nothing queued (a host's agents and applications asked for no packet): what the walk
        // below does with empty queues, without walking them.
        if self.sma_out.is_empty() && self.sendq.is_empty() && !self.sched.has_ready() {
            self.connected_dirty = false;
            return 0;
        }
        let before = self.counters.tx_packets;
        // The list is taken out while it is sent (a looped-back SMP's answer joins a new one,
        // for the next flush, as before) and given back empty, its allocation kept.
        let mut out = std::mem::take(&mut self.sma_out);
        for (port, packet, local) in out.drain(..) {
            // Counted as sent, as a UD packet looped back to a local LID is.
            self.counters.tx_packets += 1;
            if local {
                self.rx(now, port, &packet, None);
                continue;
            }
            // IBA 1 §7.2: a PMA answer (QP1, not VL15) is a data packet, which only an Active
            // port sends; SMA answers and traps (VL15) leave from Init and Armed too.
            let vl15 = packet.first().is_some_and(|b| b >> 4 == 15);
            match self.port_mut(port) {
                Some(p) if !vl15 && !p.state.transmits_data() => {
                    p.traffic.xmit_discards += 1;
                    self.counters.count(HcaDropReason::TxPortNotActive);
                    continue;
                }
                Some(p) => p.traffic.count_xmit(&packet),
                None => {}
            }
            tx.send_frame(port, packet);
        }
        if self.sma_out.is_empty() {
            self.sma_out = out;
        }
        // A port a SubnSet(PortInfo) disabled or enabled: its link changes after the Set's
        // answer has left (as a switch's, `crate::hw::switch`), the answer queued with it.
        for (port, enabled) in self.port_requests.drain(..) {
            tx.set_port_enabled(port, enabled);
        }
        let mut held = Vec::new();
        while let Some((qpn, wr)) = self.sendq.pop_front() {
            match self.qps.get(&qpn).map(|q| q.state) {
                Some(QpState::Rts) => self.ud_send(now, qpn, wr, tx),
                Some(QpState::Sqd) => held.push((qpn, wr)),
                Some(_) => {
                    let (cq, id) = (self.qps[&qpn].send_cq, wr.wr_id);
                    let c = ud::send_completion(id, WcStatus::WrFlushErr, qpn, 0);
                    self.push_completion(cq, c);
                }
                None => {}
            }
        }
        if !held.is_empty() {
            self.sendq.extend(held);
        }
        self.connected_dirty = false;
        if self.sched.has_ready() {
            self.drive_connected(now, tx);
        }
        (self.counters.tx_packets - before) as usize
    }

    /// Moves RC/UC engine output onto the wire and engine completions into CQs, QP by QP in QPN
    /// order. Only engines that took an input that left them with work
    /// ([`ConnectedEngine::has_work`]) since they were last drained are polled: the others
    /// have nothing to give ([`ConnectedEngine`]). A packet looped back to a QP further on is
    /// taken in this walk, one to a QP already passed in the next flush (which `connected_dirty`
    /// asks for).
    fn drive_connected(&mut self, now: Instant, tx: &mut Tx) {
        let mut after = None;
        while let Some(qpn) = self.sched.next_ready(after) {
            after = Some(qpn);
            // The QP's link and network layers: the same for every packet of this walk (sending
            // changes the engine only; a packet looped back reaches an engine, not a port or the
            // QP's attributes).
            let framing = self.connected_framing(qpn);
            while let Some(QpKind::Connected(e)) = self.qps.get_mut(&qpn).map(|q| &mut q.kind) {
                let mut built = Err(HcaDropReason::Malformed);
                let sent = e.transmit_with(now, &self.mrs, &mut |bth, ext, payload| {
                    // A small packet (an acknowledgement, a short message) in a small
                    // allocation: built in a data packet's spare, it would leave that spare
                    // short, and the next data packet built there would zero the rest of it
                    // first ([`ud::emit`]).
                    let buf = if payload.len() < SMALL_PAYLOAD {
                        tx.spare_small()
                    } else {
                        tx.spare()
                    };
                    built = framing
                        .as_ref()
                        .map_err(|r| *r)
                        .and_then(|f| f.build(buf, bth, ext, payload));
                });
                if !sent {
                    break;
                }
                self.connected_send(now, qpn, built, tx);
            }
            // The QP looked up once for its completions (each into its CQ: `push_into`, as
            // `Hca::push_completion`, on the fields the QP's borrow leaves free), spent buffers
            // and timer.
            if let Some(qp) = self.qps.get_mut(&qpn) {
                if let QpKind::Connected(e) = &mut qp.kind {
                    while let Some(c) = e.poll_completion() {
                        let cq = if matches!(
                            c.opcode,
                            crate::hw::verbs::WcOpcode::Recv
                                | crate::hw::verbs::WcOpcode::RecvRdmaWithImm
                        ) {
                            qp.recv_cq
                        } else {
                            qp.send_cq
                        };
                        push_into(&mut self.cqs, &mut self.cq_total, cq, c);
                    }
                    while let Some(buf) = e.take_spent() {
                        tx.recycle(buf);
                    }
                    self.sched.set_timer(qpn, e.poll_timeout());
                }
            }
        }
    }
}
