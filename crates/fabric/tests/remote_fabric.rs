//! The subnet across processes (docs/UDP-FABRIC.md), deterministically: a fabric agent and host
//! agents exchanging datagrams through in-memory queues (tests/common/remote.rs). Hosts attach, get
//! their LIDs from the SM, join the IPoIB broadcast group (draft-ietf-ipoib-ip-over-infiniband-06
//! §5) and ping; hostile and silent hosts and garbage are handled by the fabric.

#[path = "common/remote.rs"]
mod remote;

use ipoib_fabric::hw::mgmt::{Config, PortState};
use ipoib_fabric::hw::sim::Device;
use ipoib_fabric::hw::sim::PortRef;
use ipoib_fabric::node::remote::Remote;
use ipoib_fabric::testing::udp4;
use ipoib_wire::packet::fill_crcs;
use ipoib_wire::udp_fabric::{foreign_reject, DatagramRepr, MessageRepr, RejectReason};
use proptest::prelude::*;
use remote::{addr, Net};
use std::time::Duration;

const SEC: Duration = Duration::from_secs(1);

fn all_carrier(net: &Net) -> bool {
    (0..net.peers.len()).all(|i| net.carrier(i))
}

/// Rewrites the Packet datagrams a host sends with `f` (then fixes the CRCs).
fn tamper_packets(f: impl Fn(&mut [u8]) + 'static) -> remote::Tamper {
    Box::new(move |d: &[u8]| {
        let r = DatagramRepr::parse(d).ok()?;
        let MessageRepr::Packet(p) = r.message else {
            return None;
        };
        let mut p = p.to_vec();
        f(&mut p);
        fill_crcs(&mut p).ok()?;
        DatagramRepr {
            session: r.session,
            message: MessageRepr::Packet(&p),
        }
        .to_vec()
        .ok()
    })
}

// A remote host's RC requester keeps more packets unacknowledged than the emulated engine's
// default of 128 (`REMOTE_RC_WINDOW`, docs/UDP-FABRIC.md "Timing"): with 1 ms between the
// processes each way, 30 IPoIB-CM packets of 60,000 bytes (about 450 InfiniBand packets of 4 KiB)
// are on their way to the fabric at once, beyond 128, and all arrive whole.
#[test]
fn a_remote_hosts_rc_window_spans_the_path_between_processes() {
    let mut net = Net::new_external_connected(2, 5);
    assert!(net.run_until(2 * SEC, all_carrier), "hosts did not come up");
    // The first packet resolves the peer and sets up the IPoIB-CM connection.
    let first = udp4(addr(0), addr(1), 64, b"first");
    net.send_from_os(0, &first);
    net.run_for(Duration::from_millis(300));
    assert_eq!(net.take_to_os(1), [first]);
    net.latency = Duration::from_millis(1);
    let big = udp4(addr(0), addr(1), 64, &vec![0x5a; 60_000 - 28]);
    for _ in 0..30 {
        net.send_from_os(0, &big);
    }
    let (mut most, deadline) = (0, net.now + 2 * SEC);
    loop {
        net.collect();
        most = most.max(net.in_flight_from(0));
        if !net.step(deadline) {
            break;
        }
    }
    let got = net.take_to_os(1).iter().filter(|p| **p == big).count();
    assert_eq!(got, 30, "every packet arrives whole");
    assert!(most > 200, "at most {most} datagrams in flight");
}

// A host that takes a step's datagrams as `ipoib attach` does (`RemoteHost::queue_datagram`:
// each packet onto the host's cable without running the host, then one run for all of them),
// and a fabric that takes them as `ipoib fabric` does (`FabricServer::queue_datagram`: what the
// slots queue for the hosts moved into datagrams once, by the run), behave as those that run
// after each datagram (`handle_datagram`): the same datagrams reach the fabric at the same
// times, the same packets reach the OS. And a queued packet waits, at the host's present, for
// the run.
#[test]
fn queued_datagrams_run_once_and_change_nothing_on_the_wire() {
    let run = |queued: bool| {
        let mut net = Net::new_external_connected(2, 9);
        net.queued = queued;
        assert!(net.run_until(2 * SEC, all_carrier), "hosts did not come up");
        let first = udp4(addr(0), addr(1), 64, b"first");
        net.send_from_os(0, &first);
        net.run_for(Duration::from_millis(300));
        let big = udp4(addr(0), addr(1), 64, &vec![0x5a; 60_000 - 28]);
        for _ in 0..8 {
            net.send_from_os(0, &big);
        }
        net.run_for(Duration::from_millis(300));
        let back = udp4(addr(1), addr(0), 64, b"back");
        net.send_from_os(1, &back);
        net.run_for(Duration::from_millis(300));
        (
            std::mem::take(&mut net.to_fabric),
            net.take_to_os(1),
            net.take_to_os(0),
        )
    };
    let (per_datagram, queued) = (run(false), run(true));
    assert_eq!(queued.1.len(), 9, "every packet reached B's OS");
    assert_eq!(queued.2.len(), 1, "the answer reached A's OS");
    assert!(per_datagram.0.len() > 100, "{}", per_datagram.0.len());
    assert!(
        per_datagram == queued,
        "the same datagrams, times and packets"
    );

    // A queued packet is on the cable at the present, not yet run.
    let mut net = Net::new_external_connected(2, 9);
    net.queued = true;
    assert!(net.run_until(2 * SEC, all_carrier), "hosts did not come up");
    net.send_from_os(0, &udp4(addr(0), addr(1), 64, b"x"));
    let deadline = net.now + SEC;
    let mut checked = 0;
    while checked == 0 {
        assert!(net.step(deadline), "a packet for B");
        // What the fabric sent in this step, taken before the next step puts it on the wire.
        while let Some((to, d)) = net.fabric.poll_transmit() {
            let packet = matches!(
                DatagramRepr::parse(&d),
                Ok(DatagramRepr {
                    message: MessageRepr::Packet(_),
                    ..
                })
            );
            if to != 1 || !packet {
                continue;
            }
            let h = &mut net.peers[1].host;
            let now = h.now();
            let delivered = h.uplink().unwrap().counters().from_network;
            h.queue_datagram(now, &d);
            assert_eq!(h.uplink().unwrap().counters().from_network, delivered + 1);
            assert_eq!(
                h.sim().unwrap().next_event_at(),
                Some(now),
                "waits for the run"
            );
            h.handle_timeout(now);
            assert!(h.sim().unwrap().next_event_at().is_none_or(|t| t > now));
            checked += 1;
        }
    }
}

#[test]
fn two_hosts_attach_join_and_ping() {
    let mut net = Net::new(2, 1);
    assert!(net.run_until(2 * SEC, all_carrier), "hosts did not come up");
    // The fabric gave each host a slot of its own, and the SM's configuration reached it.
    let (a, b) = (net.fabric.slot(0).unwrap(), net.fabric.slot(1).unwrap());
    assert!(a.is_attached() && b.is_attached());
    assert_ne!(a.lid(), 0);
    assert_ne!(a.lid(), b.lid());
    for i in 0..2 {
        let id = net.peers[i].host.identity().unwrap().clone();
        let slot = net.fabric.slot(i).unwrap();
        assert_eq!(id.node_guid, slot.node_guid(), "host {i}");
        let port = net.peers[i]
            .host
            .host()
            .unwrap()
            .hca()
            .port(id.port)
            .unwrap();
        assert_eq!(port.lid, slot.lid());
        assert_eq!(port.state, PortState::Active);
        assert_eq!(port.port_gid(), slot.gid());
    }
    assert!(net.ping_and_wait(0, addr(1), SEC), "0 -> 1");
    assert!(net.ping_and_wait(1, addr(0), SEC), "1 -> 0");
    let c = net.fabric.counters();
    assert_eq!(c.attached, 2);
    assert_eq!(c.malformed + c.unknown_session + c.unexpected, 0, "{c:?}");
    for i in 0..2 {
        let s = net.fabric.slot(i).unwrap().counters();
        assert!(s.from_host > 0 && s.to_host > 0, "{s:?}");
        assert_eq!(s.dropped_from_host(), 0, "{s:?}");
    }
}

// A capture set before the host attached (`ipoib attach --pcap`) records its cable from its
// first packet on, both ways: the joins and their answers (no SMPs: the fabric's side of the slot
// answers them, docs/UDP-FABRIC.md); then a ping's
// request from it and the reply to it, as whole packets with their CRCs.
#[test]
fn a_remote_hosts_capture_records_its_cable_both_ways() {
    use ipoib_fabric::hw::capture::Capture;
    use ipoib_wire::pcap::CaptureReader;
    let mut net = Net::new(2, 1);
    net.peers[0].host.set_capture(Capture::new());
    assert!(net.run_until(2 * SEC, all_carrier));
    let lid = net.fabric.slot(0).unwrap().lid();
    let (mut file, mut seen) = (Vec::new(), 0);
    // (packets from the host, packets to it) in what the capture took since the last look.
    let mut take = |net: &mut Net| {
        file.extend(net.peers[0].host.capture_mut().unwrap().take_bytes());
        let packets = CaptureReader::read_all(&file[..]).unwrap();
        let mut counts = (0, 0);
        for p in &packets[seen..] {
            assert!(
                ipoib_wire::packet::Packet::parse(&p.data).is_ok(),
                "{:02x?}",
                p.data
            );
            match u16::from_be_bytes([p.data[6], p.data[7]]) == lid {
                true => counts.0 += 1,
                false => counts.1 += 1,
            }
        }
        seen = packets.len();
        counts
    };
    let (from, to) = take(&mut net);
    assert!(
        from > 0 && to > 0,
        "bring-up: {from} from the host, {to} to it"
    );
    assert!(net.ping_and_wait(0, addr(1), SEC));
    let (from, to) = take(&mut net);
    assert!(
        from >= 1 && to >= 1,
        "ping: {from} from the host, {to} to it"
    );
    assert!(net.peers[0].host.take_capture().is_some());
    assert!(net.peers[0].host.capture_mut().is_none());
}

#[test]
fn no_free_slot_is_rejected() {
    let mut net = Net::new(3, 2);
    // Two slots for three hosts.
    net.opts = remote::fabric_opts(2, 2);
    net.restart_fabric();
    net.run_for(SEC);
    let attached = (0..3)
        .filter(|&i| net.peers[i].host.link().is_attached())
        .count();
    assert_eq!(attached, 2);
    assert!(net.fabric.counters().rejected > 0);
    let third = (0..3)
        .find(|&i| !net.peers[i].host.link().is_attached())
        .unwrap();
    let mut saw = false;
    while let Some(e) = net.peers[third].host.poll_status() {
        saw |= e == ipoib_fabric::node::remote::HostLinkEvent::Rejected(RejectReason::NoFreeSlot);
    }
    assert!(saw);
}

// IBA 1 §7.11.1 (SLID), §8.3.1 (SGID), §10.9.2 (P_Key): the fabric does not take a host's word
// for another host's identity.
#[test]
fn spoofed_lid_is_dropped_and_counted() {
    let mut net = Net::new(3, 3);
    assert!(net.run_until(2 * SEC, all_carrier));
    let victim = net.fabric.slot(0).unwrap().lid();
    net.peers[2].tamper = Some(tamper_packets(move |p| {
        p[6..8].copy_from_slice(&victim.to_be_bytes());
    }));
    // The hostile host's ARP and everything after it claim the victim's LID.
    assert!(!net.ping_and_wait(2, addr(0), SEC));
    let s = net.fabric.slot(2).unwrap().counters();
    assert!(s.spoofed_lid > 0, "{s:?}");
    // The honest hosts still talk.
    assert!(net.ping_and_wait(0, addr(1), SEC));
    assert!(net.ping_and_wait(1, addr(0), SEC));
}

#[test]
fn spoofed_gid_and_foreign_pkey_are_dropped_and_counted() {
    let mut net = Net::new(3, 4);
    assert!(net.run_until(2 * SEC, all_carrier));
    let victim = net.fabric.slot(0).unwrap().gid();
    // An ARP request goes to the broadcast group, with a GRH (IPoIB multicast, §6): its SGID
    // is rewritten to the victim's GID. (The hosts know each other from their gratuitous ARPs,
    // so the request is for an address nobody has.)
    net.peers[2].tamper = Some(tamper_packets(move |p| {
        if p[1] & 3 == 3 {
            p[16..32].copy_from_slice(&victim.0);
        }
    }));
    assert!(!net.ping_and_wait(2, addr(40), SEC));
    let s = net.fabric.slot(2).unwrap().counters();
    assert!(s.spoofed_gid > 0, "{s:?}");
    assert_eq!(s.spoofed_lid, 0);
    // Now a P_Key the port's table does not hold (0x8001), in the BTH after LRH (and GRH).
    net.peers[2].tamper = Some(tamper_packets(|p| {
        let bth = if p[1] & 3 == 3 { 48 } else { 8 };
        p[bth + 2..bth + 4].copy_from_slice(&0x8001u16.to_be_bytes());
    }));
    assert!(!net.ping_and_wait(2, addr(1), SEC));
    let s = net.fabric.slot(2).unwrap().counters();
    assert!(s.bad_pkey > 0, "{s:?}");
}

// IBA 1 §7.2: a data packet from a port that is not Active is discarded. The slot's port leaves
// Active at the fabric (its SMA's state, the SM's to set) while the host, which has not heard of
// it, still sends: the slot drops what it sends and counts it; Active again, the host talks again.
#[test]
fn data_from_a_port_the_fabric_holds_not_active_is_dropped_and_counted() {
    let mut net = Net::new(2, 7);
    assert!(net.run_until(2 * SEC, all_carrier));
    assert!(net.ping_and_wait(1, addr(0), SEC));
    let set_state = |net: &mut Net, state| {
        let node = net.fabric.built().nodes[net.fabric.slot_topo_node(1).unwrap()];
        let slot = net.fabric.slot(1).unwrap();
        let mut c = slot.port_config(slot.port()).unwrap();
        c.state = state;
        net.fabric
            .sim_mut()
            .with_node::<Remote, _>(node, |r, now, tx| {
                r.sma_mut().configure(now, Config::Port(c), tx)
            })
            .unwrap();
    };
    set_state(&mut net, PortState::Armed);
    let before = net.fabric.slot(1).unwrap().counters().from_host;
    assert!(!net.ping_and_wait(1, addr(0), SEC));
    let s = net.fabric.slot(1).unwrap().counters();
    assert!(s.port_not_active > 0, "{s:?}");
    assert_eq!(s.from_host, before, "{s:?}");
    set_state(&mut net, PortState::Active);
    assert!(net.ping_and_wait(1, addr(0), SEC));
}

#[test]
fn silent_host_loses_its_link_then_reattaches() {
    let mut net = Net::new(2, 5);
    assert!(net.run_until(2 * SEC, all_carrier));
    let slot = net.fabric.slot_topo_node(1).unwrap();
    let node = net.fabric.built().nodes[slot];
    let port = net.fabric.slot(1).unwrap().port();
    let link = net.fabric.sim().link_of(PortRef { node, port }).unwrap();
    assert!(net.fabric.sim().link(link).up);
    net.peers[1].alive = false;
    net.run_for(SEC);
    assert_eq!(net.fabric.counters().timed_out, 1);
    assert!(!net.fabric.slot(1).unwrap().is_attached());
    assert!(
        !net.fabric.sim().link(link).up,
        "the silent host's cable is down"
    );
    // It wakes up: its keepalive meets an unknown session, it attaches again (same slot, by its
    // hint), gets its configuration again and joins again.
    net.peers[1].alive = true;
    assert!(net.run_until(3 * SEC, |n| n.fabric.slot(1).unwrap().is_attached()));
    assert!(net.fabric.sim().link(link).up);
    assert_eq!(net.peers[1].host.builds(), 1, "same identity, same host");
    let c = net.fabric.counters();
    assert_eq!((c.attached, c.reattached), (3, 1), "{c:?}");
    assert!(net.peers[1].host.link().counters().lost >= 1);
    assert!(net.run_until(3 * SEC, all_carrier));
    assert!(net.ping_and_wait(0, addr(1), SEC));
    assert!(net.ping_and_wait(1, addr(0), SEC));
    // Its memberships were dropped when it went silent, and are back since it joined again.
    assert!(net.fabric.counters().memberships_dropped >= 1);
    let gid = net.fabric.slot(1).unwrap().gid();
    assert!(net
        .fabric
        .sa()
        .unwrap()
        .groups()
        .iter()
        .any(|g| g.members.iter().any(|(m, _)| *m == gid)));
}

#[test]
fn hosts_survive_a_fabric_restart() {
    let mut net = Net::new(2, 6);
    assert!(net.run_until(2 * SEC, all_carrier));
    assert!(net.ping_and_wait(0, addr(1), SEC));
    net.restart_fabric();
    // Keepalives meet a fabric that knows no session: both attach again and rejoin.
    assert!(net.run_until(3 * SEC, |n| (0..2).all(|i| n
        .fabric
        .slot(i)
        .unwrap()
        .is_attached())));
    assert!(net.run_until(3 * SEC, all_carrier));
    for i in 0..2 {
        assert_eq!(net.peers[i].host.builds(), 1, "host {i} kept its identity");
    }
    assert!(net.ping_and_wait(0, addr(1), 2 * SEC));
    assert!(net.ping_and_wait(1, addr(0), 2 * SEC));
}

#[test]
fn detach_frees_the_slot() {
    let mut net = Net::new(2, 7);
    assert!(net.run_until(2 * SEC, all_carrier));
    let now = net.now;
    net.peers[1].host.detach(now);
    net.run_for(Duration::from_millis(10));
    assert_eq!(net.fabric.counters().detached, 1);
    assert!(!net.fabric.slot(1).unwrap().is_attached());
    assert_eq!(net.fabric.counters().timed_out, 0);
    // The port is gone: the SA dropped its memberships (the broadcast group's among them), the
    // other host's stay.
    assert!(net.fabric.counters().memberships_dropped >= 1);
    let gone = net.fabric.slot(1).unwrap().gid();
    let stays = net.fabric.slot(0).unwrap().gid();
    let sa = net.fabric.sa().unwrap();
    assert!(sa
        .groups()
        .iter()
        .all(|g| g.members.iter().all(|(m, _)| *m != gone)));
    assert!(sa
        .groups()
        .iter()
        .any(|g| g.members.iter().any(|(m, _)| *m == stays)));
}

#[test]
fn garbage_datagrams_are_counted() {
    let mut net = Net::new(1, 8);
    assert!(net.run_until(2 * SEC, all_carrier));
    let now = net.now;
    net.fabric.handle_datagram(now, 9, b"hello");
    // Another version: a request as long as version 1's (20 bytes), and a bare header.
    let mut other = [0; 20];
    other[..4].copy_from_slice(&[0x49, 0x42, 7, 1]);
    net.fabric.handle_datagram(now, 9, &other);
    net.fabric.handle_datagram(now, 9, &other[..12]);
    // A packet from a peer with no session.
    let p = DatagramRepr {
        session: 5,
        message: MessageRepr::Packet(&[0; 30]),
    }
    .to_vec()
    .unwrap();
    net.fabric.handle_datagram(now, 9, &p);
    let c = net.fabric.counters();
    assert_eq!(c.malformed, 1);
    assert_eq!(c.bad_version, 2);
    assert_eq!(c.unknown_session, 1);
    // The other version gets a reject naming the reason, in its own version's header, once:
    // the bare header is shorter than the answer, which would amplify.
    let out: Vec<_> = std::iter::from_fn(|| net.fabric.poll_transmit()).collect();
    let rejects: Vec<_> = out.iter().filter_map(|(_, d)| foreign_reject(d)).collect();
    assert_eq!(rejects, [(7, RejectReason::BadVersion)], "{out:?}");
    assert!(out.iter().all(|(to, _)| *to == 9));
    // Garbage inside the host's own session is a malformed packet of its slot.
    let session = net.peers[0].host.link().session().unwrap();
    let bad = DatagramRepr {
        session,
        message: MessageRepr::Packet(&[1, 2, 3]),
    }
    .to_vec()
    .unwrap();
    net.fabric.handle_datagram(now, 0, &bad);
    assert_eq!(net.fabric.slot(0).unwrap().counters().malformed, 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    // Random datagrams, with and without a valid header and the host's session, never panic
    // the fabric, and the honest host keeps working.
    #[test]
    fn fabric_never_panics_on_random_datagrams(
        bodies in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..120), 1..20),
        kinds in proptest::collection::vec(0u8..10, 20),
    ) {
        let mut net = Net::new(1, 9);
        prop_assert!(net.run_until(2 * SEC, all_carrier));
        let session = net.peers[0].host.link().session().unwrap();
        for (b, &k) in bodies.iter().zip(&kinds) {
            let now = net.now;
            let mut d = vec![0x49, 0x42, 1, k];
            d.extend_from_slice(&session.to_be_bytes());
            d.extend_from_slice(b);
            net.fabric.handle_datagram(now, 0, &d);
            net.fabric.handle_datagram(now, 3, b);
            net.fabric.handle_timeout(now + Duration::from_micros(1));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    // The host side takes random datagrams, in and out of its session, without panicking, and
    // counts what it cannot use.
    #[test]
    fn host_never_panics_on_random_datagrams(
        bodies in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..120), 1..20),
        kinds in proptest::collection::vec(0u8..10, 20),
    ) {
        let mut net = Net::new(1, 10);
        prop_assert!(net.run_until(2 * SEC, all_carrier));
        let session = net.peers[0].host.link().session().unwrap();
        for (b, &k) in bodies.iter().zip(&kinds) {
            let now = net.now;
            let mut d = vec![0x49, 0x42, 1, k];
            d.extend_from_slice(&session.to_be_bytes());
            d.extend_from_slice(b);
            net.peers[0].host.handle_datagram(now, &d);
            net.peers[0].host.handle_datagram(now, b);
            net.peers[0].host.handle_timeout(now + Duration::from_micros(1));
        }
        prop_assert!(net.peers[0].host.link().counters().datagrams >= bodies.len() as u64);
    }
}

// IBA 1 §14.2.5.1: a host's cable going up or down is a trap 128 from its switch; the SM sweeps
// again and configures (or forgets) the port by SMPs. The ports it knows keep their LIDs (OpenSM's
// guid2lid, `osm_lid_mgr.c`): the other hosts' when one leaves, though the breadth-first walk
// then numbers them differently, and the host's own when it comes back.
#[test]
fn hosts_leaving_and_coming_back_are_swept_by_traps_and_keep_their_lids() {
    let mut net = Net::new(3, 11);
    assert!(net.run_until(2 * SEC, all_carrier));
    let lids: Vec<u16> = (0..3).map(|i| net.fabric.slot(i).unwrap().lid()).collect();
    assert!(lids.iter().all(|&l| l != 0), "{lids:?}");
    let before = net.fabric.smp_sm().unwrap().stats();
    // Slot 1's host goes silent: its session ends, its cable goes down.
    net.peers[1].alive = false;
    net.run_for(SEC);
    assert_eq!(net.fabric.counters().timed_out, 1);
    let gone = net.fabric.smp_sm().unwrap().stats();
    assert!(gone.traps > before.traps, "{before:?} {gone:?}");
    assert!(gone.sweeps > before.sweeps, "{before:?} {gone:?}");
    let brain = net.fabric.smp_sm().unwrap().manager().unwrap();
    let slot1 = net.fabric.slot(1).unwrap().port_guid();
    assert!(
        brain
            .ca_ports()
            .all(|(_, e)| { brain.topology().nodes()[e.node].port_guid(e.port) != slot1 }),
        "the SM no longer sees the silent host's port"
    );
    for i in [0, 2] {
        assert_eq!(net.fabric.slot(i).unwrap().lid(), lids[i], "slot {i}");
    }
    assert!(net.ping_and_wait(0, addr(2), SEC), "0 -> 2 with 1 gone");
    // It comes back on the same slot and gets its old LID.
    net.peers[1].alive = true;
    let active = |n: &Net| {
        let s = n.fabric.slot(1).unwrap();
        s.is_attached() && s.port_config(s.port()).unwrap().state == PortState::Active
    };
    assert!(net.run_until(3 * SEC, active));
    assert!(net.run_until(3 * SEC, all_carrier));
    let back = net.fabric.smp_sm().unwrap().stats();
    assert!(back.sweeps > gone.sweeps, "{gone:?} {back:?}");
    for (i, &lid) in lids.iter().enumerate() {
        assert_eq!(net.fabric.slot(i).unwrap().lid(), lid, "slot {i}");
    }
    assert!(net.ping_and_wait(0, addr(1), SEC), "0 -> 1");
    assert!(net.ping_and_wait(1, addr(2), SEC), "1 -> 2");
}
