//! Time as the agents see it: a point on a nanosecond timeline that the caller owns. The simulator
//! passes virtual time, the runtime passes real time; agents never read a clock themselves.

use core::ops::{Add, AddAssign, Sub};
use std::time::Duration;

/// A point in time, in nanoseconds since an epoch chosen by whoever drives the agents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

impl Instant {
    /// The epoch.
    pub const ZERO: Instant = Instant(0);
    /// The far future: a timer set to it never fires.
    pub const NEVER: Instant = Instant(u64::MAX);

    /// `n` nanoseconds after the epoch.
    pub const fn from_nanos(n: u64) -> Instant {
        Instant(n)
    }
    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// `self - earlier`, or zero when `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
    /// `self + d`, saturating at [`Instant::NEVER`].
    pub fn saturating_add(self, d: Duration) -> Instant {
        let n = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Instant(self.0.saturating_add(n))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        self.saturating_add(d)
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl core::fmt::Display for Instant {
    /// Seconds with nanosecond precision, e.g. `1.000250000s`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{}.{:09}s",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Instant::from_nanos(1_500);
        assert_eq!((t + Duration::from_nanos(500)).as_nanos(), 2_000);
        assert_eq!(t - Instant::from_nanos(2_000), Duration::ZERO);
        assert_eq!(Instant::NEVER + Duration::from_secs(1), Instant::NEVER);
        assert_eq!(
            Instant::from_nanos(1_000_250_000).to_string(),
            "1.000250000s"
        );
    }
}
