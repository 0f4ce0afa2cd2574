//! The performance management agent's counters and answers (IBA 1 §16.1): every port counts the
//! packets and data it puts on and takes off its link ([`PortTraffic`]), and the PMA on QP1 answers
//! SubnGet/Set of PortCounters (§16.1.3.5) and PortCountersExtended (§16.1.4.11) from them, and Get
//! of its ClassPortInfo ([`class_port_info`]). The counts are those of the link: a packet the port
//! sends is counted when it goes out, one it receives when it comes in, whatever happens to it
//! next; data is LRH through ICRC in 4-byte words (§16.1.3.5 PortXmitData: the VCRC is not
//! counted).

use ipoib_wire::ib::lid::is_multicast_lid;
use ipoib_wire::mad::attr::perf as perf_attr;
use ipoib_wire::mad::{MadHeaderRepr, MadStatus, Method, MgmtClass, MAD_LEN};
use ipoib_wire::perf::{PortCountersExtRepr, PortCountersRepr, PERF_DATA_OFFSET};

/// Traffic counters of one port (64 bits; PortCounters reports them saturated to its widths).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortTraffic {
    /// Packets sent.
    pub xmit_pkts: u64,
    /// Packets received.
    pub rcv_pkts: u64,
    /// 4-byte words sent (LRH through ICRC).
    pub xmit_words: u64,
    /// 4-byte words received.
    pub rcv_words: u64,
    /// Unicast packets sent.
    pub unicast_xmit_pkts: u64,
    /// Unicast packets received.
    pub unicast_rcv_pkts: u64,
    /// Multicast packets sent.
    pub multicast_xmit_pkts: u64,
    /// Multicast packets received.
    pub multicast_rcv_pkts: u64,
    /// Incoming VL15 packets dropped for lack of resources (IBA 1 §16.1.3.5 VL15Dropped). Here:
    /// an SMP for an HCA's QP0 (one its SMA does not take) that finds no posted receive
    /// (`crate::hw::hca`), as Linux's qib and hfi1 count it. An SMP an agent discards for a
    /// broken hop rule or an M_Key is no lack of resources: it counts in the device's drops only.
    pub vl15_dropped: u64,
    /// Packets the port discarded instead of sending (IBA 1 §16.1.3.5 PortXmitDiscards: the
    /// port down or congested, the neighbor MTU exceeded, the switch lifetime limit exceeded;
    /// here congested is a switch port's full buffer, `crate::hw::link`).
    pub xmit_discards: u64,
    /// Times the port's link went down (IBA 1 §16.1.3.5 LinkDownedCounter: the link training
    /// state machine left LinkUp; here, its cable was pulled).
    pub link_downed: u64,
    /// Packets received with an error (IBA 1 §16.1.3.5 PortRcvErrors: local physical errors,
    /// the ICRC and VCRC among them; malformed data packets, LRH errors such as a length that
    /// does not match; malformed link packets; buffer overruns). Here: a packet the port's
    /// device discarded as malformed or for a bad CRC (`crate::hw::switch`, `crate::hw::hca`).
    pub rcv_errors: u64,
    /// Packets received that the switch relay could not forward (IBA 1 §16.1.3.5
    /// PortRcvSwitchRelayErrors: DLID mapping, VL mapping, looping, the output port the input
    /// port). Here: a switch port's packet whose DLID has no route, or whose route leads back
    /// out of the port it came in by (`crate::hw::switch`).
    pub rcv_switch_relay_errors: u64,
    /// Packets a switch port did not send because their P_Key is not in its table, partition
    /// enforcement on (IBA 1 §16.1.3.5 PortXmitConstraintErrors: PartitionEnforcementOutbound).
    pub xmit_constraint_errors: u64,
    /// Packets a switch port discarded on receipt because their P_Key is not in its table,
    /// partition enforcement on (IBA 1 §16.1.3.5 PortRcvConstraintErrors:
    /// PartitionEnforcementInbound).
    pub rcv_constraint_errors: u64,
}

fn words_and_mcast(packet: &[u8]) -> (u64, bool) {
    let words = (packet.len().saturating_sub(2) / 4) as u64;
    let mcast = packet.len() >= 4 && is_multicast_lid(u16::from_be_bytes([packet[2], packet[3]]));
    (words, mcast)
}

impl PortTraffic {
    /// Counts a packet (LRH..VCRC) put on the link.
    pub fn count_xmit(&mut self, packet: &[u8]) {
        let (w, mcast) = words_and_mcast(packet);
        self.xmit_pkts += 1;
        self.xmit_words += w;
        if mcast {
            self.multicast_xmit_pkts += 1;
        } else {
            self.unicast_xmit_pkts += 1;
        }
    }

    /// Takes back a packet counted by [`PortTraffic::count_xmit`] that the port then discarded
    /// instead of sending (its buffer full, `crate::hw::link`); counts it in `xmit_discards`.
    pub fn uncount_xmit(&mut self, packet: &[u8]) {
        let (w, mcast) = words_and_mcast(packet);
        self.xmit_pkts = self.xmit_pkts.saturating_sub(1);
        self.xmit_words = self.xmit_words.saturating_sub(w);
        let n = if mcast {
            &mut self.multicast_xmit_pkts
        } else {
            &mut self.unicast_xmit_pkts
        };
        *n = n.saturating_sub(1);
        self.xmit_discards += 1;
    }

    /// Counts a packet taken off the link.
    pub fn count_rcv(&mut self, packet: &[u8]) {
        let (w, mcast) = words_and_mcast(packet);
        self.rcv_pkts += 1;
        self.rcv_words += w;
        if mcast {
            self.multicast_rcv_pkts += 1;
        } else {
            self.unicast_rcv_pkts += 1;
        }
    }

    /// PortCountersExtended of `port`.
    pub fn extended(&self, port: u8) -> PortCountersExtRepr {
        PortCountersExtRepr {
            port_select: port,
            counter_select: 0,
            port_xmit_data: self.xmit_words,
            port_rcv_data: self.rcv_words,
            port_xmit_pkts: self.xmit_pkts,
            port_rcv_pkts: self.rcv_pkts,
            port_unicast_xmit_pkts: self.unicast_xmit_pkts,
            port_unicast_rcv_pkts: self.unicast_rcv_pkts,
            port_multicast_xmit_pkts: self.multicast_xmit_pkts,
            port_multicast_rcv_pkts: self.multicast_rcv_pkts,
        }
    }

    /// PortCounters of `port` (IBA 1 §16.1.3.5: the counters stop at their maximum).
    pub fn counters(&self, port: u8) -> PortCountersRepr {
        let mut c = PortCountersRepr::saturating(port, &self.extended(port), self.vl15_dropped);
        c.link_downed_counter = u8::try_from(self.link_downed).unwrap_or(u8::MAX);
        c.port_xmit_discards = u16::try_from(self.xmit_discards).unwrap_or(u16::MAX);
        c.port_rcv_errors = u16::try_from(self.rcv_errors).unwrap_or(u16::MAX);
        c.port_rcv_switch_relay_errors =
            u16::try_from(self.rcv_switch_relay_errors).unwrap_or(u16::MAX);
        c.port_xmit_constraint_errors =
            u8::try_from(self.xmit_constraint_errors).unwrap_or(u8::MAX);
        c.port_rcv_constraint_errors = u8::try_from(self.rcv_constraint_errors).unwrap_or(u8::MAX);
        c
    }

    /// A Set of PortCounters clears the counters CounterSelect names (§16.1.3.5 Table 225: bit
    /// 12 PortXmitData, 13 PortRcvData, 14 PortXmitPkts, 15 PortRcvPkts; of the error counters
    /// this model keeps LinkDownedCounter, bit 2, PortRcvErrors, bit 3, PortRcvSwitchRelayErrors,
    /// bit 5, PortXmitDiscards, bit 6, PortXmitConstraintErrors, bit 7, PortRcvConstraintErrors,
    /// bit 8, and VL15Dropped, bit 11; the other bits clear nothing).
    fn clear(&mut self, select: u16) {
        if select & 1 << 2 != 0 {
            self.link_downed = 0;
        }
        if select & 1 << 3 != 0 {
            self.rcv_errors = 0;
        }
        if select & 1 << 5 != 0 {
            self.rcv_switch_relay_errors = 0;
        }
        if select & 1 << 6 != 0 {
            self.xmit_discards = 0;
        }
        if select & 1 << 7 != 0 {
            self.xmit_constraint_errors = 0;
        }
        if select & 1 << 8 != 0 {
            self.rcv_constraint_errors = 0;
        }
        if select & 1 << 11 != 0 {
            self.vl15_dropped = 0;
        }
        if select & 1 << 12 != 0 {
            self.xmit_words = 0;
        }
        if select & 1 << 13 != 0 {
            self.rcv_words = 0;
        }
        if select & 1 << 14 != 0 {
            self.xmit_pkts = 0;
        }
        if select & 1 << 15 != 0 {
            self.rcv_pkts = 0;
        }
    }

    /// A Set of PortCountersExtended (§16.1.4.11: CounterSelect bits 0-7, one per counter in
    /// layout order).
    fn clear_extended(&mut self, select: u16) {
        let fields = [
            &mut self.xmit_words,
            &mut self.rcv_words,
            &mut self.xmit_pkts,
            &mut self.rcv_pkts,
            &mut self.unicast_xmit_pkts,
            &mut self.unicast_rcv_pkts,
            &mut self.multicast_xmit_pkts,
            &mut self.multicast_rcv_pkts,
        ];
        for (i, f) in fields.into_iter().enumerate() {
            if select & 1 << i != 0 {
                *f = 0;
            }
        }
    }
}

/// The PerfMgt class version this PMA speaks (IBA 1 §16.1.1).
pub const PERF_CLASS_VERSION: u8 = 1;

/// PerfMgt ClassPortInfo CapabilityMask bit 9, IsExtendedWidthSupported: PortCountersExtended
/// is answered (IBA 1 §16.1.2; Linux `IB_PMA_CLASS_CAP_EXT_WIDTH`).
pub const PMA_CAP_EXT_WIDTH: u16 = 1 << 9;

/// The PMA's ClassPortInfo (IBA 1 §13.4.8.1, §16.1.2): version 1, PortCountersExtended
/// supported, no redirection, no traps. RespTimeValue 18 as Linux qib's
/// `pma_get_classportinfo` (docs/DEPLOYED.md "Linux SMA and PMA"). `perfquery` reads it before
/// the counters.
pub fn class_port_info() -> ipoib_wire::mad::ClassPortInfoRepr {
    ipoib_wire::mad::ClassPortInfoRepr {
        base_version: 1,
        class_version: PERF_CLASS_VERSION,
        capability_mask: PMA_CAP_EXT_WIDTH,
        resp_time_value: 18,
        ..Default::default()
    }
}

/// Answers a PerfMgt MAD (256 bytes) for a device whose port `p` counters `ports(p)` gives (`None`:
/// no such port). `None` when the MAD is not a PerfMgt Get or Set (not for the PMA). IBA 1
/// §16.1.3.5, §16.1.4.11: the GetResp carries the counters of PortSelect (after a Set, as cleared);
/// ClassPortInfo is answered to a Get ([`class_port_info`]); an unknown attribute is answered with
/// status 0x000C, a port the device does not have with 0x001C, a ClassVersion other than 1 with
/// 0x0004 (§13.4.7 Table 113).
pub fn answer(
    mad: &[u8],
    mut ports: impl FnMut(u8) -> Option<PortTraffic>,
    mut store: impl FnMut(u8, PortTraffic),
) -> Option<[u8; MAD_LEN]> {
    let h = MadHeaderRepr::parse_bytes(mad).ok()?;
    if h.mgmt_class != MgmtClass::Perf || !matches!(h.method, Method::Get | Method::Set) {
        return None;
    }
    let data = mad.get(PERF_DATA_OFFSET..MAD_LEN)?;
    let mut out = [0u8; MAD_LEN];
    out[PERF_DATA_OFFSET..].copy_from_slice(data);
    let port = data[1];
    let counters = ports(port);
    // IBA 1 §13.4.7 Table 113: a class version the agent does not speak is answered "bad
    // version", nothing read or cleared (as Linux qib's and hfi1's `process_perf`).
    let status = match (h.attribute_id, counters) {
        _ if h.class_version != PERF_CLASS_VERSION => MadStatus::BAD_VERSION,
        (perf_attr::PORT_COUNTERS | perf_attr::PORT_COUNTERS_EXTENDED, None) => {
            MadStatus::INVALID_ATTR_VALUE
        }
        (perf_attr::PORT_COUNTERS, Some(mut c)) => {
            if h.method == Method::Set {
                c.clear(u16::from_be_bytes([data[2], data[3]]));
                store(port, c);
            }
            c.counters(port).emit(&mut out[PERF_DATA_OFFSET..]);
            MadStatus::SUCCESS
        }
        (perf_attr::PORT_COUNTERS_EXTENDED, Some(mut c)) => {
            if h.method == Method::Set {
                c.clear_extended(u16::from_be_bytes([data[2], data[3]]));
                store(port, c);
            }
            c.extended(port).emit(&mut out[PERF_DATA_OFFSET..]);
            MadStatus::SUCCESS
        }
        (perf_attr::CLASS_PORT_INFO, _) if h.method == Method::Get => {
            out[PERF_DATA_OFFSET..].fill(0);
            class_port_info().emit(&mut out[PERF_DATA_OFFSET..]);
            MadStatus::SUCCESS
        }
        _ => MadStatus::METHOD_ATTR_UNSUPPORTED,
    };
    h.response(Method::GetResp, status).emit(&mut out);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // IBA 1 §13.4.7 Table 113: a PerfMgt MAD of another class version gets status 0x0004 (bad
    // version) and its data back; a Set of it clears nothing. Before, it was answered as a
    // version 1 MAD and a Set cleared the counters.
    #[test]
    fn another_class_version_is_a_bad_version_and_clears_nothing() {
        let mut mad = [0u8; MAD_LEN];
        let h = MadHeaderRepr {
            base_version: 1,
            mgmt_class: MgmtClass::Perf,
            class_version: 2,
            method: Method::Set,
            status: MadStatus::SUCCESS,
            class_specific: 0,
            transaction_id: 5,
            attribute_id: perf_attr::PORT_COUNTERS,
            attribute_modifier: 0,
        };
        h.emit(&mut mad);
        mad[PERF_DATA_OFFSET + 1] = 1; // PortSelect
        mad[PERF_DATA_OFFSET + 2..PERF_DATA_OFFSET + 4].fill(0xff); // CounterSelect: all
        let traffic = PortTraffic {
            xmit_pkts: 9,
            ..PortTraffic::default()
        };
        let mut stored = false;
        let resp = answer(&mad, |_| Some(traffic), |_, _| stored = true).expect("answered");
        let r = MadHeaderRepr::parse_bytes(&resp).unwrap();
        assert_eq!(
            (r.method, r.status),
            (Method::GetResp, MadStatus::BAD_VERSION)
        );
        assert!(!stored, "nothing cleared");
        assert_eq!(
            resp[PERF_DATA_OFFSET..],
            mad[PERF_DATA_OFFSET..],
            "data back as sent"
        );
        // Version 1: the counters.
        mad[2] = PERF_CLASS_VERSION;
        let resp = answer(&mad, |_| Some(traffic), |_, _| stored = true).expect("answered");
        let r = MadHeaderRepr::parse_bytes(&resp).unwrap();
        assert_eq!(r.status, MadStatus::SUCCESS);
        assert!(stored);
    }

    // IBA 1 §16.1.3.5 LinkDownedCounter: 8 bits, stops at 255; CounterSelect bit 2 clears it.
    #[test]
    fn link_downed_counter_saturates_and_clears_alone() {
        let mut t = PortTraffic {
            link_downed: 300,
            xmit_pkts: 5,
            ..PortTraffic::default()
        };
        assert_eq!(t.counters(1).link_downed_counter, 255);
        t.link_downed = 3;
        assert_eq!(t.counters(1).link_downed_counter, 3);
        t.clear(1 << 2);
        assert_eq!((t.link_downed, t.xmit_pkts), (0, 5));
        t.link_downed = 2;
        t.clear(1 << 14);
        assert_eq!((t.link_downed, t.xmit_pkts), (2, 0));
    }

    // IBA 1 §16.1.3.5 PortXmitDiscards: 16 bits, stops at 65535; CounterSelect bit 6 clears it.
    #[test]
    fn xmit_discards_saturate_and_clear_alone() {
        let mut t = PortTraffic {
            xmit_discards: 70_000,
            link_downed: 1,
            ..PortTraffic::default()
        };
        assert_eq!(t.counters(1).port_xmit_discards, 65535);
        t.xmit_discards = 7;
        assert_eq!(t.counters(1).port_xmit_discards, 7);
        t.clear(1 << 2);
        assert_eq!((t.xmit_discards, t.link_downed), (7, 0));
        t.clear(1 << 6);
        assert_eq!(t.xmit_discards, 0);
    }

    // IBA 1 §16.1.3.5 PortRcvErrors: 16 bits, stops at 65535; CounterSelect bit 3 clears it.
    #[test]
    fn rcv_errors_saturate_and_clear_alone() {
        let mut t = PortTraffic {
            rcv_errors: 70_000,
            xmit_discards: 1,
            ..PortTraffic::default()
        };
        assert_eq!(t.counters(1).port_rcv_errors, 65535);
        t.rcv_errors = 4;
        assert_eq!(t.counters(1).port_rcv_errors, 4);
        t.clear(1 << 6);
        assert_eq!((t.rcv_errors, t.xmit_discards), (4, 0));
        t.clear(1 << 3);
        assert_eq!(t.rcv_errors, 0);
    }

    // IBA 1 §16.1.3.5 PortRcvSwitchRelayErrors: 16 bits, stops at 65535; CounterSelect bit 5
    // clears it (and bits 3 and 6, PortRcvErrors and PortXmitDiscards, do not).
    #[test]
    fn switch_relay_errors_saturate_and_clear_alone() {
        let mut t = PortTraffic {
            rcv_switch_relay_errors: 70_000,
            rcv_errors: 1,
            xmit_discards: 1,
            ..PortTraffic::default()
        };
        assert_eq!(t.counters(1).port_rcv_switch_relay_errors, 65535);
        t.rcv_switch_relay_errors = 5;
        assert_eq!(t.counters(1).port_rcv_switch_relay_errors, 5);
        t.clear(1 << 3 | 1 << 6);
        assert_eq!(t.counters(1).port_rcv_switch_relay_errors, 5);
        t.clear(1 << 5);
        assert_eq!(t.rcv_switch_relay_errors, 0);
    }

    // IBA 1 §16.1.3.5 PortXmitConstraintErrors and PortRcvConstraintErrors: 8 bits, stopping at
    // 255; CounterSelect bits 7 and 8 clear one each.
    #[test]
    fn constraint_errors_saturate_and_clear_alone() {
        let mut t = PortTraffic {
            xmit_constraint_errors: 300,
            rcv_constraint_errors: 4,
            ..PortTraffic::default()
        };
        let c = t.counters(2);
        assert_eq!(
            (c.port_xmit_constraint_errors, c.port_rcv_constraint_errors),
            (255, 4)
        );
        t.clear(1 << 8);
        assert_eq!(
            (t.xmit_constraint_errors, t.rcv_constraint_errors),
            (300, 0)
        );
        t.rcv_constraint_errors = 2;
        t.clear(1 << 7);
        assert_eq!((t.xmit_constraint_errors, t.rcv_constraint_errors), (0, 2));
    }
}
