//! MCMemberRecord (IBA 1 §15.2.5.17, Table 206 in 1.3), 52 bytes (56 with table padding):
//!
//! ```text
//! 0  MGID(128)
//! 16 PortGID(128)
//! 32 Q_Key(32)
//! 36 MLID(16) | MTUSelector(2) MTU(6) | TClass(8)
//! 40 P_Key(16) | RateSelector(2) Rate(6) | PacketLifeTimeSelector(2) PacketLifeTime(6)
//! 44 SL(4) | FlowLabel(20) | HopLimit(8)
//! 48 Scope(4) JoinState(4) | ProxyJoin(1) Reserved(7) | Reserved(16)
//! ```
//!
//! Layout checked against OpenSM `ib_member_rec_t` and wireshark's `parse_MCMemberRecord`.

use super::rate::{join_sel, split_sel, Mtu, Rate, Selector};
use crate::describe::{Describe, Describer, Value};
use crate::keys::{PKey, QKey};
use crate::types::{be16, be32, put16, put32, Gid};
use crate::Result;

mod field {
    pub const MGID: usize = 0;
    pub const PORT_GID: usize = 16;
    pub const Q_KEY: usize = 32;
    pub const MLID: usize = 36;
    pub const MTU: usize = 38;
    pub const TCLASS: usize = 39;
    pub const P_KEY: usize = 40;
    pub const RATE: usize = 42;
    pub const PACKET_LIFE_TIME: usize = 43;
    pub const SL_FLOW_HOP: usize = 44;
    pub const SCOPE_JOIN_STATE: usize = 48;
    pub const PROXY_JOIN: usize = 49;
    pub const RESERVED: usize = 50;
    pub const LEN: usize = 52;
}

/// ComponentMask bits of MCMemberRecord (IBA 1 §15.2.5.17; OpenSM `IB_MCR_COMPMASK_*`).
pub mod mcr_mask {
    /// MGID.
    pub const MGID: u64 = 1 << 0;
    /// PortGID.
    pub const PORT_GID: u64 = 1 << 1;
    /// Q_Key.
    pub const Q_KEY: u64 = 1 << 2;
    /// MLID.
    pub const MLID: u64 = 1 << 3;
    /// MTUSelector.
    pub const MTU_SELECTOR: u64 = 1 << 4;
    /// MTU.
    pub const MTU: u64 = 1 << 5;
    /// TClass.
    pub const TCLASS: u64 = 1 << 6;
    /// P_Key.
    pub const P_KEY: u64 = 1 << 7;
    /// RateSelector.
    pub const RATE_SELECTOR: u64 = 1 << 8;
    /// Rate.
    pub const RATE: u64 = 1 << 9;
    /// PacketLifeTimeSelector.
    pub const PACKET_LIFE_TIME_SELECTOR: u64 = 1 << 10;
    /// PacketLifeTime.
    pub const PACKET_LIFE_TIME: u64 = 1 << 11;
    /// SL.
    pub const SL: u64 = 1 << 12;
    /// FlowLabel.
    pub const FLOW_LABEL: u64 = 1 << 13;
    /// HopLimit.
    pub const HOP_LIMIT: u64 = 1 << 14;
    /// Scope.
    pub const SCOPE: u64 = 1 << 15;
    /// JoinState.
    pub const JOIN_STATE: u64 = 1 << 16;
    /// ProxyJoin.
    pub const PROXY_JOIN: u64 = 1 << 17;

    /// The components OpenSM requires of every join or leave (docs/DEPLOYED.md;
    /// osm_sa_mcmember_record.c):
    /// MGID, PortGID, JoinState.
    pub const JOIN: u64 = MGID | PORT_GID | JOIN_STATE;
    /// The components OpenSM requires to create a group: [`JOIN`] plus Q_Key, TClass, P_Key,
    /// FlowLabel and SL.
    pub const CREATE: u64 = JOIN | Q_KEY | TCLASS | P_KEY | FLOW_LABEL | SL;
}

/// JoinState bits (IBA 1 §15.2.5.17 Table 206; OpenSM `IB_MC_REC_STATE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct JoinState(pub u8);

impl JoinState {
    /// FullMember.
    pub const FULL_MEMBER: JoinState = JoinState(0x1);
    /// NonMember.
    pub const NON_MEMBER: JoinState = JoinState(0x2);
    /// SendOnlyNonMember.
    pub const SEND_ONLY_NON_MEMBER: JoinState = JoinState(0x4);
    /// SendOnlyFullMember (IBA 1.3).
    pub const SEND_ONLY_FULL_MEMBER: JoinState = JoinState(0x8);

    /// True if every bit of `other` is set here.
    pub fn contains(self, other: JoinState) -> bool {
        self.0 & other.0 == other.0
    }
    /// The union.
    pub fn union(self, other: JoinState) -> JoinState {
        JoinState(self.0 | other.0)
    }
    /// These bits without those of `other`.
    pub fn without(self, other: JoinState) -> JoinState {
        JoinState(self.0 & !other.0)
    }
    /// True if no bit is set.
    pub fn is_empty(self) -> bool {
        self.0 & 0xf == 0
    }
}

fixed_view! {
    /// A zero-copy view of an MCMemberRecord.
    #[derive(Debug, Clone)]
    pub struct McMemberRecord;
    /// `Err(Truncated)` if shorter than 52 bytes.
    fn check_len(min = field::LEN);
    /// Size on the wire without table padding.
    pub const LEN;
    fn b;
}

impl<T: AsRef<[u8]>> McMemberRecord<T> {
    /// MGID.
    pub fn mgid(&self) -> Gid {
        Gid::from_bytes(&self.b()[field::MGID..])
    }
    /// PortGID.
    pub fn port_gid(&self) -> Gid {
        Gid::from_bytes(&self.b()[field::PORT_GID..])
    }
    /// Q_Key.
    pub fn qkey(&self) -> u32 {
        be32(self.b(), field::Q_KEY)
    }
    /// MLID.
    pub fn mlid(&self) -> u16 {
        be16(self.b(), field::MLID)
    }
    /// MTUSelector.
    pub fn mtu_selector(&self) -> Selector {
        split_sel(self.b()[field::MTU]).0
    }
    /// MTU.
    pub fn mtu(&self) -> Mtu {
        Mtu::from(split_sel(self.b()[field::MTU]).1)
    }
    /// TClass.
    pub fn tclass(&self) -> u8 {
        self.b()[field::TCLASS]
    }
    /// P_Key.
    pub fn pkey(&self) -> u16 {
        be16(self.b(), field::P_KEY)
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
    /// SL (4 bits).
    pub fn sl(&self) -> u8 {
        (be32(self.b(), field::SL_FLOW_HOP) >> 28) as u8
    }
    /// FlowLabel (20 bits).
    pub fn flow_label(&self) -> u32 {
        (be32(self.b(), field::SL_FLOW_HOP) >> 8) & 0x000f_ffff
    }
    /// HopLimit.
    pub fn hop_limit(&self) -> u8 {
        self.b()[field::SL_FLOW_HOP + 3]
    }
    /// Scope (4 bits).
    pub fn scope(&self) -> u8 {
        self.b()[field::SCOPE_JOIN_STATE] >> 4
    }
    /// JoinState (4 bits).
    pub fn join_state(&self) -> JoinState {
        JoinState(self.b()[field::SCOPE_JOIN_STATE] & 0x0f)
    }
    /// ProxyJoin.
    pub fn proxy_join(&self) -> bool {
        self.b()[field::PROXY_JOIN] & 0x80 != 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> McMemberRecord<T> {
    fn m(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    /// Sets MGID.
    pub fn set_mgid(&mut self, g: Gid) {
        self.m()[field::MGID..field::MGID + 16].copy_from_slice(g.as_bytes());
    }
    /// Sets PortGID.
    pub fn set_port_gid(&mut self, g: Gid) {
        self.m()[field::PORT_GID..field::PORT_GID + 16].copy_from_slice(g.as_bytes());
    }
    /// Sets Q_Key.
    pub fn set_qkey(&mut self, v: u32) {
        put32(self.m(), field::Q_KEY, v);
    }
    /// Sets MLID.
    pub fn set_mlid(&mut self, v: u16) {
        put16(self.m(), field::MLID, v);
    }
    /// Sets MTUSelector and MTU.
    pub fn set_mtu(&mut self, s: Selector, mtu: Mtu) {
        self.m()[field::MTU] = join_sel(s, mtu.into());
    }
    /// Sets TClass.
    pub fn set_tclass(&mut self, v: u8) {
        self.m()[field::TCLASS] = v;
    }
    /// Sets P_Key.
    pub fn set_pkey(&mut self, v: u16) {
        put16(self.m(), field::P_KEY, v);
    }
    /// Sets RateSelector and Rate.
    pub fn set_rate(&mut self, s: Selector, rate: Rate) {
        self.m()[field::RATE] = join_sel(s, rate.into());
    }
    /// Sets PacketLifeTimeSelector and PacketLifeTime.
    pub fn set_packet_life_time(&mut self, s: Selector, v: u8) {
        self.m()[field::PACKET_LIFE_TIME] = join_sel(s, v);
    }
    /// Sets SL (4 bits), FlowLabel (20 bits) and HopLimit.
    pub fn set_sl_flow_hop(&mut self, sl: u8, flow_label: u32, hop_limit: u8) {
        let v =
            (u32::from(sl & 0xf) << 28) | ((flow_label & 0x000f_ffff) << 8) | u32::from(hop_limit);
        put32(self.m(), field::SL_FLOW_HOP, v);
    }
    /// Sets Scope and JoinState.
    pub fn set_scope_join_state(&mut self, scope: u8, js: JoinState) {
        self.m()[field::SCOPE_JOIN_STATE] = (scope << 4) | (js.0 & 0xf);
    }
    /// Sets ProxyJoin and zeroes the reserved bits after it.
    pub fn set_proxy_join(&mut self, v: bool) {
        self.m()[field::PROXY_JOIN] = u8::from(v) << 7;
        put16(self.m(), field::RESERVED, 0);
    }
}

/// An MCMemberRecord, every field (IBA 1 §15.2.5.17).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McMemberRecordRepr {
    /// MGID (all zero in a create request: the SA assigns one).
    pub mgid: Gid,
    /// PortGID of the joining port.
    pub port_gid: Gid,
    /// Q_Key.
    pub qkey: QKey,
    /// MLID.
    pub mlid: u16,
    /// MTUSelector.
    pub mtu_selector: Selector,
    /// MTU.
    pub mtu: Mtu,
    /// TClass.
    pub tclass: u8,
    /// P_Key.
    pub pkey: PKey,
    /// RateSelector.
    pub rate_selector: Selector,
    /// Rate.
    pub rate: Rate,
    /// PacketLifeTimeSelector.
    pub packet_life_time_selector: Selector,
    /// PacketLifeTime (6 bits).
    pub packet_life_time: u8,
    /// SL (4 bits).
    pub sl: u8,
    /// FlowLabel (20 bits).
    pub flow_label: u32,
    /// HopLimit.
    pub hop_limit: u8,
    /// Scope (4 bits).
    pub scope: u8,
    /// JoinState (4 bits).
    pub join_state: JoinState,
    /// ProxyJoin.
    pub proxy_join: bool,
}

impl Default for McMemberRecordRepr {
    fn default() -> Self {
        McMemberRecordRepr {
            mgid: Gid::ZERO,
            port_gid: Gid::ZERO,
            qkey: QKey(0),
            mlid: 0,
            mtu_selector: Selector::GreaterThan,
            mtu: Mtu::Unknown(0),
            tclass: 0,
            pkey: PKey(0),
            rate_selector: Selector::GreaterThan,
            rate: Rate::Unknown(0),
            packet_life_time_selector: Selector::GreaterThan,
            packet_life_time: 0,
            sl: 0,
            flow_label: 0,
            hop_limit: 0,
            scope: 0,
            join_state: JoinState(0),
            proxy_join: false,
        }
    }
}

impl McMemberRecordRepr {
    /// Reads every field from the first 52 bytes of `data`.
    pub fn parse(data: &[u8]) -> Result<McMemberRecordRepr> {
        let v = McMemberRecord::new_checked(data)?;
        Ok(McMemberRecordRepr {
            mgid: v.mgid(),
            port_gid: v.port_gid(),
            qkey: QKey(v.qkey()),
            mlid: v.mlid(),
            mtu_selector: v.mtu_selector(),
            mtu: v.mtu(),
            tclass: v.tclass(),
            pkey: PKey(v.pkey()),
            rate_selector: v.rate_selector(),
            rate: v.rate(),
            packet_life_time_selector: v.packet_life_time_selector(),
            packet_life_time: v.packet_life_time(),
            sl: v.sl(),
            flow_label: v.flow_label(),
            hop_limit: v.hop_limit(),
            scope: v.scope(),
            join_state: v.join_state(),
            proxy_join: v.proxy_join(),
        })
    }

    /// 52 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 52 bytes (fields masked to their widths, reserved zero). Panics if shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let mut v = McMemberRecord::new_unchecked(&mut buf[..field::LEN]);
        v.set_mgid(self.mgid);
        v.set_port_gid(self.port_gid);
        v.set_qkey(self.qkey.0);
        v.set_mlid(self.mlid);
        v.set_mtu(self.mtu_selector, self.mtu);
        v.set_tclass(self.tclass);
        v.set_pkey(self.pkey.0);
        v.set_rate(self.rate_selector, self.rate);
        v.set_packet_life_time(self.packet_life_time_selector, self.packet_life_time);
        v.set_sl_flow_hop(self.sl, self.flow_label, self.hop_limit);
        v.set_scope_join_state(self.scope, self.join_state);
        v.set_proxy_join(self.proxy_join);
    }
}

impl Describe for McMemberRecordRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("mgid", Value::Gid(self.mgid));
        d.field("port_gid", Value::Gid(self.port_gid));
        d.field("q_key", self.qkey.into());
        d.field("mlid", Value::Hex(self.mlid.into(), 4));
        d.field(
            "mtu_selector",
            Value::Named(u8::from(self.mtu_selector).into(), self.mtu_selector.name()),
        );
        d.field(
            "mtu",
            Value::Named(u8::from(self.mtu).into(), self.mtu.name()),
        );
        d.field("tclass", Value::Uint(self.tclass.into()));
        d.field("p_key", self.pkey.into());
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
        d.field("sl", Value::Uint(self.sl.into()));
        d.field("flow_label", Value::Hex(self.flow_label.into(), 5));
        d.field("hop_limit", Value::Uint(self.hop_limit.into()));
        d.field("scope", Value::Uint(self.scope.into()));
        d.field("join_state", Value::Hex(self.join_state.0.into(), 1));
        d.field("proxy_join", Value::Bool(self.proxy_join));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::mad::strategy::arb_gid;
    use crate::Error;
    use proptest::prelude::*;

    pub(crate) const BCAST_MGID: Gid = Gid([
        0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
    ]);
    pub(crate) const PORT_GID: Gid = Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0001);

    /// The IPoIB broadcast group join of draft-ietf-ipoib-ip-over-infiniband-06 §5 with OpenSM's
    /// partitions.conf defaults: MGID ff12:401b:ffff::ffff:ffff, Q_Key 0x0b1b, P_Key 0xffff,
    /// MTU exactly 2048 (0x84), rate exactly 10 Gb/s (0x83), SL 0, scope 2, FullMember
    /// (IBA 1 §15.2.5.17).
    pub(crate) fn bcast_join_bytes() -> [u8; 52] {
        let mut b = [0u8; 52];
        b[0..16].copy_from_slice(BCAST_MGID.as_bytes());
        b[16..32].copy_from_slice(PORT_GID.as_bytes());
        b[32..36].copy_from_slice(&[0x00, 0x00, 0x0b, 0x1b]);
        b[36..40].copy_from_slice(&[0x00, 0x00, 0x84, 0x00]);
        b[40..44].copy_from_slice(&[0xff, 0xff, 0x83, 0x00]);
        b[44..48].copy_from_slice(&[0x00, 0x00, 0x00, 0x00]);
        b[48..52].copy_from_slice(&[0x21, 0x00, 0x00, 0x00]);
        b
    }

    pub(crate) fn bcast_join() -> McMemberRecordRepr {
        McMemberRecordRepr {
            mgid: BCAST_MGID,
            port_gid: PORT_GID,
            qkey: QKey(0x0b1b),
            mtu_selector: Selector::Exactly,
            mtu: Mtu::Mtu2048,
            pkey: PKey(0xffff),
            rate_selector: Selector::Exactly,
            rate: Rate::Gbps10,
            scope: 2,
            join_state: JoinState::FULL_MEMBER,
            ..McMemberRecordRepr::default()
        }
    }

    // IBA 1 §15.2.5.17
    #[test]
    fn deconstruct() {
        let b = bcast_join_bytes();
        let v = McMemberRecord::new_checked(&b[..]).unwrap();
        assert_eq!(v.mgid(), BCAST_MGID);
        assert_eq!(v.mgid().to_string(), "ff12:401b:ffff::ffff:ffff");
        assert_eq!(v.port_gid(), PORT_GID);
        assert_eq!(v.qkey(), 0x0b1b);
        assert_eq!(v.mlid(), 0);
        assert_eq!(v.mtu_selector(), Selector::Exactly);
        assert_eq!(v.mtu(), Mtu::Mtu2048);
        assert_eq!(v.pkey(), 0xffff);
        assert_eq!(v.rate(), Rate::Gbps10);
        assert_eq!(v.scope(), 2);
        assert_eq!(v.join_state(), JoinState::FULL_MEMBER);
        assert!(!v.proxy_join());
    }

    // IBA 1 §15.2.5.17
    #[test]
    fn construct() {
        let mut b = [0u8; 52];
        let mut v = McMemberRecord::new_unchecked(&mut b[..]);
        v.set_mgid(BCAST_MGID);
        v.set_port_gid(PORT_GID);
        v.set_qkey(0x0b1b);
        v.set_mlid(0);
        v.set_mtu(Selector::Exactly, Mtu::Mtu2048);
        v.set_tclass(0);
        v.set_pkey(0xffff);
        v.set_rate(Selector::Exactly, Rate::Gbps10);
        v.set_packet_life_time(Selector::GreaterThan, 0);
        v.set_sl_flow_hop(0, 0, 0);
        v.set_scope_join_state(2, JoinState::FULL_MEMBER);
        v.set_proxy_join(false);
        assert_eq!(b, bcast_join_bytes());
    }

    // IBA 1 §15.2.5.17
    #[test]
    fn parse_and_emit() {
        assert_eq!(
            McMemberRecordRepr::parse(&bcast_join_bytes()).unwrap(),
            bcast_join()
        );
        let mut out = [0xffu8; 52];
        bcast_join().emit(&mut out);
        assert_eq!(out, bcast_join_bytes());
        assert_eq!(McMemberRecordRepr::parse(&[0u8; 51]), Err(Error::Truncated));
    }

    // IBA 1 §15.2.5.17: SL(4) | FlowLabel(20) | HopLimit(8) share one word; ProxyJoin is bit 7.
    #[test]
    fn packed_fields() {
        let r = McMemberRecordRepr {
            sl: 0xa,
            flow_label: 0xb_cdef,
            hop_limit: 0x12,
            proxy_join: true,
            packet_life_time_selector: Selector::LargestAvailable,
            packet_life_time: 0x3f,
            ..bcast_join()
        };
        let mut out = [0u8; 52];
        r.emit(&mut out);
        assert_eq!(&out[44..48], &[0xab, 0xcd, 0xef, 0x12]);
        assert_eq!(out[49], 0x80);
        assert_eq!(out[43], 0xff);
        assert_eq!(McMemberRecordRepr::parse(&out).unwrap(), r);
    }

    // IBA 1 §15.2.5.17 (OpenSM IB_MCR_COMPMASK_*)
    #[test]
    fn component_mask_bits() {
        assert_eq!(mcr_mask::MGID, 0x1);
        assert_eq!(mcr_mask::JOIN_STATE, 0x10000);
        assert_eq!(mcr_mask::PROXY_JOIN, 0x20000);
        assert_eq!(mcr_mask::JOIN, 0x10003);
        assert_eq!(mcr_mask::CREATE, 0x130c7);
    }

    #[test]
    fn join_state_ops() {
        let js = JoinState::FULL_MEMBER.union(JoinState::SEND_ONLY_NON_MEMBER);
        assert!(js.contains(JoinState::FULL_MEMBER));
        assert_eq!(js.without(JoinState::FULL_MEMBER), JoinState(4));
        assert!(JoinState(0).is_empty());
    }

    #[test]
    fn describe_every_field() {
        let mut c = Collect::default();
        bcast_join().describe(&mut c);
        assert_eq!(c.fields.len(), 18);
        assert_eq!(c.get("mgid"), Some("ff12:401b:ffff::ffff:ffff"));
        assert_eq!(c.get("mtu"), Some("2048 (0x4)"));
        assert_eq!(c.get("q_key"), Some("0x00000b1b"));
    }

    pub(crate) fn arb_mcmember() -> impl Strategy<Value = McMemberRecordRepr> {
        (
            (arb_gid(), arb_gid(), any::<u32>(), any::<u16>()),
            (0u8..4, 0u8..64, any::<u8>(), any::<u16>(), 0u8..4, 0u8..64),
            (0u8..4, 0u8..64, 0u8..16, 0u32..1 << 20, any::<u8>()),
            (0u8..16, 0u8..16, any::<bool>()),
        )
            .prop_map(
                |((mg, pg, qk, ml), (ms, m, tc, pk, rs, r), (ls, l, sl, fl, hl), (sc, js, pj))| {
                    McMemberRecordRepr {
                        mgid: mg,
                        port_gid: pg,
                        qkey: QKey(qk),
                        mlid: ml,
                        mtu_selector: ms.into(),
                        mtu: m.into(),
                        tclass: tc,
                        pkey: PKey(pk),
                        rate_selector: rs.into(),
                        rate: r.into(),
                        packet_life_time_selector: ls.into(),
                        packet_life_time: l,
                        sl,
                        flow_label: fl,
                        hop_limit: hl,
                        scope: sc,
                        join_state: JoinState(js),
                        proxy_join: pj,
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn emit_parse_identity(r in arb_mcmember()) {
            let mut b = [0u8; 52];
            r.emit(&mut b);
            prop_assert_eq!(McMemberRecordRepr::parse(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = McMemberRecordRepr::parse(&data);
        }
    }
}
