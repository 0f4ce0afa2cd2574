//! The builder's common case, written straight: a UD SEND Only packet without GRH (LRH, BTH,
//! DETH, payload; IBA 1 §9.2, §9.8), which every MAD and every local UD datagram of the
//! emulation is. Same bytes and same errors as the general path (`emit_any_without_crcs`, a
//! proptest below compares them); only the work differs: no walk over the eight extended
//! headers to find the DETH alone, the lengths computed once.

use super::{PacketRepr, BTH_LEN, LRH_LEN};
use crate::ib::lid::{pkt_len_for, MAX_PKT_LEN_WORDS};
use crate::ib::{BthRepr, DethRepr, ExtHeaders, Lnh, LrhRepr, Opcode, ICRC_LEN, VCRC_LEN};
use crate::{Error, Result};

const DETH_LEN: usize = 8;

/// Where the payload of a UD SEND Only packet without GRH starts: after LRH, BTH and DETH.
pub const UD_LOCAL_PAYLOAD_OFFSET: usize = LRH_LEN + BTH_LEN + DETH_LEN;

impl PacketRepr<'_> {
    /// [`PacketRepr::emit`] without computing the ICRC and VCRC (their fields are zero), for a
    /// caller that writes them with [`super::fill_crcs`] before the bytes are used (an emulated
    /// link whose receivers know them good, `ipoib_fabric`'s `Frame`).
    pub fn emit_without_crcs(&self, buf: &mut [u8]) -> Result<usize> {
        match self.ud_local_deth() {
            Some(deth) => self.emit_ud_local(buf, deth),
            None => self.emit_any_without_crcs(buf),
        }
    }

    /// The DETH of a UD SEND Only packet without GRH whose only extended header it is.
    fn ud_local_deth(&self) -> Option<DethRepr> {
        let bth = self.bth.as_ref()?;
        if self.grh.is_some() || bth.opcode != Opcode::UD_SEND_ONLY {
            return None;
        }
        // `self.ext == ExtHeaders::deth(deth)`, field by field (a new header fails to compile
        // here rather than slip through).
        let ExtHeaders {
            rdeth,
            deth,
            reth,
            atomic_eth,
            aeth,
            atomic_ack_eth,
            immdt,
            ieth,
        } = &self.ext;
        let only = rdeth.is_none()
            && reth.is_none()
            && atomic_eth.is_none()
            && aeth.is_none()
            && atomic_ack_eth.is_none()
            && immdt.is_none()
            && ieth.is_none();
        deth.filter(|_| only)
    }

    /// [`PacketRepr::emit_without_crcs`] of a UD SEND Only packet without GRH whose `n` bytes
    /// of payload are in `buf` already, at [`UD_LOCAL_PAYLOAD_OFFSET`] (an answer written over
    /// its request, whose headers had the same length): writes every other byte, as that
    /// emitter would with those bytes as payload (`self.payload` is not read). `Err(Unsupported)`
    /// for any other packet; the emitter's errors otherwise.
    pub fn emit_around_payload_without_crcs(&self, buf: &mut [u8], n: usize) -> Result<usize> {
        let deth = self.ud_local_deth().ok_or(Error::Unsupported)?;
        self.write_ud_local(buf, deth, n, None)
    }

    /// Writes the packet `ud_local_deth` accepted: LRH (LNH IBA local, PktLen), BTH (PadCnt),
    /// DETH, payload, then zeroed pad and CRC fields.
    fn emit_ud_local(&self, buf: &mut [u8], deth: DethRepr) -> Result<usize> {
        self.write_ud_local(buf, deth, self.payload.len(), Some(self.payload))
    }

    /// [`PacketRepr::emit_ud_local`] of an `n`-byte payload, copied from `payload` when given,
    /// else left as `buf` holds it.
    fn write_ud_local(
        &self,
        buf: &mut [u8],
        deth: DethRepr,
        n: usize,
        payload: Option<&[u8]>,
    ) -> Result<usize> {
        let Some(bth) = self.bth else {
            return Err(Error::Malformed);
        };
        let pad = (4 - n % 4) % 4;
        let payload_at = LRH_LEN + BTH_LEN + DETH_LEN;
        let body_end = payload_at + n + pad + ICRC_LEN;
        let pkt_len = pkt_len_for(body_end)?;
        let total = body_end + VCRC_LEN;
        if buf.len() < total {
            return Err(Error::Truncated);
        }
        buf[..payload_at].copy_from_slice(&ud_local_headers(&self.lrh, &bth, &deth, pad, pkt_len));
        if let Some(p) = payload {
            buf[payload_at..payload_at + n].copy_from_slice(p);
        }
        buf[payload_at + n..total].fill(0);
        Ok(total)
    }
}

/// The LRH (LNH IBA local, PktLen `pkt_len` in words), BTH (PadCnt `pad`) and DETH of a UD SEND
/// Only packet without GRH (`PacketRepr::write_ud_local`'s, and the SMAs' answers'), written from
/// their values: the bytes `LrhRepr::emit`, `BthRepr::emit_bytes` and `DethRepr::emit_bytes`
/// write (IBA 1 §7.7, §9.2, §9.3.3), each field as its setter puts it (the same shifts and
/// masks), without the views; the proptest below holds the packets to the general emitter's.
#[inline]
pub fn ud_local_headers(
    lrh: &LrhRepr,
    bth: &BthRepr,
    deth: &DethRepr,
    pad: usize,
    pkt_len: u16,
) -> [u8; UD_LOCAL_PAYLOAD_OFFSET] {
    let [d0, d1] = lrh.dlid.to_be_bytes();
    let [l0, l1] = (pkt_len & MAX_PKT_LEN_WORDS).to_be_bytes();
    let [s0, s1] = lrh.slid.to_be_bytes();
    let [k0, k1] = bth.pkey.0.to_be_bytes();
    let [_, q0, q1, q2] = bth.dest_qp.to_be_bytes();
    let [_, n0, n1, n2] = bth.psn.to_be_bytes();
    let [x0, x1, x2, x3] = deth.qkey.0.to_be_bytes();
    let [_, r0, r1, r2] = deth.src_qp.to_be_bytes();
    // SE, M, PadCnt, TVer (`Bth::set_se` .. `set_tver` on a cleared byte).
    let flags =
        u8::from(bth.se) << 7 | u8::from(bth.m) << 6 | (pad as u8 & 3) << 4 | (bth.tver & 0x0f);
    [
        lrh.vl << 4 | (lrh.lver & 0x0f),
        lrh.sl << 4 | u8::from(Lnh::IbaLocal),
        d0,
        d1,
        l0,
        l1,
        s0,
        s1,
        bth.opcode.0,
        flags,
        k0,
        k1,
        bth.resv8a,
        q0,
        q1,
        q2,
        if bth.ack_req { 0x80 } else { 0 },
        n0,
        n1,
        n2,
        x0,
        x1,
        x2,
        x3,
        0,
        r0,
        r1,
        r2,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::{BthRepr, GrhRepr, ImmDtRepr};
    use crate::keys::{PKey, QKey};
    use crate::types::Gid;
    use proptest::prelude::*;

    /// A UD packet from arbitrary field values; `variant` makes some of them leave the fast
    /// path's case (a GRH, another opcode, ImmDt beside the DETH, no DETH).
    fn repr<'a>(f: &[u8; 24], payload: &'a [u8], variant: u8) -> PacketRepr<'a> {
        let w = |i: usize| u32::from_be_bytes([f[i], f[i + 1], f[i + 2], f[i + 3]]);
        let mut bth = BthRepr::new(Opcode::UD_SEND_ONLY, PKey(w(0) as u16), w(4), w(8));
        bth.se = f[12] & 1 != 0;
        bth.m = f[12] & 2 != 0;
        bth.tver = f[13] & 15;
        bth.resv8a = f[14];
        bth.ack_req = f[15] & 1 != 0;
        bth.pad_count = f[15] >> 6;
        let mut ext = ExtHeaders {
            deth: Some(DethRepr {
                qkey: QKey(w(16)),
                src_qp: w(20),
            }),
            ..ExtHeaders::default()
        };
        let mut grh = None;
        match variant % 8 {
            1 => grh = Some(GrhRepr::new(Gid([f[0]; 16]), Gid([f[1]; 16]), f[2])),
            2 => bth.opcode = Opcode(f[3]),
            3 => ext.immdt = Some(ImmDtRepr { data: w(8) }),
            4 => ext.deth = None,
            _ => {}
        }
        PacketRepr {
            lrh: LrhRepr {
                vl: f[0] & 15,
                lver: f[1] & 15,
                sl: f[2] & 15,
                lnh: Lnh::from(f[3] & 3),
                dlid: w(4) as u16,
                pkt_len: w(8) as u16,
                slid: w(12) as u16,
            },
            grh,
            bth: Some(bth),
            ext,
            payload,
        }
    }

    proptest! {
        // The fast path writes what the general path writes, over the same stale bytes, and
        // fails as it does (a payload too long for PktLen, a buffer too short).
        #[test]
        fn ud_local_is_the_general_emitter(
            f in any::<[u8; 24]>(),
            payload in proptest::collection::vec(any::<u8>(), 0..300),
            long in 0..8u8,
            variant in any::<u8>(),
            fill in any::<u8>(),
            short in 0..40usize,
        ) {
            // Now and then a payload past PktLen's 11 bits of words (IBA 1 §7.7), or one on
            // either side of the longest that fits (8,156 bytes: with 28 of headers and 4 of ICRC,
            // PktLen 2,047 words).
            let payload = match long {
                0 => vec![f[5]; 8200 + usize::from(f[6])],
                1 => vec![f[5]; 8148 + usize::from(f[6] % 12)],
                _ => payload,
            };
            let r = repr(&f, &payload, variant);
            let len = (LRH_LEN + BTH_LEN + DETH_LEN + payload.len() + 12).saturating_sub(short);
            let mut fast = vec![fill; len];
            let mut general = vec![fill; len];
            let written = r.emit_without_crcs(&mut fast);
            prop_assert_eq!(written, r.emit_any_without_crcs(&mut general));
            prop_assert_eq!(&fast, &general);
            // Every byte of the packet is written, none past it: the stale bytes show nowhere
            // (smp_frame_in and the HCA's UD sends write over a spent buffer unzeroed).
            if let Ok(n) = written {
                let mut zeroed = vec![0; n];
                prop_assert_eq!(r.emit_any_without_crcs(&mut zeroed), Ok(n));
                prop_assert_eq!(&fast[..n], &zeroed[..]);
                prop_assert!(fast[n..].iter().all(|&b| b == fill));
            }
            // The payload already in place, the rest written around it: the same bytes, or
            // the same error, for the fast path's packets; any other packet refused.
            let mut around = vec![fill; len];
            let at = UD_LOCAL_PAYLOAD_OFFSET;
            if let Some(dst) = around.get_mut(at..at + payload.len()) {
                dst.copy_from_slice(&payload);
                let done = r.emit_around_payload_without_crcs(&mut around, payload.len());
                if r.ud_local_deth().is_some() {
                    prop_assert_eq!(done, written);
                    if written.is_ok() {
                        prop_assert_eq!(&around, &fast);
                    }
                } else {
                    prop_assert_eq!(done, Err(Error::Unsupported));
                }
            }
        }
    }
}
