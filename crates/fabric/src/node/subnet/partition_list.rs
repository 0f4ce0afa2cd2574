//! The partitions of a [`PartitionConfig`] as the SM and the hosts use them: the SM's partition
//! list resolved on a topology ([`partition_specs`]) and the IPoIB broadcast groups
//! ([`broadcast_groups`]).

use crate::hw::topology::{End, Topology};
use crate::node::sm::{PartitionMembers, PartitionSpec};
use ipoib_proto::partitions::{MemberSpec, PartitionConfig, PortId, PortKind};
use ipoib_wire::ipoib::mcast::has_broadcast_form;
use ipoib_wire::{Gid, PKey};

/// The IPoIB broadcast groups of `cfg` (P_Key with the full-member bit, MGID): the pre-created
/// groups with the broadcast MGID form `ff1S:401b:<pkey>::ffff:ffff`.
pub fn broadcast_groups(cfg: &PartitionConfig) -> Vec<(PKey, Gid)> {
    cfg.precreated_groups()
        .into_iter()
        .filter(|g| has_broadcast_form(&g.mgid))
        .map(|g| (g.pkey, g.mgid))
        .collect()
}

/// The SM's partition list for `cfg` on `topo`, in the P_Key table order OpenSM gives
/// ([`PartitionConfig::pkey_table`]: `indx0` partitions, the default partition, the others).
/// Partitions whose last CA member spec is `ALL`/`ALL_CAS` become [`PartitionMembers::All`];
/// others are resolved port by port with [`ipoib_proto::partitions::Partition::membership_of`],
/// and so are the switches' management ports 0 (`ALL`, `ALL_SWITCHES`, a switch's GUID) into
/// [`PartitionSpec::switches`].
/// `Both` counts as full ([`ipoib_proto::partitions::Membership::pkey`]). The SM port is a full member of every partition
/// whatever the file says (our SM's rule; OpenSM 3.3.23 makes it a full member of the default
/// partition only, and of the others as the file says: docs/OPENSM-NOTES.md "Diags on a fat
/// tree").
pub fn partition_specs(cfg: &PartitionConfig, topo: &Topology, sm_port: End) -> Vec<PartitionSpec> {
    let ordered = cfg
        .partitions
        .iter()
        .filter(|p| p.index0)
        .chain(
            cfg.partitions
                .iter()
                .filter(|p| !p.index0 && p.pkey.same_partition(PKey::DEFAULT)),
        )
        .chain(
            cfg.partitions
                .iter()
                .filter(|p| !p.index0 && !p.pkey.same_partition(PKey::DEFAULT)),
        );
    let mut out = Vec::new();
    for p in ordered {
        let ca_specs: Vec<_> = p
            .members
            .iter()
            .filter(|(s, _)| {
                !matches!(
                    s,
                    MemberSpec::SelfPort | MemberSpec::AllSwitches | MemberSpec::AllRouters
                )
            })
            .collect();
        // The last specifier naming a port decides its membership
        // (`Partition::membership_of`): when the last one for CAs is `ALL` or `ALL_CAS`, it
        // decides for every CA.
        let members = match ca_specs.last() {
            Some((MemberSpec::All | MemberSpec::AllCas, m)) => PartitionMembers::All(*m),
            _ => {
                let mut v = Vec::new();
                for n in topo.cas() {
                    let node = &topo.nodes()[n];
                    for port in 1..=node.ports {
                        let id = PortId {
                            guid: node.port_guid(port),
                            kind: PortKind::Ca,
                            is_sm: End { node: n, port } == sm_port,
                        };
                        if let Some(m) = p.membership_of(&id) {
                            v.push((id.guid, m));
                        }
                    }
                }
                PartitionMembers::Ports(v)
            }
        };
        let switches = topo
            .switches()
            .filter_map(|n| {
                let id = PortId {
                    guid: topo.nodes()[n].port_guid(0),
                    kind: PortKind::Switch,
                    is_sm: false,
                };
                p.membership_of(&id).map(|m| (id.guid, m))
            })
            .collect();
        out.push(PartitionSpec {
            pkey: p.pkey,
            members,
            switches,
        });
    }
    out
}
