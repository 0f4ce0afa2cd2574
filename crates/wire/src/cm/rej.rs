//! REJ, ConnectReject (attribute 0x0012; IBA 1 §12.6, Table 108) and its reason codes.

use super::common::RespondedTo;
use crate::describe::{Describe, Describer, Value};
use crate::Result;

/// Length of the Additional Rejection Information field (bytes 12..84 of the body).
pub const ARI_LEN: usize = 72;
/// Length of the REJ private data (bytes 84..232 of the body).
pub const PRIVATE_DATA_LEN: usize = 148;

cm_view! {
    /// A view over a REJ body (IBA 1 §12.6, Table 108).
    pub struct RejMsg;
    /// Local Communication ID (byte 0).
    local_comm_id, set_local_comm_id: u32[0];
    /// Remote Communication ID (byte 4).
    remote_comm_id, set_remote_comm_id: u32[4];
    /// Message REJected, 2 bits (byte 8, bits 0..2): 0 REQ, 1 REP, 2 other.
    message_rejected, set_message_rejected: bits[8, 0xc0];
    /// Reject Info Length, 7 bits (byte 9, bits 0..7): how many ARI bytes are meaningful.
    reject_info_length, set_reject_info_length: bits[9, 0xfe];
    /// Reason (byte 10), see [`RejReason`].
    reason, set_reason: u16[10];
    /// Additional Rejection Information, 72 bytes (byte 12).
    ari, set_ari: bytes[12, ARI_LEN];
    /// Private Data, 148 bytes (byte 84).
    private_data, set_private_data: bytes[84, PRIVATE_DATA_LEN];
}

code_enum! {
    /// The Reason of a REJ (IBA 1 §12.6, Table 108 and the reason table after it). Variant names
    /// follow Linux `enum ib_cm_rej_reason` (`include/rdma/ib_cm.h`); [`RejReason::name`] gives Linux's
    /// `ibcm_reject_msg()` text. Unknown codes are kept.
    pub enum RejReason(u16) {
        /// 1
        NoQp = 1 => "no QP",
        /// 2
        NoEec = 2 => "no EEC",
        /// 3
        NoResources = 3 => "no resources",
        /// 4: the REQ/REP timed out; the ARI carries the sender's CA GUID.
        Timeout = 4 => "timeout",
        /// 5
        Unsupported = 5 => "unsupported",
        /// 6
        InvalidCommId = 6 => "invalid comm ID",
        /// 7
        InvalidCommInstance = 7 => "invalid comm instance",
        /// 8: no listener for the service ID (Annex A11 CA11-8 uses it).
        InvalidServiceId = 8 => "invalid service ID",
        /// 9
        InvalidTransportType = 9 => "invalid transport type",
        /// 10
        StaleConn = 10 => "stale conn",
        /// 11
        RdcNotExist = 11 => "RDC not exist",
        /// 12: primary remote port GID rejected.
        InvalidGid = 12 => "invalid GID",
        /// 13: primary remote port LID rejected.
        InvalidLid = 13 => "invalid LID",
        /// 14
        InvalidSl = 14 => "invalid SL",
        /// 15
        InvalidTrafficClass = 15 => "invalid traffic class",
        /// 16
        InvalidHopLimit = 16 => "invalid hop limit",
        /// 17
        InvalidPacketRate = 17 => "invalid packet rate",
        /// 18
        InvalidAltGid = 18 => "invalid alt GID",
        /// 19
        InvalidAltLid = 19 => "invalid alt LID",
        /// 20
        InvalidAltSl = 20 => "invalid alt SL",
        /// 21
        InvalidAltTrafficClass = 21 => "invalid alt traffic class",
        /// 22
        InvalidAltHopLimit = 22 => "invalid alt hop limit",
        /// 23
        InvalidAltPacketRate = 23 => "invalid alt packet rate",
        /// 24: port and CM redirection; the ARI carries a ClassPortInfo.
        PortCmRedirect = 24 => "port CM redirect",
        /// 25: port redirection.
        PortRedirect = 25 => "port redirect",
        /// 26: invalid path MTU.
        InvalidMtu = 26 => "invalid MTU",
        /// 27: insufficient responder resources.
        InsufficientRespResources = 27 => "insufficient resp resources",
        /// 28: consumer reject; the ARI belongs to the consumer (Annex A11 §A11.7 partitions it).
        ConsumerDefined = 28 => "consumer defined",
        /// 29: RNR retry count rejected.
        InvalidRnrRetry = 29 => "invalid RNR retry",
        /// 30
        DuplicateLocalCommId = 30 => "duplicate local comm ID",
        /// 31: unsupported class version.
        InvalidClassVersion = 31 => "invalid class version",
        /// 32: invalid primary flow label.
        InvalidFlowLabel = 32 => "invalid flow label",
        /// 33: invalid alternate flow label.
        InvalidAltFlowLabel = 33 => "invalid alt flow label",
        /// 35: vendor option not supported (IBA comment 9434, enhanced connection establishment).
        VendorOptionNotSupported = 35 => "vendor option is not supported",
        /// Any other code, kept as is.
        Unknown(_) => "unrecognized reason",
    }
}

/// The named reasons, for the tests that walk them all.
#[cfg(test)]
const REASONS: [(u16, RejReason, &str); 34] = RejReason::KNOWN;

/// A parsed REJ (IBA 1 §12.6, Table 108).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RejRepr {
    /// Local Communication ID.
    pub local_comm_id: u32,
    /// Remote Communication ID (zero when the rejected REQ's ID is unknown, e.g. on timeout).
    pub remote_comm_id: u32,
    /// The message rejected.
    pub message_rejected: RespondedTo,
    /// Reject Info Length (7 bits). Kept as received even above 72; [`RejRepr::ari`] clamps it.
    pub reject_info_length: u8,
    /// Reason.
    pub reason: RejReason,
    /// Additional Rejection Information, all 72 bytes (only the first `reject_info_length` mean
    /// anything).
    pub ari: [u8; ARI_LEN],
    /// Private Data, whole.
    pub private_data: [u8; PRIVATE_DATA_LEN],
}

impl RejRepr {
    /// Reads every field of a REJ.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(msg: &RejMsg<&T>) -> Result<RejRepr> {
        msg.check_len()?;
        let mut ari = [0u8; ARI_LEN];
        ari.copy_from_slice(msg.ari());
        let mut private_data = [0u8; PRIVATE_DATA_LEN];
        private_data.copy_from_slice(msg.private_data());
        Ok(RejRepr {
            local_comm_id: msg.local_comm_id(),
            remote_comm_id: msg.remote_comm_id(),
            message_rejected: msg.message_rejected().into(),
            reject_info_length: msg.reject_info_length(),
            reason: msg.reason().into(),
            ari,
            private_data,
        })
    }

    /// The meaningful ARI bytes: the first `reject_info_length`, at most 72.
    pub fn ari(&self) -> &[u8] {
        &self.ari[..usize::from(self.reject_info_length).min(ARI_LEN)]
    }

    /// Sets the ARI and its length from `info`, truncated to 72 bytes, the rest zero.
    pub fn set_ari(&mut self, info: &[u8]) {
        let n = info.len().min(ARI_LEN);
        self.ari = [0; ARI_LEN];
        self.ari[..n].copy_from_slice(&info[..n]);
        // n <= 72 fits the 7-bit field.
        self.reject_info_length = n as u8;
    }

    /// The body length: always the whole MAD data area.
    pub const fn buffer_len(&self) -> usize {
        super::BODY_LEN
    }

    /// Writes all 232 bytes, reserved fields zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, msg: &mut RejMsg<T>) {
        msg.clear();
        msg.set_local_comm_id(self.local_comm_id);
        msg.set_remote_comm_id(self.remote_comm_id);
        msg.set_message_rejected(self.message_rejected.into());
        msg.set_reject_info_length(self.reject_info_length);
        msg.set_reason(self.reason.into());
        msg.set_ari(&self.ari);
        msg.set_private_data(&self.private_data);
    }
}

impl Describe for RejRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("local_comm_id", Value::Hex(self.local_comm_id.into(), 8));
        d.field("remote_comm_id", Value::Hex(self.remote_comm_id.into(), 8));
        let m = self.message_rejected;
        d.field(
            "message_rejected",
            Value::Named(u8::from(m).into(), m.name()),
        );
        d.field(
            "reject_info_length",
            Value::Uint(self.reject_info_length.into()),
        );
        let r = self.reason;
        d.field("reason", Value::Named(u16::from(r).into(), r.name()));
        d.field("ari", Value::Bytes(&self.ari));
        d.field("private_data", Value::Bytes(&self.private_data));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cm::testutil::{body, describe};
    use crate::cm::BODY_LEN;

    /// A REJ an Annex A11 server sends for an unsupported IP version: Consumer Reject (28), ARI
    /// `00 03` (RDMA IP CM Service layer, IPV) (Annex A11 §A11.7 Tables 4 and 5).
    fn bytes() -> [u8; BODY_LEN] {
        body(&[
            (0, &[0xaa, 0xbb, 0xcc, 0xdd, 0x1a, 0x2b, 0x3c, 0x4d]),
            (8, &[0x00, 0x04, 0x00, 0x1c]), // REQ rejected, info length 2, reason 28
            (12, &[0x00, 0x03]),
            (84, &[0x99]),
            (231, &[0x77]),
        ])
    }

    fn repr() -> RejRepr {
        let mut private_data = [0u8; PRIVATE_DATA_LEN];
        private_data[0] = 0x99;
        private_data[147] = 0x77;
        let mut r = RejRepr {
            local_comm_id: 0xaabb_ccdd,
            remote_comm_id: 0x1a2b_3c4d,
            message_rejected: RespondedTo::Req,
            reject_info_length: 0,
            reason: RejReason::ConsumerDefined,
            ari: [0; ARI_LEN],
            private_data,
        };
        r.set_ari(&[0x00, 0x03]);
        r
    }

    // IBA 1 §12.6 Table 108: Message REJected byte 8 bits 0..2, Reject Info Length byte 9 bits 0..7,
    // Reason at byte 10, ARI at byte 12 (72 bytes), private data at byte 84 (148 bytes).
    #[test]
    fn deconstruct() {
        let b = bytes();
        let m = RejMsg::new_checked(&b[..]).unwrap();
        assert_eq!(m.local_comm_id(), 0xaabb_ccdd);
        assert_eq!(m.remote_comm_id(), 0x1a2b_3c4d);
        assert_eq!(m.message_rejected(), 0);
        assert_eq!(m.reject_info_length(), 2);
        assert_eq!(m.reason(), 28);
        assert_eq!(m.ari()[..2], [0x00, 0x03]);
        assert_eq!(m.private_data()[0], 0x99);
        let mut b2 = b;
        b2[8] = 0x80; // "other"
        b2[9] = 0xff; // 127 plus a reserved bit
        let m = RejMsg::new_checked(&b2[..]).unwrap();
        assert_eq!(m.message_rejected(), 2);
        assert_eq!(m.reject_info_length(), 127);
    }

    #[test]
    fn construct() {
        let mut b = [0u8; BODY_LEN];
        let mut m = RejMsg::new_unchecked(&mut b[..]);
        m.set_local_comm_id(0xaabb_ccdd);
        m.set_remote_comm_id(0x1a2b_3c4d);
        m.set_message_rejected(0);
        m.set_reject_info_length(2);
        m.set_reason(28);
        m.set_ari(&[0x00, 0x03]);
        m.set_private_data(&repr().private_data);
        assert_eq!(b, bytes());
    }

    #[test]
    fn parse_and_emit() {
        let b = bytes();
        let r = RejRepr::parse(&RejMsg::new_unchecked(&b[..])).unwrap();
        assert_eq!(r, repr());
        assert_eq!(r.ari(), [0x00, 0x03]);
        let mut out = [0xffu8; BODY_LEN];
        r.emit(&mut RejMsg::new_unchecked(&mut out[..]));
        assert_eq!(out, b);
    }

    // A reject info length above 72 is kept but the meaningful ARI stops at 72 bytes.
    #[test]
    fn long_info_length_is_clamped() {
        let mut r = repr();
        r.reject_info_length = 100;
        assert_eq!(r.ari().len(), ARI_LEN);
        r.set_ari(&[1u8; 80]);
        assert_eq!(r.reject_info_length, 72);
    }

    // ib_cm.h enum ib_cm_rej_reason: 1..=33 and 35; 34 unassigned.
    #[test]
    fn reasons() {
        for (code, r, _) in REASONS {
            assert_eq!(RejReason::from(code), r);
            assert_eq!(u16::from(r), code);
        }
        assert_eq!(RejReason::from(8), RejReason::InvalidServiceId);
        assert_eq!(RejReason::from(10), RejReason::StaleConn);
        assert_eq!(RejReason::from(28), RejReason::ConsumerDefined);
        assert_eq!(RejReason::from(33), RejReason::InvalidAltFlowLabel);
        assert_eq!(RejReason::from(34), RejReason::Unknown(34));
        assert_eq!(RejReason::from(35), RejReason::VendorOptionNotSupported);
        assert_eq!(u16::from(RejReason::Unknown(0x1234)), 0x1234);
        assert_eq!(RejReason::Unknown(0).name(), "unrecognized reason");
        for v in 0..=u16::MAX {
            assert_eq!(u16::from(RejReason::from(v)), v);
        }
    }

    #[test]
    fn describe_fields() {
        let c = describe(&repr());
        assert_eq!(c.get("reason"), Some("consumer defined (0x1c)"));
        assert_eq!(c.get("message_rejected"), Some("REQ (0x0)"));
        assert_eq!(c.get("reject_info_length"), Some("2"));
        assert_eq!(c.get("ari").map(str::len), Some(2 * ARI_LEN));
        assert_eq!(c.fields.len(), 7);
    }

    cm_props!(RejRepr, RejMsg);
}
