//! RDMA Extended Transport Header (IBA 1 §9.3), 16 bytes: `VA(64) | R_Key(32) | DMA Length(32)`.

use crate::describe::{Describe, Describer, Value};
use crate::types::{be32, be64, put32, put64};
use crate::Result;

mod field {
    pub const VA: usize = 0;
    pub const R_KEY: usize = 8;
    pub const DMA_LEN: usize = 12;
}

fixed_view! {
    /// A view of a RETH.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Reth;
    /// `Err(Truncated)` when the buffer is shorter than the header.
    fn check_len(min = 16);
    /// The header length in bytes.
    pub const LEN;
}

impl<T: AsRef<[u8]>> Reth<T> {
    /// Virtual address.
    pub fn va(&self) -> u64 {
        be64(self.buffer.as_ref(), field::VA)
    }
    /// Remote key.
    pub fn rkey(&self) -> u32 {
        be32(self.buffer.as_ref(), field::R_KEY)
    }
    /// DMA length in bytes.
    pub fn dma_len(&self) -> u32 {
        be32(self.buffer.as_ref(), field::DMA_LEN)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Reth<T> {
    /// Sets the virtual address.
    pub fn set_va(&mut self, v: u64) {
        put64(self.buffer.as_mut(), field::VA, v);
    }
    /// Sets the remote key.
    pub fn set_rkey(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::R_KEY, v);
    }
    /// Sets the DMA length.
    pub fn set_dma_len(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::DMA_LEN, v);
    }
}

/// A parsed RETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RethRepr {
    /// Virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// DMA length.
    pub dma_len: u32,
}

impl RethRepr {
    /// The header length.
    pub const LEN: usize = 16;

    /// Reads the header from a view.
    pub fn parse<T: AsRef<[u8]>>(v: &Reth<T>) -> Result<RethRepr> {
        v.check_len()?;
        Ok(RethRepr {
            va: v.va(),
            rkey: v.rkey(),
            dma_len: v.dma_len(),
        })
    }
    /// Reads the header from the start of `data`.
    pub fn parse_bytes(data: &[u8]) -> Result<RethRepr> {
        Self::parse(&Reth::new_checked(data)?)
    }
    /// The header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }
    /// Writes the header into a view of at least [`RethRepr::LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, v: &mut Reth<T>) {
        v.set_va(self.va);
        v.set_rkey(self.rkey);
        v.set_dma_len(self.dma_len);
    }
    /// Writes the header at the start of `buf`.
    pub fn emit_bytes(&self, buf: &mut [u8]) {
        self.emit(&mut Reth::new_unchecked(buf));
    }
}

impl Describe for RethRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("va", Value::Hex(self.va, 16));
        d.field("r_key", Value::Hex(self.rkey as u64, 8));
        d.field("dmalen", Value::Uint(self.dma_len as u64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::Error;
    use proptest::prelude::*;

    static BYTES: [u8; 16] = [
        0x00, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x78, 0x00, // VA
        0x00, 0x01, 0x02, 0x03, // R_Key
        0x00, 0x01, 0x00, 0x00, // DMA length 65536
    ];

    fn repr() -> RethRepr {
        RethRepr {
            va: 0x7f12_3456_7800,
            rkey: 0x0001_0203,
            dma_len: 65536,
        }
    }

    /// IBA 1 §9.3: field layout.
    #[test]
    fn deconstruct_construct() {
        let v = Reth::new_checked(&BYTES[..]).unwrap();
        assert_eq!(
            (v.va(), v.rkey(), v.dma_len()),
            (0x7f12_3456_7800, 0x0001_0203, 65536)
        );
        let mut b = [0u8; 16];
        let mut v = Reth::new_unchecked(&mut b[..]);
        v.set_va(0x7f12_3456_7800);
        v.set_rkey(0x0001_0203);
        v.set_dma_len(65536);
        assert_eq!(b, BYTES);
    }

    #[test]
    fn parse_and_emit() {
        assert_eq!(RethRepr::parse_bytes(&BYTES).unwrap(), repr());
        let mut b = [0xffu8; 16];
        repr().emit_bytes(&mut b);
        assert_eq!(b, BYTES);
        assert_eq!(RethRepr::parse_bytes(&BYTES[..15]), Err(Error::Truncated));
        let mut c = Collect::default();
        repr().describe_as("reth", &mut c);
        assert_eq!(c.get("reth.dmalen"), Some("65536"));
    }

    proptest! {
        #[test]
        fn round_trip(va: u64, rkey: u32, dma_len: u32) {
            let r = RethRepr { va, rkey, dma_len };
            let mut b = [0u8; 16];
            r.emit_bytes(&mut b);
            prop_assert_eq!(RethRepr::parse_bytes(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = RethRepr::parse_bytes(&data);
        }
    }
}
