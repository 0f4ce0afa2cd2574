//! The link's life: bring-up (draft-ietf-ipoib-ip-over-infiniband-06 §5: FullMember join of the
//! broadcast group, its parameters become the link's, carrier only after the join), port events
//! (docs/DEPLOYED.md "Linux IPoIB" and Linux `ipoib_event`/`__ipoib_ib_dev_flush`), and the SA
//! answers
//! and Reports that drive everything else.
//!
//! Port events, as Linux maps them:
//! - SM change and client reregister (IBA 1 §14.4.11, [`Interface::handle_port_event`]): light
//!   flush, once for both together (Linux queues one `flush_light` work): paths marked invalid (asked again on next
//!   use), every multicast group joined again at the new SA, trap subscriptions renewed (if needed,
//!   `traps`); the
//!   carrier stays up.
//! - LID change, port down or up: normal flush: carrier down, groups detached, paths and
//!   neighbours flushed (Linux flushes paths; the kernel flushes neighbours on carrier loss,
//!   `neigh_carrier_down`), then the broadcast join again.
//! - P_Key change: heavy flush: as normal; the link stays down while the P_Key is not in the
//!   port's table (§5: a node joins a partition only when the SM gave its port the P_Key).

use super::{
    BroadcastParams, DropReason, Interface, InterfaceEvent, Link, LogLevel, Pending, PortInfo,
};
use crate::mad_agent::MadAddr;
use crate::sa::SaClientEvent;
use crate::time::Instant;
use ipoib_wire::mad::Method;
use ipoib_wire::sa::{JoinState, McMemberRecordRepr, SaAttribute, SaMadRepr};
use ipoib_wire::{Gid, QKey};

/// How much a port event resets (Linux `enum ipoib_flush_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Flush {
    Light,
    Normal,
    Heavy,
}

fn usable(p: &PortInfo) -> bool {
    p.active && p.lid != 0 && p.pkey_index.is_some()
}

impl Interface {
    /// The port changed (or is reported for the first time).
    pub fn handle_port(&mut self, now: Instant, p: PortInfo) {
        self.handle_port_event(now, p, false);
    }

    /// The port changed, and with `client_reregister` the SM asked the port's clients to
    /// register again (PortInfo:ClientReregister, IBA 1 §14.4.11; Linux
    /// IB_EVENT_CLIENT_REREGISTER): a light flush on an interface that is up, as on an SM
    /// change: every group joined again and the trap subscriptions renewed at the (new) SA.
    pub fn handle_port_event(&mut self, now: Instant, p: PortInfo, client_reregister: bool) {
        self.port_changed(now, p, client_reregister);
        self.settle_deadline();
    }

    fn port_changed(&mut self, now: Instant, p: PortInfo, rereg: bool) {
        let old = self.port.replace(p);
        let was = old.as_ref().is_some_and(usable);
        match (old, was, usable(&p)) {
            (_, _, false) => {
                if self.link != Link::Down {
                    let why = if p.active && p.pkey_index.is_none() {
                        "P_Key not in the port's table"
                    } else if p.active {
                        "no LID"
                    } else {
                        "port down"
                    };
                    self.log(LogLevel::Info, format_args!("link down: {why}"));
                    self.flush(now, Flush::Heavy);
                    self.link = Link::Down;
                }
            }
            (_, false, true) => self.start(now),
            (Some(o), true, true) => {
                let level = if o.pkey_index != p.pkey_index || o.subnet_prefix != p.subnet_prefix {
                    Some(Flush::Heavy)
                } else if o.lid != p.lid {
                    Some(Flush::Normal)
                } else if o.sm_lid != p.sm_lid || o.sm_sl != p.sm_sl || rereg {
                    Some(Flush::Light)
                } else {
                    None
                };
                match level {
                    Some(Flush::Light) => {
                        let why = if rereg {
                            "client reregister"
                        } else {
                            "SM changed"
                        };
                        self.log(LogLevel::Info, format_args!("{why}: rejoining"));
                        self.flush(now, Flush::Light);
                    }
                    Some(l) => {
                        self.log(LogLevel::Info, format_args!("port event ({l:?} flush)"));
                        self.flush(now, l);
                        self.link = Link::Down;
                        self.start(now);
                    }
                    None => {}
                }
            }
            (None, true, true) => {}
        }
    }

    fn flush(&mut self, now: Instant, level: Flush) {
        if level == Flush::Light {
            self.paths.invalidate();
            self.mc_reset();
            self.traps_renew(now);
            self.mc_kick(now);
            return;
        }
        if self.link == Link::Up {
            self.events.push_back(InterfaceEvent::CarrierDown);
        }
        // RFC 4755 §3.4: connections are part of the interface and SHOULD go down with it.
        self.cm_teardown_all(now);
        let send_only = self.mc_send_only_held();
        self.mc_reset();
        let (lost, ids) = self.paths.flush();
        for id in ids {
            self.sa.cancel(id);
            self.requests.remove(&id);
        }
        let lost_n = self.neigh.flush();
        self.drop_count(DropReason::Flushed, lost + lost_n);
        for id in std::mem::take(&mut self.requests).into_keys() {
            self.sa.cancel(id);
        }
        self.traps_link_down();
        self.params = None;
        self.v6.stop_dad();
        // The reset forgets the groups held only for sending and joins them again only when the
        // next packet goes to one. While the port still reaches the SA (a LID or P_Key change, not
        // a port down) they are left there, as Linux's flush leaves every group (`ipoib_multicast.c`
        // `ipoib_mcast_dev_flush` → `ipoib_mcast_leave` → `ib_sa_free_multicast`): the SA does not
        // keep the port in groups it no longer sends to. Sent after the cancellations above.
        if self.port.as_ref().is_some_and(usable) {
            for (mgid, js) in send_only {
                self.send_leave(now, mgid, js);
            }
        }
    }

    /// A failed leave of `js` is sent again while `left` allows, as Linux's `leave_handler`
    /// (`core/multicast.c`) does, unless the port no longer reaches the SA or the interface holds,
    /// wants or is asking for one of those bits again (a leave then would undo the new join).
    fn leave_again(&mut self, now: Instant, mgid: Gid, js: JoinState, left: u8) {
        let again = self.mc.map.get(&mgid).is_some_and(|g| {
            let asked = g.query.map_or(0, |(_, s)| s.0);
            (g.have.0 | g.want().0 | asked) & js.0 != 0
        });
        if left > 0 && !again && self.port.as_ref().is_some_and(usable) {
            self.send_leave_try(now, mgid, js, left - 1);
        }
    }

    /// Bring-up (§5): every IPoIB interface MUST FullMember-join the broadcast group.
    fn start(&mut self, now: Instant) {
        self.link = Link::Joining;
        let b = self.bcast_mgid();
        self.mc_set_internal(now, b, true);
        self.mc_kick(now);
    }

    /// Where SA requests go: QP1 of the master SM, at its SL.
    pub(super) fn sa_dest(&self) -> MadAddr {
        let p = self.port.unwrap_or_default();
        MadAddr {
            sl: p.sm_sl,
            ..MadAddr::gsi(p.sm_lid)
        }
    }

    /// The broadcast group answered (§5: the join returns the MTU, the Q_Key and the other
    /// parameters, which the node associates with its interface; §7: link MTU = group MTU − 4).
    /// `group_mtu` is the record's MTU in bytes.
    pub(super) fn on_broadcast_joined(
        &mut self,
        _now: Instant,
        rec: McMemberRecordRepr,
        group_mtu: u32,
    ) {
        self.scope_backoff.reset();
        let mut mtu = group_mtu.saturating_sub(4);
        if let Some(m) = self.cfg.mtu {
            mtu = mtu.min(m);
        }
        let qkey_changed = self.params.map(|p| p.record.qkey) != Some(rec.qkey);
        self.params = Some(BroadcastParams { record: rec, mtu });
        if qkey_changed {
            // §9.1.2 b: the Q_Key of the broadcast group MUST be used for all IPoIB traffic.
            self.events.push_back(InterfaceEvent::SetQkey(rec.qkey));
        }
    }

    /// The broadcast group is joined: carrier up, then everything that needs the link.
    pub(super) fn link_up(&mut self, now: Instant) {
        self.link = Link::Up;
        self.events.push_back(InterfaceEvent::CarrierUp);
        self.log(
            LogLevel::Info,
            format_args!(
                "carrier up: mtu {} qkey {:#x} mlid {:#x}",
                self.mtu(),
                self.params.map(|p| p.record.qkey).unwrap_or(QKey(0)),
                self.params.map(|p| p.record.mlid).unwrap_or(0)
            ),
        );
        self.traps_sync(now);
        if self.cfg.router {
            self.request_group_table(now);
        }
        self.sync_groups(now);
        self.gratuitous_arp(now);
        self.ndisc_notify(now);
        self.mc_kick(now);
    }

    /// §12 A: a list of every multicast group (SubnAdmGetTable(MCMemberRecord), no components).
    fn request_group_table(&mut self, now: Instant) {
        let mad = SaMadRepr::request(
            Method::GetTable,
            0,
            0,
            SaAttribute::McMemberRecord(McMemberRecordRepr::default()),
        );
        let id = self.sa.request(now, mad, self.sa_dest());
        self.requests.insert(id, Pending::GroupTable);
    }

    /// Takes every answer and Report from the SA client.
    pub(super) fn process_sa(&mut self, now: Instant) {
        while let Some(ev) = self.sa.poll_event() {
            match ev {
                SaClientEvent::Response { id, result } => {
                    let Some(p) = self.requests.remove(&id) else {
                        continue;
                    };
                    if self.requests.is_empty() {
                        // An emptied B-tree keeps its leaf (300 bytes); an interface mostly
                        // has nothing asked (docs/benchmarks/subnet-rounds.md, "What a host
                        // holds").
                        self.requests = std::collections::BTreeMap::new();
                    }
                    match p {
                        Pending::Join(mgid, js) => self.on_join_result(now, mgid, js, result),
                        Pending::Leave(mgid, js, left) => {
                            if let Err(e) = result {
                                // §13: log every failed IB multicast operation.
                                self.log(
                                    LogLevel::Warn,
                                    format_args!("multicast leave {} failed: {e}", mgid.to_ipv6()),
                                );
                                self.leave_again(now, mgid, js, left);
                            }
                        }
                        Pending::Path(gid) => self.on_path_result(now, gid, id, result),
                        Pending::Inform(trap) => {
                            let ok = result.map(|_| ()).map_err(|e| e.to_string());
                            self.on_inform_result(now, trap, ok);
                        }
                        Pending::GroupTable => self.on_group_table(now, result),
                    }
                }
                SaClientEvent::Report { notice, .. } => {
                    if let (Some(trap), Some(mgid)) = (notice.trap_number(), notice.trap_gid()) {
                        if self.link != Link::Down && mgid.is_multicast() {
                            self.on_group_trap(now, trap, mgid);
                        }
                    }
                }
            }
        }
        self.traps_sync(now);
    }
}
