//! The 256-byte MAD and its common header (IBA 1 §13.4.2, Figure 145 in 1.3):
//!
//! ```text
//! 0  BaseVersion | MgmtClass | ClassVersion | R + Method
//! 4  Status(16)               | ClassSpecific(16)
//! 8  TransactionID(64)
//! 16 AttributeID(16)          | Reserved(16)
//! 20 AttributeModifier(32)
//! 24 data (232 bytes)
//! ```

use super::attr;
use super::codes::{MadStatus, Method, MgmtClass};
use super::{MAD_HEADER_LEN, MAD_LEN};
use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, be32, be64, put16, put32, put64};
use crate::{Error, Result};

mod field {
    use core::ops::Range;
    pub const BASE_VERSION: usize = 0;
    pub const MGMT_CLASS: usize = 1;
    pub const CLASS_VERSION: usize = 2;
    pub const METHOD: usize = 3;
    pub const STATUS: usize = 4;
    pub const CLASS_SPECIFIC: usize = 6;
    pub const TRANSACTION_ID: usize = 8;
    pub const ATTRIBUTE_ID: usize = 16;
    pub const RESERVED: usize = 18;
    pub const ATTRIBUTE_MODIFIER: usize = 20;
    pub const DATA: Range<usize> = 24..256;
}

fixed_view! {
    /// A zero-copy view of a MAD (IBA 1 §13.4.2).
    #[derive(Debug, Clone)]
    pub struct Mad;
    /// `Err(Truncated)` unless the buffer holds a whole 256-byte MAD (IBA 1 §13.4.1: every MAD is
    /// 256 bytes). Bytes beyond 256 are ignored.
    fn check_len(min = MAD_LEN);
}

impl<T: AsRef<[u8]>> Mad<T> {
    /// BaseVersion (1 for every MAD of IBA 1).
    pub fn base_version(&self) -> u8 {
        self.buffer.as_ref()[field::BASE_VERSION]
    }
    /// MgmtClass.
    pub fn mgmt_class(&self) -> MgmtClass {
        MgmtClass::from(self.buffer.as_ref()[field::MGMT_CLASS])
    }
    /// ClassVersion.
    pub fn class_version(&self) -> u8 {
        self.buffer.as_ref()[field::CLASS_VERSION]
    }
    /// The method, R bit included.
    pub fn method(&self) -> Method {
        Method::from(self.buffer.as_ref()[field::METHOD])
    }
    /// Status.
    pub fn status(&self) -> MadStatus {
        MadStatus(be16(self.buffer.as_ref(), field::STATUS))
    }
    /// ClassSpecific (the directed-route SMP fields, otherwise reserved).
    pub fn class_specific(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CLASS_SPECIFIC)
    }
    /// TransactionID.
    pub fn transaction_id(&self) -> u64 {
        be64(self.buffer.as_ref(), field::TRANSACTION_ID)
    }
    /// AttributeID.
    pub fn attribute_id(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ATTRIBUTE_ID)
    }
    /// The reserved 16 bits after AttributeID.
    pub fn reserved(&self) -> u16 {
        be16(self.buffer.as_ref(), field::RESERVED)
    }
    /// AttributeModifier.
    pub fn attribute_modifier(&self) -> u32 {
        be32(self.buffer.as_ref(), field::ATTRIBUTE_MODIFIER)
    }
    /// The 232 bytes after the common header (RMPP, class header and attribute, or a CM message).
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Mad<T> {
    /// Sets BaseVersion.
    pub fn set_base_version(&mut self, v: u8) {
        self.buffer.as_mut()[field::BASE_VERSION] = v;
    }
    /// Sets MgmtClass.
    pub fn set_mgmt_class(&mut self, v: MgmtClass) {
        self.buffer.as_mut()[field::MGMT_CLASS] = v.into();
    }
    /// Sets ClassVersion.
    pub fn set_class_version(&mut self, v: u8) {
        self.buffer.as_mut()[field::CLASS_VERSION] = v;
    }
    /// Sets the method (R bit included).
    pub fn set_method(&mut self, v: Method) {
        self.buffer.as_mut()[field::METHOD] = v.into();
    }
    /// Sets Status.
    pub fn set_status(&mut self, v: MadStatus) {
        put16(self.buffer.as_mut(), field::STATUS, v.0);
    }
    /// Sets ClassSpecific.
    pub fn set_class_specific(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CLASS_SPECIFIC, v);
    }
    /// Sets TransactionID.
    pub fn set_transaction_id(&mut self, v: u64) {
        put64(self.buffer.as_mut(), field::TRANSACTION_ID, v);
    }
    /// Sets AttributeID.
    pub fn set_attribute_id(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::ATTRIBUTE_ID, v);
    }
    /// Sets the reserved 16 bits.
    pub fn set_reserved(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::RESERVED, v);
    }
    /// Sets AttributeModifier.
    pub fn set_attribute_modifier(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::ATTRIBUTE_MODIFIER, v);
    }
    /// The data area, writable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }
}

/// The common MAD header (IBA 1 §13.4.2), every field but the reserved one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MadHeaderRepr {
    /// BaseVersion; [`super::BASE_VERSION`] in every MAD this crate builds. Parse keeps other values
    /// so that an agent can answer them with [`MadStatus::BAD_VERSION`] (IBA 1 §13.4.7).
    pub base_version: u8,
    /// MgmtClass.
    pub mgmt_class: MgmtClass,
    /// ClassVersion.
    pub class_version: u8,
    /// Method, R bit included.
    pub method: Method,
    /// Status.
    pub status: MadStatus,
    /// ClassSpecific.
    pub class_specific: u16,
    /// TransactionID.
    pub transaction_id: u64,
    /// AttributeID.
    pub attribute_id: u16,
    /// AttributeModifier.
    pub attribute_modifier: u32,
}

impl MadHeaderRepr {
    /// Reads the header of a checked MAD.
    pub fn parse<T: AsRef<[u8]>>(mad: &Mad<T>) -> Result<MadHeaderRepr> {
        mad.check_len()?;
        Ok(MadHeaderRepr {
            base_version: mad.base_version(),
            mgmt_class: mad.mgmt_class(),
            class_version: mad.class_version(),
            method: mad.method(),
            status: mad.status(),
            class_specific: mad.class_specific(),
            transaction_id: mad.transaction_id(),
            attribute_id: mad.attribute_id(),
            attribute_modifier: mad.attribute_modifier(),
        })
    }

    /// Reads the header from the first 24 bytes of `data` (a shorter MAD is `Truncated`).
    pub fn parse_bytes(data: &[u8]) -> Result<MadHeaderRepr> {
        // The view's getters only touch the first 24 bytes: on an array of 24, without a
        // bounds check each.
        let Some(h) = data.first_chunk::<MAD_HEADER_LEN>() else {
            return Err(Error::Truncated);
        };
        let m = Mad::new_unchecked(h);
        Ok(MadHeaderRepr {
            base_version: m.base_version(),
            mgmt_class: m.mgmt_class(),
            class_version: m.class_version(),
            method: m.method(),
            status: m.status(),
            class_specific: m.class_specific(),
            transaction_id: m.transaction_id(),
            attribute_id: m.attribute_id(),
            attribute_modifier: m.attribute_modifier(),
        })
    }

    /// The header's length, 24 bytes.
    pub const fn buffer_len(&self) -> usize {
        MAD_HEADER_LEN
    }

    /// Writes the header into the first 24 bytes of `buf` (reserved field zero). Panics if `buf` is
    /// shorter than 24 bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        let mut m = Mad::new_unchecked(&mut buf[..MAD_HEADER_LEN]);
        m.set_base_version(self.base_version);
        m.set_mgmt_class(self.mgmt_class);
        m.set_class_version(self.class_version);
        m.set_method(self.method);
        m.set_status(self.status);
        m.set_class_specific(self.class_specific);
        m.set_transaction_id(self.transaction_id);
        m.set_attribute_id(self.attribute_id);
        m.set_reserved(0);
        m.set_attribute_modifier(self.attribute_modifier);
    }

    /// The header of the response to this request: same class, versions, TID, attribute and
    /// modifier; `method` and `status` given (IBA 1 §13.4.6.2: a response echoes the TransactionID).
    pub fn response(&self, method: Method, status: MadStatus) -> MadHeaderRepr {
        MadHeaderRepr {
            method,
            status,
            ..*self
        }
    }
}

impl Describe for MadHeaderRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("base_version", Value::Uint(self.base_version.into()));
        d.field(
            "mgmt_class",
            Value::Named(u8::from(self.mgmt_class).into(), self.mgmt_class.name()),
        );
        d.field("class_version", Value::Uint(self.class_version.into()));
        d.field(
            "method",
            Value::Named(u8::from(self.method).into(), self.method.name()),
        );
        d.field(
            "status",
            Value::Named(self.status.0.into(), self.status.name(self.mgmt_class)),
        );
        d.field("class_specific", Value::Hex(self.class_specific.into(), 4));
        d.field("transaction_id", Value::Hex(self.transaction_id, 16));
        d.field(
            "attribute_id",
            Value::Named(
                self.attribute_id.into(),
                attr::name(self.mgmt_class, self.attribute_id),
            ),
        );
        d.field(
            "attribute_modifier",
            Value::Hex(self.attribute_modifier.into(), 8),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::mad::codes::SaStatus;
    use crate::mad::strategy::arb_header;
    use proptest::prelude::*;

    /// A SubnAdmGetResp header: class 3, version 2, status ERR_NO_RECORDS, TID 0x0102030405060708,
    /// attribute MCMemberRecord (0x0038), modifier 0 (IBA 1 §13.4.2).
    const HEADER: [u8; 24] = [
        0x01, 0x03, 0x02, 0x81, // base, class, class version, method
        0x03, 0x00, 0x00, 0x00, // status, class specific
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // TID
        0x00, 0x38, 0x00, 0x00, // attribute ID, reserved
        0x00, 0x00, 0x00, 0x00, // attribute modifier
    ];

    fn mad_bytes() -> [u8; 256] {
        let mut b = [0u8; 256];
        b[..24].copy_from_slice(&HEADER);
        b[24] = 0xaa;
        b[255] = 0x55;
        b
    }

    fn repr() -> MadHeaderRepr {
        MadHeaderRepr {
            base_version: 1,
            mgmt_class: MgmtClass::SubnAdm,
            class_version: 2,
            method: Method::GetResp,
            status: MadStatus::sa(SaStatus::NoRecords),
            class_specific: 0,
            transaction_id: 0x0102_0304_0506_0708,
            attribute_id: attr::sa::MC_MEMBER_RECORD,
            attribute_modifier: 0,
        }
    }

    // IBA 1 §13.4.2
    #[test]
    fn deconstruct() {
        let b = mad_bytes();
        let m = Mad::new_checked(&b[..]).unwrap();
        assert_eq!(m.base_version(), 1);
        assert_eq!(m.mgmt_class(), MgmtClass::SubnAdm);
        assert_eq!(m.class_version(), 2);
        assert_eq!(m.method(), Method::GetResp);
        assert_eq!(m.status().sa_status(), SaStatus::NoRecords);
        assert_eq!(m.class_specific(), 0);
        assert_eq!(m.transaction_id(), 0x0102_0304_0506_0708);
        assert_eq!(m.attribute_id(), 0x0038);
        assert_eq!(m.attribute_modifier(), 0);
        assert_eq!(m.data().len(), 232);
        assert_eq!(m.data()[0], 0xaa);
        assert_eq!(m.data()[231], 0x55);
    }

    // IBA 1 §13.4.2
    #[test]
    fn construct() {
        let mut b = [0u8; 256];
        let mut m = Mad::new_unchecked(&mut b[..]);
        m.set_base_version(1);
        m.set_mgmt_class(MgmtClass::SubnAdm);
        m.set_class_version(2);
        m.set_method(Method::GetResp);
        m.set_status(MadStatus(0x0300));
        m.set_class_specific(0);
        m.set_transaction_id(0x0102_0304_0506_0708);
        m.set_attribute_id(0x0038);
        m.set_reserved(0);
        m.set_attribute_modifier(0);
        m.data_mut()[0] = 0xaa;
        m.data_mut()[231] = 0x55;
        assert_eq!(b, mad_bytes());
    }

    // IBA 1 §13.4.2
    #[test]
    fn parse_and_emit() {
        let b = mad_bytes();
        let r = MadHeaderRepr::parse(&Mad::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(r, repr());
        assert_eq!(MadHeaderRepr::parse_bytes(&HEADER).unwrap(), repr());
        let mut out = [0xffu8; 24];
        r.emit(&mut out);
        assert_eq!(out, HEADER);
    }

    // IBA 1 §13.4.1
    #[test]
    fn short_mad_is_truncated() {
        assert_eq!(
            Mad::new_checked(&[0u8; 255][..]).err(),
            Some(Error::Truncated)
        );
        assert_eq!(
            MadHeaderRepr::parse_bytes(&[0u8; 23]),
            Err(Error::Truncated)
        );
    }

    // IBA 1 §13.4.6.2
    #[test]
    fn response_echoes_tid() {
        let req = MadHeaderRepr {
            method: Method::Set,
            status: MadStatus::SUCCESS,
            ..repr()
        };
        let resp = req.response(Method::GetResp, MadStatus::SUCCESS);
        assert_eq!(resp.transaction_id, req.transaction_id);
        assert_eq!(resp.attribute_id, req.attribute_id);
        assert_eq!(resp.method, Method::GetResp);
    }

    #[test]
    fn describe_names() {
        let mut c = Collect::default();
        repr().describe(&mut c);
        assert_eq!(c.get("method"), Some("GetResp (0x81)"));
        assert_eq!(c.get("status"), Some("ERR_NO_RECORDS (0x300)"));
        assert_eq!(c.get("attribute_id"), Some("MCMemberRecord (0x38)"));
        assert_eq!(c.get("mgmt_class"), Some("SubnAdm (0x3)"));
    }

    proptest! {
        #[test]
        fn emit_parse_identity(r in arb_header()) {
            let mut b = [0u8; 256];
            r.emit(&mut b);
            prop_assert_eq!(MadHeaderRepr::parse(&Mad::new_checked(&b[..]).unwrap()).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = MadHeaderRepr::parse_bytes(&data);
            if let Ok(m) = Mad::new_checked(&data[..]) {
                let _ = MadHeaderRepr::parse(&m);
                let _ = m.data();
            }
        }
    }
}
