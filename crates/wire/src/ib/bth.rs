//! Base Transport Header (IBA 1 §9.2), 12 bytes:
//! `OpCode(8) | SE(1) M(1) PadCnt(2) TVer(4) | P_Key(16) | resv8a(8) | DestQP(24) | A(1) rsv(7) |
//! PSN(24)`.

use super::Opcode;
use crate::describe::{Describe, Describer, Value};
use crate::keys::PKey;
use crate::types::{be16, be24, put16, put24};
use crate::Result;

mod field {
    pub const OPCODE: usize = 0;
    pub const FLAGS: usize = 1;
    pub const P_KEY: usize = 2;
    pub const RESV8A: usize = 4;
    pub const DEST_QP: usize = 5;
    pub const ACK: usize = 8;
    pub const PSN: usize = 9;
}

fixed_view! {
    /// A view of a Base Transport Header.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Bth;
    /// `Err(Truncated)` when the buffer is shorter than the header.
    fn check_len(min = 12);
    /// The header length in bytes.
    pub const LEN;
}

impl<T: AsRef<[u8]>> Bth<T> {
    /// OpCode.
    pub fn opcode(&self) -> Opcode {
        Opcode(self.buffer.as_ref()[field::OPCODE])
    }
    /// Solicited Event.
    pub fn se(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & 0x80 != 0
    }
    /// MigReq.
    pub fn m(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & 0x40 != 0
    }
    /// Pad Count: bytes of pad after the payload (IBA 1 §9.2).
    pub fn pad_count(&self) -> u8 {
        (self.buffer.as_ref()[field::FLAGS] >> 4) & 3
    }
    /// Transport header version (0).
    pub fn tver(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS] & 0x0f
    }
    /// Partition key.
    pub fn pkey(&self) -> u16 {
        be16(self.buffer.as_ref(), field::P_KEY)
    }
    /// Byte 4, resv8a: variant, masked out of the ICRC (IBA 1 §7.8.1). Congestion control
    /// (IBA 1 Annex A10) puts FECN in bit 7 and BECN in bit 6.
    pub fn resv8a(&self) -> u8 {
        self.buffer.as_ref()[field::RESV8A]
    }
    /// FECN: bit 7 of resv8a (IBA 1 Annex A10).
    pub fn fecn(&self) -> bool {
        self.resv8a() & 0x80 != 0
    }
    /// BECN: bit 6 of resv8a (IBA 1 Annex A10).
    pub fn becn(&self) -> bool {
        self.resv8a() & 0x40 != 0
    }
    /// Destination QP.
    pub fn dest_qp(&self) -> u32 {
        be24(self.buffer.as_ref(), field::DEST_QP)
    }
    /// AckReq.
    pub fn ack_req(&self) -> bool {
        self.buffer.as_ref()[field::ACK] & 0x80 != 0
    }
    /// The seven reserved bits after AckReq.
    pub fn reserved7(&self) -> u8 {
        self.buffer.as_ref()[field::ACK] & 0x7f
    }
    /// Packet Sequence Number.
    pub fn psn(&self) -> u32 {
        be24(self.buffer.as_ref(), field::PSN)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Bth<T> {
    fn set_flag(&mut self, off: usize, mask: u8, on: bool) {
        let b = &mut self.buffer.as_mut()[off];
        *b = if on { *b | mask } else { *b & !mask };
    }
    /// Sets the opcode.
    pub fn set_opcode(&mut self, v: Opcode) {
        self.buffer.as_mut()[field::OPCODE] = v.0;
    }
    /// Sets SE.
    pub fn set_se(&mut self, v: bool) {
        self.set_flag(field::FLAGS, 0x80, v);
    }
    /// Sets MigReq.
    pub fn set_m(&mut self, v: bool) {
        self.set_flag(field::FLAGS, 0x40, v);
    }
    /// Sets PadCnt (low 2 bits of `v`).
    pub fn set_pad_count(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::FLAGS];
        *b = (*b & !0x30) | ((v & 3) << 4);
    }
    /// Sets TVer (low 4 bits of `v`).
    pub fn set_tver(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::FLAGS];
        *b = (*b & 0xf0) | (v & 0x0f);
    }
    /// Sets the partition key.
    pub fn set_pkey(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::P_KEY, v);
    }
    /// Sets resv8a.
    pub fn set_resv8a(&mut self, v: u8) {
        self.buffer.as_mut()[field::RESV8A] = v;
    }
    /// Sets the destination QP (low 24 bits).
    pub fn set_dest_qp(&mut self, v: u32) {
        put24(self.buffer.as_mut(), field::DEST_QP, v);
    }
    /// Sets AckReq (the reserved bits beside it are cleared).
    pub fn set_ack_req(&mut self, v: bool) {
        self.buffer.as_mut()[field::ACK] = if v { 0x80 } else { 0 };
    }
    /// Sets the PSN (low 24 bits).
    pub fn set_psn(&mut self, v: u32) {
        put24(self.buffer.as_mut(), field::PSN, v);
    }
}

/// A parsed Base Transport Header. The 7 reserved bits after AckReq are dropped and sent as zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BthRepr {
    /// OpCode.
    pub opcode: Opcode,
    /// Solicited Event.
    pub se: bool,
    /// MigReq.
    pub m: bool,
    /// Pad count (0-3). The packet builder computes it from the payload length.
    pub pad_count: u8,
    /// Transport header version (0).
    pub tver: u8,
    /// Partition key.
    pub pkey: PKey,
    /// resv8a (FECN/BECN under Annex A10); variant, not covered by the ICRC.
    pub resv8a: u8,
    /// Destination QP (24 bits).
    pub dest_qp: u32,
    /// AckReq.
    pub ack_req: bool,
    /// Packet sequence number (24 bits).
    pub psn: u32,
}

impl BthRepr {
    /// The header length.
    pub const LEN: usize = 12;
    /// The destination QP of every multicast packet (IBA 1 §9.2; draft-kashyap-ipoib-ipv6-01
    /// Appendix B.3: "When multicasting the destination QP is always set to 0xFFFFFF").
    pub const MULTICAST_QPN: u32 = 0x00ff_ffff;

    /// A BTH with the given opcode, partition key, destination QP and PSN; flags, pad and resv8a
    /// zero.
    pub fn new(opcode: Opcode, pkey: PKey, dest_qp: u32, psn: u32) -> BthRepr {
        BthRepr {
            opcode,
            se: false,
            m: false,
            pad_count: 0,
            tver: 0,
            pkey,
            resv8a: 0,
            dest_qp,
            ack_req: false,
            psn,
        }
    }

    /// Reads the header from a view.
    pub fn parse<T: AsRef<[u8]>>(v: &Bth<T>) -> Result<BthRepr> {
        v.check_len()?;
        Ok(BthRepr {
            opcode: v.opcode(),
            se: v.se(),
            m: v.m(),
            pad_count: v.pad_count(),
            tver: v.tver(),
            pkey: PKey(v.pkey()),
            resv8a: v.resv8a(),
            dest_qp: v.dest_qp(),
            ack_req: v.ack_req(),
            psn: v.psn(),
        })
    }

    /// Reads the header from the start of `data`.
    pub fn parse_bytes(data: &[u8]) -> Result<BthRepr> {
        Self::parse(&Bth::new_checked(data)?)
    }

    /// The header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the header. The view must hold at least [`BthRepr::LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, v: &mut Bth<T>) {
        v.set_opcode(self.opcode);
        v.buffer.as_mut()[field::FLAGS] = 0;
        v.set_se(self.se);
        v.set_m(self.m);
        v.set_pad_count(self.pad_count);
        v.set_tver(self.tver);
        v.set_pkey(self.pkey.0);
        v.set_resv8a(self.resv8a);
        v.set_dest_qp(self.dest_qp);
        v.set_ack_req(self.ack_req);
        v.set_psn(self.psn);
    }

    /// Writes the header at the start of `buf` (at least [`BthRepr::LEN`] bytes).
    pub fn emit_bytes(&self, buf: &mut [u8]) {
        self.emit(&mut Bth::new_unchecked(buf));
    }
}

impl Describe for BthRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field(
            "opcode",
            Value::Named(self.opcode.0 as u64, self.opcode.name()),
        );
        d.field("se", Value::Bool(self.se));
        d.field("m", Value::Bool(self.m));
        d.field("padcnt", Value::Uint(self.pad_count as u64));
        d.field("tver", Value::Uint(self.tver as u64));
        d.field("p_key", self.pkey.into());
        if self.resv8a != 0 {
            d.field("resv8a", Value::Hex(self.resv8a as u64, 2));
        }
        d.field("destqp", Value::Hex(self.dest_qp as u64, 6));
        d.field("a", Value::Bool(self.ack_req));
        d.field("psn", Value::Uint(self.psn as u64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::Error;
    use proptest::prelude::*;

    // UD SEND Only, SE 0, M 0, PadCnt 2, TVer 0, P_Key 0xffff, DestQP 0x000048, A 0, PSN 0x000123.
    static BYTES: [u8; 12] = [
        0x64, 0x20, 0xff, 0xff, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0x01, 0x23,
    ];
    // RC SEND Only, SE 1, M 1, PadCnt 3, TVer 0, P_Key 0x8001, resv8a 0x80 (FECN), DestQP 0xabcdef,
    // A 1, PSN 0xffffff.
    static BYTES2: [u8; 12] = [
        0x04, 0xf0, 0x80, 0x01, 0x80, 0xab, 0xcd, 0xef, 0x80, 0xff, 0xff, 0xff,
    ];

    fn repr() -> BthRepr {
        BthRepr {
            pad_count: 2,
            ..BthRepr::new(Opcode::UD_SEND_ONLY, PKey(0xffff), 0x48, 0x123)
        }
    }

    /// IBA 1 §9.2: field layout.
    #[test]
    fn deconstruct() {
        let v = Bth::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.opcode(), Opcode::UD_SEND_ONLY);
        assert_eq!(
            (v.se(), v.m(), v.pad_count(), v.tver()),
            (false, false, 2, 0)
        );
        assert_eq!(
            (v.pkey(), v.dest_qp(), v.ack_req(), v.psn()),
            (0xffff, 0x48, false, 0x123)
        );
        let v = Bth::new_checked(&BYTES2[..]).unwrap();
        assert_eq!((v.se(), v.m(), v.pad_count()), (true, true, 3));
        assert_eq!((v.resv8a(), v.fecn(), v.becn()), (0x80, true, false));
        assert_eq!(
            (v.dest_qp(), v.ack_req(), v.reserved7(), v.psn()),
            (0xabcdef, true, 0, 0xffffff)
        );
    }

    #[test]
    fn construct() {
        let mut b = [0u8; 12];
        let mut v = Bth::new_unchecked(&mut b[..]);
        v.set_opcode(Opcode::RC_SEND_ONLY);
        v.set_se(true);
        v.set_m(true);
        v.set_pad_count(3);
        v.set_tver(0);
        v.set_pkey(0x8001);
        v.set_resv8a(0x80);
        v.set_dest_qp(0xabcdef);
        v.set_ack_req(true);
        v.set_psn(0xffffff);
        assert_eq!(b, BYTES2);
    }

    #[test]
    fn parse_and_emit() {
        assert_eq!(BthRepr::parse_bytes(&BYTES).unwrap(), repr());
        let mut b = [0x77u8; 12];
        repr().emit_bytes(&mut b);
        assert_eq!(b, BYTES);
        assert_eq!(BthRepr::parse_bytes(&BYTES[..11]), Err(Error::Truncated));
    }

    #[test]
    fn describe_lists_fields() {
        let mut c = Collect::default();
        repr().describe_as("bth", &mut c);
        assert_eq!(c.get("bth.opcode"), Some("UD Send Only (0x64)"));
        assert_eq!(c.get("bth.destqp"), Some("0x000048"));
        assert_eq!(c.get("bth.resv8a"), None);
    }

    proptest! {
        #[test]
        fn round_trip(op: u8, se: bool, m: bool, pad in 0..4u8, tver in 0..16u8, pkey: u16,
                      resv8a: u8, qp in 0..0x100_0000u32, a: bool, psn in 0..0x100_0000u32) {
            let r = BthRepr { opcode: Opcode(op), se, m, pad_count: pad, tver, pkey: PKey(pkey), resv8a,
                              dest_qp: qp, ack_req: a, psn };
            let mut b = [0u8; 12];
            r.emit_bytes(&mut b);
            prop_assert_eq!(BthRepr::parse_bytes(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = BthRepr::parse_bytes(&data);
        }
    }
}
