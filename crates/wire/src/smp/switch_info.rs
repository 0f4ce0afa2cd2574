//! SwitchInfo (IBA 1 §14.2.5.4), the first 20 bytes of the SMP data:
//!
//! ```text
//! 0  LinearFDBCap(16)            | RandomFDBCap(16)
//! 4  MulticastFDBCap(16)         | LinearFDBTop(16)
//! 8  DefaultPort | DefaultMulticastPrimaryPort | DefaultMulticastNotPrimaryPort
//!    | LifeTimeValue(5) PortStateChange(1) OptimizedSLtoVLMappingProgramming(2)
//! 12 LIDsPerPort(16)             | PartitionEnforcementCap(16)
//! 16 InboundEnforcementCap(1) OutboundEnforcementCap(1) FilterRawInboundCap(1)
//!    FilterRawOutboundCap(1) EnhancedPortZero(1) Reserved(3) | Reserved(8) | MulticastFDBTop(16)
//! ```
//!
//! Layout checked against OpenSM `ib_switch_info_t` and wireshark's `parse_SwitchInfo` (which does
//! not show MulticastFDBTop).

use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, put16};
use crate::Result;

mod field {
    pub const LINEAR_FDB_CAP: usize = 0;
    pub const RANDOM_FDB_CAP: usize = 2;
    pub const MULTICAST_FDB_CAP: usize = 4;
    pub const LINEAR_FDB_TOP: usize = 6;
    pub const DEFAULT_PORT: usize = 8;
    pub const DEFAULT_MCAST_PRIMARY_PORT: usize = 9;
    pub const DEFAULT_MCAST_NOT_PRIMARY_PORT: usize = 10;
    /// LifeTimeValue(5) | PortStateChange(1) | OptimizedSLtoVLMappingProgramming(2).
    pub const LIFE_STATE: usize = 11;
    pub const LIDS_PER_PORT: usize = 12;
    pub const PARTITION_ENFORCEMENT_CAP: usize = 14;
    /// The five capability flags, then 3 reserved bits.
    pub const FLAGS: usize = 16;
    pub const RESERVED: usize = 17;
    pub const MULTICAST_FDB_TOP: usize = 18;
    pub const LEN: usize = 20;
}

fixed_view! {
    /// A zero-copy view of a SwitchInfo attribute.
    #[derive(Debug, Clone)]
    pub struct SwitchInfo;
    /// `Err(Truncated)` if shorter than 20 bytes.
    fn check_len(min = field::LEN);
    /// Size of the attribute's fields (the rest of the SMP data is reserved).
    pub const LEN;
    fn b;
}

impl<T: AsRef<[u8]>> SwitchInfo<T> {
    /// LinearFDBCap: entries the linear forwarding table can hold.
    pub fn linear_fdb_cap(&self) -> u16 {
        be16(self.b(), field::LINEAR_FDB_CAP)
    }
    /// RandomFDBCap.
    pub fn random_fdb_cap(&self) -> u16 {
        be16(self.b(), field::RANDOM_FDB_CAP)
    }
    /// MulticastFDBCap.
    pub fn multicast_fdb_cap(&self) -> u16 {
        be16(self.b(), field::MULTICAST_FDB_CAP)
    }
    /// LinearFDBTop: the highest LID the linear forwarding table holds.
    pub fn linear_fdb_top(&self) -> u16 {
        be16(self.b(), field::LINEAR_FDB_TOP)
    }
    /// DefaultPort.
    pub fn default_port(&self) -> u8 {
        self.b()[field::DEFAULT_PORT]
    }
    /// DefaultMulticastPrimaryPort.
    pub fn default_multicast_primary_port(&self) -> u8 {
        self.b()[field::DEFAULT_MCAST_PRIMARY_PORT]
    }
    /// DefaultMulticastNotPrimaryPort.
    pub fn default_multicast_not_primary_port(&self) -> u8 {
        self.b()[field::DEFAULT_MCAST_NOT_PRIMARY_PORT]
    }
    /// LifeTimeValue (5 bits).
    pub fn life_time_value(&self) -> u8 {
        self.b()[field::LIFE_STATE] >> 3
    }
    /// PortStateChange: a port of the switch changed state.
    pub fn port_state_change(&self) -> bool {
        self.b()[field::LIFE_STATE] & 0x04 != 0
    }
    /// OptimizedSLtoVLMappingProgramming (2 bits).
    pub fn optimized_sl_to_vl_mapping_programming(&self) -> u8 {
        self.b()[field::LIFE_STATE] & 0x03
    }
    /// LIDsPerPort.
    pub fn lids_per_port(&self) -> u16 {
        be16(self.b(), field::LIDS_PER_PORT)
    }
    /// PartitionEnforcementCap.
    pub fn partition_enforcement_cap(&self) -> u16 {
        be16(self.b(), field::PARTITION_ENFORCEMENT_CAP)
    }
    /// InboundEnforcementCap.
    pub fn inbound_enforcement_cap(&self) -> bool {
        self.b()[field::FLAGS] & 0x80 != 0
    }
    /// OutboundEnforcementCap.
    pub fn outbound_enforcement_cap(&self) -> bool {
        self.b()[field::FLAGS] & 0x40 != 0
    }
    /// FilterRawInboundCap.
    pub fn filter_raw_inbound_cap(&self) -> bool {
        self.b()[field::FLAGS] & 0x20 != 0
    }
    /// FilterRawOutboundCap.
    pub fn filter_raw_outbound_cap(&self) -> bool {
        self.b()[field::FLAGS] & 0x10 != 0
    }
    /// EnhancedPortZero.
    pub fn enhanced_port_zero(&self) -> bool {
        self.b()[field::FLAGS] & 0x08 != 0
    }
    /// MulticastFDBTop: the top MLID of the multicast forwarding table (IBA 1 §14.2.5.4; below
    /// 0xC000: no entry).
    pub fn multicast_fdb_top(&self) -> u16 {
        be16(self.b(), field::MULTICAST_FDB_TOP)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SwitchInfo<T> {
    fn m(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    /// Sets LinearFDBCap, RandomFDBCap and MulticastFDBCap.
    pub fn set_fdb_caps(&mut self, linear: u16, random: u16, multicast: u16) {
        put16(self.m(), field::LINEAR_FDB_CAP, linear);
        put16(self.m(), field::RANDOM_FDB_CAP, random);
        put16(self.m(), field::MULTICAST_FDB_CAP, multicast);
    }
    /// Sets LinearFDBTop.
    pub fn set_linear_fdb_top(&mut self, v: u16) {
        put16(self.m(), field::LINEAR_FDB_TOP, v);
    }
    /// Sets DefaultPort, DefaultMulticastPrimaryPort and DefaultMulticastNotPrimaryPort.
    pub fn set_default_ports(&mut self, port: u8, mcast_primary: u8, mcast_not_primary: u8) {
        self.m()[field::DEFAULT_PORT] = port;
        self.m()[field::DEFAULT_MCAST_PRIMARY_PORT] = mcast_primary;
        self.m()[field::DEFAULT_MCAST_NOT_PRIMARY_PORT] = mcast_not_primary;
    }
    /// Sets LifeTimeValue (5 bits), PortStateChange and OptimizedSLtoVLMappingProgramming (2 bits).
    pub fn set_life_state(&mut self, life_time: u8, state_change: bool, optimized_sl_to_vl: u8) {
        self.m()[field::LIFE_STATE] =
            (life_time << 3) | (u8::from(state_change) << 2) | (optimized_sl_to_vl & 0x03);
    }
    /// Sets LIDsPerPort.
    pub fn set_lids_per_port(&mut self, v: u16) {
        put16(self.m(), field::LIDS_PER_PORT, v);
    }
    /// Sets PartitionEnforcementCap.
    pub fn set_partition_enforcement_cap(&mut self, v: u16) {
        put16(self.m(), field::PARTITION_ENFORCEMENT_CAP, v);
    }
    /// Sets the five capability flags (inbound and outbound enforcement, raw inbound and outbound
    /// filtering, enhanced port 0), the reserved bits after them zero.
    pub fn set_flags(&mut self, [ie, oe, fi, fo, ep0]: [bool; 5]) {
        let f = u8::from(ie) << 7 | u8::from(oe) << 6 | u8::from(fi) << 5 | u8::from(fo) << 4;
        self.m()[field::FLAGS] = f | u8::from(ep0) << 3;
        self.m()[field::RESERVED] = 0;
    }
    /// Sets MulticastFDBTop.
    pub fn set_multicast_fdb_top(&mut self, v: u16) {
        put16(self.m(), field::MULTICAST_FDB_TOP, v);
    }
}

/// A SwitchInfo, every field (IBA 1 §14.2.5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SwitchInfoRepr {
    /// LinearFDBCap.
    pub linear_fdb_cap: u16,
    /// RandomFDBCap.
    pub random_fdb_cap: u16,
    /// MulticastFDBCap.
    pub multicast_fdb_cap: u16,
    /// LinearFDBTop.
    pub linear_fdb_top: u16,
    /// DefaultPort.
    pub default_port: u8,
    /// DefaultMulticastPrimaryPort.
    pub default_multicast_primary_port: u8,
    /// DefaultMulticastNotPrimaryPort.
    pub default_multicast_not_primary_port: u8,
    /// LifeTimeValue (5 bits).
    pub life_time_value: u8,
    /// PortStateChange.
    pub port_state_change: bool,
    /// OptimizedSLtoVLMappingProgramming (2 bits).
    pub optimized_sl_to_vl_mapping_programming: u8,
    /// LIDsPerPort.
    pub lids_per_port: u16,
    /// PartitionEnforcementCap.
    pub partition_enforcement_cap: u16,
    /// InboundEnforcementCap.
    pub inbound_enforcement_cap: bool,
    /// OutboundEnforcementCap.
    pub outbound_enforcement_cap: bool,
    /// FilterRawInboundCap.
    pub filter_raw_inbound_cap: bool,
    /// FilterRawOutboundCap.
    pub filter_raw_outbound_cap: bool,
    /// EnhancedPortZero.
    pub enhanced_port_zero: bool,
    /// MulticastFDBTop.
    pub multicast_fdb_top: u16,
}

impl SwitchInfoRepr {
    /// Reads every field from the first 20 bytes of `data`.
    pub fn parse(data: &[u8]) -> Result<SwitchInfoRepr> {
        let v = SwitchInfo::new_checked(data)?;
        Ok(SwitchInfoRepr {
            linear_fdb_cap: v.linear_fdb_cap(),
            random_fdb_cap: v.random_fdb_cap(),
            multicast_fdb_cap: v.multicast_fdb_cap(),
            linear_fdb_top: v.linear_fdb_top(),
            default_port: v.default_port(),
            default_multicast_primary_port: v.default_multicast_primary_port(),
            default_multicast_not_primary_port: v.default_multicast_not_primary_port(),
            life_time_value: v.life_time_value(),
            port_state_change: v.port_state_change(),
            optimized_sl_to_vl_mapping_programming: v.optimized_sl_to_vl_mapping_programming(),
            lids_per_port: v.lids_per_port(),
            partition_enforcement_cap: v.partition_enforcement_cap(),
            inbound_enforcement_cap: v.inbound_enforcement_cap(),
            outbound_enforcement_cap: v.outbound_enforcement_cap(),
            filter_raw_inbound_cap: v.filter_raw_inbound_cap(),
            filter_raw_outbound_cap: v.filter_raw_outbound_cap(),
            enhanced_port_zero: v.enhanced_port_zero(),
            multicast_fdb_top: v.multicast_fdb_top(),
        })
    }

    /// 20 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 20 bytes (fields masked, reserved bits zero). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let mut v = SwitchInfo::new_unchecked(&mut buf[..field::LEN]);
        v.set_fdb_caps(
            self.linear_fdb_cap,
            self.random_fdb_cap,
            self.multicast_fdb_cap,
        );
        v.set_linear_fdb_top(self.linear_fdb_top);
        v.set_default_ports(
            self.default_port,
            self.default_multicast_primary_port,
            self.default_multicast_not_primary_port,
        );
        v.set_life_state(
            self.life_time_value,
            self.port_state_change,
            self.optimized_sl_to_vl_mapping_programming,
        );
        v.set_lids_per_port(self.lids_per_port);
        v.set_partition_enforcement_cap(self.partition_enforcement_cap);
        v.set_flags([
            self.inbound_enforcement_cap,
            self.outbound_enforcement_cap,
            self.filter_raw_inbound_cap,
            self.filter_raw_outbound_cap,
            self.enhanced_port_zero,
        ]);
        v.set_multicast_fdb_top(self.multicast_fdb_top);
    }
}

impl Describe for SwitchInfoRepr {
    fn describe(&self, d: &mut dyn Describer) {
        let n16 = |v: u16| Value::Uint(v.into());
        let n8 = |v: u8| Value::Uint(v.into());
        d.field("linear_fdb_cap", n16(self.linear_fdb_cap));
        d.field("random_fdb_cap", n16(self.random_fdb_cap));
        d.field("multicast_fdb_cap", n16(self.multicast_fdb_cap));
        d.field("linear_fdb_top", Value::Hex(self.linear_fdb_top.into(), 4));
        d.field("default_port", n8(self.default_port));
        d.field(
            "default_multicast_primary_port",
            n8(self.default_multicast_primary_port),
        );
        d.field(
            "default_multicast_not_primary_port",
            n8(self.default_multicast_not_primary_port),
        );
        d.field("life_time_value", n8(self.life_time_value));
        d.field("port_state_change", Value::Bool(self.port_state_change));
        d.field(
            "optimized_sl_to_vl_mapping_programming",
            n8(self.optimized_sl_to_vl_mapping_programming),
        );
        d.field("lids_per_port", n16(self.lids_per_port));
        d.field(
            "partition_enforcement_cap",
            n16(self.partition_enforcement_cap),
        );
        d.field(
            "inbound_enforcement_cap",
            Value::Bool(self.inbound_enforcement_cap),
        );
        d.field(
            "outbound_enforcement_cap",
            Value::Bool(self.outbound_enforcement_cap),
        );
        d.field(
            "filter_raw_inbound_cap",
            Value::Bool(self.filter_raw_inbound_cap),
        );
        d.field(
            "filter_raw_outbound_cap",
            Value::Bool(self.filter_raw_outbound_cap),
        );
        d.field("enhanced_port_zero", Value::Bool(self.enhanced_port_zero));
        d.field(
            "multicast_fdb_top",
            Value::Hex(self.multicast_fdb_top.into(), 4),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::Error;
    use proptest::prelude::*;

    /// An ibsim 36-port switch after OpenSM's sweep: 48K linear entries, 1K multicast, LIDs up to
    /// 0x000c, default ports 0/255/255, life time 18, state change, 8 P_Keys, enhanced port 0,
    /// multicast top 0xc000.
    fn switch_bytes() -> [u8; 20] {
        [
            0xc0, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x0c, 0x00, 0xff, 0xff, 0x94, 0x00, 0x00,
            0x00, 0x08, 0x08, 0x00, 0xc0, 0x00,
        ]
    }

    fn switch() -> SwitchInfoRepr {
        SwitchInfoRepr {
            linear_fdb_cap: 0xc000,
            multicast_fdb_cap: 0x0400,
            linear_fdb_top: 0x000c,
            default_multicast_primary_port: 0xff,
            default_multicast_not_primary_port: 0xff,
            life_time_value: 18,
            port_state_change: true,
            partition_enforcement_cap: 8,
            enhanced_port_zero: true,
            multicast_fdb_top: 0xc000,
            ..SwitchInfoRepr::default()
        }
    }

    // IBA 1 §14.2.5.4: LinearFDBTop at 6, LifeTimeValue the high 5 bits of byte 11.
    #[test]
    fn deconstruct() {
        let b = switch_bytes();
        let v = SwitchInfo::new_checked(&b[..]).unwrap();
        assert_eq!(
            (
                v.linear_fdb_cap(),
                v.random_fdb_cap(),
                v.multicast_fdb_cap()
            ),
            (0xc000, 0, 0x400)
        );
        assert_eq!(v.linear_fdb_top(), 0x000c);
        assert_eq!(
            (
                v.default_port(),
                v.default_multicast_primary_port(),
                v.default_multicast_not_primary_port()
            ),
            (0, 0xff, 0xff)
        );
        assert_eq!(v.life_time_value(), 18);
        assert!(v.port_state_change());
        assert_eq!(v.optimized_sl_to_vl_mapping_programming(), 0);
        assert_eq!((v.lids_per_port(), v.partition_enforcement_cap()), (0, 8));
        assert!(!v.inbound_enforcement_cap() && !v.outbound_enforcement_cap());
        assert!(!v.filter_raw_inbound_cap() && !v.filter_raw_outbound_cap());
        assert!(v.enhanced_port_zero());
        assert_eq!(v.multicast_fdb_top(), 0xc000);
    }

    // IBA 1 §14.2.5.4
    #[test]
    fn construct() {
        let mut b = [0xffu8; 20];
        let mut v = SwitchInfo::new_unchecked(&mut b[..]);
        v.set_fdb_caps(0xc000, 0, 0x400);
        v.set_linear_fdb_top(0x000c);
        v.set_default_ports(0, 0xff, 0xff);
        v.set_life_state(18, true, 0);
        v.set_lids_per_port(0);
        v.set_partition_enforcement_cap(8);
        v.set_flags([false, false, false, false, true]);
        v.set_multicast_fdb_top(0xc000);
        assert_eq!(b, switch_bytes());
    }

    // IBA 1 §14.2.5.4
    #[test]
    fn parse_and_emit() {
        assert_eq!(SwitchInfoRepr::parse(&switch_bytes()).unwrap(), switch());
        let mut out = [0xffu8; 20];
        switch().emit(&mut out);
        assert_eq!(out, switch_bytes());
        assert_eq!(SwitchInfoRepr::parse(&[0u8; 19]), Err(Error::Truncated));
        let mut c = Collect::default();
        switch().describe(&mut c);
        assert_eq!(c.fields.len(), 18);
        assert_eq!(c.get("linear_fdb_top"), Some("0x000c"));
        assert_eq!(c.get("enhanced_port_zero"), Some("true"));
    }

    proptest! {
        #[test]
        fn round_trip(caps: [u16; 6], ports: [u8; 3], life in 0u8..32, sl2vl in 0u8..4,
                      flags: [bool; 6]) {
            let r = SwitchInfoRepr {
                linear_fdb_cap: caps[0],
                random_fdb_cap: caps[1],
                multicast_fdb_cap: caps[2],
                linear_fdb_top: caps[3],
                default_port: ports[0],
                default_multicast_primary_port: ports[1],
                default_multicast_not_primary_port: ports[2],
                life_time_value: life,
                port_state_change: flags[0],
                optimized_sl_to_vl_mapping_programming: sl2vl,
                lids_per_port: caps[4],
                partition_enforcement_cap: caps[5],
                inbound_enforcement_cap: flags[1],
                outbound_enforcement_cap: flags[2],
                filter_raw_inbound_cap: flags[3],
                filter_raw_outbound_cap: flags[4],
                enhanced_port_zero: flags[5],
                multicast_fdb_top: caps[0] ^ caps[5],
            };
            let mut b = [0u8; 20];
            r.emit(&mut b);
            prop_assert_eq!(SwitchInfoRepr::parse(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(r) = SwitchInfoRepr::parse(&data) {
                r.describe(&mut Collect::default());
            }
        }
    }
}
