//! The hop rules of directed-route SMPs (IBA 1 §14.2.2.2 outgoing, C14-9; §14.2.2.3 returning,
//! C14-13), applied by a node on receipt, in place on the 256 bytes of the MAD. A node that sends
//! a directed-route SMP on has already moved the HopPointer; the receiver reads it as follows
//! (n = HopCount, h = HopPointer as received):
//!
//! - D = 0 (outgoing): 1 ≤ h < n — an intermediate hop, switches only: `ReturnPath[h]` = the port
//!   it came in by, h + 1, out by `InitialPath[h + 1]`. h = n — the end of the path:
//!   `ReturnPath[n]` = the port it came in by, h + 1, and the SMP is for this node's SMA.
//!   h = 0 with n > 0, or any other h: discarded.
//! - D = 1 (returning): 2 ≤ h ≤ n — an intermediate hop, switches only: h − 1, out by
//!   `ReturnPath[h − 1]`. h = 1 — back at the requester: h = 0, to the SM on QP0.
//!   h = n + 1 or any other h: discarded.
//! - The responder (C14-13:1) sets D, takes h from n + 1 to n and sends out by `ReturnPath[n]` (a
//!   CA: the port the SMP came in on).
//!
//! HopCount is at most 63 (the paths hold 64 entries, entry 0 unused; C14-6). DrSLID and DrDLID
//! other than the permissive LID (a LID-routed part before or after the directed part) are not
//! implemented: such SMPs are discarded ([`DrStep::Discard`] with [`DrDiscard::LidRoutedPart`]).

use ipoib_wire::ib::lid::LID_PERMISSIVE;
use ipoib_wire::smp::{SmpMad, SMP_PATH_LEN};

/// Why a directed-route SMP was discarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrDiscard {
    /// HopPointer and HopCount do not fit any rule, or HopCount > 63.
    BadHop,
    /// An intermediate hop at a CA (only switches forward).
    NotASwitch,
    /// The path names a port the node does not have (or port 0).
    BadPort,
    /// DrSLID or DrDLID is not the permissive LID (not implemented).
    LidRoutedPart,
}

/// What a node does with a directed-route SMP it received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrStep {
    /// Send it on, out of this port (the MAD was updated).
    Forward(u8),
    /// An outgoing SMP at the end of its path: for this node's SMA.
    Local,
    /// A returning SMP back at the requester: for the SM on QP0.
    ToRequester,
    /// Drop it.
    Discard(DrDiscard),
}

/// Applies the receive rules to `mad` (256 bytes, class SubnDirectedRoute) that came in by
/// `in_port` of a node with ports 1..=`nports`.
pub fn receive(mad: &mut [u8], in_port: u8, is_switch: bool, nports: u8) -> DrStep {
    let Ok(mut m) = SmpMad::new_checked(mad) else {
        return DrStep::Discard(DrDiscard::BadHop);
    };
    let (h, n) = (m.hop_pointer(), m.hop_count());
    if usize::from(n) >= SMP_PATH_LEN {
        return DrStep::Discard(DrDiscard::BadHop);
    }
    if m.dr_slid() != LID_PERMISSIVE || m.dr_dlid() != LID_PERMISSIVE {
        return DrStep::Discard(DrDiscard::LidRoutedPart);
    }
    let valid = |p: u8| p != 0 && p <= nports;
    if !m.direction() {
        if h >= 1 && h < n {
            if !is_switch {
                return DrStep::Discard(DrDiscard::NotASwitch);
            }
            let out = m.initial_path()[usize::from(h) + 1];
            if !valid(out) {
                return DrStep::Discard(DrDiscard::BadPort);
            }
            m.return_path_mut()[usize::from(h)] = in_port;
            m.set_hop_pointer(h + 1);
            return DrStep::Forward(out);
        }
        if h == n {
            if n > 0 {
                m.return_path_mut()[usize::from(h)] = in_port;
                m.set_hop_pointer(h + 1);
            }
            return DrStep::Local;
        }
        return DrStep::Discard(DrDiscard::BadHop);
    }
    if h >= 2 && h <= n {
        if !is_switch {
            return DrStep::Discard(DrDiscard::NotASwitch);
        }
        let out = m.return_path()[usize::from(h) - 1];
        if !valid(out) {
            return DrStep::Discard(DrDiscard::BadPort);
        }
        m.set_hop_pointer(h - 1);
        return DrStep::Forward(out);
    }
    if h == 1 || (h == 0 && n == 0) {
        m.set_hop_pointer(0);
        return DrStep::ToRequester;
    }
    DrStep::Discard(DrDiscard::BadHop)
}

/// What [`receive`] decides for `mad`, without changing it: for a node that keeps the MAD only
/// when it is for its own SMA, so that it copies only that one (the port it came in by changes
/// the MAD, not the decision). The same rules in the same order; a proptest holds the two to
/// each other.
pub fn step(mad: &[u8], is_switch: bool, nports: u8) -> DrStep {
    let Ok(m) = SmpMad::new_checked(mad) else {
        return DrStep::Discard(DrDiscard::BadHop);
    };
    let (h, n) = (m.hop_pointer(), m.hop_count());
    if usize::from(n) >= SMP_PATH_LEN {
        return DrStep::Discard(DrDiscard::BadHop);
    }
    if m.dr_slid() != LID_PERMISSIVE || m.dr_dlid() != LID_PERMISSIVE {
        return DrStep::Discard(DrDiscard::LidRoutedPart);
    }
    let valid = |p: u8| p != 0 && p <= nports;
    let forward = |out: u8| match (is_switch, valid(out)) {
        (false, _) => DrStep::Discard(DrDiscard::NotASwitch),
        (true, false) => DrStep::Discard(DrDiscard::BadPort),
        (true, true) => DrStep::Forward(out),
    };
    match (m.direction(), h) {
        (false, h) if h >= 1 && h < n => forward(m.initial_path()[usize::from(h) + 1]),
        (false, h) if h == n => DrStep::Local,
        (true, h) if h >= 2 && h <= n => forward(m.return_path()[usize::from(h) - 1]),
        (true, 1) => DrStep::ToRequester,
        (true, 0) if n == 0 => DrStep::ToRequester,
        _ => DrStep::Discard(DrDiscard::BadHop),
    }
}

/// Turns the request `mad` (already answered in place) into a response leaving the responder
/// (C14-13:1): sets D and steps HopPointer back from n + 1 to n. Returns the port to send it out
/// of: `ReturnPath[n]`, or `in_port` when HopCount is 0.
pub fn respond(mad: &mut [u8], in_port: u8) -> u8 {
    let Ok(mut m) = SmpMad::new_checked(mad) else {
        return in_port;
    };
    m.set_direction(true);
    let (h, n) = (m.hop_pointer(), m.hop_count());
    if n == 0 {
        return in_port;
    }
    if h == n.saturating_add(1) {
        m.set_hop_pointer(n);
    }
    match m.return_path().get(usize::from(n)) {
        Some(&p) if p != 0 => p,
        _ => in_port,
    }
}

/// What the sending port of the node that originates a directed-route SMP does (C14-9:1, and
/// C14-13:1 for a response sent by software on QP0): an outgoing SMP with HopCount > 0 and
/// HopPointer 0 gets HopPointer 1 and must leave by `InitialPath[1]`; a returning one with
/// HopPointer = HopCount + 1 gets HopCount and must leave by `ReturnPath[HopCount]`. False when
/// `port` is not the port the path names (the SMP is not sent). Anything else passes unchanged.
pub fn originate(mad: &mut [u8], port: u8) -> bool {
    let Ok(mut m) = SmpMad::new_checked(mad) else {
        return true;
    };
    if !m.is_directed() {
        return true;
    }
    let (h, n) = (m.hop_pointer(), m.hop_count());
    if n == 0 || usize::from(n) >= SMP_PATH_LEN {
        return true;
    }
    if !m.direction() && h == 0 {
        m.set_hop_pointer(1);
        return m.initial_path()[1] == port;
    }
    if m.direction() && h == n + 1 {
        m.set_hop_pointer(n);
        return m.return_path()[usize::from(n)] == port;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipoib_wire::mad::attr::smp as attr;
    use ipoib_wire::mad::MgmtClass;
    use ipoib_wire::smp::{DirectedRoute, SmpMadRepr, SmpRoute};

    /// A SubnGet by directed route along `path` (`InitialPath[1..]`), HopPointer `h`.
    fn dr_get(path: &[u8], h: u8) -> [u8; 256] {
        let mut ip = [0u8; SMP_PATH_LEN];
        ip[1..=path.len()].copy_from_slice(path);
        let mut s = SmpMadRepr::lid_routed_get(1, attr::NODE_INFO, 0);
        s.header.mgmt_class = MgmtClass::SubnDirectedRoute;
        s.header.class_specific = u16::from(h) << 8 | path.len() as u16;
        s.route = SmpRoute::Directed(DirectedRoute {
            dr_slid: LID_PERMISSIVE,
            dr_dlid: LID_PERMISSIVE,
            initial_path: ip,
            return_path: [0; SMP_PATH_LEN],
        });
        s.to_bytes()
    }

    // IBA 1 §14.2.2.2 C14-9, §14.2.2.3 C14-13: out through two switches to a CA and back.
    #[test]
    fn two_switches_and_back() {
        // SM port 1 -> S1 (in 3, out 5) -> S2 (in 2, out 7) -> CA (in 1).
        let mut m = dr_get(&[1, 5, 7], 1);
        assert_eq!(receive(&mut m, 3, true, 8), DrStep::Forward(5));
        assert_eq!(receive(&mut m, 2, true, 8), DrStep::Forward(7));
        assert_eq!(receive(&mut m, 1, false, 1), DrStep::Local);
        let v = SmpMad::new_unchecked(&m[..]);
        assert_eq!(&v.return_path()[1..4], &[3, 2, 1]);
        assert_eq!(v.hop_pointer(), 4);
        assert_eq!(respond(&mut m, 1), 1);
        assert!(SmpMad::new_unchecked(&m[..]).direction());
        assert_eq!(receive(&mut m, 7, true, 8), DrStep::Forward(2));
        assert_eq!(receive(&mut m, 5, true, 8), DrStep::Forward(3));
        assert_eq!(receive(&mut m, 1, false, 1), DrStep::ToRequester);
        assert_eq!(SmpMad::new_unchecked(&m[..]).hop_pointer(), 0);
    }

    // C14-9:1: the originating port moves HopPointer to 1 and must be InitialPath[1].
    #[test]
    fn originate_moves_the_hop_pointer() {
        let mut m = dr_get(&[2, 5], 0);
        assert!(originate(&mut m, 2));
        assert_eq!(SmpMad::new_unchecked(&m[..]).hop_pointer(), 1);
        let mut m = dr_get(&[2, 5], 0);
        assert!(!originate(&mut m, 1), "InitialPath[1] names port 2");
        let mut m = dr_get(&[2, 5], 1);
        assert!(originate(&mut m, 1), "already moved: unchanged");
        assert_eq!(SmpMad::new_unchecked(&m[..]).hop_pointer(), 1);
    }

    // C14-9: a CA does not forward; a path to a port the node lacks is dropped; the sender must
    // have moved the HopPointer; HopCount ≤ 63.
    #[test]
    fn discards() {
        let mut m = dr_get(&[1, 5, 7], 1);
        assert_eq!(
            receive(&mut m, 1, false, 1),
            DrStep::Discard(DrDiscard::NotASwitch)
        );
        let mut m = dr_get(&[1, 9], 1);
        assert_eq!(
            receive(&mut m, 1, true, 8),
            DrStep::Discard(DrDiscard::BadPort)
        );
        let mut m = dr_get(&[1, 2], 0);
        assert_eq!(
            receive(&mut m, 1, true, 8),
            DrStep::Discard(DrDiscard::BadHop)
        );
        let mut m = dr_get(&[1; 63], 63);
        assert_eq!(receive(&mut m, 1, false, 1), DrStep::Local);
        m[7] = 64;
        assert_eq!(
            receive(&mut m, 1, true, 8),
            DrStep::Discard(DrDiscard::BadHop)
        );
        let mut m = dr_get(&[1], 1);
        m[34..36].copy_from_slice(&[0, 5]);
        assert_eq!(
            receive(&mut m, 1, true, 8),
            DrStep::Discard(DrDiscard::LidRoutedPart)
        );
    }

    proptest::proptest! {
        // `step` decides what `receive` does, over hop fields near every boundary, both
        // directions, LID-routed parts and ports in and out of range.
        #[test]
        fn step_is_receive_without_the_changes(
            h in 0..70u8,
            n in proptest::prelude::any::<u8>(),
            near in 0..8u8,
            near_n in 0..8u8,
            returning: bool,
            lid_routed in 0..8u8,
            paths in proptest::collection::vec(0..12u8, 128),
            in_port in 0..12u8,
            is_switch: bool,
            nports in 1..10u8,
        ) {
            // HopCount mostly at its boundaries too (0, 1, the last two of C14-6's 63 hops, one
            // past them), else anywhere up to 69 or in the whole byte: each rule's corner (e.g.
            // a returning SMP with HopPointer 0 and HopCount 0) comes up in every run.
            let n = match near_n {
                0 => 0,
                1 => 1,
                2 => 62,
                3 => 63,
                4 => 64,
                5 => n,
                _ => n % 70,
            };
            // HopPointer mostly at the rules' boundaries: 0, 1, n - 1, n, n + 1.
            let h = match near {
                0 => 0,
                1 => 1,
                2 => n.saturating_sub(1),
                3 => n,
                4 => n.saturating_add(1),
                _ => h,
            };
            let mut m = dr_get(&[1], 1);
            m[4] = u8::from(returning) << 7;
            m[6] = h;
            m[7] = n;
            m[128..256].copy_from_slice(&paths);
            if lid_routed == 0 {
                m[34] = 0;
            }
            let decided = step(&m, is_switch, nports);
            proptest::prop_assert_eq!(receive(&mut m, in_port, is_switch, nports), decided);
        }
    }
}
