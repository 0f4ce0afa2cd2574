//! The SA's scenario tests: one [`SaServer`] and several [`SaClient`]s on the harness of
//! `crate::testing` (a virtual clock, MADs moved from `poll_transmit` to `handle_mad` by
//! destination LID, no simulator). A filter can drop MADs.

mod alias_guids;
mod client;
mod gone;
mod limits;
mod mcast;
mod mcast_pkey;
mod mft_records;
mod notices;
mod opensm;
mod path;
mod qos_records;
mod records;
mod services;
mod sm_records;
mod small_events;
mod switch_records;

use super::*;
use crate::mad_agent::{MadAddr, MadAgent, MadIn, MadOut};
use crate::partitions::PartitionConfig;
use crate::rng::Rng;
use crate::subnet::{CaPort, NodeFacts, Peer, SubnetModel, SwitchPort};
use crate::testing::{self, Endpoint};
use crate::time::Instant;
use ipoib_wire::mad::{MadStatus, SaStatus};
use ipoib_wire::sa::{mcr_mask, JoinState, McMemberRecordRepr, Mtu, Rate, SaMadRepr, Selector};
use ipoib_wire::{Gid, Guid};
use ipoib_wire::{PKey, QKey};
use std::time::Duration;

pub(super) use crate::testing::{star, SM_LID as SA_LID};

/// A CA port for the model: LID, GUID 0x1000 + LID, P_Keys.
pub(super) fn ca(lid: u16, pkeys: &[u16], mtu: u8, rate: u8, sw_port: u8) -> CaPort {
    CaPort {
        node_guid: Guid(0x1000 + u64::from(lid)),
        port_guid: Guid(0x1000 + u64::from(lid)),
        port_num: 1,
        lid,
        lmc: 0,
        mtu: Mtu::from(mtu),
        rate: Rate::from(rate),
        pkeys: pkeys.iter().map(|&k| PKey(k)).collect(),
        active: true,
        peer: Peer::Switch(0, sw_port),
        name: format!("h{lid}"),
        node: NodeFacts {
            num_ports: 1,
            system_image_guid: Guid(0x1000 + u64::from(lid)),
            partition_cap: 128,
            guid_cap: 1,
            ..NodeFacts::default()
        },
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

/// [`default_model`] of 3 hosts with partitions Default (every port) and blue (0x0002: the SM's
/// port and host 3, full members), each port's P_Key table as the partitions give it.
pub(super) fn blue_partition() -> (SubnetModel, PartitionConfig) {
    partitioned_model(
        3,
        "Default=0x7fff,ipoib : ALL=full ;\nblue=0x0002,ipoib : 0x1003=full, 0x1001=full ;",
    )
}

/// [`default_model`] of `hosts` hosts with the partitions of the partitions.conf text `conf`,
/// each port's P_Key table as they give it.
pub(super) fn partitioned_model(hosts: u16, conf: &str) -> (SubnetModel, PartitionConfig) {
    let parts = crate::partitions::parse(conf).expect("partitions");
    let mut model = default_model(hosts);
    for p in model.ports.iter_mut() {
        p.pkeys = parts.pkey_table(&crate::partitions::PortId {
            guid: p.port_guid,
            kind: crate::partitions::PortKind::Ca,
            is_sm: p.lid == SA_LID,
        });
    }
    (model, parts)
}

pub(super) fn gid_of(lid: u16) -> Gid {
    Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x1000 + u64::from(lid))
}

/// An SA client on the port with `lid`, and the events it reported.
pub(super) struct SaHost {
    pub lid: u16,
    pub client: SaClient,
    pub events: Vec<SaClientEvent>,
}

impl MadAgent for SaHost {
    fn handle_mad(&mut self, now: Instant, mad: MadIn) {
        self.client.handle_mad(now, mad);
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<MadOut> {
        self.client.poll_transmit(now)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.client.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.client.handle_timeout(now);
    }
}

impl Endpoint for SaHost {
    fn lid(&self) -> u16 {
        self.lid
    }
}

/// The SA and a client on every port of the model (the SA's port too).
pub(super) type Net = testing::Net<SaHost>;

impl testing::Net<SaHost> {
    pub fn new(model: SubnetModel, parts: PartitionConfig, cfg: SaServerConfig, seed: u64) -> Net {
        let rng = Rng::new(seed);
        let lids: Vec<u16> = model.ports.iter().map(|p| p.lid).collect();
        let sa = SaServer::new(cfg, model, parts, rng.fork(0));
        let clients = lids
            .iter()
            .map(|&l| SaHost {
                lid: l,
                client: SaClient::new(SaClientConfig::default(), rng.fork(u64::from(l))),
                events: Vec::new(),
            })
            .collect();
        let mut n = Net::with_hosts(sa, clients);
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
        self.hosts
            .iter()
            .position(|h| h.lid == lid)
            .expect("client LID")
    }

    pub fn client(&mut self, lid: u16) -> &mut SaClient {
        let i = self.idx(lid);
        &mut self.hosts[i].client
    }

    fn collect_events(&mut self) {
        while let Some(e) = self.sa.poll_event() {
            self.sa_events.push(e);
        }
        for h in self.hosts.iter_mut() {
            while let Some(e) = h.client.poll_event() {
                h.events.push(e);
            }
        }
    }

    /// Moves MADs until none is left; returns whether any moved.
    fn pump(&mut self) -> bool {
        let mut moved = false;
        while self.exchange() {
            moved = true;
            self.collect_events();
        }
        self.collect_events();
        moved
    }

    /// Runs until nothing is pending or `d` of virtual time has passed.
    pub fn run_for(&mut self, d: Duration) {
        self.drive(d, Net::pump);
    }

    /// Sends `mad` from the client at `lid` to the SA and runs until its outcome.
    pub fn ask(&mut self, lid: u16, mad: SaMadRepr) -> Result<SaResponse, SaClientError> {
        let now = self.now;
        let id = self.client(lid).request(now, mad, MadAddr::gsi(SA_LID));
        self.run_for(Duration::from_secs(60));
        let i = self.idx(lid);
        let pos = self.hosts[i]
            .events
            .iter()
            .position(|e| matches!(e, SaClientEvent::Response { id: x, .. } if *x == id))
            .expect("no outcome for request");
        match self.hosts[i].events.remove(pos) {
            SaClientEvent::Response { result, .. } => result,
            SaClientEvent::Report { .. } => unreachable!(),
        }
    }

    pub fn reports(&self, lid: u16) -> Vec<(u16, Gid)> {
        let i = self.hosts.iter().position(|h| h.lid == lid).unwrap_or(0);
        self.hosts[i]
            .events
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

/// The records a successful request `q` from `from` got: a Get's one attribute, a GetTable's
/// list (the record tests' common step).
pub(super) fn ask_records(
    net: &mut Net,
    from: u16,
    m: ipoib_wire::mad::Method,
    mask: u64,
    q: ipoib_wire::sa::SaAttribute,
) -> Vec<ipoib_wire::sa::SaAttribute> {
    let r = net
        .ask(from, SaMadRepr::request(m, 0, mask, q))
        .expect("success");
    match r.attribute {
        Some(a) if r.records.is_empty() && m == ipoib_wire::mad::Method::Get => vec![a],
        _ => r.records,
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
        qkey: QKey(0x0b1b),
        pkey: PKey(0xffff),
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
