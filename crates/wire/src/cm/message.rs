//! Any CM message, chosen by the MAD attribute ID (IBA 1 §12.6).

use super::*;
use crate::describe::{Describe, Describer, Value};
use crate::{Error, Result};

/// A parsed CM message of any kind. Every variant is `Copy` and holds its private data inline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmMessage {
    /// ConnectRequest (0x0010).
    Req(ReqRepr),
    /// MsgRcptAck (0x0011).
    Mra(MraRepr),
    /// ConnectReject (0x0012).
    Rej(RejRepr),
    /// ConnectReply (0x0013).
    Rep(RepRepr),
    /// ReadyToUse (0x0014).
    Rtu(RtuRepr),
    /// DisconnectRequest (0x0015).
    Dreq(DreqRepr),
    /// DisconnectReply (0x0016).
    Drep(DrepRepr),
    /// ServiceIDResReq (0x0017).
    SidrReq(SidrReqRepr),
    /// ServiceIDResReqResp (0x0018).
    SidrRep(SidrRepRepr),
    /// LoadAlternatePath (0x0019).
    Lap(LapRepr),
    /// AlternatePathResponse (0x001A).
    Apr(AprRepr),
}

impl CmMessage {
    /// Parses the 232-byte MAD data area `body` of a CM MAD whose attribute ID is `attribute_id`.
    /// Fails with `Unsupported` for attribute IDs that are not connection messages (ClassPortInfo
    /// included) and with `Truncated` for a body shorter than 232 bytes.
    pub fn parse(attribute_id: u16, body: &[u8]) -> Result<CmMessage> {
        if body.len() < BODY_LEN {
            // Report an unknown attribute first: that is the better reason to drop the MAD.
            return Err(if attr_name(attribute_id) == "Unknown" {
                Error::Unsupported
            } else {
                Error::Truncated
            });
        }
        Ok(match attribute_id {
            attr::REQ => CmMessage::Req(ReqRepr::parse(&ReqMsg::new_unchecked(body))?),
            attr::MRA => CmMessage::Mra(MraRepr::parse(&MraMsg::new_unchecked(body))?),
            attr::REJ => CmMessage::Rej(RejRepr::parse(&RejMsg::new_unchecked(body))?),
            attr::REP => CmMessage::Rep(RepRepr::parse(&RepMsg::new_unchecked(body))?),
            attr::RTU => CmMessage::Rtu(RtuRepr::parse(&RtuMsg::new_unchecked(body))?),
            attr::DREQ => CmMessage::Dreq(DreqRepr::parse(&DreqMsg::new_unchecked(body))?),
            attr::DREP => CmMessage::Drep(DrepRepr::parse(&DrepMsg::new_unchecked(body))?),
            attr::SIDR_REQ => {
                CmMessage::SidrReq(SidrReqRepr::parse(&SidrReqMsg::new_unchecked(body))?)
            }
            attr::SIDR_REP => {
                CmMessage::SidrRep(SidrRepRepr::parse(&SidrRepMsg::new_unchecked(body))?)
            }
            attr::LAP => CmMessage::Lap(LapRepr::parse(&LapMsg::new_unchecked(body))?),
            attr::APR => CmMessage::Apr(AprRepr::parse(&AprMsg::new_unchecked(body))?),
            _ => return Err(Error::Unsupported),
        })
    }

    /// The MAD attribute ID of this message.
    pub fn attribute_id(&self) -> u16 {
        match self {
            CmMessage::Req(_) => attr::REQ,
            CmMessage::Mra(_) => attr::MRA,
            CmMessage::Rej(_) => attr::REJ,
            CmMessage::Rep(_) => attr::REP,
            CmMessage::Rtu(_) => attr::RTU,
            CmMessage::Dreq(_) => attr::DREQ,
            CmMessage::Drep(_) => attr::DREP,
            CmMessage::SidrReq(_) => attr::SIDR_REQ,
            CmMessage::SidrRep(_) => attr::SIDR_REP,
            CmMessage::Lap(_) => attr::LAP,
            CmMessage::Apr(_) => attr::APR,
        }
    }

    /// The short name: "REQ", "REP", "SIDR_REQ", ...
    pub fn name(&self) -> &'static str {
        attr_name(self.attribute_id())
    }

    /// The sender's Local Communication ID, or the Request ID of a SIDR message.
    pub fn local_comm_id(&self) -> u32 {
        match self {
            CmMessage::Req(m) => m.local_comm_id,
            CmMessage::Mra(m) => m.local_comm_id,
            CmMessage::Rej(m) => m.local_comm_id,
            CmMessage::Rep(m) => m.local_comm_id,
            CmMessage::Rtu(m) => m.local_comm_id,
            CmMessage::Dreq(m) => m.local_comm_id,
            CmMessage::Drep(m) => m.local_comm_id,
            CmMessage::SidrReq(m) => m.request_id,
            CmMessage::SidrRep(m) => m.request_id,
            CmMessage::Lap(m) => m.local_comm_id,
            CmMessage::Apr(m) => m.local_comm_id,
        }
    }

    /// The Remote Communication ID, for the messages that carry one (all but REQ and SIDR).
    pub fn remote_comm_id(&self) -> Option<u32> {
        match self {
            CmMessage::Req(_) | CmMessage::SidrReq(_) | CmMessage::SidrRep(_) => None,
            CmMessage::Mra(m) => Some(m.remote_comm_id),
            CmMessage::Rej(m) => Some(m.remote_comm_id),
            CmMessage::Rep(m) => Some(m.remote_comm_id),
            CmMessage::Rtu(m) => Some(m.remote_comm_id),
            CmMessage::Dreq(m) => Some(m.remote_comm_id),
            CmMessage::Drep(m) => Some(m.remote_comm_id),
            CmMessage::Lap(m) => Some(m.remote_comm_id),
            CmMessage::Apr(m) => Some(m.remote_comm_id),
        }
    }

    /// The private data, whole (its length depends on the message kind).
    pub fn private_data(&self) -> &[u8] {
        match self {
            CmMessage::Req(m) => &m.private_data,
            CmMessage::Mra(m) => &m.private_data,
            CmMessage::Rej(m) => &m.private_data,
            CmMessage::Rep(m) => &m.private_data,
            CmMessage::Rtu(m) => &m.private_data,
            CmMessage::Dreq(m) => &m.private_data,
            CmMessage::Drep(m) => &m.private_data,
            CmMessage::SidrReq(m) => &m.private_data,
            CmMessage::SidrRep(m) => &m.private_data,
            CmMessage::Lap(m) => &m.private_data,
            CmMessage::Apr(m) => &m.private_data,
        }
    }

    /// The body length: always the whole MAD data area.
    pub const fn buffer_len(&self) -> usize {
        BODY_LEN
    }

    /// Writes the 232-byte body into `body[..232]` (the attribute ID goes in the MAD header:
    /// [`CmMessage::attribute_id`]). Fails with `Truncated` on a shorter buffer.
    pub fn emit(&self, body: &mut [u8]) -> Result<()> {
        if body.len() < BODY_LEN {
            return Err(Error::Truncated);
        }
        match self {
            CmMessage::Req(m) => m.emit(&mut ReqMsg::new_unchecked(body)),
            CmMessage::Mra(m) => m.emit(&mut MraMsg::new_unchecked(body)),
            CmMessage::Rej(m) => m.emit(&mut RejMsg::new_unchecked(body)),
            CmMessage::Rep(m) => m.emit(&mut RepMsg::new_unchecked(body)),
            CmMessage::Rtu(m) => m.emit(&mut RtuMsg::new_unchecked(body)),
            CmMessage::Dreq(m) => m.emit(&mut DreqMsg::new_unchecked(body)),
            CmMessage::Drep(m) => m.emit(&mut DrepMsg::new_unchecked(body)),
            CmMessage::SidrReq(m) => m.emit(&mut SidrReqMsg::new_unchecked(body)),
            CmMessage::SidrRep(m) => m.emit(&mut SidrRepMsg::new_unchecked(body)),
            CmMessage::Lap(m) => m.emit(&mut LapMsg::new_unchecked(body)),
            CmMessage::Apr(m) => m.emit(&mut AprMsg::new_unchecked(body)),
        }
        Ok(())
    }
}

/// `message_type` (the attribute ID and short name), then the message's own fields.
impl Describe for CmMessage {
    fn describe(&self, d: &mut dyn Describer) {
        d.field(
            "message_type",
            Value::Named(self.attribute_id().into(), self.name()),
        );
        match self {
            CmMessage::Req(m) => m.describe(d),
            CmMessage::Mra(m) => m.describe(d),
            CmMessage::Rej(m) => m.describe(d),
            CmMessage::Rep(m) => m.describe(d),
            CmMessage::Rtu(m) => m.describe(d),
            CmMessage::Dreq(m) => m.describe(d),
            CmMessage::Drep(m) => m.describe(d),
            CmMessage::SidrReq(m) => m.describe(d),
            CmMessage::SidrRep(m) => m.describe(d),
            CmMessage::Lap(m) => m.describe(d),
            CmMessage::Apr(m) => m.describe(d),
        }
    }
}

impl From<ReqRepr> for CmMessage {
    fn from(m: ReqRepr) -> Self {
        CmMessage::Req(m)
    }
}
impl From<MraRepr> for CmMessage {
    fn from(m: MraRepr) -> Self {
        CmMessage::Mra(m)
    }
}
impl From<RejRepr> for CmMessage {
    fn from(m: RejRepr) -> Self {
        CmMessage::Rej(m)
    }
}
impl From<RepRepr> for CmMessage {
    fn from(m: RepRepr) -> Self {
        CmMessage::Rep(m)
    }
}
impl From<RtuRepr> for CmMessage {
    fn from(m: RtuRepr) -> Self {
        CmMessage::Rtu(m)
    }
}
impl From<DreqRepr> for CmMessage {
    fn from(m: DreqRepr) -> Self {
        CmMessage::Dreq(m)
    }
}
impl From<DrepRepr> for CmMessage {
    fn from(m: DrepRepr) -> Self {
        CmMessage::Drep(m)
    }
}
impl From<SidrReqRepr> for CmMessage {
    fn from(m: SidrReqRepr) -> Self {
        CmMessage::SidrReq(m)
    }
}
impl From<SidrRepRepr> for CmMessage {
    fn from(m: SidrRepRepr) -> Self {
        CmMessage::SidrRep(m)
    }
}
impl From<LapRepr> for CmMessage {
    fn from(m: LapRepr) -> Self {
        CmMessage::Lap(m)
    }
}
impl From<AprRepr> for CmMessage {
    fn from(m: AprRepr) -> Self {
        CmMessage::Apr(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cm::testutil::describe;
    use proptest::prelude::*;

    const MESSAGE_IDS: [u16; 11] = [
        attr::REQ,
        attr::MRA,
        attr::REJ,
        attr::REP,
        attr::RTU,
        attr::DREQ,
        attr::DREP,
        attr::SIDR_REQ,
        attr::SIDR_REP,
        attr::LAP,
        attr::APR,
    ];

    // IBA 1 §12.6: each attribute ID selects its message layout.
    #[test]
    fn dispatch_by_attribute_id() {
        let body = [0u8; BODY_LEN];
        for id in MESSAGE_IDS {
            let m = CmMessage::parse(id, &body).unwrap();
            assert_eq!(m.attribute_id(), id);
            assert_eq!(m.name(), attr_name(id));
            assert_eq!(m.buffer_len(), BODY_LEN);
        }
        assert_eq!(
            CmMessage::parse(attr::CLASS_PORT_INFO, &body),
            Err(Error::Unsupported)
        );
        assert_eq!(CmMessage::parse(0x0020, &body), Err(Error::Unsupported));
        assert_eq!(
            CmMessage::parse(attr::REQ, &body[..231]),
            Err(Error::Truncated)
        );
        assert_eq!(
            CmMessage::parse(0x0020, &body[..10]),
            Err(Error::Unsupported)
        );
    }

    #[test]
    fn accessors_and_describe() {
        let mut body = [0u8; BODY_LEN];
        body[..8].copy_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2]);
        body[10..12].copy_from_slice(&[0, 10]);
        let m = CmMessage::parse(attr::REJ, &body).unwrap();
        assert_eq!(m.local_comm_id(), 1);
        assert_eq!(m.remote_comm_id(), Some(2));
        assert_eq!(m.private_data().len(), 148);
        let c = describe(&m);
        assert_eq!(
            c.fields[0],
            ("message_type".to_string(), "REJ (0x12)".to_string())
        );
        assert_eq!(c.get("reason"), Some("stale conn (0xa)"));
        let m = CmMessage::parse(attr::REQ, &body).unwrap();
        assert_eq!(m.remote_comm_id(), None);
        assert_eq!(m.private_data().len(), 92);
        let mut out = [0u8; BODY_LEN - 1];
        assert_eq!(m.emit(&mut out), Err(Error::Truncated));
    }

    proptest! {
        #[test]
        fn parse_never_panics(
            id in prop_oneof![0x0000u16..0x0030, any::<u16>()],
            data in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let _ = CmMessage::parse(id, &data);
        }

        #[test]
        fn emit_parse_round_trip(
            i in 0..MESSAGE_IDS.len(),
            body in proptest::collection::vec(any::<u8>(), BODY_LEN),
        ) {
            let id = MESSAGE_IDS[i];
            let m = CmMessage::parse(id, &body).unwrap();
            let mut out = [0u8; BODY_LEN + 8];
            m.emit(&mut out).unwrap();
            prop_assert_eq!(CmMessage::parse(id, &out).unwrap(), m);
            prop_assert_eq!(&out[BODY_LEN..], &[0u8; 8][..]);
        }
    }
}
