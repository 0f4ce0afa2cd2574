//! FlowC 0, "Transport owns flow control and may embed a 16 byte headers in RC Send (just like SDP
//! does, and uses zero in that field)" (iWarp mapping, FlowC): every SEND starts with SDP's BSDH,
//! MID zero, and the stream runs SDP's credit scheme (docs/DEPLOYED.md "SDP (the data structures
//! the iWarp mapping reuses)"):
//!
//! - `bufs` = receive buffers we have posted when the SEND leaves; `mseq` counts our SENDs from 1
//!   (the Hello and HelloReply are 0); `mseq_ack` = mseq of the last SEND received; `len` = the
//!   SEND's length, BSDH included; flags zero (SDP's out-of-band flags do not apply: reserved, zero
//!   on emit, ignored on parse).
//! - On each SEND received, our credits become `bufs - (our last mseq - mseq_ack)`: the peer's
//!   buffers minus our SENDs it had not yet received.
//! - A data SEND needs two credits; the last one only carries credits (SDP CA4-82).
//! - A BSDH-only SEND (a credit update) goes out when the peer knows of too few of our buffers:
//!   with `c` its credits as we know them, `c` raised by half when above 2, below our posted
//!   buffers (OFED SDP's `credit_update_needed`).

use super::{IwarpStream, StreamError, MIN_DATA_CREDITS};
use ipoib_wire::bsdh::{BsdhRepr, BSDH_LEN};

/// The MID of every SEND (iWarp mapping, FlowC 0: "uses zero in that field").
const MID: u8 = 0;

impl IwarpStream {
    /// A data SEND when there are bytes and two credits, else a credit update when the peer needs
    /// one and we hold a credit, else nothing.
    pub(super) fn poll_send_transport(&mut self) -> Option<Vec<u8>> {
        if !self.send_bytes.is_empty() && self.credits >= MIN_DATA_CREDITS {
            let room = (self.peer_recv_size as usize).saturating_sub(BSDH_LEN);
            let n = self.send_bytes.len().min(room);
            let mut msg = self.bsdh_message(n);
            msg.extend(self.send_bytes.drain(..n));
            self.queued -= n;
            return Some(msg);
        }
        if self.credits >= 1 && self.credit_update_needed() {
            self.stats.credit_updates += 1;
            return Some(self.bsdh_message(0));
        }
        None
    }

    /// OFED SDP's `credit_update_needed`: the peer's credits as we know them, raised by half when
    /// above 2, are fewer than our posted buffers.
    fn credit_update_needed(&self) -> bool {
        let c = self.remote_credits;
        let c = if c > 2 { c + c / 2 } else { c };
        c < self.posted
    }

    /// A BSDH for a SEND with `payload` bytes to follow; takes a credit and a sequence number.
    fn bsdh_message(&mut self, payload: usize) -> Vec<u8> {
        self.tx_seq = self.tx_seq.wrapping_add(1);
        self.credits -= 1;
        // The peer learns of every buffer posted now (posted never exceeds the u16 depth).
        self.remote_credits = self.posted;
        let len = BSDH_LEN + payload;
        let h = BsdhRepr {
            mid: MID,
            flags: 0,
            bufs: u16::try_from(self.posted).unwrap_or(u16::MAX),
            len: u32::try_from(len).unwrap_or(u32::MAX),
            mseq: self.tx_seq,
            mseq_ack: self.rx_seq,
        };
        let mut msg = Vec::with_capacity(len);
        msg.resize(BSDH_LEN, 0);
        // Cannot fail: the buffer has BSDH_LEN bytes.
        let _ = h.emit(&mut msg);
        msg
    }

    /// Checks a received SEND's BSDH, takes its credits and keeps its payload. Called once the
    /// stream is established, a buffer is posted and the SEND fits it.
    pub(super) fn handle_transport(&mut self, msg: &[u8]) -> Result<(), StreamError> {
        let h = BsdhRepr::parse(msg).map_err(|_| StreamError::Truncated(msg.len()))?;
        if h.mid != MID {
            return Err(StreamError::Mid(h.mid));
        }
        if h.len as usize != msg.len() {
            return Err(StreamError::Length {
                field: h.len,
                actual: msg.len(),
            });
        }
        let expected = self.rx_seq.wrapping_add(1);
        if h.mseq != expected {
            return Err(StreamError::Sequence {
                expected,
                got: h.mseq,
            });
        }
        // mseq_ack lies between the last one and our last mseq.
        let unacked = self.tx_seq.wrapping_sub(self.peer_acked);
        if h.mseq_ack.wrapping_sub(self.peer_acked) > unacked {
            return Err(StreamError::Ack(h.mseq_ack));
        }
        let in_flight = self.tx_seq.wrapping_sub(h.mseq_ack);
        let credits = u32::from(h.bufs)
            .checked_sub(in_flight)
            .ok_or(StreamError::Credits {
                bufs: h.bufs,
                in_flight,
            })?;
        self.rx_seq = h.mseq;
        self.peer_acked = h.mseq_ack;
        self.credits = credits;
        self.remote_credits = self.remote_credits.saturating_sub(1);
        if msg.len() == BSDH_LEN {
            // A credit update: its buffer is free at once.
            self.posted -= 1;
            self.unposted += 1;
        } else {
            self.hold(msg[BSDH_LEN..].to_vec());
        }
        Ok(())
    }
}
