//! The harness of proto's scenario tests, with no simulator (quinn-proto's `Pair`, widened to a
//! subnet): one [`SaServer`] on the SM's port, endpoints that are [`MadAgent`]s (SA clients in
//! `sa::tests`, IPoIB interfaces in `ipoib::tests`) on the other ports of a one-switch
//! [`SubnetModel`], and a virtual clock that only jumps to the next timeout.
//!
//! [`Net::exchange`] moves one batch of MADs from `poll_transmit` to `handle_mad` by destination
//! LID: what the SA queued first, then each endpoint's in order. A filter can drop MADs; every MAD
//! that passes it is logged. Each suite adds what its endpoints need (UD datagrams for IPoIB) and
//! its own step, and runs it with [`Net::drive`].

use crate::ipoib::UdTransmit;
use crate::mad_agent::{MadAddr, MadAgent, MadIn, MadOut};
use crate::sa::{SaEvent, SaServer};
use crate::subnet::{CaPort, NodeFacts, Peer, SubnetModel, SwitchNode, SwitchPort};
use crate::time::Instant;
use ipoib_wire::{Gid, Guid, Mtu, Rate};
use std::time::Duration;

/// The SM's (and SA's) LID.
pub(crate) const SM_LID: u16 = 1;
/// The switch's LID.
pub(crate) const SWITCH_LID: u16 = 200;

/// One switch (GUID 0xaaaa, MTU 4096, rate 40 Gb/s on every port); CA `i` on switch port `i + 1`.
/// The SM's port is expected first.
pub(crate) fn star(ports: Vec<CaPort>) -> SubnetModel {
    let mut sw = vec![SwitchPort::default(); ports.len() + 1];
    let sw_ports = u8::try_from(ports.len()).unwrap_or(u8::MAX);
    let mut lft = vec![255u8; 256];
    for (i, p) in ports.iter().enumerate() {
        sw[i + 1] = SwitchPort {
            mtu: Mtu::Mtu4096,
            rate: Rate::Gbps40,
            peer: Peer::Ca(i),
        };
        lft[usize::from(p.lid)] = (i + 1) as u8;
    }
    SubnetModel {
        subnet_prefix: Gid::DEFAULT_SUBNET_PREFIX,
        sm_lid: SM_LID,
        ports,
        port_infos: Default::default(),
        switch_link_pkeys: Vec::new(),
        switch_port0_pkeys: Default::default(),
        sms: Vec::new(),
        sl2vl: Default::default(),
        vlarb: Default::default(),
        switch_infos: Default::default(),
        mfts: Default::default(),
        switches: vec![SwitchNode {
            guid: Guid(0xaaaa),
            lid: SWITCH_LID,
            ports: sw,
            lft,
            name: "sw".into(),
            node: NodeFacts {
                num_ports: sw_ports,
                system_image_guid: Guid(0xaaaa),
                partition_cap: 32,
                guid_cap: 1,
                ..NodeFacts::default()
            },
        }],
    }
}

/// An endpoint of the harness: a MAD agent on the port with [`Endpoint::lid`].
pub(crate) trait Endpoint: MadAgent {
    /// The LID MADs to it are addressed to, and it sends from.
    fn lid(&self) -> u16;
}

/// A UD datagram as it went on the wire.
#[derive(Debug, Clone)]
pub(crate) struct Sent {
    pub from: u16,
    pub t: UdTransmit,
}

/// Returns true to drop a MAD `(from LID, MAD)`.
pub(crate) type MadFilter = Box<dyn FnMut(u16, &MadOut) -> bool>;

/// The SA, the endpoints `E`, the clock, and what went between them.
pub(crate) struct Net<E> {
    pub now: Instant,
    pub sa: SaServer,
    pub hosts: Vec<E>,
    /// Returns true to drop a MAD `(from LID, MAD)`.
    pub filter: MadFilter,
    /// Every MAD that passed the filter: (time, from LID, MAD).
    pub log: Vec<(Instant, u16, MadOut)>,
    /// The SA's events.
    pub sa_events: Vec<SaEvent>,
    /// UD datagrams put on the wire (by IPoIB interfaces; SA clients send none).
    pub wire: Vec<Sent>,
}

impl<E: Endpoint> Net<E> {
    /// The clock at zero, nothing sent, no MAD dropped.
    pub fn with_hosts(sa: SaServer, hosts: Vec<E>) -> Net<E> {
        Net {
            now: Instant::ZERO,
            sa,
            hosts,
            filter: Box::new(|_, _| false),
            log: Vec::new(),
            sa_events: Vec::new(),
            wire: Vec::new(),
        }
    }

    /// Moves the MADs queued now, once: the SA's, then each endpoint's. Requests (and ReportResp,
    /// which answers the SA's Report) to the SM's LID reach the server; other MADs to it reach the
    /// endpoint on the SM's port if there is one (an SA client there shares the port with the
    /// server), the server otherwise. True if any MAD was queued.
    pub fn exchange(&mut self) -> bool {
        let now = self.now;
        let mut batch: Vec<(u16, MadOut)> = Vec::new();
        while let Some(m) = self.sa.poll_transmit(now) {
            batch.push((SM_LID, m));
        }
        for h in self.hosts.iter_mut() {
            let lid = h.lid();
            while let Some(m) = h.poll_transmit(now) {
                batch.push((lid, m));
            }
        }
        let moved = !batch.is_empty();
        let client_on_sm_port = self.hosts.iter().any(|h| h.lid() == SM_LID);
        for (from, m) in batch {
            if (self.filter)(from, &m) {
                continue;
            }
            self.log.push((now, from, m.clone()));
            let mi = MadIn {
                from: MadAddr { lid: from, ..m.to },
                mad: m.mad,
            };
            let method = mi.mad.get(3).copied().unwrap_or(0);
            let is_req = (method & 0x80 == 0 && method != 0x06) || method == 0x86;
            if m.to.lid == SM_LID && (is_req || !client_on_sm_port) {
                self.sa.handle_mad(now, mi);
            } else if let Some(h) = self.hosts.iter_mut().find(|h| h.lid() == m.to.lid) {
                h.handle_mad(now, mi);
            }
        }
        moved
    }

    /// The earliest timeout of the SA and the endpoints.
    pub fn next_timeout(&self) -> Option<Instant> {
        self.hosts
            .iter()
            .filter_map(|h| h.poll_timeout())
            .chain(self.sa.poll_timeout())
            .min()
    }

    /// Runs `step` until it reports nothing moved, then jumps the clock to the next timeout and
    /// runs the timers (the SA's, then each endpoint's), while that timeout is within `d`. The
    /// clock stays at the last timeout run.
    pub fn drive(&mut self, d: Duration, mut step: impl FnMut(&mut Self) -> bool) {
        let end = self.now + d;
        let mut guard = 0;
        loop {
            while step(self) {
                guard += 1;
                assert!(guard < 100_000, "no progress");
            }
            match self.next_timeout() {
                Some(t) if t <= end => {
                    self.now = self.now.max(t);
                    let now = self.now;
                    self.sa.handle_timeout(now);
                    for h in self.hosts.iter_mut() {
                        h.handle_timeout(now);
                    }
                }
                _ => break,
            }
        }
    }
}
