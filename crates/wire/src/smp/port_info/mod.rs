//! PortInfo (IBA 1 §14.2.5.6), the 64 bytes of SMP data (1.3 layout):
//!
//! ```text
//! 0  M_Key(64)
//! 8  GidPrefix(64)
//! 16 LID(16)                     | MasterSMLID(16)
//! 20 CapabilityMask(32)
//! 24 DiagCode(16)                | M_KeyLeasePeriod(16)
//! 28 LocalPortNum | LinkWidthEnabled | LinkWidthSupported | LinkWidthActive
//! 32 LinkSpeedSupported(4) PortState(4) | PortPhysicalState(4) LinkDownDefaultState(4)
//!    | M_KeyProtectBits(2) Reserved(3) LMC(3) | LinkSpeedActive(4) LinkSpeedEnabled(4)
//! 36 NeighborMTU(4) MasterSMSL(4) | VLCap(4) InitType(4) | VLHighLimit | VLArbitrationHighCap
//! 40 VLArbitrationLowCap | InitTypeReply(4) MTUCap(4) | VLStallCount(3) HOQLife(5)
//!    | OperationalVLs(4) PartitionEnforcementInbound(1) PartitionEnforcementOutbound(1)
//!      FilterRawInbound(1) FilterRawOutbound(1)
//! 44 M_KeyViolations(16)         | P_KeyViolations(16)
//! 48 Q_KeyViolations(16)         | GUIDCap | ClientReregister(1)
//!    MulticastPKeyTrapSuppressionEnabled(1) Reserved(1) SubnetTimeOut(5)
//! 52 Reserved(3) RespTimeValue(5) | LocalPhyErrors(4) OverrunErrors(4) | MaxCreditHint(16)
//! 56 Reserved(8) LinkRoundTripLatency(24)
//! 60 CapabilityMask2(16)         | LinkSpeedExtActive(4) LinkSpeedExtSupported(4)
//!    | Reserved(3) LinkSpeedExtEnabled(5)
//! ```
//!
//! Layout checked against OpenSM `ib_port_info_t` and wireshark's `parse_PortInfo` (which stops at
//! LinkRoundTripLatency). MTUs use the encoding of [`Mtu`]; widths and speeds are bit masks, kept as
//! sent.

use crate::sa::Mtu;
use crate::types::{be16, be24, be32, be64, put16, put24, put32, put64};

mod field {
    pub const M_KEY: usize = 0;
    pub const GID_PREFIX: usize = 8;
    pub const LID: usize = 16;
    pub const MASTER_SM_LID: usize = 18;
    pub const CAPABILITY_MASK: usize = 20;
    pub const DIAG_CODE: usize = 24;
    pub const M_KEY_LEASE_PERIOD: usize = 26;
    pub const LOCAL_PORT_NUM: usize = 28;
    pub const LINK_WIDTH_ENABLED: usize = 29;
    pub const LINK_WIDTH_SUPPORTED: usize = 30;
    pub const LINK_WIDTH_ACTIVE: usize = 31;
    /// LinkSpeedSupported(4) | PortState(4).
    pub const SPEED_SUPPORTED_STATE: usize = 32;
    /// PortPhysicalState(4) | LinkDownDefaultState(4).
    pub const PHYS_STATE: usize = 33;
    /// M_KeyProtectBits(2) | Reserved(3) | LMC(3).
    pub const PROTECT_LMC: usize = 34;
    /// LinkSpeedActive(4) | LinkSpeedEnabled(4).
    pub const SPEED_ACTIVE_ENABLED: usize = 35;
    /// NeighborMTU(4) | MasterSMSL(4).
    pub const NEIGHBOR_MTU_SM_SL: usize = 36;
    /// VLCap(4) | InitType(4).
    pub const VL_CAP_INIT_TYPE: usize = 37;
    pub const VL_HIGH_LIMIT: usize = 38;
    pub const VL_ARB_HIGH_CAP: usize = 39;
    pub const VL_ARB_LOW_CAP: usize = 40;
    /// InitTypeReply(4) | MTUCap(4).
    pub const INIT_TYPE_REPLY_MTU_CAP: usize = 41;
    /// VLStallCount(3) | HOQLife(5).
    pub const STALL_HOQ: usize = 42;
    /// OperationalVLs(4) | four enforcement and filter bits.
    pub const OP_VLS_ENFORCEMENT: usize = 43;
    pub const M_KEY_VIOLATIONS: usize = 44;
    pub const P_KEY_VIOLATIONS: usize = 46;
    pub const Q_KEY_VIOLATIONS: usize = 48;
    pub const GUID_CAP: usize = 50;
    /// ClientReregister(1) | MulticastPKeyTrapSuppressionEnabled(1) | Reserved(1) |
    /// SubnetTimeOut(5).
    pub const REREG_TIMEOUT: usize = 51;
    /// Reserved(3) | RespTimeValue(5).
    pub const RESP_TIME_VALUE: usize = 52;
    /// LocalPhyErrors(4) | OverrunErrors(4).
    pub const ERROR_THRESHOLDS: usize = 53;
    pub const MAX_CREDIT_HINT: usize = 54;
    /// Reserved(8) | LinkRoundTripLatency(24).
    pub const RESERVED_LATENCY: usize = 56;
    pub const LINK_ROUND_TRIP_LATENCY: usize = 57;
    pub const CAPABILITY_MASK2: usize = 60;
    /// LinkSpeedExtActive(4) | LinkSpeedExtSupported(4).
    pub const SPEED_EXT: usize = 62;
    /// Reserved(3) | LinkSpeedExtEnabled(5).
    pub const SPEED_EXT_ENABLED: usize = 63;
    pub const LEN: usize = 64;
}

/// CapabilityMask bits (IBA 1 §14.2.5.6; OpenSM `IB_PORT_CAP_*`, wireshark's names).
pub mod cap_mask {
    /// IsSM: an SM runs behind this port.
    pub const IS_SM: u32 = 1 << 1;
    /// IsNoticeSupported.
    pub const IS_NOTICE_SUPPORTED: u32 = 1 << 2;
    /// IsTrapSupported.
    pub const IS_TRAP_SUPPORTED: u32 = 1 << 3;
    /// IsOptionalIPDSupported.
    pub const IS_OPTIONAL_IPD_SUPPORTED: u32 = 1 << 4;
    /// IsAutomaticMigrationSupported.
    pub const IS_AUTOMATIC_MIGRATION_SUPPORTED: u32 = 1 << 5;
    /// IsSLMappingSupported.
    pub const IS_SL_MAPPING_SUPPORTED: u32 = 1 << 6;
    /// IsM_KeyNVRAM.
    pub const IS_M_KEY_NVRAM: u32 = 1 << 7;
    /// IsP_KeyNVRAM.
    pub const IS_P_KEY_NVRAM: u32 = 1 << 8;
    /// IsLEDInfoSupported.
    pub const IS_LED_INFO_SUPPORTED: u32 = 1 << 9;
    /// IsSMdisabled.
    pub const IS_SM_DISABLED: u32 = 1 << 10;
    /// IsSystemImageGUIDSupported.
    pub const IS_SYSTEM_IMAGE_GUID_SUPPORTED: u32 = 1 << 11;
    /// IsP_KeySwitchExternalPortTrapSupported.
    pub const IS_P_KEY_SWITCH_EXTERNAL_PORT_TRAP_SUPPORTED: u32 = 1 << 12;
    /// IsCommunicationManagementSupported.
    pub const IS_COMMUNICATION_MANAGEMENT_SUPPORTED: u32 = 1 << 16;
    /// IsSNMPTunnelingSupported.
    pub const IS_SNMP_TUNNELING_SUPPORTED: u32 = 1 << 17;
    /// IsReinitSupported.
    pub const IS_REINIT_SUPPORTED: u32 = 1 << 18;
    /// IsDeviceManagementSupported.
    pub const IS_DEVICE_MANAGEMENT_SUPPORTED: u32 = 1 << 19;
    /// IsVendorClassSupported.
    pub const IS_VENDOR_CLASS_SUPPORTED: u32 = 1 << 20;
    /// IsDRNoticeSupported.
    pub const IS_DR_NOTICE_SUPPORTED: u32 = 1 << 21;
    /// IsCapabilityMaskNoticeSupported.
    pub const IS_CAPABILITY_MASK_NOTICE_SUPPORTED: u32 = 1 << 22;
    /// IsBootManagementSupported.
    pub const IS_BOOT_MANAGEMENT_SUPPORTED: u32 = 1 << 23;
    /// IsLinkRoundTripLatencySupported.
    pub const IS_LINK_ROUND_TRIP_LATENCY_SUPPORTED: u32 = 1 << 24;
    /// IsClientReregistrationSupported.
    pub const IS_CLIENT_REREGISTRATION_SUPPORTED: u32 = 1 << 25;
    /// IsOtherLocalChangesNoticeSupported.
    pub const IS_OTHER_LOCAL_CHANGES_NOTICE_SUPPORTED: u32 = 1 << 26;
    /// IsLinkSpeedWidthPairsTableSupported.
    pub const IS_LINK_SPEED_WIDTH_PAIRS_TABLE_SUPPORTED: u32 = 1 << 27;
}

code_enum! {
    /// PortState (IBA 1 §14.2.5.6, §7.2). Unknown values are kept.
    pub enum PortState(u8) {
        /// No state change (in a SubnSet; never in a response).
        NoStateChange = 0 => "NoStateChange",
        /// Down (includes failed links).
        Down = 1 => "Down",
        /// Initialize.
        Init = 2 => "Init",
        /// Armed.
        Armed = 3 => "Armed",
        /// Active.
        Active = 4 => "Active",
        /// A value this crate has no name for, kept as received.
        Unknown(_) => "Unknown",
    }
}

code_enum! {
    /// PortPhysicalState (IBA 1 §14.2.5.6, §5.6.2). Unknown values are kept.
    pub enum PortPhysState(u8) {
        /// No state change (in a SubnSet).
        NoStateChange = 0 => "NoStateChange",
        /// Sleep.
        Sleep = 1 => "Sleep",
        /// Polling.
        Polling = 2 => "Polling",
        /// Disabled.
        Disabled = 3 => "Disabled",
        /// PortConfigurationTraining.
        PortConfigurationTraining = 4 => "PortConfigurationTraining",
        /// LinkUp.
        LinkUp = 5 => "LinkUp",
        /// LinkErrorRecovery.
        LinkErrorRecovery = 6 => "LinkErrorRecovery",
        /// PhyTest.
        PhyTest = 7 => "PhyTest",
        /// A value this crate has no name for, kept as received.
        Unknown(_) => "Unknown",
    }
}

fixed_view! {
    /// A zero-copy view of a PortInfo attribute.
    #[derive(Debug, Clone)]
    pub struct PortInfo;
    /// `Err(Truncated)` if shorter than 64 bytes.
    fn check_len(min = field::LEN);
    /// Size of the attribute.
    pub const LEN;
    fn b;
}

/// The high nibble of `b`.
fn hi(b: u8) -> u8 {
    b >> 4
}

/// The low nibble of `b`.
fn lo(b: u8) -> u8 {
    b & 0x0f
}

/// `h` and `l` (4 bits each) as one byte.
fn nibbles(h: u8, l: u8) -> u8 {
    (h << 4) | (l & 0x0f)
}

impl<T: AsRef<[u8]>> PortInfo<T> {
    fn byte(&self, at: usize) -> u8 {
        self.b()[at]
    }
    /// M_Key.
    pub fn mkey(&self) -> u64 {
        be64(self.b(), field::M_KEY)
    }
    /// GidPrefix: the subnet prefix of the port's GIDs.
    pub fn gid_prefix(&self) -> u64 {
        be64(self.b(), field::GID_PREFIX)
    }
    /// LID: the base LID (0 until the SM assigns one).
    pub fn lid(&self) -> u16 {
        be16(self.b(), field::LID)
    }
    /// MasterSMLID: where SA requests go.
    pub fn master_sm_lid(&self) -> u16 {
        be16(self.b(), field::MASTER_SM_LID)
    }
    /// CapabilityMask (bits in [`cap_mask`]).
    pub fn capability_mask(&self) -> u32 {
        be32(self.b(), field::CAPABILITY_MASK)
    }
    /// DiagCode.
    pub fn diag_code(&self) -> u16 {
        be16(self.b(), field::DIAG_CODE)
    }
    /// M_KeyLeasePeriod (seconds).
    pub fn mkey_lease_period(&self) -> u16 {
        be16(self.b(), field::M_KEY_LEASE_PERIOD)
    }
    /// LocalPortNum: the port the SMP was received on.
    pub fn local_port_num(&self) -> u8 {
        self.byte(field::LOCAL_PORT_NUM)
    }
    /// LinkWidthEnabled (bit mask: 1 1x, 2 4x, 4 8x, 8 12x).
    pub fn link_width_enabled(&self) -> u8 {
        self.byte(field::LINK_WIDTH_ENABLED)
    }
    /// LinkWidthSupported (bit mask).
    pub fn link_width_supported(&self) -> u8 {
        self.byte(field::LINK_WIDTH_SUPPORTED)
    }
    /// LinkWidthActive (one bit).
    pub fn link_width_active(&self) -> u8 {
        self.byte(field::LINK_WIDTH_ACTIVE)
    }
    /// LinkSpeedSupported (4 bits, mask: 1 2.5, 2 5, 4 10 Gb/s per lane).
    pub fn link_speed_supported(&self) -> u8 {
        hi(self.byte(field::SPEED_SUPPORTED_STATE))
    }
    /// PortState.
    pub fn port_state(&self) -> PortState {
        PortState::from(lo(self.byte(field::SPEED_SUPPORTED_STATE)))
    }
    /// PortPhysicalState.
    pub fn port_phys_state(&self) -> PortPhysState {
        PortPhysState::from(hi(self.byte(field::PHYS_STATE)))
    }
    /// LinkDownDefaultState (4 bits).
    pub fn link_down_default_state(&self) -> u8 {
        lo(self.byte(field::PHYS_STATE))
    }
    /// M_KeyProtectBits (2 bits).
    pub fn mkey_protect_bits(&self) -> u8 {
        self.byte(field::PROTECT_LMC) >> 6
    }
    /// LMC (3 bits): 2^LMC LIDs from the base LID.
    pub fn lmc(&self) -> u8 {
        self.byte(field::PROTECT_LMC) & 0x07
    }
    /// LinkSpeedActive (4 bits).
    pub fn link_speed_active(&self) -> u8 {
        hi(self.byte(field::SPEED_ACTIVE_ENABLED))
    }
    /// LinkSpeedEnabled (4 bits).
    pub fn link_speed_enabled(&self) -> u8 {
        lo(self.byte(field::SPEED_ACTIVE_ENABLED))
    }
    /// NeighborMTU: the active MTU of the link.
    pub fn neighbor_mtu(&self) -> Mtu {
        Mtu::from(hi(self.byte(field::NEIGHBOR_MTU_SM_SL)))
    }
    /// MasterSMSL (4 bits): the SL to the master SM.
    pub fn master_sm_sl(&self) -> u8 {
        lo(self.byte(field::NEIGHBOR_MTU_SM_SL))
    }
    /// VLCap (4 bits).
    pub fn vl_cap(&self) -> u8 {
        hi(self.byte(field::VL_CAP_INIT_TYPE))
    }
    /// InitType (4 bits).
    pub fn init_type(&self) -> u8 {
        lo(self.byte(field::VL_CAP_INIT_TYPE))
    }
    /// VLHighLimit.
    pub fn vl_high_limit(&self) -> u8 {
        self.byte(field::VL_HIGH_LIMIT)
    }
    /// VLArbitrationHighCap.
    pub fn vl_arbitration_high_cap(&self) -> u8 {
        self.byte(field::VL_ARB_HIGH_CAP)
    }
    /// VLArbitrationLowCap.
    pub fn vl_arbitration_low_cap(&self) -> u8 {
        self.byte(field::VL_ARB_LOW_CAP)
    }
    /// InitTypeReply (4 bits).
    pub fn init_type_reply(&self) -> u8 {
        hi(self.byte(field::INIT_TYPE_REPLY_MTU_CAP))
    }
    /// MTUCap: the largest MTU the port supports.
    pub fn mtu_cap(&self) -> Mtu {
        Mtu::from(lo(self.byte(field::INIT_TYPE_REPLY_MTU_CAP)))
    }
    /// VLStallCount (3 bits).
    pub fn vl_stall_count(&self) -> u8 {
        self.byte(field::STALL_HOQ) >> 5
    }
    /// HOQLife (5 bits).
    pub fn hoq_life(&self) -> u8 {
        self.byte(field::STALL_HOQ) & 0x1f
    }
    /// OperationalVLs (4 bits).
    pub fn operational_vls(&self) -> u8 {
        hi(self.byte(field::OP_VLS_ENFORCEMENT))
    }
    /// PartitionEnforcementInbound.
    pub fn partition_enforcement_inbound(&self) -> bool {
        self.byte(field::OP_VLS_ENFORCEMENT) & 0x08 != 0
    }
    /// PartitionEnforcementOutbound.
    pub fn partition_enforcement_outbound(&self) -> bool {
        self.byte(field::OP_VLS_ENFORCEMENT) & 0x04 != 0
    }
    /// FilterRawInbound.
    pub fn filter_raw_inbound(&self) -> bool {
        self.byte(field::OP_VLS_ENFORCEMENT) & 0x02 != 0
    }
    /// FilterRawOutbound.
    pub fn filter_raw_outbound(&self) -> bool {
        self.byte(field::OP_VLS_ENFORCEMENT) & 0x01 != 0
    }
    /// M_KeyViolations.
    pub fn mkey_violations(&self) -> u16 {
        be16(self.b(), field::M_KEY_VIOLATIONS)
    }
    /// P_KeyViolations.
    pub fn pkey_violations(&self) -> u16 {
        be16(self.b(), field::P_KEY_VIOLATIONS)
    }
    /// Q_KeyViolations.
    pub fn qkey_violations(&self) -> u16 {
        be16(self.b(), field::Q_KEY_VIOLATIONS)
    }
    /// GUIDCap: GUIDs of the port.
    pub fn guid_cap(&self) -> u8 {
        self.byte(field::GUID_CAP)
    }
    /// ClientReregister: the SM asks the port's clients to register again.
    pub fn client_reregister(&self) -> bool {
        self.byte(field::REREG_TIMEOUT) & 0x80 != 0
    }
    /// MulticastPKeyTrapSuppressionEnabled.
    pub fn multicast_pkey_trap_suppression_enabled(&self) -> bool {
        self.byte(field::REREG_TIMEOUT) & 0x40 != 0
    }
    /// SubnetTimeOut (5 bits).
    pub fn subnet_timeout(&self) -> u8 {
        self.byte(field::REREG_TIMEOUT) & 0x1f
    }
    /// RespTimeValue (5 bits).
    pub fn resp_time_value(&self) -> u8 {
        self.byte(field::RESP_TIME_VALUE) & 0x1f
    }
    /// LocalPhyErrors (4 bits).
    pub fn local_phy_errors(&self) -> u8 {
        hi(self.byte(field::ERROR_THRESHOLDS))
    }
    /// OverrunErrors (4 bits).
    pub fn overrun_errors(&self) -> u8 {
        lo(self.byte(field::ERROR_THRESHOLDS))
    }
    /// MaxCreditHint.
    pub fn max_credit_hint(&self) -> u16 {
        be16(self.b(), field::MAX_CREDIT_HINT)
    }
    /// LinkRoundTripLatency (24 bits).
    pub fn link_round_trip_latency(&self) -> u32 {
        be24(self.b(), field::LINK_ROUND_TRIP_LATENCY)
    }
    /// CapabilityMask2.
    pub fn capability_mask2(&self) -> u16 {
        be16(self.b(), field::CAPABILITY_MASK2)
    }
    /// LinkSpeedExtActive (4 bits).
    pub fn link_speed_ext_active(&self) -> u8 {
        hi(self.byte(field::SPEED_EXT))
    }
    /// LinkSpeedExtSupported (4 bits).
    pub fn link_speed_ext_supported(&self) -> u8 {
        lo(self.byte(field::SPEED_EXT))
    }
    /// LinkSpeedExtEnabled (5 bits).
    pub fn link_speed_ext_enabled(&self) -> u8 {
        self.byte(field::SPEED_EXT_ENABLED) & 0x1f
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PortInfo<T> {
    fn m(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    /// Sets M_Key.
    pub fn set_mkey(&mut self, v: u64) {
        put64(self.m(), field::M_KEY, v);
    }
    /// Sets GidPrefix.
    pub fn set_gid_prefix(&mut self, v: u64) {
        put64(self.m(), field::GID_PREFIX, v);
    }
    /// Sets LID.
    pub fn set_lid(&mut self, v: u16) {
        put16(self.m(), field::LID, v);
    }
    /// Sets MasterSMLID.
    pub fn set_master_sm_lid(&mut self, v: u16) {
        put16(self.m(), field::MASTER_SM_LID, v);
    }
    /// Sets CapabilityMask.
    pub fn set_capability_mask(&mut self, v: u32) {
        put32(self.m(), field::CAPABILITY_MASK, v);
    }
    /// Sets DiagCode.
    pub fn set_diag_code(&mut self, v: u16) {
        put16(self.m(), field::DIAG_CODE, v);
    }
    /// Sets M_KeyLeasePeriod.
    pub fn set_mkey_lease_period(&mut self, v: u16) {
        put16(self.m(), field::M_KEY_LEASE_PERIOD, v);
    }
    /// Sets LocalPortNum.
    pub fn set_local_port_num(&mut self, v: u8) {
        self.m()[field::LOCAL_PORT_NUM] = v;
    }
    /// Sets LinkWidthEnabled, LinkWidthSupported and LinkWidthActive.
    pub fn set_link_width(&mut self, enabled: u8, supported: u8, active: u8) {
        self.m()[field::LINK_WIDTH_ENABLED] = enabled;
        self.m()[field::LINK_WIDTH_SUPPORTED] = supported;
        self.m()[field::LINK_WIDTH_ACTIVE] = active;
    }
    /// Sets LinkSpeedSupported (4 bits) and PortState.
    pub fn set_speed_supported_and_state(&mut self, supported: u8, state: PortState) {
        self.m()[field::SPEED_SUPPORTED_STATE] = nibbles(supported, state.into());
    }
    /// Sets PortPhysicalState and LinkDownDefaultState (4 bits).
    pub fn set_phys_state(&mut self, phys: PortPhysState, link_down_default: u8) {
        self.m()[field::PHYS_STATE] = nibbles(phys.into(), link_down_default);
    }
    /// Sets M_KeyProtectBits (2 bits) and LMC (3 bits), the reserved bits between them zero.
    pub fn set_protect_bits_and_lmc(&mut self, protect: u8, lmc: u8) {
        self.m()[field::PROTECT_LMC] = (protect << 6) | (lmc & 0x07);
    }
    /// Sets LinkSpeedActive and LinkSpeedEnabled (4 bits each).
    pub fn set_speed_active_enabled(&mut self, active: u8, enabled: u8) {
        self.m()[field::SPEED_ACTIVE_ENABLED] = nibbles(active, enabled);
    }
    /// Sets NeighborMTU and MasterSMSL (4 bits).
    pub fn set_neighbor_mtu_and_sm_sl(&mut self, mtu: Mtu, sm_sl: u8) {
        self.m()[field::NEIGHBOR_MTU_SM_SL] = nibbles(mtu.into(), sm_sl);
    }
    /// Sets VLCap and InitType (4 bits each).
    pub fn set_vl_cap_and_init_type(&mut self, vl_cap: u8, init_type: u8) {
        self.m()[field::VL_CAP_INIT_TYPE] = nibbles(vl_cap, init_type);
    }
    /// Sets VLHighLimit, VLArbitrationHighCap and VLArbitrationLowCap.
    pub fn set_vl_arbitration(&mut self, high_limit: u8, high_cap: u8, low_cap: u8) {
        self.m()[field::VL_HIGH_LIMIT] = high_limit;
        self.m()[field::VL_ARB_HIGH_CAP] = high_cap;
        self.m()[field::VL_ARB_LOW_CAP] = low_cap;
    }
    /// Sets InitTypeReply (4 bits) and MTUCap.
    pub fn set_init_type_reply_and_mtu_cap(&mut self, reply: u8, mtu_cap: Mtu) {
        self.m()[field::INIT_TYPE_REPLY_MTU_CAP] = nibbles(reply, mtu_cap.into());
    }
    /// Sets VLStallCount (3 bits) and HOQLife (5 bits).
    pub fn set_stall_count_and_hoq_life(&mut self, stall: u8, hoq: u8) {
        self.m()[field::STALL_HOQ] = (stall << 5) | (hoq & 0x1f);
    }
    /// Sets OperationalVLs (4 bits) and the partition enforcement and raw filter bits.
    pub fn set_operational_vls_and_enforcement(
        &mut self,
        op_vls: u8,
        [pe_in, pe_out, raw_in, raw_out]: [bool; 4],
    ) {
        let bits = u8::from(pe_in) << 3 | u8::from(pe_out) << 2 | u8::from(raw_in) << 1;
        self.m()[field::OP_VLS_ENFORCEMENT] = (op_vls << 4) | bits | u8::from(raw_out);
    }
    /// Sets M_KeyViolations, P_KeyViolations and Q_KeyViolations.
    pub fn set_violations(&mut self, mkey: u16, pkey: u16, qkey: u16) {
        put16(self.m(), field::M_KEY_VIOLATIONS, mkey);
        put16(self.m(), field::P_KEY_VIOLATIONS, pkey);
        put16(self.m(), field::Q_KEY_VIOLATIONS, qkey);
    }
    /// Sets GUIDCap.
    pub fn set_guid_cap(&mut self, v: u8) {
        self.m()[field::GUID_CAP] = v;
    }
    /// Sets ClientReregister, MulticastPKeyTrapSuppressionEnabled and SubnetTimeOut (5 bits),
    /// the reserved bit zero.
    pub fn set_reregister_and_subnet_timeout(
        &mut self,
        client_reregister: bool,
        trap_suppression: bool,
        timeout: u8,
    ) {
        let flags = u8::from(client_reregister) << 7 | u8::from(trap_suppression) << 6;
        self.m()[field::REREG_TIMEOUT] = flags | (timeout & 0x1f);
    }
    /// Sets RespTimeValue (5 bits), the reserved bits zero.
    pub fn set_resp_time_value(&mut self, v: u8) {
        self.m()[field::RESP_TIME_VALUE] = v & 0x1f;
    }
    /// Sets LocalPhyErrors and OverrunErrors (4 bits each).
    pub fn set_error_thresholds(&mut self, local_phy: u8, overrun: u8) {
        self.m()[field::ERROR_THRESHOLDS] = nibbles(local_phy, overrun);
    }
    /// Sets MaxCreditHint.
    pub fn set_max_credit_hint(&mut self, v: u16) {
        put16(self.m(), field::MAX_CREDIT_HINT, v);
    }
    /// Sets LinkRoundTripLatency (24 bits), the reserved byte before it zero.
    pub fn set_link_round_trip_latency(&mut self, v: u32) {
        self.m()[field::RESERVED_LATENCY] = 0;
        put24(self.m(), field::LINK_ROUND_TRIP_LATENCY, v);
    }
    /// Sets CapabilityMask2.
    pub fn set_capability_mask2(&mut self, v: u16) {
        put16(self.m(), field::CAPABILITY_MASK2, v);
    }
    /// Sets LinkSpeedExtActive, LinkSpeedExtSupported (4 bits each) and LinkSpeedExtEnabled
    /// (5 bits), the reserved bits zero.
    pub fn set_link_speed_ext(&mut self, active: u8, supported: u8, enabled: u8) {
        self.m()[field::SPEED_EXT] = nibbles(active, supported);
        self.m()[field::SPEED_EXT_ENABLED] = enabled & 0x1f;
    }
}

mod repr;
pub use repr::PortInfoRepr;

#[cfg(test)]
pub(crate) mod tests;
