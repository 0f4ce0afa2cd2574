//! Immediate Data, ImmDt (IBA 1 §9.3), 4 bytes of opaque data delivered with the message.

use crate::describe::{Describe, Describer, Value};
use crate::types::{be32, put32};
use crate::Result;

fixed_view! {
    /// A view of an ImmDt header.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ImmDt;
    /// `Err(Truncated)` when the buffer is shorter than the header.
    fn check_len(min = 4);
    /// The header length in bytes.
    pub const LEN;
}

impl<T: AsRef<[u8]>> ImmDt<T> {
    /// The immediate data, as a big-endian number (it is opaque to the transport).
    pub fn data(&self) -> u32 {
        be32(self.buffer.as_ref(), 0)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ImmDt<T> {
    /// Sets the immediate data.
    pub fn set_data(&mut self, v: u32) {
        put32(self.buffer.as_mut(), 0, v);
    }
}

/// Parsed immediate data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImmDtRepr {
    /// The four bytes, read big-endian.
    pub data: u32,
}

impl ImmDtRepr {
    /// The header length.
    pub const LEN: usize = 4;

    /// Reads the header from a view.
    pub fn parse<T: AsRef<[u8]>>(v: &ImmDt<T>) -> Result<ImmDtRepr> {
        v.check_len()?;
        Ok(ImmDtRepr { data: v.data() })
    }
    /// Reads the header from the start of `data`.
    pub fn parse_bytes(data: &[u8]) -> Result<ImmDtRepr> {
        Self::parse(&ImmDt::new_checked(data)?)
    }
    /// The header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }
    /// Writes the header into a view of at least [`ImmDtRepr::LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, v: &mut ImmDt<T>) {
        v.set_data(self.data);
    }
    /// Writes the header at the start of `buf`.
    pub fn emit_bytes(&self, buf: &mut [u8]) {
        self.emit(&mut ImmDt::new_unchecked(buf));
    }
}

impl Describe for ImmDtRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("data", Value::Hex(self.data as u64, 8));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use proptest::prelude::*;

    static BYTES: [u8; 4] = [0x12, 0x34, 0x56, 0x78];

    /// IBA 1 §9.3: ImmDt is 4 bytes.
    #[test]
    fn fixed_bytes() {
        assert_eq!(ImmDt::new_checked(&BYTES[..]).unwrap().data(), 0x1234_5678);
        let r = ImmDtRepr { data: 0x1234_5678 };
        assert_eq!(ImmDtRepr::parse_bytes(&BYTES).unwrap(), r);
        let mut b = [0u8; 4];
        ImmDt::new_unchecked(&mut b[..]).set_data(0x1234_5678);
        assert_eq!(b, BYTES);
        let mut b = [0u8; 4];
        r.emit_bytes(&mut b);
        assert_eq!(b, BYTES);
        assert_eq!(ImmDtRepr::parse_bytes(&BYTES[..3]), Err(Error::Truncated));
    }

    proptest! {
        #[test]
        fn round_trip(data: u32) {
            let r = ImmDtRepr { data };
            let mut b = [0u8; 4];
            r.emit_bytes(&mut b);
            prop_assert_eq!(ImmDtRepr::parse_bytes(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = ImmDtRepr::parse_bytes(&data);
        }
    }
}
