//! RMPP for SA tables (IBA 1 §13.6): cutting a GetTableResp payload into DATA segments
//! ([`segment_table`]), the sending side's window and retransmission ([`RmppSender`]), the
//! receiving side's reassembly ([`RmppReceiver`]) and ACKs ([`ack_for`]). See the module docs of
//! `crate::sa` for the exact PayloadLength and ACK conventions (Linux `mad_rmpp.c`).
//!
//! Invariants: a sender never sends a segment beyond the receiver's NewWindowLast; segment numbers
//! start at 1; a receiver only accepts segments in order and never grows beyond
//! [`MAX_SEGMENTS`].

use crate::mad_agent::MadAddr;
use crate::time::Instant;
use ipoib_wire::mad::{MadHeaderRepr, Method, RmppFlags, RmppRepr, RmppStatus, RmppType, MAD_LEN};
use ipoib_wire::sa::{SaHeaderRepr, SaMadRepr, SA_DATA_LEN, SA_DATA_OFFSET, SA_HEADER_LEN};
use std::time::Duration;

/// The window a receiver grants beyond the segment it acknowledges.
pub const RECEIVE_WINDOW: u32 = 32;
/// "No time value" in RRespTime (IBA 1 §13.6.2.1; Linux `IB_MGMT_RMPP_NO_RESPTIME`).
pub const NO_RESPTIME: u8 = 0x1f;
/// The most segments a receiver reassembles (about 800 KB of records); more is refused.
pub const MAX_SEGMENTS: u32 = 4096;

/// The NewWindowLast a receiver grants in its ACK of segment `seg`: [`RECEIVE_WINDOW`] beyond it,
/// the last segment's ACK included, so that the window never shrinks from one ACK to the next. A
/// Linux sender takes an ACK whose NewWindowLast is below the one before as an old ACK and
/// ignores it (`drivers/infiniband/core/mad_rmpp.c` `process_rmpp_ack`, "Old ACK"), so a final
/// ACK granting only its own segment would leave the transfer unfinished at the sender; Linux's
/// receiver keeps its window at completion too (`format_ack` writes `rmpp_recv->newwin`).
pub fn window_last(seg: u32) -> u32 {
    seg.saturating_add(RECEIVE_WINDOW)
}

/// Cuts `data` (the records, [`ipoib_wire::sa::emit_records`] layout) into the MADs of one
/// GetTableResp: `header` and `sa` are repeated in each segment (IBA 1 §13.6.2), PayloadLength as
/// Linux's sender writes it. One segment when the data fits 200 bytes.
pub fn segment_table(header: MadHeaderRepr, sa: SaHeaderRepr, data: &[u8]) -> Vec<[u8; MAD_LEN]> {
    let nseg = data.len().div_ceil(SA_DATA_LEN).max(1);
    let mut out = Vec::with_capacity(nseg);
    for i in 0..nseg {
        let chunk = data
            .get(i * SA_DATA_LEN..((i + 1) * SA_DATA_LEN).min(data.len()))
            .unwrap_or(&[]);
        let first = i == 0;
        let last = i + 1 == nseg;
        let mut flags = RmppFlags::ACTIVE;
        let mut paylen = 0u32;
        if first {
            flags |= RmppFlags::FIRST;
            paylen = (data.len() + SA_HEADER_LEN * nseg) as u32;
        }
        if last {
            flags |= RmppFlags::LAST;
            paylen = (SA_HEADER_LEN + chunk.len()) as u32;
        }
        let repr = SaMadRepr {
            header,
            rmpp: RmppRepr {
                version: RmppRepr::VERSION,
                rmpp_type: RmppType::Data,
                resp_time: NO_RESPTIME,
                flags: RmppFlags(flags),
                status: RmppStatus::Normal,
                data1: (i + 1) as u32,
                data2: paylen,
            },
            sa,
            attribute: ipoib_wire::sa::SaAttribute::Raw(ipoib_wire::sa::SaRawData::new(chunk)),
        };
        out.push(repr.to_bytes());
    }
    out
}

/// The ACK a receiver sends for `data` (a DATA segment it got): the same headers with the R bit
/// of the method flipped (Linux `ack_recv`/`format_ack`), RMPP type ACK, SegmentNumber `seg`,
/// NewWindowLast `nwl`, the SA header and data zeroed.
pub fn ack_for(data: &[u8], seg: u32, nwl: u32) -> Option<[u8; MAD_LEN]> {
    control_for(data, RmppType::Ack, RmppStatus::Normal, seg, nwl)
}

/// An ABORT for the transfer `data` belongs to (IBA 1 §13.6.3.3).
pub fn abort_for(data: &[u8], status: RmppStatus) -> Option<[u8; MAD_LEN]> {
    control_for(data, RmppType::Abort, status, 0, 0)
}

fn control_for(
    data: &[u8],
    t: RmppType,
    status: RmppStatus,
    seg: u32,
    nwl: u32,
) -> Option<[u8; MAD_LEN]> {
    let mut h = MadHeaderRepr::parse_bytes(data).ok()?;
    h.method = Method::from(u8::from(h.method) ^ Method::RESPONSE_BIT);
    let mut out = [0u8; MAD_LEN];
    h.emit(&mut out);
    let r = RmppRepr {
        version: RmppRepr::VERSION,
        rmpp_type: t,
        resp_time: NO_RESPTIME,
        flags: RmppFlags(RmppFlags::ACTIVE),
        status,
        data1: seg,
        data2: nwl,
    };
    r.emit(&mut out[24..36]);
    Some(out)
}

/// The sending side of one transfer.
#[derive(Debug, Clone)]
pub struct RmppSender {
    /// Where the segments go.
    pub to: MadAddr,
    segments: Vec<[u8; MAD_LEN]>,
    /// Highest segment acknowledged (0: none).
    acked: u32,
    /// NewWindowLast granted so far, as the receiver wrote it (starts at 1, IBA 1 §13.6.3.1;
    /// segments are sent up to it or the last one, whichever is lower).
    window_last: u32,
    /// Next segment to send.
    next: u32,
    deadline: Instant,
    tries: u8,
    timeout: Duration,
    max_tries: u8,
}

/// What happened to a transfer after an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendState {
    /// Still going.
    Active,
    /// Every segment acknowledged.
    Done,
    /// Gave up (too many timeouts, or the receiver stopped/aborted).
    Failed,
    /// The receiver broke the protocol: the transfer ends and the receiver is sent an ABORT
    /// with this status ([`abort_for`]).
    Abort(RmppStatus),
}

impl RmppSender {
    /// A transfer of `segments` to `to`.
    pub fn new(
        now: Instant,
        to: MadAddr,
        segments: Vec<[u8; MAD_LEN]>,
        timeout: Duration,
        max_tries: u8,
    ) -> RmppSender {
        RmppSender {
            to,
            segments,
            acked: 0,
            window_last: 1,
            next: 1,
            deadline: now + timeout,
            tries: 0,
            timeout,
            max_tries,
        }
    }

    /// The bytes of segments this transfer holds.
    pub fn bytes(&self) -> usize {
        self.segments.len() * MAD_LEN
    }

    fn total(&self) -> u32 {
        self.segments.len() as u32
    }

    /// Segments that may be sent now (within the window), in order.
    pub fn poll_segments(&mut self, now: Instant) -> Vec<[u8; MAD_LEN]> {
        let mut out = Vec::new();
        let last = self.window_last.min(self.total());
        while self.next <= last {
            if let Some(s) = self.segments.get(self.next as usize - 1) {
                out.push(*s);
            }
            self.next += 1;
        }
        if !out.is_empty() {
            self.deadline = now + self.timeout;
        }
        out
    }

    /// An ACK (SegmentNumber `seg`, NewWindowLast `nwl`) arrived (IBA 1 §13.6.3.2, as Linux
    /// `mad_rmpp.c` `process_rmpp_ack` reads it): NewWindowLast below SegmentNumber aborts the
    /// transfer with status W2S; an ACK of a segment past the last or past the window granted
    /// so far (a segment not sent) with S2B; an older ACK (a window or segment below one
    /// already acknowledged) is ignored.
    pub fn on_ack(&mut self, now: Instant, seg: u32, nwl: u32) -> SendState {
        if nwl < seg {
            return SendState::Abort(RmppStatus::NewWindowLastTooSmall);
        }
        if seg > self.total() || seg > self.window_last {
            return SendState::Abort(RmppStatus::SegmentNumberTooBig);
        }
        if nwl < self.window_last || seg < self.acked {
            return SendState::Active;
        }
        if seg > self.acked {
            self.acked = seg;
            self.tries = 0;
            self.deadline = now + self.timeout;
        }
        self.window_last = nwl;
        self.next = self.next.max(self.acked + 1);
        if self.acked == self.total() {
            SendState::Done
        } else {
            SendState::Active
        }
    }

    /// When the sender needs `on_timeout`.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Timer: resend from the first unacknowledged segment, or give up.
    pub fn on_timeout(&mut self, now: Instant) -> SendState {
        if now < self.deadline {
            return SendState::Active;
        }
        self.tries += 1;
        if self.tries >= self.max_tries {
            return SendState::Failed;
        }
        self.next = self.acked + 1;
        self.deadline = now + self.timeout;
        SendState::Active
    }
}

/// The receiving side of one transfer.
#[derive(Debug, Clone, Default)]
pub struct RmppReceiver {
    /// Last segment received in order.
    pub last: u32,
    /// The SA header of the first segment.
    pub sa: Option<SaHeaderRepr>,
    /// The data so far.
    pub data: Vec<u8>,
    /// True once the last segment arrived.
    pub complete: bool,
}

/// What a receiver does with a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecvAction {
    /// Accepted; send this ACK. `complete` once the last segment is in.
    Ack([u8; MAD_LEN]),
    /// Duplicate or out of order: re-acknowledge what we have.
    Reack([u8; MAD_LEN]),
    /// A later segment before the first one: drop it silently (the sender's timer resends).
    Ignore,
    /// The transfer ends: the sender is told by an ABORT with this status, or by a STOP for
    /// [`RmppStatus::ResourcesExhausted`] ([`end_for`]; IBA 1 §13.6.3.3).
    Abort(RmppStatus),
}

/// What a receiver sends the sender of `data` to end its transfer for `status` (IBA 1
/// §13.6.3.3): a STOP for ResourcesExhausted (the receiver cannot hold more), an ABORT otherwise.
pub fn end_for(data: &[u8], status: RmppStatus) -> Option<[u8; MAD_LEN]> {
    let t = if status == RmppStatus::ResourcesExhausted {
        RmppType::Stop
    } else {
        RmppType::Abort
    };
    control_for(data, t, status, 0, 0)
}

impl RmppReceiver {
    /// Takes a DATA segment (whole MAD). As Linux's receiver (`drivers/infiniband/core/
    /// mad_rmpp.c` `process_rmpp_data`, `nack_recv`): a segment with an RMPPStatus other than
    /// Normal is aborted with IllegalStatus, one whose First flag disagrees with its
    /// SegmentNumber (First exactly on segment 1) with InconsistentFirstAndSegmentNumber, both
    /// before duplicates are looked at; a transfer past [`MAX_SEGMENTS`] is stopped
    /// (ResourcesExhausted).
    pub fn on_data(&mut self, mad: &[u8]) -> RecvAction {
        let Ok(m) = SaMadRepr::parse(mad) else {
            return RecvAction::Abort(RmppStatus::Unspecified);
        };
        if m.rmpp.status != RmppStatus::Normal {
            return RecvAction::Abort(RmppStatus::IllegalStatus);
        }
        let seg = m.rmpp.segment_number();
        if (seg == 1) != m.rmpp.flags.first() {
            return RecvAction::Abort(RmppStatus::InconsistentFirstAndSegmentNumber);
        }
        if self.complete || seg != self.last + 1 {
            if self.last == 0 {
                return RecvAction::Ignore;
            }
            return match ack_for(mad, self.last, window_last(self.last)) {
                Some(a) => RecvAction::Reack(a),
                None => RecvAction::Abort(RmppStatus::Unspecified),
            };
        }
        if seg > MAX_SEGMENTS {
            return RecvAction::Abort(RmppStatus::ResourcesExhausted);
        }
        let Some(area) = mad.get(SA_DATA_OFFSET..MAD_LEN) else {
            return RecvAction::Abort(RmppStatus::Unspecified);
        };
        if seg == 1 {
            self.sa = Some(m.sa);
        }
        self.last = seg;
        if m.rmpp.flags.last() {
            // Linux `get_mad_len`: the last segment's PayloadLength counts the SA header plus its
            // data; anything out of range means a full segment.
            let n = (m.rmpp.payload_length() as usize)
                .checked_sub(SA_HEADER_LEN)
                .filter(|n| *n <= SA_DATA_LEN)
                .unwrap_or(SA_DATA_LEN);
            self.data.extend_from_slice(&area[..n]);
            self.complete = true;
        } else {
            self.data.extend_from_slice(area);
        }
        match ack_for(mad, seg, window_last(seg)) {
            Some(a) => RecvAction::Ack(a),
            None => RecvAction::Abort(RmppStatus::Unspecified),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipoib_wire::mad::{MadStatus, MgmtClass, BASE_VERSION, SA_CLASS_VERSION};

    fn header() -> MadHeaderRepr {
        MadHeaderRepr {
            base_version: BASE_VERSION,
            mgmt_class: MgmtClass::SubnAdm,
            class_version: SA_CLASS_VERSION,
            method: Method::GetTableResp,
            status: MadStatus::SUCCESS,
            class_specific: 0,
            transaction_id: 9,
            attribute_id: 0x35,
            attribute_modifier: 0,
        }
    }

    // IBA 1 §13.6.3: window, ACKs, reassembly; Linux mad_rmpp.c PayloadLength conventions.
    #[test]
    fn segments_window_and_reassembly() {
        let data: Vec<u8> = (0..450u32).map(|i| i as u8).collect();
        let segs = segment_table(header(), SaHeaderRepr::default(), &data);
        assert_eq!(segs.len(), 3);
        let now = Instant::ZERO;
        let to = MadAddr::gsi(2);
        let mut tx = RmppSender::new(now, to, segs.clone(), Duration::from_millis(200), 3);
        let first = tx.poll_segments(now);
        assert_eq!(first.len(), 1, "initial window is one segment");
        let mut rx = RmppReceiver::default();
        // Segment 2 before segment 1 is ignored, not fatal.
        assert_eq!(rx.on_data(&segs[1]), RecvAction::Ignore);
        let RecvAction::Ack(a) = rx.on_data(&first[0]) else {
            panic!()
        };
        assert_eq!(a[3], 0x12, "ACK flips the R bit of GetTableResp");
        let r = RmppRepr::parse(&ipoib_wire::mad::Rmpp::new_unchecked(&a[24..36])).unwrap();
        assert_eq!(
            (r.rmpp_type, r.data1, r.data2),
            (RmppType::Ack, 1, 1 + RECEIVE_WINDOW)
        );
        assert_eq!(tx.on_ack(now, r.data1, r.data2), SendState::Active);
        let rest = tx.poll_segments(now);
        assert_eq!(rest.len(), 2);
        assert!(matches!(rx.on_data(&rest[0]), RecvAction::Ack(_)));
        // A duplicate is re-acknowledged.
        assert!(matches!(rx.on_data(&rest[0]), RecvAction::Reack(_)));
        let RecvAction::Ack(last) = rx.on_data(&rest[1]) else {
            panic!()
        };
        assert!(rx.complete);
        assert_eq!(rx.data, data);
        let r = RmppRepr::parse(&ipoib_wire::mad::Rmpp::new_unchecked(&last[24..36])).unwrap();
        assert_eq!(tx.on_ack(now, r.data1, r.data2), SendState::Done);
        assert_eq!(
            r.data2,
            3 + RECEIVE_WINDOW,
            "the last ACK keeps the window (Linux mad_rmpp.c: a smaller one is an old ACK)"
        );
        // The completed transfer's segments again: re-acknowledged with the same window.
        let RecvAction::Reack(again) = rx.on_data(&rest[1]) else {
            panic!()
        };
        let r = RmppRepr::parse(&ipoib_wire::mad::Rmpp::new_unchecked(&again[24..36])).unwrap();
        assert_eq!((r.data1, r.data2), (3, 3 + RECEIVE_WINDOW));
        // Timeouts resend from the first unacknowledged segment, then give up.
        let mut tx = RmppSender::new(now, to, segs, Duration::from_millis(200), 2);
        tx.poll_segments(now);
        let t1 = now + Duration::from_millis(200);
        assert_eq!(tx.on_timeout(t1), SendState::Active);
        assert_eq!(tx.poll_segments(t1).len(), 1);
        assert_eq!(
            tx.on_timeout(t1 + Duration::from_millis(200)),
            SendState::Failed
        );
    }
}
