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
//! The CRC-32 engine is `crc32fast` (hardware carry-less multiply where available); the CRC-16 is our
//! own slicing-by-16 table built at compile time. Neither allocates. The ICRC masks a copy of the headers on the stack and then runs
//! over the payload in one pass, so it costs one CRC-32 over the same bytes plus a 60-byte copy.

use crate::{Error, Result};

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

/// Advances a raw (uncomplemented) reflected CRC-16 register over `data`.
///
/// Slicing-by-16: the 16-bit register only meets the first two bytes of each 16-byte block, so the
/// lookups of the other fourteen do not wait for the previous block and the loop runs at the
/// speed of the table loads rather than of the register's dependency chain (about twice the
/// speed of slicing-by-8 on x86-64; docs/BENCHMARKS.md).
fn crc16_update(mut crc: u16, data: &[u8]) -> u16 {
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
pub fn icrc(packet: &[u8]) -> Result<u32> {
    if packet.len() < LRH_LEN + BTH_LEN {
        return Err(Error::Truncated);
    }
    let hdr_len = match packet[1] & 0x03 {
        2 => LRH_LEN + BTH_LEN,
        3 if packet.len() >= LRH_LEN + GRH_LEN + BTH_LEN => LRH_LEN + GRH_LEN + BTH_LEN,
        3 => return Err(Error::Truncated),
        _ => return Err(Error::Unsupported),
    };
    // Small packets (MADs, ACKs, short datagrams) are copied whole, masked and hashed in one call:
    // one call costs less than two. Larger ones hash the masked header copy, then the rest in place.
    // The stack buffer is sized to the packet (zeroing it is not free).
    if packet.len() <= 64 {
        return Ok(icrc_copy::<64>(packet, hdr_len));
    }
    if packet.len() <= SMALL_PACKET {
        return Ok(icrc_copy::<SMALL_PACKET>(packet, hdr_len));
    }
    let mut hdr = [0u8; LRH_LEN + GRH_LEN + BTH_LEN];
    let hdr = &mut hdr[..hdr_len];
    hdr.copy_from_slice(&packet[..hdr_len]);
    mask_variant(hdr, hdr_len);
    let mut c = crc32fast::Hasher::new();
    c.update(hdr);
    c.update(&packet[hdr_len..]);
    Ok(c.finalize())
}

/// Packets up to this size take the one-call path of [`icrc`].
const SMALL_PACKET: usize = 320;

/// The ICRC of a packet of at most `N` bytes: copied whole, masked, hashed in one call.
fn icrc_copy<const N: usize>(packet: &[u8], hdr_len: usize) -> u32 {
    let mut buf = [0u8; N];
    let buf = &mut buf[..packet.len()];
    buf.copy_from_slice(packet);
    mask_variant(buf, hdr_len);
    crc32fast::hash(buf)
}

/// Replaces the variant fields of the headers at the start of `b` (LRH, [GRH], BTH: `hdr_len` bytes)
/// by ones, IBA 1 §7.8.1.
fn mask_variant(b: &mut [u8], hdr_len: usize) {
    if hdr_len == LRH_LEN + BTH_LEN {
        // Local packet: only LRH:VL is variant (plus BTH:resv8a below).
        b[0] |= 0xf0;
    } else {
        // Global packet: the whole LRH and GRH TClass, FlowLabel and HopLmt are variant.
        b[..LRH_LEN].fill(0xff);
        let g = LRH_LEN;
        // IPVer(4) TClass(8) FlowLabel(20): keep IPVer, ones for the other 28 bits.
        b[g] |= 0x0f;
        b[g + 1] = 0xff;
        b[g + 2] = 0xff;
        b[g + 3] = 0xff;
        b[g + 7] = 0xff; // HopLmt
    }
    b[hdr_len - BTH_LEN + BTH_RESV8A] = 0xff;
}

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
        }
        let mut c = Crc16::new();
        c.update(&data[..5]);
        c.update(&data[5..]);
        assert_eq!(c.finish(), vcrc(&data));
    }
}
