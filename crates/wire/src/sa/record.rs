//! One SA attribute of any supported kind ([`SaAttribute`]) and the table of records of a
//! SubnAdmGetTableResp ([`SaRecords`], an iterator that does not allocate). In a table every record
//! occupies AttributeOffset × 8 bytes (IBA 1 §15.2.1.1, §15.2.5.x: the attribute padded to a
//! multiple of 8 bytes).

use super::guid_info_record::GuidInfoRecordRepr;
use super::header::SA_DATA_LEN;
use super::inform_info_record::InformInfoRecordRepr;
use super::lft_record::LftRecordRepr;
use super::link_record::LinkRecordRepr;
use super::mcmember::McMemberRecordRepr;
use super::mft_record::MftRecordRepr;
use super::node_record::NodeRecordRepr;
use super::path::PathRecordRepr;
use super::pkey_record::PKeyTableRecordRepr;
use super::port_info_record::PortInfoRecordRepr;
use super::service_record::ServiceRecordRepr;
use super::slvl_record::SlToVlRecordRepr;
use super::sm_info_record::SmInfoRecordRepr;
use super::switch_info_record::SwitchInfoRecordRepr;
use super::vlarb_record::VlArbRecordRepr;
use crate::describe::{Describe, Describer, Value};
use crate::mad::attr::sa as attr;
use crate::mad::{ClassPortInfoRepr, InformInfoRepr, NoticeRepr};
use crate::{Error, Result};

/// Bytes the SA carries for an attribute it does not decode (or a table), up to 200.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SaRawData {
    len: u8,
    bytes: [u8; SA_DATA_LEN],
}

impl SaRawData {
    /// Copies up to 200 bytes of `data`.
    pub fn new(data: &[u8]) -> SaRawData {
        let n = data.len().min(SA_DATA_LEN);
        let mut bytes = [0u8; SA_DATA_LEN];
        bytes[..n].copy_from_slice(&data[..n]);
        SaRawData {
            len: n as u8,
            bytes,
        }
    }
    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl core::fmt::Debug for SaRawData {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "SaRawData({} bytes)", self.len)
    }
}

/// The size of attribute `attribute_id` without padding, for the attributes this crate decodes.
pub fn record_len(attribute_id: u16) -> Option<usize> {
    match attribute_id {
        attr::CLASS_PORT_INFO => Some(72),
        attr::NOTICE => Some(80),
        attr::INFORM_INFO => Some(36),
        attr::MC_MEMBER_RECORD => Some(52),
        attr::PATH_RECORD => Some(64),
        attr::NODE_RECORD => Some(108),
        attr::PORT_INFO_RECORD => Some(68),
        attr::LINK_RECORD => Some(8),
        attr::P_KEY_TABLE_RECORD => Some(72),
        attr::LINEAR_FORWARDING_TABLE_RECORD => Some(72),
        attr::GUID_INFO_RECORD => Some(72),
        attr::SM_INFO_RECORD => Some(28),
        attr::INFORM_INFO_RECORD => Some(64),
        attr::SL_TO_VL_MAPPING_TABLE_RECORD => Some(16),
        attr::VL_ARBITRATION_TABLE_RECORD => Some(72),
        attr::SWITCH_INFO_RECORD => Some(24),
        attr::SERVICE_RECORD => Some(176),
        attr::MULTICAST_FORWARDING_TABLE_RECORD => Some(72),
        _ => None,
    }
}

/// AttributeOffset for a record of `len` bytes: its length in 8-byte words, rounded up (IBA 1
/// §15.2.1.1; OpenSM `ib_get_attr_offset`).
pub fn attribute_offset_for(len: usize) -> u16 {
    len.div_ceil(8).min(usize::from(u16::MAX)) as u16
}

/// One SA attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaAttribute {
    /// ClassPortInfo (IBA 1 §13.4.8.1).
    ClassPortInfo(ClassPortInfoRepr),
    /// Notice (IBA 1 §13.4.8.2).
    Notice(NoticeRepr),
    /// InformInfo (IBA 1 §13.4.8.3).
    InformInfo(InformInfoRepr),
    /// MCMemberRecord (IBA 1 §15.2.5.17).
    McMemberRecord(McMemberRecordRepr),
    /// PathRecord (IBA 1 §15.2.5.16).
    PathRecord(PathRecordRepr),
    /// NodeRecord (IBA 1 §15.2.5.2).
    NodeRecord(NodeRecordRepr),
    /// PortInfoRecord (IBA 1 §15.2.5.3).
    PortInfoRecord(PortInfoRecordRepr),
    /// LinkRecord (IBA 1 §15.2.5.13).
    LinkRecord(LinkRecordRepr),
    /// P_KeyTableRecord (IBA 1 §15.2.5.11).
    PKeyTableRecord(PKeyTableRecordRepr),
    /// LinearForwardingTableRecord (IBA 1 §15.2.5.6).
    LftRecord(LftRecordRepr),
    /// GUIDInfoRecord (IBA 1 §15.2.5.18).
    GuidInfoRecord(GuidInfoRecordRepr),
    /// SMInfoRecord (IBA 1 §15.2.5.10).
    SmInfoRecord(SmInfoRecordRepr),
    /// InformInfoRecord (IBA 1 §15.2.5.12).
    InformInfoRecord(InformInfoRecordRepr),
    /// SLtoVLMappingTableRecord (IBA 1 §15.2.5.4).
    SlToVlRecord(SlToVlRecordRepr),
    /// VLArbitrationTableRecord (IBA 1 §15.2.5.9).
    VlArbRecord(VlArbRecordRepr),
    /// SwitchInfoRecord (IBA 1 §15.2.5.5).
    SwitchInfoRecord(SwitchInfoRecordRepr),
    /// ServiceRecord (IBA 1 §15.2.5.14).
    ServiceRecord(ServiceRecordRepr),
    /// MulticastForwardingTableRecord (IBA 1 §15.2.5.8).
    MftRecord(MftRecordRepr),
    /// An attribute this crate does not decode, or the records of a table, as sent.
    Raw(SaRawData),
}

impl SaAttribute {
    /// Decodes `data` as attribute `attribute_id`; an unknown attribute becomes `Raw`.
    pub fn parse(attribute_id: u16, data: &[u8]) -> Result<SaAttribute> {
        Ok(match attribute_id {
            attr::CLASS_PORT_INFO => SaAttribute::ClassPortInfo(ClassPortInfoRepr::parse(data)?),
            attr::NOTICE => SaAttribute::Notice(NoticeRepr::parse(data)?),
            attr::INFORM_INFO => SaAttribute::InformInfo(InformInfoRepr::parse(data)?),
            attr::MC_MEMBER_RECORD => SaAttribute::McMemberRecord(McMemberRecordRepr::parse(data)?),
            attr::PATH_RECORD => SaAttribute::PathRecord(PathRecordRepr::parse(data)?),
            attr::NODE_RECORD => SaAttribute::NodeRecord(NodeRecordRepr::parse(data)?),
            attr::PORT_INFO_RECORD => SaAttribute::PortInfoRecord(PortInfoRecordRepr::parse(data)?),
            attr::LINK_RECORD => SaAttribute::LinkRecord(LinkRecordRepr::parse(data)?),
            attr::P_KEY_TABLE_RECORD => {
                SaAttribute::PKeyTableRecord(PKeyTableRecordRepr::parse(data)?)
            }
            attr::LINEAR_FORWARDING_TABLE_RECORD => {
                SaAttribute::LftRecord(LftRecordRepr::parse(data)?)
            }
            attr::GUID_INFO_RECORD => SaAttribute::GuidInfoRecord(GuidInfoRecordRepr::parse(data)?),
            attr::SM_INFO_RECORD => SaAttribute::SmInfoRecord(SmInfoRecordRepr::parse(data)?),
            attr::INFORM_INFO_RECORD => {
                SaAttribute::InformInfoRecord(InformInfoRecordRepr::parse(data)?)
            }
            attr::SL_TO_VL_MAPPING_TABLE_RECORD => {
                SaAttribute::SlToVlRecord(SlToVlRecordRepr::parse(data)?)
            }
            attr::VL_ARBITRATION_TABLE_RECORD => {
                SaAttribute::VlArbRecord(VlArbRecordRepr::parse(data)?)
            }
            attr::SWITCH_INFO_RECORD => {
                SaAttribute::SwitchInfoRecord(SwitchInfoRecordRepr::parse(data)?)
            }
            attr::SERVICE_RECORD => SaAttribute::ServiceRecord(ServiceRecordRepr::parse(data)?),
            attr::MULTICAST_FORWARDING_TABLE_RECORD => {
                SaAttribute::MftRecord(MftRecordRepr::parse(data)?)
            }
            _ => SaAttribute::Raw(SaRawData::new(data)),
        })
    }

    /// The AttributeID of a decoded attribute (`None` for `Raw`).
    pub fn attribute_id(&self) -> Option<u16> {
        match self {
            SaAttribute::ClassPortInfo(_) => Some(attr::CLASS_PORT_INFO),
            SaAttribute::Notice(_) => Some(attr::NOTICE),
            SaAttribute::InformInfo(_) => Some(attr::INFORM_INFO),
            SaAttribute::McMemberRecord(_) => Some(attr::MC_MEMBER_RECORD),
            SaAttribute::PathRecord(_) => Some(attr::PATH_RECORD),
            SaAttribute::NodeRecord(_) => Some(attr::NODE_RECORD),
            SaAttribute::PortInfoRecord(_) => Some(attr::PORT_INFO_RECORD),
            SaAttribute::LinkRecord(_) => Some(attr::LINK_RECORD),
            SaAttribute::PKeyTableRecord(_) => Some(attr::P_KEY_TABLE_RECORD),
            SaAttribute::LftRecord(_) => Some(attr::LINEAR_FORWARDING_TABLE_RECORD),
            SaAttribute::GuidInfoRecord(_) => Some(attr::GUID_INFO_RECORD),
            SaAttribute::SmInfoRecord(_) => Some(attr::SM_INFO_RECORD),
            SaAttribute::InformInfoRecord(_) => Some(attr::INFORM_INFO_RECORD),
            SaAttribute::SlToVlRecord(_) => Some(attr::SL_TO_VL_MAPPING_TABLE_RECORD),
            SaAttribute::VlArbRecord(_) => Some(attr::VL_ARBITRATION_TABLE_RECORD),
            SaAttribute::SwitchInfoRecord(_) => Some(attr::SWITCH_INFO_RECORD),
            SaAttribute::ServiceRecord(_) => Some(attr::SERVICE_RECORD),
            SaAttribute::MftRecord(_) => Some(attr::MULTICAST_FORWARDING_TABLE_RECORD),
            SaAttribute::Raw(_) => None,
        }
    }

    /// Bytes `emit` writes.
    pub fn buffer_len(&self) -> usize {
        match self {
            SaAttribute::ClassPortInfo(r) => r.buffer_len(),
            SaAttribute::Notice(r) => r.buffer_len(),
            SaAttribute::InformInfo(r) => r.buffer_len(),
            SaAttribute::McMemberRecord(r) => r.buffer_len(),
            SaAttribute::PathRecord(r) => r.buffer_len(),
            SaAttribute::NodeRecord(r) => r.buffer_len(),
            SaAttribute::PortInfoRecord(r) => r.buffer_len(),
            SaAttribute::LinkRecord(r) => r.buffer_len(),
            SaAttribute::PKeyTableRecord(r) => r.buffer_len(),
            SaAttribute::LftRecord(r) => r.buffer_len(),
            SaAttribute::GuidInfoRecord(r) => r.buffer_len(),
            SaAttribute::SmInfoRecord(r) => r.buffer_len(),
            SaAttribute::InformInfoRecord(r) => r.buffer_len(),
            SaAttribute::SlToVlRecord(r) => r.buffer_len(),
            SaAttribute::VlArbRecord(r) => r.buffer_len(),
            SaAttribute::SwitchInfoRecord(r) => r.buffer_len(),
            SaAttribute::ServiceRecord(r) => r.buffer_len(),
            SaAttribute::MftRecord(r) => r.buffer_len(),
            SaAttribute::Raw(r) => r.as_bytes().len(),
        }
    }

    /// Writes the attribute at the start of `buf`. Panics if `buf` is shorter than `buffer_len()`.
    pub fn emit(&self, buf: &mut [u8]) {
        match self {
            SaAttribute::ClassPortInfo(r) => r.emit(buf),
            SaAttribute::Notice(r) => r.emit(buf),
            SaAttribute::InformInfo(r) => r.emit(buf),
            SaAttribute::McMemberRecord(r) => r.emit(buf),
            SaAttribute::PathRecord(r) => r.emit(buf),
            SaAttribute::NodeRecord(r) => r.emit(buf),
            SaAttribute::PortInfoRecord(r) => r.emit(buf),
            SaAttribute::LinkRecord(r) => r.emit(buf),
            SaAttribute::PKeyTableRecord(r) => r.emit(buf),
            SaAttribute::LftRecord(r) => r.emit(buf),
            SaAttribute::GuidInfoRecord(r) => r.emit(buf),
            SaAttribute::SmInfoRecord(r) => r.emit(buf),
            SaAttribute::InformInfoRecord(r) => r.emit(buf),
            SaAttribute::SlToVlRecord(r) => r.emit(buf),
            SaAttribute::VlArbRecord(r) => r.emit(buf),
            SaAttribute::SwitchInfoRecord(r) => r.emit(buf),
            SaAttribute::ServiceRecord(r) => r.emit(buf),
            SaAttribute::MftRecord(r) => r.emit(buf),
            SaAttribute::Raw(r) => buf[..r.as_bytes().len()].copy_from_slice(r.as_bytes()),
        }
    }

    /// The snake_case group name `ipoib decode` shows the attribute under.
    pub fn group_name(&self) -> &'static str {
        match self {
            SaAttribute::ClassPortInfo(_) => "class_port_info",
            SaAttribute::Notice(_) => "notice",
            SaAttribute::InformInfo(_) => "inform_info",
            SaAttribute::McMemberRecord(_) => "mc_member_record",
            SaAttribute::PathRecord(_) => "path_record",
            SaAttribute::NodeRecord(_) => "node_record",
            SaAttribute::PortInfoRecord(_) => "port_info_record",
            SaAttribute::LinkRecord(_) => "link_record",
            SaAttribute::PKeyTableRecord(_) => "p_key_table_record",
            SaAttribute::LftRecord(_) => "linear_forwarding_table_record",
            SaAttribute::GuidInfoRecord(_) => "guid_info_record",
            SaAttribute::SmInfoRecord(_) => "sm_info_record",
            SaAttribute::InformInfoRecord(_) => "inform_info_record",
            SaAttribute::SlToVlRecord(_) => "sl_to_vl_mapping_table_record",
            SaAttribute::VlArbRecord(_) => "vl_arbitration_table_record",
            SaAttribute::SwitchInfoRecord(_) => "switch_info_record",
            SaAttribute::ServiceRecord(_) => "service_record",
            SaAttribute::MftRecord(_) => "multicast_forwarding_table_record",
            SaAttribute::Raw(_) => "data",
        }
    }
}

impl Describe for SaAttribute {
    fn describe(&self, d: &mut dyn Describer) {
        match self {
            SaAttribute::ClassPortInfo(r) => r.describe(d),
            SaAttribute::Notice(r) => r.describe(d),
            SaAttribute::InformInfo(r) => r.describe(d),
            SaAttribute::McMemberRecord(r) => r.describe(d),
            SaAttribute::PathRecord(r) => r.describe(d),
            SaAttribute::NodeRecord(r) => r.describe(d),
            SaAttribute::PortInfoRecord(r) => r.describe(d),
            SaAttribute::LinkRecord(r) => r.describe(d),
            SaAttribute::PKeyTableRecord(r) => r.describe(d),
            SaAttribute::LftRecord(r) => r.describe(d),
            SaAttribute::GuidInfoRecord(r) => r.describe(d),
            SaAttribute::SmInfoRecord(r) => r.describe(d),
            SaAttribute::InformInfoRecord(r) => r.describe(d),
            SaAttribute::SlToVlRecord(r) => r.describe(d),
            SaAttribute::VlArbRecord(r) => r.describe(d),
            SaAttribute::SwitchInfoRecord(r) => r.describe(d),
            SaAttribute::ServiceRecord(r) => r.describe(d),
            SaAttribute::MftRecord(r) => r.describe(d),
            SaAttribute::Raw(r) => d.field("bytes", Value::Bytes(r.as_bytes())),
        }
    }
}

/// The records of a SubnAdmGetTableResp: `data` cut into AttributeOffset × 8-byte slots, each
/// decoded as `attribute_id`. Works on the 200 bytes of one MAD or on a reassembled RMPP payload.
/// Yields `Err(Malformed)` once and stops if the stride is shorter than the attribute.
#[derive(Debug, Clone)]
pub struct SaRecords<'a> {
    attribute_id: u16,
    stride: usize,
    data: &'a [u8],
    failed: bool,
}

impl<'a> SaRecords<'a> {
    /// Records of `attribute_id`, `attribute_offset` 8-byte words apart, in `data` (the SA data
    /// after the SA header; a partial trailing slot is ignored).
    pub fn new(attribute_id: u16, attribute_offset: u16, data: &'a [u8]) -> SaRecords<'a> {
        SaRecords {
            attribute_id,
            stride: usize::from(attribute_offset) * 8,
            data,
            failed: false,
        }
    }

    /// How many whole records `data` holds (0 if AttributeOffset is 0).
    pub fn record_count(&self) -> usize {
        if self.stride == 0 || self.failed {
            0
        } else {
            self.data.len() / self.stride
        }
    }
}

impl Iterator for SaRecords<'_> {
    type Item = Result<SaAttribute>;

    fn next(&mut self) -> Option<Result<SaAttribute>> {
        if self.failed || self.stride == 0 || self.data.len() < self.stride {
            return None;
        }
        let (rec, rest) = self.data.split_at(self.stride);
        self.data = rest;
        match SaAttribute::parse(self.attribute_id, rec) {
            Ok(a) => Some(Ok(a)),
            Err(_) => {
                // A stride shorter than the attribute: every slot would fail the same way.
                self.failed = true;
                Some(Err(Error::Malformed))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::mcmember::tests::{bcast_join, bcast_join_bytes};
    use proptest::prelude::*;

    // IBA 1 §15.2.1.1
    #[test]
    fn attribute_offsets() {
        assert_eq!(attribute_offset_for(52), 7);
        assert_eq!(attribute_offset_for(64), 8);
        assert_eq!(attribute_offset_for(36), 5);
        assert_eq!(attribute_offset_for(80), 10);
        assert_eq!(attribute_offset_for(72), 9);
        assert_eq!(record_len(attr::MC_MEMBER_RECORD), Some(52));
    }

    // IBA 1 §15.2.1.1: a table of MCMemberRecords 56 bytes apart.
    #[test]
    fn table_of_records() {
        let mut data = [0u8; 200];
        for i in 0..3 {
            data[i * 56..i * 56 + 52].copy_from_slice(&bcast_join_bytes());
            data[i * 56 + 36..i * 56 + 38].copy_from_slice(&[0xc0, i as u8 + 1]);
        }
        let recs = SaRecords::new(attr::MC_MEMBER_RECORD, 7, &data);
        assert_eq!(recs.record_count(), 3);
        let mlids: Vec<u16> = recs
            .map(|r| match r.unwrap() {
                SaAttribute::McMemberRecord(m) => m.mlid,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(mlids, [0xc001, 0xc002, 0xc003]);
        // Fewer bytes: only whole slots count.
        assert_eq!(
            SaRecords::new(attr::MC_MEMBER_RECORD, 7, &data[..111]).record_count(),
            1
        );
        // Stride 0 yields nothing; a stride shorter than the record is malformed, once.
        assert_eq!(
            SaRecords::new(attr::MC_MEMBER_RECORD, 0, &data).next(),
            None
        );
        let mut short = SaRecords::new(attr::MC_MEMBER_RECORD, 6, &data);
        assert_eq!(short.next(), Some(Err(Error::Malformed)));
        assert_eq!(short.next(), None);
    }

    #[test]
    fn unknown_attribute_is_raw() {
        let a = SaAttribute::parse(attr::TRACE_RECORD, &[1, 2, 3]).unwrap();
        assert_eq!(a.attribute_id(), None);
        match a {
            SaAttribute::Raw(r) => assert_eq!(r.as_bytes(), &[1, 2, 3]),
            other => panic!("{other:?}"),
        }
        let m = SaAttribute::McMemberRecord(bcast_join());
        let mut out = [0u8; 52];
        m.emit(&mut out);
        assert_eq!(out, bcast_join_bytes());
        assert_eq!(m.group_name(), "mc_member_record");
    }

    // `ipoib decode` names SMInfoRecord and InformInfoRecord (IBA 1 §15.2.5.10, .12).
    #[test]
    fn sm_and_inform_records_decode_by_name() {
        let smir = SaAttribute::parse(attr::SM_INFO_RECORD, &[0u8; 32]).unwrap();
        assert_eq!(smir.group_name(), "sm_info_record");
        assert_eq!(smir.attribute_id(), Some(attr::SM_INFO_RECORD));
        let iir = SaAttribute::parse(attr::INFORM_INFO_RECORD, &[0u8; 64]).unwrap();
        assert_eq!(iir.group_name(), "inform_info_record");
        assert_eq!(iir.buffer_len(), 64);
        assert_eq!(
            record_len(attr::SM_INFO_RECORD).map(attribute_offset_for),
            Some(4)
        );
        assert_eq!(
            record_len(attr::INFORM_INFO_RECORD).map(attribute_offset_for),
            Some(8)
        );
    }

    // `ipoib decode` names SLtoVLMappingTableRecord and VLArbitrationTableRecord (IBA 1
    // §15.2.5.4, .9): 16 and 72 bytes, AttributeOffset 2 and 9 words.
    #[test]
    fn qos_table_records_decode_by_name() {
        let slvl = SaAttribute::parse(attr::SL_TO_VL_MAPPING_TABLE_RECORD, &[0u8; 16]).unwrap();
        assert_eq!(slvl.group_name(), "sl_to_vl_mapping_table_record");
        assert_eq!(
            slvl.attribute_id(),
            Some(attr::SL_TO_VL_MAPPING_TABLE_RECORD)
        );
        let vla = SaAttribute::parse(attr::VL_ARBITRATION_TABLE_RECORD, &[0u8; 72]).unwrap();
        assert_eq!(vla.group_name(), "vl_arbitration_table_record");
        assert_eq!(vla.buffer_len(), 72);
        assert_eq!(
            record_len(attr::SL_TO_VL_MAPPING_TABLE_RECORD).map(attribute_offset_for),
            Some(2)
        );
        assert_eq!(
            record_len(attr::VL_ARBITRATION_TABLE_RECORD).map(attribute_offset_for),
            Some(9)
        );
    }

    // `ipoib decode` names SwitchInfoRecord (IBA 1 §15.2.5.5): 24 bytes, AttributeOffset 3 words.
    #[test]
    fn switch_info_record_decodes_by_name() {
        let r = SaAttribute::parse(attr::SWITCH_INFO_RECORD, &[0u8; 24]).unwrap();
        assert_eq!(r.group_name(), "switch_info_record");
        assert_eq!(r.attribute_id(), Some(attr::SWITCH_INFO_RECORD));
        assert_eq!(r.buffer_len(), 24);
        assert_eq!(
            record_len(attr::SWITCH_INFO_RECORD).map(attribute_offset_for),
            Some(3)
        );
    }

    // `ipoib decode` names ServiceRecord (IBA 1 §15.2.5.14): 176 bytes, AttributeOffset 22 words;
    // one fits a MAD's 200 bytes of SA data, a table of two needs RMPP.
    #[test]
    fn service_record_decodes_by_name() {
        let r = SaAttribute::parse(attr::SERVICE_RECORD, &[0u8; 176]).unwrap();
        assert_eq!(r.group_name(), "service_record");
        assert_eq!(r.attribute_id(), Some(attr::SERVICE_RECORD));
        assert_eq!(r.buffer_len(), 176);
        assert_eq!(
            record_len(attr::SERVICE_RECORD).map(attribute_offset_for),
            Some(22)
        );
    }

    // `ipoib decode` names MulticastForwardingTableRecord (IBA 1 §15.2.5.8): 72 bytes,
    // AttributeOffset 9 words.
    #[test]
    fn mft_record_decodes_by_name() {
        let r = SaAttribute::parse(attr::MULTICAST_FORWARDING_TABLE_RECORD, &[0u8; 72]).unwrap();
        assert_eq!(r.group_name(), "multicast_forwarding_table_record");
        assert_eq!(
            r.attribute_id(),
            Some(attr::MULTICAST_FORWARDING_TABLE_RECORD)
        );
        assert_eq!(r.buffer_len(), 72);
        assert_eq!(
            record_len(attr::MULTICAST_FORWARDING_TABLE_RECORD).map(attribute_offset_for),
            Some(9)
        );
    }

    proptest! {
        #[test]
        fn records_never_panic(
            id in any::<u16>(),
            off in any::<u16>(),
            data in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let known = [1u16, 2, 3, 0x11, 0x12, 0x15, 0x18, 0x20, 0x30, 0x33, 0x35, 0x38, 0xf3, 0x13,
                0x36, 0x14, 0x31, 0x17];
            let id = if id % 2 == 0 { known[usize::from(id / 2) % known.len()] } else { id };
            for r in SaRecords::new(id, off, &data) {
                let _ = r;
            }
        }
    }
}
