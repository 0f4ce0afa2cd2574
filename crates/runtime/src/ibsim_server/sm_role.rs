//! The SM role of a host's port for ibsim clients (ibsim `sim_ctl_set_issm`, a CONNECT with
//! issm): which client gets the SA's requests, SMInfo and Traps arriving there. One SM per node:
//! a second beside a live one is refused (told, module `refusal`), a vanished one (Unix) gives
//! way at once; in UDP mode, where a vanished client cannot be told from a live one, the latest
//! asker gets the role and the one it took it from gets it back when it gives it up or leaves
//! (docs/IBSIM.md "ibsim (server side)").

use super::{Client, IbsimNet, IbsimServer, Listen};
use ipoib_fabric::node::host::{method_mask, Registration, UmadError};
use ipoib_wire::mad::{Method, MgmtClass};

impl IbsimServer {
    /// True when an SM already runs on `host`: ours, or an SM client.
    pub(super) fn sm_exists(&self, host: usize) -> bool {
        self.cfg.sm_hosts.contains(&host) || self.clients.values().any(|c| c.host == host && c.issm)
    }

    /// [`IbsimServer::sm_exists`], once an SM client of `host` that vanished is dropped (its
    /// input socket gone, as [`IbsimServer::probe`] finds it). An SM killed outright (SIGKILL)
    /// sends no DISCONNECT, and the SM started in its place asks for the role at once, before
    /// the next probe: refused then, it ran as an SM that never got the SA's requests (answered
    /// status 0x000C by the host, docs/IBSIM.md), so hosts asked to register again after its
    /// first sweep found no SA (docs/UDP-FABRIC.md "An external SM").
    pub(super) fn sm_exists_alive(&mut self, net: &mut impl IbsimNet, host: usize) -> bool {
        let gone: Vec<u32> = self
            .clients
            .iter()
            .filter(|(&slot, c)| c.host == host && c.issm && self.vanished(slot, c))
            .map(|(&s, _)| s)
            .collect();
        for slot in gone {
            self.counters.vanished += 1;
            self.drop_client(net, slot);
        }
        self.sm_exists(host)
    }

    /// Whether client `slot`'s input socket is gone (Unix: connecting to its name again is
    /// refused; UDP cannot tell).
    pub(super) fn vanished(&self, slot: u32, c: &Client) -> bool {
        matches!(self.cfg.listen, Listen::Unix { .. })
            && self.slots.get(slot as usize).is_some_and(|s| {
                s.connect_client(&self.cfg.listen, c.tag, &c.ctl_from)
                    .is_err()
            })
    }

    /// UDP mode: takes the SM role of `host` from the SM clients holding it, for client `slot`
    /// that asks for it. Whether a UDP client is gone cannot be told without writing to it (no
    /// connect is refused; an ICMP error shows only after a datagram), and ibsim itself grants
    /// SET_ISSM whoever holds the role (`ibsim/ibsim.c` `sim_ctl_set_issm`, docs/IBSIM.md): so
    /// the latest asker gets the role, and an OpenSM restarted after a SIGKILL is not refused
    /// while the dead one holds it. The former holder stays attached as an ordinary client, and
    /// gets the role back when the asker gives it up or leaves
    /// ([`IbsimServer::give_back_sm_role`]).
    fn hand_over_sm_role(&mut self, net: &mut impl IbsimNet, host: usize, slot: u32) {
        let holders: Vec<u32> = self
            .clients
            .iter()
            .filter(|(&s, c)| s != slot && c.host == host && c.issm)
            .map(|(&s, _)| s)
            .collect();
        for holder in holders {
            if self.set_issm(net, holder, false) {
                self.counters.sm_handovers += 1;
                self.displaced.insert(slot, holder);
            }
        }
    }

    /// Gives the SM role back to `before`, the client it was taken from (UDP mode,
    /// [`IbsimServer::hand_over_sm_role`]), now that the client that took it gave it up (SET_ISSM
    /// 0) or left: an SM asks for the role once, when it opens its `issm` device (`umad2sim.c`),
    /// so a live one it was taken from would otherwise run on without the SA's requests for good
    /// (ibsim hands the requests to the SM client of the lowest slot, so it never loses them,
    /// docs/IBSIM.md). A `before` that vanished meanwhile gets them as any SM client would.
    pub(super) fn give_back_sm_role(&mut self, net: &mut impl IbsimNet, before: Option<u32>) {
        if let Some(b) = before.filter(|b| self.clients.get(b).is_some_and(|c| !c.issm)) {
            self.set_issm(net, b, true);
        }
    }

    /// Forgets client `slot`, which leaves, in the record of displaced SM clients: what it had
    /// displaced, returned, now counts as displaced by whoever had displaced it.
    pub(super) fn forget_displaced(&mut self, slot: u32) -> Option<u32> {
        let before = self.displaced.remove(&slot);
        let by: Vec<u32> = self
            .displaced
            .iter()
            .filter(|(_, &d)| d == slot)
            .map(|(&k, _)| k)
            .collect();
        for k in by {
            // Never a client displaced by itself (it took the role back from the one leaving).
            match before.filter(|&b| b != k) {
                Some(b) => self.displaced.insert(k, b),
                None => self.displaced.remove(&k),
            };
        }
        before
    }

    /// Makes client `slot` its host's SM or not: the SM receives the SA's requests (SubnAdm,
    /// class version 2), SMP Traps (IBA 1 §14.2.5.1) and SMInfo Get/Set (LID-routed or directed
    /// route) arriving at the port, and the QP1 requests of any other class that no agent of the
    /// host serves, as ibsim hands its SM client what it does not answer itself.
    pub(super) fn set_issm(&mut self, net: &mut impl IbsimNet, slot: u32, on: bool) -> bool {
        let Some(c) = self.clients.get(&slot).cloned() else {
            return false;
        };
        if on == c.issm {
            return true;
        }
        if on && matches!(self.cfg.listen, Listen::Udp { .. }) {
            self.hand_over_sm_role(net, c.host, slot);
        }
        if on && self.sm_exists_alive(net, c.host) {
            return false;
        }
        let port = net.host(c.host).port;
        let regs = [
            Registration {
                class: MgmtClass::SubnAdm,
                version: 2,
                methods: method_mask(&[
                    Method::Get,
                    Method::Set,
                    Method::Send,
                    Method::GetTable,
                    Method::GetTraceTable,
                    Method::GetMulti,
                    Method::Delete,
                ]),
            },
            Registration {
                class: MgmtClass::SubnLid,
                version: 1,
                // IBA 1 §14.2.5.13: SMInfo Get/Set from another SM or from `sminfo` (the
                // HCA's SMA hands LID-routed SMInfo to QP0 while the port has an SM client).
                methods: method_mask(&[Method::Get, Method::Set, Method::Trap]),
            },
            Registration {
                class: MgmtClass::SubnDirectedRoute,
                version: 1,
                // The same by directed route (IBA 1 §14.2.2: at the end of its path the SMP is
                // for the port's SM), as `sminfo -D` sends it.
                methods: method_mask(&[Method::Get, Method::Set]),
            },
        ];
        let ok = net
            .with_host(c.host, |h, _| {
                // IBA 1 §14.2.5.6: the port says IsSM while an SM runs on it (Linux: while the
                // `issm` device is open, docs/DEPLOYED.md).
                h.hca_mut().set_sm_client(port, on);
                if !on {
                    h.umad_unregister(c.agent);
                    return Ok(());
                }
                // ibsim `find_client`: every other request to QP0/QP1 that ibsim does not
                // answer itself goes to the port's SM client too (a vendor class's, `ibping
                // -S`'s, docs/IBSIM.md); here those no agent of the host serves.
                let r: Result<(), UmadError> = regs
                    .iter()
                    .try_for_each(|r| h.umad_register(c.agent, *r))
                    .and_then(|()| h.umad_take_unclaimed(c.agent, true));
                if r.is_err() {
                    h.umad_unregister(c.agent);
                    h.hca_mut().set_sm_client(port, false);
                }
                r
            })
            .is_some_and(|r| r.is_ok());
        if ok {
            if let Some(c) = self.clients.get_mut(&slot) {
                c.issm = on;
            }
        }
        ok
    }
}
