//! A tiny harness: one [`SaServer`], several [`SaClient`]s, a virtual clock, and MADs moved from
//! `poll_transmit` to `handle_mad` by destination LID (no simulator). A filter can drop MADs.

mod client;
mod mcast;
mod opensm;
mod path;

use super::*;
use crate::mad_agent::{MadAddr, MadAgent, MadIn, MadOut};
use crate::partitions::PartitionConfig;
use crate::rng::Rng;
use crate::subnet::{CaPort, Peer, SubnetModel, SwitchNode, SwitchPort};
use crate::time::Instant;
use ipoib_wire::mad::{MadStatus, SaStatus};
use ipoib_wire::sa::{mcr_mask, JoinState, McMemberRecordRepr, Mtu, Rate, SaMadRepr, Selector};
use ipoib_wire::{Gid, Guid};
use std::time::Duration;

pub(super) const SA_LID: u16 = 1;
pub(super) const SWITCH_LID: u16 = 200;

/// A CA port for the model: LID, GUID 0x1000 + LID, P_Keys.
pub(super) fn ca(lid: u16, pkeys: &[u16], mtu: u8, rate: u8, sw_port: u8) -> CaPort {
    CaPort {
        node_guid: Guid(0x1000 + u64::from(lid)),
        port_guid: Guid(0x1000 + u64::from(lid)),
        port_num: 1,
        lid,
        lmc: 0,
        mtu,
        rate,
        pkeys: pkeys.to_vec(),
        active: true,
        peer: Peer::Switch(0, sw_port),
        name: format!("h{lid}"),
    }
}

/// One switch; CA `i` on switch port `i + 1`. The SM is the first port (LID 1).
pub(super) fn star(ports: Vec<CaPort>) -> SubnetModel {
    let mut sw = vec![SwitchPort::default(); ports.len() + 1];
    let mut lft = vec![255u8; 256];
    for (i, p) in ports.iter().enumerate() {
        sw[i + 1] = SwitchPort {
            mtu: 5,
            rate: 7,
            peer: Peer::Ca(i),
        };
        lft[usize::from(p.lid)] = (i + 1) as u8;
    }
    SubnetModel {
        subnet_prefix: Gid::DEFAULT_SUBNET_PREFIX,
        sm_lid: SA_LID,
        ports,
        switches: vec![SwitchNode {
            guid: Guid(0xaaaa),
            lid: SWITCH_LID,
            ports: sw,
            lft,
            name: "sw".into(),
        }],
    }
}

/// The SM's port plus `n` hosts (LIDs 2..) in the default partition, MTU 4, rate 7 (40 Gb/s).
pub(super) fn default_model(n: u16) -> SubnetModel {
    let mut ports = vec![ca(SA_LID, &[0xffff], 4, 7, 1)];
    for i in 0..n {
        ports.push(ca(2 + i, &[0xffff], 4, 7, (i + 2) as u8));
    }
    star(ports)
}

pub(super) fn gid_of(lid: u16) -> Gid {
    Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x1000 + u64::from(lid))
}

/// Returns true to drop the MAD `(from LID, MAD)`.
pub(super) type Filter = Box<dyn FnMut(u16, &MadOut) -> bool>;

pub(super) struct Net {
    pub now: Instant,
    pub sa: SaServer,
    pub clients: Vec<(u16, SaClient)>,
    pub filter: Filter,
    /// Every MAD delivered: (time, from LID, MAD).
    pub log: Vec<(Instant, u16, MadOut)>,
    pub sa_events: Vec<SaEvent>,
    pub client_events: Vec<Vec<SaClientEvent>>,
}

impl Net {
    pub fn new(model: SubnetModel, parts: PartitionConfig, cfg: SaServerConfig, seed: u64) -> Net {
        let rng = Rng::new(seed);
        let lids: Vec<u16> = model.ports.iter().map(|p| p.lid).collect();
        let sa = SaServer::new(cfg, model, parts, rng.fork(0));
        let clients = lids
            .iter()
            .map(|&l| {
                (
                    l,
                    SaClient::new(SaClientConfig::default(), rng.fork(u64::from(l))),
                )
            })
            .collect();
        let mut n = Net {
            now: Instant::ZERO,
            sa,
            clients,
            filter: Box::new(|_, _| false),
            log: Vec::new(),
            sa_events: Vec::new(),
            client_events: vec![Vec::new(); lids.len()],
        };
        n.collect_events();
        n
    }

    pub fn default(hosts: u16) -> Net {
        Net::new(
            default_model(hosts),
            PartitionConfig::default_config(),
            SaServerConfig::default(),
            7,
        )
    }

    fn idx(&self, lid: u16) -> usize {
        self.clients
            .iter()
            .position(|(l, _)| *l == lid)
            .expect("client LID")
    }

    pub fn client(&mut self, lid: u16) -> &mut SaClient {
        let i = self.idx(lid);
        &mut self.clients[i].1
    }

    fn collect_events(&mut self) {
        while let Some(e) = self.sa.poll_event() {
            self.sa_events.push(e);
        }
        for (i, (_, c)) in self.clients.iter_mut().enumerate() {
            while let Some(e) = c.poll_event() {
                self.client_events[i].push(e);
            }
        }
    }

    /// Moves MADs until none is left; returns whether any moved.
    fn pump(&mut self) -> bool {
        let mut moved = false;
        loop {
            let mut batch: Vec<(u16, MadOut)> = Vec::new();
            while let Some(m) = self.sa.poll_transmit(self.now) {
                batch.push((SA_LID, m));
            }
            for (lid, c) in self.clients.iter_mut() {
                while let Some(m) = c.poll_transmit(self.now) {
                    batch.push((*lid, m));
                }
            }
            if batch.is_empty() {
                break;
            }
            for (from, m) in batch {
                moved = true;
                if (self.filter)(from, &m) {
                    continue;
                }
                self.log.push((self.now, from, m.clone()));
                let mi = MadIn {
                    from: MadAddr { lid: from, ..m.to },
                    mad: m.mad,
                };
                // The SA's own port hosts both the server and a client: requests and RMPP ACKs
                // (R bit clear) go to the server, responses and Reports to the client.
                // ReportResp answers the server's Report, so it goes to the server too.
                let method = mi.mad.get(3).copied().unwrap_or(0);
                let is_req = (method & 0x80 == 0 && method != 0x06) || method == 0x86;
                if m.to.lid == SA_LID && is_req {
                    self.sa.handle_mad(self.now, mi);
                } else if let Some(i) = self.clients.iter().position(|(l, _)| *l == m.to.lid) {
                    self.clients[i].1.handle_mad(self.now, mi);
                }
            }
            self.collect_events();
        }
        self.collect_events();
        moved
    }

    fn next_timeout(&self) -> Option<Instant> {
        let mut t = self.sa.poll_timeout();
        for (_, c) in &self.clients {
            t = match (t, c.poll_timeout()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        t
    }

    /// Runs until nothing is pending or `d` of virtual time has passed.
    pub fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        loop {
            self.pump();
            match self.next_timeout() {
                Some(t) if t <= end => {
                    self.now = self.now.max(t);
                    self.sa.handle_timeout(self.now);
                    for (_, c) in self.clients.iter_mut() {
                        c.handle_timeout(self.now);
                    }
                }
                _ => break,
            }
        }
        self.now = self.now.max(end.min(self.now));
    }

    /// Sends `mad` from the client at `lid` to the SA and runs until its outcome.
    pub fn ask(&mut self, lid: u16, mad: SaMadRepr) -> Result<SaResponse, SaClientError> {
        let now = self.now;
        let id = self.client(lid).request(now, mad, MadAddr::gsi(SA_LID));
        self.run_for(Duration::from_secs(60));
        let i = self.idx(lid);
        let pos = self.client_events[i]
            .iter()
            .position(|e| matches!(e, SaClientEvent::Response { id: x, .. } if *x == id))
            .expect("no outcome for request");
        match self.client_events[i].remove(pos) {
            SaClientEvent::Response { result, .. } => result,
            SaClientEvent::Report { .. } => unreachable!(),
        }
    }

    pub fn reports(&self, lid: u16) -> Vec<(u16, Gid)> {
        let i = self
            .clients
            .iter()
            .position(|(l, _)| *l == lid)
            .unwrap_or(0);
        self.client_events[i]
            .iter()
            .filter_map(|e| match e {
                SaClientEvent::Report { notice, .. } => Some((
                    notice.trap_number_or_device_id,
                    notice.trap_gid().unwrap_or(Gid::ZERO),
                )),
                _ => None,
            })
            .collect()
    }
}

pub(super) fn status(s: SaStatus) -> Result<SaResponse, SaClientError> {
    Err(SaClientError::Status(MadStatus::sa(s)))
}

/// A create-capable join record for `port` (IPoIB style: Q_Key 0x0b1b, P_Key 0xffff, SL 0).
pub(super) fn join_rec(mgid: Gid, port: Gid, js: JoinState) -> McMemberRecordRepr {
    McMemberRecordRepr {
        mgid,
        port_gid: port,
        q_key: 0x0b1b,
        p_key: 0xffff,
        tclass: 0,
        sl: 0,
        flow_label: 0,
        join_state: js,
        scope: 2,
        mtu_selector: Selector::Exactly,
        mtu: Mtu::Mtu2048,
        rate_selector: Selector::Exactly,
        rate: Rate::Gbps10,
        ..McMemberRecordRepr::default()
    }
}

pub(super) fn join(rec: McMemberRecordRepr, mask: u64) -> SaMadRepr {
    SaMadRepr::mcmember_join(0, rec, mask)
}

pub(super) fn leave(rec: McMemberRecordRepr, mask: u64) -> SaMadRepr {
    SaMadRepr::mcmember_leave(0, rec, mask)
}

pub(super) const CREATE: u64 = mcr_mask::CREATE;

pub(super) fn mgid(s: &str) -> Gid {
    Gid::from(s.parse::<std::net::Ipv6Addr>().expect("gid"))
}

pub(super) fn bcast() -> Gid {
    mgid("ff12:401b:ffff::ffff:ffff")
}
