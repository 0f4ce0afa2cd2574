//! A umad user on one host of two cabled back to back: its requests leave through QP1 (QP0 for
//! SMPs), responses and registered requests come back to it, and bad input is counted.

use super::*;
use crate::hw::hca::tests::{configure, port_config, GUID_A, GUID_B};
use crate::hw::hca::Hca;
use crate::hw::link::LinkParams;
use crate::hw::sim::{NodeId, PortRef, Simulator};
use ipoib_wire::mad::{MadStatus, RmppRepr, RmppType};
use ipoib_wire::Guid;

/// Answers every request with GetResp; records the TIDs of the requests.
#[derive(Default)]
struct Echo {
    out: VecDeque<MadOut>,
    tids: Vec<u64>,
}

impl MadAgent for Echo {
    fn handle_mad(&mut self, _now: Instant, m: MadIn) {
        let hdr = MadHeaderRepr::parse_bytes(&m.mad).unwrap();
        self.tids.push(hdr.transaction_id);
        let mut resp = m.mad.clone();
        hdr.response(Method::GetResp, MadStatus::SUCCESS)
            .emit(&mut resp);
        self.out.push_back(MadOut {
            to: m.from,
            mad: resp,
        });
    }
    fn poll_transmit(&mut self, _now: Instant) -> Option<MadOut> {
        self.out.pop_front()
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _now: Instant) {}
}

fn mad(class: MgmtClass, version: u8, method: Method, tid: u64) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    MadHeaderRepr {
        base_version: 1,
        mgmt_class: class,
        class_version: version,
        method,
        status: MadStatus::SUCCESS,
        class_specific: 0,
        transaction_id: tid,
        attribute_id: 0x10,
        attribute_modifier: 0,
    }
    .emit(&mut m);
    m
}

/// Hosts with LIDs 1 (a) and 2 (b).
fn hosts(seed: u64) -> (Simulator, NodeId, NodeId) {
    let mut sim = Simulator::new(seed);
    let host = |guid| Box::new(Host::new(Hca::new(Guid(guid), 1)));
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

fn attach(sim: &mut Simulator, n: NodeId) -> AgentId {
    sim.with_node::<Host, _>(n, |h, _, _| h.umad_attach())
        .unwrap()
}

fn send(
    sim: &mut Simulator,
    n: NodeId,
    u: AgentId,
    to: MadAddr,
    m: &[u8],
) -> Result<(), UmadError> {
    sim.with_node::<Host, _>(n, |h, now, tx| {
        let r = h.umad_send(u, to, m);
        h.drive(now, tx);
        r
    })
    .unwrap()
}

fn take(sim: &mut Simulator, n: NodeId, u: AgentId) -> Vec<MadIn> {
    sim.node_mut::<Host>(n).unwrap().umad_take(u)
}

fn smp_addr(lid: u16) -> MadAddr {
    MadAddr {
        qpn: 0,
        ..MadAddr::gsi(lid)
    }
}

/// IBA 1 §13.4.6.2: a umad user's request reaches the class's server over QP1 and the response
/// comes back to that user only (not to another umad user of the same host).
/// (The tests use DevMgt: PerfMgt Gets and Sets are answered by the HCA's PMA before any
/// software sees them, `crate::hw::hca` module `sma`, as a Linux driver's `process_mad` does.)
#[test]
fn request_and_response_over_qp1() {
    let (mut sim, a, b) = hosts(1);
    sim.with_node::<Host, _>(a, |h, _, _| {
        let e = h.add_agent(Echo::default());
        h.serve_class(MgmtClass::DevMgt, e);
    });
    let u = attach(&mut sim, b);
    let other = attach(&mut sim, b);
    assert_ne!(u, other);
    let req = mad(MgmtClass::DevMgt, 1, Method::Get, 0xabc);
    send(&mut sim, b, u, MadAddr::gsi(1), &req).unwrap();
    sim.run_until_idle(10_000);
    let got = take(&mut sim, b, u);
    assert_eq!(got.len(), 1);
    let h = MadHeaderRepr::parse_bytes(&got[0].mad).unwrap();
    assert_eq!((h.method, h.transaction_id), (Method::GetResp, 0xabc));
    assert_eq!((got[0].from.lid, got[0].from.qpn), (1, 1));
    assert!(take(&mut sim, b, other).is_empty());
    let host = sim.node::<Host>(b).unwrap();
    assert_eq!(host.umad(u).unwrap().counters().sent, 1);
    assert_eq!(host.umad(u).unwrap().counters().received, 1);
}

/// A response that comes after its user detached is not handed to the next user of the same
/// agent (Linux drops the responses of a closed `umad` file's agents): counted as an unknown TID.
#[test]
fn a_late_response_does_not_reach_the_next_user() {
    let (mut sim, a, b) = hosts(5);
    sim.with_node::<Host, _>(a, |h, _, _| {
        let e = h.add_agent(Echo::default());
        h.serve_class(MgmtClass::DevMgt, e);
    });
    let u = attach(&mut sim, b);
    let req = mad(MgmtClass::DevMgt, 1, Method::Get, 0xabc);
    send(&mut sim, b, u, MadAddr::gsi(1), &req).unwrap();
    sim.with_node::<Host, _>(b, |h, _, _| h.umad_detach(u));
    let next = attach(&mut sim, b);
    assert_eq!(next, u, "the agent is reused");
    sim.run_until_idle(10_000);
    assert!(take(&mut sim, b, next).is_empty());
    let host = sim.node::<Host>(b).unwrap();
    assert_eq!(host.counters().unknown_tid, 1);
    assert_eq!(host.umad(next).unwrap().counters().received, 0);
}

/// A host's own agent sending one request; records what comes back.
struct Once {
    out: Option<MadOut>,
    got: Vec<MadIn>,
}

impl MadAgent for Once {
    fn handle_mad(&mut self, _now: Instant, m: MadIn) {
        self.got.push(m);
    }
    fn poll_transmit(&mut self, _now: Instant) -> Option<MadOut> {
        self.out.take()
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _now: Instant) {}
}

/// IBA 1 §13.4.6.2, as Linux routes responses (`ib_umad_write` puts the agent's `hi_tid` in a
/// request's high 32 bits, `find_mad_agent` routes a response by them): two umad users and one of
/// the host's own agents send a request with the same TID; on the wire the users' requests carry
/// their agents' numbers in the high 32 bits over their own low 32 bits, and each of the three
/// gets its own response, with the TID it sent. With the TID alone the last request named the
/// agent of every response.
#[test]
fn same_tids_of_two_users_and_an_agent_each_get_their_response() {
    let (mut sim, a, b) = hosts(6);
    let echo = sim
        .with_node::<Host, _>(a, |h, _, _| {
            let e = h.add_agent(Echo::default());
            h.serve_class(MgmtClass::DevMgt, e);
            e
        })
        .unwrap();
    let tid = 0x0001_0002_0000_0abc;
    let req = mad(MgmtClass::DevMgt, 1, Method::Get, tid);
    let (u1, u2) = (attach(&mut sim, b), attach(&mut sim, b));
    let local = sim
        .with_node::<Host, _>(b, |h, _, _| {
            h.add_agent(Once {
                out: Some(MadOut {
                    to: MadAddr::gsi(1),
                    mad: req.clone(),
                }),
                got: Vec::new(),
            })
        })
        .unwrap();
    send(&mut sim, b, u1, MadAddr::gsi(1), &req).unwrap();
    send(&mut sim, b, u2, MadAddr::gsi(1), &req).unwrap();
    sim.run_until_idle(10_000);
    let sent = &sim
        .node::<Host>(a)
        .unwrap()
        .agent::<Echo>(echo)
        .unwrap()
        .tids;
    assert_eq!(sent.len(), 3);
    let mut highs: Vec<u64> = sent.iter().map(|t| t >> 32).collect();
    highs.sort_unstable();
    highs.dedup();
    assert_eq!(highs.len(), 3, "three agents, three high halves: {sent:x?}");
    assert!(sent.iter().all(|t| t & 0xffff_ffff == 0xabc));
    for u in [u1, u2] {
        let got = take(&mut sim, b, u);
        assert_eq!(got.len(), 1, "one response for umad agent {u:?}");
        let h = MadHeaderRepr::parse_bytes(&got[0].mad).unwrap();
        assert_eq!((h.method, h.transaction_id), (Method::GetResp, tid));
    }
    let host = sim.node::<Host>(b).unwrap();
    let got = &host.agent::<Once>(local).unwrap().got;
    assert_eq!(got.len(), 1, "one response for the host's own agent");
    let h = MadHeaderRepr::parse_bytes(&got[0].mad).unwrap();
    assert_eq!(h.transaction_id, tid);
    assert_eq!(host.counters().unknown_tid, 0);
}

/// One user's two requests outstanding at once with the same low 32 bits and different high
/// bits (under the ibsim server, two libumad2sim agents of one client: each puts its number in
/// bits 32..47, docs/IBSIM.md) leave with different TIDs, and each response comes back with the
/// high bits of its own request. With the high bits kept by the low 32, both requests left with
/// one TID and both responses came back with the later's high bits.
#[test]
fn same_low_bits_with_two_high_halves_each_get_their_response() {
    let (mut sim, a, b) = hosts(7);
    let echo = sim
        .with_node::<Host, _>(a, |h, _, _| {
            let e = h.add_agent(Echo::default());
            h.serve_class(MgmtClass::DevMgt, e);
            e
        })
        .unwrap();
    let u = attach(&mut sim, b);
    let tids = [0x0003_0000_0000_0abc_u64, 0x0003_0001_0000_0abc];
    for t in tids {
        send(
            &mut sim,
            b,
            u,
            MadAddr::gsi(1),
            &mad(MgmtClass::DevMgt, 1, Method::Get, t),
        )
        .unwrap();
    }
    sim.run_until_idle(10_000);
    let sent = sim
        .node::<Host>(a)
        .unwrap()
        .agent::<Echo>(echo)
        .unwrap()
        .tids
        .clone();
    assert_eq!(sent.len(), 2);
    assert_ne!(
        sent[0], sent[1],
        "two high halves, two TIDs on the wire: {sent:x?}"
    );
    assert!(sent.iter().all(|t| t & 0xffff_ffff == 0xabc));
    let got: Vec<u64> = take(&mut sim, b, u)
        .iter()
        .map(|m| MadHeaderRepr::parse_bytes(&m.mad).unwrap().transaction_id)
        .collect();
    assert_eq!(got, tids, "each response with its own request's TID");
    let host = sim.node::<Host>(b).unwrap();
    assert_eq!(host.counters().unknown_tid, 0);
    let hu = host.umad(u).unwrap();
    assert_eq!(
        hu.wire_high(0x0003_0000)
            .map(|h| u64::from(h) << 32 | 0xabc),
        Some(sent[0])
    );
    assert_eq!(
        hu.wire_high(0x0003_0001)
            .map(|h| u64::from(h) << 32 | 0xabc),
        Some(sent[1])
    );
}

/// An agent keeps at most [`UMAD_HIGHS`] high halves apart: with one more outstanding, the
/// response to the least recently sent one is dropped and counted (its user's high bits are
/// unknown), not handed over with another's; each other response comes back with its own
/// TID, and the forgotten half sent again gets a number never given before.
#[test]
fn high_halves_are_bounded_and_a_forgotten_ones_response_is_dropped() {
    let (mut sim, a, b) = hosts(8);
    sim.with_node::<Host, _>(a, |h, _, _| {
        let e = h.add_agent(Echo::default());
        h.serve_class(MgmtClass::DevMgt, e);
    });
    let u = attach(&mut sim, b);
    let n = UMAD_HIGHS as u64 + 1;
    let tids: Vec<u64> = (0..n).map(|i| i << 32 | 0x55).collect();
    for &t in &tids {
        send(
            &mut sim,
            b,
            u,
            MadAddr::gsi(1),
            &mad(MgmtClass::DevMgt, 1, Method::Get, t),
        )
        .unwrap();
    }
    let first = sim.node::<Host>(b).unwrap().umad(u).unwrap().wire_high(0);
    assert_eq!(first, None, "the least recently sent half is forgotten");
    sim.run_until_idle(100_000);
    let got: Vec<u64> = take(&mut sim, b, u)
        .iter()
        .map(|m| MadHeaderRepr::parse_bytes(&m.mad).unwrap().transaction_id)
        .collect();
    assert_eq!(got, tids[1..]);
    let c = *sim.node::<Host>(b).unwrap().umad(u).unwrap().counters();
    assert_eq!((c.forgotten_high, c.received), (1, n - 1));
    let given: Vec<u32> = (1..n as u32)
        .filter_map(|h| sim.node::<Host>(b).unwrap().umad(u).unwrap().wire_high(h))
        .collect();
    assert_eq!(given.len(), UMAD_HIGHS);
    send(
        &mut sim,
        b,
        u,
        MadAddr::gsi(1),
        &mad(MgmtClass::DevMgt, 1, Method::Get, 0x55),
    )
    .unwrap();
    let again = sim
        .node::<Host>(b)
        .unwrap()
        .umad(u)
        .unwrap()
        .wire_high(0)
        .unwrap();
    assert!(!given.contains(&again) && again > *given.iter().max().unwrap());
    sim.run_until_idle(10_000);
    let got = take(&mut sim, b, u);
    assert_eq!(got.len(), 1);
    assert_eq!(
        MadHeaderRepr::parse_bytes(&got[0].mad)
            .unwrap()
            .transaction_id,
        0x55
    );
}

/// The host's count of numbers wraps after 2^32 new high halves (a client cycling its high bits
/// reaches it): a number an attached user still holds is skipped, so two users never send the
/// same TID and each gets its own response. Before, the user after the wrap was given the first
/// user's number: both requests left with one TID and both responses went to the later.
#[test]
fn a_wrapped_count_skips_the_numbers_users_hold() {
    let (mut sim, a, b) = hosts(9);
    sim.with_node::<Host, _>(a, |h, _, _| {
        let e = h.add_agent(Echo::default());
        h.serve_class(MgmtClass::DevMgt, e);
    });
    let req = mad(MgmtClass::DevMgt, 1, Method::Get, 0x66);
    let u1 = attach(&mut sim, b);
    send(&mut sim, b, u1, MadAddr::gsi(1), &req).unwrap();
    let u2 = attach(&mut sim, b);
    sim.node_mut::<Host>(b).unwrap().umad_hi_tid = u32::MAX;
    send(&mut sim, b, u2, MadAddr::gsi(1), &req).unwrap();
    let host = sim.node::<Host>(b).unwrap();
    let (n1, n2) = (
        host.umad(u1).unwrap().wire_high(0),
        host.umad(u2).unwrap().wire_high(0),
    );
    assert_eq!(
        (n1, n2),
        (Some(1), Some(2)),
        "1 is held: the wrapped count skips it"
    );
    sim.run_until_idle(10_000);
    for u in [u1, u2] {
        let got = take(&mut sim, b, u);
        assert_eq!(got.len(), 1, "one response for {u:?}");
        assert_eq!(
            MadHeaderRepr::parse_bytes(&got[0].mad)
                .unwrap()
                .transaction_id,
            0x66
        );
    }
}

/// `ib_user_mad_reg_req` semantics: requests of the registered class, version and method reach
/// the user; another version is dropped (counted); a colliding registration is refused whole;
/// detaching withdraws it and the agent is reused by the next attach.
#[test]
fn registrations_route_requests() {
    let (mut sim, a, b) = hosts(2);
    let server = attach(&mut sim, a);
    let reg = Registration {
        class: MgmtClass::DevMgt,
        version: 1,
        methods: method_mask(&[Method::Get, Method::Set]),
    };
    sim.with_node::<Host, _>(a, |h, _, _| h.umad_register(server, reg))
        .unwrap()
        .unwrap();
    let rival = attach(&mut sim, a);
    let clash = sim
        .with_node::<Host, _>(a, |h, _, _| {
            h.umad_register(
                rival,
                Registration {
                    methods: method_mask(&[Method::Set, Method::Send]),
                    ..reg
                },
            )
        })
        .unwrap();
    assert_eq!(
        clash,
        Err(UmadError::InUse {
            class: 0x06,
            method: 0x02
        })
    );
    let client = attach(&mut sim, b);
    send(
        &mut sim,
        b,
        client,
        MadAddr::gsi(1),
        &mad(MgmtClass::DevMgt, 1, Method::Get, 5),
    )
    .unwrap();
    send(
        &mut sim,
        b,
        client,
        MadAddr::gsi(1),
        &mad(MgmtClass::DevMgt, 2, Method::Get, 6),
    )
    .unwrap();
    sim.run_until_idle(10_000);
    let got = take(&mut sim, a, server);
    assert_eq!(got.len(), 1);
    // The request as it came: the client's agent number over the client's low 32 bits.
    let hi = u64::from(
        sim.node::<Host>(b)
            .unwrap()
            .umad(client)
            .unwrap()
            .wire_high(0)
            .unwrap(),
    );
    assert_eq!(
        MadHeaderRepr::parse_bytes(&got[0].mad)
            .unwrap()
            .transaction_id,
        hi << 32 | 5
    );
    assert_eq!(got[0].from.lid, 2);
    let ha = sim.node::<Host>(a).unwrap();
    assert_eq!(ha.umad(server).unwrap().counters().unwanted, 1);
    assert!(take(&mut sim, a, rival).is_empty());

    sim.with_node::<Host, _>(a, |h, _, _| h.umad_detach(server));
    let again = attach(&mut sim, a);
    assert_eq!(again, server, "a detached agent is reused");
    assert!(sim
        .node::<Host>(a)
        .unwrap()
        .umad(again)
        .unwrap()
        .registrations()
        .is_empty());
    // The registration was withdrawn: the rival may take it now.
    let ok = sim.with_node::<Host, _>(a, |h, _, _| {
        h.umad_register(
            rival,
            Registration {
                methods: method_mask(&[Method::Set]),
                ..reg
            },
        )
    });
    assert_eq!(ok, Some(Ok(())));
}

/// IBA 1 §13.5.1: SMPs leave from QP0 (VL15) and arrive at QP0; the receiving user sees source
/// QP 0.
#[test]
fn smps_travel_on_qp0() {
    let (mut sim, a, b) = hosts(3);
    let sma_user = attach(&mut sim, a);
    sim.with_node::<Host, _>(a, |h, _, _| {
        h.umad_register(
            sma_user,
            Registration {
                class: MgmtClass::SubnLid,
                version: 1,
                methods: method_mask(&[Method::Trap]),
            },
        )
    })
    .unwrap()
    .unwrap();
    let u = attach(&mut sim, b);
    send(
        &mut sim,
        b,
        u,
        smp_addr(1),
        &mad(MgmtClass::SubnLid, 1, Method::Trap, 9),
    )
    .unwrap();
    sim.run_until_idle(10_000);
    let got = take(&mut sim, a, sma_user);
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].from.lid, got[0].from.qpn), (2, 0));
    // Not through QP1: the host's QP1 dispatch saw nothing.
    assert_eq!(
        sim.node::<Host>(a).unwrap().counters().unmatched_answered,
        0
    );
}

/// Bad input is refused and counted, queues are bounded, a detached agent takes nothing.
#[test]
fn bad_input_and_bounds() {
    let (mut sim, a, b) = hosts(4);
    let u = attach(&mut sim, b);
    assert_eq!(
        send(&mut sim, b, u, MadAddr::gsi(1), &[1, 2, 3]),
        Err(UmadError::NotAMad)
    );
    let host = sim.node_mut::<Host>(b).unwrap();
    assert_eq!(host.umad(u).unwrap().counters().not_a_mad, 1);
    let mut agent = UmadAgent::new();
    let m = mad(MgmtClass::DevMgt, 1, Method::Get, 1);
    let queue = |agent: &mut UmadAgent| agent.send_with(MadAddr::gsi(1), &m, Vec::new(), 1);
    for _ in 0..UMAD_QUEUE_DEPTH {
        queue(&mut agent).unwrap();
    }
    assert_eq!(queue(&mut agent), Err(UmadError::Full));
    // The response on the wire: the number of the request's high half (0) over its low bits.
    let resp = mad(MgmtClass::DevMgt, 1, Method::GetResp, 1 << 32 | 1);
    for _ in 0..=UMAD_QUEUE_DEPTH {
        agent.handle_mad(
            Instant::ZERO,
            MadIn {
                from: MadAddr::gsi(1),
                mad: resp.clone(),
            },
        );
    }
    agent.handle_mad(
        Instant::ZERO,
        MadIn {
            from: MadAddr::gsi(1),
            mad: vec![7; 3],
        },
    );
    let c = *agent.counters();
    assert_eq!((c.send_full, c.recv_full, c.unwanted), (1, 1, 1));
    assert_eq!(agent.pending(), UMAD_QUEUE_DEPTH);
    sim.with_node::<Host, _>(b, |h, _, _| h.umad_detach(u));
    let r = send(&mut sim, b, u, MadAddr::gsi(1), &m);
    assert_eq!(r, Err(UmadError::NoAgent));
    let _ = a;
}

/// Answers a SubnAdm request with a three-segment RMPP response; records the ACKs it gets and
/// their TIDs.
#[derive(Default)]
struct Segmenter {
    out: VecDeque<MadOut>,
    acks: Vec<u32>,
    ack_tids: Vec<u64>,
}

impl MadAgent for Segmenter {
    fn handle_mad(&mut self, _now: Instant, m: MadIn) {
        let r = RmppRepr::parse_bytes(&m.mad[24..36]).unwrap();
        if r.rmpp_type == RmppType::Ack {
            self.acks.push(r.segment_number());
            let h = MadHeaderRepr::parse_bytes(&m.mad).unwrap();
            self.ack_tids.push(h.transaction_id);
            return;
        }
        let hdr = MadHeaderRepr::parse_bytes(&m.mad).unwrap();
        for seg in 1..=3u32 {
            let mut resp = m.mad.clone();
            hdr.response(Method::GetTableResp, MadStatus::SUCCESS)
                .emit(&mut resp);
            let flags = match seg {
                1 => 0x03,
                3 => 0x05,
                _ => 0x01,
            };
            RmppRepr {
                version: 1,
                rmpp_type: RmppType::Data,
                resp_time: 0x1f,
                flags: ipoib_wire::mad::RmppFlags(flags),
                status: ipoib_wire::mad::RmppStatus::Normal,
                data1: seg,
                data2: if seg == 3 { 20 + 8 } else { 0 },
            }
            .emit(&mut resp[24..36]);
            self.out.push_back(MadOut {
                to: m.from,
                mad: resp,
            });
        }
    }
    fn poll_transmit(&mut self, _now: Instant) -> Option<MadOut> {
        self.out.pop_front()
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _now: Instant) {}
}

/// IBA 1 §13.6.3: with `RmppMode::FirstSegment` the agent acknowledges every DATA segment and the
/// user gets the first; with `Pass` the user gets every segment and nothing is acknowledged.
#[test]
fn rmpp_first_segment_or_pass() {
    for mode in [RmppMode::FirstSegment, RmppMode::Pass] {
        let (mut sim, a, b) = hosts(5);
        let seg = sim
            .with_node::<Host, _>(a, |h, _, _| {
                let s = h.add_agent(Segmenter::default());
                h.serve_class(MgmtClass::SubnAdm, s);
                s
            })
            .unwrap();
        let u = attach(&mut sim, b);
        sim.with_node::<Host, _>(b, |h, _, _| h.umad_set_rmpp(u, mode));
        let req = mad(MgmtClass::SubnAdm, 2, Method::GetTable, 0x77);
        send(&mut sim, b, u, MadAddr::gsi(1), &req).unwrap();
        sim.run_until_idle(10_000);
        let got = take(&mut sim, b, u);
        let segs: Vec<u32> = got
            .iter()
            .map(|m| {
                RmppRepr::parse_bytes(&m.mad[24..36])
                    .unwrap()
                    .segment_number()
            })
            .collect();
        let acks = sim
            .node::<Host>(a)
            .unwrap()
            .agent::<Segmenter>(seg)
            .unwrap()
            .acks
            .clone();
        let c = *sim.node::<Host>(b).unwrap().umad(u).unwrap().counters();
        match mode {
            RmppMode::FirstSegment => {
                assert_eq!(segs, vec![1]);
                assert_eq!(acks, vec![1, 2, 3]);
                assert_eq!((c.rmpp_acked, c.rmpp_later), (3, 2));
                // The agent's ACKs carry the transfer's TID on the wire (its number in the high
                // bits); the user's segment its own TID.
                let hi = u64::from(
                    sim.node::<Host>(b)
                        .unwrap()
                        .umad(u)
                        .unwrap()
                        .wire_high(0)
                        .unwrap(),
                );
                let s = sim
                    .node::<Host>(a)
                    .unwrap()
                    .agent::<Segmenter>(seg)
                    .unwrap();
                assert_eq!(s.ack_tids, vec![hi << 32 | 0x77; 3]);
                let tid = MadHeaderRepr::parse_bytes(&got[0].mad)
                    .unwrap()
                    .transaction_id;
                assert_eq!(tid, 0x77);
            }
            RmppMode::Pass => {
                assert_eq!(segs, vec![1, 2, 3]);
                assert!(acks.is_empty());
                // The user sees its own TID and acknowledges the last segment with it; the ACK
                // reaches the sender with the TID of the transfer on the wire.
                let tids: Vec<u64> = got
                    .iter()
                    .map(|m| MadHeaderRepr::parse_bytes(&m.mad).unwrap().transaction_id)
                    .collect();
                assert_eq!(tids, vec![0x77; 3]);
                let ack = ack_for(&got[2].mad, 3, 3).unwrap();
                send(&mut sim, b, u, got[2].from, &ack).unwrap();
                sim.run_until_idle(10_000);
                let hi = u64::from(
                    sim.node::<Host>(b)
                        .unwrap()
                        .umad(u)
                        .unwrap()
                        .wire_high(0)
                        .unwrap(),
                );
                let s = sim
                    .node::<Host>(a)
                    .unwrap()
                    .agent::<Segmenter>(seg)
                    .unwrap();
                assert_eq!(
                    (&s.acks[..], &s.ack_tids[..]),
                    (&[3][..], &[hi << 32 | 0x77][..])
                );
            }
        }
    }
}

/// IBA 1 §13.6.3: a `FirstSegment` user that answers a GetTable with one RMPP DATA segment
/// (First and Last) gets no ACK back: the receiving agent acknowledges the segment, and the
/// sending agent takes the ACK as the sender's kernel would. The ACK carries GetTable, the
/// request method (IBA 1 §13.6.3), and the agent used to hand it to its user as a new request:
/// OpenSM under the ibsim server answered it, its RMPP header copied into a second response.
#[test]
fn a_first_segment_user_does_not_see_the_acks_of_its_responses() {
    let (mut sim, a, b) = hosts(7);
    let server = attach(&mut sim, a);
    let reg = Registration {
        class: MgmtClass::SubnAdm,
        version: 2,
        methods: method_mask(&[Method::GetTable]),
    };
    sim.with_node::<Host, _>(a, |h, _, _| h.umad_register(server, reg))
        .unwrap()
        .unwrap();
    let client = attach(&mut sim, b);
    for (n, u) in [(a, server), (b, client)] {
        sim.with_node::<Host, _>(n, |h, _, _| h.umad_set_rmpp(u, RmppMode::FirstSegment));
    }
    let req = mad(MgmtClass::SubnAdm, 2, Method::GetTable, 0x99);
    send(&mut sim, b, client, MadAddr::gsi(1), &req).unwrap();
    sim.run_until_idle(10_000);
    let got = take(&mut sim, a, server);
    assert_eq!(got.len(), 1, "the request");
    let mut resp = mad(MgmtClass::SubnAdm, 2, Method::GetTableResp, 0x99);
    RmppRepr::single_segment(20 + 64).emit(&mut resp[24..36]);
    // The answer carries the TID as the request arrived (the client's agent in its high bits).
    let mut answer = resp.clone();
    answer[8..16].copy_from_slice(&got[0].mad[8..16]);
    send(&mut sim, a, server, got[0].from, &answer).unwrap();
    sim.run_until_idle(10_000);
    let back = take(&mut sim, b, client);
    assert_eq!(back.len(), 1, "the response");
    assert_eq!(back[0].mad, resp, "with the client's own TID");
    let acks = take(&mut sim, a, server);
    assert!(
        acks.is_empty(),
        "no ACK for the user: {:02x?}",
        acks.iter().map(|m| &m.mad[..36]).collect::<Vec<_>>()
    );
    let c = *sim
        .node::<Host>(a)
        .unwrap()
        .umad(server)
        .unwrap()
        .counters();
    assert_eq!(c.rmpp_acks_taken, 1);
    let c = *sim
        .node::<Host>(b)
        .unwrap()
        .umad(client)
        .unwrap()
        .counters();
    assert_eq!(c.rmpp_acked, 1);
}
