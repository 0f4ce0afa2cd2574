//! M_Key protection (IBA 1 §14.2.4): the check every SMA makes before it answers an SMP.
//!
//! - A port whose M_Key is 0, or an SMP carrying the port's M_Key, passes; a matching M_Key also
//!   stops a running lease timer (§14.2.4.2).
//! - Otherwise, by M_KeyProtectBits (§14.2.4.1 Table 138): 0 — SubnGet passes, SubnSet and
//!   SubnTrapRepress fail; 1 — as 0, but PortInfo:M_Key reads 0 in the GetResp; 2 and 3 — every
//!   SubnGet, SubnSet and SubnTrapRepress fails.
//! - A failure is a violation: the SMA does not answer (the SMP is dropped), M_KeyViolations
//!   counts it, and the lease timer starts if M_KeyLeasePeriod is not 0 and it is not already
//!   running. When the lease runs out (M_KeyLeasePeriod seconds) the protect bits become 0
//!   (§14.2.4.2), which this model applies lazily, at the next SMP: nothing else can observe it.

use ipoib_proto::time::Instant;
use ipoib_wire::mad::Method;
use std::time::Duration;

/// What the M_Key check decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MKeyCheck {
    /// Answer normally.
    Pass,
    /// Answer, with PortInfo:M_Key read as 0 (protect bits 1).
    PassHideKey,
    /// Do not answer: a violation, counted.
    Violation,
}

/// The M_Key state of a port (of port 0 on a switch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MKeyGuard {
    /// M_Key (0: no protection).
    pub mkey: u64,
    /// M_KeyProtectBits (2 bits).
    pub protect: u8,
    /// M_KeyLeasePeriod in seconds (0: the lease never runs out).
    pub lease_period: u16,
    /// M_KeyViolations: SMPs that failed the check (stops at 0xFFFF).
    pub violations: u16,
    /// When the running lease timer ends.
    lease_end: Option<Instant>,
}

impl MKeyGuard {
    /// Checks an SMP of `method` carrying `smp_mkey`, at `now` (IBA 1 §14.2.4).
    pub fn check(&mut self, now: Instant, method: Method, smp_mkey: u64) -> MKeyCheck {
        if self.lease_end.is_some_and(|end| now >= end) {
            self.protect = 0;
            self.lease_end = None;
        }
        if self.mkey == 0 || smp_mkey == self.mkey {
            self.lease_end = None;
            return MKeyCheck::Pass;
        }
        let fails = match method {
            Method::Get => self.protect >= 2,
            Method::Set | Method::TrapRepress => true,
            _ => false,
        };
        if !fails {
            return if self.protect == 1 {
                MKeyCheck::PassHideKey
            } else {
                MKeyCheck::Pass
            };
        }
        self.violations = self.violations.saturating_add(1);
        if self.lease_period != 0 && self.lease_end.is_none() {
            self.lease_end = Some(now + Duration::from_secs(self.lease_period.into()));
        }
        MKeyCheck::Violation
    }

    /// Whether a lease timer runs.
    pub fn lease_running(&self) -> bool {
        self.lease_end.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(protect: u8) -> MKeyGuard {
        MKeyGuard {
            mkey: 0x1234,
            protect,
            lease_period: 60,
            ..MKeyGuard::default()
        }
    }

    // IBA 1 §14.2.4.1 Table 138: what each protection level lets through without the M_Key.
    #[test]
    fn protection_levels() {
        let t = Instant::ZERO;
        let mut g = guard(0);
        assert_eq!(g.check(t, Method::Get, 0), MKeyCheck::Pass);
        assert_eq!(g.check(t, Method::Set, 0), MKeyCheck::Violation);
        let mut g = guard(1);
        assert_eq!(g.check(t, Method::Get, 9), MKeyCheck::PassHideKey);
        assert_eq!(g.check(t, Method::TrapRepress, 9), MKeyCheck::Violation);
        for p in [2, 3] {
            let mut g = guard(p);
            assert_eq!(g.check(t, Method::Get, 0), MKeyCheck::Violation);
            assert_eq!(g.check(t, Method::Get, 0x1234), MKeyCheck::Pass);
            assert_eq!(g.check(t, Method::Set, 0x1234), MKeyCheck::Pass);
            assert_eq!(g.violations, 1);
        }
        let mut open = MKeyGuard::default();
        assert_eq!(
            open.check(t, Method::Set, 77),
            MKeyCheck::Pass,
            "M_Key 0 protects nothing"
        );
    }

    // IBA 1 §14.2.4.2: a violation starts the lease; when it runs out the protect bits become 0;
    // a matching M_Key stops it.
    #[test]
    fn lease() {
        let mut g = guard(2);
        assert_eq!(g.check(Instant::ZERO, Method::Get, 0), MKeyCheck::Violation);
        assert!(g.lease_running());
        let later = Instant::ZERO + Duration::from_secs(59);
        assert_eq!(g.check(later, Method::Get, 0), MKeyCheck::Violation);
        let end = Instant::ZERO + Duration::from_secs(60);
        assert_eq!(g.check(end, Method::Get, 0), MKeyCheck::Pass);
        assert_eq!((g.protect, g.violations), (0, 2));
        let mut g = guard(2);
        g.check(Instant::ZERO, Method::Get, 0);
        g.check(Instant::ZERO, Method::Get, 0x1234);
        assert!(!g.lease_running(), "the right M_Key stops the lease");
        let mut g = MKeyGuard {
            lease_period: 0,
            ..guard(3)
        };
        g.check(Instant::ZERO, Method::Set, 0);
        assert!(!g.lease_running(), "period 0: the lease never runs out");
    }
}
