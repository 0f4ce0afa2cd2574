//! The SA MAD (IBA 1 §15.2.1, Figure 183 in 1.3): common MAD header (24 bytes), RMPP header
//! (12 bytes), then the SA header and 200 bytes of SA data:
//!
//! ```text
//! 36 SM_Key(64)
//! 44 AttributeOffset(16, in 8-byte words) | Reserved(16)
//! 48 ComponentMask(64)
//! 56 SubnAdminData (200 bytes)
//! ```

use crate::describe::{Describe, Describer, Value};
use crate::mad::{Mad, Rmpp, MAD_LEN};
use crate::types::{be16, be64, put16, put64};
use crate::Result;

mod field {
    use core::ops::Range;
    pub const RMPP: Range<usize> = 24..36;
    pub const SM_KEY: usize = 36;
    pub const ATTRIBUTE_OFFSET: usize = 44;
    pub const RESERVED: usize = 46;
    pub const COMPONENT_MASK: usize = 48;
    pub const DATA: Range<usize> = 56..256;
}

/// Size of SubnAdminData (IBA 1 §15.2.1).
pub const SA_DATA_LEN: usize = 200;
/// Offset of SubnAdminData in the MAD.
pub const SA_DATA_OFFSET: usize = 56;
/// Size of the SA class header (SM_Key to ComponentMask) that RMPP counts in PayloadLength.
pub const SA_HEADER_LEN: usize = 20;

fixed_view! {
    /// A zero-copy view of a whole SA MAD (256 bytes).
    #[derive(Debug, Clone)]
    pub struct SaMad;
    /// `Err(Truncated)` unless the buffer holds 256 bytes.
    fn check_len(min = MAD_LEN);
}

impl<T: AsRef<[u8]>> SaMad<T> {
    /// The common MAD header view.
    pub fn mad(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(&self.buffer.as_ref()[..MAD_LEN])
    }
    /// The RMPP header view.
    pub fn rmpp(&self) -> Rmpp<&[u8]> {
        Rmpp::new_unchecked(&self.buffer.as_ref()[field::RMPP])
    }
    /// SM_Key.
    pub fn sm_key(&self) -> u64 {
        be64(self.buffer.as_ref(), field::SM_KEY)
    }
    /// AttributeOffset, in 8-byte words: the record stride of a GetTableResp.
    pub fn attribute_offset(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ATTRIBUTE_OFFSET)
    }
    /// ComponentMask.
    pub fn component_mask(&self) -> u64 {
        be64(self.buffer.as_ref(), field::COMPONENT_MASK)
    }
    /// SubnAdminData, 200 bytes.
    pub fn sa_data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SaMad<T> {
    /// The common MAD header view, writable.
    pub fn mad_mut(&mut self) -> Mad<&mut [u8]> {
        Mad::new_unchecked(&mut self.buffer.as_mut()[..MAD_LEN])
    }
    /// The RMPP header view, writable.
    pub fn rmpp_mut(&mut self) -> Rmpp<&mut [u8]> {
        Rmpp::new_unchecked(&mut self.buffer.as_mut()[field::RMPP])
    }
    /// Sets SM_Key.
    pub fn set_sm_key(&mut self, v: u64) {
        put64(self.buffer.as_mut(), field::SM_KEY, v);
    }
    /// Sets AttributeOffset and zeroes the reserved word after it.
    pub fn set_attribute_offset(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::ATTRIBUTE_OFFSET, v);
        put16(self.buffer.as_mut(), field::RESERVED, 0);
    }
    /// Sets ComponentMask.
    pub fn set_component_mask(&mut self, v: u64) {
        put64(self.buffer.as_mut(), field::COMPONENT_MASK, v);
    }
    /// SubnAdminData, writable.
    pub fn sa_data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }
}

/// The SA header fields (IBA 1 §15.2.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SaHeaderRepr {
    /// SM_Key (zero unless the requester is trusted).
    pub sm_key: u64,
    /// AttributeOffset in 8-byte words (set in GetTableResp, zero otherwise).
    pub attribute_offset: u16,
    /// ComponentMask: which fields of the attribute a query or join uses.
    pub component_mask: u64,
}

impl SaHeaderRepr {
    /// Reads the SA header of a checked SA MAD.
    pub fn parse<T: AsRef<[u8]>>(m: &SaMad<T>) -> Result<SaHeaderRepr> {
        m.check_len()?;
        Ok(SaHeaderRepr {
            sm_key: m.sm_key(),
            attribute_offset: m.attribute_offset(),
            component_mask: m.component_mask(),
        })
    }
    /// 20 bytes.
    pub const fn buffer_len(&self) -> usize {
        SA_HEADER_LEN
    }
    /// Writes the SA header into an SA MAD view.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, m: &mut SaMad<T>) {
        m.set_sm_key(self.sm_key);
        m.set_attribute_offset(self.attribute_offset);
        m.set_component_mask(self.component_mask);
    }
}

impl Describe for SaHeaderRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("sm_key", Value::Hex(self.sm_key, 16));
        d.field(
            "attribute_offset",
            Value::Uint(self.attribute_offset.into()),
        );
        d.field("component_mask", Value::Hex(self.component_mask, 16));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    // IBA 1 §15.2.1
    #[test]
    fn sa_header_fields() {
        let mut b = [0u8; 256];
        b[36..44].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        b[44..46].copy_from_slice(&[0x00, 0x07]);
        b[48..56].copy_from_slice(&[0, 0, 0, 0, 0, 0x01, 0x00, 0xb7]);
        b[56] = 0xaa;
        let m = SaMad::new_checked(&b[..]).unwrap();
        assert_eq!(m.sm_key(), 0x0102_0304_0506_0708);
        assert_eq!(m.attribute_offset(), 7);
        assert_eq!(m.component_mask(), 0x100b7);
        assert_eq!(m.sa_data().len(), 200);
        assert_eq!(m.sa_data()[0], 0xaa);
        let r = SaHeaderRepr::parse(&m).unwrap();
        let mut out = [0u8; 256];
        out[56] = 0xaa;
        r.emit(&mut SaMad::new_unchecked(&mut out[..]));
        assert_eq!(out, b);
        assert_eq!(SaMad::new_checked(&b[..255]).err(), Some(Error::Truncated));
    }
}
