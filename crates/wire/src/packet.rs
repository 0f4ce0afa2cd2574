//! Whole InfiniBand packets, LRH through VCRC: header-chain parsing with CRC verdicts, and a builder
//! that computes the pad count, PktLen, GRH PayLen, ICRC and VCRC.
//!
//! Layout (IBA 1 §7.7-7.8, §8.3, §9.2-9.3):
//! `LRH | [GRH] | BTH | ext headers | payload | pad (0-3) | ICRC (4, LSB first) | VCRC (2, LSB first)`
//! for LNH 2 and 3; raw packets (LNH 0 and 1) are `LRH | raw data | VCRC` with no ICRC.
//!
//! Invariants: [`Packet::parse`] never panics and never allocates; lengths that do not add up are
//! errors (`Truncated` when the bytes run short, `Malformed` when fields disagree), while CRC
//! mismatches are verdicts (`icrc_ok`, `vcrc_ok`) so that a decoder can still show the packet.

use crate::crc;
use crate::describe::{Describe, Describer, Value};
use crate::ib::lid::{check_pkt_len, pkt_len_for};
use crate::ib::{
    BthRepr, DethRepr, ExtHeaderSet, ExtHeaders, GrhRepr, Lnh, LrhRepr, Opcode, ICRC_LEN, VCRC_LEN,
};
use crate::{Error, Result};

const LRH_LEN: usize = LrhRepr::LEN;
const GRH_LEN: usize = GrhRepr::LEN;
const BTH_LEN: usize = BthRepr::LEN;

mod ud_local;
pub use ud_local::{ud_local_headers, UD_LOCAL_PAYLOAD_OFFSET};

/// A parsed packet borrowing its payload from the receive buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Local Route Header.
    pub lrh: LrhRepr,
    /// Global Route Header, present when LNH is 3.
    pub grh: Option<GrhRepr>,
    /// Base Transport Header; `None` for raw packets.
    pub bth: Option<BthRepr>,
    /// The extended headers the opcode calls for (none for unknown opcodes, whose bytes stay in
    /// the payload).
    pub ext: ExtHeaders,
    /// Payload with the pad removed; for a raw packet everything between LRH and VCRC.
    pub payload: &'a [u8],
    /// Pad bytes that followed the payload (the BTH PadCnt).
    pub pad_count: u8,
    /// The ICRC as read from the wire (least significant byte first); `None` for raw packets.
    pub icrc: Option<u32>,
    /// The VCRC as read from the wire (least significant byte first).
    pub vcrc: u16,
    /// True when the ICRC matches (IBA 1 §7.8.1); true for raw packets, which carry none.
    pub icrc_ok: bool,
    /// True when the VCRC matches (IBA 1 §7.8.2).
    pub vcrc_ok: bool,
}

impl<'a> Packet<'a> {
    /// Parses a whole packet, LRH first byte through VCRC, and checks both CRCs. Packets with and
    /// without a GRH are both accepted (draft-ietf-ipoib-ip-over-infiniband-06 §6.0: "The IPoIB
    /// implementation MUST be able to handle packets received with or without the use of GRH").
    ///
    /// IBA 1 §7.7: the buffer must be exactly `4 * PktLen + 2` bytes. IBA 1 §8.3: GRH PayLen must
    /// count the bytes from the end of the GRH through the ICRC. IBA 1 §9.2: PadCnt may not exceed
    /// the bytes after the headers. A GRH whose NxtHdr is not 0x1B is `Unsupported`.
    pub fn parse(data: &'a [u8]) -> Result<Packet<'a>> {
        Packet::parse_checking(data, true, true)
    }

    /// [`Packet::parse`] for a receiver that checked the VCRC as the packet arrived (a switch
    /// checks it at every hop, IBA 1 §7.8.2): the VCRC is not computed again (`vcrc_ok` is
    /// true), the ICRC is checked.
    pub fn parse_vcrc_checked(data: &'a [u8]) -> Result<Packet<'a>> {
        Packet::parse_checking(data, false, true)
    }

    /// [`Packet::parse`] for a receiver on the way, not the destination: a switch port checks the
    /// VCRC (IBA 1 §7.8.2) and leaves the invariant ICRC to the destination (IBA 1 §7.8.1), so
    /// the ICRC is not computed (`icrc_ok` is true).
    pub fn parse_vcrc_only(data: &'a [u8]) -> Result<Packet<'a>> {
        Packet::parse_checking(data, true, false)
    }

    /// [`Packet::parse`] for a receiver that knows both CRCs are good without computing them:
    /// the sender computed them over exactly these bytes, unchanged since (an emulated link, not
    /// a wire). Neither CRC is computed (`icrc_ok` and `vcrc_ok` are true); the lengths and
    /// headers are checked as by [`Packet::parse`].
    pub fn parse_crcs_known_good(data: &'a [u8]) -> Result<Packet<'a>> {
        Packet::parse_checking(data, false, false)
    }

    fn parse_checking(data: &'a [u8], check_vcrc: bool, check_icrc: bool) -> Result<Packet<'a>> {
        let lrh = LrhRepr::parse_bytes(data)?;
        check_pkt_len(lrh.pkt_len, data.len())?;
        // check_pkt_len makes data.len() = 4 * PktLen + 2 and LrhRepr made it >= 8, so the
        // subtraction cannot underflow and body_end >= 8.
        let body_end = data.len() - VCRC_LEN;
        let vcrc = u16::from_le_bytes([data[body_end], data[body_end + 1]]);
        let vcrc_ok = !check_vcrc || crc::vcrc(&data[..body_end]) == vcrc;
        if !lrh.lnh.is_iba() {
            return Ok(Packet {
                lrh,
                grh: None,
                bth: None,
                ext: ExtHeaders::default(),
                payload: &data[LRH_LEN..body_end],
                pad_count: 0,
                icrc: None,
                vcrc,
                icrc_ok: true,
                vcrc_ok,
            });
        }
        let mut off = LRH_LEN;
        let mut grh = None;
        if lrh.lnh == Lnh::IbaGlobal {
            let g = GrhRepr::parse_bytes(&data[off..body_end])?;
            off += GRH_LEN;
            if g.nxthdr != GrhRepr::NXT_HDR_IBA {
                return Err(Error::Unsupported);
            }
            if g.paylen as usize != body_end - off {
                return Err(Error::Malformed);
            }
            grh = Some(g);
        }
        let bth = BthRepr::parse_bytes(&data[off..body_end])?;
        off += BTH_LEN;
        if body_end < off + ICRC_LEN {
            return Err(Error::Truncated);
        }
        let icrc_off = body_end - ICRC_LEN;
        let set = bth.opcode.ext_headers().unwrap_or(ExtHeaderSet::NONE);
        let (ext, n) = ExtHeaders::parse(set, &data[off..icrc_off])?;
        off += n;
        let rest = &data[off..icrc_off];
        let pad = bth.pad_count as usize;
        if pad > rest.len() {
            return Err(Error::Malformed);
        }
        let icrc = u32::from_le_bytes([
            data[icrc_off],
            data[icrc_off + 1],
            data[icrc_off + 2],
            data[icrc_off + 3],
        ]);
        let icrc_ok = !check_icrc || crc::icrc(&data[..icrc_off])? == icrc;
        // Built where it is returned, not filled in field by field and then moved.
        Ok(Packet {
            lrh,
            grh,
            bth: Some(bth),
            ext,
            payload: &rest[..rest.len() - pad],
            pad_count: bth.pad_count,
            icrc: Some(icrc),
            vcrc,
            icrc_ok,
            vcrc_ok,
        })
    }

    /// Both CRCs good.
    pub fn crc_ok(&self) -> bool {
        self.icrc_ok && self.vcrc_ok
    }

    /// The builder form of this packet; emitting it reproduces the packet (pad bytes as zero).
    pub fn repr(&self) -> PacketRepr<'a> {
        PacketRepr {
            lrh: self.lrh,
            grh: self.grh,
            bth: self.bth,
            ext: self.ext,
            payload: self.payload,
        }
    }
}

impl Describe for Packet<'_> {
    /// Each header as a group (`lrh`, `grh`, `bth`, `deth`, ...), then the payload, pad count and
    /// the two CRCs with their verdicts.
    fn describe(&self, d: &mut dyn Describer) {
        self.lrh.describe_as("lrh", d);
        if let Some(g) = &self.grh {
            g.describe_as("grh", d);
        }
        if let Some(b) = &self.bth {
            b.describe_as("bth", d);
        }
        self.ext.describe(d);
        d.field("payload", Value::Bytes(self.payload));
        if let Some(i) = self.icrc {
            d.field("icrc", Value::Hex(i as u64, 8));
            d.field("icrc_ok", Value::Bool(self.icrc_ok));
        }
        d.field("vcrc", Value::Hex(self.vcrc as u64, 4));
        d.field("vcrc_ok", Value::Bool(self.vcrc_ok));
    }
}

/// A packet to build. `emit` fills in the LRH LNH and PktLen, the GRH PayLen, the BTH PadCnt, the
/// pad, the ICRC and the VCRC; the values of those fields in the reprs are ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketRepr<'a> {
    /// Local Route Header (LNH and PktLen are computed).
    pub lrh: LrhRepr,
    /// Global Route Header (PayLen is computed).
    pub grh: Option<GrhRepr>,
    /// Base Transport Header (PadCnt is computed); `None` builds a raw packet.
    pub bth: Option<BthRepr>,
    /// Extended headers; must be exactly those the opcode calls for.
    pub ext: ExtHeaders,
    /// The payload, unpadded. For a raw packet, the whole raw data (a multiple of 4 bytes).
    pub payload: &'a [u8],
}

impl<'a> PacketRepr<'a> {
    /// A UD SEND Only packet (the IPoIB-UD frame: LRH, optional GRH, BTH 0x64, DETH, payload).
    /// The BTH opcode is set to UD SEND Only.
    pub fn ud_send_only(
        lrh: LrhRepr,
        grh: Option<GrhRepr>,
        bth: BthRepr,
        deth: DethRepr,
        payload: &'a [u8],
    ) -> PacketRepr<'a> {
        PacketRepr {
            lrh,
            grh,
            bth: Some(BthRepr {
                opcode: Opcode::UD_SEND_ONLY,
                ..bth
            }),
            ext: ExtHeaders::deth(deth),
            payload,
        }
    }

    /// Pad bytes after the payload: enough to reach a 4-byte boundary (IBA 1 §9.2 PadCnt).
    pub fn pad_count(&self) -> usize {
        if self.bth.is_some() {
            (4 - self.payload.len() % 4) % 4
        } else {
            0
        }
    }

    /// LRH through ICRC, the extended headers taking `ext_len` bytes.
    fn len_without_vcrc(&self, ext_len: usize) -> usize {
        let grh = if self.grh.is_some() { GRH_LEN } else { 0 };
        let transport = if self.bth.is_some() {
            BTH_LEN + ext_len + self.payload.len() + self.pad_count() + ICRC_LEN
        } else {
            self.payload.len()
        };
        LRH_LEN + grh + transport
    }

    /// Bytes the packet occupies, LRH through VCRC.
    pub fn buffer_len(&self) -> usize {
        self.len_without_vcrc(self.ext.buffer_len()) + VCRC_LEN
    }

    /// The LNH the packet will carry.
    fn lnh(&self) -> Lnh {
        match (self.bth.is_some(), self.grh.is_some()) {
            (true, true) => Lnh::IbaGlobal,
            (true, false) => Lnh::IbaLocal,
            _ => self.lrh.lnh,
        }
    }

    /// Checks that the parts fit together: a raw packet (no BTH) has no GRH, a raw LNH (0 or 1)
    /// and a payload of whole words; an IBA packet's extended headers are those its opcode calls
    /// for (IBA 1 §9.2); the whole fits in PktLen's 11 bits (IBA 1 §7.7).
    pub fn check(&self) -> Result<()> {
        self.checked_len().map(|_| ())
    }

    /// [`PacketRepr::check`], giving the packet's [`PacketRepr::buffer_len`] and the extended
    /// headers' length, each computed once (the emitters' way).
    fn checked_len(&self) -> Result<(usize, usize)> {
        let ext_len = match &self.bth {
            None => {
                if self.grh.is_some() || self.lrh.lnh.is_iba() || self.payload.len() & 3 != 0 {
                    return Err(Error::Malformed);
                }
                0
            }
            Some(bth) => {
                let want = bth.opcode.ext_headers().unwrap_or(ExtHeaderSet::NONE);
                let set = self.ext.set();
                if set != want {
                    return Err(Error::Malformed);
                }
                set.len()
            }
        };
        let len = self.len_without_vcrc(ext_len);
        pkt_len_for(len)?;
        Ok((len + VCRC_LEN, ext_len))
    }

    /// Writes the packet at the start of `buf` with correct lengths, pad and CRCs; returns the bytes
    /// written ([`PacketRepr::buffer_len`]). `Truncated` when `buf` is too short, `Malformed` when
    /// [`PacketRepr::check`] fails.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let total = self.emit_without_crcs(buf)?;
        fill_crcs(&mut buf[..total])?;
        Ok(total)
    }

    /// [`PacketRepr::emit_without_crcs`] for any packet (`ud_local` has its common case).
    fn emit_any_without_crcs(&self, buf: &mut [u8]) -> Result<usize> {
        let (total, ext_len) = self.checked_len()?;
        if buf.len() < total {
            return Err(Error::Truncated);
        }
        let off = self.emit_headers(buf, total, ext_len)?;
        let end = off + self.payload.len();
        buf[off..end].copy_from_slice(self.payload);
        buf[end..total].fill(0);
        Ok(total)
    }

    /// The packet as [`PacketRepr::emit`] writes it, in a new buffer of exactly
    /// [`PacketRepr::buffer_len`] bytes: the payload is copied once and only the headers, pad and
    /// CRC bytes are zeroed first (a buffer made for `emit` is zeroed whole). Errors as `emit`.
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let (total, ext_len) = self.checked_len()?;
        let mut buf = Vec::with_capacity(total);
        buf.resize(total - VCRC_LEN - self.tail_len(), 0);
        let off = self.emit_headers(&mut buf, total, ext_len)?;
        debug_assert_eq!(off, buf.len());
        buf.extend_from_slice(self.payload);
        buf.resize(total, 0);
        fill_crcs(&mut buf)?;
        Ok(buf)
    }

    /// Bytes between the headers and the VCRC: payload, pad and ICRC.
    fn tail_len(&self) -> usize {
        match self.bth {
            Some(_) => self.payload.len() + self.pad_count() + ICRC_LEN,
            None => self.payload.len(),
        }
    }

    /// Writes LRH, GRH, BTH and extended headers (`ext_len` bytes) of a packet of `total` bytes
    /// at the start of `buf` (checked and long enough); returns where the payload starts.
    fn emit_headers(&self, buf: &mut [u8], total: usize, ext_len: usize) -> Result<usize> {
        let body_end = total - VCRC_LEN;
        let lrh = LrhRepr {
            lnh: self.lnh(),
            pkt_len: pkt_len_for(body_end)?,
            ..self.lrh
        };
        lrh.emit(&mut crate::ib::Lrh::new_unchecked(&mut buf[..LRH_LEN]));
        let mut off = LRH_LEN;
        if let Some(g) = &self.grh {
            let g = GrhRepr {
                paylen: (body_end - off - GRH_LEN) as u16,
                ..*g
            };
            g.emit(&mut crate::ib::Grh::new_unchecked(
                &mut buf[off..off + GRH_LEN],
            ));
            off += GRH_LEN;
        }
        if let Some(b) = &self.bth {
            let b = BthRepr {
                pad_count: self.pad_count() as u8,
                ..*b
            };
            b.emit_bytes(&mut buf[off..off + BTH_LEN]);
            off += BTH_LEN;
            off += self.ext.emit_len(&mut buf[off..], ext_len)?;
        }
        Ok(off)
    }
}

/// Recomputes and writes the ICRC (IBA packets only) and the VCRC of the whole packet in `buf`
/// (LRH through VCRC), e.g. after a switch changed the VL or a router the GRH hop limit.
/// IBA 1 §7.8: both are written least significant byte first. Errors as [`Packet::parse`] for the
/// lengths.
pub fn fill_crcs(buf: &mut [u8]) -> Result<()> {
    let lrh = LrhRepr::parse_bytes(buf)?;
    check_pkt_len(lrh.pkt_len, buf.len())?;
    let body_end = buf.len() - VCRC_LEN;
    if lrh.lnh.is_iba() {
        let min = LRH_LEN
            + if lrh.lnh == Lnh::IbaGlobal {
                GRH_LEN
            } else {
                0
            }
            + BTH_LEN
            + ICRC_LEN;
        if body_end < min {
            return Err(Error::Truncated);
        }
        let icrc_off = body_end - ICRC_LEN;
        let icrc = crc::icrc(&buf[..icrc_off])?;
        buf[icrc_off..body_end].copy_from_slice(&icrc.to_le_bytes());
    }
    let vcrc = crc::vcrc(&buf[..body_end]);
    buf[body_end..].copy_from_slice(&vcrc.to_le_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::ib::{AethRepr, RethRepr, Syndrome};
    use crate::keys::{PKey, QKey};
    use crate::types::Gid;

    /// IPoIB-UD frame, local: LRH (DLID 3, SLID 1, PktLen 10), BTH UD SEND Only (PadCnt 1, P_Key
    /// 0xffff, DestQP 0x48, PSN 1), DETH (Q_Key 0x0b1b, SrcQP 0x49), payload "08 00 00 00 'abc'",
    /// one pad byte, ICRC 0x95b67e59 and VCRC 0xd5c1, both LSB first. The CRCs were computed
    /// independently with Python's zlib.crc32 (ICRC) and a bitwise CRC-16/0x100B (VCRC).
    static UD_LOCAL: [u8; 42] = [
        0x00, 0x02, 0x00, 0x03, 0x00, 0x0a, 0x00, 0x01, // LRH
        0x64, 0x10, 0xff, 0xff, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00, 0x01, // BTH
        0x00, 0x00, 0x0b, 0x1b, 0x00, 0x00, 0x00, 0x49, // DETH
        0x08, 0x00, 0x00, 0x00, 0x61, 0x62, 0x63, 0x00, // payload + pad
        0x59, 0x7e, 0xb6, 0x95, // ICRC
        0xc1, 0xd5, // VCRC
    ];

    /// The same frame sent globally to the IPoIB broadcast group: VL 1, LNH 3, DLID 0xc001, GRH
    /// (HopLmt 0x40, PayLen 32, SGID fe80::2:c903:0:1, DGID ff12:401b:ffff::ffff:ffff), DestQP
    /// 0xffffff, PSN 2. ICRC 0x282ecb4f, VCRC 0xdca0 (Python, as above).
    static UD_GLOBAL: [u8; 82] = [
        0x10, 0x03, 0xc0, 0x01, 0x00, 0x14, 0x00, 0x01, // LRH
        0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x1b, 0x40, // GRH
        0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x00,
        0x01, 0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff,
        0xff, 0xff, // SGID, DGID
        0x64, 0x10, 0xff, 0xff, 0x00, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x02, // BTH
        0x00, 0x00, 0x0b, 0x1b, 0x00, 0x00, 0x00, 0x49, // DETH
        0x08, 0x00, 0x00, 0x00, 0x61, 0x62, 0x63, 0x00, // payload + pad
        0x4f, 0xcb, 0x2e, 0x28, // ICRC
        0xa0, 0xdc, // VCRC
    ];

    const PAYLOAD: &[u8] = &[0x08, 0x00, 0x00, 0x00, 0x61, 0x62, 0x63];

    fn lrh(vl: u8, dlid: u16) -> LrhRepr {
        LrhRepr::local(vl, 0, dlid, 1)
    }

    fn deth() -> DethRepr {
        DethRepr {
            qkey: QKey(0x0b1b),
            src_qp: 0x49,
        }
    }

    fn local_repr() -> PacketRepr<'static> {
        let bth = BthRepr::new(Opcode::UD_SEND_ONLY, PKey(0xffff), 0x48, 1);
        PacketRepr::ud_send_only(lrh(0, 3), None, bth, deth(), PAYLOAD)
    }

    fn global_repr() -> PacketRepr<'static> {
        let grh = GrhRepr::new(
            Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0001),
            Gid::new(0xff12_401b_ffff_0000, 0x0000_0000_ffff_ffff),
            0x40,
        );
        let bth = BthRepr::new(Opcode::UD_SEND_ONLY, PKey(0xffff), 0xff_ffff, 2);
        PacketRepr::ud_send_only(lrh(1, 0xc001), Some(grh), bth, deth(), PAYLOAD)
    }

    /// IBA 1 §7.7, §9.2, §7.8: parse a local UD frame, pad removed, both CRCs verified.
    /// draft-ietf-ipoib-ip-over-infiniband-06 §6.0: packets without a GRH are handled.
    #[test]
    fn parse_local_ud() {
        let p = Packet::parse(&UD_LOCAL).unwrap();
        assert_eq!(p.lrh.pkt_len, 10);
        assert_eq!(p.grh, None);
        assert_eq!(p.bth.unwrap().opcode, Opcode::UD_SEND_ONLY);
        assert_eq!(p.ext.deth, Some(deth()));
        assert_eq!(p.payload, PAYLOAD);
        assert_eq!(p.pad_count, 1);
        assert_eq!(p.icrc, Some(0x95b6_7e59));
        assert_eq!(p.vcrc, 0xd5c1);
        assert!(p.icrc_ok && p.vcrc_ok && p.crc_ok());
    }

    /// IBA 1 §8.3: GRH PayLen counts BTH through ICRC; §7.8.1 global masking.
    /// draft-ietf-ipoib-ip-over-infiniband-06 §6.0: packets with a GRH are handled (and without:
    /// `parse_local_ud`). draft-kashyap-ipoib-ipv6-01 Appendix B.3: multicast DestQP 0xFFFFFF.
    #[test]
    fn parse_global_ud() {
        let p = Packet::parse(&UD_GLOBAL).unwrap();
        let g = p.grh.unwrap();
        assert_eq!((g.paylen, g.nxthdr, g.hoplmt), (32, 0x1b, 0x40));
        assert_eq!(p.bth.unwrap().dest_qp, BthRepr::MULTICAST_QPN);
        assert_eq!(p.payload, PAYLOAD);
        assert!(p.crc_ok());
    }

    /// IBA 1 §7.7 (PktLen), §8.3 (PayLen), §9.2 (PadCnt): the builder computes them.
    #[test]
    fn emit_byte_exact() {
        let r = local_repr();
        assert_eq!(r.buffer_len(), 42);
        let mut b = [0xeeu8; 42];
        assert_eq!(r.emit(&mut b), Ok(42));
        assert_eq!(b, UD_LOCAL);
        let r = global_repr();
        let mut b = [0xeeu8; 82];
        assert_eq!(r.emit(&mut b), Ok(82));
        assert_eq!(b, UD_GLOBAL);
        assert_eq!(r.emit(&mut b[..81]), Err(Error::Truncated));
    }

    /// `to_vec` gives the bytes `emit` writes, with and without GRH, with pad, and for a raw
    /// packet, whatever the buffer held before.
    #[test]
    fn to_vec_is_emit() {
        let odd = [0xa5u8; 13];
        let with_pad = PacketRepr {
            payload: &odd,
            ..local_repr()
        };
        let raw = PacketRepr {
            lrh: LrhRepr {
                lnh: Lnh::Raw,
                ..local_repr().lrh
            },
            grh: None,
            bth: None,
            ext: ExtHeaders::default(),
            payload: &odd[..12],
        };
        for r in [local_repr(), global_repr(), with_pad, raw] {
            let mut b = vec![0xeeu8; r.buffer_len()];
            assert_eq!(r.emit(&mut b), Ok(b.len()));
            assert_eq!(r.to_vec().as_deref(), Ok(&b[..]));
            assert!(Packet::parse(&b).unwrap().crc_ok());
        }
        let bad = PacketRepr {
            ext: ExtHeaders::default(),
            ..local_repr()
        };
        assert_eq!(bad.to_vec(), Err(Error::Malformed));
    }

    #[test]
    fn parse_then_repr_round_trips() {
        for bytes in [&UD_LOCAL[..], &UD_GLOBAL[..]] {
            let p = Packet::parse(bytes).unwrap();
            let mut out = vec![0u8; p.repr().buffer_len()];
            p.repr().emit(&mut out).unwrap();
            assert_eq!(out, bytes);
        }
    }

    /// IBA 1 §7.8: any corrupted byte is caught by the ICRC or the VCRC; the VL nibble (and,
    /// with a GRH, the LRH, TClass, FlowLabel and HopLmt, and always resv8a) only by the VCRC.
    #[test]
    fn corruption_detected() {
        for (bytes, global) in [(&UD_LOCAL[..], false), (&UD_GLOBAL[..], true)] {
            for i in 0..bytes.len() {
                for flip in [0x01u8, 0x10, 0x80, 0xff] {
                    let mut b = bytes.to_vec();
                    b[i] ^= flip;
                    let Ok(p) = Packet::parse(&b) else { continue };
                    assert!(
                        !p.vcrc_ok || !p.icrc_ok,
                        "byte {i} flip {flip:#x} undetected"
                    );
                    let variant = (i == 0 && flip & 0x0f == 0)
                        || (!global && i == 12)
                        || (global
                            && ((i < 8 && !(i == 1 && flip & 3 != 0))
                                || (i == 8 && flip & 0xf0 == 0)
                                || i == 9
                                || i == 10
                                || i == 11
                                || i == 15
                                || i == 52));
                    if variant {
                        assert!(p.icrc_ok, "byte {i} is variant, ICRC must not change");
                    }
                    if i >= bytes.len() - 2 {
                        assert!(p.icrc_ok && !p.vcrc_ok);
                    }
                }
            }
        }
        // Changing the VL alone: only the VCRC breaks, and fill_crcs repairs it.
        let mut b = UD_LOCAL;
        b[0] = 0x70;
        let p = Packet::parse(&b).unwrap();
        assert!(p.icrc_ok && !p.vcrc_ok);
        fill_crcs(&mut b).unwrap();
        assert!(Packet::parse(&b).unwrap().crc_ok());
        assert_eq!(b[36..40], UD_LOCAL[36..40]);
    }

    /// `parse_vcrc_checked` leaves the VCRC to the caller (reported good) and still checks the
    /// ICRC; otherwise it reads the packet as `parse` does.
    #[test]
    fn parse_vcrc_checked_checks_the_icrc_only() {
        let mut b = UD_LOCAL;
        let n = b.len();
        b[n - 1] ^= 0xff;
        assert!(!Packet::parse(&b).unwrap().vcrc_ok);
        let p = Packet::parse_vcrc_checked(&b).unwrap();
        assert!(p.vcrc_ok && p.icrc_ok);
        assert_eq!(p.repr(), Packet::parse(&UD_LOCAL).unwrap().repr());
        b[n - 3] ^= 1; // an ICRC bit
        assert!(!Packet::parse_vcrc_checked(&b).unwrap().icrc_ok);
        assert_eq!(
            Packet::parse_vcrc_checked(&UD_LOCAL[..41]),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn parse_vcrc_only_leaves_the_icrc() {
        let mut b = UD_LOCAL;
        b[36] ^= 1; // an ICRC bit: the VCRC covers it, so fix the VCRC
        let n = b.len();
        let v = crate::crc::vcrc(&b[..n - 2]);
        b[n - 2..].copy_from_slice(&v.to_le_bytes());
        assert!(!Packet::parse(&b).unwrap().icrc_ok);
        let p = Packet::parse_vcrc_only(&b).unwrap();
        assert!(p.vcrc_ok && p.icrc_ok);
        b[n - 1] ^= 0xff;
        assert!(!Packet::parse_vcrc_only(&b).unwrap().vcrc_ok);
    }

    #[test]
    fn parse_crcs_known_good_checks_no_crc() {
        let mut b = UD_LOCAL;
        b[40] ^= 1; // VCRC
        b[36] ^= 1; // ICRC
        let p = Packet::parse_crcs_known_good(&b).unwrap();
        assert!(p.vcrc_ok && p.icrc_ok);
        assert_eq!(
            p,
            Packet {
                vcrc_ok: true,
                icrc_ok: true,
                ..Packet::parse(&b).unwrap()
            }
        );
        assert_eq!(
            Packet::parse_crcs_known_good(&b[..41]),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn emit_without_crcs_then_fill_crcs_is_emit() {
        let mut a = [0u8; 82];
        let mut b = [0xeeu8; 82];
        global_repr().emit(&mut a).unwrap();
        assert_eq!(global_repr().emit_without_crcs(&mut b).unwrap(), 82);
        assert_eq!(&b[76..], &[0; 6], "CRC fields zero, not computed");
        assert_eq!(a[..76], b[..76]);
        fill_crcs(&mut b).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn fill_crcs_rewrites_both() {
        let mut b = UD_GLOBAL;
        b[76..].fill(0);
        fill_crcs(&mut b).unwrap();
        assert_eq!(b, UD_GLOBAL);
        assert_eq!(fill_crcs(&mut b[..80]), Err(Error::Truncated));
    }

    /// IBA 1 §7.7: PktLen must match the buffer; §8.3: PayLen must match; §9.2: PadCnt must fit.
    #[test]
    fn length_errors() {
        assert_eq!(Packet::parse(&UD_LOCAL[..41]), Err(Error::Truncated));
        let mut long = UD_LOCAL.to_vec();
        long.push(0);
        assert_eq!(Packet::parse(&long), Err(Error::Malformed));
        assert_eq!(Packet::parse(&UD_LOCAL[..7]), Err(Error::Truncated));
        let mut b = UD_GLOBAL;
        b[13] = 0x24; // PayLen 36
        assert_eq!(Packet::parse(&b), Err(Error::Malformed));
        let mut b = UD_GLOBAL;
        b[14] = 0x3b; // NxtHdr not IBA
        assert_eq!(Packet::parse(&b), Err(Error::Unsupported));
        // An RC ACK (AETH, no payload) with PadCnt 3 has fewer than 3 bytes to strip.
        let ack = PacketRepr {
            lrh: lrh(0, 3),
            grh: None,
            bth: Some(BthRepr::new(Opcode::RC_ACKNOWLEDGE, PKey(0xffff), 5, 9)),
            ext: ExtHeaders {
                aeth: Some(AethRepr {
                    syndrome: Syndrome::Ack { credit_count: 31 },
                    msn: 1,
                }),
                ..Default::default()
            },
            payload: &[],
        };
        let mut b = vec![0u8; ack.buffer_len()];
        ack.emit(&mut b).unwrap();
        assert!(Packet::parse(&b).unwrap().crc_ok());
        b[9] |= 0x30;
        assert_eq!(Packet::parse(&b), Err(Error::Malformed));
        // PktLen too small to hold the BTH and ICRC.
        let mut tiny = [0u8; 18];
        tiny[1] = 0x02;
        tiny[5] = 4;
        assert_eq!(Packet::parse(&tiny), Err(Error::Truncated));
    }

    #[test]
    fn builder_rejects_inconsistent_parts() {
        let mut r = local_repr();
        r.ext = ExtHeaders::default();
        let mut b = [0u8; 64];
        assert_eq!(r.emit(&mut b), Err(Error::Malformed));
        let mut r = local_repr();
        r.ext.reth = Some(RethRepr {
            va: 0,
            rkey: 0,
            dma_len: 0,
        });
        assert_eq!(r.emit(&mut b), Err(Error::Malformed));
        let big = vec![0u8; 8200];
        let r = PacketRepr {
            payload: &big,
            ..local_repr()
        };
        let mut out = vec![0u8; r.buffer_len()];
        assert_eq!(r.emit(&mut out), Err(Error::Malformed));
        let raw = PacketRepr {
            lrh: LrhRepr {
                lnh: Lnh::IpNonIba,
                ..lrh(0, 3)
            },
            grh: None,
            bth: None,
            ext: ExtHeaders::default(),
            payload: &[1, 2, 3],
        };
        assert_eq!(raw.emit(&mut b), Err(Error::Malformed));
    }

    /// IBA 1 §7.7: raw packets (LNH 0/1) have no ICRC; only the VCRC.
    #[test]
    fn raw_packet() {
        let data = [0x60, 0, 0, 0, 0, 0, 0, 0];
        let r = PacketRepr {
            lrh: LrhRepr {
                lnh: Lnh::IpNonIba,
                ..lrh(0, 3)
            },
            grh: None,
            bth: None,
            ext: ExtHeaders::default(),
            payload: &data,
        };
        let mut b = [0u8; 18];
        assert_eq!(r.emit(&mut b), Ok(18));
        assert_eq!(b[5], 4); // PktLen: 16 bytes, no ICRC
        let p = Packet::parse(&b).unwrap();
        assert_eq!((p.bth, p.icrc, p.payload), (None, None, &data[..]));
        assert!(p.icrc_ok && p.vcrc_ok);
        let mut again = [0u8; 18];
        assert_eq!(p.repr().emit(&mut again), Ok(18));
        assert_eq!(again, b);
    }

    #[test]
    fn describe_groups() {
        let p = Packet::parse(&UD_GLOBAL).unwrap();
        let mut c = Collect::default();
        p.describe(&mut c);
        assert_eq!(c.get("lrh.lnh"), Some("IBA Global (0x3)"));
        assert_eq!(c.get("grh.paylen"), Some("32"));
        assert_eq!(c.get("bth.opcode"), Some("UD Send Only (0x64)"));
        assert_eq!(c.get("deth.q_key"), Some("0x00000b1b"));
        assert_eq!(c.get("payload"), Some("08000000616263"));
        assert_eq!(c.get("icrc"), Some("0x282ecb4f"));
        assert_eq!(c.get("icrc_ok"), Some("true"));
        assert_eq!(c.get("vcrc"), Some("0xdca0"));
        assert_eq!(c.get("vcrc_ok"), Some("true"));
    }

    mod proptests;
}
