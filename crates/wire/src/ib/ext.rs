//! The chain of extended transport headers after the BTH (IBA 1 §9.2-9.3). Their order on the wire
//! is fixed: RDETH, DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH; the opcode says which
//! are present.

use super::{
    AethRepr, AtomicAckEthRepr, AtomicEthRepr, DethRepr, IethRepr, ImmDtRepr, RdethRepr, RethRepr,
};
use crate::describe::{Describe, Describer};
use crate::{Error, Result};

/// A set of extended transport headers, as a small bit set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ExtHeaderSet(u8);

impl ExtHeaderSet {
    /// No extended header.
    pub const NONE: ExtHeaderSet = ExtHeaderSet(0);
    /// Reliable Datagram ETH, 4 bytes.
    pub const RDETH: ExtHeaderSet = ExtHeaderSet(1);
    /// Datagram ETH, 8 bytes.
    pub const DETH: ExtHeaderSet = ExtHeaderSet(2);
    /// RDMA ETH, 16 bytes.
    pub const RETH: ExtHeaderSet = ExtHeaderSet(4);
    /// Atomic ETH, 28 bytes.
    pub const ATOMIC_ETH: ExtHeaderSet = ExtHeaderSet(8);
    /// ACK ETH, 4 bytes.
    pub const AETH: ExtHeaderSet = ExtHeaderSet(16);
    /// Atomic ACK ETH, 8 bytes.
    pub const ATOMIC_ACK_ETH: ExtHeaderSet = ExtHeaderSet(32);
    /// Immediate data, 4 bytes.
    pub const IMMDT: ExtHeaderSet = ExtHeaderSet(64);
    /// Invalidate ETH, 4 bytes.
    pub const IETH: ExtHeaderSet = ExtHeaderSet(128);

    /// Lengths in wire order, indexed by bit (what [`ExtHeaderSet::len`] adds up, checked by
    /// its test).
    #[cfg(test)]
    const LENS: [usize; 8] = [4, 8, 16, 28, 4, 8, 4, 4];

    /// The union of two sets.
    pub const fn with(self, o: ExtHeaderSet) -> ExtHeaderSet {
        ExtHeaderSet(self.0 | o.0)
    }
    /// True when every header of `o` is in `self`.
    pub const fn contains(self, o: ExtHeaderSet) -> bool {
        self.0 & o.0 == o.0
    }
    /// True for the empty set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// Total length in bytes of the headers in the set.
    pub const fn len(self) -> usize {
        // The sum of `LENS` over the set's bits, without a loop: the 4-byte headers (bits 0, 4,
        // 6, 7), the 8-byte ones (1, 5), RETH (2, 16 bytes) and AtomicETH (3, 28 bytes).
        let b = self.0;
        4 * (b & 0b1101_0001).count_ones() as usize
            + 8 * (b & 0b0010_0010).count_ones() as usize
            + 16 * ((b >> 2) & 1) as usize
            + 28 * ((b >> 3) & 1) as usize
    }
}

/// The extended headers of one packet, each present or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExtHeaders {
    /// Reliable Datagram ETH.
    pub rdeth: Option<RdethRepr>,
    /// Datagram ETH.
    pub deth: Option<DethRepr>,
    /// RDMA ETH.
    pub reth: Option<RethRepr>,
    /// Atomic ETH.
    pub atomic_eth: Option<AtomicEthRepr>,
    /// ACK ETH.
    pub aeth: Option<AethRepr>,
    /// Atomic ACK ETH.
    pub atomic_ack_eth: Option<AtomicAckEthRepr>,
    /// Immediate data.
    pub immdt: Option<ImmDtRepr>,
    /// Invalidate ETH.
    pub ieth: Option<IethRepr>,
}

impl ExtHeaders {
    /// Only a DETH: the headers of a UD SEND Only.
    pub fn deth(d: DethRepr) -> ExtHeaders {
        ExtHeaders {
            deth: Some(d),
            ..Default::default()
        }
    }

    /// Which headers are present.
    pub fn set(&self) -> ExtHeaderSet {
        let bits = [
            self.rdeth.is_some(),
            self.deth.is_some(),
            self.reth.is_some(),
            self.atomic_eth.is_some(),
            self.aeth.is_some(),
            self.atomic_ack_eth.is_some(),
            self.immdt.is_some(),
            self.ieth.is_some(),
        ];
        ExtHeaderSet(
            bits.iter()
                .enumerate()
                .fold(0, |s, (i, &b)| s | (u8::from(b) << i)),
        )
    }

    /// Bytes the present headers take.
    pub fn buffer_len(&self) -> usize {
        self.set().len()
    }

    /// Parses the headers of `set` from the start of `data`; returns them and the bytes consumed.
    pub fn parse(set: ExtHeaderSet, data: &[u8]) -> Result<(ExtHeaders, usize)> {
        if data.len() < set.len() {
            return Err(Error::Truncated);
        }
        // The two sets nearly every packet has (UD: a DETH; RC SEND and RDMA WRITE Middle and
        // Last: none), parsed without walking the others: the same result as the walk below.
        if set == ExtHeaderSet::DETH {
            return Ok((ExtHeaders::deth(DethRepr::parse_bytes(&data[..8])?), 8));
        }
        if set.is_empty() {
            return Ok((ExtHeaders::default(), 0));
        }
        let mut h = ExtHeaders::default();
        let mut off = 0;
        let mut take = |bit: ExtHeaderSet, len: usize| -> Option<&[u8]> {
            if set.contains(bit) {
                let s = &data[off..off + len];
                off += len;
                Some(s)
            } else {
                None
            }
        };
        let rdeth = take(ExtHeaderSet::RDETH, 4).map(RdethRepr::parse_bytes);
        let deth = take(ExtHeaderSet::DETH, 8).map(DethRepr::parse_bytes);
        let reth = take(ExtHeaderSet::RETH, 16).map(RethRepr::parse_bytes);
        let atomic_eth = take(ExtHeaderSet::ATOMIC_ETH, 28).map(AtomicEthRepr::parse_bytes);
        let aeth = take(ExtHeaderSet::AETH, 4).map(AethRepr::parse_bytes);
        let atomic_ack = take(ExtHeaderSet::ATOMIC_ACK_ETH, 8).map(AtomicAckEthRepr::parse_bytes);
        let immdt = take(ExtHeaderSet::IMMDT, 4).map(ImmDtRepr::parse_bytes);
        let ieth = take(ExtHeaderSet::IETH, 4).map(IethRepr::parse_bytes);
        h.rdeth = rdeth.transpose()?;
        h.deth = deth.transpose()?;
        h.reth = reth.transpose()?;
        h.atomic_eth = atomic_eth.transpose()?;
        h.aeth = aeth.transpose()?;
        h.atomic_ack_eth = atomic_ack.transpose()?;
        h.immdt = immdt.transpose()?;
        h.ieth = ieth.transpose()?;
        Ok((h, set.len()))
    }

    /// Writes the present headers in wire order at the start of `buf`; returns the bytes written.
    /// `Truncated` when `buf` is shorter than [`ExtHeaders::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        self.emit_len(buf, self.buffer_len())
    }

    /// [`ExtHeaders::emit`] given the headers' [`ExtHeaders::buffer_len`], `len`, computed
    /// already (by `PacketRepr`'s emitters).
    pub(crate) fn emit_len(&self, buf: &mut [u8], len: usize) -> Result<usize> {
        if buf.len() < len {
            return Err(Error::Truncated);
        }
        let mut off = 0;
        if let Some(r) = &self.rdeth {
            r.emit_bytes(&mut buf[off..off + 4]);
            off += 4;
        }
        if let Some(r) = &self.deth {
            r.emit_bytes(&mut buf[off..off + 8]);
            off += 8;
        }
        if let Some(r) = &self.reth {
            r.emit_bytes(&mut buf[off..off + 16]);
            off += 16;
        }
        if let Some(r) = &self.atomic_eth {
            r.emit_bytes(&mut buf[off..off + 28]);
            off += 28;
        }
        if let Some(r) = &self.aeth {
            r.emit_bytes(&mut buf[off..off + 4]);
            off += 4;
        }
        if let Some(r) = &self.atomic_ack_eth {
            r.emit_bytes(&mut buf[off..off + 8]);
            off += 8;
        }
        if let Some(r) = &self.immdt {
            r.emit_bytes(&mut buf[off..off + 4]);
            off += 4;
        }
        if let Some(r) = &self.ieth {
            r.emit_bytes(&mut buf[off..off + 4]);
            off += 4;
        }
        Ok(off)
    }
}

impl Describe for ExtHeaders {
    /// Each present header as its own group, named as tshark names it.
    fn describe(&self, d: &mut dyn Describer) {
        if let Some(r) = &self.rdeth {
            r.describe_as("rdeth", d);
        }
        if let Some(r) = &self.deth {
            r.describe_as("deth", d);
        }
        if let Some(r) = &self.reth {
            r.describe_as("reth", d);
        }
        if let Some(r) = &self.atomic_eth {
            r.describe_as("atomiceth", d);
        }
        if let Some(r) = &self.aeth {
            r.describe_as("aeth", d);
        }
        if let Some(r) = &self.atomic_ack_eth {
            r.describe_as("atomicacketh", d);
        }
        if let Some(r) = &self.immdt {
            r.describe_as("immdt", d);
        }
        if let Some(r) = &self.ieth {
            r.describe_as("ieth", d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::Opcode;

    #[test]
    fn set_lengths() {
        assert_eq!(ExtHeaderSet::NONE.len(), 0);
        assert_eq!(ExtHeaderSet::DETH.len(), 8);
        let all = ExtHeaderSet(0xff);
        assert_eq!(all.len(), 4 + 8 + 16 + 28 + 4 + 8 + 4 + 4);
        // Every set: the sum of its headers' lengths.
        for b in 0..=255u8 {
            let sum: usize = (0..8)
                .filter(|i| b & (1 << i) != 0)
                .map(|i| ExtHeaderSet::LENS[i])
                .sum();
            assert_eq!(ExtHeaderSet(b).len(), sum, "{b:#010b}");
        }
    }

    /// The parse of a DETH alone or of no header (the common sets) gives what the walk over
    /// every header gives; [`ExtHeaders::set`] names what was parsed.
    #[test]
    fn common_sets_parse_as_the_walk() {
        let bytes = [0, 0, 0, 9, 0, 0, 0, 5, 1, 2, 3, 4];
        let (h, n) = ExtHeaders::parse(ExtHeaderSet::DETH, &bytes).unwrap();
        assert_eq!((h.set(), n), (ExtHeaderSet::DETH, 8));
        assert_eq!((h.deth.unwrap().qkey.0, h.deth.unwrap().src_qp), (9, 5));
        assert_eq!(
            ExtHeaders::parse(ExtHeaderSet::DETH, &bytes[..7]),
            Err(Error::Truncated)
        );
        let (h, n) = ExtHeaders::parse(ExtHeaderSet::NONE, &bytes).unwrap();
        assert_eq!((h, n), (ExtHeaders::default(), 0));
        // IMMDT alone takes the walk: the fast paths leave it alone.
        let (h, n) = ExtHeaders::parse(ExtHeaderSet::IMMDT, &bytes).unwrap();
        assert_eq!(
            (h.set(), n, h.immdt.unwrap().data),
            (ExtHeaderSet::IMMDT, 4, 9)
        );
    }

    /// IBA 1 §9.2: header order RDETH DETH RETH ... ImmDt (RD RDMA WRITE Only with Immediate).
    #[test]
    fn chain_round_trip_in_wire_order() {
        let set = Opcode(0x4b).ext_headers().unwrap();
        let bytes: [u8; 32] = [
            0, 0, 0, 7, // RDETH EECnxt 7
            0, 0, 0, 9, 0, 0, 0, 5, // DETH Q_Key 9, SrcQP 5
            0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0x22, 0, 0, 0, 0x40, // RETH
            0xde, 0xad, 0xbe, 0xef, // ImmDt
        ];
        let (h, n) = ExtHeaders::parse(set, &bytes).unwrap();
        assert_eq!(n, 32);
        assert_eq!(h.set(), set);
        assert_eq!(h.rdeth.unwrap().ee_context, 7);
        assert_eq!(h.deth.unwrap().src_qp, 5);
        assert_eq!(h.reth.unwrap().dma_len, 0x40);
        assert_eq!(h.immdt.unwrap().data, 0xdead_beef);
        let mut out = [0u8; 32];
        assert_eq!(h.emit(&mut out), Ok(32));
        assert_eq!(out, bytes);
        assert_eq!(ExtHeaders::parse(set, &bytes[..31]), Err(Error::Truncated));
        assert_eq!(h.emit(&mut out[..31]), Err(Error::Truncated));
    }
}
