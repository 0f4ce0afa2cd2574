//! The path description a REQ carries twice (primary and alternate, IBA 1 §12.6 Table 106) and a
//! LAP once (alternate, Table 115).
//!
//! The two messages order the bytes differently: REQ has `flow label(20) rsvd(6) packet rate(6) |
//! traffic class | hop limit | SL(4) subnet local(1) | local ACK timeout(5)`, LAP has `flow label(20)
//! rsvd(4) traffic class(8) | hop limit | rsvd(2) packet rate(6) | SL(4) subnet local(1) | local ACK
//! timeout(5)`. Both start with the local and remote port LIDs and GIDs.

use crate::describe::{Describe, Describer, Value};
use crate::sa::Rate;
use crate::types::{be16, be32, put16, put32, Gid};

/// One path of a connection, as the active side describes it (IBA 1 §12.6 Tables 106 and 115).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CmPath {
    /// LID of the sender's port on this path.
    pub local_port_lid: u16,
    /// LID of the receiver's port on this path.
    pub remote_port_lid: u16,
    /// GID of the sender's port.
    pub local_port_gid: Gid,
    /// GID of the receiver's port.
    pub remote_port_gid: Gid,
    /// 20-bit flow label for the GRH.
    pub flow_label: u32,
    /// Static rate (6-bit code, IBA 1 §15.2.5.16 rate encoding).
    pub packet_rate: Rate,
    /// Traffic class for the GRH.
    pub traffic_class: u8,
    /// Hop limit for the GRH.
    pub hop_limit: u8,
    /// 4-bit service level.
    pub sl: u8,
    /// The path stays in the local subnet (no GRH needed).
    pub subnet_local: bool,
    /// 5-bit local ACK timeout exponent (4.096 us x 2^n).
    pub local_ack_timeout: u8,
}

impl CmPath {
    /// Reads a path in the REQ layout from the 44 bytes at `b[off..]`. Panics if shorter; callers
    /// have checked the body length.
    pub(crate) fn read_req(b: &[u8], off: usize) -> CmPath {
        CmPath {
            local_port_lid: be16(b, off),
            remote_port_lid: be16(b, off + 2),
            local_port_gid: Gid::from_bytes(&b[off + 4..]),
            remote_port_gid: Gid::from_bytes(&b[off + 20..]),
            flow_label: be32(b, off + 36) >> 12,
            packet_rate: Rate::from(b[off + 39] & 0x3f),
            traffic_class: b[off + 40],
            hop_limit: b[off + 41],
            sl: b[off + 42] >> 4,
            subnet_local: b[off + 42] & 0x08 != 0,
            local_ack_timeout: b[off + 43] >> 3,
        }
    }

    /// Writes a path in the REQ layout at `b[off..off + 44]`, reserved bits zero except bits 5..8 of
    /// the last byte, which are left alone (REQ keeps SAP Supported there).
    pub(crate) fn write_req(&self, b: &mut [u8], off: usize) {
        put16(b, off, self.local_port_lid);
        put16(b, off + 2, self.remote_port_lid);
        b[off + 4..off + 20].copy_from_slice(&self.local_port_gid.0);
        b[off + 20..off + 36].copy_from_slice(&self.remote_port_gid.0);
        put32(b, off + 36, (self.flow_label & 0x000f_ffff) << 12);
        b[off + 39] = u8::from(self.packet_rate) & 0x3f;
        b[off + 40] = self.traffic_class;
        b[off + 41] = self.hop_limit;
        b[off + 42] = (self.sl << 4) | if self.subnet_local { 0x08 } else { 0 };
        b[off + 43] = (b[off + 43] & 0x07) | (self.local_ack_timeout << 3);
    }

    /// Reads a path in the LAP layout from the 44 bytes at `b[off..]`.
    pub(crate) fn read_lap(b: &[u8], off: usize) -> CmPath {
        CmPath {
            local_port_lid: be16(b, off),
            remote_port_lid: be16(b, off + 2),
            local_port_gid: Gid::from_bytes(&b[off + 4..]),
            remote_port_gid: Gid::from_bytes(&b[off + 20..]),
            flow_label: be32(b, off + 36) >> 12,
            traffic_class: b[off + 39],
            hop_limit: b[off + 40],
            packet_rate: Rate::from(b[off + 41] & 0x3f),
            sl: b[off + 42] >> 4,
            subnet_local: b[off + 42] & 0x08 != 0,
            local_ack_timeout: b[off + 43] >> 3,
        }
    }

    /// Writes a path in the LAP layout at `b[off..off + 44]`, reserved bits zero.
    pub(crate) fn write_lap(&self, b: &mut [u8], off: usize) {
        put16(b, off, self.local_port_lid);
        put16(b, off + 2, self.remote_port_lid);
        b[off + 4..off + 20].copy_from_slice(&self.local_port_gid.0);
        b[off + 20..off + 36].copy_from_slice(&self.remote_port_gid.0);
        put32(
            b,
            off + 36,
            ((self.flow_label & 0x000f_ffff) << 12) | self.traffic_class as u32,
        );
        b[off + 40] = self.hop_limit;
        b[off + 41] = u8::from(self.packet_rate) & 0x3f;
        b[off + 42] = (self.sl << 4) | if self.subnet_local { 0x08 } else { 0 };
        b[off + 43] = self.local_ack_timeout << 3;
    }

    /// The fields in LAP wire order (traffic class and hop limit before the packet rate).
    pub(crate) fn describe_lap(&self, d: &mut dyn Describer) {
        self.describe_head(d);
        d.field("traffic_class", Value::Uint(self.traffic_class.into()));
        d.field("hop_limit", Value::Uint(self.hop_limit.into()));
        d.field(
            "packet_rate",
            Value::Uint(u8::from(self.packet_rate).into()),
        );
        self.describe_tail(d);
    }

    fn describe_head(&self, d: &mut dyn Describer) {
        d.field("local_port_lid", Value::Hex(self.local_port_lid.into(), 4));
        d.field(
            "remote_port_lid",
            Value::Hex(self.remote_port_lid.into(), 4),
        );
        d.field("local_port_gid", Value::Gid(self.local_port_gid));
        d.field("remote_port_gid", Value::Gid(self.remote_port_gid));
        d.field("flow_label", Value::Hex(self.flow_label.into(), 5));
    }

    fn describe_tail(&self, d: &mut dyn Describer) {
        d.field("sl", Value::Uint(self.sl.into()));
        d.field("subnet_local", Value::Bool(self.subnet_local));
        d.field(
            "local_ack_timeout",
            Value::Uint(self.local_ack_timeout.into()),
        );
    }

    /// Masks every field to its wire width (what a parse after an emit gives back).
    pub fn masked(mut self) -> CmPath {
        self.flow_label &= 0x000f_ffff;
        self.packet_rate = Rate::from(u8::from(self.packet_rate) & 0x3f);
        self.sl &= 0x0f;
        self.local_ack_timeout &= 0x1f;
        self
    }
}

/// The fields in REQ wire order.
impl Describe for CmPath {
    fn describe(&self, d: &mut dyn Describer) {
        self.describe_head(d);
        d.field(
            "packet_rate",
            Value::Uint(u8::from(self.packet_rate).into()),
        );
        d.field("traffic_class", Value::Uint(self.traffic_class.into()));
        d.field("hop_limit", Value::Uint(self.hop_limit.into()));
        self.describe_tail(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Any path whose fields fit their widths.
    fn arb_path() -> impl Strategy<Value = CmPath> {
        (
            (
                any::<u16>(),
                any::<u16>(),
                any::<[u8; 16]>(),
                any::<[u8; 16]>(),
            ),
            (0..=0x000f_ffffu32, 0..=0x3fu8, any::<u8>(), any::<u8>()),
            (0..=0x0fu8, any::<bool>(), 0..=0x1fu8),
        )
            .prop_map(
                |((ll, rl, lg, rg), (fl, pr, tc, hl), (sl, snl, to))| CmPath {
                    local_port_lid: ll,
                    remote_port_lid: rl,
                    local_port_gid: Gid(lg),
                    remote_port_gid: Gid(rg),
                    flow_label: fl,
                    packet_rate: Rate::from(pr),
                    traffic_class: tc,
                    hop_limit: hl,
                    sl,
                    subnet_local: snl,
                    local_ack_timeout: to,
                },
            )
    }

    fn sample() -> CmPath {
        CmPath {
            local_port_lid: 0x0102,
            remote_port_lid: 0x0304,
            local_port_gid: Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_1234),
            remote_port_gid: Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_5678),
            flow_label: 0x12345,
            packet_rate: Rate::from(0x2a),
            traffic_class: 0x5c,
            hop_limit: 0x40,
            sl: 0xb,
            subnet_local: true,
            local_ack_timeout: 0x13,
        }
    }

    // IBA 1 §12.6 Table 106: flow label(20) rsvd(6) packet rate(6), then TClass, hop limit,
    // SL(4) subnet local(1), local ACK timeout(5).
    #[test]
    fn req_layout_tail_bytes() {
        let mut b = [0u8; 44];
        sample().write_req(&mut b, 0);
        assert_eq!(b[36..44], [0x12, 0x34, 0x50, 0x2a, 0x5c, 0x40, 0xb8, 0x98]);
        assert_eq!(CmPath::read_req(&b, 0), sample());
    }

    // IBA 1 §12.6 Table 115: flow label(20) rsvd(4) TClass(8), hop limit, rsvd(2) packet rate(6),
    // SL(4) subnet local(1), local ACK timeout(5).
    #[test]
    fn lap_layout_tail_bytes() {
        let mut b = [0u8; 44];
        sample().write_lap(&mut b, 0);
        assert_eq!(b[36..44], [0x12, 0x34, 0x50, 0x5c, 0x40, 0x2a, 0xb8, 0x98]);
        assert_eq!(CmPath::read_lap(&b, 0), sample());
    }

    proptest! {
        #[test]
        fn req_layout_round_trip(p in arb_path(), last in any::<u8>()) {
            let mut b = [0u8; 44];
            b[43] = last;
            p.write_req(&mut b, 0);
            prop_assert_eq!(CmPath::read_req(&b, 0), p);
            prop_assert_eq!(b[43] & 0x07, last & 0x07);
        }

        #[test]
        fn lap_layout_round_trip(p in arb_path()) {
            let mut b = [0xffu8; 44];
            p.write_lap(&mut b, 0);
            prop_assert_eq!(CmPath::read_lap(&b, 0), p);
            prop_assert_eq!(p.masked(), p);
        }
    }
}
