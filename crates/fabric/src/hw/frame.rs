//! A packet in flight inside the simulator (LRH through VCRC), with a mark that its CRCs are
//! known good.
//!
//! An emulation shortcut, in the manner of Linux's `CHECKSUM_UNNECESSARY` for packets that never
//! left the machine (loopback, veth): when the emulation itself computed a packet's ICRC and
//! VCRC (IBA 1 §7.8) over exactly these bytes, a receiver's check would compute the same CRCs
//! again and find them equal, so it is skipped. The mark is set only by the code that computed
//! the CRCs ([`Frame::with_crcs`]: an HCA or a switch agent that built the packet, a switch that
//! rewrote a directed-route SMP and its CRCs); any mutable access to the bytes
//! ([`Frame::bytes_mut`]) clears it, and so does a link's fault chain (a `Corrupt` fault flips a
//! bit). Packets from outside (a test's bytes, a parsed capture) come in as [`Frame::new`],
//! unmarked, and are checked in full. A UDP fabric host's packet, whose VCRC the fabric's slot
//! checked on its way in (as the switch port at the other end of the slot's cable would, IBA 1
//! §7.8.2), comes in as [`Frame::with_vcrc_checked`]: that port skips its VCRC check, and
//! everything else, the ICRC at the destination (IBA 1 §7.8.1) included, is checked as for an
//! unmarked packet. Receivers still check everything else
//! (lengths, headers), so what is dropped, counted and answered is the same as with the checks:
//! only the CPU time differs. The bytes themselves, and so captures, are untouched.
//!
//! A switch re-sending a marked directed-route SMP (its hop rules change two bytes of the MAD,
//! IBA 1 §14.2.2.2) goes one step further: it leaves the CRC fields as they were and marks the
//! frame "CRCs pending" ([`Frame::with_crcs_pending`]). Until they are written, the CRC fields are
//! stale, and only receivers that skip the CRC checks of a marked frame read the bytes. Before the
//! bytes are seen by anything else, [`Frame::seal`] writes both CRCs with `fill_crcs`, the same
//! bytes `update_crcs` would have written at each hop (a proptest in `ipoib_wire::crc` checks
//! the two agree): the simulator seals a frame before its capture tap, its drop filter and a link's
//! faults see it, and [`Frame::into_vec`] and [`Frame::bytes_mut`] seal. A frame consumed inside the
//! emulation (an SMP answered by the SMA at the end of its path) never has its CRCs computed.
//!
//! A frame also carries, beside its bytes and never in them, the number of switches that have
//! forwarded it ([`Frame::switch_hops`]): the simulator's stand-in for a packet's age, with which
//! a switch discards a packet going round a forwarding loop (`crate::hw::switch`,
//! [`SWITCH_HOP_LIMIT`]). Every way a frame is built starts it at 0; clones keep it.

use ipoib_wire::packet::fill_crcs;
use std::ops::Deref;

/// What is known of a frame's CRCs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Crcs {
    /// Nobody vouches for them: a receiver checks them.
    #[default]
    Unchecked,
    /// Computed by the emulation over exactly these bytes.
    Good,
    /// Not written yet; [`Frame::seal`] writes them.
    Pending,
    /// The VCRC was computed over exactly these bytes and found equal to the packet's (a UDP
    /// fabric slot's check of a host's packet); the ICRC nobody vouches for.
    VcrcChecked,
}

/// The number of switches a packet may have been forwarded by before a switch discards it, as
/// a switch discards a packet older than its lifetime limit (IBA 1 §18.2.5.4, SwitchInfo
/// LifeTimeValue). No valid path reaches it: every port of a subnet is within 63 links of the
/// SM's port (a directed route has at most 63 hops, IBA 1 §14.2.2, so the SM reaches nothing
/// farther), so a path between two ports has at most 126 links and 125 switches. A packet in a
/// forwarding loop (two masters' conflicting tables, docs/OPENSM-NOTES.md) reaches it quickly
/// whatever its time in each switch, which the simulator does not queue long enough to age it.
/// It bounds the hops of one packet, not the copies of a multicast loop that multiplies them
/// (docs/CONFORMANCE.md, IBA 1 §18.2.5.4).
pub const SWITCH_HOP_LIMIT: u8 = 128;

/// A packet with its "CRCs known good" mark. See the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frame {
    bytes: Vec<u8>,
    crcs: Crcs,
    /// Switches that forwarded it (not in the bytes; see the module docs).
    hops: u8,
}

impl Frame {
    /// A packet whose CRCs nobody vouches for: receivers check them.
    pub fn new(bytes: Vec<u8>) -> Frame {
        Frame {
            bytes,
            crcs: Crcs::Unchecked,
            hops: 0,
        }
    }

    /// A packet whose ICRC (if it has one) and VCRC the caller has just computed over exactly
    /// these bytes (`PacketRepr::emit`, `fill_crcs`, or `update_crcs` on a packet whose CRCs
    /// were good): receivers may skip their CRC checks.
    pub fn with_crcs(bytes: Vec<u8>) -> Frame {
        Frame {
            bytes,
            crcs: Crcs::Good,
            hops: 0,
        }
    }

    /// A packet the emulation changed from one whose CRCs were known good (or pending), without
    /// writing its CRC fields: [`Frame::seal`] writes them before anything but a receiver that
    /// skips its CRC checks sees the bytes (see the module docs).
    pub fn with_crcs_pending(bytes: Vec<u8>) -> Frame {
        Frame {
            bytes,
            crcs: Crcs::Pending,
            hops: 0,
        }
    }

    /// A packet from outside whose VCRC the caller has just checked over exactly these bytes
    /// and found good (a UDP fabric slot, which checks what the switch port at the cable's other
    /// end would, IBA 1 §7.8.2): the switch port skips that check; the ICRC, which only the
    /// destination checks (IBA 1 §7.8.1), is checked there as in any unmarked packet.
    pub fn with_vcrc_checked(bytes: Vec<u8>) -> Frame {
        Frame {
            bytes,
            crcs: Crcs::VcrcChecked,
            hops: 0,
        }
    }

    /// True when the CRCs are known good, written or pending (see the module docs): a receiver
    /// skips its CRC checks and reads no CRC field.
    pub fn crcs_good(&self) -> bool {
        matches!(self.crcs, Crcs::Good | Crcs::Pending)
    }

    /// True when the VCRC is known good: both CRCs are ([`Frame::crcs_good`]), or the VCRC
    /// was checked over these bytes ([`Frame::with_vcrc_checked`]). A switch port skips its VCRC
    /// check (IBA 1 §7.8.2); an ICRC check still needs [`Frame::crcs_good`].
    pub fn vcrc_good(&self) -> bool {
        self.crcs != Crcs::Unchecked
    }

    /// The number of switches that forwarded the frame (see the module docs).
    pub fn switch_hops(&self) -> u8 {
        self.hops
    }

    /// Counts one more switch forwarding the frame: false, and nothing counted, when
    /// [`SWITCH_HOP_LIMIT`] switches already have (the switch discards it).
    pub fn count_switch_hop(&mut self) -> bool {
        if self.hops >= SWITCH_HOP_LIMIT {
            return false;
        }
        self.hops += 1;
        true
    }

    /// Writes the CRC fields of a frame whose CRCs are pending; nothing for any other.
    pub fn seal(&mut self) {
        if self.crcs == Crcs::Pending {
            // The frame was built by the emulation with lengths that add up: fill_crcs cannot
            // fail on it; if it did, the frame is left unmarked and its receiver checks it.
            self.crcs = match fill_crcs(&mut self.bytes) {
                Ok(()) => Crcs::Good,
                Err(_) => Crcs::Unchecked,
            };
        }
    }

    /// The bytes, to change them: sealed first, then the mark is cleared.
    pub fn bytes_mut(&mut self) -> &mut Vec<u8> {
        self.seal();
        self.crcs = Crcs::Unchecked;
        &mut self.bytes
    }

    /// The bytes, sealed (the mark is lost).
    pub fn into_vec(mut self) -> Vec<u8> {
        self.seal();
        self.bytes
    }

    /// The allocation, to build another packet in (a receiver that consumed the frame): the
    /// bytes are no packet any more, so pending CRCs are not written.
    pub fn into_spare(self) -> Vec<u8> {
        self.bytes
    }

    /// The bytes as they are, and whether their CRCs were known good (written or pending), for
    /// a device that changes them and wraps them again itself (a switch re-sending a
    /// directed-route SMP): with pending CRCs the CRC fields are stale.
    pub fn into_parts(self) -> (Vec<u8>, bool) {
        let good = self.crcs_good();
        (self.bytes, good)
    }
}

/// The bytes; of a frame with pending CRCs, the CRC fields are stale (see the module docs).
impl Deref for Frame {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl AsRef<[u8]> for Frame {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl From<Vec<u8>> for Frame {
    /// [`Frame::new`]: unmarked.
    fn from(bytes: Vec<u8>) -> Frame {
        Frame::new(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::Frame;

    #[test]
    fn mutable_access_clears_the_mark() {
        let mut f = Frame::with_crcs(vec![1, 2, 3]);
        assert!(f.crcs_good());
        assert!(f.clone().crcs_good(), "a copy has the same bytes");
        assert_eq!(&f[..], &[1, 2, 3]);
        f.bytes_mut()[0] = 9;
        assert!(!f.crcs_good());
        assert!(!Frame::new(vec![1]).crcs_good());
        assert!(!Frame::from(vec![1]).crcs_good());
        let mut f = Frame::with_vcrc_checked(vec![1, 2, 3]);
        assert!(
            f.vcrc_good() && !f.crcs_good(),
            "the ICRC is not vouched for"
        );
        f.bytes_mut()[0] = 9;
        assert!(!f.vcrc_good());
    }

    // Pending CRCs are written before the bytes leave: the same bytes as computed at once.
    #[test]
    fn pending_crcs_are_written_when_the_bytes_leave() {
        let good = crate::hw::switch::tests::ud(1, 2, 40, ipoib_wire::PKey(0xffff));
        let mut stale = good.clone();
        let n = stale.len();
        stale[n - 6..].fill(0); // ICRC and VCRC
        let f = Frame::with_crcs_pending(stale.clone());
        assert!(f.crcs_good());
        assert_eq!(f.clone().into_parts(), (stale.clone(), true));
        // A consumed frame's allocation is reused as it is: no CRC is computed for it.
        assert_eq!(f.clone().into_spare(), stale);
        assert_eq!(f.clone().into_vec(), good);
        let mut g = f.clone();
        g.seal();
        assert_eq!((&g[..], g.crcs_good()), (&good[..], true));
        let mut h = f;
        assert_eq!(h.bytes_mut()[..], good[..]);
        assert!(!h.crcs_good());
    }
}
