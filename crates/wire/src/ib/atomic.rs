//! Atomic Extended Transport Header (IBA 1 §9.3), 28 bytes: `VA(64) | R_Key(32) | SwapDt(64) |
//! CmpDt(64)`; and Atomic Acknowledge ETH, 8 bytes: `OrigRemDt(64)`.

use crate::describe::{Describe, Describer, Value};
use crate::types::{be32, be64, put32, put64};
use crate::Result;

mod field {
    pub const VA: usize = 0;
    pub const R_KEY: usize = 8;
    pub const SWAP: usize = 12;
    pub const CMP: usize = 20;
}

fixed_view! {
    /// A view of an AtomicETH.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AtomicEth;
    /// `Err(Truncated)` when the buffer is shorter than the header.
    fn check_len(min = 28);
    /// The header length in bytes.
    pub const LEN;
}

impl<T: AsRef<[u8]>> AtomicEth<T> {
    /// Virtual address of the 64-bit target.
    pub fn va(&self) -> u64 {
        be64(self.buffer.as_ref(), field::VA)
    }
    /// Remote key.
    pub fn rkey(&self) -> u32 {
        be32(self.buffer.as_ref(), field::R_KEY)
    }
    /// Swap data (COMPARE SWAP) or add data (FETCH ADD).
    pub fn swap_add(&self) -> u64 {
        be64(self.buffer.as_ref(), field::SWAP)
    }
    /// Compare data (COMPARE SWAP only).
    pub fn compare(&self) -> u64 {
        be64(self.buffer.as_ref(), field::CMP)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AtomicEth<T> {
    /// Sets the virtual address.
    pub fn set_va(&mut self, v: u64) {
        put64(self.buffer.as_mut(), field::VA, v);
    }
    /// Sets the remote key.
    pub fn set_rkey(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::R_KEY, v);
    }
    /// Sets the swap/add data.
    pub fn set_swap_add(&mut self, v: u64) {
        put64(self.buffer.as_mut(), field::SWAP, v);
    }
    /// Sets the compare data.
    pub fn set_compare(&mut self, v: u64) {
        put64(self.buffer.as_mut(), field::CMP, v);
    }
}

/// A parsed AtomicETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AtomicEthRepr {
    /// Virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Swap or add data.
    pub swap_add: u64,
    /// Compare data.
    pub compare: u64,
}

impl AtomicEthRepr {
    /// The header length.
    pub const LEN: usize = 28;

    /// Reads the header from a view.
    pub fn parse<T: AsRef<[u8]>>(v: &AtomicEth<T>) -> Result<AtomicEthRepr> {
        v.check_len()?;
        Ok(AtomicEthRepr {
            va: v.va(),
            rkey: v.rkey(),
            swap_add: v.swap_add(),
            compare: v.compare(),
        })
    }
    /// Reads the header from the start of `data`.
    pub fn parse_bytes(data: &[u8]) -> Result<AtomicEthRepr> {
        Self::parse(&AtomicEth::new_checked(data)?)
    }
    /// The header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }
    /// Writes the header into a view of at least [`AtomicEthRepr::LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, v: &mut AtomicEth<T>) {
        v.set_va(self.va);
        v.set_rkey(self.rkey);
        v.set_swap_add(self.swap_add);
        v.set_compare(self.compare);
    }
    /// Writes the header at the start of `buf`.
    pub fn emit_bytes(&self, buf: &mut [u8]) {
        self.emit(&mut AtomicEth::new_unchecked(buf));
    }
}

impl Describe for AtomicEthRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("va", Value::Hex(self.va, 16));
        d.field("r_key", Value::Hex(self.rkey as u64, 8));
        d.field("swapdt", Value::Hex(self.swap_add, 16));
        d.field("cmpdt", Value::Hex(self.compare, 16));
    }
}

fixed_view! {
    /// A view of an AtomicAckETH.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct AtomicAckEth;
    /// `Err(Truncated)` when the buffer is shorter than the header.
    fn check_len(min = 8);
    /// The header length in bytes.
    pub const LEN;
}

impl<T: AsRef<[u8]>> AtomicAckEth<T> {
    /// The original remote data (value before the atomic operation).
    pub fn orig_rem_dt(&self) -> u64 {
        be64(self.buffer.as_ref(), 0)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AtomicAckEth<T> {
    /// Sets the original remote data.
    pub fn set_orig_rem_dt(&mut self, v: u64) {
        put64(self.buffer.as_mut(), 0, v);
    }
}

/// A parsed AtomicAckETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AtomicAckEthRepr {
    /// The original remote data.
    pub orig_rem_dt: u64,
}

impl AtomicAckEthRepr {
    /// The header length.
    pub const LEN: usize = 8;

    /// Reads the header from a view.
    pub fn parse<T: AsRef<[u8]>>(v: &AtomicAckEth<T>) -> Result<AtomicAckEthRepr> {
        v.check_len()?;
        Ok(AtomicAckEthRepr {
            orig_rem_dt: v.orig_rem_dt(),
        })
    }
    /// Reads the header from the start of `data`.
    pub fn parse_bytes(data: &[u8]) -> Result<AtomicAckEthRepr> {
        Self::parse(&AtomicAckEth::new_checked(data)?)
    }
    /// The header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }
    /// Writes the header into a view of at least [`AtomicAckEthRepr::LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, v: &mut AtomicAckEth<T>) {
        v.set_orig_rem_dt(self.orig_rem_dt);
    }
    /// Writes the header at the start of `buf`.
    pub fn emit_bytes(&self, buf: &mut [u8]) {
        self.emit(&mut AtomicAckEth::new_unchecked(buf));
    }
}

impl Describe for AtomicAckEthRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("origremdt", Value::Hex(self.orig_rem_dt, 16));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::Error;
    use proptest::prelude::*;

    static ATOMIC: [u8; 28] = [
        0, 0, 0, 0, 0x10, 0x00, 0x00, 0x08, // VA
        0xaa, 0xbb, 0xcc, 0xdd, // R_Key
        0, 0, 0, 0, 0, 0, 0, 1, // swap/add
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, // compare
    ];
    static ACK: [u8; 8] = [0, 0, 0, 0, 0, 0, 0x01, 0x00];

    fn atomic() -> AtomicEthRepr {
        AtomicEthRepr {
            va: 0x1000_0008,
            rkey: 0xaabb_ccdd,
            swap_add: 1,
            compare: u64::MAX - 1,
        }
    }

    /// IBA 1 §9.3: AtomicETH and AtomicAckETH layouts.
    #[test]
    fn fixed_bytes() {
        let v = AtomicEth::new_checked(&ATOMIC[..]).unwrap();
        assert_eq!(
            (v.va(), v.rkey(), v.swap_add(), v.compare()),
            (0x1000_0008, 0xaabb_ccdd, 1, u64::MAX - 1)
        );
        assert_eq!(AtomicEthRepr::parse_bytes(&ATOMIC).unwrap(), atomic());
        let mut b = [0u8; 28];
        let mut v = AtomicEth::new_unchecked(&mut b[..]);
        v.set_va(0x1000_0008);
        v.set_rkey(0xaabb_ccdd);
        v.set_swap_add(1);
        v.set_compare(u64::MAX - 1);
        assert_eq!(b, ATOMIC);
        let mut b = [0u8; 28];
        atomic().emit_bytes(&mut b);
        assert_eq!(b, ATOMIC);
        assert_eq!(
            AtomicEthRepr::parse_bytes(&ATOMIC[..27]),
            Err(Error::Truncated)
        );

        assert_eq!(
            AtomicAckEth::new_checked(&ACK[..]).unwrap().orig_rem_dt(),
            0x100
        );
        let r = AtomicAckEthRepr { orig_rem_dt: 0x100 };
        assert_eq!(AtomicAckEthRepr::parse_bytes(&ACK).unwrap(), r);
        let mut b = [0u8; 8];
        AtomicAckEth::new_unchecked(&mut b[..]).set_orig_rem_dt(0x100);
        assert_eq!(b, ACK);
        let mut b = [0u8; 8];
        r.emit_bytes(&mut b);
        assert_eq!(b, ACK);
        assert_eq!(
            AtomicAckEthRepr::parse_bytes(&ACK[..7]),
            Err(Error::Truncated)
        );

        let mut c = Collect::default();
        atomic().describe_as("atomiceth", &mut c);
        assert_eq!(c.get("atomiceth.swapdt"), Some("0x0000000000000001"));
    }

    proptest! {
        #[test]
        fn round_trip(va: u64, rkey: u32, swap_add: u64, compare: u64, orig: u64) {
            let r = AtomicEthRepr { va, rkey, swap_add, compare };
            let mut b = [0u8; 28];
            r.emit_bytes(&mut b);
            prop_assert_eq!(AtomicEthRepr::parse_bytes(&b).unwrap(), r);
            let a = AtomicAckEthRepr { orig_rem_dt: orig };
            let mut b = [0u8; 8];
            a.emit_bytes(&mut b);
            prop_assert_eq!(AtomicAckEthRepr::parse_bytes(&b).unwrap(), a);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = AtomicEthRepr::parse_bytes(&data);
            let _ = AtomicAckEthRepr::parse_bytes(&data);
        }
    }
}
