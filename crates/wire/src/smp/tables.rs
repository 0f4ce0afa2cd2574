//! The table-shaped SMP attributes, each filling the 64 bytes of SMP data (or a prefix of them):
//!
//! - NodeDescription (IBA 1 §14.2.5.2): 64 bytes of UTF-8 text, NUL padded.
//! - GUIDInfo (IBA 1 §14.2.5.5): a block of 8 GUIDs (AttributeModifier = block number).
//! - P_KeyTable (IBA 1 §14.2.5.7): a block of 32 P_Keys (AttributeModifier bits 15-0 = block;
//!   on a switch bits 31-16 = port).
//! - SLtoVLMappingTable (IBA 1 §14.2.5.8): 16 VLs of 4 bits, SL 0 in the high nibble of byte 0
//!   (AttributeModifier on a switch: bits 15-8 input port, 7-0 output port).
//! - VLArbitrationTable (IBA 1 §14.2.5.9): 32 entries of Reserved(4) VL(4) | Weight(8)
//!   (AttributeModifier bits 31-16: 1/2 = low-priority entries 0-31/32-63, 3/4 = high-priority;
//!   bits 15-0: the output port on a switch).
//!
//! Layouts checked against OpenSM `ib_node_desc_t`, `ib_guid_info_t`, `ib_pkey_table_t`,
//! `ib_slvl_table_t`, `ib_vl_arb_table_t` and wireshark's `parse_NodeDescription`,
//! `parse_GUIDInfo`, `parse_P_KeyTable`, `parse_SLtoVLMappingTable`, `parse_VLArbitrationTable`.

use crate::describe::{Describe, Describer, Value};
use crate::keys::PKey;
use crate::types::{be16, be64, put16, put64, Guid};
use crate::{Error, Result};

/// Bytes of a NodeDescription.
pub const NODE_DESCRIPTION_LEN: usize = 64;
/// GUIDs in one GUIDInfo block.
pub const GUID_INFO_BLOCK: usize = 8;
/// P_Keys in one P_KeyTable block.
pub const PKEY_TABLE_BLOCK: usize = 32;
/// SLs in an SLtoVLMappingTable.
pub const SL_COUNT: usize = 16;
/// Entries in one VLArbitrationTable block.
pub const VL_ARB_BLOCK: usize = 32;

/// NodeDescription (IBA 1 §14.2.5.2): free text naming the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeDescriptionRepr {
    /// The 64 bytes as sent (UTF-8, NUL padded).
    pub bytes: [u8; NODE_DESCRIPTION_LEN],
}

impl NodeDescriptionRepr {
    /// A description from `text`, cut to 64 bytes at a character boundary and NUL padded.
    pub fn new(text: &str) -> NodeDescriptionRepr {
        let mut end = text.len().min(NODE_DESCRIPTION_LEN);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let mut bytes = [0u8; NODE_DESCRIPTION_LEN];
        bytes[..end].copy_from_slice(&text.as_bytes()[..end]);
        NodeDescriptionRepr { bytes }
    }

    /// The text up to the first NUL; invalid UTF-8 is cut at the first bad byte.
    pub fn text(&self) -> &str {
        let end = self.bytes.iter().position(|&b| b == 0).unwrap_or(64);
        let b = &self.bytes[..end];
        match core::str::from_utf8(b) {
            Ok(s) => s,
            Err(e) => core::str::from_utf8(&b[..e.valid_up_to()]).unwrap_or(""),
        }
    }

    /// Reads the 64 bytes.
    pub fn parse(data: &[u8]) -> Result<NodeDescriptionRepr> {
        let b = data.get(..NODE_DESCRIPTION_LEN).ok_or(Error::Truncated)?;
        let mut bytes = [0u8; NODE_DESCRIPTION_LEN];
        bytes.copy_from_slice(b);
        Ok(NodeDescriptionRepr { bytes })
    }

    /// 64 bytes.
    pub const fn buffer_len(&self) -> usize {
        NODE_DESCRIPTION_LEN
    }

    /// Writes the 64 bytes. Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        buf[..NODE_DESCRIPTION_LEN].copy_from_slice(&self.bytes);
    }
}

impl Describe for NodeDescriptionRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("node_string", Value::Str(self.text()));
    }
}

/// One GUIDInfo block (IBA 1 §14.2.5.5): the GUIDs of indexes `8 × block` to `8 × block + 7`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GuidInfoRepr {
    /// GUIDs (0: entry unused).
    pub guids: [Guid; GUID_INFO_BLOCK],
}

impl GuidInfoRepr {
    /// Reads 8 GUIDs from the first 64 bytes.
    pub fn parse(data: &[u8]) -> Result<GuidInfoRepr> {
        let b = data.get(..8 * GUID_INFO_BLOCK).ok_or(Error::Truncated)?;
        let mut guids = [Guid(0); GUID_INFO_BLOCK];
        for (i, g) in guids.iter_mut().enumerate() {
            *g = Guid(be64(b, 8 * i));
        }
        Ok(GuidInfoRepr { guids })
    }

    /// 64 bytes.
    pub const fn buffer_len(&self) -> usize {
        8 * GUID_INFO_BLOCK
    }

    /// Writes the 8 GUIDs. Panics if `buf` is shorter than 64 bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        for (i, g) in self.guids.iter().enumerate() {
            put64(buf, 8 * i, g.0);
        }
    }
}

impl Describe for GuidInfoRepr {
    fn describe(&self, d: &mut dyn Describer) {
        let mut b = [0u8; 8 * GUID_INFO_BLOCK];
        self.emit(&mut b);
        d.field("guids", Value::Bytes(&b));
    }
}

/// One P_KeyTable block (IBA 1 §14.2.5.7): the P_Keys of indexes `32 × block` onward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PKeyTableRepr {
    /// P_Keys (0: invalid entry).
    pub pkeys: [PKey; PKEY_TABLE_BLOCK],
}

impl Default for PKeyTableRepr {
    fn default() -> Self {
        PKeyTableRepr {
            pkeys: [PKey(0); PKEY_TABLE_BLOCK],
        }
    }
}

impl PKeyTableRepr {
    /// Reads 32 P_Keys from the first 64 bytes.
    pub fn parse(data: &[u8]) -> Result<PKeyTableRepr> {
        let b = data.get(..2 * PKEY_TABLE_BLOCK).ok_or(Error::Truncated)?;
        let mut pkeys = [PKey(0); PKEY_TABLE_BLOCK];
        for (i, k) in pkeys.iter_mut().enumerate() {
            *k = PKey(be16(b, 2 * i));
        }
        Ok(PKeyTableRepr { pkeys })
    }

    /// 64 bytes.
    pub const fn buffer_len(&self) -> usize {
        2 * PKEY_TABLE_BLOCK
    }

    /// Writes the 32 P_Keys. Panics if `buf` is shorter than 64 bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        for (i, k) in self.pkeys.iter().enumerate() {
            put16(buf, 2 * i, k.0);
        }
    }
}

impl Describe for PKeyTableRepr {
    fn describe(&self, d: &mut dyn Describer) {
        let mut b = [0u8; 2 * PKEY_TABLE_BLOCK];
        self.emit(&mut b);
        d.field("pkeys", Value::Bytes(&b));
    }
}

/// SLtoVLMappingTable (IBA 1 §14.2.5.8): the VL each SL travels on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SlToVlTableRepr {
    /// VL per SL (4 bits each).
    pub vls: [u8; SL_COUNT],
}

impl SlToVlTableRepr {
    /// Reads the 16 nibbles from the first 8 bytes.
    pub fn parse(data: &[u8]) -> Result<SlToVlTableRepr> {
        let b = data.get(..SL_COUNT / 2).ok_or(Error::Truncated)?;
        let mut vls = [0u8; SL_COUNT];
        for (i, v) in vls.iter_mut().enumerate() {
            let byte = b[i / 2];
            *v = if i % 2 == 0 { byte >> 4 } else { byte & 0x0f };
        }
        Ok(SlToVlTableRepr { vls })
    }

    /// 8 bytes.
    pub const fn buffer_len(&self) -> usize {
        SL_COUNT / 2
    }

    /// Writes the 8 bytes (VLs masked to 4 bits). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        for (i, pair) in self.vls.chunks(2).enumerate() {
            buf[i] = (pair[0] & 0x0f) << 4 | (pair[1] & 0x0f);
        }
    }
}

impl Describe for SlToVlTableRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("vls", Value::Bytes(&self.vls));
    }
}

/// One VLArbitrationTable entry: a VL and its weight in units of 64 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlArbEntry {
    /// VL (4 bits).
    pub vl: u8,
    /// Weight.
    pub weight: u8,
}

/// One VLArbitrationTable block (IBA 1 §14.2.5.9): 32 entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlArbTableRepr {
    /// The entries, in table order.
    pub entries: [VlArbEntry; VL_ARB_BLOCK],
}

impl VlArbTableRepr {
    /// Reads 32 entries from the first 64 bytes (the reserved nibble ignored).
    pub fn parse(data: &[u8]) -> Result<VlArbTableRepr> {
        let b = data.get(..2 * VL_ARB_BLOCK).ok_or(Error::Truncated)?;
        let mut entries = [VlArbEntry::default(); VL_ARB_BLOCK];
        for (i, e) in entries.iter_mut().enumerate() {
            *e = VlArbEntry {
                vl: b[2 * i] & 0x0f,
                weight: b[2 * i + 1],
            };
        }
        Ok(VlArbTableRepr { entries })
    }

    /// 64 bytes.
    pub const fn buffer_len(&self) -> usize {
        2 * VL_ARB_BLOCK
    }

    /// Writes the 32 entries (reserved nibble zero). Panics if `buf` is shorter than 64 bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        for (i, e) in self.entries.iter().enumerate() {
            buf[2 * i] = e.vl & 0x0f;
            buf[2 * i + 1] = e.weight;
        }
    }
}

impl Describe for VlArbTableRepr {
    fn describe(&self, d: &mut dyn Describer) {
        let mut b = [0u8; 2 * VL_ARB_BLOCK];
        self.emit(&mut b);
        d.field("entries", Value::Bytes(&b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // IBA 1 §14.2.5.2: NodeDescription is 64 bytes of text, NUL padded.
    #[test]
    fn node_description_layout() {
        let r = NodeDescriptionRepr::new("sw1 leaf");
        assert_eq!(&r.bytes[..8], b"sw1 leaf");
        assert!(r.bytes[8..].iter().all(|&b| b == 0));
        assert_eq!(r.text(), "sw1 leaf");
        let long = "é".repeat(40); // 80 bytes: cut at a character boundary
        assert_eq!(NodeDescriptionRepr::new(&long).text().len(), 64);
        let mut bad = [b'a'; 64];
        bad[3] = 0xff;
        assert_eq!(NodeDescriptionRepr::parse(&bad).unwrap().text(), "aaa");
        assert_eq!(NodeDescriptionRepr::parse(&[0; 63]), Err(Error::Truncated));
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.get("node_string"), Some("sw1 leaf"));
    }

    // IBA 1 §14.2.5.5, §14.2.5.7: GUIDs and P_Keys big-endian, index 0 first.
    #[test]
    fn guid_and_pkey_layout() {
        let mut b = [0u8; 64];
        b[..8].copy_from_slice(&[0, 2, 0xc9, 3, 0, 0, 0, 1]);
        b[56..].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, 9]);
        let g = GuidInfoRepr::parse(&b).unwrap();
        assert_eq!(g.guids[0], Guid(0x0002_c903_0000_0001));
        assert_eq!(g.guids[7], Guid(9));
        let mut out = [0u8; 64];
        g.emit(&mut out);
        assert_eq!(out, b);
        let mut b = [0u8; 64];
        b[..4].copy_from_slice(&[0xff, 0xff, 0x80, 0x01]);
        let p = PKeyTableRepr::parse(&b).unwrap();
        assert_eq!(
            (p.pkeys[0], p.pkeys[1], p.pkeys[2]),
            (PKey(0xffff), PKey(0x8001), PKey(0))
        );
        p.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(GuidInfoRepr::parse(&b[..63]), Err(Error::Truncated));
        assert_eq!(PKeyTableRepr::parse(&b[..63]), Err(Error::Truncated));
    }

    // IBA 1 §14.2.5.8: SL 0 in the high nibble of byte 0; §14.2.5.9: Reserved(4) VL(4) Weight(8).
    #[test]
    fn sl2vl_and_vlarb_layout() {
        let b = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef];
        let s = SlToVlTableRepr::parse(&b).unwrap();
        assert_eq!(s.vls[0], 0);
        assert_eq!(s.vls[1], 1);
        assert_eq!(s.vls[15], 0xf);
        let mut out = [0u8; 8];
        s.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(SlToVlTableRepr::parse(&b[..7]), Err(Error::Truncated));
        let mut b = [0u8; 64];
        b[..4].copy_from_slice(&[0xf1, 0x20, 0x02, 0x40]);
        let v = VlArbTableRepr::parse(&b).unwrap();
        assert_eq!(
            v.entries[0],
            VlArbEntry {
                vl: 1,
                weight: 0x20
            }
        );
        assert_eq!(
            v.entries[1],
            VlArbEntry {
                vl: 2,
                weight: 0x40
            }
        );
        let mut out = [0u8; 64];
        v.emit(&mut out);
        assert_eq!(out[0], 0x01, "reserved nibble written as zero");
        assert_eq!(&out[1..4], &b[1..4]);
    }

    proptest! {
        #[test]
        fn round_trip(a: [u8; 32], c: [u8; 32]) {
            let mut b = [0u8; 64];
            b[..32].copy_from_slice(&a);
            b[32..].copy_from_slice(&c);
            let mut out = [0u8; 64];
            let n = NodeDescriptionRepr::parse(&b).unwrap();
            n.emit(&mut out);
            prop_assert_eq!(out, b);
            let g = GuidInfoRepr::parse(&b).unwrap();
            g.emit(&mut out);
            prop_assert_eq!(out, b);
            let p = PKeyTableRepr::parse(&b).unwrap();
            p.emit(&mut out);
            prop_assert_eq!(out, b);
            let s = SlToVlTableRepr::parse(&b).unwrap();
            s.emit(&mut out);
            prop_assert_eq!(&out[..8], &b[..8]);
            let v = VlArbTableRepr::parse(&b).unwrap();
            v.emit(&mut out);
            prop_assert_eq!(VlArbTableRepr::parse(&out).unwrap(), v);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..100)) {
            let mut c = Collect::default();
            if let Ok(r) = NodeDescriptionRepr::parse(&data) { r.describe(&mut c); }
            if let Ok(r) = GuidInfoRepr::parse(&data) { r.describe(&mut c); }
            if let Ok(r) = PKeyTableRepr::parse(&data) { r.describe(&mut c); }
            if let Ok(r) = SlToVlTableRepr::parse(&data) { r.describe(&mut c); }
            if let Ok(r) = VlArbTableRepr::parse(&data) { r.describe(&mut c); }
        }
    }
}
