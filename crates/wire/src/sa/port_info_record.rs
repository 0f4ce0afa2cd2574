//! PortInfoRecord (IBA 1 §15.2.5.3), 68 bytes (72 with table padding): a port's PortInfo indexed
//! by the LID of its end port and its port number:
//!
//! ```text
//! 0  EndportLID(16) | PortNum(8) | Options(8)
//! 4  PortInfo (64 bytes, IBA 1 §14.2.5.6)
//! ```
//!
//! Layout checked against OpenSM `ib_portinfo_record_t` and wireshark's `parse_PortInfoRecord`.

use crate::describe::{Describe, Describer, Value};
use crate::smp::PortInfoRepr;
use crate::types::{be16, put16};
use crate::{Error, Result};

mod field {
    pub const LID: usize = 0;
    pub const PORT_NUM: usize = 2;
    pub const OPTIONS: usize = 3;
    pub const PORT_INFO: usize = 4;
    pub const LEN: usize = 68;
}

/// ComponentMask bits of PortInfoRecord (IBA 1 §15.2.5.3; OpenSM `IB_PIR_COMPMASK_*`): the
/// record's three fields, then PortInfo's fields in order, a few reserved bits between.
pub mod pir_mask {
    /// EndportLID.
    pub const LID: u64 = 1 << 0;
    /// PortNum.
    pub const PORT_NUM: u64 = 1 << 1;
    /// Options.
    pub const OPTIONS: u64 = 1 << 2;
    /// PortInfo.M_Key.
    pub const M_KEY: u64 = 1 << 3;
    /// PortInfo.GidPrefix.
    pub const GID_PREFIX: u64 = 1 << 4;
    /// PortInfo.LID.
    pub const BASE_LID: u64 = 1 << 5;
    /// PortInfo.MasterSMLID.
    pub const MASTER_SM_LID: u64 = 1 << 6;
    /// PortInfo.CapabilityMask.
    pub const CAPABILITY_MASK: u64 = 1 << 7;
    /// PortInfo.DiagCode.
    pub const DIAG_CODE: u64 = 1 << 8;
    /// PortInfo.M_KeyLeasePeriod.
    pub const MKEY_LEASE_PERIOD: u64 = 1 << 9;
    /// PortInfo.LocalPortNum.
    pub const LOCAL_PORT_NUM: u64 = 1 << 10;
    /// PortInfo.LinkWidthEnabled.
    pub const LINK_WIDTH_ENABLED: u64 = 1 << 11;
    /// PortInfo.LinkWidthSupported.
    pub const LINK_WIDTH_SUPPORTED: u64 = 1 << 12;
    /// PortInfo.LinkWidthActive.
    pub const LINK_WIDTH_ACTIVE: u64 = 1 << 13;
    /// PortInfo.LinkSpeedSupported.
    pub const LINK_SPEED_SUPPORTED: u64 = 1 << 14;
    /// PortInfo.PortState.
    pub const PORT_STATE: u64 = 1 << 15;
    /// PortInfo.PortPhysicalState.
    pub const PORT_PHYS_STATE: u64 = 1 << 16;
    /// PortInfo.LinkDownDefaultState.
    pub const LINK_DOWN_DEFAULT_STATE: u64 = 1 << 17;
    /// PortInfo.M_KeyProtectBits.
    pub const MKEY_PROTECT_BITS: u64 = 1 << 18;
    /// PortInfo.LMC (bit 19 is reserved).
    pub const LMC: u64 = 1 << 20;
    /// PortInfo.LinkSpeedActive.
    pub const LINK_SPEED_ACTIVE: u64 = 1 << 21;
    /// PortInfo.LinkSpeedEnabled.
    pub const LINK_SPEED_ENABLED: u64 = 1 << 22;
    /// PortInfo.NeighborMTU.
    pub const NEIGHBOR_MTU: u64 = 1 << 23;
    /// PortInfo.MasterSMSL.
    pub const MASTER_SM_SL: u64 = 1 << 24;
    /// PortInfo.VLCap.
    pub const VL_CAP: u64 = 1 << 25;
    /// PortInfo.InitType.
    pub const INIT_TYPE: u64 = 1 << 26;
    /// PortInfo.VLHighLimit.
    pub const VL_HIGH_LIMIT: u64 = 1 << 27;
    /// PortInfo.VLArbitrationHighCap.
    pub const VL_ARB_HIGH_CAP: u64 = 1 << 28;
    /// PortInfo.VLArbitrationLowCap.
    pub const VL_ARB_LOW_CAP: u64 = 1 << 29;
    /// PortInfo.InitTypeReply.
    pub const INIT_TYPE_REPLY: u64 = 1 << 30;
    /// PortInfo.MTUCap.
    pub const MTU_CAP: u64 = 1 << 31;
    /// PortInfo.VLStallCount.
    pub const VL_STALL_COUNT: u64 = 1 << 32;
    /// PortInfo.HOQLife.
    pub const HOQ_LIFE: u64 = 1 << 33;
    /// PortInfo.OperationalVLs.
    pub const OPERATIONAL_VLS: u64 = 1 << 34;
    /// PortInfo.PartitionEnforcementInbound.
    pub const PARTITION_ENFORCEMENT_INBOUND: u64 = 1 << 35;
    /// PortInfo.PartitionEnforcementOutbound.
    pub const PARTITION_ENFORCEMENT_OUTBOUND: u64 = 1 << 36;
    /// PortInfo.FilterRawInbound.
    pub const FILTER_RAW_INBOUND: u64 = 1 << 37;
    /// PortInfo.FilterRawOutbound.
    pub const FILTER_RAW_OUTBOUND: u64 = 1 << 38;
    /// PortInfo.M_KeyViolations.
    pub const MKEY_VIOLATIONS: u64 = 1 << 39;
    /// PortInfo.P_KeyViolations.
    pub const PKEY_VIOLATIONS: u64 = 1 << 40;
    /// PortInfo.Q_KeyViolations.
    pub const QKEY_VIOLATIONS: u64 = 1 << 41;
    /// PortInfo.GUIDCap.
    pub const GUID_CAP: u64 = 1 << 42;
    /// PortInfo.ClientReregister.
    pub const CLIENT_REREGISTER: u64 = 1 << 43;
    /// PortInfo.SubnetTimeOut (bit 44 is reserved).
    pub const SUBNET_TIMEOUT: u64 = 1 << 45;
    /// PortInfo.RespTimeValue (bit 46 is reserved).
    pub const RESP_TIME_VALUE: u64 = 1 << 47;
    /// PortInfo.LocalPhyErrors.
    pub const LOCAL_PHY_ERRORS: u64 = 1 << 48;
    /// PortInfo.OverrunErrors.
    pub const OVERRUN_ERRORS: u64 = 1 << 49;
    /// PortInfo.MaxCreditHint.
    pub const MAX_CREDIT_HINT: u64 = 1 << 50;
    /// PortInfo.LinkRoundTripLatency (bit 51 is reserved).
    pub const LINK_ROUND_TRIP_LATENCY: u64 = 1 << 52;
    /// PortInfo.CapabilityMask2.
    pub const CAPABILITY_MASK2: u64 = 1 << 53;
    /// PortInfo.LinkSpeedExtActive.
    pub const LINK_SPEED_EXT_ACTIVE: u64 = 1 << 54;
    /// PortInfo.LinkSpeedExtSupported.
    pub const LINK_SPEED_EXT_SUPPORTED: u64 = 1 << 55;
    /// PortInfo.LinkSpeedExtEnabled (bit 56 is reserved).
    pub const LINK_SPEED_EXT_ENABLED: u64 = 1 << 57;
}

/// AttributeModifier bit 31 of a Get/GetTable(PortInfoRecord): CapabilityMask matches as "every
/// bit given is set" rather than equality (IBA 1.2 errata; OpenSM `is_enhanced_comp_mask`).
pub const PIR_ENHANCED_COMP_MASK: u32 = 1 << 31;

/// A PortInfoRecord, every field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortInfoRecordRepr {
    /// EndportLID: the base LID of the port, of switch port 0 for a switch's ports.
    pub lid: u16,
    /// PortNum.
    pub port_num: u8,
    /// Options (reserved before IBA 1.3).
    pub options: u8,
    /// PortInfo.
    pub port_info: PortInfoRepr,
}

impl PortInfoRecordRepr {
    /// Reads the 68 bytes at the start of `data`.
    pub fn parse(data: &[u8]) -> Result<PortInfoRecordRepr> {
        if data.len() < field::LEN {
            return Err(Error::Truncated);
        }
        Ok(PortInfoRecordRepr {
            lid: be16(data, field::LID),
            port_num: data[field::PORT_NUM],
            options: data[field::OPTIONS],
            port_info: PortInfoRepr::parse(&data[field::PORT_INFO..field::LEN])?,
        })
    }

    /// 68 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 68 bytes. Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let buf = &mut buf[..field::LEN];
        put16(buf, field::LID, self.lid);
        buf[field::PORT_NUM] = self.port_num;
        buf[field::OPTIONS] = self.options;
        self.port_info.emit(&mut buf[field::PORT_INFO..]);
    }
}

impl Describe for PortInfoRecordRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("lid", Value::Uint(self.lid.into()));
        d.field("port_num", Value::Uint(self.port_num.into()));
        d.field("options", Value::Hex(self.options.into(), 2));
        self.port_info.describe_as("port_info", d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::sa::Mtu;
    use crate::smp::PortState;
    use proptest::prelude::*;

    fn rec() -> PortInfoRecordRepr {
        PortInfoRecordRepr {
            lid: 0x0102,
            port_num: 3,
            options: 0,
            port_info: PortInfoRepr {
                gid_prefix: 0xfe80_0000_0000_0000,
                lid: 0x0102,
                master_sm_lid: 1,
                local_port_num: 3,
                port_state: PortState::Active,
                neighbor_mtu: Mtu::Mtu2048,
                ..PortInfoRepr::default()
            },
        }
    }

    // IBA 1 §15.2.5.3: EndportLID at 0, PortNum at 2, Options at 3, PortInfo at 4 (its LID at
    // PortInfo byte 16, record byte 20; GidPrefix at PortInfo byte 8).
    #[test]
    fn parse_and_emit() {
        let mut b = [0u8; 68];
        rec().emit(&mut b);
        assert_eq!(&b[0..4], &[0x01, 0x02, 3, 0]);
        assert_eq!(&b[12..20], &[0xfe, 0x80, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&b[20..24], &[0x01, 0x02, 0x00, 0x01]);
        assert_eq!(PortInfoRecordRepr::parse(&b).unwrap(), rec());
        assert_eq!(rec().buffer_len(), 68);
        assert_eq!(PortInfoRecordRepr::parse(&b[..67]), Err(Error::Truncated));
    }

    // IBA 1 §15.2.5.3 / OpenSM `IB_PIR_COMPMASK_*`.
    #[test]
    fn component_mask_bits() {
        assert_eq!(pir_mask::LID, 1);
        assert_eq!(pir_mask::BASE_LID, 0x20);
        assert_eq!(pir_mask::CAPABILITY_MASK, 0x80);
        assert_eq!(pir_mask::PORT_STATE, 0x8000);
        assert_eq!(pir_mask::LMC, 0x10_0000);
        assert_eq!(pir_mask::NEIGHBOR_MTU, 0x80_0000);
        assert_eq!(pir_mask::MTU_CAP, 0x8000_0000);
        assert_eq!(pir_mask::CAPABILITY_MASK2, 1 << 53);
        assert_eq!(pir_mask::LINK_SPEED_EXT_ENABLED, 1 << 57);
    }

    #[test]
    fn describe_fields() {
        let mut c = Collect::default();
        rec().describe(&mut c);
        assert_eq!(c.get("port_num"), Some("3"));
        assert!(c.fields.len() > 40, "{}", c.fields.len());
    }

    proptest! {
        #[test]
        fn round_trip(lid in any::<u16>(), pn in any::<u8>(), opt in any::<u8>(),
                      pi in proptest::collection::vec(any::<u8>(), 64)) {
            // Any PortInfo bytes that survive their own round trip survive the record's.
            let port_info = PortInfoRepr::parse(&pi).unwrap();
            let r = PortInfoRecordRepr { lid, port_num: pn, options: opt, port_info };
            let mut b = [0u8; 68];
            r.emit(&mut b);
            prop_assert_eq!(PortInfoRecordRepr::parse(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(r) = PortInfoRecordRepr::parse(&data) {
                r.describe(&mut Collect::default());
            }
        }
    }
}
