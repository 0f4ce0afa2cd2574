//! What `ipoib show --fabric` reads from the fabric process's control socket
//! (`<run dir>/fabric-<port>.sock`): its slots as hosts (`hosts` view: identity, LID, the peer
//! holding it), and counters (`counters` view): one section per slot of what its identity checks
//! dropped (docs/UDP-FABRIC.md "Protocol"), the fabric's own (garbage datagrams, unknown
//! sessions, attaches, detaches, silence timeouts, queue drops), the socket's, and those of our
//! SM and SA (`sm`, `sa`) when the fabric runs them. The interface
//! views (`neigh`, `paths`, ...) have no rows: the fabric runs no IPoIB interface.

use super::FabricEmu;
use crate::control::{AnswerError, Request, View};
use crate::show::{sa_section, sm_section, Answer, CounterSection, HostShow, SlotEntry};
use ipoib_fabric::hw::switch::Switch;
use ipoib_fabric::hw::topology::NodeKind;
use std::collections::BTreeMap;

/// The name of the slot of topology node `ca`.
pub fn slot_name(ca: usize) -> String {
    format!("ca{ca}")
}

/// The M_KeyViolations of the slot's SMA on the host's port (PortInfo, IBA 1 §14.2.5.6: SMPs
/// with a wrong M_Key that the protection level refused, §14.2.4; saturating at 65,535, and
/// an SM may write it back to 0).
fn slot_mkey_violations(r: &ipoib_fabric::node::remote::Remote) -> u64 {
    r.sma()
        .port(r.port())
        .map_or(0, |p| u64::from(p.mkey.violations))
}

impl FabricEmu {
    /// The M_KeyViolations of every switch (port 0's PortInfo, IBA 1 §14.2.5.6), summed.
    fn switch_mkey_violations(&self) -> u64 {
        let server = &self.server;
        let nodes = server.topology().nodes();
        (nodes.iter().zip(&server.built().nodes))
            .filter(|(t, _)| t.kind == NodeKind::Switch)
            .filter_map(|(_, &n)| server.sim().node::<Switch>(n))
            .map(|s| u64::from(s.mkey_guard().violations))
            .sum()
    }

    /// The answer to a control request.
    pub(super) fn answer(&self, req: &Request) -> Result<Answer, AnswerError> {
        let server = &self.server;
        let peers: BTreeMap<usize, String> =
            server.peers().map(|(a, i)| (i, a.to_string())).collect();
        let mut hosts = Vec::new();
        for i in 0..server.slot_count() {
            let (Some(r), Some(ca)) = (server.slot(i), server.slot_topo_node(i)) else {
                continue;
            };
            let name = slot_name(ca);
            if req.host.as_ref().is_some_and(|h| *h != name) {
                continue;
            }
            let c = r.counters();
            let mut h = HostShow::new(name);
            match req.view {
                View::Hosts => {
                    h.slot = Some(SlotEntry {
                        node_guid: r.node_guid(),
                        port_guid: r.port_guid(),
                        lid: r.lid(),
                        peer: peers.get(&i).cloned(),
                        from_host: c.from_host,
                        to_host: c.to_host,
                        dropped: c.dropped_from_host(),
                    })
                }
                View::Counters => {
                    let mut s = CounterSection::new("slot");
                    s.push("attached", u64::from(peers.contains_key(&i)))
                        .push("lid", u64::from(r.lid()))
                        .push("from_host", c.from_host)
                        .push("to_host", c.to_host)
                        .push("malformed", c.malformed)
                        .push("management", c.management)
                        .push("link_down", c.link_down)
                        .push("port_not_active", c.port_not_active)
                        .push("unconfigured", c.unconfigured)
                        .push("spoofed_lid", c.spoofed_lid)
                        .push("spoofed_gid", c.spoofed_gid)
                        .push("bad_pkey", c.bad_pkey)
                        .push("unattached", c.unattached)
                        .push("queue_full", c.queue_full)
                        .push("other_port", c.other_port)
                        .push("to_host_not_armed", c.to_host_not_armed)
                        .push("buffer_full", c.buffer_full)
                        .push("smps", c.smps)
                        .push("mkey_violations", slot_mkey_violations(r));
                    h.counters.push(s);
                }
                _ => {}
            }
            hosts.push(h);
        }
        if let Some(name) = &req.host {
            if hosts.is_empty() {
                let names: Vec<String> = (0..server.slot_count())
                    .filter_map(|i| server.slot_topo_node(i).map(slot_name))
                    .collect();
                return Err(AnswerError::no_such_host(name, &names));
            }
        }
        let mut sections = Vec::new();
        if req.view == View::Counters && req.host.is_none() {
            let c = server.counters();
            let mut s = CounterSection::new("fabric");
            s.push("datagrams", c.datagrams)
                .push("malformed", c.malformed)
                .push("bad_version", c.bad_version)
                .push("unknown_session", c.unknown_session)
                .push("unexpected", c.unexpected)
                .push("no_cookie", c.no_cookie)
                .push("bad_cookie", c.bad_cookie)
                .push("attached", c.attached)
                .push("reattached", c.reattached)
                .push("accepts_resent", c.accepts_resent)
                .push("rejected", c.rejected)
                .push("detached", c.detached)
                .push("timed_out", c.timed_out)
                .push("transmit_full", c.transmit_full)
                .push("memberships_dropped", c.memberships_dropped)
                .push("sequenced_sessions", c.sequenced_sessions)
                .push("control_acks", c.control_acks)
                .push("control_resent", c.control_resent)
                .push("control_dropped", c.control_dropped)
                .push("hosts_attached", peers.len() as u64)
                .push("switch_mkey_violations", self.switch_mkey_violations());
            sections.push(s);
            let mut s = CounterSection::new("udp");
            s.push("received", self.io.received)
                .push("sent", self.io.sent)
                .push("send_errors", self.io.send_errors)
                .push("net_errors", self.io.net_errors);
            sections.push(s);
            if let (Some(smp), Some(app)) = (server.smp_sm(), server.sm_app()) {
                sections.push(sm_section(smp, &app.stats()));
            }
            if let Some(sa) = server.sa() {
                sections.push(sa_section(sa.stats()));
            }
            if let Some(c) = &self.ibsim {
                sections.push(c.get().section());
            }
        }
        Ok(Answer { hosts, sections })
    }
}
