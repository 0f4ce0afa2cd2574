//! RTU, DREQ and DREP: the messages made of communication IDs and private data (attributes 0x0014,
//! 0x0015, 0x0016; IBA 1 §12.6, Tables 111, 112 and 113).

use crate::describe::{Describe, Describer, Value};
use crate::Result;

/// Length of the RTU and DREP private data (bytes 8..232 of the body).
pub const PRIVATE_DATA_LEN: usize = 224;
/// Length of the DREQ private data (bytes 12..232 of the body).
pub const DREQ_PRIVATE_DATA_LEN: usize = 220;

cm_view! {
    /// A view over an RTU body (IBA 1 §12.6, Table 111).
    pub struct RtuMsg;
    /// Local Communication ID (byte 0).
    local_comm_id, set_local_comm_id: u32[0];
    /// Remote Communication ID (byte 4).
    remote_comm_id, set_remote_comm_id: u32[4];
    /// Private Data, 224 bytes (byte 8).
    private_data, set_private_data: bytes[8, PRIVATE_DATA_LEN];
}

cm_view! {
    /// A view over a DREQ body (IBA 1 §12.6, Table 112).
    pub struct DreqMsg;
    /// Local Communication ID (byte 0).
    local_comm_id, set_local_comm_id: u32[0];
    /// Remote Communication ID (byte 4).
    remote_comm_id, set_remote_comm_id: u32[4];
    /// Remote QPN/EECN, 24 bits (byte 8).
    remote_qpn_eecn, set_remote_qpn_eecn: u24[8];
    /// Private Data, 220 bytes (byte 12).
    private_data, set_private_data: bytes[12, DREQ_PRIVATE_DATA_LEN];
}

cm_view! {
    /// A view over a DREP body (IBA 1 §12.6, Table 113).
    pub struct DrepMsg;
    /// Local Communication ID (byte 0).
    local_comm_id, set_local_comm_id: u32[0];
    /// Remote Communication ID (byte 4).
    remote_comm_id, set_remote_comm_id: u32[4];
    /// Private Data, 224 bytes (byte 8).
    private_data, set_private_data: bytes[8, PRIVATE_DATA_LEN];
}

/// Declares the representation of a message made of the two communication IDs and private data.
macro_rules! ids_and_private_data {
    ($(#[$m:meta])* $repr:ident, $msg:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $repr {
            /// Local Communication ID.
            pub local_comm_id: u32,
            /// Remote Communication ID.
            pub remote_comm_id: u32,
            /// Private Data, whole.
            pub private_data: [u8; PRIVATE_DATA_LEN],
        }

        impl $repr {
            /// Reads every field.
            pub fn parse<T: AsRef<[u8]> + ?Sized>(msg: &$msg<&T>) -> Result<$repr> {
                msg.check_len()?;
                let mut private_data = [0u8; PRIVATE_DATA_LEN];
                private_data.copy_from_slice(msg.private_data());
                Ok($repr {
                    local_comm_id: msg.local_comm_id(),
                    remote_comm_id: msg.remote_comm_id(),
                    private_data,
                })
            }

            /// The body length: always the whole MAD data area.
            pub const fn buffer_len(&self) -> usize {
                super::BODY_LEN
            }

            /// Writes all 232 bytes.
            pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, msg: &mut $msg<T>) {
                msg.clear();
                msg.set_local_comm_id(self.local_comm_id);
                msg.set_remote_comm_id(self.remote_comm_id);
                msg.set_private_data(&self.private_data);
            }
        }

        impl Describe for $repr {
            fn describe(&self, d: &mut dyn Describer) {
                d.field("local_comm_id", Value::Hex(self.local_comm_id.into(), 8));
                d.field("remote_comm_id", Value::Hex(self.remote_comm_id.into(), 8));
                d.field("private_data", Value::Bytes(&self.private_data));
            }
        }
    };
}

ids_and_private_data!(
    /// A parsed RTU, ReadyToUse (IBA 1 §12.6, Table 111).
    RtuRepr,
    RtuMsg
);
ids_and_private_data!(
    /// A parsed DREP, DisconnectReply (IBA 1 §12.6, Table 113).
    DrepRepr,
    DrepMsg
);

/// A parsed DREQ, DisconnectRequest (IBA 1 §12.6, Table 112).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DreqRepr {
    /// Local Communication ID.
    pub local_comm_id: u32,
    /// Remote Communication ID.
    pub remote_comm_id: u32,
    /// The receiver's QPN (or EECN for RD), 24 bits.
    pub remote_qpn_eecn: u32,
    /// Private Data, whole.
    pub private_data: [u8; DREQ_PRIVATE_DATA_LEN],
}

impl DreqRepr {
    /// Reads every field of a DREQ.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(msg: &DreqMsg<&T>) -> Result<DreqRepr> {
        msg.check_len()?;
        let mut private_data = [0u8; DREQ_PRIVATE_DATA_LEN];
        private_data.copy_from_slice(msg.private_data());
        Ok(DreqRepr {
            local_comm_id: msg.local_comm_id(),
            remote_comm_id: msg.remote_comm_id(),
            remote_qpn_eecn: msg.remote_qpn_eecn(),
            private_data,
        })
    }

    /// The body length: always the whole MAD data area.
    pub const fn buffer_len(&self) -> usize {
        super::BODY_LEN
    }

    /// Writes all 232 bytes, reserved fields zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, msg: &mut DreqMsg<T>) {
        msg.clear();
        msg.set_local_comm_id(self.local_comm_id);
        msg.set_remote_comm_id(self.remote_comm_id);
        msg.set_remote_qpn_eecn(self.remote_qpn_eecn);
        msg.set_private_data(&self.private_data);
    }
}

impl Describe for DreqRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("local_comm_id", Value::Hex(self.local_comm_id.into(), 8));
        d.field("remote_comm_id", Value::Hex(self.remote_comm_id.into(), 8));
        d.field(
            "remote_qpn_eecn",
            Value::Hex(self.remote_qpn_eecn.into(), 6),
        );
        d.field("private_data", Value::Bytes(&self.private_data));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cm::testutil::{body, describe};
    use crate::cm::BODY_LEN;

    fn ids_bytes() -> [u8; BODY_LEN] {
        body(&[
            (0, &[0x1a, 0x2b, 0x3c, 0x4d, 0x0a, 0x0b, 0x0c, 0x0d]),
            (8, &[0xab]),
            (231, &[0xcd]),
        ])
    }

    fn ids_private_data() -> [u8; PRIVATE_DATA_LEN] {
        let mut p = [0u8; PRIVATE_DATA_LEN];
        p[0] = 0xab;
        p[223] = 0xcd;
        p
    }

    // IBA 1 §12.6 Tables 111 and 113: comm IDs at bytes 0 and 4, private data from byte 8.
    #[test]
    fn rtu_and_drep() {
        let b = ids_bytes();
        let m = RtuMsg::new_checked(&b[..]).unwrap();
        assert_eq!(m.local_comm_id(), 0x1a2b_3c4d);
        assert_eq!(m.remote_comm_id(), 0x0a0b_0c0d);
        assert_eq!(m.private_data()[0], 0xab);
        let rtu = RtuRepr {
            local_comm_id: 0x1a2b_3c4d,
            remote_comm_id: 0x0a0b_0c0d,
            private_data: ids_private_data(),
        };
        assert_eq!(RtuRepr::parse(&m), Ok(rtu));
        let mut out = [0x11u8; BODY_LEN];
        rtu.emit(&mut RtuMsg::new_unchecked(&mut out[..]));
        assert_eq!(out, b);

        let drep = DrepRepr {
            local_comm_id: 0x1a2b_3c4d,
            remote_comm_id: 0x0a0b_0c0d,
            private_data: ids_private_data(),
        };
        assert_eq!(DrepRepr::parse(&DrepMsg::new_unchecked(&b[..])), Ok(drep));
        let mut out = [0u8; BODY_LEN];
        let mut m = DrepMsg::new_unchecked(&mut out[..]);
        m.set_local_comm_id(0x1a2b_3c4d);
        m.set_remote_comm_id(0x0a0b_0c0d);
        m.set_private_data(&ids_private_data());
        assert_eq!(out, b);
        assert_eq!(describe(&drep).get("remote_comm_id"), Some("0x0a0b0c0d"));
    }

    // IBA 1 §12.6 Table 112: Remote QPN/EECN at byte 8 (24 bits), private data from byte 12.
    #[test]
    fn dreq() {
        let b = body(&[
            (0, &[0x1a, 0x2b, 0x3c, 0x4d, 0x0a, 0x0b, 0x0c, 0x0d]),
            (8, &[0x00, 0x00, 0x53, 0x00, 0xee]),
        ]);
        let m = DreqMsg::new_checked(&b[..]).unwrap();
        assert_eq!(m.remote_qpn_eecn(), 0x53);
        assert_eq!(m.private_data()[0], 0xee);
        let mut private_data = [0u8; DREQ_PRIVATE_DATA_LEN];
        private_data[0] = 0xee;
        let r = DreqRepr {
            local_comm_id: 0x1a2b_3c4d,
            remote_comm_id: 0x0a0b_0c0d,
            remote_qpn_eecn: 0x53,
            private_data,
        };
        assert_eq!(DreqRepr::parse(&m), Ok(r));
        let mut out = [0x22u8; BODY_LEN];
        r.emit(&mut DreqMsg::new_unchecked(&mut out[..]));
        assert_eq!(out, b);
        let mut out = [0u8; BODY_LEN];
        let mut m = DreqMsg::new_unchecked(&mut out[..]);
        m.set_local_comm_id(0x1a2b_3c4d);
        m.set_remote_comm_id(0x0a0b_0c0d);
        m.set_remote_qpn_eecn(0x53);
        m.set_private_data(&[0xee]);
        assert_eq!(out, b);
        let c = describe(&r);
        assert_eq!(c.get("remote_qpn_eecn"), Some("0x000053"));
        assert_eq!(c.fields.len(), 4);
    }

    mod rtu {
        cm_props!(RtuRepr, RtuMsg);
    }
    mod dreq {
        cm_props!(DreqRepr, DreqMsg);
    }
    mod drep {
        cm_props!(DrepRepr, DrepMsg);
    }
}
