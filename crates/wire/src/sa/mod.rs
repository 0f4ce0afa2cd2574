//! Subnet administration (IBA 1 §15.2): the SA MAD header after the common and RMPP headers, the
//! records this project queries and joins (MCMemberRecord, PathRecord; ClassPortInfo, Notice and
//! InformInfo come from [`crate::mad`]), the subnet's records the diagnostic tools read
//! (NodeRecord, PortInfoRecord, LinkRecord, P_KeyTableRecord, LinearForwardingTableRecord,
//! GUIDInfoRecord, SMInfoRecord, InformInfoRecord, SLtoVLMappingTableRecord,
//! VLArbitrationTableRecord, SwitchInfoRecord, ServiceRecord,
//! MulticastForwardingTableRecord), tables of records, and [`SaMadRepr`], a whole SA MAD as one value with
//! builders for the SA client and server.
//!
//! Layouts follow IBA 1, checked against OpenSM `include/iba/ib_types.h` and wireshark's
//! `packet-infiniband.c` (the independent reader the tshark test uses).

mod guid_info_record;
mod header;
mod inform_info_record;
mod lft_record;
mod link_record;
mod mcmember;
mod mft_record;
mod node_record;
mod path;
mod pkey_record;
mod port_info_record;
mod rate;
mod record;
mod sa_mad;
mod service_record;
mod slvl_record;
mod sm_info_record;
mod switch_info_record;
mod vlarb_record;

pub use crate::mad::{
    ClassPortInfoRepr, InformInfoRepr, NoticeRepr, NoticeType, ProducerType, SaStatus,
};
pub use guid_info_record::{gir_mask, GuidInfoRecordRepr, GUID_BLOCK_ENTRIES};
pub use header::{SaHeaderRepr, SaMad, SA_DATA_LEN, SA_DATA_OFFSET, SA_HEADER_LEN};
pub use inform_info_record::{iir_mask, InformInfoRecordRepr};
pub use lft_record::{lftr_mask, LftRecordRepr};
pub use link_record::{lr_mask, LinkRecordRepr};
pub use mcmember::{mcr_mask, JoinState, McMemberRecord, McMemberRecordRepr};
pub use mft_record::{mftr_mask, MftRecordRepr};
pub use node_record::{node_description, nr_mask, NodeRecordRepr, NODE_DESCRIPTION_LEN};
pub use path::{pr_mask, PathRecord, PathRecordRepr};
pub use pkey_record::{pkr_mask, PKeyTableRecordRepr, PKEY_BLOCK_ENTRIES};
pub use port_info_record::{pir_mask, PortInfoRecordRepr, PIR_ENHANCED_COMP_MASK};
pub use rate::{Mtu, Rate, Selector};
pub use record::{attribute_offset_for, record_len, SaAttribute, SaRawData, SaRecords};
pub use sa_mad::{emit_records, SaMadRepr};
pub use service_record::{
    service_name, sr_mask, ServiceRecordRepr, SERVICE_LEASE_INFINITE, SERVICE_NAME_LEN,
};
pub use slvl_record::{slvlr_mask, SlToVlRecordRepr};
pub use sm_info_record::{smir_mask, SmInfoRecordRepr};
pub use switch_info_record::{swir_mask, SwitchInfoRecordRepr};
pub use vlarb_record::{vlar_mask, VlArbRecordRepr};
