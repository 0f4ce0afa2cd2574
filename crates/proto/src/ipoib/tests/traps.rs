//! The trap 66/67 subscription of draft-ietf-ipoib-ip-over-infiniband-06 §11 (senders to a missing
//! group) and §12 C (routers), held only while needed (`ipoib::traps`).

use super::*;
use ipoib_wire::ipoib::ipv4_mgid;
use ipoib_wire::mad::Method;
use ipoib_wire::sa::{SaAttribute, SaMadRepr};
use ipoib_wire::PKey;

/// Set(InformInfo) requests host `lid` sent, as their Subscribe bits.
fn informs(net: &Net, lid: u16) -> Vec<bool> {
    net.mads_from(lid)
        .iter()
        .filter_map(|m| match SaMadRepr::parse(&m.mad).ok()?.attribute {
            SaAttribute::InformInfo(i) => Some(i.subscribe),
            _ => None,
        })
        .collect()
}

/// How many Reports host `lid` acknowledged (one ReportResp each).
fn reports(net: &Net, lid: u16) -> usize {
    net.mads_from(lid)
        .iter()
        .filter(|m| SaMadRepr::parse(&m.mad).is_ok_and(|r| r.header.method == Method::ReportResp))
        .count()
}

fn got(net: &mut Net, lid: u16, tag: &[u8]) -> usize {
    net.host(lid)
        .delivered
        .iter()
        .filter(|p| p.ends_with(tag))
        .count()
}

// §11 (our reading, `ipoib::traps`): bring-up, unicast and multicast to groups that exist make no
// sender that needs the traps: no InformInfo, and no Report reaches the hosts although groups
// (the IPv6 solicited-node groups, an IP group) are created.
#[test]
fn no_subscription_without_a_missing_group() {
    let mut net = Net::new(3);
    net.up();
    let g: Ipv4Addr = "224.1.1.1".parse().unwrap();
    net.join(3, IpAddr::V4(g)).unwrap();
    net.run_for(Duration::from_secs(1));
    net.send(2, &udp4(v4(2), g, b"to group"));
    net.send(2, &ping4(v4(2), v4(3), true, 1));
    net.run_for(Duration::from_secs(2));
    assert_eq!(got(&mut net, 3, b"to group"), 1);
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 1)));
    for lid in [2, 3, 4] {
        assert_eq!(informs(&net, lid), Vec::<bool>::new(), "host {lid}");
        assert!(!net.iface(lid).traps_subscribed());
        assert_eq!(reports(&net, lid), 0, "host {lid}");
    }
}

// §11: a send to a group that does not exist (here link-local: dropped, the absence cached) makes
// the interface a sender that monitors the group: it subscribes to both traps, and once the SA
// acknowledged, trap 66 re-routes the next packet to the new group.
#[test]
fn missing_group_subscribes_and_trap_66_reroutes() {
    let mut net = Net::new(3);
    net.up();
    let g: Ipv4Addr = "224.0.0.99".parse().unwrap();
    net.send(2, &udp4(v4(2), g, b"early"));
    net.run_for(Duration::from_secs(1));
    assert_eq!(net.iface(2).counters().dropped(DropReason::NoMcastGroup), 1);
    assert_eq!(informs(&net, 2), vec![true, true]);
    assert!(net.iface(2).traps_subscribed(), "acknowledged");
    assert!(!net.iface(3).traps_subscribed());

    net.join(3, IpAddr::V4(g)).unwrap();
    net.run_for(Duration::from_secs(1));
    assert_eq!(reports(&net, 2), 1, "trap 66 for the new group");
    assert_eq!(reports(&net, 4), 0, "not subscribed");
    net.send(2, &udp4(v4(2), g, b"late"));
    net.run_for(Duration::from_secs(1));
    assert_eq!(got(&mut net, 3, b"late"), 1, "re-routed to the new group");
    // Still subscribed while it sends to the group it watched (trap 67 would matter).
    assert!(net.iface(2).traps_subscribed());
}

// §11: the subscription ends (Subscribe = 0 for both traps) when the interface no longer holds a
// missing group: its absent entry expired, or its own join created the group. Reports stop.
#[test]
fn unsubscribes_when_the_need_ends() {
    let mut net = Net::new(3);
    net.up();
    // Expiry of the absent entry (GROUP_ABSENT_HOLD).
    net.send(2, &udp4(v4(2), "224.0.0.98".parse().unwrap(), b"x"));
    net.run_for(Duration::from_secs(1));
    assert!(net.iface(2).traps_subscribed());
    net.run_for(timer::GROUP_ABSENT_HOLD);
    assert_eq!(informs(&net, 2), vec![true, true, false, false]);
    assert!(!net.iface(2).traps_subscribed());
    net.join(3, IpAddr::V4("224.7.7.7".parse().unwrap()))
        .unwrap();
    net.run_for(Duration::from_secs(1));
    assert_eq!(reports(&net, 2), 0, "no Report after the unsubscription");

    // Resolution by the interface's own join of the missing group.
    let g: Ipv4Addr = "224.0.0.97".parse().unwrap();
    net.send(3, &udp4(v4(3), g, b"y"));
    net.run_for(Duration::from_secs(1));
    assert!(net.iface(3).traps_subscribed());
    net.join(3, IpAddr::V4(g)).unwrap();
    net.run_for(Duration::from_secs(1));
    assert_eq!(informs(&net, 3), vec![true, true, false, false]);
    assert!(!net.iface(3).traps_subscribed());
    assert!(net.host(3).logs().iter().all(|l| !l.contains("trap")));
}

// §12 C: a router in promiscuous mode subscribes to every group creation from bring-up on, other
// interfaces do not.
#[test]
fn router_mode_subscribes() {
    let mut net = Net::with(3, |lid, c| c.router = lid == 4);
    net.up();
    assert!(net.iface(4).traps_subscribed());
    assert_eq!(informs(&net, 4), vec![true, true]);
    assert!(!net.iface(2).traps_subscribed());
    let m = ipv4_mgid("239.3.3.3".parse().unwrap(), PKey(0xffff), Scope::LinkLocal);
    net.join(3, IpAddr::V4("239.3.3.3".parse().unwrap()))
        .unwrap();
    net.run_for(Duration::from_secs(1));
    assert!(net.host(4).attached.contains(&m), "joined after trap 66");
    assert_eq!(reports(&net, 2), 0);
}

/// Host `lid`'s port goes down, then (after `between`) up again with the same configuration.
fn bounce(net: &mut Net, lid: u16, between: impl FnOnce(&mut Net)) {
    net.port(lid, |p| p.active = false);
    net.run_for(Duration::from_secs(1));
    between(net);
    net.port(lid, |p| p.active = true);
    net.run_for(Duration::from_secs(2));
}

// §12 C, §11 (`ipoib::traps` module docs): the SM and SA restart while a router's port is down, so
// the new SA holds no subscription and no ClientReregister comes (the port was down). Once the
// link is up the router subscribes afresh, and hears trap 66 for a group created afterwards.
#[test]
fn link_up_subscribes_again_at_a_restarted_sa() {
    let mut net = Net::with(3, |lid, c| c.router = lid == 4);
    net.up();
    assert_eq!(informs(&net, 4), vec![true, true]);
    bounce(&mut net, 4, Net::restart_sa);
    assert_eq!(informs(&net, 4), vec![true, true, true, true]);
    assert!(net.iface(4).traps_subscribed());
    let m = ipv4_mgid("239.4.4.4".parse().unwrap(), PKey(0xffff), Scope::LinkLocal);
    let before = reports(&net, 4);
    net.join(3, IpAddr::V4("239.4.4.4".parse().unwrap()))
        .unwrap();
    net.run_for(Duration::from_secs(1));
    assert_eq!(reports(&net, 4) - before, 1, "trap 66 from the new SA");
    assert!(net.host(4).attached.contains(&m), "joined after trap 66");
    assert!(net.host(4).logs().iter().all(|l| !l.contains("trap")));
}

// IBA 1 §13.4.8.3 (OpenSM `osm_sa_informinfo.c` updates a subscription it holds): at an SA that
// kept the subscription while the link was down, subscribing again leaves one subscription per
// trap: one Report for a new group, not two.
#[test]
fn link_up_subscribes_again_once_at_an_sa_that_kept_it() {
    let mut net = Net::with(3, |lid, c| c.router = lid == 4);
    net.up();
    bounce(&mut net, 4, |_| {});
    assert_eq!(informs(&net, 4), vec![true, true, true, true]);
    assert!(net.iface(4).traps_subscribed());
    let before = reports(&net, 4);
    net.join(3, IpAddr::V4("239.5.5.5".parse().unwrap()))
        .unwrap();
    net.run_for(Duration::from_secs(1));
    assert_eq!(reports(&net, 4) - before, 1, "one subscription to trap 66");
}

// A sender's subscription (§11) may be held or lost by the SA after the link was down; the need
// went with the flush (its absent groups forgotten), so it unsubscribes once the link is up, and
// the SA's "no such subscription" (restarted meanwhile; OpenSM "ERR 4307") is no warning.
#[test]
fn link_up_undoes_a_subscription_the_sa_may_have_lost() {
    let mut net = Net::new(3);
    net.up();
    net.send(2, &udp4(v4(2), "224.0.0.96".parse().unwrap(), b"x"));
    net.run_for(Duration::from_secs(1));
    assert!(net.iface(2).traps_subscribed());
    bounce(&mut net, 2, Net::restart_sa);
    assert_eq!(informs(&net, 2), vec![true, true, false, false]);
    assert!(!net.iface(2).traps_subscribed());
    let warned: Vec<String> = net
        .host(2)
        .logs()
        .into_iter()
        .filter(|l| l.contains("trap"))
        .collect();
    assert_eq!(warned, Vec::<String>::new(), "no warning");
    // Needed again: subscribed at the new SA.
    net.send(2, &udp4(v4(2), "224.0.0.95".parse().unwrap(), b"y"));
    net.run_for(Duration::from_secs(1));
    assert_eq!(informs(&net, 2), vec![true, true, false, false, true, true]);
    assert!(net.iface(2).traps_subscribed());
}

/// The TransactionIDs of the Set(InformInfo) requests host `lid` sent.
fn inform_tids(net: &Net, lid: u16) -> BTreeSet<u64> {
    net.mads_from(lid)
        .iter()
        .filter_map(|m| {
            let r = SaMadRepr::parse(&m.mad).ok()?;
            matches!(r.attribute, SaAttribute::InformInfo(_)).then_some(r.header.transaction_id)
        })
        .collect()
}

/// Drops the SA's answers to host `lid`'s Set(InformInfo) requests unless `pass` lets them by
/// TransactionID.
fn hold_inform_answers(net: &mut Net, lid: u16, pass: impl Fn(u64) -> bool + 'static) {
    net.filter = Box::new(move |from, m| {
        from == SM_LID
            && m.to.lid == lid
            && SaMadRepr::parse(&m.mad).is_ok_and(|r| {
                matches!(r.attribute, SaAttribute::InformInfo(_)) && !pass(r.header.transaction_id)
            })
    });
}

// IBA 1 §14.4.11, §12 C: a ClientReregister while a router's subscription is in flight starts a
// new change; the late answers to the previous round's requests count for nothing: the router
// reads as subscribed only once the SA answered the new requests.
#[test]
fn reregister_counts_only_the_new_rounds_answers() {
    let mut net = Net::with(3, |lid, c| c.router = lid == 4);
    net.up();
    hold_inform_answers(&mut net, 4, |_| false);
    net.client_reregister(4);
    net.settle();
    let old = inform_tids(&net, 4);
    assert_eq!(informs(&net, 4), vec![true, true, true, true]);
    // The previous round's answers pass (its requests are resent after their timeout), the new
    // round's are held.
    hold_inform_answers(&mut net, 4, move |t| old.contains(&t));
    net.client_reregister(4);
    net.run_for(Duration::from_millis(1500));
    assert!(
        !net.iface(4).traps_subscribed(),
        "the new requests are unanswered"
    );
    net.filter = Box::new(|_, _| false);
    net.run_for(Duration::from_secs(3));
    assert!(net.iface(4).traps_subscribed());
    assert!(net.host(4).logs().iter().all(|l| !l.contains("trap")));
}

// IBA 1 §13.4.8.3, §14.4.11, §11: a sender's subscription is in flight when a ClientReregister
// ends the need for it (the flush forgets its missing groups). The SA may hold the subscription
// (the request reached it), so the interface undoes it: the SA ends with no subscription and no
// Report reaches the host for a group created afterwards.
#[test]
fn reregister_undoes_a_subscription_in_flight_no_longer_needed() {
    let mut net = Net::new(3);
    net.up();
    hold_inform_answers(&mut net, 2, |_| false);
    net.send(2, &udp4(v4(2), "224.0.0.94".parse().unwrap(), b"x"));
    net.settle();
    assert_eq!(informs(&net, 2), vec![true, true], "reached the SA");
    net.client_reregister(2);
    net.filter = Box::new(|_, _| false);
    net.run_for(Duration::from_secs(20));
    assert_eq!(informs(&net, 2).last(), Some(&false), "undone");
    assert!(!net.iface(2).traps_subscribed());
    net.join(3, IpAddr::V4("224.8.8.8".parse().unwrap()))
        .unwrap();
    net.run_for(Duration::from_secs(1));
    assert_eq!(reports(&net, 2), 0, "the SA holds no subscription");
    assert!(net.host(2).logs().iter().all(|l| !l.contains("trap")));
}

// IBA 1 §14.4.11, §11: a ClientReregister asks the port's clients to register again, so a
// settled subscription is presumed gone at the SA: a sender whose need ended with the flush
// (its missing groups forgotten) sends no unsubscription, which a restarted SA holding nothing
// would refuse (OpenSM logs "ERR 4307" for it), and subscribes again once it needs the traps.
#[test]
fn reregister_after_a_settled_subscription_sends_no_unsubscription() {
    let mut net = Net::new(3);
    net.up();
    net.send(2, &udp4(v4(2), "224.0.0.93".parse().unwrap(), b"x"));
    net.run_for(Duration::from_secs(1));
    assert!(net.iface(2).traps_subscribed());
    assert_eq!(informs(&net, 2), vec![true, true]);
    net.client_reregister(2);
    net.run_for(Duration::from_secs(5));
    assert_eq!(
        informs(&net, 2),
        vec![true, true],
        "nothing sent: presumed gone"
    );
    assert!(!net.iface(2).traps_subscribed());
    // A new send to a missing group subscribes again.
    net.send(2, &udp4(v4(2), "224.0.0.92".parse().unwrap(), b"y"));
    net.run_for(Duration::from_secs(1));
    assert_eq!(informs(&net, 2), vec![true, true, true, true]);
    assert!(net.iface(2).traps_subscribed());
    assert!(net.host(2).logs().iter().all(|l| !l.contains("trap")));
}
