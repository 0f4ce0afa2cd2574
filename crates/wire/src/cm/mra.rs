//! MRA, MsgRcptAck (attribute 0x0011; IBA 1 §12.6, Table 107).

use super::common::RespondedTo;
use crate::describe::{Describe, Describer, Value};
use crate::Result;

/// Length of the MRA private data (bytes 10..232 of the body).
pub const PRIVATE_DATA_LEN: usize = 222;

cm_view! {
    /// A view over an MRA body (IBA 1 §12.6, Table 107).
    pub struct MraMsg;
    /// Local Communication ID (byte 0).
    local_comm_id, set_local_comm_id: u32[0];
    /// Remote Communication ID (byte 4).
    remote_comm_id, set_remote_comm_id: u32[4];
    /// Message MRAed, 2 bits (byte 8, bits 0..2): 0 REQ, 1 REP, 2 LAP.
    message_mraed, set_message_mraed: bits[8, 0xc0];
    /// Service Timeout, 5 bits (byte 9, bits 0..5).
    service_timeout, set_service_timeout: bits[9, 0xf8];
    /// Private Data, 222 bytes (byte 10).
    private_data, set_private_data: bytes[10, PRIVATE_DATA_LEN];
}

/// A parsed MRA (IBA 1 §12.6, Table 107).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MraRepr {
    /// Local Communication ID.
    pub local_comm_id: u32,
    /// Remote Communication ID.
    pub remote_comm_id: u32,
    /// The message being acknowledged (`Other` = LAP).
    pub message_mraed: RespondedTo,
    /// Service Timeout (5 bits, 4.096 us x 2^n): how much longer the sender needs.
    pub service_timeout: u8,
    /// Private Data, whole.
    pub private_data: [u8; PRIVATE_DATA_LEN],
}

impl MraRepr {
    /// Reads every field of an MRA.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(msg: &MraMsg<&T>) -> Result<MraRepr> {
        msg.check_len()?;
        let mut private_data = [0u8; PRIVATE_DATA_LEN];
        private_data.copy_from_slice(msg.private_data());
        Ok(MraRepr {
            local_comm_id: msg.local_comm_id(),
            remote_comm_id: msg.remote_comm_id(),
            message_mraed: msg.message_mraed().into(),
            service_timeout: msg.service_timeout(),
            private_data,
        })
    }

    /// The body length: always the whole MAD data area.
    pub const fn buffer_len(&self) -> usize {
        super::BODY_LEN
    }

    /// Writes all 232 bytes, reserved fields zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, msg: &mut MraMsg<T>) {
        msg.clear();
        msg.set_local_comm_id(self.local_comm_id);
        msg.set_remote_comm_id(self.remote_comm_id);
        msg.set_message_mraed(self.message_mraed.into());
        msg.set_service_timeout(self.service_timeout);
        msg.set_private_data(&self.private_data);
    }
}

impl Describe for MraRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("local_comm_id", Value::Hex(self.local_comm_id.into(), 8));
        d.field("remote_comm_id", Value::Hex(self.remote_comm_id.into(), 8));
        let m = self.message_mraed;
        d.field("message_mraed", Value::Named(u8::from(m).into(), m.name()));
        d.field("service_timeout", Value::Uint(self.service_timeout.into()));
        d.field("private_data", Value::Bytes(&self.private_data));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cm::testutil::{body, describe};
    use crate::cm::BODY_LEN;

    fn bytes() -> [u8; BODY_LEN] {
        body(&[
            (0, &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]),
            (8, &[0x40, 0xb0, 0xca, 0xfe]), // REP MRAed, service timeout 22, private data
            (231, &[0x01]),
        ])
    }

    fn repr() -> MraRepr {
        let mut private_data = [0u8; PRIVATE_DATA_LEN];
        private_data[0] = 0xca;
        private_data[1] = 0xfe;
        private_data[221] = 0x01;
        MraRepr {
            local_comm_id: 0x1122_3344,
            remote_comm_id: 0x5566_7788,
            message_mraed: RespondedTo::Rep,
            service_timeout: 22,
            private_data,
        }
    }

    // IBA 1 §12.6 Table 107: Message MRAed at byte 8 bits 0..2, Service Timeout at byte 9 bits 0..5.
    #[test]
    fn deconstruct() {
        let b = bytes();
        let m = MraMsg::new_checked(&b[..]).unwrap();
        assert_eq!(m.local_comm_id(), 0x1122_3344);
        assert_eq!(m.remote_comm_id(), 0x5566_7788);
        assert_eq!(m.message_mraed(), 1);
        assert_eq!(m.service_timeout(), 22);
        assert_eq!(m.private_data()[..2], [0xca, 0xfe]);
    }

    #[test]
    fn construct() {
        let mut b = [0u8; BODY_LEN];
        let mut m = MraMsg::new_unchecked(&mut b[..]);
        m.set_local_comm_id(0x1122_3344);
        m.set_remote_comm_id(0x5566_7788);
        m.set_message_mraed(1);
        m.set_service_timeout(22);
        m.set_private_data(&repr().private_data);
        assert_eq!(b, bytes());
    }

    #[test]
    fn parse_and_emit() {
        let b = bytes();
        assert_eq!(MraRepr::parse(&MraMsg::new_unchecked(&b[..])), Ok(repr()));
        let mut out = [0xffu8; BODY_LEN];
        repr().emit(&mut MraMsg::new_unchecked(&mut out[..]));
        assert_eq!(out, b);
        let c = describe(&repr());
        assert_eq!(c.get("message_mraed"), Some("REP (0x1)"));
        assert_eq!(c.get("service_timeout"), Some("22"));
        assert_eq!(c.fields.len(), 5);
    }

    cm_props!(MraRepr, MraMsg);
}
