//! The forwarding table blocks a switch is programmed with:
//!
//! - LinearForwardingTable (IBA 1 §14.2.5.10): 64 output ports, one byte each, for the 64 LIDs of
//!   block AttributeModifier (LIDs `64 × block` to `64 × block + 63`); port 255 drops.
//! - MulticastForwardingTable (IBA 1 §14.2.5.12): 32 PortMasks of 16 bits, one per MLID of the
//!   block, bit `p` set when the packet leaves by port `16 × position + p`. AttributeModifier bits
//!   31-28 are the position, bits 8-0 the block (MLIDs `0xC000 + 32 × block` onward).

use crate::describe::{Describe, Describer, Value};
use crate::ib::lid::LID_MULTICAST_FIRST;
use crate::types::{be16, put16};
use crate::{Error, Result};

/// LIDs in one LinearForwardingTable block.
pub const LFT_BLOCK_LIDS: usize = 64;
/// MLIDs in one MulticastForwardingTable block.
pub const MFT_BLOCK_MLIDS: usize = 32;
/// Ports in one MulticastForwardingTable PortMask.
pub const MFT_POSITION_PORTS: usize = 16;

/// The AttributeModifier of the MulticastForwardingTable block holding `mlid`'s PortMask for the
/// ports `16 × position` to `16 × position + 15` (IBA 1 §14.2.5.12), and the index of that
/// PortMask in the block. `None` for a LID below 0xC000 or a position above 15.
pub fn mft_modifier(mlid: u16, position: u8) -> Option<(u32, usize)> {
    let index = usize::from(mlid.checked_sub(LID_MULTICAST_FIRST)?);
    if position > 15 {
        return None;
    }
    let block = (index / MFT_BLOCK_MLIDS) as u32;
    Some((u32::from(position) << 28 | block, index % MFT_BLOCK_MLIDS))
}

/// One LinearForwardingTable block (IBA 1 §14.2.5.10): the output port of each of 64 LIDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LftBlockRepr {
    /// Output port per LID of the block (255: drop).
    pub ports: [u8; LFT_BLOCK_LIDS],
}

impl LftBlockRepr {
    /// Reads the 64 ports from the start of `data`.
    pub fn parse(data: &[u8]) -> Result<LftBlockRepr> {
        let b = data.get(..LFT_BLOCK_LIDS).ok_or(Error::Truncated)?;
        let mut ports = [0u8; LFT_BLOCK_LIDS];
        ports.copy_from_slice(b);
        Ok(LftBlockRepr { ports })
    }

    /// 64 bytes.
    pub const fn buffer_len(&self) -> usize {
        LFT_BLOCK_LIDS
    }

    /// Writes the 64 ports. Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        buf[..LFT_BLOCK_LIDS].copy_from_slice(&self.ports);
    }
}

impl Describe for LftBlockRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("ports", Value::Bytes(&self.ports));
    }
}

/// One MulticastForwardingTable block (IBA 1 §14.2.5.12): 32 PortMasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MftBlockRepr {
    /// PortMask per MLID of the block; bit `p` is port `16 × position + p`.
    pub port_masks: [u16; MFT_BLOCK_MLIDS],
}

impl MftBlockRepr {
    /// Reads the 32 PortMasks from the start of `data`.
    pub fn parse(data: &[u8]) -> Result<MftBlockRepr> {
        let b = data.get(..2 * MFT_BLOCK_MLIDS).ok_or(Error::Truncated)?;
        let mut port_masks = [0u16; MFT_BLOCK_MLIDS];
        for (i, m) in port_masks.iter_mut().enumerate() {
            *m = be16(b, 2 * i);
        }
        Ok(MftBlockRepr { port_masks })
    }

    /// 64 bytes.
    pub const fn buffer_len(&self) -> usize {
        2 * MFT_BLOCK_MLIDS
    }

    /// Writes the 32 PortMasks. Panics if `buf` is shorter than 64 bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        for (i, m) in self.port_masks.iter().enumerate() {
            put16(buf, 2 * i, *m);
        }
    }
}

impl Describe for MftBlockRepr {
    fn describe(&self, d: &mut dyn Describer) {
        let mut b = [0u8; 2 * MFT_BLOCK_MLIDS];
        self.emit(&mut b);
        d.field("port_masks", Value::Bytes(&b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // IBA 1 §14.2.5.12: MLID 0xC021 is entry 1 of block 1; position 2 covers ports 32-47.
    #[test]
    fn mft_modifiers() {
        assert_eq!(mft_modifier(0xc000, 0), Some((0, 0)));
        assert_eq!(mft_modifier(0xc021, 2), Some((0x2000_0001, 1)));
        assert_eq!(mft_modifier(0xffff, 15), Some((0xf000_01ff, 31)));
        assert_eq!(mft_modifier(0xbfff, 0), None);
        assert_eq!(mft_modifier(0xc000, 16), None);
    }

    // IBA 1 §14.2.5.12: PortMask per MLID, big-endian, port 0 the least significant bit.
    #[test]
    fn mft_block_layout() {
        let mut b = [0u8; 64];
        b[2..4].copy_from_slice(&[0x00, 0x06]); // MLID 1 of the block: ports 1 and 2
        b[62..64].copy_from_slice(&[0x80, 0x00]); // MLID 31: port 15
        let r = MftBlockRepr::parse(&b).unwrap();
        assert_eq!(r.port_masks[1], 0x0006);
        assert_eq!(r.port_masks[31], 0x8000);
        assert_eq!(r.port_masks[0], 0);
        let mut out = [0xffu8; 64];
        r.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(MftBlockRepr::parse(&b[..63]), Err(Error::Truncated));
        let mut c = Collect::default();
        r.describe(&mut c);
        assert!(c.get("port_masks").unwrap().starts_with("00000006"));
    }

    // IBA 1 §14.2.5.10: one output port per LID.
    #[test]
    fn lft_block_layout() {
        let mut b = [0xffu8; 64];
        b[1] = 1;
        b[12] = 3;
        let r = LftBlockRepr::parse(&b).unwrap();
        assert_eq!((r.ports[0], r.ports[1], r.ports[12]), (255, 1, 3));
        let mut out = [0u8; 64];
        r.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(LftBlockRepr::parse(&b[..63]), Err(Error::Truncated));
    }

    proptest! {
        #[test]
        fn round_trip(ports: [u8; 32], more: [u8; 32], masks: [u16; 32]) {
            let mut p = [0u8; 64];
            p[..32].copy_from_slice(&ports);
            p[32..].copy_from_slice(&more);
            let l = LftBlockRepr { ports: p };
            let mut b = [0u8; 64];
            l.emit(&mut b);
            prop_assert_eq!(LftBlockRepr::parse(&b).unwrap(), l);
            let m = MftBlockRepr { port_masks: masks };
            m.emit(&mut b);
            prop_assert_eq!(MftBlockRepr::parse(&b).unwrap(), m);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300),
                              mlid: u16, position: u8) {
            if let Ok(r) = LftBlockRepr::parse(&data) {
                r.describe(&mut Collect::default());
            }
            if let Ok(r) = MftBlockRepr::parse(&data) {
                r.describe(&mut Collect::default());
            }
            if let Some((m, i)) = mft_modifier(mlid, position) {
                prop_assert!(i < MFT_BLOCK_MLIDS && m >> 28 == u32::from(position));
            }
        }
    }
}
