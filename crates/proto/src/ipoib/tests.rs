//! Scenario tests of the IPoIB interface, with no simulator: a few [`Interface`]s and an in-test SA
//! ([`SaServer`] over a small hand-built [`SubnetModel`]) on the harness of `crate::testing`, plus
//! an in-test "UD fabric" that moves each [`UdTransmit`] to the interface whose LID and QPN match,
//! or to every interface attached to the MGID (attachments tracked from `Attach`/`Detach` events),
//! with a virtual clock that only jumps to the next timeout (quinn-proto's `Pair::drive`). The
//! fabric is deliberately lax: it does not filter P_Keys or Q_Keys, so the interface's own checks
//! are what the tests see, and it loops multicast back to the sender as an HCA does.
//!
//! Each host has a tiny IP layer: it records delivered packets and answers ICMP echo requests.

mod bringup;
mod connected;
mod flush;
mod ipv4;
mod ipv6;
mod joins;
mod legacy;
mod mcast;
mod security;
mod traps;

use super::*;
use crate::mad_agent::{MadAgent, MadIn, MadOut};
use crate::partitions::PartitionConfig;
use crate::rng::Rng;
use crate::sa::{SaServer, SaServerConfig};
use crate::subnet::{CaPort, Peer, SubnetModel};
use crate::testing::{self, star, Endpoint};
use ipoib_wire::ipoib::{
    Icmpv4Repr, Icmpv4Type, Icmpv6Repr, Icmpv6Type, IpPayload, IpProtocol, Ipv4Datagram,
    Ipv4Packet, Ipv4Repr, Ipv6Datagram, Ipv6Packet, Ipv6Repr,
};
use ipoib_wire::sa::{SaAttribute, SaMadRepr};
use ipoib_wire::{Mtu, Rate};
use std::collections::BTreeSet;
use std::time::Duration;

pub(super) use crate::testing::{Sent, SM_LID};
pub(super) const BCAST: Gid = Gid([
    0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
]);

pub(super) fn guid(lid: u16) -> Guid {
    Guid(0x0002_c903_0000_0000 + u64::from(lid))
}

pub(super) fn qpn(lid: u16) -> u32 {
    0x48 + u32::from(lid)
}

/// The interface of the host with `lid`: its GUID, QPN and 10.0.0.x/24 address, P_Key `pkey`.
pub(super) fn host_config(lid: u16, pkey: u16) -> InterfaceConfig {
    let mut c = InterfaceConfig::new(guid(lid), qpn(lid));
    c.pkey = PKey(pkey);
    c.ipv4 = Some(Ipv4Config {
        addr: v4(lid),
        prefix_len: 24,
        gateway: None,
    });
    c
}

/// The default partition and P1 (0x0001), both with an IPoIB broadcast group, every port full.
pub(super) fn default_and_p1() -> PartitionConfig {
    crate::partitions::parse("Default=0x7fff, ipoib : ALL=full ;\nP1=0x0001, ipoib : ALL=full ;")
        .expect("partitions")
}

pub(super) fn v4(lid: u16) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, lid as u8)
}

fn ca(name: u16, lid: u16, pkeys: &[u16], sw_port: u8) -> CaPort {
    CaPort {
        node_guid: guid(name),
        port_guid: guid(name),
        port_num: 1,
        lid,
        lmc: 0,
        mtu: Mtu::Mtu2048,
        rate: Rate::Gbps40,
        pkeys: pkeys.iter().map(|&k| PKey(k)).collect(),
        active: true,
        peer: Peer::Switch(0, sw_port),
        name: format!("h{lid}"),
        node: crate::subnet::NodeFacts::default(),
    }
}

/// One switch, the SM's port (LID 1) and the hosts `(name, LID, P_Keys)`.
fn model(hosts: &[(u16, u16, Vec<u16>)]) -> SubnetModel {
    let mut ports = vec![ca(SM_LID, SM_LID, &[0xffff], 1)];
    for (i, (name, lid, pk)) in hosts.iter().enumerate() {
        ports.push(ca(*name, *lid, pk, (i + 2) as u8));
    }
    star(ports)
}

pub(super) struct Host {
    /// The host's name in the tests (its first LID; routing uses `port.lid`).
    pub lid: u16,
    pub pkeys: Vec<u16>,
    pub iface: Interface,
    pub port: PortInfo,
    pub events: Vec<InterfaceEvent>,
    pub delivered: Vec<Vec<u8>>,
    pub attached: BTreeSet<Gid>,
    pub qkey: QKey,
    pub echo: bool,
}

impl Host {
    pub fn logs(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                InterfaceEvent::Log(LogLevel::Warn, m) => Some(m.clone()),
                _ => None,
            })
            .collect()
    }
    pub fn ready(&self) -> Vec<Ipv6Addr> {
        self.events
            .iter()
            .filter_map(|e| match e {
                InterfaceEvent::AddressReady(a) => Some(*a),
                _ => None,
            })
            .collect()
    }
}

impl MadAgent for Host {
    fn handle_mad(&mut self, now: Instant, mad: MadIn) {
        self.iface.handle_mad(now, mad);
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<MadOut> {
        self.iface.poll_mad(now)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.iface.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.iface.handle_timeout(now);
    }
}

impl Endpoint for Host {
    /// Routing uses the port's LID, which [`Net::relid`] can change.
    fn lid(&self) -> u16 {
        self.port.lid
    }
}

/// The SA and the IPoIB hosts.
pub(super) type Net = testing::Net<Host>;

impl testing::Net<Host> {
    /// Hosts with LIDs 2.. in the default partition, IPv4 10.0.0.<lid>/24, IPv6 on.
    pub fn new(n: u16) -> Net {
        Net::with(n, |_, _| {})
    }

    /// As [`Net::new`], `tweak` adjusting each host's configuration.
    pub fn with(n: u16, tweak: impl Fn(u16, &mut InterfaceConfig)) -> Net {
        let hosts: Vec<(u16, InterfaceConfig)> = (0..n)
            .map(|i| {
                let lid = 2 + i;
                let mut c = host_config(lid, 0xffff);
                tweak(lid, &mut c);
                (lid, c)
            })
            .collect();
        Net::custom(hosts, PartitionConfig::default_config(), &[])
    }

    /// Hosts with given configurations; `pkeys` gives a host's P_Key table (default `[0xffff]`).
    pub fn custom(
        hosts: Vec<(u16, InterfaceConfig)>,
        parts: PartitionConfig,
        pkeys: &[(u16, Vec<u16>)],
    ) -> Net {
        let table = |lid: u16| {
            pkeys
                .iter()
                .find(|(l, _)| *l == lid)
                .map(|(_, t)| t.clone())
                .unwrap_or_else(|| vec![0xffff])
        };
        let m = model(
            &hosts
                .iter()
                .map(|(l, _)| (*l, *l, table(*l)))
                .collect::<Vec<_>>(),
        );
        let rng = Rng::new(42);
        let sa = SaServer::new(SaServerConfig::default(), m, parts, rng.fork(0));
        let hosts = hosts
            .into_iter()
            .map(|(lid, cfg)| {
                let t = table(lid);
                let pkey_index = t
                    .iter()
                    .position(|&k| PKey(k).same_partition(cfg.pkey))
                    .map(|i| i as u16);
                Host {
                    lid,
                    pkeys: t.clone(),
                    iface: Interface::new(cfg, rng.fork(u64::from(lid))),
                    port: PortInfo {
                        lid,
                        sm_lid: SM_LID,
                        sm_sl: 0,
                        subnet_prefix: Gid::DEFAULT_SUBNET_PREFIX,
                        active: true,
                        pkey_index,
                        mtu: Mtu::Mtu4096,
                    },
                    events: Vec::new(),
                    delivered: Vec::new(),
                    attached: BTreeSet::new(),
                    qkey: QKey(0),
                    echo: true,
                }
            })
            .collect();
        Net::with_hosts(sa, hosts)
    }

    pub fn idx(&self, lid: u16) -> usize {
        self.hosts
            .iter()
            .position(|h| h.lid == lid)
            .expect("host LID")
    }

    pub fn host(&mut self, lid: u16) -> &mut Host {
        let i = self.idx(lid);
        &mut self.hosts[i]
    }

    pub fn iface(&mut self, lid: u16) -> &mut Interface {
        &mut self.host(lid).iface
    }

    /// Reports every port as configured and runs until idle (at most 30 s).
    pub fn up(&mut self) {
        for h in self.hosts.iter_mut() {
            h.iface.handle_port(self.now, h.port);
        }
        self.run_for(Duration::from_secs(30));
    }

    /// Gives host `lid` a new LID: the SM's model follows, then the port event.
    pub fn relid(&mut self, lid: u16, new: u16) {
        let mut lids: Vec<(u16, u16, Vec<u16>)> = self
            .hosts
            .iter()
            .map(|h| (h.lid, h.port.lid, h.pkeys.clone()))
            .collect();
        let i = self.idx(lid);
        lids[i].1 = new;
        self.sa.set_subnet(model(&lids));
        self.port(lid, |p| p.lid = new);
    }

    /// The SM and SA restart (as an `ipoib fabric` started again): the new SA serves the same
    /// subnet and partitions but holds no membership and no subscription; no port is told.
    pub fn restart_sa(&mut self) {
        let lids: Vec<(u16, u16, Vec<u16>)> = self
            .hosts
            .iter()
            .map(|h| (h.lid, h.port.lid, h.pkeys.clone()))
            .collect();
        let parts = self.sa.partitions().clone();
        self.sa = SaServer::new(SaServerConfig::default(), model(&lids), parts, Rng::new(43));
    }

    /// Tells host `lid` its port changed.
    pub fn port(&mut self, lid: u16, f: impl FnOnce(&mut PortInfo)) {
        let now = self.now;
        let h = self.host(lid);
        f(&mut h.port);
        let p = h.port;
        h.iface.handle_port(now, p);
    }

    /// Host `lid`'s port says ClientReregister (IBA 1 §14.4.11), nothing else changed.
    pub fn client_reregister(&mut self, lid: u16) {
        let now = self.now;
        let h = self.host(lid);
        let p = h.port;
        h.iface.handle_port_event(now, p, true);
    }

    /// Host `lid`'s IP layer joins `group`.
    pub fn join(&mut self, lid: u16, group: IpAddr) -> Result<(), InterfaceError> {
        let now = self.now;
        self.iface(lid).join_group(now, group)
    }

    /// Host `lid`'s IP layer leaves `group`.
    pub fn leave(&mut self, lid: u16, group: IpAddr) -> Result<(), InterfaceError> {
        let now = self.now;
        self.iface(lid).leave_group(now, group)
    }

    /// Sends an IP packet from host `lid`'s IP layer.
    pub fn send(&mut self, lid: u16, packet: &[u8]) {
        let now = self.now;
        self.iface(lid).send_ip(now, packet);
    }

    fn collect_events(&mut self) -> bool {
        let mut moved = false;
        let now = self.now;
        for h in self.hosts.iter_mut() {
            while let Some(e) = h.iface.poll_event() {
                moved = true;
                match &e {
                    InterfaceEvent::Attach { mgid, .. } => {
                        h.attached.insert(*mgid);
                    }
                    InterfaceEvent::Detach { mgid, .. } => {
                        h.attached.remove(mgid);
                    }
                    InterfaceEvent::SetQkey(q) => h.qkey = *q,
                    InterfaceEvent::Deliver(p) => {
                        h.delivered.push(p.to_vec());
                        if h.echo {
                            if let Some(r) = echo_reply(&h.iface, p) {
                                h.iface.send_ip(now, &r);
                            }
                        }
                    }
                    _ => {}
                }
                h.events.push(e);
            }
        }
        moved
    }

    fn deliver_ud(&mut self, from: usize, t: UdTransmit) {
        let src = &self.hosts[from];
        let (slid, sqpn, sgid, spkey) = (
            src.port.lid,
            src.iface.config().qpn,
            src.iface.gid(),
            src.iface.config().pkey,
        );
        let rx = |t: &UdTransmit| UdReceived {
            src_qpn: sqpn,
            slid,
            sl: t.sl,
            grh: t.grh.map(|g| RecvGrh {
                sgid,
                dgid: g.gid,
                tclass: g.tclass,
                flow_label: g.flow_label,
                hop_limit: g.hop_limit,
            }),
            pkey: spkey,
            qkey: t.qkey,
            data: t.data.clone(),
        };
        let now = self.now;
        if t.dlid >= 0xc000 {
            // IBA 1 §10.5.2: a multicast send needs a GRH; its DGID names the group.
            let g = t.grh.expect("multicast without GRH").gid;
            assert_eq!(t.remote_qpn, 0xff_ffff);
            for h in self.hosts.iter_mut().filter(|h| h.attached.contains(&g)) {
                h.iface.handle_datagram(now, rx(&t));
            }
        } else if let Some(h) = self
            .hosts
            .iter_mut()
            .find(|h| h.port.lid == t.dlid && h.iface.config().qpn == t.remote_qpn)
        {
            h.iface.handle_datagram(now, rx(&t));
        }
    }

    /// Moves everything once; true if anything moved.
    fn step(&mut self) -> bool {
        let now = self.now;
        let mut moved = self.collect_events();
        moved |= self.exchange();
        while let Some(e) = self.sa.poll_event() {
            self.sa_events.push(e);
        }
        // Attachments first: an HCA attaches before the datagrams queued after the Attach go out.
        moved |= self.collect_events();
        let mut uds = Vec::new();
        for (i, h) in self.hosts.iter_mut().enumerate() {
            while let Some(t) = h.iface.poll_transmit(now) {
                uds.push((i, t));
            }
        }
        for (i, t) in uds {
            moved = true;
            self.wire.push(Sent {
                from: self.hosts[i].port.lid,
                t: t.clone(),
            });
            self.deliver_ud(i, t);
        }
        moved | self.collect_events()
    }

    /// Runs until idle or until `d` of virtual time passed; the clock ends at `now + d`.
    pub fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        self.drive(d, Net::step);
        self.now = end;
    }

    /// Runs without advancing the clock (everything that can happen now).
    pub fn settle(&mut self) {
        while self.step() {}
    }

    /// Datagrams sent by `lid` since index `from` of the wire log.
    pub fn sent_by(&self, lid: u16) -> Vec<&Sent> {
        self.wire.iter().filter(|s| s.from == lid).collect()
    }

    /// The PathRecord queries host `lid` has sent so far.
    pub fn path_queries(&self, lid: u16) -> usize {
        self.mads_from(lid)
            .iter()
            .filter(|m| {
                SaMadRepr::parse(&m.mad)
                    .is_ok_and(|r| matches!(r.attribute, SaAttribute::PathRecord(_)))
            })
            .count()
    }

    /// The SA's MADs from `lid` (requests), as (method, attribute ID, SA data).
    pub fn mads_from(&self, lid: u16) -> Vec<&MadOut> {
        self.log
            .iter()
            .filter(|(_, f, _)| *f == lid)
            .map(|(_, _, m)| m)
            .collect()
    }
}

/// An ICMPv4 echo message.
pub(super) fn ping4(src: Ipv4Addr, dst: Ipv4Addr, request: bool, seq: u16) -> Vec<u8> {
    let data = b"ipoib ping";
    let icmp = Icmpv4Repr::echo(request, 0x77, seq, data);
    let mut b = vec![0u8; 20 + icmp.buffer_len()];
    Ipv4Repr {
        tos: 0,
        ident: seq,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
        ttl: 64,
        protocol: IpProtocol::Icmp,
        src_addr: src,
        dst_addr: dst,
        payload_len: icmp.buffer_len() as u16,
    }
    .emit(&mut Ipv4Packet::new_unchecked(&mut b[..]));
    icmp.emit(&mut b[20..]).expect("room");
    b
}

/// A UDP-like IPv4 datagram (payload bytes only; nobody checks UDP here).
pub(super) fn udp4(src: Ipv4Addr, dst: Ipv4Addr, payload: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 20 + payload.len()];
    Ipv4Repr {
        tos: 0,
        ident: 1,
        dont_frag: false,
        more_frags: false,
        frag_offset: 0,
        ttl: 8,
        protocol: IpProtocol::Udp,
        src_addr: src,
        dst_addr: dst,
        payload_len: payload.len() as u16,
    }
    .emit(&mut Ipv4Packet::new_unchecked(&mut b[..]));
    b[20..].copy_from_slice(payload);
    b
}

/// An IPv6 packet carrying `next` and `payload`.
pub(super) fn ip6(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    next: IpProtocol,
    hop: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut b = vec![0u8; 40 + payload.len()];
    Ipv6Repr {
        traffic_class: 0,
        flow_label: 0,
        payload_len: payload.len() as u16,
        next_header: next,
        hop_limit: hop,
        src_addr: src,
        dst_addr: dst,
    }
    .emit(&mut Ipv6Packet::new_unchecked(&mut b[..]));
    b[40..].copy_from_slice(payload);
    b
}

/// An ICMPv6 echo message.
pub(super) fn ping6(src: Ipv6Addr, dst: Ipv6Addr, request: bool, seq: u16) -> Vec<u8> {
    let t = if request {
        Icmpv6Type::EchoRequest
    } else {
        Icmpv6Type::EchoReply
    };
    let icmp = Icmpv6Repr {
        msg_type: t,
        code: 0,
        rest: 0x77 << 16 | u32::from(seq),
        body: b"ipoib ping6",
    };
    let mut m = vec![0u8; icmp.buffer_len()];
    icmp.emit(src, dst, &mut m).expect("room");
    ip6(src, dst, IpProtocol::Icmpv6, 64, &m)
}

/// The tiny IP layer's answer to an echo request addressed to `iface`.
fn echo_reply(iface: &Interface, p: &[u8]) -> Option<Vec<u8>> {
    match p.first()? >> 4 {
        4 => {
            let d = Ipv4Datagram::parse(p).ok()?;
            let IpPayload::Icmpv4(i) = d.payload else {
                return None;
            };
            let me = iface.config().ipv4?.addr;
            (i.msg_type == Icmpv4Type::EchoRequest && d.header.dst_addr == me)
                .then(|| ping4(me, d.header.src_addr, false, i.rest as u16))
        }
        6 => {
            let d = Ipv6Datagram::parse(p).ok()?;
            let IpPayload::Icmpv6(i) = d.payload else {
                return None;
            };
            let mine = iface
                .ipv6_addresses()
                .iter()
                .any(|a| a.addr == d.header.dst_addr && a.state == AddrState::Preferred);
            (i.msg_type == Icmpv6Type::EchoRequest && mine)
                .then(|| ping6(d.header.dst_addr, d.header.src_addr, false, i.rest as u16))
        }
        _ => None,
    }
}

/// True if `p` is an echo of `kind` (request/reply) with sequence `seq`.
pub(super) fn is_echo(p: &[u8], request: bool, seq: u16) -> bool {
    match p.first().map(|b| b >> 4) {
        Some(4) => Ipv4Datagram::parse(p).is_ok_and(|d| {
            matches!(d.payload, IpPayload::Icmpv4(i) if i.echo_ident_seq() == Some((0x77, seq))
                && (i.msg_type == Icmpv4Type::EchoRequest) == request)
        }),
        Some(6) => Ipv6Datagram::parse(p).is_ok_and(|d| {
            matches!(d.payload, IpPayload::Icmpv6(i) if i.echo_ident_seq() == Some((0x77, seq))
                && (i.msg_type == Icmpv6Type::EchoRequest) == request)
        }),
        _ => false,
    }
}

/// The encapsulation type of a datagram.
pub(super) fn ethertype(t: &UdTransmit) -> u16 {
    u16::from_be_bytes([t.data[0], t.data[1]])
}
