//! Reliable Datagram Extended Transport Header (IBA 1 §9.3), 4 bytes: `rsv(8) | EE-Context(24)`.

use crate::describe::{Describe, Describer, Value};
use crate::types::{be24, put24};
use crate::Result;

fixed_view! {
    /// A view of an RDETH.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Rdeth;
    /// `Err(Truncated)` when the buffer is shorter than the header.
    fn check_len(min = 4);
    /// The header length in bytes.
    pub const LEN;
}

impl<T: AsRef<[u8]>> Rdeth<T> {
    /// The reserved first byte.
    pub fn reserved(&self) -> u8 {
        self.buffer.as_ref()[0]
    }
    /// End-to-end context.
    pub fn ee_context(&self) -> u32 {
        be24(self.buffer.as_ref(), 1)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Rdeth<T> {
    /// Sets the EE context (low 24 bits) and clears the reserved byte.
    pub fn set_ee_context(&mut self, v: u32) {
        self.buffer.as_mut()[0] = 0;
        put24(self.buffer.as_mut(), 1, v);
    }
}

/// A parsed RDETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RdethRepr {
    /// End-to-end context (24 bits).
    pub ee_context: u32,
}

impl RdethRepr {
    /// The header length.
    pub const LEN: usize = 4;

    /// Reads the header from a view.
    pub fn parse<T: AsRef<[u8]>>(v: &Rdeth<T>) -> Result<RdethRepr> {
        v.check_len()?;
        Ok(RdethRepr {
            ee_context: v.ee_context(),
        })
    }
    /// Reads the header from the start of `data`.
    pub fn parse_bytes(data: &[u8]) -> Result<RdethRepr> {
        Self::parse(&Rdeth::new_checked(data)?)
    }
    /// The header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }
    /// Writes the header into a view of at least [`RdethRepr::LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, v: &mut Rdeth<T>) {
        v.set_ee_context(self.ee_context);
    }
    /// Writes the header at the start of `buf`.
    pub fn emit_bytes(&self, buf: &mut [u8]) {
        self.emit(&mut Rdeth::new_unchecked(buf));
    }
}

impl Describe for RdethRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("eecnxt", Value::Hex(self.ee_context as u64, 6));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use proptest::prelude::*;

    static BYTES: [u8; 4] = [0x00, 0x01, 0x02, 0x03];

    /// IBA 1 §9.3: RDETH is a reserved byte and a 24-bit EE context.
    #[test]
    fn fixed_bytes() {
        let v = Rdeth::new_checked(&BYTES[..]).unwrap();
        assert_eq!((v.reserved(), v.ee_context()), (0, 0x010203));
        let r = RdethRepr {
            ee_context: 0x010203,
        };
        assert_eq!(RdethRepr::parse_bytes(&BYTES).unwrap(), r);
        let mut b = [0xffu8; 4];
        Rdeth::new_unchecked(&mut b[..]).set_ee_context(0x010203);
        assert_eq!(b, BYTES);
        let mut b = [0xffu8; 4];
        r.emit_bytes(&mut b);
        assert_eq!(b, BYTES);
        assert_eq!(RdethRepr::parse_bytes(&BYTES[..3]), Err(Error::Truncated));
    }

    proptest! {
        #[test]
        fn round_trip(ee in 0..0x100_0000u32) {
            let r = RdethRepr { ee_context: ee };
            let mut b = [0u8; 4];
            r.emit_bytes(&mut b);
            prop_assert_eq!(RdethRepr::parse_bytes(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = RdethRepr::parse_bytes(&data);
        }
    }
}
