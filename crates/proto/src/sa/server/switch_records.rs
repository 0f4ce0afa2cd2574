//! SwitchInfoRecord (IBA 1 §15.2.5.5): the SwitchInfo of each switch, answered from the
//! SwitchInfo the SM read and set ([`crate::subnet::SubnetModel::switch_infos`]) as OpenSM
//! answers it (`osm_sa_sw_info_record.c`); MulticastForwardingTableRecord (IBA 1 §15.2.5.8):
//! the MFT blocks the SM wrote ([`crate::subnet::SubnetModel::mfts`]) as OpenSM answers them
//! (`osm_sa_mft_record.c`). docs/OPENSM-NOTES.md "Subnet records".

use super::records::{lid_in, At};
use super::{Req, SaServer};
use crate::time::Instant;
use ipoib_wire::sa::{mftr_mask, swir_mask, MftRecordRepr, SaAttribute, SwitchInfoRecordRepr};
use ipoib_wire::smp::{MftBlockRepr, MFT_BLOCK_MLIDS, MFT_POSITION_PORTS};
use ipoib_wire::Guid;

impl SaServer {
    /// Block `block`, position `position` of the MFT of switch `guid` as the SM wrote it after
    /// the model was given (IBA 1 §15.2.5.8: the records follow the tables the SM sets; OpenSM's
    /// SA answers from the copy its multicast manager writes, `osm_mcast_mgr.c`).
    pub fn set_mft_block(&mut self, guid: Guid, block: u16, position: u8, table: MftBlockRepr) {
        self.model.mfts.insert((guid, block, position), table);
    }

    /// Switch `guid`'s SwitchInfo:MulticastFDBTop as its MFT now holds it (IBA 1 §14.2.5.4), for
    /// its SwitchInfoRecord: OpenSM's copy of a switch's SwitchInfo takes every SwitchInfo it
    /// reads, so its record follows the switch's top from the next light sweep on
    /// (docs/OPENSM-MFT.md). A switch whose SwitchInfo the SA does not hold stays without one.
    pub fn set_multicast_fdb_top(&mut self, guid: Guid, top: u16) {
        if let Some(si) = self.model.switch_infos.get_mut(&guid) {
            si.multicast_fdb_top = top;
        }
    }

    /// SwitchInfoRecord (OpenSM `osm_sir_rcv_process`): read-only (Get and GetTable, as
    /// [`SaServer::get_or_table`]), no SM_Key; one record per switch whose SwitchInfo the SM
    /// holds, by node GUID, LID the base LID of its port 0. The mask's LID names a switch by any
    /// LID of its port 0's range; LID 0 with the bit set names none. A switch is listed only to
    /// a requester sharing a P_Key with its port 0 ([`SaServer::visible`]). The other fields of
    /// the request select nothing (OpenSM looks at the LID alone).
    pub(super) fn switch_info_record(
        &mut self,
        now: Instant,
        req: &Req<'_>,
        q: SwitchInfoRecordRepr,
    ) {
        if !self.get_or_table(req) {
            return;
        }
        let by_lid = req.mad.sa.component_mask & swir_mask::LID != 0;
        let model = self.model();
        let mut recs = Vec::new();
        for p in self.model().phys_ports() {
            if !matches!(p.at, At::Switch(_)) || p.num != 0 {
                continue;
            }
            let Some(si) = model.switch_infos.get(&p.node_guid) else {
                continue;
            };
            if (by_lid && !lid_in(p.lid, p.lmc, q.lid)) || !self.visible(req, &p) {
                continue;
            }
            recs.push(SaAttribute::SwitchInfoRecord(SwitchInfoRecordRepr {
                lid: p.lid,
                switch_info: *si,
            }));
        }
        self.respond_records(now, req, recs);
    }

    /// MulticastForwardingTableRecord (OpenSM `osm_mftr_rcv_process`): read-only, no SM_Key;
    /// switches by node GUID, only those whose SwitchInfo the SM holds with a MulticastFDBCap
    /// (`osm_switch_supports_mcast`) and a block written (OpenSM's `max_block_in_use` is not
    /// -1). Of each, every block from 0 to the highest written (an unwritten one all zero) and
    /// every position from 0 to the last that covers its ports 0..=N (OpenSM `max_position`,
    /// from NumPorts + 1), block-major; LID its port 0's base LID. The mask's LID names a switch
    /// by any LID of port 0's range; its BlockNum and Position name one block or position, none
    /// past the highest; the reserved bits select nothing. A switch is listed only to a
    /// requester sharing a P_Key with its port 0.
    pub(super) fn mft_record(&mut self, now: Instant, req: &Req<'_>, q: MftRecordRepr) {
        if !self.get_or_table(req) {
            return;
        }
        let mask = req.mad.sa.component_mask;
        let model = self.model();
        let mut recs = Vec::new();
        for p in self.model().phys_ports() {
            let At::Switch(s) = p.at else { continue };
            let guid = p.node_guid;
            if p.num != 0
                || model
                    .switch_infos
                    .get(&guid)
                    .is_none_or(|si| si.multicast_fdb_cap == 0)
                || (mask & mftr_mask::LID != 0 && !lid_in(p.lid, p.lmc, q.lid))
                || !self.visible(req, &p)
            {
                continue;
            }
            let written = model.mfts.range((guid, 0, 0)..=(guid, u16::MAX, u8::MAX));
            let Some(top) = written.map(|(&(_, b, _), _)| b).max() else {
                continue;
            };
            let last_position = (model.switches[s].ports.len().max(1) - 1) / MFT_POSITION_PORTS;
            let last_position = last_position as u8;
            let blocks = match mask & mftr_mask::BLOCK != 0 {
                true if q.block > top => continue,
                true => q.block..=q.block,
                false => 0..=top,
            };
            let positions = match mask & mftr_mask::POSITION != 0 {
                true if q.position > last_position => continue,
                true => q.position..=q.position,
                false => 0..=last_position,
            };
            for block in blocks {
                for position in positions.clone() {
                    let table =
                        model
                            .mfts
                            .get(&(guid, block, position))
                            .copied()
                            .unwrap_or(MftBlockRepr {
                                port_masks: [0; MFT_BLOCK_MLIDS],
                            });
                    recs.push(SaAttribute::MftRecord(MftRecordRepr {
                        lid: p.lid,
                        position,
                        block,
                        table,
                    }));
                }
            }
        }
        self.respond_records(now, req, recs);
    }
}
