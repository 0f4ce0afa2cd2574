//! The bring-up's SubnSets queued on the fields they change alone, so that a caller may hold
//! other parts of the [`super::SmpSm`] meanwhile (the P_Key tables are sent from the SM's copy
//! of them, IBA 1 §14.2.5.7, not from a clone).

use super::{dr_set, SmpRequester, SweepStats, Tag};
use ipoib_wire::smp::{PKeyTableRepr, SmpAttribute, PKEY_TABLE_BLOCK};
use ipoib_wire::PKey;

/// The fields a bring-up SubnSet changes, borrowed apart from the rest of the [`super::SmpSm`].
pub(super) struct Sets<'a> {
    pub(super) smp: &'a mut SmpRequester<Tag>,
    pub(super) wave: &'a mut usize,
    pub(super) stats: &'a mut SweepStats,
}

impl Sets<'_> {
    pub(super) fn set(self, attribute: SmpAttribute, modifier: u32, path: &[u8]) {
        *self.wave += 1;
        self.stats.sets += 1;
        let smp = dr_set(attribute, modifier, path);
        self.smp.submit(Tag::Set(smp.header.attribute_id, 1), &smp);
    }

    /// P_KeyTable blocks of one port (IBA 1 §14.2.5.7: a switch's AttributeModifier holds the
    /// port in bits 31-16, a CA's the block alone); an empty table as one empty block.
    pub(super) fn pkeys(self, path: &[u8], switch: bool, port: u8, pkeys: &[PKey]) {
        let blocks = pkeys.len().div_ceil(PKEY_TABLE_BLOCK).max(1);
        for b in 0..blocks {
            let chunk = pkeys
                .get(b * PKEY_TABLE_BLOCK..)
                .map_or(&[][..], |c| &c[..c.len().min(PKEY_TABLE_BLOCK)]);
            let mut t = PKeyTableRepr::default();
            t.pkeys[..chunk.len()].copy_from_slice(chunk);
            let modifier = if switch {
                u32::from(port) << 16 | b as u32
            } else {
                b as u32
            };
            let sets = Sets {
                smp: &mut *self.smp,
                wave: &mut *self.wave,
                stats: &mut *self.stats,
            };
            sets.set(SmpAttribute::PKeyTable(t), modifier, path);
        }
    }
}
