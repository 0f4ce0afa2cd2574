//! Datagram Extended Transport Header (IBA 1 §9.3), 8 bytes: `Q_Key(32) | rsv(8) | SrcQP(24)`.
//! Follows the BTH of every UD packet and of RD requests.

use crate::describe::{Describe, Describer, Value};
use crate::keys::QKey;
use crate::types::{be24, be32, put24, put32};
use crate::Result;

mod field {
    pub const Q_KEY: usize = 0;
    pub const RESERVED: usize = 4;
    pub const SRC_QP: usize = 5;
}

fixed_view! {
    /// A view of a DETH.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Deth;
    /// `Err(Truncated)` when the buffer is shorter than the header.
    fn check_len(min = 8);
    /// The header length in bytes.
    pub const LEN;
}

impl<T: AsRef<[u8]>> Deth<T> {
    /// Queue key.
    pub fn qkey(&self) -> u32 {
        be32(self.buffer.as_ref(), field::Q_KEY)
    }
    /// The reserved byte.
    pub fn reserved(&self) -> u8 {
        self.buffer.as_ref()[field::RESERVED]
    }
    /// Source QP.
    pub fn src_qp(&self) -> u32 {
        be24(self.buffer.as_ref(), field::SRC_QP)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Deth<T> {
    /// Sets the queue key.
    pub fn set_qkey(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::Q_KEY, v);
    }
    /// Sets the source QP (low 24 bits) and clears the reserved byte.
    pub fn set_src_qp(&mut self, v: u32) {
        self.buffer.as_mut()[field::RESERVED] = 0;
        put24(self.buffer.as_mut(), field::SRC_QP, v);
    }
}

/// A parsed DETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DethRepr {
    /// Queue key.
    pub qkey: QKey,
    /// Source QP (24 bits).
    pub src_qp: u32,
}

impl DethRepr {
    /// The header length.
    pub const LEN: usize = 8;

    /// Reads the header from a view.
    pub fn parse<T: AsRef<[u8]>>(v: &Deth<T>) -> Result<DethRepr> {
        v.check_len()?;
        Ok(DethRepr {
            qkey: QKey(v.qkey()),
            src_qp: v.src_qp(),
        })
    }
    /// Reads the header from the start of `data`.
    pub fn parse_bytes(data: &[u8]) -> Result<DethRepr> {
        Self::parse(&Deth::new_checked(data)?)
    }
    /// The header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }
    /// Writes the header into a view of at least [`DethRepr::LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, v: &mut Deth<T>) {
        v.set_qkey(self.qkey.0);
        v.set_src_qp(self.src_qp);
    }
    /// Writes the header at the start of `buf`.
    pub fn emit_bytes(&self, buf: &mut [u8]) {
        self.emit(&mut Deth::new_unchecked(buf));
    }
    /// True for a controlled Q_Key (see [`QKey::is_controlled`]).
    pub fn is_controlled_qkey(&self) -> bool {
        self.qkey.is_controlled()
    }
}

impl Describe for DethRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("q_key", self.qkey.into());
        d.field("srcqp", Value::Hex(self.src_qp as u64, 6));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::Error;
    use proptest::prelude::*;

    // Q_Key 0x00000b1b (the IPoIB broadcast group's, per docs/DEPLOYED.md), SrcQP 0x000048.
    static BYTES: [u8; 8] = [0x00, 0x00, 0x0b, 0x1b, 0x00, 0x00, 0x00, 0x48];

    /// IBA 1 §9.3: field layout.
    #[test]
    fn deconstruct_construct() {
        let v = Deth::new_checked(&BYTES[..]).unwrap();
        assert_eq!((v.qkey(), v.reserved(), v.src_qp()), (0x0b1b, 0, 0x48));
        let mut b = [0xffu8; 8];
        let mut v = Deth::new_unchecked(&mut b[..]);
        v.set_qkey(0x0b1b);
        v.set_src_qp(0x48);
        assert_eq!(b, BYTES);
    }

    #[test]
    fn parse_and_emit() {
        let r = DethRepr {
            qkey: QKey(0x0b1b),
            src_qp: 0x48,
        };
        assert_eq!(DethRepr::parse_bytes(&BYTES).unwrap(), r);
        let mut b = [0xffu8; 8];
        r.emit_bytes(&mut b);
        assert_eq!(b, BYTES);
        assert_eq!(DethRepr::parse_bytes(&BYTES[..7]), Err(Error::Truncated));
        assert!(!r.is_controlled_qkey());
        let mut c = Collect::default();
        r.describe_as("deth", &mut c);
        assert_eq!(c.get("deth.q_key"), Some("0x00000b1b"));
        assert_eq!(c.get("deth.srcqp"), Some("0x000048"));
    }

    proptest! {
        #[test]
        fn round_trip(qkey: u32, src_qp in 0..0x100_0000u32) {
            let r = DethRepr { qkey: QKey(qkey), src_qp };
            let mut b = [0u8; 8];
            r.emit_bytes(&mut b);
            prop_assert_eq!(DethRepr::parse_bytes(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = DethRepr::parse_bytes(&data);
        }
    }
}
