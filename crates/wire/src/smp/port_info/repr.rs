//! [`PortInfoRepr`]: every field of a PortInfo as one value, read and written through the
//! [`PortInfo`] view.

use super::{field, PortInfo, PortPhysState, PortState};
use crate::describe::{Describe, Describer, Value};
use crate::sa::Mtu;
use crate::Result;

/// A PortInfo, every field (IBA 1 §14.2.5.6). Bit fields narrower than their type are masked on
/// emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PortInfoRepr {
    /// M_Key.
    pub mkey: u64,
    /// GidPrefix.
    pub gid_prefix: u64,
    /// LID.
    pub lid: u16,
    /// MasterSMLID.
    pub master_sm_lid: u16,
    /// CapabilityMask (bits in [`super::cap_mask`]).
    pub capability_mask: u32,
    /// DiagCode.
    pub diag_code: u16,
    /// M_KeyLeasePeriod.
    pub mkey_lease_period: u16,
    /// LocalPortNum.
    pub local_port_num: u8,
    /// LinkWidthEnabled.
    pub link_width_enabled: u8,
    /// LinkWidthSupported.
    pub link_width_supported: u8,
    /// LinkWidthActive.
    pub link_width_active: u8,
    /// LinkSpeedSupported (4 bits).
    pub link_speed_supported: u8,
    /// PortState (4 bits).
    pub port_state: PortState,
    /// PortPhysicalState (4 bits).
    pub port_phys_state: PortPhysState,
    /// LinkDownDefaultState (4 bits).
    pub link_down_default_state: u8,
    /// M_KeyProtectBits (2 bits).
    pub mkey_protect_bits: u8,
    /// LMC (3 bits).
    pub lmc: u8,
    /// LinkSpeedActive (4 bits).
    pub link_speed_active: u8,
    /// LinkSpeedEnabled (4 bits).
    pub link_speed_enabled: u8,
    /// NeighborMTU (4 bits).
    pub neighbor_mtu: Mtu,
    /// MasterSMSL (4 bits).
    pub master_sm_sl: u8,
    /// VLCap (4 bits).
    pub vl_cap: u8,
    /// InitType (4 bits).
    pub init_type: u8,
    /// VLHighLimit.
    pub vl_high_limit: u8,
    /// VLArbitrationHighCap.
    pub vl_arbitration_high_cap: u8,
    /// VLArbitrationLowCap.
    pub vl_arbitration_low_cap: u8,
    /// InitTypeReply (4 bits).
    pub init_type_reply: u8,
    /// MTUCap (4 bits).
    pub mtu_cap: Mtu,
    /// VLStallCount (3 bits).
    pub vl_stall_count: u8,
    /// HOQLife (5 bits).
    pub hoq_life: u8,
    /// OperationalVLs (4 bits).
    pub operational_vls: u8,
    /// PartitionEnforcementInbound.
    pub partition_enforcement_inbound: bool,
    /// PartitionEnforcementOutbound.
    pub partition_enforcement_outbound: bool,
    /// FilterRawInbound.
    pub filter_raw_inbound: bool,
    /// FilterRawOutbound.
    pub filter_raw_outbound: bool,
    /// M_KeyViolations.
    pub mkey_violations: u16,
    /// P_KeyViolations.
    pub pkey_violations: u16,
    /// Q_KeyViolations.
    pub qkey_violations: u16,
    /// GUIDCap.
    pub guid_cap: u8,
    /// ClientReregister.
    pub client_reregister: bool,
    /// MulticastPKeyTrapSuppressionEnabled.
    pub multicast_pkey_trap_suppression_enabled: bool,
    /// SubnetTimeOut (5 bits).
    pub subnet_timeout: u8,
    /// RespTimeValue (5 bits).
    pub resp_time_value: u8,
    /// LocalPhyErrors (4 bits).
    pub local_phy_errors: u8,
    /// OverrunErrors (4 bits).
    pub overrun_errors: u8,
    /// MaxCreditHint.
    pub max_credit_hint: u16,
    /// LinkRoundTripLatency (24 bits).
    pub link_round_trip_latency: u32,
    /// CapabilityMask2.
    pub capability_mask2: u16,
    /// LinkSpeedExtActive (4 bits).
    pub link_speed_ext_active: u8,
    /// LinkSpeedExtSupported (4 bits).
    pub link_speed_ext_supported: u8,
    /// LinkSpeedExtEnabled (5 bits).
    pub link_speed_ext_enabled: u8,
}

impl Default for PortInfoRepr {
    /// Every field zero (MTUs as code 0, states "no state change").
    fn default() -> Self {
        PortInfoRepr::from_view(&PortInfo::new_unchecked([0u8; field::LEN]))
    }
}

impl PortInfoRepr {
    /// Reads every field from the first 64 bytes of `data`.
    pub fn parse(data: &[u8]) -> Result<PortInfoRepr> {
        Ok(PortInfoRepr::from_view(&PortInfo::new_checked(data)?))
    }

    /// Every field of a view of at least 64 bytes.
    fn from_view<T: AsRef<[u8]>>(v: &PortInfo<T>) -> PortInfoRepr {
        PortInfoRepr {
            mkey: v.mkey(),
            gid_prefix: v.gid_prefix(),
            lid: v.lid(),
            master_sm_lid: v.master_sm_lid(),
            capability_mask: v.capability_mask(),
            diag_code: v.diag_code(),
            mkey_lease_period: v.mkey_lease_period(),
            local_port_num: v.local_port_num(),
            link_width_enabled: v.link_width_enabled(),
            link_width_supported: v.link_width_supported(),
            link_width_active: v.link_width_active(),
            link_speed_supported: v.link_speed_supported(),
            port_state: v.port_state(),
            port_phys_state: v.port_phys_state(),
            link_down_default_state: v.link_down_default_state(),
            mkey_protect_bits: v.mkey_protect_bits(),
            lmc: v.lmc(),
            link_speed_active: v.link_speed_active(),
            link_speed_enabled: v.link_speed_enabled(),
            neighbor_mtu: v.neighbor_mtu(),
            master_sm_sl: v.master_sm_sl(),
            vl_cap: v.vl_cap(),
            init_type: v.init_type(),
            vl_high_limit: v.vl_high_limit(),
            vl_arbitration_high_cap: v.vl_arbitration_high_cap(),
            vl_arbitration_low_cap: v.vl_arbitration_low_cap(),
            init_type_reply: v.init_type_reply(),
            mtu_cap: v.mtu_cap(),
            vl_stall_count: v.vl_stall_count(),
            hoq_life: v.hoq_life(),
            operational_vls: v.operational_vls(),
            partition_enforcement_inbound: v.partition_enforcement_inbound(),
            partition_enforcement_outbound: v.partition_enforcement_outbound(),
            filter_raw_inbound: v.filter_raw_inbound(),
            filter_raw_outbound: v.filter_raw_outbound(),
            mkey_violations: v.mkey_violations(),
            pkey_violations: v.pkey_violations(),
            qkey_violations: v.qkey_violations(),
            guid_cap: v.guid_cap(),
            client_reregister: v.client_reregister(),
            multicast_pkey_trap_suppression_enabled: v.multicast_pkey_trap_suppression_enabled(),
            subnet_timeout: v.subnet_timeout(),
            resp_time_value: v.resp_time_value(),
            local_phy_errors: v.local_phy_errors(),
            overrun_errors: v.overrun_errors(),
            max_credit_hint: v.max_credit_hint(),
            link_round_trip_latency: v.link_round_trip_latency(),
            capability_mask2: v.capability_mask2(),
            link_speed_ext_active: v.link_speed_ext_active(),
            link_speed_ext_supported: v.link_speed_ext_supported(),
            link_speed_ext_enabled: v.link_speed_ext_enabled(),
        }
    }

    /// 64 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// True once the SM brought the port up: PortState Active, a LID and a master SM LID.
    pub fn is_up(&self) -> bool {
        self.port_state == PortState::Active && self.lid != 0 && self.master_sm_lid != 0
    }

    /// Writes the 64 bytes (fields masked to their widths, reserved bits zero). Panics if `buf`
    /// is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let mut v = PortInfo::new_unchecked(&mut buf[..field::LEN]);
        v.set_mkey(self.mkey);
        v.set_gid_prefix(self.gid_prefix);
        v.set_lid(self.lid);
        v.set_master_sm_lid(self.master_sm_lid);
        v.set_capability_mask(self.capability_mask);
        v.set_diag_code(self.diag_code);
        v.set_mkey_lease_period(self.mkey_lease_period);
        v.set_local_port_num(self.local_port_num);
        v.set_link_width(
            self.link_width_enabled,
            self.link_width_supported,
            self.link_width_active,
        );
        v.set_speed_supported_and_state(self.link_speed_supported, self.port_state);
        v.set_phys_state(self.port_phys_state, self.link_down_default_state);
        v.set_protect_bits_and_lmc(self.mkey_protect_bits, self.lmc);
        v.set_speed_active_enabled(self.link_speed_active, self.link_speed_enabled);
        v.set_neighbor_mtu_and_sm_sl(self.neighbor_mtu, self.master_sm_sl);
        v.set_vl_cap_and_init_type(self.vl_cap, self.init_type);
        v.set_vl_arbitration(
            self.vl_high_limit,
            self.vl_arbitration_high_cap,
            self.vl_arbitration_low_cap,
        );
        v.set_init_type_reply_and_mtu_cap(self.init_type_reply, self.mtu_cap);
        v.set_stall_count_and_hoq_life(self.vl_stall_count, self.hoq_life);
        v.set_operational_vls_and_enforcement(
            self.operational_vls,
            [
                self.partition_enforcement_inbound,
                self.partition_enforcement_outbound,
                self.filter_raw_inbound,
                self.filter_raw_outbound,
            ],
        );
        v.set_violations(
            self.mkey_violations,
            self.pkey_violations,
            self.qkey_violations,
        );
        v.set_guid_cap(self.guid_cap);
        v.set_reregister_and_subnet_timeout(
            self.client_reregister,
            self.multicast_pkey_trap_suppression_enabled,
            self.subnet_timeout,
        );
        v.set_resp_time_value(self.resp_time_value);
        v.set_error_thresholds(self.local_phy_errors, self.overrun_errors);
        v.set_max_credit_hint(self.max_credit_hint);
        v.set_link_round_trip_latency(self.link_round_trip_latency);
        v.set_capability_mask2(self.capability_mask2);
        v.set_link_speed_ext(
            self.link_speed_ext_active,
            self.link_speed_ext_supported,
            self.link_speed_ext_enabled,
        );
    }
}

impl Describe for PortInfoRepr {
    fn describe(&self, d: &mut dyn Describer) {
        let u = |v: u8| Value::Uint(v.into());
        let flag = Value::Bool;
        d.field("m_key", Value::Hex(self.mkey, 16));
        d.field("gid_prefix", Value::Hex(self.gid_prefix, 16));
        d.field("lid", Value::Hex(self.lid.into(), 4));
        d.field("master_sm_lid", Value::Hex(self.master_sm_lid.into(), 4));
        d.field(
            "capability_mask",
            Value::Hex(self.capability_mask.into(), 8),
        );
        d.field("diag_code", Value::Hex(self.diag_code.into(), 4));
        d.field(
            "m_key_lease_period",
            Value::Uint(self.mkey_lease_period.into()),
        );
        d.field("local_port_num", u(self.local_port_num));
        d.field(
            "link_width_enabled",
            Value::Hex(self.link_width_enabled.into(), 2),
        );
        d.field(
            "link_width_supported",
            Value::Hex(self.link_width_supported.into(), 2),
        );
        d.field(
            "link_width_active",
            Value::Hex(self.link_width_active.into(), 2),
        );
        d.field(
            "link_speed_supported",
            Value::Hex(self.link_speed_supported.into(), 1),
        );
        d.field(
            "port_state",
            Value::Named(u8::from(self.port_state).into(), self.port_state.name()),
        );
        d.field(
            "port_phys_state",
            Value::Named(
                u8::from(self.port_phys_state).into(),
                self.port_phys_state.name(),
            ),
        );
        d.field("link_down_default_state", u(self.link_down_default_state));
        d.field("m_key_protect_bits", u(self.mkey_protect_bits));
        d.field("lmc", u(self.lmc));
        d.field(
            "link_speed_active",
            Value::Hex(self.link_speed_active.into(), 1),
        );
        d.field(
            "link_speed_enabled",
            Value::Hex(self.link_speed_enabled.into(), 1),
        );
        d.field(
            "neighbor_mtu",
            Value::Named(u8::from(self.neighbor_mtu).into(), self.neighbor_mtu.name()),
        );
        d.field("master_sm_sl", u(self.master_sm_sl));
        d.field("vl_cap", u(self.vl_cap));
        d.field("init_type", u(self.init_type));
        d.field("vl_high_limit", u(self.vl_high_limit));
        d.field("vl_arbitration_high_cap", u(self.vl_arbitration_high_cap));
        d.field("vl_arbitration_low_cap", u(self.vl_arbitration_low_cap));
        d.field("init_type_reply", u(self.init_type_reply));
        d.field(
            "mtu_cap",
            Value::Named(u8::from(self.mtu_cap).into(), self.mtu_cap.name()),
        );
        d.field("vl_stall_count", u(self.vl_stall_count));
        d.field("hoq_life", u(self.hoq_life));
        d.field("operational_vls", u(self.operational_vls));
        d.field(
            "partition_enforcement_inbound",
            flag(self.partition_enforcement_inbound),
        );
        d.field(
            "partition_enforcement_outbound",
            flag(self.partition_enforcement_outbound),
        );
        d.field("filter_raw_inbound", flag(self.filter_raw_inbound));
        d.field("filter_raw_outbound", flag(self.filter_raw_outbound));
        d.field("m_key_violations", Value::Uint(self.mkey_violations.into()));
        d.field("p_key_violations", Value::Uint(self.pkey_violations.into()));
        d.field("q_key_violations", Value::Uint(self.qkey_violations.into()));
        d.field("guid_cap", u(self.guid_cap));
        d.field("client_reregister", flag(self.client_reregister));
        d.field(
            "multicast_pkey_trap_suppression_enabled",
            flag(self.multicast_pkey_trap_suppression_enabled),
        );
        d.field("subnet_timeout", u(self.subnet_timeout));
        d.field("resp_time_value", u(self.resp_time_value));
        d.field("local_phy_errors", u(self.local_phy_errors));
        d.field("overrun_errors", u(self.overrun_errors));
        d.field("max_credit_hint", Value::Uint(self.max_credit_hint.into()));
        d.field(
            "link_round_trip_latency",
            Value::Uint(self.link_round_trip_latency.into()),
        );
        d.field(
            "capability_mask2",
            Value::Hex(self.capability_mask2.into(), 4),
        );
        d.field("link_speed_ext_active", u(self.link_speed_ext_active));
        d.field("link_speed_ext_supported", u(self.link_speed_ext_supported));
        d.field("link_speed_ext_enabled", u(self.link_speed_ext_enabled));
    }
}
