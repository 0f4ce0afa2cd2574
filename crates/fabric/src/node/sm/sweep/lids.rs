//! The LIDs a sweep keeps ([`SmpSm::known_lids`]): the SM's guid2lid table (which it may be
//! given at the start, [`SmpSm::with_guid2lid`]), and the LIDs the ports already have (OpenSM
//! `osm_lid_mgr.c` `lid_mgr_get_port_lid`).

use super::SmpSm;
use crate::node::sm::discover::Discovered;
use ipoib_wire::ib::lid::is_unicast_lid;
use ipoib_wire::Guid;
use std::collections::{BTreeMap, BTreeSet};

impl SmpSm {
    /// The SM with `table` as its guid2lid (port GUID to LID, a switch by its node GUID): every
    /// port in it gets that LID whatever the walk's order, as OpenSM restarted with its
    /// `guid2lid` file (`osm_lid_mgr.c`); the other ports get the lowest LIDs the table leaves
    /// free. Entries whose LID is not unicast are left out; two ports given one LID: the first in
    /// walk order has it ([`crate::node::sm::SubnetManager::with_lids`]).
    pub fn with_guid2lid(mut self, table: BTreeMap<Guid, u16>) -> SmpSm {
        self.guid2lid = table
            .into_iter()
            .filter(|&(_, l)| is_unicast_lid(l))
            .collect();
        self
    }

    /// The LIDs the brain keeps: every port in [`SmpSm::guid2lid`], and a port not in it the LID
    /// it answered in discovery when no other port holds that one (OpenSM `osm_lid_mgr.c`
    /// `lid_mgr_get_port_lid`: a port with no guid2lid entry keeps its PortInfo LID when free).
    /// A new master after a takeover or a handover so renumbers nothing: the hosts keep their
    /// addresses (a LID change is a normal flush of an IPoIB interface, docs/DEPLOYED.md).
    pub(super) fn known_lids(&self, d: &Discovered) -> BTreeMap<Guid, u16> {
        let mut known = self.guid2lid.clone();
        let mut taken: BTreeSet<u16> = known.values().copied().collect();
        let nodes = d.topology.nodes();
        for (n, ports) in d.port_infos.iter().enumerate() {
            let Some(node) = nodes.get(n) else { continue };
            let switch = node.kind == crate::hw::topology::NodeKind::Switch;
            for (p, i) in ports.iter().enumerate() {
                let (Some(i), Ok(p)) = (i, u8::try_from(p)) else {
                    continue;
                };
                // A switch has one LID, its port 0's.
                if (switch && p != 0) || !is_unicast_lid(i.lid) {
                    continue;
                }
                let guid = node.port_guid(p);
                if !known.contains_key(&guid) && taken.insert(i.lid) {
                    known.insert(guid, i.lid);
                }
            }
        }
        known
    }
}
