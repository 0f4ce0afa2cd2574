//! Attribute identifiers of the classes this project speaks (IBA 1 §13.4.8 common attributes,
//! §14.2.5 SMP attributes, §15.2.5 Table 190 SA attributes, §12.6 Table 98 CM messages),
//! and their names for `ipoib decode`.

use super::codes::MgmtClass;

/// ClassPortInfo, common to every class (IBA 1 §13.4.8.1).
pub const CLASS_PORT_INFO: u16 = 0x0001;
/// Notice (IBA 1 §13.4.8.2).
pub const NOTICE: u16 = 0x0002;
/// InformInfo (IBA 1 §13.4.8.3).
pub const INFORM_INFO: u16 = 0x0003;

/// Subnet management attributes, carried by SMPs on QP0 (IBA 1 §14.2.5; OpenSM
/// `IB_MAD_ATTR_*`).
pub mod smp {
    /// ClassPortInfo.
    pub const CLASS_PORT_INFO: u16 = 0x0001;
    /// Notice.
    pub const NOTICE: u16 = 0x0002;
    /// InformInfo.
    pub const INFORM_INFO: u16 = 0x0003;
    /// NodeDescription (IBA 1 §14.2.5.2).
    pub const NODE_DESCRIPTION: u16 = 0x0010;
    /// NodeInfo (IBA 1 §14.2.5.3).
    pub const NODE_INFO: u16 = 0x0011;
    /// SwitchInfo (IBA 1 §14.2.5.4).
    pub const SWITCH_INFO: u16 = 0x0012;
    /// GUIDInfo (IBA 1 §14.2.5.5).
    pub const GUID_INFO: u16 = 0x0014;
    /// PortInfo (IBA 1 §14.2.5.6).
    pub const PORT_INFO: u16 = 0x0015;
    /// P_KeyTable (IBA 1 §14.2.5.7).
    pub const P_KEY_TABLE: u16 = 0x0016;
    /// SLtoVLMappingTable (IBA 1 §14.2.5.8).
    pub const SL_TO_VL_MAPPING_TABLE: u16 = 0x0017;
    /// VLArbitrationTable (IBA 1 §14.2.5.9).
    pub const VL_ARBITRATION_TABLE: u16 = 0x0018;
    /// LinearForwardingTable (IBA 1 §14.2.5.10).
    pub const LINEAR_FORWARDING_TABLE: u16 = 0x0019;
    /// RandomForwardingTable (IBA 1 §14.2.5.11).
    pub const RANDOM_FORWARDING_TABLE: u16 = 0x001a;
    /// MulticastForwardingTable (IBA 1 §14.2.5.12).
    pub const MULTICAST_FORWARDING_TABLE: u16 = 0x001b;
    /// SMInfo (IBA 1 §14.2.5.13).
    pub const SM_INFO: u16 = 0x0020;
    /// VendorDiag (IBA 1 §14.2.5.14).
    pub const VENDOR_DIAG: u16 = 0x0030;
    /// LedInfo (IBA 1 §14.2.5.15).
    pub const LED_INFO: u16 = 0x0031;

    /// The attribute's name ("Unknown" if not listed).
    pub fn name(id: u16) -> &'static str {
        match id {
            CLASS_PORT_INFO => "ClassPortInfo",
            NOTICE => "Notice",
            INFORM_INFO => "InformInfo",
            NODE_DESCRIPTION => "NodeDescription",
            NODE_INFO => "NodeInfo",
            SWITCH_INFO => "SwitchInfo",
            GUID_INFO => "GUIDInfo",
            PORT_INFO => "PortInfo",
            P_KEY_TABLE => "P_KeyTable",
            SL_TO_VL_MAPPING_TABLE => "SLtoVLMappingTable",
            VL_ARBITRATION_TABLE => "VLArbitrationTable",
            LINEAR_FORWARDING_TABLE => "LinearForwardingTable",
            RANDOM_FORWARDING_TABLE => "RandomForwardingTable",
            MULTICAST_FORWARDING_TABLE => "MulticastForwardingTable",
            SM_INFO => "SMInfo",
            VENDOR_DIAG => "VendorDiag",
            LED_INFO => "LedInfo",
            _ => "Unknown",
        }
    }
}

/// Performance management attributes (IBA 1 §16.1.2 Table 222; OpenSM `IB_MAD_ATTR_*`).
pub mod perf {
    /// ClassPortInfo.
    pub const CLASS_PORT_INFO: u16 = 0x0001;
    /// PortSamplesControl (IBA 1 §16.1.3.2).
    pub const PORT_SAMPLES_CONTROL: u16 = 0x0010;
    /// PortSamplesResult (IBA 1 §16.1.3.4).
    pub const PORT_SAMPLES_RESULT: u16 = 0x0011;
    /// PortCounters (IBA 1 §16.1.3.5).
    pub const PORT_COUNTERS: u16 = 0x0012;
    /// PortCountersExtended (IBA 1 §16.1.4.11).
    pub const PORT_COUNTERS_EXTENDED: u16 = 0x001d;

    /// The attribute's name ("Unknown" if not listed).
    pub fn name(id: u16) -> &'static str {
        match id {
            CLASS_PORT_INFO => "ClassPortInfo",
            PORT_SAMPLES_CONTROL => "PortSamplesControl",
            PORT_SAMPLES_RESULT => "PortSamplesResult",
            PORT_COUNTERS => "PortCounters",
            PORT_COUNTERS_EXTENDED => "PortCountersExtended",
            _ => "Unknown",
        }
    }
}

/// Subnet administration attributes (IBA 1 §15.2.5 Table 190; OpenSM `IB_MAD_ATTR_*`).
pub mod sa {
    /// ClassPortInfo.
    pub const CLASS_PORT_INFO: u16 = 0x0001;
    /// Notice.
    pub const NOTICE: u16 = 0x0002;
    /// InformInfo.
    pub const INFORM_INFO: u16 = 0x0003;
    /// NodeRecord.
    pub const NODE_RECORD: u16 = 0x0011;
    /// PortInfoRecord.
    pub const PORT_INFO_RECORD: u16 = 0x0012;
    /// SLtoVLMappingTableRecord.
    pub const SL_TO_VL_MAPPING_TABLE_RECORD: u16 = 0x0013;
    /// SwitchInfoRecord.
    pub const SWITCH_INFO_RECORD: u16 = 0x0014;
    /// LinearForwardingTableRecord.
    pub const LINEAR_FORWARDING_TABLE_RECORD: u16 = 0x0015;
    /// RandomForwardingTableRecord.
    pub const RANDOM_FORWARDING_TABLE_RECORD: u16 = 0x0016;
    /// MulticastForwardingTableRecord.
    pub const MULTICAST_FORWARDING_TABLE_RECORD: u16 = 0x0017;
    /// SMInfoRecord.
    pub const SM_INFO_RECORD: u16 = 0x0018;
    /// LinkRecord.
    pub const LINK_RECORD: u16 = 0x0020;
    /// GuidInfoRecord.
    pub const GUID_INFO_RECORD: u16 = 0x0030;
    /// ServiceRecord.
    pub const SERVICE_RECORD: u16 = 0x0031;
    /// P_KeyTableRecord.
    pub const P_KEY_TABLE_RECORD: u16 = 0x0033;
    /// PathRecord.
    pub const PATH_RECORD: u16 = 0x0035;
    /// VLArbitrationTableRecord.
    pub const VL_ARBITRATION_TABLE_RECORD: u16 = 0x0036;
    /// MCMemberRecord.
    pub const MC_MEMBER_RECORD: u16 = 0x0038;
    /// TraceRecord.
    pub const TRACE_RECORD: u16 = 0x0039;
    /// MultiPathRecord.
    pub const MULTI_PATH_RECORD: u16 = 0x003a;
    /// ServiceAssociationRecord.
    pub const SERVICE_ASSOCIATION_RECORD: u16 = 0x003b;
    /// InformInfoRecord.
    pub const INFORM_INFO_RECORD: u16 = 0x00f3;

    /// The attribute's name ("Unknown" if not listed).
    pub fn name(id: u16) -> &'static str {
        match id {
            CLASS_PORT_INFO => "ClassPortInfo",
            NOTICE => "Notice",
            INFORM_INFO => "InformInfo",
            NODE_RECORD => "NodeRecord",
            PORT_INFO_RECORD => "PortInfoRecord",
            SL_TO_VL_MAPPING_TABLE_RECORD => "SLtoVLMappingTableRecord",
            SWITCH_INFO_RECORD => "SwitchInfoRecord",
            LINEAR_FORWARDING_TABLE_RECORD => "LinearForwardingTableRecord",
            RANDOM_FORWARDING_TABLE_RECORD => "RandomForwardingTableRecord",
            MULTICAST_FORWARDING_TABLE_RECORD => "MulticastForwardingTableRecord",
            SM_INFO_RECORD => "SMInfoRecord",
            LINK_RECORD => "LinkRecord",
            GUID_INFO_RECORD => "GuidInfoRecord",
            SERVICE_RECORD => "ServiceRecord",
            P_KEY_TABLE_RECORD => "P_KeyTableRecord",
            PATH_RECORD => "PathRecord",
            VL_ARBITRATION_TABLE_RECORD => "VLArbitrationTableRecord",
            MC_MEMBER_RECORD => "MCMemberRecord",
            TRACE_RECORD => "TraceRecord",
            MULTI_PATH_RECORD => "MultiPathRecord",
            SERVICE_ASSOCIATION_RECORD => "ServiceAssociationRecord",
            INFORM_INFO_RECORD => "InformInfoRecord",
            _ => "Unknown",
        }
    }
}

/// Communication management messages (IBA 1 §12.6 Table 98; Linux `cm_msgs.h`).
pub mod cm {
    /// ClassPortInfo.
    pub const CLASS_PORT_INFO: u16 = 0x0001;
    /// ConnectRequest (REQ).
    pub const REQ: u16 = 0x0010;
    /// MsgRcptAck (MRA).
    pub const MRA: u16 = 0x0011;
    /// ConnectReject (REJ).
    pub const REJ: u16 = 0x0012;
    /// ConnectReply (REP).
    pub const REP: u16 = 0x0013;
    /// ReadyToUse (RTU).
    pub const RTU: u16 = 0x0014;
    /// DisconnectRequest (DREQ).
    pub const DREQ: u16 = 0x0015;
    /// DisconnectReply (DREP).
    pub const DREP: u16 = 0x0016;
    /// ServiceIDResReq (SIDR_REQ).
    pub const SIDR_REQ: u16 = 0x0017;
    /// ServiceIDResReqResp (SIDR_REP).
    pub const SIDR_REP: u16 = 0x0018;
    /// LoadAlternatePath (LAP).
    pub const LAP: u16 = 0x0019;
    /// AlternatePathResponse (APR).
    pub const APR: u16 = 0x001a;

    /// The message's short name ("Unknown" if not listed).
    pub fn name(id: u16) -> &'static str {
        match id {
            CLASS_PORT_INFO => "ClassPortInfo",
            REQ => "REQ",
            MRA => "MRA",
            REJ => "REJ",
            REP => "REP",
            RTU => "RTU",
            DREQ => "DREQ",
            DREP => "DREP",
            SIDR_REQ => "SIDR_REQ",
            SIDR_REP => "SIDR_REP",
            LAP => "LAP",
            APR => "APR",
            _ => "Unknown",
        }
    }
}

/// The name of attribute `id` in management class `class` ("Unknown" if not known).
pub fn name(class: MgmtClass, id: u16) -> &'static str {
    match class {
        MgmtClass::SubnLid | MgmtClass::SubnDirectedRoute => smp::name(id),
        MgmtClass::SubnAdm => sa::name(id),
        MgmtClass::ComMgt => cm::name(id),
        MgmtClass::Perf => perf::name(id),
        _ => match id {
            CLASS_PORT_INFO => "ClassPortInfo",
            NOTICE => "Notice",
            INFORM_INFO => "InformInfo",
            _ => "Unknown",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // IBA 1 §14.2.5, IBA 1 §15.2.5, IBA 1 §12.6
    #[test]
    fn names_by_class() {
        assert_eq!(name(MgmtClass::SubnLid, 0x0011), "NodeInfo");
        assert_eq!(name(MgmtClass::SubnDirectedRoute, 0x0015), "PortInfo");
        assert_eq!(name(MgmtClass::SubnLid, 0x001b), "MulticastForwardingTable");
        assert_eq!(name(MgmtClass::SubnAdm, 0x0035), "PathRecord");
        assert_eq!(name(MgmtClass::SubnAdm, 0x0038), "MCMemberRecord");
        assert_eq!(name(MgmtClass::ComMgt, 0x0010), "REQ");
        assert_eq!(name(MgmtClass::ComMgt, 0x001a), "APR");
        assert_eq!(name(MgmtClass::Perf, 0x0001), "ClassPortInfo");
        assert_eq!(name(MgmtClass::Perf, 0x0038), "Unknown");
        assert_eq!(name(MgmtClass::Perf, 0x0012), "PortCounters");
        assert_eq!(name(MgmtClass::Perf, 0x001d), "PortCountersExtended");
        assert_eq!(name(MgmtClass::SubnDirectedRoute, 0x0020), "SMInfo");
    }
}
