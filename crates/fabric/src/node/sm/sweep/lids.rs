//! The LIDs a sweep keeps ([`SmpSm::known_lids`]): the SM's guid2lid table, and the LIDs the
//! ports already have (OpenSM `osm_lid_mgr.c` `lid_mgr_get_port_lid`).

use super::SmpSm;
use crate::node::sm::discover::Discovered;
use ipoib_wire::ib::lid::is_unicast_lid;
use ipoib_wire::Guid;
use std::collections::{BTreeMap, BTreeSet};

impl SmpSm {
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
