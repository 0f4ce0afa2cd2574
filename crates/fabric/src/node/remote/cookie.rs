//! The attach's return-routability cookie (docs/UDP-FABRIC.md "Protocol", "Limits"): the fabric
//! answers an AttachRequest without a valid cookie with an AttachChallenge only and keeps nothing
//! for it, as DTLS's HelloVerifyRequest (RFC 6347 §4.2.1) and QUIC's Retry (RFC 9000 §8.1). A
//! cookie is SipHash-2-4 (the `siphasher` crate), keyed with the fabric's secret, over the
//! requester's address and a coarse bucket of the fabric's time: only a sender that receives at
//! the address it names learns it, and it is taken in its bucket and the next.
//!
//! The other way, [`Nonces`]: the host's nonce for each attach, which the fabric's challenge,
//! accept and reject echo, so that only a sender that saw the request can answer it.
//!
//! Invariants: a cookie or a nonce is never 0 (0 in a request is "none"); time is a parameter.

use ipoib_proto::time::Instant;
use siphasher::sip::SipHasher24;
use std::hash::{Hash, Hasher};
use std::time::Duration;

/// The time bucket a cookie is minted in: taken until the end of the next one (10 to 20 s
/// after the challenge).
pub const COOKIE_BUCKET: Duration = Duration::from_secs(10);

/// Mints and checks cookies with one secret.
#[derive(Clone)]
pub(super) struct Cookies {
    key: [u64; 2],
}

impl std::fmt::Debug for Cookies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret stays out of logs.
        f.write_str("Cookies")
    }
}

impl Cookies {
    /// Cookies keyed with `key`.
    pub(super) fn new(key: [u64; 2]) -> Cookies {
        Cookies { key }
    }

    fn bucket(now: Instant) -> u64 {
        now.as_nanos() / COOKIE_BUCKET.as_nanos() as u64
    }

    fn mint_in<A: Hash>(&self, peer: &A, bucket: u64) -> u64 {
        let mut h = SipHasher24::new_with_keys(self.key[0], self.key[1]);
        peer.hash(&mut h);
        bucket.hash(&mut h);
        h.finish().max(1)
    }

    /// The cookie for `peer` at `now`.
    pub(super) fn mint<A: Hash>(&self, peer: &A, now: Instant) -> u64 {
        self.mint_in(peer, Self::bucket(now))
    }

    /// True when `cookie` was minted for `peer` in `now`'s bucket or the one before.
    pub(super) fn check<A: Hash>(&self, peer: &A, now: Instant, cookie: u64) -> bool {
        let b = Self::bucket(now);
        cookie != 0
            && (cookie == self.mint_in(peer, b)
                || b.checked_sub(1)
                    .is_some_and(|p| cookie == self.mint_in(peer, p)))
    }
}

/// The host's attach nonces: SipHash-2-4 keyed with the host's secret over a counter, so that
/// the nonces a sender saw tell nothing of the next one without the key.
#[derive(Clone)]
pub(super) struct Nonces {
    key: [u64; 2],
    drawn: u64,
}

impl std::fmt::Debug for Nonces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret stays out of logs.
        f.debug_struct("Nonces")
            .field("drawn", &self.drawn)
            .finish()
    }
}

impl Nonces {
    /// Nonces keyed with `key`.
    pub(super) fn new(key: [u64; 2]) -> Nonces {
        Nonces { key, drawn: 0 }
    }

    /// The next nonce (never 0).
    pub(super) fn draw(&mut self) -> u64 {
        let mut h = SipHasher24::new_with_keys(self.key[0], self.key[1]);
        self.drawn.hash(&mut h);
        self.drawn += 1;
        h.finish().max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::{Cookies, Nonces, COOKIE_BUCKET};
    use ipoib_proto::time::Instant;

    #[test]
    fn a_cookie_is_taken_for_its_peer_in_its_bucket_and_the_next_only() {
        let c = Cookies::new([1, 2]);
        let t = Instant::ZERO + COOKIE_BUCKET / 2;
        let k = c.mint(&7u8, t);
        assert_ne!(k, 0);
        assert!(c.check(&7u8, t, k));
        assert!(c.check(&7u8, t + COOKIE_BUCKET, k), "the next bucket");
        assert!(!c.check(&7u8, t + 2 * COOKIE_BUCKET, k), "expired");
        assert!(!c.check(&8u8, t, k), "another peer's");
        assert!(!c.check(&7u8, t, 0), "none");
        assert!(!Cookies::new([1, 3]).check(&7u8, t, k), "another secret's");
    }

    #[test]
    fn nonces_differ_by_draw_and_key_and_repeat_with_both() {
        let (mut a, mut b) = (Nonces::new([1, 2]), Nonces::new([1, 2]));
        let x: Vec<u64> = (0..3).map(|_| a.draw()).collect();
        assert_eq!(x, (0..3).map(|_| b.draw()).collect::<Vec<_>>(), "same key");
        assert!(x[0] != x[1] && x[1] != x[2] && !x.contains(&0), "{x:?}");
        assert_ne!(Nonces::new([1, 3]).draw(), x[0], "another key's");
    }
}
