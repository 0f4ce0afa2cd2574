//! Local Route Header (IBA 1 §7.7), 8 bytes:
//! `VL(4) LVer(4) | SL(4) rsv(2) LNH(2) | DLID(16) | rsv(5) PktLen(11) | SLID(16)`.

use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, put16};
use crate::{Error, Result};

mod field {
    pub const VL_LVER: usize = 0;
    pub const SL_LNH: usize = 1;
    pub const DLID: usize = 2;
    pub const PKT_LEN: usize = 4;
    pub const SLID: usize = 6;
}

/// Largest PktLen: the field is 11 bits wide (IBA 1 §7.7).
pub const MAX_PKT_LEN_WORDS: u16 = 0x7ff;

/// The PktLen for a packet of `len_without_vcrc` bytes (LRH first byte through the ICRC, or through
/// the last payload byte of a raw packet). IBA 1 §7.7: PktLen counts 4-byte words from the first
/// byte of the LRH to the last byte before the VCRC. `Malformed` when the length is not a whole
/// number of words or does not fit in 11 bits.
pub fn pkt_len_for(len_without_vcrc: usize) -> Result<u16> {
    if len_without_vcrc & 3 != 0 || len_without_vcrc / 4 > MAX_PKT_LEN_WORDS as usize {
        return Err(Error::Malformed);
    }
    Ok((len_without_vcrc / 4) as u16)
}

/// Checks a PktLen against the bytes of a whole packet (LRH through VCRC). IBA 1 §7.7: the packet
/// is `4 * PktLen` bytes plus the 2-byte VCRC. `Truncated` when the buffer is short, `Malformed`
/// when it is longer than the header says.
pub fn check_pkt_len(pkt_len: u16, packet_len: usize) -> Result<()> {
    let want = pkt_len as usize * 4 + super::VCRC_LEN;
    match packet_len.cmp(&want) {
        core::cmp::Ordering::Less => Err(Error::Truncated),
        core::cmp::Ordering::Greater => Err(Error::Malformed),
        core::cmp::Ordering::Equal => Ok(()),
    }
}

/// Link Next Header (IBA 1 §7.7): what follows the LRH. Two bits, so every value is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lnh {
    /// 0: raw packet, a raw header follows and there is no ICRC.
    Raw,
    /// 1: raw packet carrying an IPv6 header (IP, non-IBA transport), no ICRC.
    IpNonIba,
    /// 2: IBA local, a BTH follows.
    IbaLocal,
    /// 3: IBA global, a GRH follows.
    IbaGlobal,
}

impl From<u8> for Lnh {
    fn from(v: u8) -> Lnh {
        match v & 3 {
            0 => Lnh::Raw,
            1 => Lnh::IpNonIba,
            2 => Lnh::IbaLocal,
            _ => Lnh::IbaGlobal,
        }
    }
}

impl From<Lnh> for u8 {
    fn from(v: Lnh) -> u8 {
        match v {
            Lnh::Raw => 0,
            Lnh::IpNonIba => 1,
            Lnh::IbaLocal => 2,
            Lnh::IbaGlobal => 3,
        }
    }
}

impl Lnh {
    /// The name wireshark shows.
    pub fn name(self) -> &'static str {
        match self {
            Lnh::Raw => "Raw",
            Lnh::IpNonIba => "IP Non-IBA",
            Lnh::IbaLocal => "IBA Local",
            Lnh::IbaGlobal => "IBA Global",
        }
    }
    /// True for LNH 2 and 3, which carry a BTH and an ICRC.
    pub fn is_iba(self) -> bool {
        matches!(self, Lnh::IbaLocal | Lnh::IbaGlobal)
    }
}

fixed_view! {
    /// A view of a Local Route Header.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Lrh;
    /// `Err(Truncated)` when the buffer is shorter than the header.
    fn check_len(min = 8);
    /// The header length in bytes.
    pub const LEN;
}

impl<T: AsRef<[u8]>> Lrh<T> {
    /// Virtual Lane (IBA 1 §7.7).
    pub fn vl(&self) -> u8 {
        self.buffer.as_ref()[field::VL_LVER] >> 4
    }
    /// Link Version (IBA 1 §7.7), 0 for this version of the spec.
    pub fn lver(&self) -> u8 {
        self.buffer.as_ref()[field::VL_LVER] & 0x0f
    }
    /// Service Level (IBA 1 §7.7).
    pub fn sl(&self) -> u8 {
        self.buffer.as_ref()[field::SL_LNH] >> 4
    }
    /// The two reserved bits between SL and LNH.
    pub fn reserved2(&self) -> u8 {
        (self.buffer.as_ref()[field::SL_LNH] >> 2) & 3
    }
    /// Link Next Header (IBA 1 §7.7).
    pub fn lnh(&self) -> Lnh {
        Lnh::from(self.buffer.as_ref()[field::SL_LNH])
    }
    /// Destination LID (IBA 1 §7.7).
    pub fn dlid(&self) -> u16 {
        be16(self.buffer.as_ref(), field::DLID)
    }
    /// The five reserved bits before PktLen.
    pub fn reserved5(&self) -> u8 {
        (self.buffer.as_ref()[field::PKT_LEN] >> 3) & 0x1f
    }
    /// Packet length in 4-byte words, LRH through ICRC (IBA 1 §7.7).
    pub fn pkt_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::PKT_LEN) & MAX_PKT_LEN_WORDS
    }
    /// Source LID (IBA 1 §7.7).
    pub fn slid(&self) -> u16 {
        be16(self.buffer.as_ref(), field::SLID)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Lrh<T> {
    /// Sets VL.
    pub fn set_vl(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::VL_LVER];
        *b = (*b & 0x0f) | (v << 4);
    }
    /// Sets LVer.
    pub fn set_lver(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::VL_LVER];
        *b = (*b & 0xf0) | (v & 0x0f);
    }
    /// Sets SL.
    pub fn set_sl(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::SL_LNH];
        *b = (*b & 0x0f) | (v << 4);
    }
    /// Sets LNH (the reserved bits beside it are cleared).
    pub fn set_lnh(&mut self, v: Lnh) {
        let b = &mut self.buffer.as_mut()[field::SL_LNH];
        *b = (*b & 0xf0) | u8::from(v);
    }
    /// Sets DLID.
    pub fn set_dlid(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::DLID, v);
    }
    /// Sets PktLen (low 11 bits of `v`; the reserved bits are cleared).
    pub fn set_pkt_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::PKT_LEN, v & MAX_PKT_LEN_WORDS);
    }
    /// Sets SLID.
    pub fn set_slid(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::SLID, v);
    }
}

/// A parsed Local Route Header. Reserved bits are dropped on parse and sent as zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LrhRepr {
    /// Virtual Lane, 4 bits.
    pub vl: u8,
    /// Link Version, 4 bits (0).
    pub lver: u8,
    /// Service Level, 4 bits.
    pub sl: u8,
    /// Link Next Header.
    pub lnh: Lnh,
    /// Destination LID.
    pub dlid: u16,
    /// Packet length in words, LRH through ICRC (11 bits).
    pub pkt_len: u16,
    /// Source LID.
    pub slid: u16,
}

impl LrhRepr {
    /// The header length.
    pub const LEN: usize = 8;

    /// The LRH of a packet without a GRH (LNH "IBA local", LVer 0) on virtual lane `vl` at
    /// service level `sl`, from `slid` to `dlid`; PktLen 0, which the packet's emitter fills.
    pub fn local(vl: u8, sl: u8, dlid: u16, slid: u16) -> LrhRepr {
        LrhRepr {
            vl,
            lver: 0,
            sl,
            lnh: Lnh::IbaLocal,
            dlid,
            pkt_len: 0,
            slid,
        }
    }

    /// Reads the header from a view.
    pub fn parse<T: AsRef<[u8]>>(v: &Lrh<T>) -> Result<LrhRepr> {
        v.check_len()?;
        Ok(LrhRepr {
            vl: v.vl(),
            lver: v.lver(),
            sl: v.sl(),
            lnh: v.lnh(),
            dlid: v.dlid(),
            pkt_len: v.pkt_len(),
            slid: v.slid(),
        })
    }

    /// Reads the header from the start of `data`.
    pub fn parse_bytes(data: &[u8]) -> Result<LrhRepr> {
        Self::parse(&Lrh::new_checked(data)?)
    }

    /// The header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the header. The view must hold at least [`LrhRepr::LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, v: &mut Lrh<T>) {
        v.buffer.as_mut()[..Self::LEN].fill(0);
        v.set_vl(self.vl);
        v.set_lver(self.lver);
        v.set_sl(self.sl);
        v.set_lnh(self.lnh);
        v.set_dlid(self.dlid);
        v.set_pkt_len(self.pkt_len);
        v.set_slid(self.slid);
    }

    /// The number of bytes the whole packet occupies on the wire, VCRC included (IBA 1 §7.7).
    pub fn wire_len(&self) -> usize {
        self.pkt_len as usize * 4 + super::VCRC_LEN
    }
}

impl Describe for LrhRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("vl", Value::Uint(self.vl as u64));
        d.field("lver", Value::Uint(self.lver as u64));
        d.field("sl", Value::Uint(self.sl as u64));
        d.field(
            "lnh",
            Value::Named(u8::from(self.lnh) as u64, self.lnh.name()),
        );
        d.field("dlid", Value::Hex(self.dlid as u64, 4));
        d.field("pktlen", Value::Uint(self.pkt_len as u64));
        d.field("slid", Value::Hex(self.slid as u64, 4));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // VL 0, LVer 0, SL 0, LNH 2 (BTH), DLID 0x0001, PktLen 0x0013 (19 words), SLID 0x0002.
    static BYTES: [u8; 8] = [0x00, 0x02, 0x00, 0x01, 0x00, 0x13, 0x00, 0x02];
    // VL 15, SL 3, LNH 3, DLID 0xc001, PktLen 0x7ff, SLID 0xffff.
    static BYTES2: [u8; 8] = [0xf0, 0x33, 0xc0, 0x01, 0x07, 0xff, 0xff, 0xff];

    fn repr() -> LrhRepr {
        LrhRepr {
            vl: 0,
            lver: 0,
            sl: 0,
            lnh: Lnh::IbaLocal,
            dlid: 1,
            pkt_len: 19,
            slid: 2,
        }
    }

    /// IBA 1 §7.7: field layout.
    #[test]
    fn deconstruct() {
        let v = Lrh::new_checked(&BYTES[..]).unwrap();
        assert_eq!((v.vl(), v.lver(), v.sl(), v.reserved2()), (0, 0, 0, 0));
        assert_eq!(v.lnh(), Lnh::IbaLocal);
        assert_eq!((v.dlid(), v.pkt_len(), v.slid()), (1, 19, 2));
        let v = Lrh::new_checked(&BYTES2[..]).unwrap();
        assert_eq!((v.vl(), v.sl(), v.lnh()), (15, 3, Lnh::IbaGlobal));
        assert_eq!((v.dlid(), v.pkt_len(), v.slid()), (0xc001, 0x7ff, 0xffff));
        assert_eq!(v.reserved5(), 0);
    }

    #[test]
    fn construct() {
        let mut b = [0u8; 8];
        let mut v = Lrh::new_unchecked(&mut b[..]);
        v.set_vl(15);
        v.set_sl(3);
        v.set_lnh(Lnh::IbaGlobal);
        v.set_dlid(0xc001);
        v.set_pkt_len(0x7ff);
        v.set_slid(0xffff);
        assert_eq!(b, BYTES2);
    }

    #[test]
    fn parse_and_emit() {
        assert_eq!(LrhRepr::parse_bytes(&BYTES).unwrap(), repr());
        let mut b = [0xaau8; 8];
        repr().emit(&mut Lrh::new_unchecked(&mut b[..]));
        assert_eq!(b, BYTES);
        assert_eq!(LrhRepr::parse_bytes(&BYTES[..7]), Err(Error::Truncated));
    }

    /// IBA 1 §7.7: PktLen counts words LRH..ICRC; the wire adds the 2-byte VCRC.
    #[test]
    fn pkt_len_rule() {
        assert_eq!(pkt_len_for(8 + 12 + 8 + 4), Ok(8));
        assert_eq!(pkt_len_for(30), Err(Error::Malformed));
        assert_eq!(pkt_len_for(2048 * 4), Err(Error::Malformed));
        assert_eq!(pkt_len_for(2047 * 4), Ok(2047));
        assert_eq!(check_pkt_len(8, 34), Ok(()));
        assert_eq!(check_pkt_len(8, 33), Err(Error::Truncated));
        assert_eq!(check_pkt_len(8, 35), Err(Error::Malformed));
        assert_eq!(repr().wire_len(), 19 * 4 + 2);
    }

    #[test]
    fn lnh_codes() {
        for v in 0..4u8 {
            assert_eq!(u8::from(Lnh::from(v)), v);
        }
        assert!(Lnh::IbaLocal.is_iba() && !Lnh::IpNonIba.is_iba());
    }

    #[test]
    fn describe_lists_fields() {
        let mut c = Collect::default();
        repr().describe_as("lrh", &mut c);
        assert_eq!(c.get("lrh.lnh"), Some("IBA Local (0x2)"));
        assert_eq!(c.get("lrh.dlid"), Some("0x0001"));
        assert_eq!(c.get("lrh.pktlen"), Some("19"));
        assert_eq!(c.fields.len(), 7);
    }

    fn arb_repr() -> impl Strategy<Value = LrhRepr> {
        (
            0..16u8,
            0..16u8,
            0..16u8,
            0..4u8,
            any::<u16>(),
            0..2048u16,
            any::<u16>(),
        )
            .prop_map(|(vl, lver, sl, lnh, dlid, pkt_len, slid)| LrhRepr {
                vl,
                lver,
                sl,
                lnh: Lnh::from(lnh),
                dlid,
                pkt_len,
                slid,
            })
    }

    proptest! {
        #[test]
        fn round_trip(r in arb_repr()) {
            let mut b = [0u8; 8];
            r.emit(&mut Lrh::new_unchecked(&mut b[..]));
            prop_assert_eq!(LrhRepr::parse_bytes(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = LrhRepr::parse_bytes(&data);
        }
    }
}
