//! ICRC and VCRC (IBA 1 §7.8), and the two CRC engines behind them.
//!
//! - The ICRC (invariant CRC, IBA 1 §7.8.1) is the Ethernet CRC-32 (polynomial 0x04C11DB7, processed
//!   reflected, initial value 0xFFFFFFFF, final complement) over the packet from the first byte of the
//!   LRH to the last pad byte, with the fields that switches and routers may change replaced by ones:
//!   without a GRH the LRH VL nibble; with a GRH the whole LRH plus the GRH traffic class, flow label
//!   and hop limit; in both cases BTH byte 4 (resv8a). Raw packets (LNH 0 or 1) carry no ICRC.
//! - The VCRC (variant CRC, IBA 1 §7.8.2) is a CRC-16, polynomial 0x100B, initial value 0xFFFF, final
//!   complement, over the packet from the LRH through the ICRC. It is processed in the same bit order
//!   as the ICRC, i.e. reflected (table polynomial 0xD008). Source for the bit order: Endace's DAG
//!   library `dagcrc.c` (`dagcrc_infiniband_vcrc16_r`), written by the vendor whose capture cards
//!   produced the ERF InfiniBand records that wireshark's dissector reads; Linux's soft-RoCE has no
//!   VCRC (RoCE drops the link layer), so it cannot be used as a witness for this one.
//! - Both CRCs go on the wire least significant byte first (IBA 1 §7.8; Linux `rxe_icrc.c` stores
//!   the ICRC as a little-endian u32).
//!
//! The CRC-32 engine is `crc32fast` (hardware carry-less multiply where available). The CRC-16 has two
//! engines: below [`VCRC_SIMD_MIN`] bytes our own slicing-by-16 table built at compile time, from
//! there on `crc-fast`, which folds with carry-less multiplies (PCLMULQDQ/VPCLMULQDQ, or PMULL on
//! aarch64) for any CRC-16 polynomial and has a table fallback elsewhere. Neither allocates per call.
//! The ICRC costs one crc32fast call over the packet plus a few table lookups that account for the
//! masked fields (see [`icrc`]). After a few bytes of a packet change (a switch sending a
//! directed-route SMP on), [`update_crcs`] recomputes the ICRC and updates the VCRC from the one on
//! the wire without a pass over the packet. docs/benchmarks/wire.md has the figures.

use crate::{Error, Result};

mod patch;
pub use patch::update_crcs;

/// Reflected form of the VCRC polynomial 0x100B (IBA 1 §7.8.2).
const CRC16_POLY_REFLECTED: u16 = 0xd008;

/// Bytes the VCRC engine consumes per step (slicing-by-16).
const SLICE: usize = 16;

const fn crc16_tables() -> [[u16; 256]; SLICE] {
    let mut t = [[0u16; 256]; SLICE];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u16;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ CRC16_POLY_REFLECTED
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    // t[s][b]: the register after byte b followed by s zero bytes.
    let mut s = 1;
    while s < SLICE {
        let mut i = 0;
        while i < 256 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        s += 1;
    }
    t
}

/// Slicing tables of the VCRC (8 KiB, built at compile time).
static CRC16_TABLES: [[u16; 256]; SLICE] = crc16_tables();

/// Shortest input for which [`vcrc`] uses `crc-fast` rather than the slicing table: below it the
/// table is faster than `crc-fast`'s fixed cost per call (about 30 ns on x86-64), from it on the
/// folding is (docs/benchmarks/wire.md, VCRC).
pub const VCRC_SIMD_MIN: usize = 256;

/// The VCRC as `crc-fast` parameters: width 16, polynomial 0x100B, reflected in and out (IBA 1
/// §7.8.2). Initial value and final XOR are left to the caller (init 0xFFFF, xorout 0), so that
/// the result is the raw register and a register can be carried from one call to the next.
fn crc_fast_params() -> &'static crc_fast::CrcParams {
    static PARAMS: std::sync::OnceLock<crc_fast::CrcParams> = std::sync::OnceLock::new();
    // The check value is the raw register after "123456789": !0x0A3D.
    PARAMS.get_or_init(|| crc_fast::CrcParams::new("IBA-VCRC", 16, 0x100b, 0xffff, true, 0, 0xf5c2))
}

/// Advances a raw (uncomplemented) reflected CRC-16 register over `data`, with the table below
/// [`VCRC_SIMD_MIN`] bytes and with `crc-fast` from there on.
///
/// `crc-fast` keeps the register of a reflected CRC-16 in "algorithm form"
/// (`CrcParams::init_algorithm`, the bit-reversed catalogue init), which is exactly our reflected
/// register; with xorout 0 it returns that register after `data`. So starting it from `crc` is
/// giving it `crc` as `init_algorithm`.
fn crc16_update(crc: u16, data: &[u8]) -> u16 {
    if data.len() < VCRC_SIMD_MIN {
        return crc16_update_table(crc, data);
    }
    let params = crc_fast::CrcParams {
        init_algorithm: u64::from(crc),
        ..*crc_fast_params()
    };
    // A 16-bit CRC: the upper bits of the u64 are zero.
    crc_fast::checksum_with_params(params, data) as u16
}

/// Advances a raw (uncomplemented) reflected CRC-16 register over `data` with the tables alone.
///
/// Slicing-by-16: the 16-bit register only meets the first two bytes of each 16-byte block, so the
/// lookups of the other fourteen do not wait for the previous block and the loop runs at the
/// speed of the table loads rather than of the register's dependency chain (about twice the
/// speed of slicing-by-8 on x86-64; docs/benchmarks/wire.md). Splitting the buffer into several
/// interleaved streams, or slicing by 32, does not go faster: the loop is bound by the byte
/// extractions, loads and XORs (about three operations per byte), not by the register's chain.
fn crc16_update_table(mut crc: u16, data: &[u8]) -> u16 {
    let t = &CRC16_TABLES;
    let mut chunks = data.chunks_exact(SLICE);
    for c in &mut chunks {
        let a = u16::from_le_bytes([c[0], c[1]]) ^ crc;
        // Pairs first, so the fourteen data-only lookups form a shallow tree.
        let rest = (t[13][c[2] as usize] ^ t[12][c[3] as usize])
            ^ (t[11][c[4] as usize] ^ t[10][c[5] as usize])
            ^ (t[9][c[6] as usize] ^ t[8][c[7] as usize])
            ^ (t[7][c[8] as usize] ^ t[6][c[9] as usize])
            ^ (t[5][c[10] as usize] ^ t[4][c[11] as usize])
            ^ (t[3][c[12] as usize] ^ t[2][c[13] as usize])
            ^ (t[1][c[14] as usize] ^ t[0][c[15] as usize]);
        crc = t[15][(a & 0xff) as usize] ^ t[14][(a >> 8) as usize] ^ rest;
    }
    for &b in chunks.remainder() {
        crc = (crc >> 8) ^ t[0][((crc ^ b as u16) & 0xff) as usize];
    }
    crc
}

/// A streaming Ethernet CRC-32 (the ICRC's engine): `new`, any number of `update`, `finish`.
///
/// The engine is `crc32fast`, which picks a carry-less-multiply (PCLMULQDQ) folding path at run time
/// where the CPU has one and a slicing table otherwise; the ICRC is the same CRC-32 over masked bytes,
/// so it needs nothing more than feeding the masked headers and then the payload.
#[derive(Debug, Clone, Default)]
pub struct Crc32 {
    hasher: crc32fast::Hasher,
}

impl Crc32 {
    /// A CRC with the initial value 0xFFFFFFFF loaded.
    pub fn new() -> Crc32 {
        Crc32 {
            hasher: crc32fast::Hasher::new(),
        }
    }
    /// Feeds `data`.
    pub fn update(&mut self, data: &[u8]) {
        self.hasher.update(data);
    }
    /// The CRC of everything fed so far (final complement applied).
    pub fn finish(&self) -> u32 {
        self.hasher.clone().finalize()
    }
    /// The internal register (before the final complement).
    pub fn register(&self) -> u32 {
        !self.finish()
    }
}

/// The Ethernet CRC-32 of `data` (check value 0xCBF43926 over "123456789").
pub fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

/// A streaming VCRC engine (CRC-16, polynomial 0x100B, reflected, IBA 1 §7.8.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crc16 {
    state: u16,
}

impl Default for Crc16 {
    fn default() -> Self {
        Self::new()
    }
}

impl Crc16 {
    /// A CRC with the initial value 0xFFFF loaded.
    pub const fn new() -> Crc16 {
        Crc16 { state: !0 }
    }
    /// Feeds `data`.
    pub fn update(&mut self, data: &[u8]) {
        self.state = crc16_update(self.state, data);
    }
    /// The CRC of everything fed so far (final complement applied).
    pub fn finish(&self) -> u16 {
        !self.state
    }
}

/// The VCRC of `data`, which is the packet from the first LRH byte through the ICRC (or, for a raw
/// packet, through the last byte before the VCRC). IBA 1 §7.8.2.
pub fn vcrc(data: &[u8]) -> u16 {
    !crc16_update(!0, data)
}

/// The VCRC of `data` computed by the slicing table alone, whatever the length. It equals [`vcrc`]
/// for every input; it is what `vcrc` uses below [`VCRC_SIMD_MIN`] bytes, and the benchmarks
/// compare the two engines with it.
pub fn vcrc_table(data: &[u8]) -> u16 {
    !crc16_update_table(!0, data)
}

/// Length of the LRH.
const LRH_LEN: usize = 8;
/// Length of the GRH.
const GRH_LEN: usize = 40;
/// Offset of resv8a inside the BTH.
const BTH_RESV8A: usize = 4;
/// Length of the BTH.
const BTH_LEN: usize = 12;

/// The ICRC of an IBA packet (IBA 1 §7.8.1). `packet` runs from the first LRH byte through the last
/// pad byte: it holds neither the ICRC nor the VCRC. The LNH in the LRH says whether a GRH is present
/// and so which fields are variant.
///
/// Errors: `Truncated` when `packet` is shorter than its LRH, GRH and BTH; `Unsupported` for a raw
/// packet (LNH 0 or 1), which carries no ICRC.
///
/// How: replacing the variant fields by ones XORs the packet with a delta `D = mask & !packet` that
/// is zero past byte 15 (byte 52 with a GRH). A CRC register is linear in its initial value and in
/// the data, and a byte `b` at offset `o` changes the final register exactly as `b * x^(-8o)`
/// (modulo the polynomial) XORed into the initial register would. So the ICRC is one crc32fast
/// call over the packet in place, from an initial register adjusted by a few table lookups
/// (`masked_initial_register`): no copy, and crc32fast keeps its widest fold path for the whole
/// packet (docs/benchmarks/wire.md has the figures).
#[inline]
pub fn icrc(packet: &[u8]) -> Result<u32> {
    if packet.len() < LRH_LEN + BTH_LEN {
        return Err(Error::Truncated);
    }
    let global = match packet[1] & 0x03 {
        2 => false,
        3 if packet.len() >= LRH_LEN + GRH_LEN + BTH_LEN => true,
        3 => return Err(Error::Truncated),
        _ => return Err(Error::Unsupported),
    };
    let register = masked_initial_register(packet, global);
    // crc32fast's state is the complement of the register.
    let mut c = crc32fast::Hasher::new_with_initial(!register);
    c.update(packet);
    Ok(c.finalize())
}

/// The initial CRC-32 register that makes a CRC over `packet` equal the CRC from 0xFFFFFFFF over
/// `packet` with its variant fields replaced by ones (IBA 1 §7.8.1): 0xFFFFFFFF XOR the sum of
/// `d * x^(-8o)` over the bytes `d` of the delta at offsets `o`. `packet` holds at least the headers
/// the LNH (`global`) announces.
#[inline]
fn masked_initial_register(packet: &[u8], global: bool) -> u32 {
    let word =
        |o: usize| u32::from_le_bytes([packet[o], packet[o + 1], packet[o + 2], packet[o + 3]]);
    if !global {
        // LRH:VL (the high nibble of byte 0, offset 0: no factor) and BTH:resv8a.
        let vl = u32::from(!packet[0] & 0xf0);
        let resv8a = !packet[LRH_LEN + BTH_RESV8A];
        return !0 ^ vl ^ BYTE_LOCAL_RESV8A[resv8a as usize];
    }
    // The whole LRH (bytes 0-7), GRH TClass and FlowLabel (the low nibble of byte 8, bytes 9-11),
    // GRH HopLmt (byte 15) and BTH:resv8a (byte 52). Word 0 needs no factor; a word at offset o is
    // a 32-bit value times x^(-8o).
    let lrh_lo = !word(0);
    let lrh_hi = mul(!word(4), &MUL_INV_4);
    let tclass_flow = mul(!word(LRH_LEN) & 0xffff_ff0f, &MUL_INV_8);
    let hop_lmt = BYTE_GLOBAL_HOP_LMT[usize::from(!packet[LRH_LEN + 7])];
    let resv8a = BYTE_GLOBAL_RESV8A[usize::from(!packet[LRH_LEN + GRH_LEN + BTH_RESV8A])];
    !0 ^ lrh_lo ^ lrh_hi ^ tclass_flow ^ hop_lmt ^ resv8a
}

/// The reflected CRC-32 polynomial (0x04C11DB7 bit-reversed).
const CRC32_POLY_REFLECTED: u32 = 0xedb8_8320;

/// `a * b` modulo the CRC-32 polynomial, both in the reflected form of the CRC register (bit 31 is
/// the coefficient of x^0).
const fn gf2_mul(a: u32, mut b: u32) -> u32 {
    let mut p = 0u32;
    let mut i = 0;
    while i < 32 {
        p ^= b & ((a >> (31 - i)) & 1).wrapping_neg();
        b = (b >> 1) ^ ((b & 1).wrapping_neg() & CRC32_POLY_REFLECTED);
        i += 1;
    }
    p
}

/// x^(-8 * bytes) modulo the polynomial (x is invertible: the polynomial's constant term is 1).
/// Dividing by x: `a / x` when a's x^0 coefficient is 0, else `(a + P) / x`.
const fn x_pow_minus_8n(bytes: usize) -> u32 {
    let mut a = 0x8000_0000u32; // x^0
    let mut i = 0;
    while i < 8 * bytes {
        a = if a & 0x8000_0000 != 0 {
            ((a ^ CRC32_POLY_REFLECTED) << 1) | 1
        } else {
            a << 1
        };
        i += 1;
    }
    a
}

/// Multiplies a register by one constant: entry `[j][v]` is the product for nibble `j` holding `v`
/// (each `[u32; 16]` is one cache line).
type MulTable = [[u32; 16]; 8];

const fn mul_table(x: u32) -> MulTable {
    let mut t = [[0u32; 16]; 8];
    let mut j = 0;
    while j < 8 {
        let mut v = 0;
        while v < 16 {
            t[j][v] = gf2_mul((v as u32) << (4 * j), x);
            v += 1;
        }
        j += 1;
    }
    t
}

/// Products of a byte at offset `o` (the low byte of a register) with x^(-8o).
const fn byte_table(o: usize) -> [u32; 256] {
    let x = x_pow_minus_8n(o);
    let mut t = [0u32; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = gf2_mul(b as u32, x);
        b += 1;
    }
    t
}

/// `v * x` for the constant `x` of `t`.
fn mul(v: u32, t: &MulTable) -> u32 {
    let n = |j: usize| t[j][((v >> (4 * j)) & 0xf) as usize];
    ((n(0) ^ n(1)) ^ (n(2) ^ n(3))) ^ ((n(4) ^ n(5)) ^ (n(6) ^ n(7)))
}

/// Word at offset 4 (LRH bytes 4-7) and at offset 8 (GRH bytes 0-3), built at compile time.
static MUL_INV_4: MulTable = mul_table(x_pow_minus_8n(4));
static MUL_INV_8: MulTable = mul_table(x_pow_minus_8n(LRH_LEN));
/// BTH:resv8a of a local packet.
static BYTE_LOCAL_RESV8A: [u32; 256] = byte_table(LRH_LEN + BTH_RESV8A);
/// GRH:HopLmt and BTH:resv8a of a global packet.
static BYTE_GLOBAL_HOP_LMT: [u32; 256] = byte_table(LRH_LEN + 7);
static BYTE_GLOBAL_RESV8A: [u32; 256] = byte_table(LRH_LEN + GRH_LEN + BTH_RESV8A);

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit-at-a-time reference of the VCRC straight from its definition (IBA 1 §7.8.2).
    fn vcrc_bitwise(data: &[u8]) -> u16 {
        let mut c: u16 = 0xffff;
        for &b in data {
            c ^= b as u16;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0xd008
                } else {
                    c >> 1
                };
            }
        }
        c ^ 0xffff
    }

    #[test]
    fn crc32_check_value() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn crc32_matches_crc32fast() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        for len in [0, 1, 7, 15, 16, 17, 31, 64, 100, 1023, 2044, 5000] {
            assert_eq!(
                crc32(&data[..len]),
                crc32fast::hash(&data[..len]),
                "len {len}"
            );
        }
        // Streaming in odd pieces gives the same answer.
        let mut c = Crc32::new();
        c.update(&data[..3]);
        c.update(&data[3..40]);
        c.update(&data[40..]);
        assert_eq!(c.finish(), crc32fast::hash(&data));
    }

    /// Linux `rxe_icrc.c` seeds its ICRC with 0xdebb20e3, "the result of computing a CRC with a seed
    /// of 0xffffffff and 8 bytes of 0xff representing a masked LRH" (IBA 1 §7.8.1 / Annex A17).
    #[test]
    fn icrc_register_after_masked_lrh_is_rxe_seed() {
        let mut c = Crc32::new();
        c.update(&[0xff; 8]);
        assert_eq!(c.register(), 0xdebb_20e3);
    }

    /// A RoCEv2 CNP captured on a ConnectX-4 Lx (scapy `test/contrib/roce.uts`): the ICRC is the same
    /// CRC-32 over 8 bytes of ones standing for the LRH, the masked IPv4/UDP headers (TOS, TTL and the
    /// checksums replaced by ones), the BTH with resv8a masked and the payload, and it is sent least
    /// significant byte first (IBA 1 §7.8.1; IBA Annex A17, RoCEv2).
    #[test]
    fn icrc_known_answer_real_rocev2_capture() {
        let ip = [
            0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00,
            0x11, 0x01, 0x0a, 0x00, 0x12, 0x01,
        ];
        let udp = [0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00];
        let bth = [0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0, 0, 0, 0];
        let wire_icrc = [0x82, 0xfd, 0x00, 0x2a];
        let mut ip_m = ip;
        ip_m[1] = 0xff;
        ip_m[8] = 0xff;
        ip_m[10] = 0xff;
        ip_m[11] = 0xff;
        let mut udp_m = udp;
        udp_m[6] = 0xff;
        udp_m[7] = 0xff;
        let mut bth_m = bth;
        bth_m[4] = 0xff;
        let mut c = Crc32::new();
        c.update(&[0xff; 8]);
        c.update(&ip_m);
        c.update(&udp_m);
        c.update(&bth_m);
        c.update(&[0u8; 16]);
        assert_eq!(c.finish().to_le_bytes(), wire_icrc);
    }

    /// IBA 1 §7.8.1: ICRC of a local packet masks only LRH:VL and BTH:resv8a.
    #[test]
    fn icrc_local_masks_vl_and_resv8a() {
        let mut p = [0u8; 8 + 12 + 8];
        p[0] = 0x30; // VL 3, LVer 0
        p[1] = 0x02; // LNH IBA local
        p[8] = 0x64;
        for (i, b) in p.iter_mut().enumerate().skip(9) {
            *b = i as u8;
        }
        let base = icrc(&p).unwrap();
        let mut q = p;
        q[0] = 0xf0;
        q[12] = 0x00;
        assert_eq!(icrc(&q).unwrap(), base, "VL and resv8a are variant");
        let mut m = p;
        m[0] |= 0xf0;
        m[12] = 0xff;
        assert_eq!(base, crc32fast::hash(&m));
        q[0] = 0x31; // LVer is invariant
        assert_ne!(icrc(&q).unwrap(), base);
    }

    /// IBA 1 §7.8.1: ICRC of a global packet masks the LRH, GRH TClass/FlowLabel/HopLmt, BTH:resv8a.
    #[test]
    fn icrc_global_masks() {
        let mut p = [0u8; 8 + 40 + 12 + 4];
        for (i, b) in p.iter_mut().enumerate() {
            *b = (i * 29) as u8;
        }
        p[1] = (p[1] & !3) | 3;
        p[8] = 0x60 | (p[8] & 0x0f);
        let base = icrc(&p).unwrap();
        let mut m = p;
        m[..8].fill(0xff);
        m[8] |= 0x0f;
        m[9] = 0xff;
        m[10] = 0xff;
        m[11] = 0xff;
        m[15] = 0xff;
        m[48 + 4] = 0xff;
        assert_eq!(base, crc32fast::hash(&m));
        let mut q = p;
        q[0] ^= 0xff;
        q[4] ^= 0x55;
        q[15] ^= 1;
        assert_eq!(icrc(&q).unwrap(), base);
        q[14] ^= 1; // NxtHdr is invariant
        assert_ne!(icrc(&q).unwrap(), base);
    }

    /// The ICRC straight from IBA 1 §7.8.1: a masked copy of the whole packet, one CRC-32.
    fn icrc_reference(packet: &[u8]) -> u32 {
        let mut m = packet.to_vec();
        if packet[1] & 3 == 2 {
            m[0] |= 0xf0;
            m[8 + 4] = 0xff;
        } else {
            m[..8].fill(0xff);
            m[8] |= 0x0f;
            m[9..12].fill(0xff);
            m[15] = 0xff;
            m[48 + 4] = 0xff;
        }
        crc32fast::hash(&m)
    }

    /// IBA 1 §7.8.1: `icrc` (one CRC over the packet from an adjusted initial register) equals the
    /// masked-copy definition, for local and global packets, with the variant fields all zeros and
    /// all ones, at every short length and at crc32fast's path boundaries and MTU sizes.
    #[test]
    fn icrc_paths_match_definition() {
        let data: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let lens = (20..=300).chain([
            1000, 2047, 2048, 2076, 2122, 4096, 4180, 8191, 65535, 65536, 70_000,
        ]);
        for len in lens {
            for (lnh, first) in [(2u8, 0x00u8), (2, 0xff), (3, 0x00), (3, 0xff)] {
                if lnh == 3 && len < 60 {
                    continue;
                }
                let mut p = data[..len].to_vec();
                p[1] = (p[1] & !3) | lnh;
                // All-zero and all-one variant fields: the delta is full, then empty.
                for i in [0usize, 8, 9, 10, 11, 12, 15, 52] {
                    if i < len {
                        p[i] = first;
                    }
                }
                assert_eq!(
                    icrc(&p),
                    Ok(icrc_reference(&p)),
                    "len {len} lnh {lnh} {first:#x}"
                );
            }
        }
    }

    /// The tables multiply by x^(-8o): moving the product past `o` zero bytes gives back the value.
    #[test]
    fn inverse_powers_undo_zero_bytes() {
        let zeros = [0u8; 64];
        // Moves a raw register past `bytes` zeros (crc32fast's state is the complement).
        let past = |reg: u32, bytes: usize| {
            let mut h = crc32fast::Hasher::new_with_initial(!reg);
            h.update(&zeros[..bytes]);
            !h.finalize()
        };
        for v in [1u32, 0x80, 0xff, 0xdead_beef, 0xffff_ffff, 0x8000_0000] {
            assert_eq!(past(mul(v, &MUL_INV_4), 4), v, "{v:#x}");
            assert_eq!(past(mul(v, &MUL_INV_8), 8), v, "{v:#x}");
        }
        for b in [1usize, 0x5a, 0xff] {
            assert_eq!(past(BYTE_LOCAL_RESV8A[b], 12), b as u32);
            assert_eq!(past(BYTE_GLOBAL_HOP_LMT[b], 15), b as u32);
            assert_eq!(past(BYTE_GLOBAL_RESV8A[b], 52), b as u32);
        }
        assert_eq!(x_pow_minus_8n(0), 0x8000_0000);
        assert_eq!(gf2_mul(0x8000_0000, 0x1234_5678), 0x1234_5678);
    }

    proptest::proptest! {
        /// IBA 1 §7.8.2: `vcrc` equals the bit-at-a-time definition on random data of random
        /// lengths 0..10000 (odd ones, and ones that are no multiple of `crc-fast`'s 16- and
        /// 128-byte blocks, included), from a random start offset so that every alignment of the
        /// first byte occurs, and when streamed in two pieces cut anywhere.
        #[test]
        fn vcrc_matches_bitwise(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..10_064),
            off in 0usize..64,
            len in 0usize..10_000,
            cut in proptest::prelude::any::<proptest::sample::Index>(),
        ) {
            let d = &data[off.min(data.len())..];
            let d = &d[..len.min(d.len())];
            let want = vcrc_bitwise(d);
            proptest::prop_assert_eq!(vcrc(d), want);
            let cut = cut.index(d.len() + 1);
            let mut c = Crc16::new();
            c.update(&d[..cut]);
            c.update(&d[cut..]);
            proptest::prop_assert_eq!(c.finish(), want);
        }

        /// IBA 1 §7.8.1: `icrc` equals the masked-copy definition on arbitrary packets.
        #[test]
        fn icrc_matches_definition(
            mut p in proptest::collection::vec(proptest::prelude::any::<u8>(), 60..2200),
            global in proptest::prelude::any::<bool>(),
        ) {
            p[1] = (p[1] & !3) | if global { 3 } else { 2 };
            proptest::prop_assert_eq!(icrc(&p), Ok(icrc_reference(&p)));
        }
    }

    #[test]
    fn icrc_errors() {
        assert_eq!(icrc(&[0; 10]), Err(Error::Truncated));
        let mut raw = [0u8; 24];
        raw[1] = 0x01;
        assert_eq!(icrc(&raw), Err(Error::Unsupported));
        let mut g = [0u8; 30];
        g[1] = 0x03;
        assert_eq!(icrc(&g), Err(Error::Truncated));
    }

    /// IBA 1 §7.8.2: VCRC check value over "123456789", computed from the definition (polynomial
    /// 0x100B, initial 0xFFFF, reflected, final complement).
    #[test]
    fn vcrc_check_value() {
        assert_eq!(vcrc(b"123456789"), 0x0a3d);
        assert_eq!(vcrc_bitwise(b"123456789"), 0x0a3d);
        assert_eq!(vcrc(b""), 0);
    }

    #[test]
    fn vcrc_table_matches_bitwise() {
        let data: Vec<u8> = (0..3000u32).map(|i| (i * 31 + 5) as u8).collect();
        for len in [1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 2999, 3000] {
            assert_eq!(vcrc(&data[..len]), vcrc_bitwise(&data[..len]), "len {len}");
            assert_eq!(
                vcrc_table(&data[..len]),
                vcrc_bitwise(&data[..len]),
                "len {len}"
            );
        }
        let mut c = Crc16::new();
        c.update(&data[..5]);
        c.update(&data[5..]);
        assert_eq!(c.finish(), vcrc(&data));
    }

    /// IBA 1 §7.8.2: both engines agree with the definition at every length up to 1100 bytes (past
    /// the switch to `crc-fast` at `VCRC_SIMD_MIN` and its 16- and 128-byte blocks), from start
    /// addresses of every alignment modulo 16 (`crc-fast` aligns its loads and handles the head and
    /// tail apart), and at the packet sizes of the fabric: a full 2048-byte-MTU UD packet (2076
    /// bytes of VCRC span), a full 4096-byte RC SEND Middle packet without and with a GRH (4120,
    /// 4160).
    #[test]
    fn vcrc_engines_match_bitwise_every_length_and_alignment() {
        let data: Vec<u8> = (0..5000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        let lens = (0..=1100).chain([2047, 2048, 2049, 2076, 2122, 4095, 4096, 4120, 4160, 4900]);
        for len in lens {
            let offsets: &[usize] = if len <= 1100 {
                &[0, 1, 8, 15]
            } else {
                &[0, 3, 16, 64]
            };
            for &off in offsets {
                let d = &data[off..off + len];
                let want = vcrc_bitwise(d);
                assert_eq!(vcrc(d), want, "len {len} offset {off}");
                assert_eq!(vcrc_table(d), want, "table, len {len} offset {off}");
            }
        }
        assert_eq!(vcrc(&[0u8; 300]), vcrc_bitwise(&[0u8; 300]));
        assert_eq!(vcrc(&[0xffu8; 300]), vcrc_bitwise(&[0xffu8; 300]));
    }

    /// The register carries from one engine to the other: a stream fed in pieces on either side of
    /// `VCRC_SIMD_MIN` gives the one-shot VCRC.
    #[test]
    fn vcrc_streams_across_engines() {
        let data: Vec<u8> = (0..4120u32).map(|i| (i * 131 + 17) as u8).collect();
        let cuts = [
            0,
            1,
            9,
            VCRC_SIMD_MIN - 1,
            VCRC_SIMD_MIN,
            VCRC_SIMD_MIN + 1,
            1000,
            4119,
            4120,
        ];
        for a in cuts {
            for b in cuts.into_iter().filter(|&b| b >= a) {
                let mut c = Crc16::new();
                c.update(&data[..a]);
                c.update(&data[a..b]);
                c.update(&data[b..]);
                assert_eq!(c.finish(), vcrc_bitwise(&data), "cuts {a} {b}");
            }
        }
    }
}
