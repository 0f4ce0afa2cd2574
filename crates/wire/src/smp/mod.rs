//! Subnet management packets (IBA 1 §14.2), the MADs an SM exchanges with the subnet management
//! agent of every port on QP0: the SMP in its LID-routed and directed-route forms ([`SmpMadRepr`],
//! §14.2.1) and the attributes of §14.2.5 the agents answer: NodeDescription (§14.2.5.2),
//! NodeInfo (§14.2.5.3), SwitchInfo (§14.2.5.4), GUIDInfo (§14.2.5.5), PortInfo (§14.2.5.6),
//! P_KeyTable (§14.2.5.7), SLtoVLMappingTable (§14.2.5.8), VLArbitrationTable (§14.2.5.9), the
//! LinearForwardingTable and MulticastForwardingTable blocks (§14.2.5.10, §14.2.5.12) and SMInfo
//! (§14.2.5.13); the Notice of a Trap() is [`crate::mad::NoticeRepr`] (§14.2.5.1). Attribute identifiers are in [`crate::mad::attr::smp`].
//!
//! Layouts follow IBA 1, checked against OpenSM `include/iba/ib_types.h` and wireshark's
//! `packet-infiniband.c` (the independent reader the tshark test uses).

mod forwarding;
mod node_info;
mod port_info;
mod sm_info;
mod smp_mad;
mod switch_info;
mod tables;

pub use forwarding::{
    mft_modifier, LftBlockRepr, MftBlockRepr, LFT_BLOCK_LIDS, MFT_BLOCK_MLIDS, MFT_POSITION_PORTS,
};
#[cfg(test)]
pub(crate) use node_info::tests as node_info_tests;
pub use node_info::{NodeInfo, NodeInfoRepr, NodeType};
pub use port_info::{cap_mask, PortInfo, PortInfoRepr, PortPhysState, PortState};
pub use sm_info::{SmInfoRepr, SmState};
pub use smp_mad::{
    DirectedRoute, SmpAttribute, SmpMad, SmpMadRepr, SmpRoute, DIRECTION_BIT, SMP_CLASS_VERSION,
    SMP_DATA_LEN, SMP_PATH_LEN,
};
pub use switch_info::{SwitchInfo, SwitchInfoRepr};
pub use tables::{
    GuidInfoRepr, NodeDescriptionRepr, PKeyTableRepr, SlToVlTableRepr, VlArbEntry, VlArbTableRepr,
    GUID_INFO_BLOCK, NODE_DESCRIPTION_LEN, PKEY_TABLE_BLOCK, SL_COUNT, VL_ARB_BLOCK,
};
