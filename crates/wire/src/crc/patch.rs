//! Updating the CRCs of a packet after a few of its bytes changed: the ICRC afresh (one
//! `crc32fast` pass, about 11 ns for a 290-byte SMP), the VCRC from the one on the wire (the
//! VCRC engine costs about 50 ns over the same bytes; docs/benchmarks/wire.md).
//!
//! The VCRC is linear over GF(2): for two messages `a` and `b` of the same length,
//! `vcrc(a) ^ vcrc(b)` is the CRC of `a ^ b` from a zero register with no final complement (the
//! initial value and the complement cancel). A byte that changes by `d` at offset `o` of an
//! `n`-byte message changes the register by the register after `d` from zero (one table lookup)
//! followed by `n - o - 1` zero bytes, which is a multiplication by `x^(8 (n - o - 1))` modulo the
//! polynomial: at most three products by precomputed constants (the count in base 64). A
//! directed-route SMP that a switch sends on changes two bytes of its MAD (IBA 1 §14.2.2.2), and
//! its ICRC; so the VCRC costs a few dozen table lookups instead of a pass over the packet.

use super::{icrc, BTH_LEN, CRC16_POLY_REFLECTED, CRC16_TABLES, GRH_LEN, LRH_LEN};
use crate::ib::{ICRC_LEN, VCRC_LEN};
use crate::{Error, Result};

/// Zero-byte counts the shift tables cover: below 64^2 * 16 (far past any IB packet).
const SHIFT_MAX: usize = 64 * 64 * 16;

/// `a * b` modulo the VCRC polynomial, reflected (bit 15 is the coefficient of x^0).
const fn gf2_mul16(a: u16, mut b: u16) -> u16 {
    let mut p = 0u16;
    let mut i = 0;
    while i < 16 {
        p ^= b & ((a >> (15 - i)) & 1).wrapping_neg();
        b = (b >> 1) ^ ((b & 1).wrapping_neg() & CRC16_POLY_REFLECTED);
        i += 1;
    }
    p
}

/// Products by one constant: nibble `j` of the register holding `v` at `[j][v]` (128 bytes).
type MulTable16 = [[u16; 16]; 4];

/// `[i]` multiplies a VCRC register by `x^(8 * i * step)`, for `N` values of `i`.
const fn shift_tables<const N: usize>(step: usize) -> [MulTable16; N] {
    // x^(8 * step): x^0 is 0x8000, multiplying by x is one reflected shift.
    let mut unit = 0x8000u16;
    let mut k = 0;
    while k < 8 * step {
        unit = (unit >> 1) ^ ((unit & 1).wrapping_neg() & CRC16_POLY_REFLECTED);
        k += 1;
    }
    let mut t = [[[0u16; 16]; 4]; N];
    let mut p = 0x8000u16;
    let mut i = 0;
    while i < N {
        let mut j = 0;
        while j < 4 {
            let mut v = 0;
            while v < 16 {
                t[i][j][v] = gf2_mul16((v as u16) << (4 * j), p);
                v += 1;
            }
            j += 1;
        }
        p = gf2_mul16(p, unit);
        i += 1;
    }
    t
}

/// Shifts by 0..64, by 64 times 0..64, by 4096 times 0..16 zero bytes (18 KiB in all).
static SHIFT_LO: [MulTable16; 64] = shift_tables(1);
static SHIFT_MID: [MulTable16; 64] = shift_tables(64);
static SHIFT_HI: [MulTable16; 16] = shift_tables(4096);

fn mul16(r: u16, t: &MulTable16) -> u16 {
    let x = |j: usize| t[j][usize::from((r >> (4 * j)) & 0xf)];
    (x(0) ^ x(1)) ^ (x(2) ^ x(3))
}

/// A VCRC register followed by `n` zero bytes (`n < SHIFT_MAX`).
fn shift16(mut r: u16, n: usize) -> u16 {
    let (lo, mid, hi) = (n % 64, (n / 64) % 64, n / 4096);
    if lo != 0 {
        r = mul16(r, &SHIFT_LO[lo]);
    }
    if mid != 0 {
        r = mul16(r, &SHIFT_MID[mid]);
    }
    if hi != 0 {
        r = mul16(r, &SHIFT_HI[hi]);
    }
    r
}

/// The VCRC register after byte `d` (from register `r`).
fn step16(r: u16, d: u8) -> u16 {
    (r >> 8) ^ CRC16_TABLES[0][usize::from((r as u8) ^ d)]
}

/// The changed bytes of `new` against `old` (same length), as (index, XOR) in ascending order,
/// to `f`. Eight bytes at a time: an edit of a few bytes skips the rest quickly.
fn for_each_change(old: &[u8], new: &[u8], mut f: impl FnMut(usize, u8)) {
    let (mut a, mut b) = (old.chunks_exact(8), new.chunks_exact(8));
    let word = |c: &[u8]| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
    for (i, (x, y)) in (&mut a).zip(&mut b).enumerate() {
        let mut d = word(x) ^ word(y);
        while d != 0 {
            let j = d.trailing_zeros() as usize / 8;
            f(8 * i + j, (d >> (8 * j)) as u8);
            d &= !(0xff << (8 * j));
        }
    }
    let base = old.len() - a.remainder().len();
    for (j, (x, y)) in a.remainder().iter().zip(b.remainder()).enumerate() {
        if x != y {
            f(base + j, x ^ y);
        }
    }
}

/// Updates the CRCs of `packet` (an IBA packet, LRH first byte through VCRC) whose bytes
/// `packet[at..at + old.len()]` were `old` when its VCRC was computed and have changed since:
/// the ICRC is computed afresh, the VCRC on the wire is XORed with the change that the edit and
/// the new ICRC make to it. When the VCRC on the wire was right before the edit (a switch checked
/// it on receipt), the packet is then byte for byte what [`crate::packet::fill_crcs`] makes of it;
/// when it was wrong, it stays wrong by as much.
///
/// Errors: `Unsupported` for a raw packet (LNH 0 or 1) or when the edited bytes are not all past
/// the BTH and before the ICRC (use [`crate::packet::fill_crcs`] there); `Truncated` when the
/// packet cannot hold its headers and CRCs. The packet is unchanged on error.
pub fn update_crcs(packet: &mut [u8], at: usize, old: &[u8]) -> Result<()> {
    if packet.len() < LRH_LEN + BTH_LEN + ICRC_LEN + VCRC_LEN {
        return Err(Error::Truncated);
    }
    let headers = match packet[1] & 0x03 {
        2 => LRH_LEN + BTH_LEN,
        3 => LRH_LEN + GRH_LEN + BTH_LEN,
        _ => return Err(Error::Unsupported),
    };
    let body_end = packet.len() - VCRC_LEN;
    let icrc_off = body_end
        .checked_sub(ICRC_LEN)
        .filter(|&o| o >= headers)
        .ok_or(Error::Truncated)?;
    let end = at.checked_add(old.len()).ok_or(Error::Unsupported)?;
    if at < headers || end > icrc_off || body_end >= SHIFT_MAX {
        return Err(Error::Unsupported);
    }
    // The VCRC's change: Horner over the changed bytes, zero runs between them shifted.
    let mut r = 0u16;
    let mut next = None::<usize>;
    for_each_change(old, &packet[at..end], |i, d| {
        let o = at + i;
        if let Some(n) = next {
            r = shift16(r, o - n);
        }
        r = step16(r, d);
        next = Some(o + 1);
    });
    // No change at all leaves r zero; the ICRC is still made right.
    r = shift16(r, icrc_off - next.unwrap_or(icrc_off));
    let new_icrc = icrc(&packet[..icrc_off])?.to_le_bytes();
    for (b, n) in packet[icrc_off..body_end].iter_mut().zip(new_icrc) {
        r = step16(r, *b ^ n);
        *b = n;
    }
    for (b, d) in packet[body_end..].iter_mut().zip(r.to_le_bytes()) {
        *b ^= d;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::fill_crcs;
    use proptest::prelude::*;

    /// A packet of `len` bytes (LNH from `global`) with the given body bytes, PktLen set, CRCs
    /// filled.
    fn packet(global: bool, body: &[u8]) -> Vec<u8> {
        let headers = LRH_LEN + if global { GRH_LEN } else { 0 } + BTH_LEN;
        let mut len = headers + body.len() + ICRC_LEN + VCRC_LEN;
        len += (4 - (len - VCRC_LEN) % 4) % 4;
        let mut p = vec![0u8; len];
        p[0] = 0xf0; // VL 15
        p[1] = if global { 3 } else { 2 };
        let words = ((len - VCRC_LEN) / 4) as u16;
        p[2..4].copy_from_slice(&[0xff, 0xff]);
        p[4..6].copy_from_slice(&words.to_be_bytes());
        p[6..8].copy_from_slice(&[0xff, 0xff]);
        if global {
            p[LRH_LEN + 4..LRH_LEN + 6]
                .copy_from_slice(&((len - VCRC_LEN - LRH_LEN - GRH_LEN) as u16).to_be_bytes());
            p[LRH_LEN + 6] = 0x1b;
        }
        p[headers..headers + body.len()].copy_from_slice(body);
        fill_crcs(&mut p).unwrap();
        p
    }

    /// One byte at the last offset before the ICRC: no zero bytes follow it.
    #[test]
    fn last_byte_before_the_icrc() {
        let mut p = packet(false, &[7; 256]);
        let o = p.len() - VCRC_LEN - ICRC_LEN - 1;
        let old = [p[o]];
        p[o] = 0x5a;
        update_crcs(&mut p, o, &old).unwrap();
        let mut full = p.clone();
        fill_crcs(&mut full).unwrap();
        assert_eq!(p, full);
    }

    /// Edits of headers, of the CRCs, and of raw packets are refused; an empty or equal edit
    /// leaves the CRCs alone.
    #[test]
    fn refused_and_empty_edits() {
        let mut p = packet(false, &[1; 40]);
        let before = p.clone();
        assert_eq!(update_crcs(&mut p, 19, &[0]), Err(Error::Unsupported));
        let icrc_off = p.len() - 6;
        assert_eq!(
            update_crcs(&mut p, icrc_off - 1, &[1, 0]),
            Err(Error::Unsupported)
        );
        assert_eq!(
            update_crcs(&mut p, usize::MAX, &[0]),
            Err(Error::Unsupported)
        );
        update_crcs(&mut p, 20, &[]).unwrap();
        update_crcs(&mut p, 20, &[1, 1]).unwrap();
        assert_eq!(p, before);
        p[1] = 0; // raw
        assert_eq!(update_crcs(&mut p, 20, &[0]), Err(Error::Unsupported));
        assert_eq!(update_crcs(&mut p[..20], 8, &[0]), Err(Error::Truncated));
    }

    /// A wrong ICRC on the wire is made right (as `fill_crcs` does); a wrong VCRC stays wrong by
    /// the same bits.
    #[test]
    fn wrong_crcs_on_the_wire() {
        let mut p = packet(false, &[3; 256]);
        let icrc_off = p.len() - 6;
        p[icrc_off] ^= 0x10;
        fill_vcrc(&mut p);
        let old = [p[30]];
        p[30] ^= 0xff;
        update_crcs(&mut p, 30, &old).unwrap();
        let mut full = p.clone();
        fill_crcs(&mut full).unwrap();
        assert_eq!(p, full);

        let body_end = p.len() - 2;
        p[body_end + 1] ^= 0x81;
        let old = [p[31]];
        p[31] ^= 0x42;
        update_crcs(&mut p, 31, &old).unwrap();
        let mut full = p.clone();
        fill_crcs(&mut full).unwrap();
        assert_eq!(p[..body_end], full[..body_end]);
        assert_eq!(
            (p[body_end], p[body_end + 1] ^ full[body_end + 1]),
            (full[body_end], 0x81)
        );
    }

    fn fill_vcrc(p: &mut [u8]) {
        let body_end = p.len() - 2;
        let v = crate::crc::vcrc(&p[..body_end]);
        p[body_end..].copy_from_slice(&v.to_le_bytes());
    }

    /// The shift tables against zero bytes run through the VCRC engine, for every count up to
    /// three digits deep.
    #[test]
    fn shifts_are_zero_bytes() {
        let zeros = vec![0u8; 9000];
        for r in [1u16, 0x8000, 0xbeef] {
            for n in (0..200).chain([4095, 4096, 4097, 4160, 8191, 8999]) {
                assert_eq!(
                    shift16(r, n),
                    super::super::crc16_update_table(r, &zeros[..n]),
                    "{r:#x} {n}"
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Byte for byte what a full recompute gives, for any packet, any edit in the invariant
        /// bytes past the BTH, with or without a GRH, up to a 4 KiB payload.
        #[test]
        fn equals_full_recompute(
            global in any::<bool>(),
            body in prop::collection::vec(any::<u8>(), 1..4200),
            start in any::<prop::sample::Index>(),
            edit in prop::collection::vec(any::<u8>(), 0..70),
            sparse in any::<bool>(),
        ) {
            let mut p = packet(global, &body);
            let headers = LRH_LEN + if global { GRH_LEN } else { 0 } + BTH_LEN;
            let at = headers + start.index(body.len());
            let end = (at + edit.len()).min(headers + body.len());
            let old = p[at..end].to_vec();
            for (i, (b, e)) in p[at..end].iter_mut().zip(&edit).enumerate() {
                // Sparse: a few scattered bytes, as a directed-route hop changes.
                if !sparse || i % 17 == 0 {
                    *b = *e;
                }
            }
            update_crcs(&mut p, at, &old).unwrap();
            let mut full = p.clone();
            fill_crcs(&mut full).unwrap();
            prop_assert_eq!(p, full);
        }
    }
}
