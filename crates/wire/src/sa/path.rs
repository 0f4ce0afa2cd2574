//! PathRecord (IBA 1 §15.2.5.16, Table 204 in 1.3), 64 bytes:
//!
//! ```text
//! 0  ServiceID(64)                       (Reserved in IBA 1.1; ServiceID since 1.2)
//! 8  DGID(128)
//! 24 SGID(128)
//! 40 DLID(16) | SLID(16)
//! 44 RawTraffic(1) | Reserved(3) | FlowLabel(20) | HopLimit(8)
//! 48 TClass(8) | Reversible(1) NumbPath(7) | P_Key(16)
//! 52 QoSClass(12) | SL(4) | MTUSelector(2) MTU(6) | RateSelector(2) Rate(6)
//! 56 PacketLifeTimeSelector(2) PacketLifeTime(6) | Preference(8) | Reserved(48)
//! ```
//!
//! Layout checked against OpenSM `ib_path_rec_t` and wireshark's `parse_PathRecord` (which shows
//! the first 8 bytes as reserved).

use super::rate::{join_sel, split_sel, Mtu, Rate, Selector};
use crate::describe::{Describe, Describer, Value};
use crate::keys::PKey;
use crate::types::{be16, be32, be64, put16, put32, put64, Gid};
use crate::Result;

mod field {
    use core::ops::Range;
    pub const SERVICE_ID: usize = 0;
    pub const DGID: usize = 8;
    pub const SGID: usize = 24;
    pub const DLID: usize = 40;
    pub const SLID: usize = 42;
    pub const RAW_FLOW_HOP: usize = 44;
    pub const TCLASS: usize = 48;
    pub const REVERSIBLE_NUMB_PATH: usize = 49;
    pub const P_KEY: usize = 50;
    pub const QOS_CLASS_SL: usize = 52;
    pub const MTU: usize = 54;
    pub const RATE: usize = 55;
    pub const PACKET_LIFE_TIME: usize = 56;
    pub const PREFERENCE: usize = 57;
    pub const RESERVED: Range<usize> = 58..64;
    pub const LEN: usize = 64;
}

/// ComponentMask bits of PathRecord (IBA 1 §15.2.5.16; OpenSM `IB_PR_COMPMASK_*`, Linux
/// `IB_SA_PATH_REC_*`).
pub mod pr_mask {
    /// ServiceID, upper 56 bits (bit 0) and lower 8 bits (bit 1): set both.
    pub const SERVICE_ID: u64 = (1 << 0) | (1 << 1);
    /// DGID.
    pub const DGID: u64 = 1 << 2;
    /// SGID.
    pub const SGID: u64 = 1 << 3;
    /// DLID.
    pub const DLID: u64 = 1 << 4;
    /// SLID.
    pub const SLID: u64 = 1 << 5;
    /// RawTraffic.
    pub const RAW_TRAFFIC: u64 = 1 << 6;
    /// FlowLabel.
    pub const FLOW_LABEL: u64 = 1 << 8;
    /// HopLimit.
    pub const HOP_LIMIT: u64 = 1 << 9;
    /// TClass.
    pub const TCLASS: u64 = 1 << 10;
    /// Reversible.
    pub const REVERSIBLE: u64 = 1 << 11;
    /// NumbPath.
    pub const NUMB_PATH: u64 = 1 << 12;
    /// P_Key.
    pub const P_KEY: u64 = 1 << 13;
    /// QoSClass.
    pub const QOS_CLASS: u64 = 1 << 14;
    /// SL.
    pub const SL: u64 = 1 << 15;
    /// MTUSelector.
    pub const MTU_SELECTOR: u64 = 1 << 16;
    /// MTU.
    pub const MTU: u64 = 1 << 17;
    /// RateSelector.
    pub const RATE_SELECTOR: u64 = 1 << 18;
    /// Rate.
    pub const RATE: u64 = 1 << 19;
    /// PacketLifeTimeSelector.
    pub const PACKET_LIFE_TIME_SELECTOR: u64 = 1 << 20;
    /// PacketLifeTime.
    pub const PACKET_LIFE_TIME: u64 = 1 << 21;
    /// Preference.
    pub const PREFERENCE: u64 = 1 << 22;
}

fixed_view! {
    /// A zero-copy view of a PathRecord.
    #[derive(Debug, Clone)]
    pub struct PathRecord;
    /// `Err(Truncated)` if shorter than 64 bytes.
    fn check_len(min = field::LEN);
    /// Size on the wire.
    pub const LEN;
    fn b;
}

impl<T: AsRef<[u8]>> PathRecord<T> {
    /// ServiceID.
    pub fn service_id(&self) -> u64 {
        be64(self.b(), field::SERVICE_ID)
    }
    /// DGID.
    pub fn dgid(&self) -> Gid {
        Gid::from_bytes(&self.b()[field::DGID..])
    }
    /// SGID.
    pub fn sgid(&self) -> Gid {
        Gid::from_bytes(&self.b()[field::SGID..])
    }
    /// DLID.
    pub fn dlid(&self) -> u16 {
        be16(self.b(), field::DLID)
    }
    /// SLID.
    pub fn slid(&self) -> u16 {
        be16(self.b(), field::SLID)
    }
    /// RawTraffic.
    pub fn raw_traffic(&self) -> bool {
        self.b()[field::RAW_FLOW_HOP] & 0x80 != 0
    }
    /// FlowLabel (20 bits).
    pub fn flow_label(&self) -> u32 {
        (be32(self.b(), field::RAW_FLOW_HOP) >> 8) & 0x000f_ffff
    }
    /// HopLimit.
    pub fn hop_limit(&self) -> u8 {
        self.b()[field::RAW_FLOW_HOP + 3]
    }
    /// TClass.
    pub fn tclass(&self) -> u8 {
        self.b()[field::TCLASS]
    }
    /// Reversible.
    pub fn reversible(&self) -> bool {
        self.b()[field::REVERSIBLE_NUMB_PATH] & 0x80 != 0
    }
    /// NumbPath (7 bits).
    pub fn numb_path(&self) -> u8 {
        self.b()[field::REVERSIBLE_NUMB_PATH] & 0x7f
    }
    /// P_Key.
    pub fn pkey(&self) -> u16 {
        be16(self.b(), field::P_KEY)
    }
    /// QoSClass (12 bits).
    pub fn qos_class(&self) -> u16 {
        be16(self.b(), field::QOS_CLASS_SL) >> 4
    }
    /// SL (4 bits).
    pub fn sl(&self) -> u8 {
        (be16(self.b(), field::QOS_CLASS_SL) & 0xf) as u8
    }
    /// MTUSelector.
    pub fn mtu_selector(&self) -> Selector {
        split_sel(self.b()[field::MTU]).0
    }
    /// MTU.
    pub fn mtu(&self) -> Mtu {
        Mtu::from(split_sel(self.b()[field::MTU]).1)
    }
    /// RateSelector.
    pub fn rate_selector(&self) -> Selector {
        split_sel(self.b()[field::RATE]).0
    }
    /// Rate.
    pub fn rate(&self) -> Rate {
        Rate::from(split_sel(self.b()[field::RATE]).1)
    }
    /// PacketLifeTimeSelector.
    pub fn packet_life_time_selector(&self) -> Selector {
        split_sel(self.b()[field::PACKET_LIFE_TIME]).0
    }
    /// PacketLifeTime (6 bits).
    pub fn packet_life_time(&self) -> u8 {
        split_sel(self.b()[field::PACKET_LIFE_TIME]).1
    }
    /// Preference.
    pub fn preference(&self) -> u8 {
        self.b()[field::PREFERENCE]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PathRecord<T> {
    fn m(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    /// Sets ServiceID.
    pub fn set_service_id(&mut self, v: u64) {
        put64(self.m(), field::SERVICE_ID, v);
    }
    /// Sets DGID.
    pub fn set_dgid(&mut self, g: Gid) {
        self.m()[field::DGID..field::DGID + 16].copy_from_slice(g.as_bytes());
    }
    /// Sets SGID.
    pub fn set_sgid(&mut self, g: Gid) {
        self.m()[field::SGID..field::SGID + 16].copy_from_slice(g.as_bytes());
    }
    /// Sets DLID.
    pub fn set_dlid(&mut self, v: u16) {
        put16(self.m(), field::DLID, v);
    }
    /// Sets SLID.
    pub fn set_slid(&mut self, v: u16) {
        put16(self.m(), field::SLID, v);
    }
    /// Sets RawTraffic, FlowLabel (20 bits) and HopLimit; the 3 reserved bits are zeroed.
    pub fn set_raw_flow_hop(&mut self, raw: bool, flow_label: u32, hop_limit: u8) {
        let v = (u32::from(raw) << 31) | ((flow_label & 0x000f_ffff) << 8) | u32::from(hop_limit);
        put32(self.m(), field::RAW_FLOW_HOP, v);
    }
    /// Sets TClass.
    pub fn set_tclass(&mut self, v: u8) {
        self.m()[field::TCLASS] = v;
    }
    /// Sets Reversible and NumbPath (7 bits).
    pub fn set_reversible_numb_path(&mut self, reversible: bool, numb_path: u8) {
        self.m()[field::REVERSIBLE_NUMB_PATH] = (u8::from(reversible) << 7) | (numb_path & 0x7f);
    }
    /// Sets P_Key.
    pub fn set_pkey(&mut self, v: u16) {
        put16(self.m(), field::P_KEY, v);
    }
    /// Sets QoSClass (12 bits) and SL (4 bits).
    pub fn set_qos_class_sl(&mut self, qos_class: u16, sl: u8) {
        put16(
            self.m(),
            field::QOS_CLASS_SL,
            (qos_class << 4) | u16::from(sl & 0xf),
        );
    }
    /// Sets MTUSelector and MTU.
    pub fn set_mtu(&mut self, s: Selector, mtu: Mtu) {
        self.m()[field::MTU] = join_sel(s, mtu.into());
    }
    /// Sets RateSelector and Rate.
    pub fn set_rate(&mut self, s: Selector, rate: Rate) {
        self.m()[field::RATE] = join_sel(s, rate.into());
    }
    /// Sets PacketLifeTimeSelector and PacketLifeTime.
    pub fn set_packet_life_time(&mut self, s: Selector, v: u8) {
        self.m()[field::PACKET_LIFE_TIME] = join_sel(s, v);
    }
    /// Sets Preference and zeroes the trailing reserved bytes.
    pub fn set_preference(&mut self, v: u8) {
        self.m()[field::PREFERENCE] = v;
        self.m()[field::RESERVED].fill(0);
    }
}

/// A PathRecord, every field (IBA 1 §15.2.5.16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathRecordRepr {
    /// ServiceID.
    pub service_id: u64,
    /// DGID.
    pub dgid: Gid,
    /// SGID.
    pub sgid: Gid,
    /// DLID.
    pub dlid: u16,
    /// SLID.
    pub slid: u16,
    /// RawTraffic.
    pub raw_traffic: bool,
    /// FlowLabel (20 bits).
    pub flow_label: u32,
    /// HopLimit.
    pub hop_limit: u8,
    /// TClass.
    pub tclass: u8,
    /// Reversible.
    pub reversible: bool,
    /// NumbPath (7 bits): in a query, the most paths to return.
    pub numb_path: u8,
    /// P_Key.
    pub pkey: PKey,
    /// QoSClass (12 bits).
    pub qos_class: u16,
    /// SL (4 bits).
    pub sl: u8,
    /// MTUSelector.
    pub mtu_selector: Selector,
    /// MTU.
    pub mtu: Mtu,
    /// RateSelector.
    pub rate_selector: Selector,
    /// Rate.
    pub rate: Rate,
    /// PacketLifeTimeSelector.
    pub packet_life_time_selector: Selector,
    /// PacketLifeTime (6 bits).
    pub packet_life_time: u8,
    /// Preference (lower is better).
    pub preference: u8,
}

impl Default for PathRecordRepr {
    fn default() -> Self {
        PathRecordRepr {
            service_id: 0,
            dgid: Gid::ZERO,
            sgid: Gid::ZERO,
            dlid: 0,
            slid: 0,
            raw_traffic: false,
            flow_label: 0,
            hop_limit: 0,
            tclass: 0,
            reversible: false,
            numb_path: 0,
            pkey: PKey(0),
            qos_class: 0,
            sl: 0,
            mtu_selector: Selector::GreaterThan,
            mtu: Mtu::Unknown(0),
            rate_selector: Selector::GreaterThan,
            rate: Rate::Unknown(0),
            packet_life_time_selector: Selector::GreaterThan,
            packet_life_time: 0,
            preference: 0,
        }
    }
}

impl PathRecordRepr {
    /// Reads every field from the first 64 bytes of `data`.
    pub fn parse(data: &[u8]) -> Result<PathRecordRepr> {
        let v = PathRecord::new_checked(data)?;
        Ok(PathRecordRepr {
            service_id: v.service_id(),
            dgid: v.dgid(),
            sgid: v.sgid(),
            dlid: v.dlid(),
            slid: v.slid(),
            raw_traffic: v.raw_traffic(),
            flow_label: v.flow_label(),
            hop_limit: v.hop_limit(),
            tclass: v.tclass(),
            reversible: v.reversible(),
            numb_path: v.numb_path(),
            pkey: PKey(v.pkey()),
            qos_class: v.qos_class(),
            sl: v.sl(),
            mtu_selector: v.mtu_selector(),
            mtu: v.mtu(),
            rate_selector: v.rate_selector(),
            rate: v.rate(),
            packet_life_time_selector: v.packet_life_time_selector(),
            packet_life_time: v.packet_life_time(),
            preference: v.preference(),
        })
    }

    /// 64 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 64 bytes (fields masked to their widths, reserved zero). Panics if shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let mut v = PathRecord::new_unchecked(&mut buf[..field::LEN]);
        v.set_service_id(self.service_id);
        v.set_dgid(self.dgid);
        v.set_sgid(self.sgid);
        v.set_dlid(self.dlid);
        v.set_slid(self.slid);
        v.set_raw_flow_hop(self.raw_traffic, self.flow_label, self.hop_limit);
        v.set_tclass(self.tclass);
        v.set_reversible_numb_path(self.reversible, self.numb_path);
        v.set_pkey(self.pkey.0);
        v.set_qos_class_sl(self.qos_class, self.sl);
        v.set_mtu(self.mtu_selector, self.mtu);
        v.set_rate(self.rate_selector, self.rate);
        v.set_packet_life_time(self.packet_life_time_selector, self.packet_life_time);
        v.set_preference(self.preference);
    }
}

impl Describe for PathRecordRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("service_id", Value::Hex(self.service_id, 16));
        d.field("dgid", Value::Gid(self.dgid));
        d.field("sgid", Value::Gid(self.sgid));
        d.field("dlid", Value::Hex(self.dlid.into(), 4));
        d.field("slid", Value::Hex(self.slid.into(), 4));
        d.field("raw_traffic", Value::Bool(self.raw_traffic));
        d.field("flow_label", Value::Hex(self.flow_label.into(), 5));
        d.field("hop_limit", Value::Uint(self.hop_limit.into()));
        d.field("tclass", Value::Uint(self.tclass.into()));
        d.field("reversible", Value::Bool(self.reversible));
        d.field("numb_path", Value::Uint(self.numb_path.into()));
        d.field("p_key", self.pkey.into());
        d.field("qos_class", Value::Hex(self.qos_class.into(), 3));
        d.field("sl", Value::Uint(self.sl.into()));
        d.field(
            "mtu_selector",
            Value::Named(u8::from(self.mtu_selector).into(), self.mtu_selector.name()),
        );
        d.field(
            "mtu",
            Value::Named(u8::from(self.mtu).into(), self.mtu.name()),
        );
        d.field(
            "rate_selector",
            Value::Named(
                u8::from(self.rate_selector).into(),
                self.rate_selector.name(),
            ),
        );
        d.field(
            "rate",
            Value::Named(u8::from(self.rate).into(), self.rate.name()),
        );
        d.field(
            "packet_life_time_selector",
            Value::Named(
                u8::from(self.packet_life_time_selector).into(),
                self.packet_life_time_selector.name(),
            ),
        );
        d.field(
            "packet_life_time",
            Value::Uint(self.packet_life_time.into()),
        );
        d.field("preference", Value::Uint(self.preference.into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::mad::strategy::arb_gid;
    use crate::Error;
    use proptest::prelude::*;

    const SGID: Gid = Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0001);
    const DGID: Gid = Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0002);

    /// A PathRecord answer for a reversible path LID 1 -> LID 2 on the default partition, SL 0,
    /// MTU exactly 2048, rate exactly 10 Gb/s, packet lifetime exactly 18, hop limit 0
    /// (IBA 1 §15.2.5.16).
    fn bytes() -> [u8; 64] {
        let mut b = [0u8; 64];
        b[0..8].copy_from_slice(&[0x10, 0, 0, 0, 0, 0, 0x00, 0x48]);
        b[8..24].copy_from_slice(DGID.as_bytes());
        b[24..40].copy_from_slice(SGID.as_bytes());
        b[40..44].copy_from_slice(&[0x00, 0x02, 0x00, 0x01]);
        b[44..48].copy_from_slice(&[0x80, 0x12, 0x34, 0x05]);
        b[48..52].copy_from_slice(&[0x00, 0x81, 0xff, 0xff]);
        b[52..56].copy_from_slice(&[0x12, 0x33, 0x84, 0x83]);
        b[56..58].copy_from_slice(&[0x92, 0x00]);
        b
    }

    fn repr() -> PathRecordRepr {
        PathRecordRepr {
            service_id: 0x1000_0000_0000_0048,
            dgid: DGID,
            sgid: SGID,
            dlid: 2,
            slid: 1,
            raw_traffic: true,
            flow_label: 0x1234,
            hop_limit: 5,
            tclass: 0,
            reversible: true,
            numb_path: 1,
            pkey: PKey(0xffff),
            qos_class: 0x123,
            sl: 3,
            mtu_selector: Selector::Exactly,
            mtu: Mtu::Mtu2048,
            rate_selector: Selector::Exactly,
            rate: Rate::Gbps10,
            packet_life_time_selector: Selector::Exactly,
            packet_life_time: 18,
            preference: 0,
        }
    }

    // IBA 1 §15.2.5.16
    #[test]
    fn deconstruct() {
        let b = bytes();
        let v = PathRecord::new_checked(&b[..]).unwrap();
        assert_eq!(v.service_id(), 0x1000_0000_0000_0048);
        assert_eq!(v.dgid(), DGID);
        assert_eq!(v.sgid(), SGID);
        assert_eq!(v.dlid(), 2);
        assert_eq!(v.slid(), 1);
        assert!(v.raw_traffic());
        assert_eq!(v.flow_label(), 0x1234);
        assert_eq!(v.hop_limit(), 5);
        assert!(v.reversible());
        assert_eq!(v.numb_path(), 1);
        assert_eq!(v.pkey(), 0xffff);
        assert_eq!(v.qos_class(), 0x123);
        assert_eq!(v.sl(), 3);
        assert_eq!(v.mtu(), Mtu::Mtu2048);
        assert_eq!(v.rate(), Rate::Gbps10);
        assert_eq!(v.packet_life_time_selector(), Selector::Exactly);
        assert_eq!(v.packet_life_time(), 18);
        assert_eq!(v.preference(), 0);
    }

    // IBA 1 §15.2.5.16
    #[test]
    fn construct() {
        let mut b = [0xffu8; 64];
        let mut v = PathRecord::new_unchecked(&mut b[..]);
        v.set_service_id(0x1000_0000_0000_0048);
        v.set_dgid(DGID);
        v.set_sgid(SGID);
        v.set_dlid(2);
        v.set_slid(1);
        v.set_raw_flow_hop(true, 0x1234, 5);
        v.set_tclass(0);
        v.set_reversible_numb_path(true, 1);
        v.set_pkey(0xffff);
        v.set_qos_class_sl(0x123, 3);
        v.set_mtu(Selector::Exactly, Mtu::Mtu2048);
        v.set_rate(Selector::Exactly, Rate::Gbps10);
        v.set_packet_life_time(Selector::Exactly, 18);
        v.set_preference(0);
        assert_eq!(b, bytes());
    }

    // IBA 1 §15.2.5.16
    #[test]
    fn parse_and_emit() {
        assert_eq!(PathRecordRepr::parse(&bytes()).unwrap(), repr());
        let mut out = [0xffu8; 64];
        repr().emit(&mut out);
        assert_eq!(out, bytes());
        assert_eq!(PathRecordRepr::parse(&[0u8; 63]), Err(Error::Truncated));
    }

    // IBA 1 §15.2.5.16 (OpenSM IB_PR_COMPMASK_*)
    #[test]
    fn component_mask_bits() {
        assert_eq!(pr_mask::SERVICE_ID, 0x3);
        assert_eq!(pr_mask::DGID | pr_mask::SGID, 0xc);
        assert_eq!(pr_mask::P_KEY, 0x2000);
        assert_eq!(pr_mask::NUMB_PATH, 0x1000);
        assert_eq!(pr_mask::PACKET_LIFE_TIME, 0x20_0000);
    }

    #[test]
    fn describe_every_field() {
        let mut c = Collect::default();
        repr().describe(&mut c);
        assert_eq!(c.fields.len(), 21);
        assert_eq!(c.get("dlid"), Some("0x0002"));
        assert_eq!(c.get("rate"), Some("10 Gb/s (0x3)"));
    }

    pub(crate) fn arb_path() -> impl Strategy<Value = PathRecordRepr> {
        (
            (
                any::<u64>(),
                arb_gid(),
                arb_gid(),
                any::<u16>(),
                any::<u16>(),
            ),
            (
                any::<bool>(),
                0u32..1 << 20,
                any::<u8>(),
                any::<u8>(),
                any::<bool>(),
                0u8..128,
            ),
            (any::<u16>(), 0u16..1 << 12, 0u8..16, 0u8..4, 0u8..64),
            (0u8..4, 0u8..64, 0u8..4, 0u8..64, any::<u8>()),
        )
            .prop_map(
                |(
                    (sid, dg, sg, dl, sl_),
                    (raw, fl, hl, tc, rev, np),
                    (pk, qc, sl, ms, m),
                    (rs, r, ls, l, pr),
                )| {
                    PathRecordRepr {
                        service_id: sid,
                        dgid: dg,
                        sgid: sg,
                        dlid: dl,
                        slid: sl_,
                        raw_traffic: raw,
                        flow_label: fl,
                        hop_limit: hl,
                        tclass: tc,
                        reversible: rev,
                        numb_path: np,
                        pkey: PKey(pk),
                        qos_class: qc,
                        sl,
                        mtu_selector: ms.into(),
                        mtu: m.into(),
                        rate_selector: rs.into(),
                        rate: r.into(),
                        packet_life_time_selector: ls.into(),
                        packet_life_time: l,
                        preference: pr,
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn emit_parse_identity(r in arb_path()) {
            let mut b = [0u8; 64];
            r.emit(&mut b);
            prop_assert_eq!(PathRecordRepr::parse(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = PathRecordRepr::parse(&data);
        }
    }
}
