//! SIDR_REQ, ServiceIDResReq, and SIDR_REP, ServiceIDResReqResp (attributes 0x0017 and 0x0018;
//! IBA 1 §12.6, Tables 119 and 120): resolving a service ID to a UD QPN and Q_Key.

use crate::describe::{Describe, Describer, Value};
use crate::keys::{PKey, QKey};
use crate::Result;

/// Length of the SIDR_REQ private data (bytes 16..232 of the body).
pub const SIDR_REQ_PRIVATE_DATA_LEN: usize = 216;
/// Length of the SIDR_REP ClassPortInfo / additional information field (bytes 24..96).
pub const CLASS_PORT_INFO_LEN: usize = 72;
/// Length of the SIDR_REP private data (bytes 96..232 of the body).
pub const SIDR_REP_PRIVATE_DATA_LEN: usize = 136;

cm_view! {
    /// A view over a SIDR_REQ body (IBA 1 §12.6, Table 119).
    pub struct SidrReqMsg;
    /// Request ID (byte 0).
    request_id, set_request_id: u32[0];
    /// Partition Key (byte 4).
    partition_key, set_partition_key: u16[4];
    /// Service ID (byte 8).
    service_id, set_service_id: u64[8];
    /// Private Data, 216 bytes (byte 16).
    private_data, set_private_data: bytes[16, SIDR_REQ_PRIVATE_DATA_LEN];
}

/// A parsed SIDR_REQ (IBA 1 §12.6, Table 119).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SidrReqRepr {
    /// Request ID, echoed in the SIDR_REP.
    pub request_id: u32,
    /// Partition Key.
    pub partition_key: PKey,
    /// Service ID to resolve.
    pub service_id: u64,
    /// Private Data, whole.
    pub private_data: [u8; SIDR_REQ_PRIVATE_DATA_LEN],
}

impl SidrReqRepr {
    /// Reads every field of a SIDR_REQ.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(msg: &SidrReqMsg<&T>) -> Result<SidrReqRepr> {
        msg.check_len()?;
        let mut private_data = [0u8; SIDR_REQ_PRIVATE_DATA_LEN];
        private_data.copy_from_slice(msg.private_data());
        Ok(SidrReqRepr {
            request_id: msg.request_id(),
            partition_key: PKey(msg.partition_key()),
            service_id: msg.service_id(),
            private_data,
        })
    }

    /// The body length: always the whole MAD data area.
    pub const fn buffer_len(&self) -> usize {
        super::BODY_LEN
    }

    /// Writes all 232 bytes, reserved fields zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, msg: &mut SidrReqMsg<T>) {
        msg.clear();
        msg.set_request_id(self.request_id);
        msg.set_partition_key(self.partition_key.0);
        msg.set_service_id(self.service_id);
        msg.set_private_data(&self.private_data);
    }
}

impl Describe for SidrReqRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("request_id", Value::Hex(self.request_id.into(), 8));
        d.field("partition_key", self.partition_key.into());
        d.field("service_id", Value::Hex(self.service_id, 16));
        d.field("private_data", Value::Bytes(&self.private_data));
    }
}

cm_view! {
    /// A view over a SIDR_REP body (IBA 1 §12.6, Table 120).
    pub struct SidrRepMsg;
    /// Request ID (byte 0).
    request_id, set_request_id: u32[0];
    /// Status (byte 4), see [`SidrStatus`].
    status, set_status: u8[4];
    /// Additional Information Length (byte 5).
    additional_information_length, set_additional_information_length: u8[5];
    /// Vendor ID bits 23..8 (bytes 6..8; Linux `CM_SIDR_REP_VENDOR_ID_H`).
    vendor_id_h, set_vendor_id_h: u16[6];
    /// QPN, 24 bits (byte 8).
    qpn, set_qpn: u24[8];
    /// Vendor ID bits 7..0 (byte 11).
    vendor_id_l, set_vendor_id_l: u8[11];
    /// Service ID (byte 12).
    service_id, set_service_id: u64[12];
    /// Q_Key (byte 20).
    qkey, set_qkey: u32[20];
    /// ClassPortInfo, the additional information of a redirect, 72 bytes (byte 24).
    class_port_info, set_class_port_info: bytes[24, CLASS_PORT_INFO_LEN];
    /// Private Data, 136 bytes (byte 96).
    private_data, set_private_data: bytes[96, SIDR_REP_PRIVATE_DATA_LEN];
}

impl<T: AsRef<[u8]>> SidrRepMsg<T> {
    /// The 24-bit vendor ID from bytes 6..8 and 11.
    pub fn vendor_id(&self) -> u32 {
        u32::from(self.vendor_id_h()) << 8 | u32::from(self.vendor_id_l())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SidrRepMsg<T> {
    /// Writes the 24-bit vendor ID into bytes 6..8 and 11.
    pub fn set_vendor_id(&mut self, v: u32) {
        let [_, h, m, l] = v.to_be_bytes();
        self.set_vendor_id_h(u16::from_be_bytes([h, m]));
        self.set_vendor_id_l(l);
    }
}

code_enum! {
    /// The Status of a SIDR_REP (IBA 1 §12.6, Table 120). Variant names follow Linux
    /// `enum ib_cm_sidr_status`; unknown codes are kept.
    pub enum SidrStatus(u8) {
        /// 0: QPN and Q_Key are valid.
        Success = 0 => "success",
        /// 1: service ID not supported.
        Unsupported = 1 => "unsupported",
        /// 2: rejected by the service provider.
        Reject = 2 => "reject",
        /// 3: no QP available.
        NoQp = 3 => "no QP",
        /// 4: redirect; ClassPortInfo is valid.
        Redirect = 4 => "redirect",
        /// 5: class version not supported.
        UnsupportedVersion = 5 => "unsupported version",
        /// Any other code, kept as is.
        Unknown(_) => "unknown",
    }
}

/// A parsed SIDR_REP (IBA 1 §12.6, Table 120).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SidrRepRepr {
    /// Request ID of the SIDR_REQ answered.
    pub request_id: u32,
    /// Status.
    pub status: SidrStatus,
    /// Additional Information Length, as received.
    pub additional_information_length: u8,
    /// Vendor ID (24 bits; zero unless enhanced connection establishment is used).
    pub vendor_id: u32,
    /// QPN of the service (24 bits).
    pub qpn: u32,
    /// Service ID resolved.
    pub service_id: u64,
    /// Q_Key of the service.
    pub qkey: QKey,
    /// ClassPortInfo (meaningful on redirect), all 72 bytes.
    pub class_port_info: [u8; CLASS_PORT_INFO_LEN],
    /// Private Data, whole.
    pub private_data: [u8; SIDR_REP_PRIVATE_DATA_LEN],
}

impl SidrRepRepr {
    /// Reads every field of a SIDR_REP.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(msg: &SidrRepMsg<&T>) -> Result<SidrRepRepr> {
        msg.check_len()?;
        let mut class_port_info = [0u8; CLASS_PORT_INFO_LEN];
        class_port_info.copy_from_slice(msg.class_port_info());
        let mut private_data = [0u8; SIDR_REP_PRIVATE_DATA_LEN];
        private_data.copy_from_slice(msg.private_data());
        Ok(SidrRepRepr {
            request_id: msg.request_id(),
            status: msg.status().into(),
            additional_information_length: msg.additional_information_length(),
            vendor_id: msg.vendor_id(),
            qpn: msg.qpn(),
            service_id: msg.service_id(),
            qkey: QKey(msg.qkey()),
            class_port_info,
            private_data,
        })
    }

    /// The body length: always the whole MAD data area.
    pub const fn buffer_len(&self) -> usize {
        super::BODY_LEN
    }

    /// Writes all 232 bytes, reserved fields zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, msg: &mut SidrRepMsg<T>) {
        msg.clear();
        msg.set_request_id(self.request_id);
        msg.set_status(self.status.into());
        msg.set_additional_information_length(self.additional_information_length);
        msg.set_vendor_id(self.vendor_id);
        msg.set_qpn(self.qpn);
        msg.set_service_id(self.service_id);
        msg.set_qkey(self.qkey.0);
        msg.set_class_port_info(&self.class_port_info);
        msg.set_private_data(&self.private_data);
    }
}

impl Describe for SidrRepRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("request_id", Value::Hex(self.request_id.into(), 8));
        let s = self.status;
        d.field("status", Value::Named(u8::from(s).into(), s.name()));
        d.field(
            "additional_information_length",
            Value::Uint(self.additional_information_length.into()),
        );
        d.field("vendor_id", Value::Hex(self.vendor_id.into(), 6));
        d.field("qpn", Value::Hex(self.qpn.into(), 6));
        d.field("service_id", Value::Hex(self.service_id, 16));
        d.field("q_key", self.qkey.into());
        d.field("class_port_info", Value::Bytes(&self.class_port_info));
        d.field("private_data", Value::Bytes(&self.private_data));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cm::testutil::{body, describe};
    use crate::cm::BODY_LEN;

    // IBA 1 §12.6 Table 119: Request ID byte 0, P_Key byte 4, Service ID byte 8, private data 16.
    #[test]
    fn sidr_req() {
        let b = body(&[
            (0, &[0x00, 0x00, 0x12, 0x34, 0xff, 0xff]),
            (8, &[0x00, 0x00, 0x00, 0x00, 0x01, 0x06, 0x13, 0x88]),
            (16, &[0x77]),
        ]);
        let m = SidrReqMsg::new_checked(&b[..]).unwrap();
        assert_eq!(m.request_id(), 0x1234);
        assert_eq!(m.partition_key(), 0xffff);
        assert_eq!(m.service_id(), 0x0106_1388);
        assert_eq!(m.private_data()[0], 0x77);
        let mut private_data = [0u8; SIDR_REQ_PRIVATE_DATA_LEN];
        private_data[0] = 0x77;
        let r = SidrReqRepr {
            request_id: 0x1234,
            partition_key: PKey::DEFAULT,
            service_id: 0x0106_1388,
            private_data,
        };
        assert_eq!(SidrReqRepr::parse(&m), Ok(r));
        let mut out = [0x33u8; BODY_LEN];
        r.emit(&mut SidrReqMsg::new_unchecked(&mut out[..]));
        assert_eq!(out, b);
        let mut out = [0u8; BODY_LEN];
        let mut m = SidrReqMsg::new_unchecked(&mut out[..]);
        m.set_request_id(0x1234);
        m.set_partition_key(0xffff);
        m.set_service_id(0x0106_1388);
        m.set_private_data(&[0x77]);
        assert_eq!(out, b);
        assert_eq!(describe(&r).get("service_id"), Some("0x0000000001061388"));
    }

    fn rep_bytes() -> [u8; BODY_LEN] {
        body(&[
            (0, &[0x00, 0x00, 0x12, 0x34, 0x00, 0x00, 0xab, 0xcd]), // ID, status 0, len 0, vendor
            (8, &[0x00, 0x00, 0x48, 0xef]),                         // QPN | vendor low
            (12, &[0x00, 0x00, 0x00, 0x00, 0x01, 0x06, 0x13, 0x88]),
            (20, &[0x80, 0x01, 0x00, 0x00]), // Q_Key
            (24, &[0x01]),
            (96, &[0x02]),
        ])
    }

    fn rep_repr() -> SidrRepRepr {
        let mut class_port_info = [0u8; CLASS_PORT_INFO_LEN];
        class_port_info[0] = 1;
        let mut private_data = [0u8; SIDR_REP_PRIVATE_DATA_LEN];
        private_data[0] = 2;
        SidrRepRepr {
            request_id: 0x1234,
            status: SidrStatus::Success,
            additional_information_length: 0,
            vendor_id: 0xab_cdef,
            qpn: 0x48,
            service_id: 0x0106_1388,
            qkey: QKey::GSI,
            class_port_info,
            private_data,
        }
    }

    // IBA 1 §12.6 Table 120: Status byte 4, info length byte 5, QPN byte 8, Service ID byte 12,
    // Q_Key byte 20, ClassPortInfo byte 24 (72 bytes), private data byte 96 (136 bytes).
    #[test]
    fn sidr_rep_deconstruct_construct() {
        let b = rep_bytes();
        let m = SidrRepMsg::new_checked(&b[..]).unwrap();
        assert_eq!(m.request_id(), 0x1234);
        assert_eq!(m.status(), 0);
        assert_eq!(m.additional_information_length(), 0);
        assert_eq!(m.vendor_id(), 0xab_cdef);
        assert_eq!(m.qpn(), 0x48);
        assert_eq!(m.service_id(), 0x0106_1388);
        assert_eq!(m.qkey(), 0x8001_0000);
        assert_eq!(m.class_port_info()[0], 1);
        assert_eq!(m.private_data()[0], 2);

        let mut out = [0u8; BODY_LEN];
        let mut m = SidrRepMsg::new_unchecked(&mut out[..]);
        m.set_request_id(0x1234);
        m.set_vendor_id(0xab_cdef);
        m.set_qpn(0x48);
        m.set_service_id(0x0106_1388);
        m.set_qkey(0x8001_0000);
        m.set_class_port_info(&[1]);
        m.set_private_data(&[2]);
        assert_eq!(out, b);
    }

    #[test]
    fn sidr_rep_parse_emit_describe() {
        let b = rep_bytes();
        assert_eq!(
            SidrRepRepr::parse(&SidrRepMsg::new_unchecked(&b[..])),
            Ok(rep_repr())
        );
        let mut out = [0xffu8; BODY_LEN];
        rep_repr().emit(&mut SidrRepMsg::new_unchecked(&mut out[..]));
        assert_eq!(out, b);
        let c = describe(&rep_repr());
        assert_eq!(c.get("status"), Some("success (0x0)"));
        assert_eq!(c.get("qpn"), Some("0x000048"));
        assert_eq!(c.fields.len(), 9);
    }

    #[test]
    fn sidr_status_codes() {
        for v in 0..=255u8 {
            assert_eq!(u8::from(SidrStatus::from(v)), v);
        }
        assert_eq!(SidrStatus::from(3), SidrStatus::NoQp);
        assert_eq!(SidrStatus::from(6), SidrStatus::Unknown(6));
    }

    mod req {
        cm_props!(SidrReqRepr, SidrReqMsg);
    }
    mod rep {
        cm_props!(SidrRepRepr, SidrRepMsg);
    }
}
