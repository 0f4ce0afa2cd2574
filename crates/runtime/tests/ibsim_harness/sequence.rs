//! The MCMemberRecord request sequence of the differential test (IBA 1 §15.2.5.17; OpenSM
//! `osm_sa_mcmember_record.c` as deployed): joins, creates, leaves and queries, valid and invalid,
//! from two requesters. Step numbers are referred to by the tests (`FromStep`, expected statuses).

use ipoib_wire::ipoib::{broadcast_mgid, Scope};
use ipoib_wire::sa::{mcr_mask as m, JoinState, McMemberRecordRepr, Mtu, Rate, Selector};
use ipoib_wire::Gid;
use ipoib_wire::{PKey, QKey};

use super::mcr::{MgidRef, Op, PortRef, Step};

/// The default partition's IPoIB broadcast group (OpenSM creates it; docs/DEPLOYED.md).
pub fn broadcast() -> Gid {
    broadcast_mgid(PKey(0xffff), Scope::LinkLocal)
}

/// An IPv6-style MGID `ff12:601b:ffff::<n>` that no one created.
pub fn group(n: u16) -> Gid {
    let mut g = [0u8; 16];
    g[..6].copy_from_slice(&[0xff, 0x12, 0x60, 0x1b, 0xff, 0xff]);
    g[14..].copy_from_slice(&n.to_be_bytes());
    Gid(g)
}

/// `ff1S:601b:ffff::<n>` with scope nibble `scope`.
pub fn scoped(scope: u8, n: u16) -> Gid {
    let mut g = group(n);
    g.0[1] = 0x10 | (scope & 0x0f);
    g
}

/// `ff12:1234::<n>`: a multicast GID without the IPoIB signature.
pub fn plain(n: u16) -> Gid {
    let mut g = [0u8; 16];
    g[..4].copy_from_slice(&[0xff, 0x12, 0x12, 0x34]);
    g[14..].copy_from_slice(&n.to_be_bytes());
    Gid(g)
}

fn js(v: u8) -> JoinState {
    JoinState(v)
}

/// The fields a create needs (docs/DEPLOYED.md: Q_Key, TClass, P_Key, FlowLabel, SL), with the
/// IPoIB
/// broadcast group's values.
fn create_rec(join: JoinState) -> McMemberRecordRepr {
    McMemberRecordRepr {
        qkey: QKey(0x0b1b),
        tclass: 0,
        pkey: PKey(0xffff),
        flow_label: 0,
        sl: 0,
        join_state: join,
        ..Default::default()
    }
}

fn join_rec(join: JoinState) -> McMemberRecordRepr {
    McMemberRecordRepr {
        join_state: join,
        ..Default::default()
    }
}

fn mtu_rec(sel: Selector, mtu: u8) -> McMemberRecordRepr {
    McMemberRecordRepr {
        mtu_selector: sel,
        mtu: Mtu::from(mtu),
        join_state: JoinState::FULL_MEMBER,
        ..Default::default()
    }
}

fn rate_rec(sel: Selector, rate: u8) -> McMemberRecordRepr {
    McMemberRecordRepr {
        rate_selector: sel,
        rate: Rate::from(rate),
        join_state: JoinState::FULL_MEMBER,
        ..Default::default()
    }
}

/// The sequence: requesters 0 and 1 are two HCAs of the subnet, neither running the SM. Each
/// comment names what the step checks; the tests pin OpenSM's status for every step.
#[rustfmt::skip]
pub fn sequence() -> Vec<Step> {
    use MgidRef::{Fixed, FromStep};
    use Op::{Delete, Get, Set};
    use PortRef::{Of, Own, Unknown};
    use Selector::{Exactly, GreaterThan, LargestAvailable, LessThan};
    let b = broadcast();
    let full = JoinState::FULL_MEMBER;
    let non = JoinState::NON_MEMBER;
    let send_only = JoinState::SEND_ONLY_NON_MEMBER;
    let step = |name, op, who, mgid, port, rec, mask| Step { name, op, who, mgid, port, rec, mask };
    let mtu = m::JOIN | m::MTU_SELECTOR | m::MTU;
    let rate = m::JOIN | m::RATE_SELECTOR | m::RATE;
    let create_mtu = m::CREATE | m::MTU_SELECTOR | m::MTU;
    let create_rate = m::CREATE | m::RATE_SELECTOR | m::RATE;
    let c = create_rec(full);
    let j = join_rec(full);
    let q = join_rec(js(0));
    let with = |r: McMemberRecordRepr, f: &dyn Fn(&mut McMemberRecordRepr)| {
        let mut r = r;
        f(&mut r);
        r
    };
    vec![
        // 0: the pre-created broadcast group and joins to it.
        step("get broadcast group", Get, 0, Fixed(b), Own, q, m::MGID),
        step("join broadcast full", Set, 0, Fixed(b), Own, j, m::JOIN),
        step("join broadcast full again", Set, 0, Fixed(b), Own, j, m::JOIN),
        step("join broadcast, other port's gid", Set, 0, Fixed(b), Of(1), j, m::JOIN),
        step("join broadcast non-member", Set, 1, Fixed(b), Own, join_rec(non), m::JOIN),
        // 5: invalid joins.
        step("join broadcast, no join state", Set, 0, Fixed(b), Own, q, m::JOIN),
        step("join broadcast, mask without portgid", Set, 0, Fixed(b), Own, j, m::MGID | m::JOIN_STATE),
        step("join broadcast, wrong q_key", Set, 0, Fixed(b), Own, with(j, &|r| r.qkey = QKey(0x1234)), m::JOIN | m::Q_KEY),
        step("join broadcast, p_key 0x7fff", Set, 0, Fixed(b), Own, with(j, &|r| r.pkey = PKey(0x7fff)), m::JOIN | m::P_KEY),
        // 9: MTU selectors against the group's 2048.
        step("join broadcast, mtu > 1024", Set, 0, Fixed(b), Own, mtu_rec(GreaterThan, 3), mtu),
        step("join broadcast, mtu > 2048", Set, 0, Fixed(b), Own, mtu_rec(GreaterThan, 4), mtu),
        step("join broadcast, mtu < 4096", Set, 0, Fixed(b), Own, mtu_rec(LessThan, 5), mtu),
        step("join broadcast, mtu < 2048", Set, 0, Fixed(b), Own, mtu_rec(LessThan, 4), mtu),
        step("join broadcast, mtu = 2048", Set, 0, Fixed(b), Own, mtu_rec(Exactly, 4), mtu),
        step("join broadcast, mtu = 4096", Set, 0, Fixed(b), Own, mtu_rec(Exactly, 5), mtu),
        step("join broadcast, mtu largest", Set, 0, Fixed(b), Own, mtu_rec(LargestAvailable, 0), mtu),
        // 16: rate selectors against the group's 10 Gb/s (code 3; 2 = 2.5, 5 = 5, 6 = 20).
        step("join broadcast, rate > 2.5", Set, 0, Fixed(b), Own, rate_rec(GreaterThan, 2), rate),
        step("join broadcast, rate = 10", Set, 0, Fixed(b), Own, rate_rec(Exactly, 3), rate),
        step("join broadcast, rate = 20", Set, 0, Fixed(b), Own, rate_rec(Exactly, 6), rate),
        step("join broadcast, rate < 10", Set, 0, Fixed(b), Own, rate_rec(LessThan, 3), rate),
        // 20: creating groups: required components, join states, selectors, MGIDs.
        step("create g1", Set, 0, Fixed(group(1)), Own, c, m::CREATE),
        step("create g2, join components only", Set, 0, Fixed(group(2)), Own, c, m::JOIN),
        step("create g3, no sl", Set, 0, Fixed(group(3)), Own, c, m::CREATE & !m::SL),
        step("create g4, no q_key", Set, 0, Fixed(group(4)), Own, c, m::CREATE & !m::Q_KEY),
        step("send-only join g1", Set, 1, Fixed(group(1)), Own, join_rec(send_only), m::JOIN),
        step("send-only join missing g5", Set, 1, Fixed(group(5)), Own, join_rec(send_only), m::JOIN),
        step("send-only create g5", Set, 1, Fixed(group(5)), Own, create_rec(send_only), m::CREATE),
        step("non-member create g6", Set, 1, Fixed(group(6)), Own, create_rec(non), m::CREATE),
        step("create g7, mtu = 4096", Set, 0, Fixed(group(7)), Own, with(c, &|r| { r.mtu_selector = Exactly; r.mtu = Mtu::from(5) }), create_mtu),
        step("create g8, rate = 20", Set, 0, Fixed(group(8)), Own, with(c, &|r| { r.rate_selector = Exactly; r.rate = Rate::from(6) }), create_rate),
        // 30
        step("create g9, rate < 10", Set, 0, Fixed(group(9)), Own, with(c, &|r| { r.rate_selector = LessThan; r.rate = Rate::from(3) }), create_rate),
        step("create g10, mtu > 256", Set, 0, Fixed(group(10)), Own, with(c, &|r| { r.mtu_selector = GreaterThan; r.mtu = Mtu::from(1) }), create_mtu),
        step("create with zero mgid", Set, 0, Fixed(Gid::ZERO), Own, c, m::CREATE),
        step("create unicast mgid", Set, 0, Fixed(Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 1)), Own, c, m::CREATE),
        // 34: queries.
        step("get g1", Get, 0, Fixed(group(1)), Own, q, m::MGID),
        step("get assigned group", Get, 0, FromStep(32), Own, q, m::MGID),
        step("get missing g5", Get, 0, Fixed(group(5)), Own, q, m::MGID),
        // 37: leaves, and what is left of the groups.
        step("join g1 full from 1", Set, 1, Fixed(group(1)), Own, j, m::JOIN),
        step("leave g1 full (0)", Delete, 0, Fixed(group(1)), Own, j, m::JOIN),
        step("leave g1 again (0, not a member)", Delete, 0, Fixed(group(1)), Own, j, m::JOIN),
        // 40
        step("leave g1, other port's gid", Delete, 0, Fixed(group(1)), Of(1), j, m::JOIN),
        step("leave g1 full (1)", Delete, 1, Fixed(group(1)), Own, j, m::JOIN),
        step("get g1 after full members left", Get, 0, Fixed(group(1)), Own, q, m::MGID),
        step("leave g1 send-only (1)", Delete, 1, Fixed(group(1)), Own, join_rec(send_only), m::JOIN),
        step("get g1 after all left", Get, 0, Fixed(group(1)), Own, q, m::MGID),
        step("leave assigned group, last full member", Delete, 0, FromStep(32), Own, j, m::JOIN),
        step("get assigned group after leave", Get, 0, FromStep(32), Own, q, m::MGID),
        step("leave missing group", Delete, 0, Fixed(group(11)), Own, j, m::JOIN),
        step("leave broadcast non-member (1)", Delete, 1, Fixed(b), Own, join_rec(non), m::JOIN),
        step("leave broadcast full (0)", Delete, 0, Fixed(b), Own, j, m::JOIN),
        // 50
        step("get broadcast after all left", Get, 0, Fixed(b), Own, q, m::MGID),
        step("rejoin broadcast full", Set, 0, Fixed(b), Own, j, m::JOIN),
        step("create g19 (control)", Set, 0, Fixed(group(19)), Own, c, m::CREATE),
        step("join broadcast, unknown port gid", Set, 0, Fixed(b), Unknown, j, m::JOIN),
        step("join broadcast, p_key 0x1234", Set, 0, Fixed(b), Own, with(j, &|r| r.pkey = PKey(0x1234)), m::JOIN | m::P_KEY),
        step("join broadcast, sl 1", Set, 0, Fixed(b), Own, with(j, &|r| r.sl = 1), m::JOIN | m::SL),
        // 56: IPoIB-signature groups must match their partition's broadcast group.
        step("create g12, scope-5 mgid", Set, 0, Fixed(scoped(5, 12)), Own, c, m::CREATE),
        step("create g13, scope-5 mgid, scope 5", Set, 0, Fixed(scoped(5, 13)), Own, with(c, &|r| r.scope = 5), m::CREATE | m::SCOPE),
        step("create g14, tclass 0x20", Set, 0, Fixed(group(14)), Own, with(c, &|r| r.tclass = 0x20), m::CREATE),
        step("create g15, flow label 0x12345", Set, 0, Fixed(group(15)), Own, with(c, &|r| r.flow_label = 0x12345), m::CREATE),
        // 60
        step("create g16, hop limit 7", Set, 0, Fixed(group(16)), Own, with(c, &|r| r.hop_limit = 7), m::CREATE | m::HOP_LIMIT),
        step("create g17, sl 1", Set, 0, Fixed(group(17)), Own, with(c, &|r| r.sl = 1), m::CREATE),
        step("create g18, q_key 0x12345678", Set, 0, Fixed(group(18)), Own, with(c, &|r| r.qkey = QKey(0x1234_5678)), m::CREATE),
        step("join g18 from 1, q_key 0x0b1b", Set, 1, Fixed(group(18)), Own, with(j, &|r| r.qkey = QKey(0x0b1b)), m::JOIN | m::Q_KEY),
        step("join g18 from 1", Set, 1, Fixed(group(18)), Own, j, m::JOIN),
        step("create g20 (control)", Set, 0, Fixed(group(20)), Own, c, m::CREATE),
        // 66: groups without the IPoIB signature take the creator's parameters.
        step("create non-ipoib mgid, own params", Set, 0, Fixed(plain(21)), Own,
            with(c, &|r| { r.qkey = QKey(0x1234_5678); r.tclass = 0x20; r.flow_label = 0x12345; r.hop_limit = 7; r.sl = 1 }),
            m::CREATE | m::HOP_LIMIT),
        step("join non-ipoib group from 1, tclass 0x40", Set, 1, Fixed(plain(21)), Own, with(j, &|r| r.tclass = 0x40), m::JOIN | m::TCLASS),
        step("join non-ipoib group from 1", Set, 1, Fixed(plain(21)), Own, j, m::JOIN),
        step("create non-ipoib scope-5 mgid", Set, 0, Fixed(Gid([0xff, 0x15, 0x12, 0x34, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 22])), Own, c, m::CREATE),
        // 70: the Scope field of joins, creates and leaves (which scope a response carries).
        step("join broadcast from 1, scope 5", Set, 1, Fixed(b), Own, with(j, &|r| r.scope = 5), m::JOIN | m::SCOPE),
        step("join broadcast again from 1, scope 8", Set, 1, Fixed(b), Own, with(j, &|r| r.scope = 8), m::JOIN | m::SCOPE),
        step("create non-ipoib group, scope 8", Set, 0, Fixed(plain(23)), Own, with(c, &|r| r.scope = 8), m::CREATE | m::SCOPE),
        step("get it", Get, 0, Fixed(plain(23)), Own, q, m::MGID),
        step("join it from 1, scope 0", Set, 1, Fixed(plain(23)), Own, j, m::JOIN),
        // 75
        step("leave it from 1, scope 5", Delete, 1, Fixed(plain(23)), Own, with(j, &|r| r.scope = 5), m::JOIN | m::SCOPE),
        step("leave broadcast from 1", Delete, 1, Fixed(b), Own, j, m::JOIN),
        // 77: SendOnlyFullMember (JoinState bit 3, IBA 1.3 o15-0.1.9).
        step("send-only full member create g24", Set, 0, Fixed(group(24)), Own, create_rec(js(8)), m::CREATE),
        step("get g24", Get, 0, Fixed(group(24)), Own, q, m::MGID),
        step("send-only full member join g1 from 1", Set, 1, Fixed(group(19)), Own, join_rec(js(8)), m::JOIN),
        // 80
        step("leave g24 send-only full", Delete, 0, Fixed(group(24)), Own, join_rec(js(8)), m::JOIN),
        step("get g24 after leave", Get, 0, Fixed(group(24)), Own, q, m::MGID),
        step("create with zero mgid again", Set, 0, Fixed(Gid::ZERO), Own, c, m::CREATE),
        // 83: the P_Key component of a join to an existing group (docs/IPOIB-JOINS.md; OpenSM
        // `validate_other_comp_fields`: ERR 1B32 another base, ERR 1B31 both limited).
        step("join broadcast from 1 with its P_Key, as Linux IPoIB", Set, 1, Fixed(b), Own, with(j, &|r| r.pkey = PKey(0xffff)), m::JOIN | m::P_KEY),
        step("join broadcast from 1, P_Key of another partition", Set, 1, Fixed(b), Own, with(j, &|r| r.pkey = PKey(0x8001)), m::JOIN | m::P_KEY),
        // 85
        step("join broadcast from 1, limited P_Key", Set, 1, Fixed(b), Own, with(j, &|r| r.pkey = PKey(0x7fff)), m::JOIN | m::P_KEY),
        step("create non-ipoib group with a limited P_Key", Set, 0, Fixed(plain(25)), Own, with(c, &|r| r.pkey = PKey(0x7fff)), m::CREATE),
        step("join it from 1, limited P_Key", Set, 1, Fixed(plain(25)), Own, with(j, &|r| r.pkey = PKey(0x7fff)), m::JOIN | m::P_KEY),
        step("join it from 1, full P_Key", Set, 1, Fixed(plain(25)), Own, with(j, &|r| r.pkey = PKey(0xffff)), m::JOIN | m::P_KEY),
        step("get it", Get, 0, Fixed(plain(25)), Own, q, m::MGID),
    ]
}
