//! The records of the ports' QoS tables: SLtoVLMappingTableRecord (IBA 1 §15.2.5.4) and
//! VLArbitrationTableRecord (§15.2.5.9), answered from the tables the SM wrote
//! ([`crate::subnet::SubnetModel::sl2vl`], [`crate::subnet::SubnetModel::vlarb`]; all zero
//! where it wrote none) as OpenSM answers them (`osm_sa_slvl_record.c`, `osm_sa_vlarb_record.c`;
//! docs/OPENSM-NOTES.md "Subnet records").
//!
//! Both are read-only (Get and GetTable, as [`SaServer::get_or_table`]), need no SM_Key, list
//! nodes in node-GUID order, give a switch's records the LID of its port 0, and list a port only
//! to a requester sharing a P_Key with it ([`SaServer::visible`]). A component-mask LID names any
//! LID of a port's range; a LID no port has gives no records (a Get: ERR_NO_RECORDS), and so does
//! a port number a switch does not have, where OpenSM 3.3.23 reads past its port table
//! (docs/IBSIM.md "OpenSM's QoS table records on ibsim").

use super::records::{lid_in, At, Phys};
use super::{Req, SaServer};
use crate::time::Instant;
use ipoib_wire::sa::{slvlr_mask, vlar_mask, SaAttribute, SlToVlRecordRepr, VlArbRecordRepr};

/// VLArbitrationTable blocks (IBA 1 §14.2.5.9): low-priority entries 0-31 and 32-63, then the
/// high-priority ones.
const VL_ARB_BLOCKS: std::ops::RangeInclusive<u8> = 1..=4;

impl SaServer {
    /// The ports of the nodes the component mask's LID names (every node without it), by node
    /// GUID and port number; every port of a switch goes with its port 0.
    fn qos_nodes(&self, by_lid: bool, lid: u16) -> Vec<Vec<Phys>> {
        let mut nodes: Vec<Vec<Phys>> = Vec::new();
        for p in self.model().phys_ports() {
            match nodes.last_mut() {
                Some(n) if matches!(p.at, At::Switch(_)) && n[0].at == p.at => n.push(p),
                _ => nodes.push(vec![p]),
            }
        }
        nodes.retain(|n| !by_lid || lid_in(n[0].lid, n[0].lmc, lid));
        nodes
    }

    /// SLtoVLMappingTableRecord (OpenSM `osm_slvl_rec_rcv_process`): a CA port gives one
    /// record, InputPortNum and OutputPortNum 0 (IBA 1 §15.2.5.4: they apply to switches only),
    /// whatever the mask says of them; a switch one per (output port, input port) pair of its
    /// ports 0 to N, by output then input port, the mask's OutputPortNum and InputPortNum
    /// narrowing them. A switch's record is listed if its output port is visible.
    pub(super) fn sl_to_vl_record(&mut self, now: Instant, req: &Req<'_>, q: SlToVlRecordRepr) {
        if !self.get_or_table(req) {
            return;
        }
        let mask = req.mad.sa.component_mask;
        let model = self.model();
        let table = |p: &Phys, input: u8| {
            let key = (p.node_guid, p.num, input);
            model.sl2vl.get(&key).copied().unwrap_or_default()
        };
        let mut recs = Vec::new();
        for node in self.qos_nodes(mask & slvlr_mask::LID != 0, q.lid) {
            if let At::Ca(_) = node[0].at {
                if self.visible(req, &node[0]) {
                    recs.push(SlToVlRecordRepr {
                        lid: node[0].lid,
                        in_port: 0,
                        out_port: 0,
                        table: table(&node[0], 0),
                    });
                }
                continue;
            }
            for out in &node {
                if mask & slvlr_mask::OUT_PORT != 0 && out.num != q.out_port {
                    continue;
                }
                for input in node.iter().map(|p| p.num) {
                    if mask & slvlr_mask::IN_PORT != 0 && input != q.in_port {
                        continue;
                    }
                    if self.visible(req, out) {
                        recs.push(SlToVlRecordRepr {
                            lid: out.lid,
                            in_port: input,
                            out_port: out.num,
                            table: table(out, input),
                        });
                    }
                }
            }
        }
        let recs = recs.into_iter().map(SaAttribute::SlToVlRecord).collect();
        self.respond_records(now, req, recs);
    }

    /// VLArbitrationTableRecord (OpenSM `osm_vlarb_rec_rcv_process`): blocks 1 to 4 of every
    /// visible port, by port then block, the mask's BlockNum narrowing them; a switch's ports 0
    /// to N, the mask's OutputPortNum naming one (a number past the switch's ports: none); a CA
    /// its own port, whatever the mask's OutputPortNum says (OpenSM sets the bit and the number
    /// to the CA's port).
    pub(super) fn vl_arb_record(&mut self, now: Instant, req: &Req<'_>, q: VlArbRecordRepr) {
        if !self.get_or_table(req) {
            return;
        }
        let mask = req.mad.sa.component_mask;
        let model = self.model();
        let mut recs = Vec::new();
        for node in self.qos_nodes(mask & vlar_mask::LID != 0, q.lid) {
            let ca = matches!(node[0].at, At::Ca(_));
            for p in &node {
                let named = ca || mask & vlar_mask::OUT_PORT == 0 || p.num == q.port;
                if !named || !self.visible(req, p) {
                    continue;
                }
                for block in VL_ARB_BLOCKS {
                    if mask & vlar_mask::BLOCK != 0 && block != q.block {
                        continue;
                    }
                    let key = (p.node_guid, p.num, block);
                    recs.push(SaAttribute::VlArbRecord(VlArbRecordRepr {
                        lid: p.lid,
                        port: p.num,
                        block,
                        table: model.vlarb.get(&key).copied().unwrap_or_default(),
                    }));
                }
            }
        }
        self.respond_records(now, req, recs);
    }
}
