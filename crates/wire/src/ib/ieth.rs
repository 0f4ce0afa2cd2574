//! Invalidate Extended Transport Header (IBA 1 §9.3), 4 bytes: the R_Key to invalidate, carried by
//! RC SEND Last/Only with Invalidate (opcodes 0x16, 0x17).

use crate::describe::{Describe, Describer, Value};
use crate::types::{be32, put32};
use crate::Result;

fixed_view! {
    /// A view of an IETH.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Ieth;
    /// `Err(Truncated)` when the buffer is shorter than the header.
    fn check_len(min = 4);
    /// The header length in bytes.
    pub const LEN;
}

impl<T: AsRef<[u8]>> Ieth<T> {
    /// The R_Key to invalidate.
    pub fn rkey(&self) -> u32 {
        be32(self.buffer.as_ref(), 0)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ieth<T> {
    /// Sets the R_Key.
    pub fn set_rkey(&mut self, v: u32) {
        put32(self.buffer.as_mut(), 0, v);
    }
}

/// A parsed IETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IethRepr {
    /// The R_Key to invalidate.
    pub rkey: u32,
}

impl IethRepr {
    /// The header length.
    pub const LEN: usize = 4;

    /// Reads the header from a view.
    pub fn parse<T: AsRef<[u8]>>(v: &Ieth<T>) -> Result<IethRepr> {
        v.check_len()?;
        Ok(IethRepr { rkey: v.rkey() })
    }
    /// Reads the header from the start of `data`.
    pub fn parse_bytes(data: &[u8]) -> Result<IethRepr> {
        Self::parse(&Ieth::new_checked(data)?)
    }
    /// The header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }
    /// Writes the header into a view of at least [`IethRepr::LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, v: &mut Ieth<T>) {
        v.set_rkey(self.rkey);
    }
    /// Writes the header at the start of `buf`.
    pub fn emit_bytes(&self, buf: &mut [u8]) {
        self.emit(&mut Ieth::new_unchecked(buf));
    }
}

impl Describe for IethRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("r_key", Value::Hex(self.rkey as u64, 8));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use proptest::prelude::*;

    static BYTES: [u8; 4] = [0x00, 0x00, 0x12, 0x07];

    /// IBA 1 §9.3: IETH is one 32-bit R_Key.
    #[test]
    fn fixed_bytes() {
        assert_eq!(Ieth::new_checked(&BYTES[..]).unwrap().rkey(), 0x1207);
        let r = IethRepr { rkey: 0x1207 };
        assert_eq!(IethRepr::parse_bytes(&BYTES).unwrap(), r);
        let mut b = [0u8; 4];
        Ieth::new_unchecked(&mut b[..]).set_rkey(0x1207);
        assert_eq!(b, BYTES);
        let mut b = [0u8; 4];
        r.emit_bytes(&mut b);
        assert_eq!(b, BYTES);
        assert_eq!(IethRepr::parse_bytes(&BYTES[..3]), Err(Error::Truncated));
    }

    proptest! {
        #[test]
        fn round_trip(rkey: u32) {
            let r = IethRepr { rkey };
            let mut b = [0u8; 4];
            r.emit_bytes(&mut b);
            prop_assert_eq!(IethRepr::parse_bytes(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = IethRepr::parse_bytes(&data);
        }
    }
}
