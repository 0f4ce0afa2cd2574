//! IPoIB connected mode (RFC 4755) on the emulated subnet: hosts connect through their CMs, send
//! unicast over RC (or UC) with the connection MTU, and fall back to UD where a connection cannot
//! be had.

mod common;

use common::connected::*;
use ipoib_fabric::node::cm::{self, CmAppConfig};
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::cm::{cm_mads, sendings};
use ipoib_fabric::testing::*;
use ipoib_proto::ipoib::{
    ConnState, ConnectedConfig, DropReason, InterfaceConfig, Mode, PeerRules,
};
use ipoib_wire::cm::CmMessage;
use ipoib_wire::private_data::service_id::{
    ipoib_cm_service_id, ipoib_cm_service_id_rfc, IpoibCmSidForm,
};
use std::time::Duration;

// RFC 4755 §3.1 (flags), §3.2 (REQ/REP with private data), §3.5 (service ID), §5.1 (MTU).
#[test]
fn two_hosts_ping_and_carry_60000_bytes_over_rc() {
    let seed = seed(41);
    let _g = SeedGuard(seed);
    let mut net = net(2, seed, connected);
    for i in 0..2 {
        let iface = net.interface(i).unwrap();
        assert!(iface.hw_addr().flags.rc(), "RC flag advertised");
        assert_eq!(iface.mtu(), 65520);
        assert_eq!(iface.ud_mtu(), 2044);
    }
    let sent = ping_pairs(&mut net, &[(0, 1)], v4, Duration::from_secs(2));
    assert!(rtt(&net, sent[0]).is_some(), "ping answered");
    udp(&mut net, 0, 1, 60_000);
    run(&mut net, Duration::from_millis(100));
    let got = app(&net, 1).ip().udp_received();
    assert_eq!(got.len(), 1, "one 60,000-byte datagram, unfragmented");
    assert_eq!(got[0].payload.len(), 60_000);
    let conns = net.interface(0).unwrap().connections();
    let ours: Vec<_> = conns.iter().filter(|c| c.active).collect();
    assert_eq!(ours.len(), 1, "{conns:?}");
    assert_eq!(ours[0].state, ConnState::Up);
    assert_eq!(ours[0].mtu, 65520);
    let to1 = v4(&net, 1);
    assert_eq!(net.interface(0).unwrap().path_mtu(to1), 65520);
    assert_eq!(ours[0].service_id >> 56, 0x10);
    assert!(ours[0].tx_packets >= 2);
    assert_eq!(app(&net, 0).conn_counters().unwrap(), Default::default());
}

// A 60,000-byte datagram on a datagram-mode interface is too big; connected mode's ICMP
// answer comes back to the sender.
#[test]
fn datagram_mode_answers_too_big_with_icmp() {
    let seed = seed(42);
    let _g = SeedGuard(seed);
    let mut net = net(2, seed, |_, c| {
        let mut cc = ConnectedConfig::rc();
        cc.mode = Mode::Datagram;
        c.connected = Some(cc);
    });
    assert_eq!(net.interface(0).unwrap().mtu(), 2044);
    let sent = ping_pairs(&mut net, &[(0, 1)], v4, Duration::from_secs(2));
    assert!(rtt(&net, sent[0]).is_some(), "ping answered over UD");
    net.with_interface(0, |i, now| i.set_mode(now, Mode::Connected).unwrap());
    assert_eq!(net.interface(0).unwrap().mtu(), 65520);
    net.with_interface(1, |i, now| i.set_mode(now, Mode::Connected).unwrap());
    udp(&mut net, 0, 1, 60_000);
    run(&mut net, Duration::from_millis(100));
    assert_eq!(app(&net, 1).ip().udp_received().len(), 1);
    assert!(app(&net, 0).ip().too_big_mtus().is_empty());
    // Back to datagram mode: the same datagram is too big for the link, and the sender's IP
    // layer hears so with the UD MTU (docs/DEPLOYED.md "Linux IPoIB": `ipoib_cm_skb_too_long`).
    net.with_interface(0, |i, now| i.set_mode(now, Mode::Datagram).unwrap());
    run(&mut net, Duration::from_millis(100));
    udp(&mut net, 0, 1, 60_000);
    run(&mut net, Duration::from_millis(100));
    let c = net.interface(0).unwrap().counters().clone();
    assert_eq!(c.dropped(DropReason::TooBig), 1, "{c:?}");
    assert_eq!(app(&net, 1).ip().udp_received().len(), 1, "not delivered");
    let mtus: Vec<u32> = app(&net, 0)
        .ip()
        .too_big_mtus()
        .iter()
        .map(|m| m.1)
        .collect();
    assert_eq!(
        mtus,
        vec![2044],
        "ICMP fragmentation needed with the UD MTU"
    );
}

// RFC 4755 §3.1: a peer without the RC and UC flags is reached over UD, with the UD MTU, even
// from an interface in connected mode; a packet too big for UD is answered with ICMP.
#[test]
fn peer_without_flags_is_reached_over_ud() {
    let seed = seed(49);
    let _g = SeedGuard(seed);
    let mut net = net(2, seed, |i, c| {
        if i == 0 {
            c.connected = Some(ConnectedConfig::rc());
        }
    });
    assert!(!net.interface(1).unwrap().hw_addr().flags.rc());
    udp(&mut net, 0, 1, 1000);
    udp(&mut net, 0, 1, 30_000);
    run(&mut net, Duration::from_millis(500));
    let got = app(&net, 1).ip().udp_received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].payload.len(), 1000);
    assert!(net.interface(0).unwrap().connections().is_empty());
    let to1 = v4(&net, 1);
    assert_eq!(net.interface(0).unwrap().path_mtu(to1), 2044);
    let c = net.interface(0).unwrap().counters().clone();
    assert_eq!(c.dropped(DropReason::TooBigForPath), 1, "{c:?}");
    let mtus: Vec<u32> = app(&net, 0)
        .ip()
        .too_big_mtus()
        .iter()
        .map(|m| m.1)
        .collect();
    assert_eq!(mtus, vec![2044]);
}

// RFC 4755 §3.3: REQs that cross end in one connection; the side with the smaller link-layer
// address accepts, the other's REQ is rejected with Consumer Reject, and the one connection
// carries traffic both ways.
#[test]
fn crossing_reqs_end_in_one_connection() {
    let seed = seed(43);
    let _g = SeedGuard(seed);
    let mut net = resolved_then_connected(2, seed, connected);
    // Both send at the same virtual instant: the REQs cross on the wire.
    let (d0, d1) = (v4(&net, 0), v4(&net, 1));
    let now_sent = |net: &mut Subnet, a: usize, dst| {
        net.with_ipoib(a, |app, _| app.ip_mut().send_udp(1, dst, 2, &[7u8; 3000]))
            .unwrap()
            .unwrap()
    };
    now_sent(&mut net, 0, d1);
    now_sent(&mut net, 1, d0);
    run(&mut net, Duration::from_secs(1));
    for i in 0..2 {
        assert_eq!(
            app(&net, i).ip().udp_received().len(),
            1,
            "host {i} got its datagram"
        );
        assert_eq!(up_conns(&net, i).len(), 1, "host {i}: one connection");
        assert!(up_conns(&net, i)[0].1, "host {i} sends on it");
    }
    // One side accepted (passive), the other opened it (active).
    let actives: usize = (0..2)
        .map(|i| up_conns(&net, i).iter().filter(|c| c.0).count())
        .sum();
    assert_eq!(actives, 1);
    let smaller = (0..2)
        .min_by_key(|&i| {
            let h = net.interface(i).unwrap().hw_addr();
            ipoib_wire::ipoib::HwAddr::new(Default::default(), h.qpn, h.gid).to_bytes()
        })
        .unwrap();
    assert!(
        !up_conns(&net, smaller)[0].0,
        "the smaller address accepted"
    );
    let larger = 1 - smaller;
    assert!(
        app(&net, larger)
            .log()
            .any(|l| l.2.contains("REQs crossed")),
        "the larger address rejected the crossing REQ"
    );
    // Both datagrams of a second round travel on the one connection.
    now_sent(&mut net, 0, d1);
    now_sent(&mut net, 1, d0);
    run(&mut net, Duration::from_millis(100));
    for i in 0..2 {
        assert_eq!(app(&net, i).ip().udp_received().len(), 2);
        assert_eq!(up_conns(&net, i).len(), 1);
    }
}

// A REQ the interface rejects (here the RFC 4755 §3.3 loser's Consumer Reject) has no QP of
// ours, but its record still ends in TimeWait: the host takes that event too, so that nothing
// piles up in the CM agent it shares (one left-over event per rejected REQ, before).
#[test]
fn rejected_reqs_leave_no_event_in_the_cm_agent() {
    let seed = seed(43);
    let _g = SeedGuard(seed);
    let mut net = resolved_then_connected(2, seed, connected);
    let (d0, d1) = (v4(&net, 0), v4(&net, 1));
    for (a, dst) in [(0, d1), (1, d0)] {
        net.with_ipoib(a, |app, _| app.ip_mut().send_udp(1, dst, 2, &[7u8; 3000]))
            .unwrap()
            .unwrap();
    }
    run(&mut net, Duration::from_secs(10));
    let larger = 1 - smaller_of_two(&net);
    assert!(
        app(&net, larger)
            .log()
            .any(|l| l.2.contains("REQs crossed")),
        "the larger address rejected the crossing REQ"
    );
    for i in 0..2 {
        assert_eq!(app(&net, i).ip().udp_received().len(), 1, "host {i}");
        let left = unclaimed_cm_events(&mut net, i);
        assert!(left.is_empty(), "host {i}: {left:?}");
    }
}

/// Host 0 runs RFC 4755 rules (trying `spelling` first), host 1 a Linux-style peer: it accepts
/// every REQ, keeps one connection per direction and listens on the 0x10 spelling only.
fn with_linux_peer(seed: u64, rfc_first: bool) -> Subnet {
    let configure: fn(usize, &mut InterfaceConfig) = if rfc_first {
        |i, c| {
            let mut cc = ConnectedConfig::rc();
            if i == 0 {
                cc.spelling = IpoibCmSidForm::Rfc;
            } else {
                cc.rules = PeerRules::Linux;
            }
            c.connected = Some(cc);
        }
    } else {
        |i, c| {
            let mut cc = ConnectedConfig::rc();
            if i == 1 {
                cc.rules = PeerRules::Linux;
            }
            c.connected = Some(cc);
        }
    };
    resolved_then_connected(2, seed, configure)
}

// docs/DEPLOYED.md "Linux IPoIB": a Linux peer opens its own connection to send, while ours
// exists; we accept it, and each side sends on the connection it opened.
#[test]
fn linux_style_peer_one_connection_per_direction() {
    let seed = seed(44);
    let _g = SeedGuard(seed);
    let mut net = with_linux_peer(seed, false);
    udp(&mut net, 0, 1, 30_000);
    run(&mut net, Duration::from_millis(100));
    udp(&mut net, 1, 0, 30_000);
    run(&mut net, Duration::from_millis(100));
    for i in 0..2 {
        assert_eq!(app(&net, i).ip().udp_received().len(), 1, "host {i}");
        let mut c = up_conns(&net, i);
        c.sort();
        // (passive, receive only) and (active, sends).
        assert_eq!(c, vec![(false, false), (true, true)], "host {i}");
    }
    // At once from both sides now that both connections exist: each uses its own.
    udp(&mut net, 0, 1, 60_000);
    udp(&mut net, 1, 0, 60_000);
    run(&mut net, Duration::from_millis(100));
    for i in 0..2 {
        assert_eq!(app(&net, i).ip().udp_received().len(), 2, "host {i}");
        assert_eq!(up_conns(&net, i).len(), 2);
    }
}

// RFC 4755 §3.3 against a peer that does not apply it: whichever side wins, both datagrams
// arrive and no side ends with more than one connection per direction.
#[test]
fn crossing_with_a_linux_style_peer() {
    for s in seeds([45, 46, 47]) {
        let _g = SeedGuard(s);
        let mut net = with_linux_peer(s, false);
        udp(&mut net, 0, 1, 1000);
        udp(&mut net, 1, 0, 1000);
        run(&mut net, Duration::from_secs(3));
        udp(&mut net, 0, 1, 1000);
        udp(&mut net, 1, 0, 1000);
        run(&mut net, Duration::from_secs(3));
        for i in 0..2 {
            assert_eq!(
                app(&net, i).ip().udp_received().len(),
                2,
                "seed {s} host {i}"
            );
            assert!(up_conns(&net, i).len() <= 2, "seed {s} host {i}");
        }
    }
}

// docs/DEPLOYED.md "Linux IPoIB": a Linux host receives only on connections it accepted. Our REQ
// and a Linux-style peer's cross and ours has the smaller address: we accept its REQ (RFC 4755
// §3.3) and it accepts ours too. We send on ours only, also once ours has gone idle while the
// peer keeps using its own: a new REQ, never the peer's connection (before, the connection we
// accepted stayed marked as ours to send on, and carried our next datagram).
#[test]
fn crossing_with_a_linux_style_peer_never_sends_on_its_connection() {
    let seed = seed(40);
    let _g = SeedGuard(seed);
    let mut net = resolved_then_connected(2, seed, |i, c| {
        let mut cc = ConnectedConfig::rc();
        cc.idle_timeout = Duration::from_secs(2);
        if i == 1 {
            cc.rules = PeerRules::Linux;
        }
        c.connected = Some(cc);
    });
    assert_eq!(
        smaller_of_two(&net),
        0,
        "the RFC 4755 host accepts the crossing REQ"
    );
    let (d0, d1) = (v4(&net, 0), v4(&net, 1));
    let send = |net: &mut Subnet, a: usize, dst| {
        net.with_ipoib(a, |app, _| app.ip_mut().send_udp(1, dst, 2, &[7u8; 3000]))
            .unwrap()
            .unwrap()
    };
    send(&mut net, 0, d1);
    send(&mut net, 1, d0);
    run(&mut net, Duration::from_millis(500));
    let mut c = up_conns(&net, 0);
    c.sort();
    assert_eq!(
        c,
        vec![(false, false), (true, true)],
        "ours sends, the peer's does not"
    );
    // The peer keeps sending on its connection; ours goes idle and is released.
    for _ in 0..10 {
        send(&mut net, 1, d0);
        run(&mut net, Duration::from_millis(500));
    }
    assert_eq!(
        up_conns(&net, 0),
        vec![(false, false)],
        "ours released, the peer's in use"
    );
    send(&mut net, 0, d1);
    run(&mut net, Duration::from_millis(100));
    assert_eq!(udp_count(&net, 1), 2);
    let conns = net.interface(0).unwrap().connections();
    let on_peers: u64 = conns
        .iter()
        .filter(|c| !c.active)
        .map(|c| c.tx_packets)
        .sum();
    assert_eq!(on_peers, 0, "{conns:?}");
    assert!(
        sending_to(&net, 0, 1).is_some_and(|c| c.active),
        "a new connection of ours"
    );
}

// RFC 4755 §3.5 and docs/DEPLOYED.md: a peer that only listens on Linux's 0x10 spelling rejects
// the RFC-literal one with REJ reason 8; we try the other at once and remember it.
#[test]
fn rejected_spelling_is_retried_and_remembered() {
    let seed = seed(48);
    let _g = SeedGuard(seed);
    let mut net = with_linux_peer(seed, true);
    udp(&mut net, 0, 1, 20_000);
    run(&mut net, Duration::from_millis(100));
    assert_eq!(
        app(&net, 1).ip().udp_received().len(),
        1,
        "delivered after the retry"
    );
    let conns = net.interface(0).unwrap().connections();
    let up: Vec<_> = conns.iter().filter(|c| c.state == ConnState::Up).collect();
    assert_eq!(up.len(), 1);
    assert_eq!(up[0].service_id >> 56, 0x10, "the spelling that worked");
    assert!(
        app(&net, 0).log().any(|l| l.2.contains("other spelling")),
        "the REJ 8 was seen"
    );
    // Connections go (datagram mode), come back: straight to the spelling that worked.
    net.with_interface(0, |f, now| f.set_mode(now, Mode::Datagram).unwrap());
    run(&mut net, Duration::from_secs(1));
    assert!(up_conns(&net, 0).iter().all(|c| !c.0), "ours released");
    net.with_interface(0, |f, now| f.set_mode(now, Mode::Connected).unwrap());
    let before = app(&net, 0)
        .log()
        .filter(|l| l.2.contains("other spelling"))
        .count();
    udp(&mut net, 0, 1, 20_000);
    run(&mut net, Duration::from_millis(100));
    assert_eq!(app(&net, 1).ip().udp_received().len(), 2);
    let after = app(&net, 0)
        .log()
        .filter(|l| l.2.contains("other spelling"))
        .count();
    assert_eq!(before, after, "no second REJ 8");
}

/// Host 0 in connected mode with Linux's rules; host 1 claims RC in its address but runs no
/// connected mode of its own.
fn linux_rules_to_rc_claimer(i: usize, c: &mut InterfaceConfig) {
    if i == 0 {
        c.connected = Some(ConnectedConfig {
            rules: PeerRules::Linux,
            ..ConnectedConfig::rc()
        });
    } else {
        c.flags = ipoib_wire::ipoib::HwAddrFlags::RC;
    }
}

// docs/DEPLOYED.md "Linux IPoIB": a Linux host's REQ always carries 0x10 | the peer's UD QPN
// (`ipoib_cm_send_req`), and a REJ ends the attempt (`ipoib_cm_tx_handler`). The Linux-style
// peer does the same: rejected with reason 8 (the peer's CM listens on neither spelling), it
// sends no second REQ with the RFC-literal spelling, and the packet goes over UD.
#[test]
fn linux_style_peer_does_not_try_the_other_spelling() {
    let seed = seed(52);
    let _g = SeedGuard(seed);
    let mut net = net(2, seed, linux_rules_to_rc_claimer);
    let qpn = net.interface(1).unwrap().config().qpn;
    let rng = net.sim().fork_rng(9);
    // A CM with no listener: REJ reason 8 to every REQ.
    ipoib_fabric::testing::cm::with_host(&mut net, 1, |h, _| {
        let port = h.mgmt_port();
        cm::install(h, CmAppConfig::new(port), rng);
    });
    udp(&mut net, 0, 1, 1000);
    run(&mut net, Duration::from_millis(100));
    assert_eq!(app(&net, 1).ip().udp_received().len(), 1, "over UD");
    let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
    let mads = sendings(&cm_mads(&pcap));
    let reqs: Vec<u64> = mads
        .iter()
        .filter_map(|m| match &m.msg {
            CmMessage::Req(r) => Some(r.service_id),
            _ => None,
        })
        .collect();
    assert_eq!(reqs, vec![ipoib_cm_service_id(qpn)], "{mads:?}");
}

/// Host 0 in connected mode; host 1 claims RC in its address but runs no connected mode of its
/// own (no interface listens for its REQs).
fn connected_to_rc_claimer(i: usize, c: &mut InterfaceConfig) {
    if i == 0 {
        c.connected = Some(ConnectedConfig::rc());
    } else {
        c.flags = ipoib_wire::ipoib::HwAddrFlags::RC;
    }
}

// RFC 4755 §7 (any unicast over any mode) and docs/DEPLOYED.md "Linux IPoIB": a peer that
// advertises RC but rejects every REQ (here: its listeners refuse, REJ reason 28) is
// reached over UD; the packets queued behind the attempt are sent, not lost, and the next
// attempt waits `retry_after`.
#[test]
fn rejected_connection_falls_back_to_ud_with_its_queue() {
    let seed = seed(50);
    let _g = SeedGuard(seed);
    let mut net = net(2, seed, connected_to_rc_claimer);
    // Its CM rejects every REQ to its service IDs: REJ reason 28, consumer reject.
    let qpn = net.interface(1).unwrap().config().qpn;
    let rng = net.sim().fork_rng(9);
    ipoib_fabric::testing::cm::with_host(&mut net, 1, |h, _| {
        let port = h.mgmt_port();
        let cfg = CmAppConfig {
            accept: false,
            ..CmAppConfig::new(port)
        };
        let cmh = cm::install(h, cfg, rng);
        for sid in [ipoib_cm_service_id(qpn), ipoib_cm_service_id_rfc(qpn)] {
            cm::listen(h, cmh, sid, u64::MAX).unwrap();
        }
    });
    assert!(net.interface(1).unwrap().hw_addr().flags.rc());
    for k in 0..3u8 {
        let dst = v4(&net, 1);
        net.with_ipoib(0, |a, _| a.ip_mut().send_udp(1, dst, 2, &[k; 1000]))
            .unwrap()
            .unwrap();
    }
    run(&mut net, Duration::from_millis(500));
    let got: Vec<u8> = app(&net, 1)
        .ip()
        .udp_received()
        .iter()
        .map(|u| u.payload[0])
        .collect();
    assert_eq!(
        got,
        vec![0, 1, 2],
        "the queued datagrams went over UD, in order"
    );
    let log: Vec<String> = app(&net, 0).log().map(|l| l.2.clone()).collect();
    assert_eq!(
        log.iter().filter(|l| l.contains("connecting to")).count(),
        1,
        "{log:?}"
    );
    assert!(log.iter().any(|l| l.contains("failed")), "{log:?}");
    // Within retry_after (1 s): straight over UD, no new REQ.
    udp(&mut net, 0, 1, 1000);
    run(&mut net, Duration::from_millis(100));
    assert_eq!(app(&net, 1).ip().udp_received().len(), 4);
    let reqs = |net: &Subnet| {
        app(net, 0)
            .log()
            .filter(|l| l.2.contains("connecting to"))
            .count()
    };
    assert_eq!(reqs(&net), 1);
    let to1 = v4(&net, 1);
    assert_eq!(
        net.interface(0).unwrap().path_mtu(to1),
        2044,
        "UD meanwhile"
    );
    // After it: tried again.
    run(&mut net, Duration::from_secs(2));
    udp(&mut net, 0, 1, 1000);
    run(&mut net, Duration::from_millis(500));
    assert_eq!(app(&net, 1).ip().udp_received().len(), 5);
    assert_eq!(reqs(&net), 2, "a new attempt after retry_after");
    assert!(net
        .interface(0)
        .unwrap()
        .connections()
        .iter()
        .all(|c| c.state != ConnState::Up));
}

// A peer that advertises RC but whose CM never answers: the REQ is retried (Max CM Retries 15,
// IBA 1 §12.7, about 6.4 s apart); meanwhile the queue holds 16 packets and the rest go over UD.
// When the attempt ends (here the neighbour entry, unused while everything waits, expires first
// and releases it, RFC 4755 §3.4) the queue goes over UD too. Nothing is lost.
#[test]
fn silent_peer_times_out_and_nothing_is_lost() {
    let seed = seed(51);
    let _g = SeedGuard(seed);
    let mut net = net(2, seed, connected_to_rc_claimer);
    // Host 1 pings host 0 first, so that host 0 knows it (3 packets wait per unresolved
    // neighbour, as on Linux). The echo reply is the first packet for the connection: it waits
    // in the queue with 15 of the datagrams.
    let sent = ping_pairs(&mut net, &[(1, 0)], v4, Duration::from_millis(100));
    assert!(
        rtt(&net, sent[0]).is_none(),
        "the reply waits for the connection"
    );
    let dst = v4(&net, 1);
    net.with_ipoib(0, |a, _| {
        for k in 0..20u8 {
            a.ip_mut().send_udp(1, dst, 2, &[k; 100]).unwrap();
        }
    });
    run(&mut net, Duration::from_secs(1));
    assert_eq!(
        app(&net, 1).ip().udp_received().len(),
        5,
        "the overflow went over UD"
    );
    run(&mut net, Duration::from_secs(600));
    let mut got: Vec<u8> = app(&net, 1)
        .ip()
        .udp_received()
        .iter()
        .map(|u| u.payload[0])
        .collect();
    got.sort();
    assert_eq!(got, (0..20).collect::<Vec<u8>>());
    assert!(rtt(&net, sent[0]).is_some(), "the echo reply arrived too");
}

// The peer's connection QP dies with five datagrams posted on ours: the first send fails (RC
// retry exceeded, no retries as in Linux's REQ) and takes our QP to Error, which flushes the four
// behind it (IBA 1 §10.3.1). Every lost datagram is counted: one failed send, four flushed ones
// (the flushed ones were counted nowhere before).
#[test]
fn sends_flushed_behind_a_failed_send_are_counted() {
    let seed = seed(76);
    let _g = SeedGuard(seed);
    let mut net = resolved_then_connected(2, seed, connected);
    udp(&mut net, 0, 1, 1000);
    run(&mut net, Duration::from_millis(100));
    assert_eq!(udp_count(&net, 1), 1);
    let qps1 = app(&net, 1).conn_qps();
    kill_qp(&mut net, 1, qps1[0].1);
    for _ in 0..5 {
        udp(&mut net, 0, 1, 1000);
    }
    run(&mut net, Duration::from_secs(5));
    assert_eq!(udp_count(&net, 1), 1, "all five lost");
    let c = app(&net, 0).conn_counters().unwrap();
    assert_eq!((c.send_errors, c.sends_flushed), (1, 4), "{c:?}");
}

/// A CM MAD (method Send, class 0x07 version 2, IBA 1 §12.6) carrying `m` with TID `tid`.
fn cm_send(tid: u64, m: &ipoib_wire::cm::CmMessage) -> Vec<u8> {
    use ipoib_wire::mad::{MadHeaderRepr, MadStatus, Method, MgmtClass};
    let mut b = vec![0u8; ipoib_wire::mad::MAD_LEN];
    MadHeaderRepr {
        base_version: ipoib_wire::mad::BASE_VERSION,
        mgmt_class: MgmtClass::ComMgt,
        class_version: ipoib_wire::mad::CM_CLASS_VERSION,
        method: Method::Send,
        status: MadStatus::SUCCESS,
        class_specific: 0,
        transaction_id: tid,
        attribute_id: m.attribute_id(),
        attribute_modifier: 0,
    }
    .emit(&mut b);
    m.emit(&mut b[ipoib_wire::mad::MAD_HEADER_LEN..]).unwrap();
    b
}

// A REQ withdrawn (IBA 1 §12.6 Table 108: REJ reason 4 with the requester's CA GUID in its ARI,
// Linux `cm_destroy_id`) before the interface took it: the CM record is already in TimeWait
// when the interface's accept (or reject) reaches the agent, which refuses it. The host still
// takes the record's events (Rejected, TimeWaitExit), so that nothing is left for good in the
// CM agent it shares, and makes no QP for it.
#[test]
fn req_withdrawn_before_the_interface_answers_leaves_no_event() {
    use ipoib_proto::mad_agent::{MadAddr, MadAgent, MadIn};
    use ipoib_wire::cm::{CmMessage, RejMsg, RejReason, RejRepr, ReqMsg, ReqRepr, RespondedTo};
    use ipoib_wire::private_data::ipoib_cm::IpoibCmPrivateDataRepr;
    use ipoib_wire::Guid;
    let seed = seed(44);
    let _g = SeedGuard(seed);
    let mut net = resolved_then_connected(2, seed, connected);
    let (peer_lid, peer_gid) = {
        let h = net.host(0);
        let lid = net.host_device(0).hca().port(h.port).unwrap().lid;
        (lid, net.interface(0).unwrap().hw_addr().gid)
    };
    let sid = net.interface(1).unwrap().cm_service_ids()[0];
    let qps_before = app(&net, 1).conn_qps().len();
    let guid = Guid(0x0002_c903_00ee_0001);
    let mut req = ReqRepr::parse(&ReqMsg::new_unchecked(&[0u8; 232][..])).unwrap();
    req.local_comm_id = 0x1234_5678;
    req.service_id = sid;
    req.local_ca_guid = guid;
    req.local_qpn = 0x77;
    req.transport_service_type = ipoib_wire::cm::TransportServiceType::Rc;
    req.path_packet_payload_mtu = ipoib_wire::Mtu::Mtu2048;
    req.partition_key = ipoib_wire::PKey::DEFAULT;
    req.max_cm_retries = 3;
    req.remote_cm_response_timeout = 20;
    req.local_cm_response_timeout = 20;
    req.primary_path.local_port_lid = peer_lid;
    req.primary_path.local_port_gid = ipoib_wire::Gid::new(peer_gid.subnet_prefix(), 0xee01);
    req.primary_path.local_ack_timeout = 15;
    req.primary_path.subnet_local = true;
    IpoibCmPrivateDataRepr::linux(0x00_0e_e1)
        .emit(&mut req.private_data)
        .unwrap();
    let mut rej = RejRepr::parse(&RejMsg::new_unchecked(&[0u8; 232][..])).unwrap();
    rej.local_comm_id = req.local_comm_id;
    rej.message_rejected = RespondedTo::Other;
    rej.reason = RejReason::Timeout;
    rej.set_ari(&guid.0.to_be_bytes());
    let node = net.host(1).node;
    net.sim_mut()
        .with_node::<ipoib_fabric::node::host::Host, _>(node, |h, now, tx| {
            let id = h.class_server(ipoib_wire::mad::MgmtClass::ComMgt).unwrap();
            let cm = h.agent_mut::<ipoib_proto::cm::Cm>(id).unwrap();
            for m in [CmMessage::Req(req), CmMessage::Rej(rej)] {
                cm.handle_mad(
                    now,
                    MadIn {
                        from: MadAddr::gsi(peer_lid),
                        mad: cm_send(0x99, &m),
                    },
                );
            }
            h.drive(now, tx);
        })
        .unwrap();
    run(&mut net, Duration::from_secs(10));
    let left = unclaimed_cm_events(&mut net, 1);
    assert!(left.is_empty(), "host 1: {left:?}");
    assert_eq!(app(&net, 1).conn_qps().len(), qps_before, "no QP left");
    assert!(
        net.interface(1)
            .unwrap()
            .connections()
            .iter()
            .all(|c| c.active),
        "the interface holds no record of the withdrawn request"
    );
}
