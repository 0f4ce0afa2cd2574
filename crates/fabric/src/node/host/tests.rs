//! Host scenario tests: MAD routing through QP1 between two hosts cabled back to back, and an
//! application owning a UD QP.

use super::*;
use crate::hw::hca::tests::{configure, make_ud_qp, port_config, UdEnd, GUID_A, GUID_B};
use crate::hw::hca::{ModifyQp, QpInit};
use crate::hw::link::LinkParams;
use crate::hw::rc::engine_factory;
use crate::hw::sim::{Device, NodeId, PortRef, Simulator};
use crate::hw::verbs::{QpType, Qpn};
use ipoib_wire::Guid;
use std::time::Duration;

/// Answers every request with GetResp carrying the request's data.
#[derive(Default)]
struct Server {
    got: Vec<MadIn>,
    out: VecDeque<MadOut>,
}

impl MadAgent for Server {
    fn handle_mad(&mut self, _now: Instant, m: MadIn) {
        let hdr = MadHeaderRepr::parse_bytes(&m.mad).unwrap();
        let mut resp = m.mad.clone();
        hdr.response(Method::GetResp, MadStatus::SUCCESS)
            .emit(&mut resp);
        self.out.push_back(MadOut {
            to: m.from,
            mad: resp,
        });
        self.got.push(m);
    }
    fn poll_transmit(&mut self, _now: Instant) -> Option<MadOut> {
        self.out.pop_front()
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _now: Instant) {}
}

/// Sends one request when its timer fires; records what comes back.
struct Client {
    at: Option<Instant>,
    request: MadOut,
    got: Vec<(Instant, MadIn)>,
    pending: Option<MadOut>,
}

fn mad(class: MgmtClass, method: Method, tid: u64) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    MadHeaderRepr {
        base_version: 1,
        mgmt_class: class,
        class_version: 1,
        method,
        status: MadStatus::SUCCESS,
        class_specific: 0,
        transaction_id: tid,
        attribute_id: 0x10,
        attribute_modifier: 0,
    }
    .emit(&mut m);
    m[24..32].copy_from_slice(&tid.to_be_bytes());
    m
}

impl Client {
    fn new(at: Instant, to_lid: u16, class: MgmtClass, method: Method, tid: u64) -> Client {
        Client {
            at: Some(at),
            request: MadOut {
                to: MadAddr::gsi(to_lid),
                mad: mad(class, method, tid),
            },
            got: Vec::new(),
            pending: None,
        }
    }
}

impl MadAgent for Client {
    fn handle_mad(&mut self, now: Instant, m: MadIn) {
        self.got.push((now, m));
    }
    fn poll_transmit(&mut self, _now: Instant) -> Option<MadOut> {
        self.pending.take()
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.at
    }
    fn handle_timeout(&mut self, now: Instant) {
        if self.at.is_some_and(|t| t <= now) {
            self.at = None;
            self.pending = Some(self.request.clone());
        }
    }
}

/// A UD QP on the HCA of a host device (P_Key index 0, 8 receives).
fn ud_qp_on<T: Device + HasHca>(sim: &mut Simulator, node: NodeId, qkey: QKey) -> UdEnd {
    sim.with_node::<T, _>(node, |d, _, _| make_ud_qp(d.hca_mut(), qkey, 0, 8))
        .unwrap()
}

/// Devices that contain an HCA.
trait HasHca {
    fn hca_mut(&mut self) -> &mut Hca;
}

impl HasHca for Host {
    fn hca_mut(&mut self) -> &mut Hca {
        Host::hca_mut(self)
    }
}

/// Two hosts, each with a one-port HCA with the RC engine.
fn hosts(seed: u64) -> (Simulator, NodeId, NodeId) {
    let mut sim = Simulator::new(seed);
    let host = |guid| {
        Box::new(Host::new(
            Hca::new(Guid(guid), 1).with_engine(engine_factory()),
        ))
    };
    let a = sim.add_node(host(GUID_A), 1);
    let b = sim.add_node(host(GUID_B), 1);
    sim.connect(
        PortRef { node: a, port: 1 },
        PortRef { node: b, port: 1 },
        LinkParams::default(),
    );
    configure::<Host>(&mut sim, a, port_config(1, vec![0xffff]));
    configure::<Host>(&mut sim, b, port_config(2, vec![0xffff]));
    (sim, a, b)
}

/// IBA 1 §13.4.5 / §13.4.6.2: a request reaches the server of its class, the response reaches
/// the agent that sent the request with that TID (not another agent of the same host); agent
/// timers are driven by the host.
#[test]
fn mad_round_trip_routed_by_class_and_tid() {
    let (mut sim, a, b) = hosts(41);
    let t0 = Instant::from_nanos(50_000);
    let (srv, c1, c2) = {
        let srv = sim
            .with_node::<Host, _>(a, |h, _, _| {
                let s = h.add_agent(Server::default());
                h.serve_class(MgmtClass::DevMgt, s);
                s
            })
            .unwrap();
        let (c1, c2) = sim
            .with_node::<Host, _>(b, |h, _, _| {
                let c1 = h.add_agent(Client::new(t0, 1, MgmtClass::DevMgt, Method::Get, 0x1234));
                let later = t0 + Duration::from_micros(5);
                let c2 = h.add_agent(Client::new(later, 1, MgmtClass::DevMgt, Method::Get, 0x99));
                (c1, c2)
            })
            .unwrap();
        (srv, c1, c2)
    };
    sim.run_until_idle(10_000);
    let host_a = sim.node::<Host>(a).unwrap();
    let s = host_a.agent::<Server>(srv).unwrap();
    assert_eq!(s.got.len(), 2);
    assert_eq!(s.got[0].from.lid, 2);
    assert_eq!(s.got[0].from.qpn, 1);
    assert_eq!(s.got[0].from.pkey, PKey(0xffff));
    assert_eq!(s.got[0].mad.len(), 256);
    let host_b = sim.node::<Host>(b).unwrap();
    for (id, tid, at) in [
        (c1, 0x1234u64, t0),
        (c2, 0x99, t0 + Duration::from_micros(5)),
    ] {
        let c = host_b.agent::<Client>(id).unwrap();
        assert_eq!(c.got.len(), 1, "exactly its own response");
        let (when, m) = &c.got[0];
        assert!(*when > at, "sent when its timer fired");
        let hdr = MadHeaderRepr::parse_bytes(&m.mad).unwrap();
        assert_eq!(hdr.transaction_id, tid);
        assert_eq!(hdr.method, Method::GetResp);
        assert_eq!(&m.mad[24..32], &tid.to_be_bytes());
    }
    assert_eq!(host_b.counters().mads_in, 2);
    assert_eq!(host_b.counters().unknown_tid, 0);
}

/// Linux ib_mad.c generate_unmatched_resp: a Get for a class nobody serves is answered with
/// GetResp status 0x000C; a Send nobody serves is dropped (counted).
#[test]
fn unserved_requests_answered_or_dropped() {
    let (mut sim, a, b) = hosts(42);
    let t0 = Instant::from_nanos(10_000);
    let (get, send) = sim
        .with_node::<Host, _>(b, |h, _, _| {
            let g = h.add_agent(Client::new(t0, 1, MgmtClass::DevMgt, Method::Get, 7));
            let s = h.add_agent(Client::new(t0, 1, MgmtClass::DevMgt, Method::Send, 8));
            (g, s)
        })
        .unwrap();
    sim.run_until_idle(10_000);
    let hb = sim.node::<Host>(b).unwrap();
    let got = &hb.agent::<Client>(get).unwrap().got;
    assert_eq!(got.len(), 1);
    let hdr = MadHeaderRepr::parse_bytes(&got[0].1.mad).unwrap();
    assert_eq!(hdr.method, Method::GetResp);
    assert_eq!(hdr.status, MadStatus::METHOD_ATTR_UNSUPPORTED);
    assert_eq!(hdr.transaction_id, 7);
    assert!(hb.agent::<Client>(send).unwrap().got.is_empty());
    let ca = sim.node::<Host>(a).unwrap().counters();
    assert_eq!((ca.unmatched_answered, ca.unmatched_dropped), (1, 1));
}

/// Sends `count` requests with TIDs from `first` on, all when its timer fires.
struct Flood {
    at: Option<Instant>,
    next: u64,
    end: u64,
    to_lid: u16,
}

impl MadAgent for Flood {
    fn handle_mad(&mut self, _now: Instant, _m: MadIn) {}
    fn poll_transmit(&mut self, _now: Instant) -> Option<MadOut> {
        if self.at.is_some() || self.next == self.end {
            return None;
        }
        self.next += 1;
        Some(MadOut {
            to: MadAddr::gsi(self.to_lid),
            mad: mad(MgmtClass::DevMgt, Method::Send, self.next - 1),
        })
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.at
    }
    fn handle_timeout(&mut self, now: Instant) {
        if self.at.is_some_and(|t| t <= now) {
            self.at = None;
        }
    }
}

/// One agent's many requests do not make the host forget another agent's pending TID (each
/// agent's memory is its own, as Linux's `ib_mad` keeps each agent's sends): a client's
/// response still reaches it after another agent of its host sent more than [`TID_MEMORY`]
/// requests while it waited. With one memory for the host, the flood pushed the client's TID
/// out and its response was dropped as an unknown TID.
#[test]
fn a_flood_of_requests_does_not_forget_another_agents_tid() {
    let (mut sim, a, b) = hosts(43);
    let t0 = Instant::from_nanos(50_000);
    sim.with_node::<Host, _>(a, |h, _, _| {
        let s = h.add_agent(Server::default());
        h.serve_class(MgmtClass::DevMgt, s);
    })
    .unwrap();
    let flood = TID_MEMORY as u64 + 10;
    let (client, flooder) = sim
        .with_node::<Host, _>(b, |h, _, _| {
            let c = h.add_agent(Client::new(t0, 1, MgmtClass::DevMgt, Method::Get, 0x5eed));
            let f = h.add_agent(Flood {
                at: Some(t0),
                next: 1 << 40,
                end: (1 << 40) + flood,
                to_lid: 1,
            });
            (c, f)
        })
        .unwrap();
    sim.run_until_idle(1_000_000);
    let hb = sim.node::<Host>(b).unwrap();
    let got = &hb.agent::<Client>(client).unwrap().got;
    assert_eq!(got.len(), 1, "the client's response reached it");
    let hdr = MadHeaderRepr::parse_bytes(&got[0].1.mad).unwrap();
    assert_eq!((hdr.transaction_id, hdr.method), (0x5eed, Method::GetResp));
    let f = hb.agent::<Flood>(flooder).unwrap();
    assert_eq!(f.next, f.end, "the flood was sent");
    // The server answers every request; the flooder forgot its own 10 oldest TIDs.
    assert_eq!(hb.counters().mads_in, 1 + TID_MEMORY as u64);
    assert_eq!(hb.counters().unknown_tid, flood - TID_MEMORY as u64);
}

/// An application owning a UD QP: echoes every datagram back to its sender.
struct Echo {
    qpn: Option<Qpn>,
    echoed: u32,
}

impl App for Echo {
    fn on_completion(&mut self, _now: Instant, c: Completion, ctx: &mut HostCtx<'_>) {
        let Some(qpn) = self.qpn else { return };
        if c.opcode != WcOpcode::Recv || c.status != WcStatus::Success {
            return;
        }
        ctx.hca
            .post_recv(
                qpn,
                RecvWr {
                    wr_id: 0,
                    capacity: 4096,
                },
            )
            .unwrap();
        let mut d = crate::hw::hca::tests::dest(c.slid, c.src_qp, QKey(0x77));
        d.ah.sl = c.sl;
        ctx.hca
            .post_send(qpn, crate::hw::hca::tests::wr(1, &c.data, d))
            .unwrap();
        self.echoed += 1;
    }
    fn poll(&mut self, _now: Instant, ctx: &mut HostCtx<'_>) {
        if self.qpn.is_some() {
            return;
        }
        let cq = ctx.hca.create_cq();
        let qpn = ctx
            .hca
            .create_qp(QpInit {
                qp_type: QpType::Ud,
                port: 1,
                send_cq: cq,
                recv_cq: cq,
                privileged: false,
                sq_sig_all: false,
            })
            .unwrap();
        for m in [
            ModifyQp::Init {
                port: 1,
                pkey_index: 0,
                qkey: QKey(0x77),
            },
            ModifyQp::Rtr(None),
            ModifyQp::Rts(None),
        ] {
            ctx.hca.modify_qp(qpn, m).unwrap();
        }
        for _ in 0..4 {
            ctx.hca
                .post_recv(
                    qpn,
                    RecvWr {
                        wr_id: 0,
                        capacity: 4096,
                    },
                )
                .unwrap();
        }
        ctx.route_cq(cq);
        self.qpn = Some(qpn);
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The App hook: an application creates its QP inside the simulation, gets the completions of
/// its CQ and answers within the same event.
#[test]
fn app_owns_a_qp_and_reacts_to_completions() {
    let (mut sim, a, b) = hosts(43);
    let echo = sim
        .with_node::<Host, _>(b, |h, _, _| {
            h.add_app(Echo {
                qpn: None,
                echoed: 0,
            })
        })
        .unwrap();
    sim.run_until_idle(1000);
    let echo_qpn = sim.node::<Host>(b).unwrap().app::<Echo>(echo).unwrap().qpn;
    let echo_qpn = echo_qpn.expect("QP created from poll");
    let mine = ud_qp_on::<Host>(&mut sim, a, QKey(0x77));
    for i in 0..6u8 {
        sim.with_node::<Host, _>(a, |h, now, tx| {
            let d = crate::hw::hca::tests::dest(2, echo_qpn, QKey(0x77));
            h.hca_mut()
                .post_send(mine.qpn, crate::hw::hca::tests::wr(9, &[i; 20], d))
                .unwrap();
            h.drive(now, tx);
        });
        sim.run_until_idle(1000);
    }
    let back: Vec<_> = sim
        .with_node::<Host, _>(a, |h, _, _| h.hca_mut().poll_cq(mine.cq, 100))
        .unwrap()
        .into_iter()
        .filter(|c| c.opcode == WcOpcode::Recv)
        .collect();
    assert_eq!(back.len(), 6);
    assert_eq!(back[5].data, vec![5u8; 20]);
    assert_eq!(back[0].src_qp, echo_qpn);
    let e = sim.node::<Host>(b).unwrap().app::<Echo>(echo).unwrap();
    assert_eq!(e.echoed, 6);
}

/// IBA 1 §13.5.1: QP1 sends with the P_Key the agent names (looked up in the table) and with a
/// GRH when the address has one; the receiving side reports both in the MadIn address.
#[test]
fn mad_with_grh_and_partition_pkey() {
    let (mut sim, a, b) = hosts(44);
    configure::<Host>(&mut sim, a, port_config(1, vec![0xffff, 0x8005]));
    configure::<Host>(&mut sim, b, port_config(2, vec![0xffff, 0x0005]));
    sim.run_until_idle(100);
    let gid_a = ipoib_wire::Gid::new(ipoib_wire::Gid::DEFAULT_SUBNET_PREFIX, GUID_A + 1);
    let gid_b = ipoib_wire::Gid::new(ipoib_wire::Gid::DEFAULT_SUBNET_PREFIX, GUID_B + 1);
    let srv = sim
        .with_node::<Host, _>(a, |h, _, _| {
            let s = h.add_agent(Server::default());
            h.serve_class(MgmtClass::DevMgt, s);
            s
        })
        .unwrap();
    let c = sim
        .with_node::<Host, _>(b, |h, _, _| {
            let mut cl = Client::new(Instant::ZERO, 1, MgmtClass::DevMgt, Method::Get, 5);
            cl.request.to.pkey = PKey(0x0005);
            cl.request.to.grh = Some(GrhAddr {
                gid: gid_a,
                flow_label: 0,
                hop_limit: 1,
                tclass: 0,
            });
            h.add_agent(cl)
        })
        .unwrap();
    sim.run_until_idle(10_000);
    let s = sim.node::<Host>(a).unwrap().agent::<Server>(srv).unwrap();
    assert_eq!(s.got.len(), 1);
    assert_eq!(
        s.got[0].from.pkey,
        PKey(0x8005),
        "matched entry of the receiver"
    );
    assert_eq!(s.got[0].from.grh.map(|g| g.gid), Some(gid_b));
    let cl = sim.node::<Host>(b).unwrap().agent::<Client>(c).unwrap();
    assert_eq!(cl.got.len(), 1, "response came back in the partition");
    assert_eq!(cl.got[0].1.from.pkey, PKey(0x0005));
}

/// `ipoib_proto::sa` routing rules (Linux `sa_query.c` registers the Report method for its
/// SubnAdm agent): a Report, although a request of class SubnAdm, goes to the agent registered
/// for (SubnAdm, Report), not to the SubnAdm class server; other SubnAdm requests still reach the
/// class server; the answer goes back by TID to the agent that sent the Report. Before the fix a
/// Report on a host without a SubnAdm server was dropped as unmatched.
#[test]
fn report_reaches_the_method_receiver_not_the_class_server() {
    let (mut sim, a, b) = hosts(45);
    let t0 = Instant::from_nanos(10_000);
    let (srv, rep) = sim
        .with_node::<Host, _>(a, |h, _, _| {
            let s = h.add_agent(Server::default());
            h.serve_class(MgmtClass::SubnAdm, s);
            let r = h.add_agent(Server::default());
            h.serve_method(MgmtClass::SubnAdm, Method::Report, r);
            (s, r)
        })
        .unwrap();
    let (report, get) = sim
        .with_node::<Host, _>(b, |h, _, _| {
            let r = h.add_agent(Client::new(t0, 1, MgmtClass::SubnAdm, Method::Report, 66));
            let g = h.add_agent(Client::new(t0, 1, MgmtClass::SubnAdm, Method::Get, 67));
            (r, g)
        })
        .unwrap();
    sim.run_until_idle(10_000);
    let ha = sim.node::<Host>(a).unwrap();
    let s = ha.agent::<Server>(srv).unwrap();
    let r = ha.agent::<Server>(rep).unwrap();
    assert_eq!(r.got.len(), 1, "the Report went to the method receiver");
    assert_eq!(
        MadHeaderRepr::parse_bytes(&r.got[0].mad).unwrap().method,
        Method::Report
    );
    assert_eq!(s.got.len(), 1, "the Get went to the class server");
    assert_eq!(ha.counters().unmatched_dropped, 0);
    let hb = sim.node::<Host>(b).unwrap();
    assert_eq!(hb.agent::<Client>(report).unwrap().got.len(), 1);
    assert_eq!(hb.agent::<Client>(get).unwrap().got.len(), 1);
}

/// Counts its polls and says idle ([`App::is_idle`]) or not, as told; takes agent `touch`
/// mutably at each poll when it names one (as an application handing an agent work does).
struct Counter {
    polls: u32,
    idle: bool,
    touch: Option<AgentId>,
}

impl App for Counter {
    fn on_completion(&mut self, _now: Instant, _c: Completion, _ctx: &mut HostCtx<'_>) {}
    fn poll(&mut self, _now: Instant, ctx: &mut HostCtx<'_>) {
        self.polls += 1;
        if let Some(a) = self.touch {
            let _ = ctx.agents.get_mut::<Asked>(a);
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn is_idle(&self, _now: Instant, _hca: &Hca, _agents: &Agents) -> bool {
        self.idle
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// An agent with nothing to send that counts how often it is asked.
#[derive(Default)]
struct Asked(u32);

impl MadAgent for Asked {
    fn handle_mad(&mut self, _now: Instant, _m: MadIn) {}
    fn poll_transmit(&mut self, _now: Instant) -> Option<MadOut> {
        self.0 += 1;
        None
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _now: Instant) {}
}

/// A host whose applications all say they are idle ends its pump with the round that moved
/// something (a request answered: the application polled once), where an application that does
/// not say so is polled again in a second round that finds nothing; the agents are asked again
/// after the applications only when one took an agent mutably. The answer is the same.
#[test]
fn idle_applications_spare_the_host_a_second_round() {
    // (idle, takes the agent) -> (polls, the agent asked) for the request's event.
    for (idle, touch, polls, asked) in [
        (true, false, 1, 1),
        (false, false, 2, 2),
        (false, true, 2, 4),
    ] {
        let (mut sim, a, b) = hosts(44);
        let t0 = Instant::from_nanos(50_000);
        let (srv, quiet, app) = sim
            .with_node::<Host, _>(a, |h, _, _| {
                let s = h.add_agent(Server::default());
                h.serve_class(MgmtClass::DevMgt, s);
                let q = h.add_agent(Asked::default());
                let touch = touch.then_some(q);
                (
                    s,
                    q,
                    h.add_app(Counter {
                        polls: 0,
                        idle,
                        touch,
                    }),
                )
            })
            .unwrap();
        let c = sim
            .with_node::<Host, _>(b, |h, _, _| {
                h.add_agent(Client::new(t0, 1, MgmtClass::DevMgt, Method::Get, 7))
            })
            .unwrap();
        sim.run_until(t0);
        let host_a = sim.node::<Host>(a).unwrap();
        assert!(host_a.is_settled(t0) == idle, "idle {idle}");
        let before = host_a.app::<Counter>(app).unwrap().polls;
        let asked_before = host_a.agent::<Asked>(quiet).unwrap().0;
        sim.run_until_idle(1000);
        let host_a = sim.node::<Host>(a).unwrap();
        assert_eq!(host_a.agent::<Server>(srv).unwrap().got.len(), 1);
        let after = host_a.app::<Counter>(app).unwrap().polls;
        assert_eq!(after - before, polls, "idle {idle} touch {touch}");
        let asked_after = host_a.agent::<Asked>(quiet).unwrap().0;
        assert_eq!(
            asked_after - asked_before,
            asked,
            "idle {idle} touch {touch}"
        );
        let host_b = sim.node::<Host>(b).unwrap();
        assert_eq!(host_b.agent::<Client>(c).unwrap().got.len(), 1);
    }
}
