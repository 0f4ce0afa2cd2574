//! InformInfo (IBA 1 §13.4.8.3, Table 119 in 1.3), 36 bytes: a subscription to notices (sent to
//! the SA with SubnAdmSet). The generic form names a trap number and producer type; the vendor form
//! a device ID and vendor ID in the same bits:
//!
//! ```text
//! 0  GID(128)
//! 16 LIDRangeBegin(16) | LIDRangeEnd(16)
//! 20 Reserved(16) | IsGeneric(8) | Subscribe(8)
//! 24 Type(16) | TrapNumber or DeviceID(16)
//! 28 QPN(24) | Reserved(3) | RespTimeValue(5)
//! 32 Reserved(8) | ProducerType or VendorID(24)
//! ```

use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, be24, be32, put16, put24, put32, Gid};
use crate::Result;

mod field {
    pub const GID: usize = 0;
    pub const LID_RANGE_BEGIN: usize = 16;
    pub const LID_RANGE_END: usize = 18;
    pub const RESERVED1: usize = 20;
    pub const IS_GENERIC: usize = 22;
    pub const SUBSCRIBE: usize = 23;
    pub const TYPE: usize = 24;
    pub const TRAP_NUMBER: usize = 26;
    pub const QPN_RESP_TIME: usize = 28;
    pub const RESERVED2: usize = 32;
    pub const PRODUCER: usize = 33;
    pub const LEN: usize = 36;
}

fixed_view! {
    /// A zero-copy view of InformInfo.
    #[derive(Debug, Clone)]
    pub struct InformInfo;
    /// `Err(Truncated)` if shorter than 36 bytes.
    fn check_len(min = field::LEN);
    /// Size on the wire.
    pub const LEN;
}

impl<T: AsRef<[u8]>> InformInfo<T> {
    /// GID of the port whose notices are wanted (zero: use the LID range).
    pub fn gid(&self) -> Gid {
        Gid::from_bytes(&self.buffer.as_ref()[field::GID..])
    }
    /// LIDRangeBegin (0xFFFF: all ports).
    pub fn lid_range_begin(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LID_RANGE_BEGIN)
    }
    /// LIDRangeEnd.
    pub fn lid_range_end(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LID_RANGE_END)
    }
    /// IsGeneric (an 8-bit field; nonzero is true).
    pub fn is_generic(&self) -> bool {
        self.buffer.as_ref()[field::IS_GENERIC] != 0
    }
    /// Subscribe: 1 subscribe, 0 unsubscribe.
    pub fn subscribe(&self) -> bool {
        self.buffer.as_ref()[field::SUBSCRIBE] != 0
    }
    /// Type (16 bits; 0xFFFF: all types).
    pub fn notice_type(&self) -> u16 {
        be16(self.buffer.as_ref(), field::TYPE)
    }
    /// TrapNumber (generic) or DeviceID (vendor); 0xFFFF: all.
    pub fn trap_number_or_device_id(&self) -> u16 {
        be16(self.buffer.as_ref(), field::TRAP_NUMBER)
    }
    /// QPN (24 bits).
    pub fn qpn(&self) -> u32 {
        be32(self.buffer.as_ref(), field::QPN_RESP_TIME) >> 8
    }
    /// RespTimeValue (5 bits).
    pub fn resp_time_value(&self) -> u8 {
        self.buffer.as_ref()[field::QPN_RESP_TIME + 3] & 0x1f
    }
    /// ProducerType (generic) or VendorID (vendor), 24 bits; 0xFFFFFF: all.
    pub fn producer_type_or_vendor_id(&self) -> u32 {
        be24(self.buffer.as_ref(), field::PRODUCER)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> InformInfo<T> {
    /// Sets GID.
    pub fn set_gid(&mut self, g: Gid) {
        self.buffer.as_mut()[field::GID..field::GID + 16].copy_from_slice(g.as_bytes());
    }
    /// Sets LIDRangeBegin.
    pub fn set_lid_range_begin(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::LID_RANGE_BEGIN, v);
    }
    /// Sets LIDRangeEnd.
    pub fn set_lid_range_end(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::LID_RANGE_END, v);
    }
    /// Zeroes the reserved fields.
    pub fn clear_reserved(&mut self) {
        put16(self.buffer.as_mut(), field::RESERVED1, 0);
        self.buffer.as_mut()[field::RESERVED2] = 0;
    }
    /// Sets IsGeneric.
    pub fn set_is_generic(&mut self, v: bool) {
        self.buffer.as_mut()[field::IS_GENERIC] = v.into();
    }
    /// Sets Subscribe.
    pub fn set_subscribe(&mut self, v: bool) {
        self.buffer.as_mut()[field::SUBSCRIBE] = v.into();
    }
    /// Sets Type.
    pub fn set_notice_type(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::TYPE, v);
    }
    /// Sets TrapNumber or DeviceID.
    pub fn set_trap_number_or_device_id(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::TRAP_NUMBER, v);
    }
    /// Sets QPN (24 bits) and RespTimeValue (5 bits).
    pub fn set_qpn_resp_time(&mut self, qpn: u32, resp_time: u8) {
        put32(
            self.buffer.as_mut(),
            field::QPN_RESP_TIME,
            (qpn << 8) | u32::from(resp_time & 0x1f),
        );
    }
    /// Sets ProducerType or VendorID.
    pub fn set_producer_type_or_vendor_id(&mut self, v: u32) {
        put24(self.buffer.as_mut(), field::PRODUCER, v);
    }
}

/// InformInfo, every field (IBA 1 §13.4.8.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InformInfoRepr {
    /// GID.
    pub gid: Gid,
    /// LIDRangeBegin.
    pub lid_range_begin: u16,
    /// LIDRangeEnd.
    pub lid_range_end: u16,
    /// IsGeneric.
    pub is_generic: bool,
    /// Subscribe.
    pub subscribe: bool,
    /// Type (16 bits; see [`super::NoticeType`], 0xFFFF for all).
    pub notice_type: u16,
    /// TrapNumber (generic) or DeviceID (vendor).
    pub trap_number_or_device_id: u16,
    /// QPN (24 bits).
    pub qpn: u32,
    /// RespTimeValue (5 bits).
    pub resp_time_value: u8,
    /// ProducerType (generic) or VendorID (vendor), 24 bits.
    pub producer_type_or_vendor_id: u32,
}

impl InformInfoRepr {
    /// "All" in the 16-bit fields (LIDRangeBegin, Type, TrapNumber) (IBA 1 §13.4.8.3).
    pub const ALL_16: u16 = 0xffff;
    /// "All" in ProducerType/VendorID.
    pub const ALL_24: u32 = 0x00ff_ffff;

    /// A generic (un)subscription to trap `trap_number` from any port, any type and any producer
    /// (GID zero, LIDRangeBegin 0xFFFF), delivered to `qpn` (IBA 1 §13.4.8.3).
    pub fn generic(subscribe: bool, trap_number: u16, qpn: u32) -> InformInfoRepr {
        InformInfoRepr {
            gid: Gid::ZERO,
            lid_range_begin: Self::ALL_16,
            lid_range_end: 0,
            is_generic: true,
            subscribe,
            notice_type: Self::ALL_16,
            trap_number_or_device_id: trap_number,
            qpn,
            resp_time_value: 0,
            producer_type_or_vendor_id: Self::ALL_24,
        }
    }

    /// Reads every field from the first 36 bytes of `data`.
    pub fn parse(data: &[u8]) -> Result<InformInfoRepr> {
        let v = InformInfo::new_checked(data)?;
        Ok(InformInfoRepr {
            gid: v.gid(),
            lid_range_begin: v.lid_range_begin(),
            lid_range_end: v.lid_range_end(),
            is_generic: v.is_generic(),
            subscribe: v.subscribe(),
            notice_type: v.notice_type(),
            trap_number_or_device_id: v.trap_number_or_device_id(),
            qpn: v.qpn(),
            resp_time_value: v.resp_time_value(),
            producer_type_or_vendor_id: v.producer_type_or_vendor_id(),
        })
    }

    /// 36 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 36 bytes (reserved zero). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let mut v = InformInfo::new_unchecked(&mut buf[..field::LEN]);
        v.set_gid(self.gid);
        v.set_lid_range_begin(self.lid_range_begin);
        v.set_lid_range_end(self.lid_range_end);
        v.clear_reserved();
        v.set_is_generic(self.is_generic);
        v.set_subscribe(self.subscribe);
        v.set_notice_type(self.notice_type);
        v.set_trap_number_or_device_id(self.trap_number_or_device_id);
        v.set_qpn_resp_time(self.qpn, self.resp_time_value);
        v.set_producer_type_or_vendor_id(self.producer_type_or_vendor_id);
    }
}

impl Describe for InformInfoRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("gid", Value::Gid(self.gid));
        d.field(
            "lid_range_begin",
            Value::Hex(self.lid_range_begin.into(), 4),
        );
        d.field("lid_range_end", Value::Hex(self.lid_range_end.into(), 4));
        d.field("is_generic", Value::Bool(self.is_generic));
        d.field("subscribe", Value::Bool(self.subscribe));
        d.field("type", Value::Hex(self.notice_type.into(), 4));
        let (num, prod) = if self.is_generic {
            ("trap_number", "producer_type")
        } else {
            ("device_id", "vendor_id")
        };
        d.field(num, Value::Hex(self.trap_number_or_device_id.into(), 4));
        d.field("qpn", Value::Hex(self.qpn.into(), 6));
        d.field("resp_time_value", Value::Uint(self.resp_time_value.into()));
        d.field(prod, Value::Hex(self.producer_type_or_vendor_id.into(), 6));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::mad::strategy::arb_gid;
    use crate::Error;
    use proptest::prelude::*;

    /// Subscribe to trap 66 from everyone, notices to QP 1, RespTimeValue 19 (IBA 1 §13.4.8.3).
    fn bytes() -> [u8; 36] {
        let mut b = [0u8; 36];
        b[16..20].copy_from_slice(&[0xff, 0xff, 0x00, 0x00]);
        b[20..24].copy_from_slice(&[0x00, 0x00, 0x01, 0x01]);
        b[24..28].copy_from_slice(&[0xff, 0xff, 0x00, 0x42]);
        b[28..32].copy_from_slice(&[0x00, 0x00, 0x01, 0x13]);
        b[32..36].copy_from_slice(&[0x00, 0xff, 0xff, 0xff]);
        b
    }

    fn repr() -> InformInfoRepr {
        InformInfoRepr {
            resp_time_value: 19,
            ..InformInfoRepr::generic(true, 66, 1)
        }
    }

    // IBA 1 §13.4.8.3
    #[test]
    fn deconstruct() {
        let b = bytes();
        let v = InformInfo::new_checked(&b[..]).unwrap();
        assert_eq!(v.gid(), Gid::ZERO);
        assert_eq!(v.lid_range_begin(), 0xffff);
        assert_eq!(v.lid_range_end(), 0);
        assert!(v.is_generic());
        assert!(v.subscribe());
        assert_eq!(v.notice_type(), 0xffff);
        assert_eq!(v.trap_number_or_device_id(), 66);
        assert_eq!(v.qpn(), 1);
        assert_eq!(v.resp_time_value(), 19);
        assert_eq!(v.producer_type_or_vendor_id(), 0xff_ffff);
    }

    // IBA 1 §13.4.8.3
    #[test]
    fn construct_parse_emit() {
        let mut b = [0u8; 36];
        let mut v = InformInfo::new_unchecked(&mut b[..]);
        v.set_gid(Gid::ZERO);
        v.set_lid_range_begin(0xffff);
        v.set_lid_range_end(0);
        v.clear_reserved();
        v.set_is_generic(true);
        v.set_subscribe(true);
        v.set_notice_type(0xffff);
        v.set_trap_number_or_device_id(66);
        v.set_qpn_resp_time(1, 19);
        v.set_producer_type_or_vendor_id(0xff_ffff);
        assert_eq!(b, bytes());
        assert_eq!(InformInfoRepr::parse(&bytes()).unwrap(), repr());
        let mut out = [0xaau8; 36];
        repr().emit(&mut out);
        assert_eq!(out, bytes());
        assert_eq!(InformInfoRepr::parse(&[0u8; 35]), Err(Error::Truncated));
    }

    // IBA 1 §13.4.8.3: the vendor form reuses the generic form's bits.
    #[test]
    fn vendor_form_names() {
        let r = InformInfoRepr {
            is_generic: false,
            trap_number_or_device_id: 0x1234,
            producer_type_or_vendor_id: 0x0002c9,
            ..repr()
        };
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.get("device_id"), Some("0x1234"));
        assert_eq!(c.get("vendor_id"), Some("0x0002c9"));
        assert_eq!(c.get("trap_number"), None);
    }

    fn arb() -> impl Strategy<Value = InformInfoRepr> {
        (
            (
                arb_gid(),
                any::<u16>(),
                any::<u16>(),
                any::<bool>(),
                any::<bool>(),
            ),
            (
                any::<u16>(),
                any::<u16>(),
                0u32..1 << 24,
                0u8..32,
                0u32..1 << 24,
            ),
        )
            .prop_map(|((g, lb, le, ig, s), (t, tn, q, rt, p))| InformInfoRepr {
                gid: g,
                lid_range_begin: lb,
                lid_range_end: le,
                is_generic: ig,
                subscribe: s,
                notice_type: t,
                trap_number_or_device_id: tn,
                qpn: q,
                resp_time_value: rt,
                producer_type_or_vendor_id: p,
            })
    }

    proptest! {
        #[test]
        fn emit_parse_identity(r in arb()) {
            let mut b = [0u8; 36];
            r.emit(&mut b);
            prop_assert_eq!(InformInfoRepr::parse(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = InformInfoRepr::parse(&data);
        }
    }
}
