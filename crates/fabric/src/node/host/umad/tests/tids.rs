//! TransactionIDs of umad users (IBA 1 §13.4.6.2): each response reaches the user whose request
//! it answers, with the high bits that user sent, whatever TIDs other users, the host's own
//! agents, or the same user's other high halves use (module docs of `umad`).

use super::*;
/// A response that comes after its user detached is not handed to the next user of the same
/// agent (Linux drops the responses of a closed `umad` file's agents): counted as an unknown TID.
#[test]
fn a_late_response_does_not_reach_the_next_user() {
    let (mut sim, a, b) = hosts(5);
    echo_dev_mgt(&mut sim, a);
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
    let echo = echo_dev_mgt(&mut sim, a);
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

/// The host's own agents draw their TIDs' high halves themselves; a user's high half gets a
/// number from the host's count. Here an own agent's request carries the high half the count
/// gives first (1, with bit 31 clear, as an SA client's or a CM's may be) and a user's request
/// the same low 32 bits, both outstanding at once: they leave with two TIDs (the user's number
/// has bit 63 of the TID set, [`UMAD_TID_BIT`], which no own agent's has) and each gets its own
/// response. Before, the user's number was 1: both left with one TID and the later request's
/// agent took both responses.
#[test]
fn a_users_number_is_never_an_own_agents_high_half() {
    let (mut sim, a, b) = hosts(11);
    let echo = echo_dev_mgt(&mut sim, a);
    let own_tid = 0x0000_0001_0000_0abc_u64;
    let local = sim
        .with_node::<Host, _>(b, |h, _, _| {
            h.add_agent(Once {
                out: Some(MadOut {
                    to: MadAddr::gsi(1),
                    mad: mad(MgmtClass::DevMgt, 1, Method::Get, own_tid),
                }),
                got: Vec::new(),
            })
        })
        .unwrap();
    let u = attach(&mut sim, b);
    let user_tid = 0x0abc;
    send(
        &mut sim,
        b,
        u,
        MadAddr::gsi(1),
        &mad(MgmtClass::DevMgt, 1, Method::Get, user_tid),
    )
    .unwrap();
    sim.run_until_idle(10_000);
    let sent = &sim
        .node::<Host>(a)
        .unwrap()
        .agent::<Echo>(echo)
        .unwrap()
        .tids;
    assert_eq!(sent.len(), 2);
    assert_ne!(sent[0], sent[1], "two TIDs on the wire: {sent:x?}");
    assert!(sent.contains(&own_tid), "{sent:x?}");
    assert!(sent.iter().any(|t| t & UMAD_TID_BIT != 0), "{sent:x?}");
    let got = take(&mut sim, b, u);
    assert_eq!(got.len(), 1, "one response for the user");
    let h = MadHeaderRepr::parse_bytes(&got[0].mad).unwrap();
    assert_eq!(h.transaction_id, user_tid);
    let host = sim.node::<Host>(b).unwrap();
    let got = &host.agent::<Once>(local).unwrap().got;
    assert_eq!(got.len(), 1, "one response for the host's own agent");
    let h = MadHeaderRepr::parse_bytes(&got[0].mad).unwrap();
    assert_eq!(h.transaction_id, own_tid);
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
    let echo = echo_dev_mgt(&mut sim, a);
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
    echo_dev_mgt(&mut sim, a);
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

/// The host's count of numbers wraps after 2^31 - 1 new high halves (a client cycling its high
/// bits reaches it; every number has bit 63 of the TID set, [`UMAD_TID_BIT`], so the count
/// holds 31 bits): from its last value, 2^31 - 1, it starts again at 1, and a number an
/// attached user still holds is skipped, so two users never send the same TID and each gets
/// its own response. Before, the user after the wrap was given the first user's number: both
/// requests left with one TID and both responses went to the later.
#[test]
fn a_wrapped_count_skips_the_numbers_users_hold() {
    let (mut sim, a, b) = hosts(9);
    echo_dev_mgt(&mut sim, a);
    let req = mad(MgmtClass::DevMgt, 1, Method::Get, 0x66);
    let u1 = attach(&mut sim, b);
    send(&mut sim, b, u1, MadAddr::gsi(1), &req).unwrap();
    let u2 = attach(&mut sim, b);
    // The last value the count takes (its wrap from u32::MAX is no longer the one it meets).
    sim.node_mut::<Host>(b).unwrap().umad_hi_tid = 0x7fff_ffff;
    send(&mut sim, b, u2, MadAddr::gsi(1), &req).unwrap();
    let host = sim.node::<Host>(b).unwrap();
    let (n1, n2) = (
        host.umad(u1).unwrap().wire_high(0),
        host.umad(u2).unwrap().wire_high(0),
    );
    let bit = (UMAD_TID_BIT >> 32) as u32;
    assert_eq!(
        (n1, n2),
        (Some(bit | 1), Some(bit | 2)),
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

/// Withdrawing a user's registrations (what the ibsim server does when an SM client closes its
/// `issm` file: SET_ISSM 0) stops the requests for it, not the responses to its requests
/// outstanding: each of its two high halves still gets its own response, as ibsim routes a
/// response by its TID whether the client is an SM or not (`ibsim.c` `find_client`,
/// docs/IBSIM.md).
#[test]
fn withdrawn_registrations_leave_the_outstanding_responses() {
    let (mut sim, a, b) = hosts(10);
    echo_dev_mgt(&mut sim, a);
    let u = attach(&mut sim, b);
    let reg = Registration {
        class: MgmtClass::DevMgt,
        version: 1,
        methods: method_mask(&[Method::Set]),
    };
    sim.with_node::<Host, _>(b, |h, _, _| h.umad_register(u, reg))
        .unwrap()
        .unwrap();
    let tids = [0x0000_0000_0000_0777_u64, 0x0000_0001_0000_0777];
    for t in tids {
        let req = mad(MgmtClass::DevMgt, 1, Method::Get, t);
        send(&mut sim, b, u, MadAddr::gsi(1), &req).unwrap();
    }
    sim.with_node::<Host, _>(b, |h, _, _| h.umad_unregister(u));
    sim.run_until_idle(10_000);
    let got: Vec<u64> = take(&mut sim, b, u)
        .iter()
        .map(|m| MadHeaderRepr::parse_bytes(&m.mad).unwrap().transaction_id)
        .collect();
    assert_eq!(got, tids);
    let host = sim.node::<Host>(b).unwrap();
    assert!(host.umad(u).unwrap().registrations().is_empty());
    assert_eq!(host.counters().unknown_tid, 0);
}

/// IBA 1 §13.4.9: the TrapRepress that answers a user's trap reaches that user with the TID it
/// sent, as Linux's MAD layer routes it (`ib_response_mad` counts TrapRepress as a response):
/// the HCA's SMA leaves it to QP0 (it takes only the answers to its own traps 257/258). An
/// OpenSM whose trap 144 never got its TrapRepress kept it outstanding and, made master by a
/// HANDOVER, never ended a sweep.
#[test]
fn a_trap_repress_reaches_the_user_that_sent_the_trap() {
    let (mut sim, a, b) = hosts(3);
    let sm = trap_taker(&mut sim, a);
    let standby = attach(&mut sim, b);
    let tid = 0x0001_0000_0000_0144;
    let trap = mad(MgmtClass::SubnLid, 1, Method::Trap, tid);
    send(&mut sim, b, standby, smp_addr(1), &trap).unwrap();
    sim.run_until_idle(10_000);
    let got = take(&mut sim, a, sm);
    assert_eq!(got.len(), 1);
    let mut repress = got[0].mad.clone();
    repress[3] = u8::from(Method::TrapRepress);
    send(&mut sim, a, sm, got[0].from, &repress).unwrap();
    sim.run_until_idle(10_000);
    let back = take(&mut sim, b, standby);
    assert_eq!(back.len(), 1, "the TrapRepress reaches the trap's sender");
    let h = MadHeaderRepr::parse_bytes(&back[0].mad).unwrap();
    assert_eq!((h.method, h.transaction_id), (Method::TrapRepress, tid));
    assert_eq!(sim.node::<Host>(b).unwrap().counters().unknown_tid, 0);
}
