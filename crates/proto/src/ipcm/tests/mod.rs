//! The IP CM service's tests: two hosts, A (LID 1) and B (LID 2), each with a real
//! [`crate::cm::Cm`] and an [`IpCm`], joined by a small MAD wire (the CM tests' `Pair`, with a
//! host around each agent that carries out the service's commands the way the module docs
//! ask, and a consumer that answers requests as the test says).
//!
//! Files: `compliance` (one test per Annex A11 compliance statement, named after it, IPv4 and
//! IPv6 where the statement has both), `flow` (establishment, release, resolution failures,
//! ports, listeners), `linux` (our REQ private data against the bytes of Linux's
//! `cma_format_hdr`, built by hand), `props` (random REQ private data to a server), `iwarp`
//! (iWarp emulation through the service, one test per iWarp mapping statement it completes).

mod compliance;
mod flow;
mod iwarp;
mod iwarp_reject;
mod linux;
mod props;

use super::*;
use crate::cm::{Cm, CmConfig};
use crate::mad_agent::{MadAddr, MadAgent, MadIn};
use ipoib_wire::cm::{attr, CmMessage, RejRepr, ReqRepr};
use ipoib_wire::mad::MadHeaderRepr;
use ipoib_wire::private_data::{IpCmAriCode, IpCmReject, RejectionLayer};
use ipoib_wire::sa::PathRecordRepr;
use ipoib_wire::{Guid, Mtu, PKey, Rate};
use std::net::{Ipv4Addr, Ipv6Addr};

pub(super) const A_LID: u16 = 1;
pub(super) const B_LID: u16 = 2;
pub(super) const A_V4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
pub(super) const B_V4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
pub(super) const A_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1);
pub(super) const B_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2);
/// IP protocol numbers (IANA): TCP and SCTP.
pub(super) const TCP: u8 = 6;
pub(super) const SCTP: u8 = 132;
/// iSER's well-known port (the annex's example, 0x0CBC).
pub(super) const PORT: u16 = 3260;

/// The GID of the port with `lid`.
pub(super) fn gid(lid: u16) -> Gid {
    Gid::new(Gid::DEFAULT_SUBNET_PREFIX, u64::from(lid))
}

/// A PathRecord from the port with `from` to the port with `to`.
pub(super) fn path(from: u16, to: u16) -> PathRecordRepr {
    PathRecordRepr {
        dgid: gid(to),
        sgid: gid(from),
        dlid: to,
        slid: from,
        reversible: true,
        numb_path: 1,
        pkey: PKey(0xffff),
        mtu: Mtu::Mtu2048,
        rate: Rate::Gbps40,
        packet_life_time: 14,
        ..PathRecordRepr::default()
    }
}

/// B's address of the family of `v6`.
pub(super) fn b_ip(v6: bool) -> IpAddr {
    if v6 {
        B_V6.into()
    } else {
        B_V4.into()
    }
}

/// A's address of the family of `v6`.
pub(super) fn a_ip(v6: bool) -> IpAddr {
    if v6 {
        A_V6.into()
    } else {
        A_V4.into()
    }
}

/// How a host's consumer answers a [`IpCmEvent::ConnectRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Answer {
    /// Accept with this REP private data.
    Accept(Vec<u8>),
    /// Reject with this REJ private data.
    Reject(Vec<u8>),
    /// Leave it.
    Hold,
}

/// Changes the REQ private data a host hands to its CM (to send what our client never would).
pub(super) type Mangle = Box<dyn FnMut(&mut Vec<u8>)>;

/// One host: its CM, its IP CM service, the tables behind Resolve and PathQuery, a consumer.
pub(super) struct Host {
    pub lid: u16,
    pub cm: Cm,
    pub ipcm: IpCm,
    /// The IPoIB neighbour table: IP address to GID.
    pub neighbours: BTreeMap<IpAddr, Gid>,
    /// The path cache: destination GID to PathRecord.
    pub paths: BTreeMap<Gid, PathRecordRepr>,
    /// Answer Resolve (else leave it unanswered).
    pub answer_resolve: bool,
    /// Answer PathQuery.
    pub answer_path: bool,
    /// Let the CM take our QPs (false: every accept fails for lack of a QP).
    pub have_qps: bool,
    /// The consumer.
    pub answer: Answer,
    pub mangle: Option<Mangle>,
    /// Changes the REP private data a host hands to its CM.
    pub mangle_rep: Option<Mangle>,
    /// Receive buffers the host posted for each iWarp connection before its REQ or REP left.
    pub posted: BTreeMap<IpConnId, u32>,
    /// Another user of the CM that rejects every REQ of its own listeners with (reason, ARI,
    /// private data), as a server that is not our IP CM service might.
    pub other: Option<(RejReason, Vec<u8>, Vec<u8>)>,
    /// The consumer's events, in order.
    pub events: Vec<IpCmEvent>,
    /// CM events neither the service nor the other user took.
    pub stray: Vec<CmEvent>,
    /// Every command the service gave, in order.
    pub commands: Vec<IpCmCommand>,
    next_qpn: u32,
}

impl Host {
    fn new(lid: u16, guid: u64, addrs: Vec<IpAddr>, rng: &Rng) -> Host {
        let cm_cfg = CmConfig {
            max_cm_retries: 3,
            ..CmConfig::new(Guid(guid))
        };
        Host {
            lid,
            cm: Cm::new(cm_cfg, rng.fork(u64::from(lid))),
            ipcm: IpCm::new(IpCmConfig::new(addrs), rng.fork(100 + u64::from(lid))),
            neighbours: BTreeMap::new(),
            paths: BTreeMap::new(),
            answer_resolve: true,
            answer_path: true,
            have_qps: true,
            answer: Answer::Accept(b"welcome".to_vec()),
            mangle: None,
            mangle_rep: None,
            posted: BTreeMap::new(),
            other: None,
            events: Vec::new(),
            stray: Vec::new(),
            commands: Vec::new(),
            next_qpn: 0x100 * u32::from(lid),
        }
    }

    fn qpn(&mut self) -> u32 {
        self.next_qpn += 1;
        self.next_qpn
    }

    /// Carries out commands, routes CM events and runs the consumer until nothing is left.
    /// True if anything happened.
    fn run(&mut self, now: Instant) -> bool {
        let mut any = false;
        loop {
            let mut moved = false;
            while let Some(c) = self.ipcm.poll_command() {
                moved = true;
                self.commands.push(c.clone());
                self.execute(now, c);
            }
            loop {
                let ipcm = &self.ipcm;
                let Some(e) = self.cm.poll_event_where(|e| ipcm.owns(e)) else {
                    break;
                };
                moved = true;
                self.ipcm.handle_cm_event(now, &e);
            }
            while let Some(e) = self.cm.poll_event() {
                moved = true;
                self.other_user(now, e);
            }
            while let Some(e) = self.ipcm.poll_event() {
                moved = true;
                if let IpCmEvent::ConnectRequest { conn, .. } = &e {
                    match self.answer.clone() {
                        Answer::Accept(pd) => self.ipcm.accept(*conn, &pd).unwrap(),
                        Answer::Reject(pd) => self.ipcm.reject(*conn, &pd).unwrap(),
                        Answer::Hold => {}
                    }
                }
                self.events.push(e);
            }
            if !moved {
                return any;
            }
            any = true;
        }
    }

    fn execute(&mut self, now: Instant, c: IpCmCommand) {
        match c {
            IpCmCommand::Resolve { ip } => {
                if self.answer_resolve {
                    let g = self.neighbours.get(&ip).copied();
                    self.ipcm.handle_resolved(now, ip, g);
                }
            }
            IpCmCommand::PathQuery { dgid } => {
                if self.answer_path {
                    let p = self.paths.get(&dgid).copied();
                    self.ipcm.handle_path(now, dgid, p);
                }
            }
            IpCmCommand::CmListen { service_id, mask } => {
                let l = self.cm.listen(service_id, mask).ok();
                self.ipcm.cm_listening(service_id, l);
            }
            IpCmCommand::CmUnlisten { listen } => {
                self.cm.unlisten(listen).unwrap();
            }
            IpCmCommand::CmConnect { conn, mut params } => {
                params.qpn = self.qpn();
                // iWarp: the Hello's buffers are posted before the REQ leaves.
                if let Some(s) = self.ipcm.iwarp_stream_mut(conn) {
                    *self.posted.entry(conn).or_default() += s.poll_recv_buffers();
                }
                if let Some(m) = self.mangle.as_mut() {
                    m(&mut params.private_data);
                }
                let cm = self.cm.connect(now, params).ok();
                self.ipcm.cm_connect_started(now, conn, cm);
            }
            IpCmCommand::CmAccept {
                conn,
                mut private_data,
            } => {
                let qpn = self.qpn();
                // iWarp: the HelloReply's buffers are posted before the REP leaves.
                if let Some(id) = self.ipcm.conn_of(conn) {
                    if let Some(s) = self.ipcm.iwarp_stream_mut(id) {
                        *self.posted.entry(id).or_default() += s.poll_recv_buffers();
                    }
                }
                if let Some(m) = self.mangle_rep.as_mut() {
                    m(&mut private_data);
                }
                if !self.have_qps || self.cm.accept(now, conn, qpn, &private_data).is_err() {
                    self.cm
                        .reject(now, conn, RejReason::NoQp, &[], &[])
                        .unwrap();
                    self.ipcm.cm_accept_failed(now, conn);
                }
            }
            IpCmCommand::CmReject {
                conn,
                reason,
                ari,
                private_data,
            } => self
                .cm
                .reject(now, conn, reason, &ari, &private_data)
                .unwrap(),
            IpCmCommand::CmDisconnect { conn } => {
                self.cm.disconnect(now, conn, &[]).unwrap();
            }
        }
    }

    /// CM events of the CM's other user.
    fn other_user(&mut self, now: Instant, e: CmEvent) {
        match (&e, &self.other) {
            (CmEvent::ConnectRequest { conn, .. }, Some((reason, ari, pd))) => {
                self.cm.reject(now, *conn, *reason, ari, pd).unwrap();
            }
            (_, Some(_)) => {}
            (_, None) => self.stray.push(e),
        }
    }
}

/// Two hosts and the wire between them.
pub(super) struct World {
    pub now: Instant,
    pub a: Host,
    pub b: Host,
    /// Every MAD that went over the wire: (time, from LID, MAD).
    pub log: Vec<(Instant, u16, Vec<u8>)>,
    /// While set, every MAD is lost.
    pub cut: bool,
}

impl World {
    /// A (10.0.0.1, fd00::1) and B (10.0.0.2, fd00::2), each knowing the other's addresses and
    /// path.
    pub fn new(seed: u64) -> World {
        let rng = Rng::new(seed);
        let mut a = Host::new(A_LID, 0xa, vec![A_V4.into(), A_V6.into()], &rng);
        let mut b = Host::new(B_LID, 0xb, vec![B_V4.into(), B_V6.into()], &rng);
        for (h, peer, ips) in [
            (&mut a, B_LID, [b_ip(false), b_ip(true)]),
            (&mut b, A_LID, [a_ip(false), a_ip(true)]),
        ] {
            for ip in ips {
                h.neighbours.insert(ip, gid(peer));
            }
            h.paths.insert(gid(peer), path(h.lid, peer));
        }
        World {
            now: Instant::ZERO,
            a,
            b,
            log: Vec::new(),
            cut: false,
        }
    }

    fn host(&mut self, lid: u16) -> Option<&mut Host> {
        match lid {
            A_LID => Some(&mut self.a),
            B_LID => Some(&mut self.b),
            _ => None,
        }
    }

    /// Runs both hosts and moves the MADs they queued, once. True if anything happened.
    pub fn step(&mut self) -> bool {
        let now = self.now;
        let mut any = self.a.run(now) | self.b.run(now);
        let mut batch = Vec::new();
        while let Some(m) = self.a.cm.poll_transmit(now) {
            batch.push((A_LID, m));
        }
        while let Some(m) = self.b.cm.poll_transmit(now) {
            batch.push((B_LID, m));
        }
        for (from, m) in batch {
            any = true;
            if self.cut {
                continue;
            }
            self.log.push((now, from, m.mad.clone()));
            let mi = MadIn {
                from: MadAddr { lid: from, ..m.to },
                mad: m.mad,
            };
            if let Some(h) = self.host(m.to.lid) {
                h.cm.handle_mad(now, mi);
            }
        }
        any | self.a.run(now) | self.b.run(now)
    }

    /// Steps until nothing moves, then jumps to the next timeout (either CM or IP CM agent) and
    /// runs it, while it is within `d` of now.
    pub fn drive(&mut self, d: Duration) {
        let end = self.now + d;
        for _ in 0..100_000 {
            while self.step() {}
            let next = [
                self.a.cm.poll_timeout(),
                self.b.cm.poll_timeout(),
                self.a.ipcm.poll_timeout(),
                self.b.ipcm.poll_timeout(),
            ]
            .into_iter()
            .flatten()
            .min();
            match next {
                Some(t) if t <= end => {
                    self.now = self.now.max(t);
                    let now = self.now;
                    self.a.cm.handle_timeout(now);
                    self.b.cm.handle_timeout(now);
                    self.a.ipcm.handle_timeout(now);
                    self.b.ipcm.handle_timeout(now);
                }
                _ => return,
            }
        }
        panic!("no progress");
    }

    /// Moves everything that can move now, without letting time pass.
    pub fn settle_now(&mut self) {
        while self.step() {}
    }

    /// Drives until no timer is left; then no connection record may be left either.
    pub fn finish(&mut self) {
        self.drive(Duration::from_secs(3600));
        for h in [&self.a, &self.b] {
            assert_eq!(h.cm.poll_timeout(), None, "CM timers left");
            assert_eq!(h.ipcm.poll_timeout(), None, "IP CM timers left");
            assert_eq!(h.cm.connections(), 0, "CM connections left");
            assert_eq!(h.ipcm.connections(), 0, "IP CM connections left");
            assert!(h.stray.is_empty(), "CM events nobody took: {:?}", h.stray);
        }
    }

    /// B listens on (`protocol`, `addr`, `port`).
    pub fn listen_b(&mut self, protocol: u8, addr: IpAddr, port: u16) -> IpListenId {
        let l = self.b.ipcm.listen(protocol, addr, port).unwrap();
        self.settle_now();
        l
    }

    /// A connects to `dst` over `protocol` from an ephemeral port with `pd`.
    pub fn connect_a(&mut self, protocol: u8, dst: SocketAddr, pd: &[u8]) -> IpConnId {
        let now = self.now;
        self.a.ipcm.connect(now, protocol, dst, None, pd).unwrap()
    }

    /// The CM messages of attribute `id` that went over the wire, with their sender.
    pub fn sent(&self, id: u16) -> Vec<(u16, CmMessage)> {
        self.log
            .iter()
            .filter_map(|(_, from, m)| {
                let h = MadHeaderRepr::parse_bytes(m).ok()?;
                (h.attribute_id == id).then(|| (*from, CmMessage::parse(id, &m[24..]).ok()))
            })
            .map(|(f, m)| (f, m.expect("a well-formed CM message")))
            .collect()
    }

    /// The REQs that went over the wire.
    pub fn reqs(&self) -> Vec<ReqRepr> {
        self.sent(attr::REQ)
            .into_iter()
            .filter_map(|(_, m)| match m {
                CmMessage::Req(r) => Some(r),
                _ => None,
            })
            .collect()
    }

    /// The REJs that went over the wire, with their sender.
    pub fn rejs(&self) -> Vec<(u16, RejRepr)> {
        self.sent(attr::REJ)
            .into_iter()
            .filter_map(|(f, m)| match m {
                CmMessage::Rej(r) => Some((f, r)),
                _ => None,
            })
            .collect()
    }

    /// The only REJ that went over the wire, from B.
    pub fn rej_from_b(&self) -> RejRepr {
        let r = self.rejs();
        assert_eq!(r.len(), 1, "one REJ: {:?}", r);
        assert_eq!(r[0].0, B_LID, "sent by B");
        r[0].1
    }
}

/// The first event of `events` that `f` maps to something.
pub(super) fn find<T>(events: &[IpCmEvent], f: impl Fn(&IpCmEvent) -> Option<T>) -> Option<T> {
    events.iter().find_map(f)
}

/// The client's Rejected event: (reason, ARI, private data).
pub(super) fn rejected(events: &[IpCmEvent]) -> (RejReason, RejectAri, Vec<u8>) {
    find(events, |e| match e {
        IpCmEvent::Rejected {
            reason,
            ari,
            private_data,
            ..
        } => Some((*reason, ari.clone(), private_data.clone())),
        _ => None,
    })
    .unwrap_or_else(|| panic!("no Rejected event: {events:?}"))
}

/// A's connection to B over `v6`, with B listening on the wildcard of that family, through a
/// REQ whose private data `mangle` changes; returns the world once everything settled (B's
/// consumer accepts what it is offered).
pub(super) fn mangled(seed: u64, v6: bool, mangle: impl FnMut(&mut Vec<u8>) + 'static) -> World {
    let mut w = World::new(seed);
    let any: IpAddr = if v6 {
        Ipv6Addr::UNSPECIFIED.into()
    } else {
        Ipv4Addr::UNSPECIFIED.into()
    };
    w.listen_b(TCP, any, PORT);
    w.a.mangle = Some(Box::new(mangle));
    w.connect_a(TCP, SocketAddr::new(b_ip(v6), PORT), b"hello");
    w.drive(Duration::from_secs(10));
    w
}
