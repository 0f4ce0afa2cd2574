//! What a SubnSet(PortInfo) may write beyond the port state, LID and MTU (IBA 1 §14.2.5.6), the
//! same for a CA port and a switch port: the values refused with status 0x001C (invalid
//! attribute value) and the link settings a later SubnGet reads back. Measured against the
//! fullest software SMA of Linux, qib's `subn_set_portinfo` (docs/conformance/sma-set.md, which
//! also says where ibsim differs).

use super::OPERATIONAL_VLS;
use ipoib_wire::ib::lid::LID_MULTICAST_FIRST;
use ipoib_wire::smp::PortInfoRepr;

/// PortInfo:LinkSpeedSupported of every port of this fabric: SDR, DDR and QDR (IBA 1 §14.2.5.6).
pub const LINK_SPEED_SUPPORTED: u8 = 7;

/// The link settings a SubnSet(PortInfo) writes and a SubnGet reads back (IBA 1 §14.2.5.6). They
/// take effect at the link's next training, which this fabric does not model: the active width
/// and speed stay the cable's. Each 0 until written: the port's value at power-on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkSettings {
    /// LinkWidthEnabled; 0: the active width (what the port answered before any write).
    pub width_enabled: u8,
    /// LinkSpeedEnabled; 0: [`LINK_SPEED_SUPPORTED`].
    pub speed_enabled: u8,
    /// LinkDownDefaultState (1 Sleep, 2 Polling); 0: Polling.
    pub link_down_default: u8,
}

impl LinkSettings {
    /// LinkWidthEnabled as a SubnGet answers it, on a port whose active width is `active`.
    pub fn width_enabled(&self, active: u8) -> u8 {
        if self.width_enabled == 0 {
            active
        } else {
            self.width_enabled
        }
    }

    /// LinkSpeedEnabled as a SubnGet answers it.
    pub fn speed_enabled(&self) -> u8 {
        if self.speed_enabled == 0 {
            LINK_SPEED_SUPPORTED
        } else {
            self.speed_enabled
        }
    }

    /// LinkDownDefaultState as a SubnGet answers it.
    pub fn link_down_default(&self) -> u8 {
        if self.link_down_default == 0 {
            2
        } else {
            self.link_down_default
        }
    }

    /// The settings after a SubnSet(PortInfo) writing `w` on a port whose LinkWidthSupported is
    /// `width_supported`; `None` when one of its link fields holds a value the port cannot take
    /// (status 0x001C, nothing changed). As Linux's qib (`subn_set_portinfo`):
    /// - LinkWidthEnabled: 0 no change, 255 the supported widths, else only supported bits
    ///   (a value of 16 or more, or a width the port lacks, is refused);
    /// - LinkSpeedEnabled: 0 no change, 15 the supported speeds, else only supported bits (8 to
    ///   14 are refused, IBA 1 §14.2.5.6 defines 1 SDR, 2 DDR, 4 QDR);
    /// - LinkDownDefaultState: 0 no change, 1 Sleep, 2 Polling, others refused;
    /// - OperationalVLs: 0 no change, none above VLCap (this fabric's one data VL: only 1).
    pub fn after_set(self, w: &PortInfoRepr, width_supported: u8) -> Option<LinkSettings> {
        let mut s = self;
        s.width_enabled = match w.link_width_enabled {
            0 => self.width_enabled,
            0xff => width_supported,
            v if v >= 16 || v & !width_supported != 0 => return None,
            v => v,
        };
        s.speed_enabled = match w.link_speed_enabled & 0x0f {
            0 => self.speed_enabled,
            15 => LINK_SPEED_SUPPORTED,
            v if v & !LINK_SPEED_SUPPORTED != 0 => return None,
            v => v,
        };
        s.link_down_default = match w.link_down_default_state & 0x0f {
            0 => self.link_down_default,
            v @ (1 | 2) => v,
            _ => return None,
        };
        if w.operational_vls & 0x0f > OPERATIONAL_VLS {
            return None;
        }
        Some(s)
    }
}

/// A LID a SubnSet(PortInfo) may write as the port's LID or MasterSMLID: unicast and not 0 (IBA 1
/// §4.1.3: LID 0 is reserved, 0xC000-0xFFFE are multicast and 0xFFFF permissive), as Linux's qib
/// checks both ("Must be a valid unicast LID address", `subn_set_portinfo`).
pub fn unicast_lid_ok(lid: u16) -> bool {
    lid != 0 && lid < LID_MULTICAST_FIRST
}

/// A PortInfo violation counter (M_KeyViolations, P_KeyViolations, Q_KeyViolations) after a
/// SubnSet(PortInfo) writing `written`: 0 resets it, any other value leaves the count as it is
/// (Linux's qib `subn_set_portinfo`), so that a read-modify-write does not lose the violations
/// counted between its Get and its Set.
pub fn violations_after_set(current: u16, written: u16) -> u16 {
    if written == 0 {
        0
    } else {
        current
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(f: impl FnOnce(&mut PortInfoRepr)) -> Option<LinkSettings> {
        let mut w = PortInfoRepr::default();
        f(&mut w);
        LinkSettings::default().after_set(&w, 0x03)
    }

    #[test]
    fn link_fields() {
        let kept = Some(LinkSettings::default());
        assert_eq!(set(|_| {}), kept, "all 0: no change");
        let width = |v| set(|w| w.link_width_enabled = v).map(|s| s.width_enabled(2));
        assert_eq!(width(1), Some(1));
        assert_eq!(width(3), Some(3));
        assert_eq!(width(0xff), Some(3), "255: the supported widths");
        assert_eq!(width(0), Some(2), "no change: the active width");
        assert_eq!(width(8), None, "12x not supported");
        assert_eq!(width(16), None);
        let speed = |v| set(|w| w.link_speed_enabled = v).map(|s| s.speed_enabled());
        assert_eq!(speed(1), Some(1));
        assert_eq!(speed(15), Some(LINK_SPEED_SUPPORTED));
        assert_eq!(speed(8), None, "FDR10 is not a speed of this fabric");
        assert_eq!(speed(14), None);
        let down = |v| set(|w| w.link_down_default_state = v).map(|s| s.link_down_default());
        assert_eq!((down(0), down(1), down(2)), (Some(2), Some(1), Some(2)));
        assert_eq!(down(3), None);
        let vls = |v| set(|w| w.operational_vls = v).is_some();
        assert!(vls(0) && vls(1));
        assert!(!vls(2) && !vls(5) && !vls(15));
    }

    #[test]
    fn lids_and_counters() {
        assert!(unicast_lid_ok(1) && unicast_lid_ok(0xbfff));
        assert!(!unicast_lid_ok(0) && !unicast_lid_ok(0xc000) && !unicast_lid_ok(0xffff));
        assert_eq!(violations_after_set(7, 0), 0);
        assert_eq!(violations_after_set(7, 3), 7);
    }
}
