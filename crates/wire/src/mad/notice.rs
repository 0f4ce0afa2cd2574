//! Notice (IBA 1 §13.4.8.2, Table 116 in 1.3), 80 bytes: the body of a Trap() or Report(), e.g.
//! OpenSM's traps 64/65 (GID in/out of service) and 66/67 (multicast group created/deleted):
//!
//! ```text
//! 0  IsGeneric(1) | Type(7) | ProducerType or VendorID(24)
//! 4  TrapNumber or DeviceID(16) | IssuerLID(16)
//! 8  NoticeToggle(1) | NoticeCount(15) | DataDetails (54 bytes, to 64)
//! 64 IssuerGID(128)
//! ```
//!
//! For traps 64-67 DataDetails holds 6 reserved bytes, then the GID (IBA 1 §14.2.5.1 Table 130;
//! OpenSM `ntc_64_67`; wireshark's `parse_NoticeDataDetails`).

use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, be24, put16, put24, Gid};
use crate::Result;

mod field {
    use core::ops::Range;
    pub const GENERIC_TYPE: usize = 0;
    pub const PRODUCER: usize = 1;
    pub const TRAP_NUMBER: usize = 4;
    pub const ISSUER_LID: usize = 6;
    pub const TOGGLE_COUNT: usize = 8;
    pub const DATA_DETAILS: Range<usize> = 10..64;
    pub const ISSUER_GID: usize = 64;
    pub const LEN: usize = 80;
    /// Offset of the GID inside DataDetails for traps 64-67.
    pub const TRAP_GID_IN_DETAILS: usize = 6;
}

code_enum! {
    /// Notice Type (IBA 1 §13.4.8.2 Table 117 in 1.3).
    pub enum NoticeType(u8) {
        /// Fatal.
        Fatal = 0 => "Fatal",
        /// Urgent.
        Urgent = 1 => "Urgent",
        /// Security.
        Security = 2 => "Security",
        /// Subnet management.
        SubnMgmt = 3 => "SubnMgmt",
        /// Informational.
        Info = 4 => "Info",
        /// Empty notice (no notice queued).
        Empty = 0x7f => "Empty",
        /// A value this crate has no name for, kept as received.
        Unknown(_) => "Unknown",
    }
}

code_enum! {
    /// ProducerType of a generic notice (IBA 1 §13.4.8.2 Table 118 in 1.3), 24 bits.
    pub enum ProducerType(u32) {
        /// Channel adapter.
        Ca = 1 => "CA",
        /// Switch.
        Switch = 2 => "Switch",
        /// Router.
        Router = 3 => "Router",
        /// Class manager (the SM/SA).
        ClassManager = 4 => "ClassManager",
        /// A value this crate has no name for, kept as received.
        Unknown(_) => "Unknown",
    }
}

fixed_view! {
    /// A zero-copy view of a Notice.
    #[derive(Debug, Clone)]
    pub struct Notice;
    /// `Err(Truncated)` if shorter than 80 bytes.
    fn check_len(min = field::LEN);
    /// Size on the wire.
    pub const LEN;
}

impl<T: AsRef<[u8]>> Notice<T> {
    /// IsGeneric.
    pub fn is_generic(&self) -> bool {
        self.buffer.as_ref()[field::GENERIC_TYPE] & 0x80 != 0
    }
    /// Type (7 bits).
    pub fn notice_type(&self) -> NoticeType {
        NoticeType::from(self.buffer.as_ref()[field::GENERIC_TYPE] & 0x7f)
    }
    /// ProducerType (generic) or VendorID (vendor), 24 bits.
    pub fn producer_type_or_vendor_id(&self) -> u32 {
        be24(self.buffer.as_ref(), field::PRODUCER)
    }
    /// TrapNumber (generic) or DeviceID (vendor).
    pub fn trap_number_or_device_id(&self) -> u16 {
        be16(self.buffer.as_ref(), field::TRAP_NUMBER)
    }
    /// IssuerLID.
    pub fn issuer_lid(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ISSUER_LID)
    }
    /// NoticeToggle.
    pub fn notice_toggle(&self) -> bool {
        self.buffer.as_ref()[field::TOGGLE_COUNT] & 0x80 != 0
    }
    /// NoticeCount (15 bits).
    pub fn notice_count(&self) -> u16 {
        be16(self.buffer.as_ref(), field::TOGGLE_COUNT) & 0x7fff
    }
    /// DataDetails (54 bytes).
    pub fn data_details(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA_DETAILS]
    }
    /// IssuerGID.
    pub fn issuer_gid(&self) -> Gid {
        Gid::from_bytes(&self.buffer.as_ref()[field::ISSUER_GID..])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Notice<T> {
    /// Sets IsGeneric and Type.
    pub fn set_generic_type(&mut self, is_generic: bool, t: NoticeType) {
        self.buffer.as_mut()[field::GENERIC_TYPE] =
            (u8::from(is_generic) << 7) | (u8::from(t) & 0x7f);
    }
    /// Sets ProducerType or VendorID.
    pub fn set_producer_type_or_vendor_id(&mut self, v: u32) {
        put24(self.buffer.as_mut(), field::PRODUCER, v);
    }
    /// Sets TrapNumber or DeviceID.
    pub fn set_trap_number_or_device_id(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::TRAP_NUMBER, v);
    }
    /// Sets IssuerLID.
    pub fn set_issuer_lid(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::ISSUER_LID, v);
    }
    /// Sets NoticeToggle and NoticeCount.
    pub fn set_toggle_count(&mut self, toggle: bool, count: u16) {
        put16(
            self.buffer.as_mut(),
            field::TOGGLE_COUNT,
            (u16::from(toggle) << 15) | (count & 0x7fff),
        );
    }
    /// DataDetails, writable.
    pub fn data_details_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA_DETAILS]
    }
    /// Sets IssuerGID.
    pub fn set_issuer_gid(&mut self, g: Gid) {
        self.buffer.as_mut()[field::ISSUER_GID..field::ISSUER_GID + 16]
            .copy_from_slice(g.as_bytes());
    }
}

/// A Notice, every field (IBA 1 §13.4.8.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NoticeRepr {
    /// IsGeneric.
    pub is_generic: bool,
    /// Type.
    pub notice_type: NoticeType,
    /// ProducerType (generic, see [`ProducerType`]) or VendorID (vendor), 24 bits.
    pub producer_type_or_vendor_id: u32,
    /// TrapNumber (generic) or DeviceID (vendor).
    pub trap_number_or_device_id: u16,
    /// IssuerLID.
    pub issuer_lid: u16,
    /// NoticeToggle.
    pub notice_toggle: bool,
    /// NoticeCount (15 bits).
    pub notice_count: u16,
    /// DataDetails.
    pub data_details: [u8; 54],
    /// IssuerGID.
    pub issuer_gid: Gid,
}

impl NoticeRepr {
    /// Trap 64: a GID is in service (IBA 1 §14.2.5.1 Table 130).
    pub const TRAP_GID_IN_SERVICE: u16 = 64;
    /// Trap 65: a GID is out of service.
    pub const TRAP_GID_OUT_OF_SERVICE: u16 = 65;
    /// Trap 66: a multicast group was created (IBA 1 o14-12.1.11).
    pub const TRAP_MCAST_GROUP_CREATED: u16 = 66;
    /// Trap 67: a multicast group was deleted (IBA 1 o14-12.1.12).
    pub const TRAP_MCAST_GROUP_DELETED: u16 = 67;

    /// A generic subnet-management notice from the class manager carrying `gid` in DataDetails,
    /// as OpenSM builds traps 64-67 (`mgrp_send_notice`, `state_mgr_report_new_ports`):
    /// IsGeneric 1, Type SubnMgmt, ProducerType ClassManager, toggle/count 0, issuer the SM.
    pub fn gid_trap(trap_number: u16, gid: Gid, issuer_lid: u16, issuer_gid: Gid) -> NoticeRepr {
        let mut data_details = [0u8; 54];
        data_details[field::TRAP_GID_IN_DETAILS..field::TRAP_GID_IN_DETAILS + 16]
            .copy_from_slice(gid.as_bytes());
        NoticeRepr {
            is_generic: true,
            notice_type: NoticeType::SubnMgmt,
            producer_type_or_vendor_id: ProducerType::ClassManager.into(),
            trap_number_or_device_id: trap_number,
            issuer_lid,
            notice_toggle: false,
            notice_count: 0,
            data_details,
            issuer_gid,
        }
    }

    /// Trap 128: the link state of at least one port of a switch changed (IBA 1 §14.2.5.1
    /// Table 131, "LIDADDR" in DataDetails bytes 0-1).
    pub const TRAP_LINK_STATE_CHANGED: u16 = 128;
    /// Trap 256: an SMP carried a bad M_Key (IBA 1 §14.2.5.1 Table 131).
    pub const TRAP_BAD_M_KEY: u16 = 256;
    /// Trap 257: a packet carried a bad P_Key (IBA 1 §14.2.5.1 Table 131).
    pub const TRAP_BAD_P_KEY: u16 = 257;
    /// Trap 258: a datagram carried a bad Q_Key (IBA 1 §14.2.5.1 Table 131).
    pub const TRAP_BAD_Q_KEY: u16 = 258;

    /// Trap 128 from the switch at `switch_lid`, as a switch SMA sends it (IBA 1 §14.2.5.1):
    /// IsGeneric 1, Type Urgent, ProducerType Switch, DataDetails LIDADDR = the switch's LID.
    pub fn link_state_trap(switch_lid: u16) -> NoticeRepr {
        let mut data_details = [0u8; 54];
        data_details[..2].copy_from_slice(&switch_lid.to_be_bytes());
        NoticeRepr {
            is_generic: true,
            notice_type: NoticeType::Urgent,
            producer_type_or_vendor_id: ProducerType::Switch.into(),
            trap_number_or_device_id: Self::TRAP_LINK_STATE_CHANGED,
            issuer_lid: switch_lid,
            notice_toggle: false,
            notice_count: 0,
            data_details,
            issuer_gid: Gid::new(0, 0),
        }
    }

    /// The LIDADDR of a trap 128 (DataDetails bytes 0-1).
    pub fn trap_lid_addr(&self) -> Option<u16> {
        (self.trap_number()? == Self::TRAP_LINK_STATE_CHANGED).then(|| be16(&self.data_details, 0))
    }

    /// The trap number of a generic notice.
    pub fn trap_number(&self) -> Option<u16> {
        self.is_generic.then_some(self.trap_number_or_device_id)
    }

    /// The producer type of a generic notice.
    pub fn producer_type(&self) -> Option<ProducerType> {
        self.is_generic
            .then(|| ProducerType::from(self.producer_type_or_vendor_id))
    }

    /// The GID of a generic trap 64, 65, 66 or 67 (DataDetails bytes 6-21).
    pub fn trap_gid(&self) -> Option<Gid> {
        match self.trap_number()? {
            64..=67 => Some(Gid::from_bytes(
                &self.data_details[field::TRAP_GID_IN_DETAILS..],
            )),
            _ => None,
        }
    }

    /// Reads every field from the first 80 bytes of `data`.
    pub fn parse(data: &[u8]) -> Result<NoticeRepr> {
        let v = Notice::new_checked(data)?;
        let mut data_details = [0u8; 54];
        data_details.copy_from_slice(v.data_details());
        Ok(NoticeRepr {
            is_generic: v.is_generic(),
            notice_type: v.notice_type(),
            producer_type_or_vendor_id: v.producer_type_or_vendor_id(),
            trap_number_or_device_id: v.trap_number_or_device_id(),
            issuer_lid: v.issuer_lid(),
            notice_toggle: v.notice_toggle(),
            notice_count: v.notice_count(),
            data_details,
            issuer_gid: v.issuer_gid(),
        })
    }

    /// 80 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 80 bytes. Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let mut v = Notice::new_unchecked(&mut buf[..field::LEN]);
        v.set_generic_type(self.is_generic, self.notice_type);
        v.set_producer_type_or_vendor_id(self.producer_type_or_vendor_id);
        v.set_trap_number_or_device_id(self.trap_number_or_device_id);
        v.set_issuer_lid(self.issuer_lid);
        v.set_toggle_count(self.notice_toggle, self.notice_count);
        v.data_details_mut().copy_from_slice(&self.data_details);
        v.set_issuer_gid(self.issuer_gid);
    }
}

fn trap_name(n: u16) -> &'static str {
    match n {
        64 => "GidInService",
        65 => "GidOutOfService",
        66 => "McastGroupCreated",
        67 => "McastGroupDeleted",
        68 => "Unpath",
        69 => "Repath",
        128 => "LinkStateChanged",
        129 => "LocalLinkIntegrityThreshold",
        130 => "ExcessiveBufferOverrunThreshold",
        131 => "FlowControlUpdateWatchdog",
        144 => "CapabilityMaskChanged",
        145 => "SystemImageGuidChanged",
        256 => "BadMKey",
        257 => "BadPKey",
        258 => "BadQKey",
        259 => "BadPKeyAtSwitch",
        _ => "Unknown",
    }
}

impl Describe for NoticeRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("is_generic", Value::Bool(self.is_generic));
        d.field(
            "type",
            Value::Named(u8::from(self.notice_type).into(), self.notice_type.name()),
        );
        if let Some(p) = self.producer_type() {
            d.field(
                "producer_type",
                Value::Named(self.producer_type_or_vendor_id.into(), p.name()),
            );
            d.field(
                "trap_number",
                Value::Named(
                    self.trap_number_or_device_id.into(),
                    trap_name(self.trap_number_or_device_id),
                ),
            );
        } else {
            d.field(
                "vendor_id",
                Value::Hex(self.producer_type_or_vendor_id.into(), 6),
            );
            d.field(
                "device_id",
                Value::Hex(self.trap_number_or_device_id.into(), 4),
            );
        }
        d.field("issuer_lid", Value::Hex(self.issuer_lid.into(), 4));
        d.field("notice_toggle", Value::Bool(self.notice_toggle));
        d.field("notice_count", Value::Uint(self.notice_count.into()));
        match (self.trap_gid(), self.trap_lid_addr()) {
            (Some(g), _) => d.field("gid", Value::Gid(g)),
            (None, Some(l)) => d.field("lid_addr", Value::Hex(l.into(), 4)),
            (None, None) => match (
                super::BadMKeyTrap::from_notice(self),
                super::BadKeyTrap::from_notice(self),
            ) {
                (Some(t), _) => t.describe(d),
                (None, Some((_, t))) => t.describe(d),
                (None, None) => d.field("data_details", Value::Bytes(&self.data_details)),
            },
        }
        d.field("issuer_gid", Value::Gid(self.issuer_gid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::mad::strategy::arb_gid;
    use crate::Error;
    use proptest::prelude::*;

    const MGID: Gid = Gid([
        0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
    ]);
    const SM_GID: Gid = Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0001);

    /// Trap 66 for the IPv4 broadcast group, as OpenSM's `mgrp_send_notice` builds it: 0x83
    /// (generic, SubnMgmt), producer 4, trap 66, issuer LID 1, GID at DataDetails offset 6
    /// (IBA 1 §13.4.8.2, IBA 1 §14.2.5.1).
    fn bytes() -> [u8; 80] {
        let mut b = [0u8; 80];
        b[..10].copy_from_slice(&[0x83, 0x00, 0x00, 0x04, 0x00, 0x42, 0x00, 0x01, 0x00, 0x00]);
        b[16..32].copy_from_slice(MGID.as_bytes());
        b[64..80].copy_from_slice(SM_GID.as_bytes());
        b
    }

    fn repr() -> NoticeRepr {
        NoticeRepr::gid_trap(NoticeRepr::TRAP_MCAST_GROUP_CREATED, MGID, 1, SM_GID)
    }

    // IBA 1 §13.4.8.2
    // IBA 1 §14.2.5.1 Table 131: trap 128 carries the switch's LID in DataDetails bytes 0-1.
    #[test]
    fn trap_128_bytes() {
        let n = NoticeRepr::link_state_trap(0x0012);
        let mut b = [0u8; 80];
        n.emit(&mut b);
        assert_eq!(&b[..12], &[0x81, 0, 0, 2, 0, 128, 0, 0x12, 0, 0, 0, 0x12]);
        let back = NoticeRepr::parse(&b).unwrap();
        assert_eq!(back.trap_lid_addr(), Some(0x12));
        assert_eq!(back.trap_gid(), None);
        let mut c = Collect::default();
        back.describe(&mut c);
        assert_eq!(c.get("lid_addr"), Some("0x0012"));
    }

    #[test]
    fn deconstruct() {
        let b = bytes();
        let v = Notice::new_checked(&b[..]).unwrap();
        assert!(v.is_generic());
        assert_eq!(v.notice_type(), NoticeType::SubnMgmt);
        assert_eq!(v.producer_type_or_vendor_id(), 4);
        assert_eq!(v.trap_number_or_device_id(), 66);
        assert_eq!(v.issuer_lid(), 1);
        assert!(!v.notice_toggle());
        assert_eq!(v.notice_count(), 0);
        assert_eq!(&v.data_details()[6..22], MGID.as_bytes());
        assert_eq!(v.issuer_gid(), SM_GID);
    }

    // IBA 1 §13.4.8.2
    #[test]
    fn construct() {
        let mut b = [0u8; 80];
        let mut v = Notice::new_unchecked(&mut b[..]);
        v.set_generic_type(true, NoticeType::SubnMgmt);
        v.set_producer_type_or_vendor_id(4);
        v.set_trap_number_or_device_id(66);
        v.set_issuer_lid(1);
        v.set_toggle_count(false, 0);
        v.data_details_mut()[6..22].copy_from_slice(MGID.as_bytes());
        v.set_issuer_gid(SM_GID);
        assert_eq!(b, bytes());
    }

    // IBA 1 §13.4.8.2, IBA 1 §14.2.5.1
    #[test]
    fn parse_emit_and_trap_gid() {
        let r = NoticeRepr::parse(&bytes()).unwrap();
        assert_eq!(r, repr());
        assert_eq!(r.trap_gid(), Some(MGID));
        assert_eq!(r.producer_type(), Some(ProducerType::ClassManager));
        let mut out = [0u8; 80];
        r.emit(&mut out);
        assert_eq!(out, bytes());
        let vendor = NoticeRepr {
            is_generic: false,
            ..r
        };
        assert_eq!(vendor.trap_gid(), None);
        assert_eq!(NoticeRepr::parse(&[0u8; 79]), Err(Error::Truncated));
    }

    #[test]
    fn toggle_and_count_share_a_word() {
        let r = NoticeRepr {
            notice_toggle: true,
            notice_count: 0x1234,
            ..repr()
        };
        let mut out = [0u8; 80];
        r.emit(&mut out);
        assert_eq!(&out[8..10], &[0x92, 0x34]);
    }

    #[test]
    fn describe_shows_gid() {
        let mut c = Collect::default();
        repr().describe(&mut c);
        assert_eq!(c.get("trap_number"), Some("McastGroupCreated (0x42)"));
        assert_eq!(c.get("gid"), Some("ff12:401b:ffff::ffff:ffff"));
    }

    fn arb() -> impl Strategy<Value = NoticeRepr> {
        (
            (
                any::<bool>(),
                0u8..128,
                0u32..1 << 24,
                any::<u16>(),
                any::<u16>(),
            ),
            (any::<bool>(), 0u16..1 << 15),
            proptest::collection::vec(any::<u8>(), 54),
            arb_gid(),
        )
            .prop_map(|((g, t, p, tn, lid), (tog, cnt), dd, ig)| {
                let mut data_details = [0u8; 54];
                data_details.copy_from_slice(&dd);
                NoticeRepr {
                    is_generic: g,
                    notice_type: t.into(),
                    producer_type_or_vendor_id: p,
                    trap_number_or_device_id: tn,
                    issuer_lid: lid,
                    notice_toggle: tog,
                    notice_count: cnt,
                    data_details,
                    issuer_gid: ig,
                }
            })
    }

    proptest! {
        #[test]
        fn emit_parse_identity(r in arb()) {
            let mut b = [0u8; 80];
            r.emit(&mut b);
            prop_assert_eq!(NoticeRepr::parse(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(r) = NoticeRepr::parse(&data) {
                let _ = r.trap_gid();
            }
        }
    }
}
