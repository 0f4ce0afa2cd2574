//! A umad user on one host of two cabled back to back: its requests leave through QP1 (QP0 for
//! SMPs), responses and registered requests come back to it, and bad input is counted.

use super::*;
use crate::hw::hca::tests::{configure, port_config, GUID_A, GUID_B};
use crate::hw::hca::Hca;
use crate::hw::link::LinkParams;
use crate::hw::sim::{NodeId, PortRef, Simulator};
use ipoib_wire::mad::{MadStatus, RmppRepr, RmppType};
use ipoib_wire::Guid;

mod tids;

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

/// An [`Echo`] agent on host `n` serving DevMgt (the class the tests ask): its id.
fn echo_dev_mgt(sim: &mut Simulator, n: NodeId) -> AgentId {
    sim.with_node::<Host, _>(n, |h, _, _| {
        let e = h.add_agent(Echo::default());
        h.serve_class(MgmtClass::DevMgt, e);
        e
    })
    .unwrap()
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

/// A umad user on host `n` registered for SubnLid traps (an SM's): its id.
fn trap_taker(sim: &mut Simulator, n: NodeId) -> AgentId {
    let u = attach(sim, n);
    sim.with_node::<Host, _>(n, |h, _, _| {
        h.umad_register(
            u,
            Registration {
                class: MgmtClass::SubnLid,
                version: 1,
                methods: method_mask(&[Method::Trap]),
            },
        )
    })
    .unwrap()
    .unwrap();
    u
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
    echo_dev_mgt(&mut sim, a);
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

/// ibsim hands its port's SM client every request to QP1 it does not answer itself
/// (docs/IBSIM.md "ibsim (server side)"): a vendor-class Get (0x32, `ibping`'s, any class
/// version) that no agent registered reaches the agent that takes the unclaimed requests, and
/// its answer goes back to the requester with the requester's TID. Without such an agent the
/// host answers it as unmatched (status 0x000C). A second taker is refused; unregistering
/// releases it. Before, the request was always answered as unmatched.
#[test]
fn unclaimed_requests_reach_the_agent_that_takes_them() {
    let ping = MgmtClass::from(0x32);
    let (mut sim, a, b) = hosts(3);
    let client = attach(&mut sim, b);
    let ask = |sim: &mut Simulator, tid: u64| {
        send(
            sim,
            b,
            client,
            MadAddr::gsi(1),
            &mad(ping, 1, Method::Get, tid),
        )
        .unwrap();
        sim.run_until_idle(10_000);
        let got = take(sim, b, client);
        assert_eq!(got.len(), 1, "one answer");
        MadHeaderRepr::parse_bytes(&got[0].mad).unwrap()
    };
    // Nobody takes it: unmatched (Linux `generate_unmatched_resp`).
    let h = ask(&mut sim, 0x11);
    assert_eq!(
        (h.method, h.status, h.transaction_id),
        (Method::GetResp, MadStatus::METHOD_ATTR_UNSUPPORTED, 0x11)
    );
    let server = attach(&mut sim, a);
    let rival = attach(&mut sim, a);
    let take_it = |sim: &mut Simulator, u: AgentId, on: bool| {
        sim.with_node::<Host, _>(a, |h, _, _| h.umad_take_unclaimed(u, on))
            .unwrap()
    };
    assert_eq!(take_it(&mut sim, server, true), Ok(()));
    assert_eq!(
        take_it(&mut sim, rival, true),
        Err(UmadError::UnclaimedTaken)
    );
    send(
        &mut sim,
        b,
        client,
        MadAddr::gsi(1),
        &mad(ping, 1, Method::Get, 0x22),
    )
    .unwrap();
    sim.run_until_idle(10_000);
    let got = take(&mut sim, a, server);
    assert_eq!(got.len(), 1, "the request reached the taker");
    assert!(
        take(&mut sim, b, client).is_empty(),
        "not answered as unmatched"
    );
    let req = MadHeaderRepr::parse_bytes(&got[0].mad).unwrap();
    assert_eq!((req.mgmt_class, req.method), (ping, Method::Get));
    // The user answers as `ibping -S` does (`mad_respond_via`: GetResp, the TID kept).
    let mut resp = got[0].mad.clone();
    req.response(Method::GetResp, MadStatus::SUCCESS)
        .emit(&mut resp);
    send(&mut sim, a, server, got[0].from, &resp).unwrap();
    sim.run_until_idle(10_000);
    let back = take(&mut sim, b, client);
    assert_eq!(back.len(), 1);
    let h = MadHeaderRepr::parse_bytes(&back[0].mad).unwrap();
    assert_eq!(
        (h.method, h.status, h.transaction_id),
        (Method::GetResp, MadStatus::SUCCESS, 0x22)
    );
    // Released by unregistering: unmatched again, and the rival may take them.
    sim.with_node::<Host, _>(a, |h, _, _| h.umad_unregister(server));
    let h = ask(&mut sim, 0x33);
    assert_eq!(h.status, MadStatus::METHOD_ATTR_UNSUPPORTED);
    assert!(take(&mut sim, a, server).is_empty());
    assert_eq!(take_it(&mut sim, rival, true), Ok(()));
}

/// IBA 1 §13.5.1: SMPs leave from QP0 (VL15) and arrive at QP0; the receiving user sees source
/// QP 0.
#[test]
fn smps_travel_on_qp0() {
    let (mut sim, a, b) = hosts(3);
    let sma_user = trap_taker(&mut sim, a);
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

/// Answers a SubnAdm request with a three-segment RMPP response; records the ACKs it gets
/// (SegmentNumber, NewWindowLast) and their TIDs.
#[derive(Default)]
struct Segmenter {
    out: VecDeque<MadOut>,
    acks: Vec<(u32, u32)>,
    ack_tids: Vec<u64>,
}

impl MadAgent for Segmenter {
    fn handle_mad(&mut self, _now: Instant, m: MadIn) {
        let r = RmppRepr::parse_bytes(&m.mad[24..36]).unwrap();
        if r.rmpp_type == RmppType::Ack {
            self.acks.push((r.segment_number(), r.new_window_last()));
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
                // Each ACK grants the window beyond its segment, the last one's too: a smaller
                // window is an old ACK to a Linux sender (mad_rmpp.c `process_rmpp_ack`).
                assert_eq!(acks, vec![(1, 33), (2, 34), (3, 35)]);
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
                    (&[(3, 3)][..], &[hi << 32 | 0x77][..])
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
