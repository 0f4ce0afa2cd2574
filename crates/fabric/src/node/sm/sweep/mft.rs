//! The SM's copy of the switches' MulticastForwardingTables (IBA 1 §14.2.5.12) and the blocks
//! it sets from it. The copy is kept by switch node GUID, not by the node's place in a
//! discovery: each discovery numbers its nodes in GUID order (`crate::node::sm::discover`), so a
//! node that appears or goes (a host cable plugged or pulled) moves the switches after it.

use super::{MftCopyBlock, SmpSm, Tag};
use crate::node::sm::smp::dr_set;
use ipoib_wire::ib::lid::LID_MULTICAST_FIRST;
use ipoib_wire::smp::{MftBlockRepr, SmpAttribute, MFT_BLOCK_MLIDS, MFT_POSITION_PORTS};
use ipoib_wire::Guid;

impl SmpSm {
    /// Sets `mlid`'s MFT entry of the switch with node GUID `switch` to `ports`; the changed
    /// blocks go out with the next SMPs. Nothing for a switch the last discovery did not find.
    pub fn set_mft(&mut self, switch: Guid, mlid: u16, ports: &[u8]) {
        let Some(index) = mlid.checked_sub(LID_MULTICAST_FIRST).map(usize::from) else {
            return;
        };
        let Some(&(_, nports)) = self.switches.get(&switch) else {
            return;
        };
        let block = (index / MFT_BLOCK_MLIDS) as u16;
        let slot = index % MFT_BLOCK_MLIDS;
        let positions = usize::from(nports) / MFT_POSITION_PORTS + 1;
        for position in 0..positions as u8 {
            let lo = usize::from(position) * MFT_POSITION_PORTS;
            let mask = ports
                .iter()
                .map(|&p| usize::from(p))
                .filter(|p| (lo..lo + MFT_POSITION_PORTS).contains(p))
                .fold(0u16, |m, p| m | 1 << (p - lo));
            let masks = self
                .mft
                .entry((switch, block, position))
                .or_insert([0; MFT_BLOCK_MLIDS]);
            if masks[slot] != mask {
                masks[slot] = mask;
                self.mft_dirty.insert((switch, block, position));
            }
        }
    }

    /// The SM's copy of the MFTs from switch `from.0`'s block `from.1` on, in order: (switch
    /// node GUID, block, position) and the PortMasks it last set there (the SA's MFT records
    /// give them).
    pub fn mft_blocks(&self, from: (Guid, u16)) -> impl Iterator<Item = MftCopyBlock<'_>> {
        self.mft.range((from.0, from.1, 0)..).map(|(&k, m)| (k, m))
    }

    pub(super) fn send_mft_block(&mut self, key: (Guid, u16, u8)) {
        let (guid, block, position) = key;
        let (Some(masks), Some((path, _))) = (self.mft.get(&key), self.switches.get(&guid)) else {
            return;
        };
        let attr = SmpAttribute::MulticastForwardingTable(MftBlockRepr { port_masks: *masks });
        let modifier = u32::from(position) << 28 | u32::from(block);
        self.stats.mft_sets += 1;
        let smp = dr_set(attr, modifier, &path.clone());
        self.smp.submit(Tag::Set(smp.header.attribute_id, 1), &smp);
    }

    /// Drops the copy of every switch the last discovery did not find: one that comes back
    /// (perhaps reset) has all its entries set again.
    pub(super) fn forget_absent_mfts(&mut self) {
        let present = |k: &(Guid, u16, u8)| self.switches.contains_key(&k.0);
        self.mft.retain(|k, _| present(k));
        self.mft_dirty.retain(present);
    }
}
