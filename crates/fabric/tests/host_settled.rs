//! A host ends its pump when another round would do nothing (`Host::drive`): its applications
//! say so (`App::is_idle`: the IPoIB adapter, the SM's application). What they say is checked
//! here against what they do: a host that says it is settled sends nothing when driven again,
//! and one with work queued (a group to join, a ping, a stale SMInfo in its port) does not say
//! so until it has done the work.

use ipoib_fabric::hw::sim::Tx;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::host::Host;
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::*;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

/// Drives host `i` again at the current instant; returns the packets and MADs it sent, and
/// whether its port's SMInfo changed.
fn drive_again(net: &mut Subnet, i: usize) -> (usize, u64, bool) {
    let node = net.host(i).node;
    let port = net.host(i).port;
    net.sim_mut()
        .with_node::<Host, _>(node, |h, now, tx: &mut Tx| {
            let sm_info = |h: &Host| h.hca().port(port).and_then(|p| p.sm_info);
            let (packets, mads, info) = (tx.len(), h.counters().mads_out, sm_info(h));
            h.drive(now, tx);
            let sent = (tx.len() - packets, h.counters().mads_out - mads);
            (sent.0, sent.1, sm_info(h) != info)
        })
        .expect("a host")
}

/// Through the SM's sweep, the joins and a ping, after every event: every host, driven again at
/// that instant, sends nothing and leaves its port's SMInfo as it was (the pump of each event ended only when nothing was left, whether
/// because a round moved nothing or because the host said it was settled).
#[test]
fn a_host_driven_again_at_the_same_instant_sends_nothing() {
    let seed = seed(61);
    let _g = SeedGuard(seed);
    let n = 6;
    let mut net = Subnet::build(options(Topology::fat_tree(n).unwrap(), seed)).unwrap();
    let deadline = net.sim().now() + Duration::from_secs(5);
    let mut events = 0u32;
    let mut settled = 0u32;
    let mut pinged = None;
    // Bounded: a few thousand events bring six hosts up and answer one ping.
    while events < 50_000 && net.sim().now() < deadline {
        if !net.sim_mut().step() {
            break;
        }
        events += 1;
        for i in 0..n {
            let now = net.sim().now();
            settled += u32::from(net.host_device(i).is_settled(now));
            assert_eq!(
                drive_again(&mut net, i),
                (0, 0, false),
                "host {i} at {now:?}"
            );
        }
        if pinged.is_none() && net.joined_count() == n && net.is_settled() {
            let dst = v4(&net, 1);
            let k = net.with_ipoib(n - 1, |a, now| a.ping(now, dst)).unwrap();
            pinged = Some(k.expect("ping sent"));
        }
        if let Some(k) = pinged {
            if app(&net, n - 1).ip().pings()[k].reply_at.is_some() {
                break;
            }
        }
    }
    let k = pinged.expect("every host joined");
    assert!(
        app(&net, n - 1).ip().pings()[k].reply_at.is_some(),
        "answered"
    );
    assert!(settled > events, "hosts said they were settled: {settled}");
}

/// An IPoIB host with a group to join or a ping to send is not settled until it has sent them;
/// the SM's host is not settled while its port's SMInfo is not the SM's (IBA 1 §14.4.1: the
/// port answers SubnGet(SMInfo) with it).
#[test]
fn work_queued_unsettles_a_host_until_done() {
    let seed = seed(62);
    let _g = SeedGuard(seed);
    let mut net = up(options(Topology::fat_tree(4).unwrap(), seed), false);
    let now = |net: &Subnet| net.sim().now();
    for i in 0..4 {
        assert!(net.host_device(i).is_settled(now(&net)), "host {i} up");
    }
    let app_of = |net: &Subnet, i: usize| net.ipoib_handle(i).unwrap().app;

    // A join: a command for the interface.
    let a = app_of(&net, 2);
    let group = IpAddr::V4(Ipv4Addr::new(239, 1, 2, 3));
    let node = net.host(2).node;
    let mads = net.host_device(2).counters().mads_out;
    let t = now(&net);
    net.sim_mut().with_node::<Host, _>(node, |h, _, _| {
        h.app_mut::<ipoib_fabric::node::ipoib::IpoibApp>(a)
            .unwrap()
            .join_group(group);
        assert!(!h.is_settled(t), "a group to join");
    });
    let sent = drive_again(&mut net, 2);
    assert_eq!(sent.1, 1, "the join's SA request");
    assert_eq!(net.host_device(2).counters().mads_out, mads + 1);
    assert!(net.host_device(2).is_settled(now(&net)));

    // A ping: a packet of the IP endpoint.
    let a = app_of(&net, 3);
    let dst = v4(&net, 1);
    let node = net.host(3).node;
    let t = now(&net);
    net.sim_mut().with_node::<Host, _>(node, |h, _, _| {
        let app = h.app_mut::<ipoib_fabric::node::ipoib::IpoibApp>(a).unwrap();
        app.ping(t, dst).unwrap();
        assert!(app.ip().has_packet());
        assert!(!h.is_settled(t), "a packet to send");
    });
    let sent = drive_again(&mut net, 3);
    assert!(sent.0 >= 1, "sent: {sent:?}");
    assert!(net.host_device(3).is_settled(now(&net)));

    // The SM's port without its SMInfo: the SM's application puts it back.
    let node = net.host(0).node;
    let port = net.host(0).port;
    let t = now(&net);
    net.sim_mut().with_node::<Host, _>(node, |h, _, _| {
        h.hca_mut().set_sm_info(port, None);
        assert!(!h.is_settled(t), "a port without the SM's SMInfo");
    });
    assert_eq!(drive_again(&mut net, 0), (0, 0, true));
    let h = net.host_device(0);
    assert!(h.hca().port(port).unwrap().sm_info.is_some());
    assert!(h.is_settled(now(&net)));
}
