//! Taking JoinState off a member, shared by a Leave (`mcast.rs`) and by a port that leaves the
//! subnet ([`SaServer::drop_port`]): OpenSM `osm_mgrp_remove_port` and `osm_mgrp_cleanup`.
//!
//! A port that is gone loses every membership, as OpenSM's drop manager deletes a port its sweep
//! no longer finds (`osm_drop_mgr.c` `drop_mgr_remove_port` -> `osm_port_delete` ->
//! `osm_mgrp_delete_port`): the groups' trees shrink, and a group left without full members goes
//! (unless well known), with trap 67 to its subscribers, as after a Leave.
//!
//! After each sweep ([`SaServer::new_sweep`]) the SM tells its subscribers which end ports left
//! the subnet (trap 65, GID out of service) and which came (trap 64, GID in service), IBA 1
//! §14.2.5.1 Table 130, as OpenSM does (`osm_drop_mgr.c` `drop_mgr_remove_port`, trap 65 before
//! the port is deleted, "C14-72.1.2"; `osm_state_mgr.c` `state_mgr_report_new_ports`, trap 64 for
//! each port found while the SM is master, "C14-72.1.1"). The first model has no trap 64: OpenSM
//! marks no port new in the sweep that makes it master (`osm_node_info_rcv.c`).

use super::mcast::is_full;
use super::SaServer;
use crate::sa::SaEvent;
use crate::subnet::SubnetModel;
use crate::time::Instant;
use ipoib_wire::mad::NoticeRepr;
use ipoib_wire::sa::JoinState;
use ipoib_wire::{Gid, Guid};
use std::collections::BTreeSet;

/// The end ports a model has in service, by GUID: CA ports and switches' port 0 given a LID.
fn in_service(model: &SubnetModel) -> BTreeSet<u64> {
    let cas = model
        .ports
        .iter()
        .filter(|p| p.lid != 0)
        .map(|p| p.port_guid.0);
    let switches = model
        .switches
        .iter()
        .filter(|s| s.lid != 0)
        .map(|s| s.guid.0);
    cas.chain(switches).collect()
}

impl SaServer {
    /// A sweep's new subnet model: trap 65 for each end port it no longer has in service (told
    /// while the old model still has the port, for the subscribers' access check), the model
    /// replaced ([`SaServer::set_subnet`]), every member port gone leaves its groups
    /// ([`SaServer::drop_ports_gone`]), then trap 64 for each end port new to it (none after the
    /// first model; module docs). Returns the ports out of and into service.
    pub fn new_sweep(&mut self, now: Instant, model: SubnetModel) -> (usize, usize) {
        let before = in_service(self.subnet());
        let after = in_service(&model);
        let prefix = self.subnet().subnet_prefix;
        for &guid in before.difference(&after) {
            let gid = Gid::new(prefix, guid);
            self.send_gid_trap(now, NoticeRepr::TRAP_GID_OUT_OF_SERVICE, gid);
        }
        self.set_subnet(model);
        self.drop_ports_gone(now);
        let came: Vec<u64> = if before.is_empty() {
            Vec::new()
        } else {
            after.difference(&before).copied().collect()
        };
        let prefix = self.subnet().subnet_prefix;
        for &guid in &came {
            self.send_gid_trap(now, NoticeRepr::TRAP_GID_IN_SERVICE, Gid::new(prefix, guid));
        }
        (before.difference(&after).count(), came.len())
    }

    /// Takes the `drop` bits off `port_gid`'s JoinState `held` in group `mgid` (OpenSM
    /// `osm_mgrp_remove_port`: the port keeps what is left only if that holds a full bit or the
    /// group has full members besides it; otherwise it goes, and the JoinState it keeps is 0,
    /// `opensm_diff` step 41: JoinState 5, leave 1 -> 0). A group left without full members
    /// loses every port, and goes unless well known (`osm_mgrp_cleanup`). Returns what the port
    /// keeps and the group's scope; `None` for no such group.
    pub(super) fn remove_join_state(
        &mut self,
        now: Instant,
        mgid: Gid,
        port_gid: Gid,
        held: u8,
        drop: u8,
    ) -> Option<(JoinState, u8)> {
        let left = held & !drop;
        let (lost_last_full, mlid, well_known, scope, kept) = {
            let g = self.mc.by_mgid.get_mut(&mgid)?;
            let was_full = usize::from(is_full(held));
            let keep = is_full(left) || (left != 0 && g.full > was_full);
            let kept = if keep { JoinState(left) } else { JoinState(0) };
            let lost_full = is_full(held) && !is_full(left);
            if lost_full {
                g.full = g.full.saturating_sub(1);
            }
            if kept.is_empty() {
                g.members.remove(&port_gid);
            } else if let Some(x) = g.members.get_mut(&port_gid) {
                x.join_state = kept;
            }
            (
                lost_full && g.full == 0,
                g.rec.mlid,
                g.well_known,
                g.rec.scope,
                kept,
            )
        };
        if lost_last_full {
            self.send_gid_trap(now, NoticeRepr::TRAP_MCAST_GROUP_DELETED, mgid);
            if let Some(g) = self.mc.by_mgid.get_mut(&mgid) {
                g.members.clear();
            }
            if !well_known {
                self.flush_dirty(&mgid);
                self.mc.by_mgid.remove(&mgid);
                self.mc.mlids.remove(mlid);
                self.push_event(SaEvent::GroupDeleted { mgid, mlid });
            } else {
                self.mark_dirty(mgid);
            }
        } else {
            self.mark_dirty(mgid);
        }
        Some((kept, scope))
    }

    /// The port `port_gid` left the subnet: it leaves every multicast group it is a member of
    /// (module docs). Returns the number of groups it was in. The SM learns the changes as
    /// [`SaServer::poll_event`] events, as after Leaves.
    pub fn drop_port(&mut self, now: Instant, port_gid: &Gid) -> usize {
        let groups: Vec<(Gid, u8)> = self
            .mc
            .by_mgid
            .iter()
            .filter_map(|(mgid, g)| {
                let m = g.members.get(port_gid)?;
                Some((*mgid, m.join_state.0 & 0x0f))
            })
            .collect();
        for &(mgid, held) in &groups {
            self.remove_join_state(now, mgid, *port_gid, held, held);
        }
        // Its alias GUIDs go with it (`alias_guids.rs`).
        self.aliases.forget(Guid(port_gid.interface_id()));
        groups.len()
    }

    /// Every member port the subnet model no longer has ([`SaServer::set_subnet`]: a sweep did
    /// not find it) leaves its groups ([`SaServer::drop_port`]), as OpenSM's drop manager
    /// removes each port its sweep no longer finds (module docs). Returns how many ports left.
    pub fn drop_ports_gone(&mut self, now: Instant) -> usize {
        let gone: BTreeSet<Gid> = self
            .mc
            .by_mgid
            .values()
            .flat_map(|g| g.members.keys())
            .filter(|gid| self.port_index_by_gid(gid).is_none())
            .copied()
            .collect();
        for gid in &gone {
            self.drop_port(now, gid);
        }
        gone.len()
    }
}
