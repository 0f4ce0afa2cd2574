//! Port events the subnet manager causes after bring-up, for scenarios that exercise how hosts
//! react (draft-ietf-ipoib-ip-over-infiniband-06 port events; docs/DEPLOYED.md "Linux IPoIB"):
//!
//! - [`Subnet::sweep_port`]: what OpenSM's sweep does when a port comes back after its link went
//!   down (the switch's trap 128 triggers a sweep, `osm_state_mgr.c`): it writes the
//!   configuration of the switch port at the other end of its cable and then the port's own
//!   again, so both go from Init to Active (IBA 1 §7.2: a port in Init passes no data packet)
//!   and the port keeps the LID it had.
//! - [`Subnet::move_lid`]: the SM gives a port another LID (as after an SM restart with another
//!   LID plan): the switches' LFTs route the new LID where the old one went and drop the old
//!   one, the SA answers PathRecords with the new LID, then the port gets its new PortInfo.
//!
//! - [`Subnet::set_cable`]: a cable of the topology is pulled or plugged back in (the link goes
//!   down or up at once; both ends are told, so a switch sends trap 128, IBA 1 §14.2.5.1). Unlike
//!   the two above this is no SM's doing: whatever SM manages the subnet sees it as on hardware.
//!
//! The writes travel as configuration from the SM's host, in order (LFTs before the port, as at
//! bring-up). The SM's routing plan itself is not recomputed: multicast trees keep mapping members
//! to ports by their original LIDs, which still name the same ports in that plan.

use super::Subnet;
use crate::hw::mgmt::{Config, PortConfig};
use crate::hw::sim::PortRef;
use crate::hw::topology::NodeKind;
use crate::node::host::Host;
use ipoib_proto::sa::SaServer;
use ipoib_wire::ib::lid::is_unicast_lid;

/// Why [`Subnet::set_cable`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CableError {
    /// The topology has no such cable.
    #[error("no cable {0} in the topology")]
    NoSuchCable(usize),
}

/// Why [`Subnet::move_lid`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MoveLidError {
    /// No such host, or its port has no LID.
    #[error("no such port with a LID")]
    NoSuchPort,
    /// The new LID is not a unicast LID or is in use.
    #[error("LID {0:#x} is not free")]
    LidInUse(u16),
}

impl Subnet {
    /// The configuration the SM's plan gives host `i`'s host port.
    fn bring_up_port_config(&self, i: usize) -> Option<PortConfig> {
        let (node, port) = self.hosts.get(i).map(|h| (h.node, h.port))?;
        // Only our SM has a plan ([`super::SmMode::Ours`]).
        self.sm_app?;
        self.plan
            .bring_up()
            .into_iter()
            .find_map(|(to, c)| match c {
                Config::Port(pc) if to == node && pc.port == port => Some(pc),
                _ => None,
            })
    }

    /// Sends configuration writes from the SM's host.
    fn sm_writes(&mut self, writes: Vec<(crate::hw::sim::NodeId, Config)>) {
        let sm = self.hosts[0].node;
        self.sim.with_node::<Host, _>(sm, |_, _, tx| {
            for (to, c) in writes {
                tx.configure(to, c);
            }
        });
    }

    /// Writes host `i`'s port configuration again (with its current LID), as OpenSM's sweep does
    /// for a port whose link came back: the port becomes Active. False for no such host.
    pub fn sweep_port(&mut self, i: usize) -> bool {
        let Some(mut pc) = self.bring_up_port_config(i) else {
            return false;
        };
        let lid = self.lid(i);
        if lid != 0 {
            pc.lid = lid;
        }
        let (node, port) = (self.hosts[i].node, self.hosts[i].port);
        // The port at the other end of the cable trained again too and waits in Init: the sweep
        // makes it Active first, or it would pass no data packet of the host (IBA 1 §7.2).
        let peer = self
            .sim
            .link_of(PortRef { node, port })
            .map(|l| self.sim.link(l).ends)
            .and_then(|ends| ends.into_iter().find(|e| *e != PortRef { node, port }));
        let mut writes: Vec<_> = self
            .plan
            .bring_up()
            .into_iter()
            .filter(|(to, c)| {
                matches!(c, Config::Port(p) if peer == Some(PortRef { node: *to, port: p.port }))
            })
            .collect();
        writes.push((node, Config::Port(pc)));
        self.sm_writes(writes);
        true
    }

    /// Gives host `i`'s host port the LID `new_lid` (see the module docs).
    pub fn move_lid(&mut self, i: usize, new_lid: u16) -> Result<(), MoveLidError> {
        let old = self.lid(i);
        let mut pc = self
            .bring_up_port_config(i)
            .ok_or(MoveLidError::NoSuchPort)?;
        if old == 0 {
            return Err(MoveLidError::NoSuchPort);
        }
        let mut model = self.sa().subnet().clone();
        let free = is_unicast_lid(new_lid)
            && model.ports.iter().all(|p| p.lid != new_lid)
            && model.switches.iter().all(|s| s.lid != new_lid);
        if !free {
            return Err(MoveLidError::LidInUse(new_lid));
        }
        let moved = |lft: &mut Vec<u8>| {
            let out = lft.get(usize::from(old)).copied().unwrap_or(255);
            if lft.len() <= usize::from(new_lid) {
                lft.resize(usize::from(new_lid) + 1, 255);
            }
            lft[usize::from(new_lid)] = out;
            lft[usize::from(old)] = 255;
        };
        // The switches' tables as they are now, rerouted.
        let mut writes = Vec::new();
        for (n, node) in self.plan.topology().nodes().iter().enumerate() {
            if node.kind != NodeKind::Switch {
                continue;
            }
            let id = self.built.nodes[n];
            let Some(sw) = self.sim.node::<crate::hw::switch::Switch>(id) else {
                continue;
            };
            let mut lft = sw.lft().to_vec();
            moved(&mut lft);
            writes.push((id, Config::Lft(lft)));
            if let Some(s) = model.switches.iter_mut().find(|s| s.guid == node.guid) {
                moved(&mut s.lft);
            }
        }
        let guid = self
            .host_port(i)
            .map(|p| p.guid)
            .ok_or(MoveLidError::NoSuchPort)?;
        if let Some(p) = model.ports.iter_mut().find(|p| p.port_guid == guid) {
            p.lid = new_lid;
        }
        let sa = self.sa.ok_or(MoveLidError::NoSuchPort)?;
        let sm = self.hosts[0].node;
        self.sim.with_node::<Host, _>(sm, |h, _, _| {
            if let Some(s) = h.agent_mut::<SaServer>(sa) {
                s.set_subnet(model);
            }
        });
        pc.lid = new_lid;
        writes.push((self.hosts[i].node, Config::Port(pc)));
        self.sm_writes(writes);
        Ok(())
    }

    /// Whether cable `link` (an index into [`crate::hw::topology::Topology::links`]) is plugged
    /// in.
    pub fn cable_up(&self, link: usize) -> Option<bool> {
        let id = *self.built.links.get(link)?;
        Some(self.sim.link(id).plugged)
    }

    /// Pulls cable `link` (`up` false) or plugs it back in, now: both ends are told and the
    /// simulator runs to the present, so when this returns the ports are Down with
    /// PortPhysicalState Polling (pulled) or Init and LinkUp (plugged; IBA 1 §7.2: a trained link
    /// waits in Init for the SM), and a switch end has set PortStateChange and sent trap 128 to
    /// its master SM if it has a LID and knows the SM's (IBA 1 §14.2.5.1, §14.2.5.4). Returns
    /// whether the cable's state changed (pulling a pulled cable does nothing).
    pub fn set_cable(&mut self, link: usize, up: bool) -> Result<bool, CableError> {
        let id = *self
            .built
            .links
            .get(link)
            .ok_or(CableError::NoSuchCable(link))?;
        if self.sim.link(id).plugged == up {
            return Ok(false);
        }
        let now = self.sim.now();
        self.sim.schedule_link_state(id, now, up);
        self.sim.run_until(now);
        Ok(true)
    }
}
