//! SwitchInfoRecord (IBA 1 §15.2.5.5): the SwitchInfo of each switch, answered from the
//! SwitchInfo the SM read and set ([`crate::subnet::SubnetModel::switch_infos`]) as OpenSM
//! answers it (`osm_sa_sw_info_record.c`; docs/OPENSM-NOTES.md "Subnet records").

use super::records::{lid_in, At};
use super::{Req, SaServer};
use crate::time::Instant;
use ipoib_wire::sa::{swir_mask, SaAttribute, SwitchInfoRecordRepr};

impl SaServer {
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
}
