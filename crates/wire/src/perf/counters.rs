//! PortCounters (IBA 1 §16.1.3.5, 44 bytes) and PortCountersExtended (IBA 1 §16.1.4.11, 72 bytes):
//!
//! ```text
//! PortCounters                                   PortCountersExtended
//! 0  Reserved | PortSelect | CounterSelect(16)   Reserved | PortSelect | CounterSelect(16)
//! 4  SymbolErrorCounter(16) | LinkErrorRecovery  Reserved(32)
//!    Counter(8) | LinkDownedCounter(8)
//! 8  PortRcvErrors(16) | PortRcvRemotePhysical   PortXmitData(64)
//!    Errors(16)
//! 12 PortRcvSwitchRelayErrors(16) |
//!    PortXmitDiscards(16)
//! 16 PortXmitConstraintErrors(8) |               PortRcvData(64)
//!    PortRcvConstraintErrors(8) | CounterSelect2
//!    (8) | LocalLinkIntegrityErrors(4)
//!    ExcessiveBufferOverrunErrors(4)
//! 20 Reserved(16) | VL15Dropped(16)
//! 24 PortXmitData(32)                            PortXmitPkts(64)
//! 28 PortRcvData(32)
//! 32 PortXmitPkts(32)                            PortRcvPkts(64)
//! 36 PortRcvPkts(32)
//! 40 PortXmitWait(32)                            PortUnicastXmitPkts(64)
//! 48                                             PortUnicastRcvPkts(64)
//! 56                                             PortMulticastXmitPkts(64)
//! 64                                             PortMulticastRcvPkts(64)
//! ```
//!
//! The data counters count 4-byte words (IBA 1 §16.1.3.5 PortXmitData). The 32-bit and 16-bit
//! counters of PortCounters stop at their maximum instead of wrapping ([`PortCountersRepr::saturating`]).

use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, be32, be64, put16, put32, put64};
use crate::{Error, Result};

/// PortCounters, every field (IBA 1 §16.1.3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortCountersRepr {
    /// PortSelect: the port the counters are of (0xFF: all ports, when supported).
    pub port_select: u8,
    /// CounterSelect: which counters a Set clears.
    pub counter_select: u16,
    /// SymbolErrorCounter.
    pub symbol_error_counter: u16,
    /// LinkErrorRecoveryCounter.
    pub link_error_recovery_counter: u8,
    /// LinkDownedCounter.
    pub link_downed_counter: u8,
    /// PortRcvErrors.
    pub port_rcv_errors: u16,
    /// PortRcvRemotePhysicalErrors.
    pub port_rcv_remote_physical_errors: u16,
    /// PortRcvSwitchRelayErrors.
    pub port_rcv_switch_relay_errors: u16,
    /// PortXmitDiscards.
    pub port_xmit_discards: u16,
    /// PortXmitConstraintErrors.
    pub port_xmit_constraint_errors: u8,
    /// PortRcvConstraintErrors.
    pub port_rcv_constraint_errors: u8,
    /// CounterSelect2.
    pub counter_select2: u8,
    /// LocalLinkIntegrityErrors (4 bits).
    pub local_link_integrity_errors: u8,
    /// ExcessiveBufferOverrunErrors (4 bits).
    pub excessive_buffer_overrun_errors: u8,
    /// VL15Dropped.
    pub vl15_dropped: u16,
    /// PortXmitData, in 4-byte words.
    pub port_xmit_data: u32,
    /// PortRcvData, in 4-byte words.
    pub port_rcv_data: u32,
    /// PortXmitPkts.
    pub port_xmit_pkts: u32,
    /// PortRcvPkts.
    pub port_rcv_pkts: u32,
    /// PortXmitWait.
    pub port_xmit_wait: u32,
}

const PC_LEN: usize = 44;
const PCE_LEN: usize = 72;

fn sat32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

impl PortCountersRepr {
    /// The counters of `port` from 64-bit totals, each stopping at its field's maximum (IBA 1
    /// §16.1.3.5: "the counter shall not wrap"): bytes become 4-byte words.
    pub fn saturating(port: u8, ext: &PortCountersExtRepr, vl15_dropped: u64) -> PortCountersRepr {
        PortCountersRepr {
            port_select: port,
            port_xmit_data: sat32(ext.port_xmit_data),
            port_rcv_data: sat32(ext.port_rcv_data),
            port_xmit_pkts: sat32(ext.port_xmit_pkts),
            port_rcv_pkts: sat32(ext.port_rcv_pkts),
            vl15_dropped: u16::try_from(vl15_dropped).unwrap_or(u16::MAX),
            ..PortCountersRepr::default()
        }
    }

    /// Reads the first 44 bytes of the PerfMgt data.
    pub fn parse(data: &[u8]) -> Result<PortCountersRepr> {
        let b = data.get(..PC_LEN).ok_or(Error::Truncated)?;
        Ok(PortCountersRepr {
            port_select: b[1],
            counter_select: be16(b, 2),
            symbol_error_counter: be16(b, 4),
            link_error_recovery_counter: b[6],
            link_downed_counter: b[7],
            port_rcv_errors: be16(b, 8),
            port_rcv_remote_physical_errors: be16(b, 10),
            port_rcv_switch_relay_errors: be16(b, 12),
            port_xmit_discards: be16(b, 14),
            port_xmit_constraint_errors: b[16],
            port_rcv_constraint_errors: b[17],
            counter_select2: b[18],
            local_link_integrity_errors: b[19] >> 4,
            excessive_buffer_overrun_errors: b[19] & 0x0f,
            vl15_dropped: be16(b, 22),
            port_xmit_data: be32(b, 24),
            port_rcv_data: be32(b, 28),
            port_xmit_pkts: be32(b, 32),
            port_rcv_pkts: be32(b, 36),
            port_xmit_wait: be32(b, 40),
        })
    }

    /// 44 bytes.
    pub const fn buffer_len(&self) -> usize {
        PC_LEN
    }

    /// Writes the 44 bytes (reserved bytes zero). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..PC_LEN];
        b[0] = 0;
        b[1] = self.port_select;
        put16(b, 2, self.counter_select);
        put16(b, 4, self.symbol_error_counter);
        b[6] = self.link_error_recovery_counter;
        b[7] = self.link_downed_counter;
        put16(b, 8, self.port_rcv_errors);
        put16(b, 10, self.port_rcv_remote_physical_errors);
        put16(b, 12, self.port_rcv_switch_relay_errors);
        put16(b, 14, self.port_xmit_discards);
        b[16] = self.port_xmit_constraint_errors;
        b[17] = self.port_rcv_constraint_errors;
        b[18] = self.counter_select2;
        b[19] = (self.local_link_integrity_errors & 0x0f) << 4
            | (self.excessive_buffer_overrun_errors & 0x0f);
        put16(b, 20, 0);
        put16(b, 22, self.vl15_dropped);
        put32(b, 24, self.port_xmit_data);
        put32(b, 28, self.port_rcv_data);
        put32(b, 32, self.port_xmit_pkts);
        put32(b, 36, self.port_rcv_pkts);
        put32(b, 40, self.port_xmit_wait);
    }
}

impl Describe for PortCountersRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("port_select", Value::Uint(self.port_select.into()));
        d.field("counter_select", Value::Hex(self.counter_select.into(), 4));
        for (n, v) in [
            ("symbol_error_counter", u32::from(self.symbol_error_counter)),
            (
                "link_error_recovery_counter",
                self.link_error_recovery_counter.into(),
            ),
            ("link_downed_counter", self.link_downed_counter.into()),
            ("port_rcv_errors", self.port_rcv_errors.into()),
            (
                "port_rcv_remote_physical_errors",
                self.port_rcv_remote_physical_errors.into(),
            ),
            (
                "port_rcv_switch_relay_errors",
                self.port_rcv_switch_relay_errors.into(),
            ),
            ("port_xmit_discards", self.port_xmit_discards.into()),
            (
                "port_xmit_constraint_errors",
                self.port_xmit_constraint_errors.into(),
            ),
            (
                "port_rcv_constraint_errors",
                self.port_rcv_constraint_errors.into(),
            ),
            (
                "local_link_integrity_errors",
                self.local_link_integrity_errors.into(),
            ),
            (
                "excessive_buffer_overrun_errors",
                self.excessive_buffer_overrun_errors.into(),
            ),
            ("vl15_dropped", self.vl15_dropped.into()),
            ("port_xmit_data", self.port_xmit_data),
            ("port_rcv_data", self.port_rcv_data),
            ("port_xmit_pkts", self.port_xmit_pkts),
            ("port_rcv_pkts", self.port_rcv_pkts),
            ("port_xmit_wait", self.port_xmit_wait),
        ] {
            d.field(n, Value::Uint(v.into()));
        }
    }
}

/// PortCountersExtended, every field (IBA 1 §16.1.4.11): 64-bit counters that wrap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortCountersExtRepr {
    /// PortSelect.
    pub port_select: u8,
    /// CounterSelect.
    pub counter_select: u16,
    /// PortXmitData, in 4-byte words.
    pub port_xmit_data: u64,
    /// PortRcvData, in 4-byte words.
    pub port_rcv_data: u64,
    /// PortXmitPkts.
    pub port_xmit_pkts: u64,
    /// PortRcvPkts.
    pub port_rcv_pkts: u64,
    /// PortUnicastXmitPkts.
    pub port_unicast_xmit_pkts: u64,
    /// PortUnicastRcvPkts.
    pub port_unicast_rcv_pkts: u64,
    /// PortMulticastXmitPkts.
    pub port_multicast_xmit_pkts: u64,
    /// PortMulticastRcvPkts.
    pub port_multicast_rcv_pkts: u64,
}

impl PortCountersExtRepr {
    /// Reads the first 72 bytes of the PerfMgt data.
    pub fn parse(data: &[u8]) -> Result<PortCountersExtRepr> {
        let b = data.get(..PCE_LEN).ok_or(Error::Truncated)?;
        Ok(PortCountersExtRepr {
            port_select: b[1],
            counter_select: be16(b, 2),
            port_xmit_data: be64(b, 8),
            port_rcv_data: be64(b, 16),
            port_xmit_pkts: be64(b, 24),
            port_rcv_pkts: be64(b, 32),
            port_unicast_xmit_pkts: be64(b, 40),
            port_unicast_rcv_pkts: be64(b, 48),
            port_multicast_xmit_pkts: be64(b, 56),
            port_multicast_rcv_pkts: be64(b, 64),
        })
    }

    /// 72 bytes.
    pub const fn buffer_len(&self) -> usize {
        PCE_LEN
    }

    /// Writes the 72 bytes (reserved bytes zero). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..PCE_LEN];
        b[0] = 0;
        b[1] = self.port_select;
        put16(b, 2, self.counter_select);
        put32(b, 4, 0);
        for (i, v) in self.counters().into_iter().enumerate() {
            put64(b, 8 + 8 * i, v);
        }
    }

    fn counters(&self) -> [u64; 8] {
        [
            self.port_xmit_data,
            self.port_rcv_data,
            self.port_xmit_pkts,
            self.port_rcv_pkts,
            self.port_unicast_xmit_pkts,
            self.port_unicast_rcv_pkts,
            self.port_multicast_xmit_pkts,
            self.port_multicast_rcv_pkts,
        ]
    }
}

impl Describe for PortCountersExtRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("port_select", Value::Uint(self.port_select.into()));
        d.field("counter_select", Value::Hex(self.counter_select.into(), 4));
        let names = [
            "port_xmit_data",
            "port_rcv_data",
            "port_xmit_pkts",
            "port_rcv_pkts",
            "port_unicast_xmit_pkts",
            "port_unicast_rcv_pkts",
            "port_multicast_xmit_pkts",
            "port_multicast_rcv_pkts",
        ];
        for (n, v) in names.into_iter().zip(self.counters()) {
            d.field(n, Value::Uint(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // IBA 1 §16.1.3.5: field offsets of PortCounters.
    #[test]
    fn port_counters_layout() {
        let mut b = [0u8; 44];
        b[1] = 3;
        b[2..4].copy_from_slice(&[0xff, 0xff]);
        b[19] = 0x21;
        b[22..24].copy_from_slice(&[0, 7]);
        b[24..28].copy_from_slice(&[0, 0, 1, 0]);
        b[36..40].copy_from_slice(&[0, 0, 0, 5]);
        let r = PortCountersRepr::parse(&b).unwrap();
        assert_eq!((r.port_select, r.counter_select), (3, 0xffff));
        assert_eq!(
            (
                r.local_link_integrity_errors,
                r.excessive_buffer_overrun_errors
            ),
            (2, 1)
        );
        assert_eq!(
            (r.vl15_dropped, r.port_xmit_data, r.port_rcv_pkts),
            (7, 256, 5)
        );
        let mut out = [0xaau8; 44];
        r.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(PortCountersRepr::parse(&b[..43]), Err(Error::Truncated));
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.get("port_rcv_pkts"), Some("5"));
    }

    // IBA 1 §16.1.4.11: 64-bit counters from byte 8; §16.1.3.5: 32-bit ones do not wrap.
    #[test]
    fn port_counters_ext_layout_and_saturation() {
        let mut b = [0u8; 72];
        b[1] = 1;
        b[8..16].copy_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0]);
        b[71] = 9;
        let r = PortCountersExtRepr::parse(&b).unwrap();
        assert_eq!((r.port_select, r.port_xmit_data), (1, 1 << 32));
        assert_eq!(r.port_multicast_rcv_pkts, 9);
        let mut out = [0xaau8; 72];
        r.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(PortCountersExtRepr::parse(&b[..71]), Err(Error::Truncated));
        let pc = PortCountersRepr::saturating(1, &r, 70_000);
        assert_eq!((pc.port_xmit_data, pc.vl15_dropped), (u32::MAX, u16::MAX));
        assert_eq!(pc.port_select, 1);
    }

    proptest! {
        #[test]
        fn round_trip(a: [u8; 36], c: [u8; 36]) {
            let mut b = [0u8; 72];
            b[..36].copy_from_slice(&a);
            b[36..].copy_from_slice(&c);
            let r = PortCountersRepr::parse(&b).unwrap();
            let mut out = [0u8; 72];
            r.emit(&mut out);
            prop_assert_eq!(PortCountersRepr::parse(&out).unwrap(), r);
            let e = PortCountersExtRepr::parse(&b).unwrap();
            e.emit(&mut out);
            prop_assert_eq!(PortCountersExtRepr::parse(&out).unwrap(), e);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..100)) {
            let mut c = Collect::default();
            if let Ok(r) = PortCountersRepr::parse(&data) { r.describe(&mut c); }
            if let Ok(r) = PortCountersExtRepr::parse(&data) { r.describe(&mut c); }
        }
    }
}
