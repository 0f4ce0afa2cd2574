//! Two of our SMs on one subnet (IBA 1 §14.4; `ipoib_fabric::node::sm::election`): exactly one
//! becomes Master and programs the subnet, the other is Standby, programs nothing and polls the
//! master's SMInfo; Priority decides, equal Priority the lower GUID; when the master's host is
//! gone the Standby takes over after its failed polls and sweeps again, asking the hosts to
//! register again (ClientReregister); a greater SM started later gets mastership by HANDOVER; two
//! masters that meet end with one.

mod common;

use common::topos::chain;
use ipoib_fabric::node::host::AppId;
use ipoib_fabric::node::host::Host;
use ipoib_fabric::node::sm::election::{modifier, ElectionStats};
use ipoib_fabric::node::sm::smp::directed;
use ipoib_fabric::node::sm::{ElectionSettings, SmpSm, SweepPhase};
use ipoib_fabric::node::subnet::{SmApp, Subnet, SubnetError};
use ipoib_fabric::testing::*;
use ipoib_fabric::PortState;
use ipoib_proto::mad_agent::MadAddr;
use ipoib_wire::ib::lid::LID_PERMISSIVE;
use ipoib_wire::ipoib::mcast::{broadcast_mgid, Scope};
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::{MadStatus, Method};
use ipoib_wire::smp::SmState;
use ipoib_wire::smp::{SmInfoRepr, SmpAttribute, SmpMadRepr};
use ipoib_wire::{Guid, PKey};
use std::time::Duration;

/// The subnet with our SM on host 0 (priority `p0`) and another on host 1 (priority `p1`),
/// brought up (every host has carrier); the second SM's application.
fn two_sms(p0: u8, p1: u8) -> (Subnet, AppId) {
    let mut o = options(chain(), seed(11));
    o.sm_election.priority = p0;
    let mut net = Subnet::build(o).unwrap();
    let second = ElectionSettings {
        priority: p1,
        ..ElectionSettings::default()
    };
    let app = net.add_sm(1, second).unwrap();
    assert!(net.run_until_joined(at(5)), "every host has carrier");
    (net, app)
}

fn sm0(net: &Subnet) -> &SmpSm {
    net.smp_sm().unwrap()
}

fn sm1(net: &Subnet, app: AppId) -> &SmpSm {
    net.smp_sm_on(1, app).unwrap()
}

/// What host `i`'s port answers SubnGet(SMInfo) with: (GUID, state).
fn answered(net: &Subnet, i: usize) -> (Guid, SmState) {
    let h = net.host(i);
    let p = net.host_device(i).hca().port(h.port).unwrap();
    let s = p.sm_info.expect("an SM runs on the port");
    (s.guid, s.sm_state)
}

fn port_guid(net: &Subnet, i: usize) -> Guid {
    let h = net.host(i);
    net.topology().nodes()[h.topo_node].port_guid(h.port)
}

/// Every host's port is Active with its MasterSMLID the LID of host `master`'s port.
fn managed_by(net: &Subnet, hosts: &[usize], master: usize) {
    let lid = net.host_port(master).unwrap().lid;
    for &i in hosts {
        let p = net.host_port(i).unwrap();
        assert_eq!((p.state, p.sm_lid), (PortState::Active, lid), "host {i}");
    }
}

fn ping(net: &mut Subnet, pairs: &[(usize, usize)]) {
    for s in ping_pairs(net, pairs, v4, Duration::from_secs(2)) {
        assert!(rtt(net, s).is_some(), "{} -> {} unanswered", s.0, s.1);
    }
}

// IBA 1 §14.4.1: equal Priority, the SM with the lower GUID is master; the other is Standby,
// programs nothing, and its port answers SMInfo Standby.
#[test]
fn equal_priority_lower_guid_wins() {
    let (mut net, app) = two_sms(0, 0);
    assert!(port_guid(&net, 0) < port_guid(&net, 1));
    assert_eq!(sm0(&net).election().state(), SmState::Master);
    let standby = sm1(&net, app);
    assert_eq!(standby.election().state(), SmState::Standby);
    assert_eq!(standby.phase(), SweepPhase::Standby);
    assert_eq!(standby.election().master_guid(), Some(port_guid(&net, 0)));
    assert_eq!(
        (standby.stats().sets, standby.generation()),
        (0, 0),
        "programs nothing"
    );
    assert!(standby.manager().is_none());
    assert_eq!(answered(&net, 0), (port_guid(&net, 0), SmState::Master));
    assert_eq!(answered(&net, 1), (port_guid(&net, 1), SmState::Standby));
    assert_eq!(sm0(&net).stats().sweeps, 1, "the subnet came up once");
    managed_by(&net, &[0, 1, 2], 0);
    ping(&mut net, &all_pairs(3));
}

// IBA 1 §14.4.1: the higher Priority wins whatever the GUIDs.
#[test]
fn priority_decides() {
    let (mut net, app) = two_sms(0, 5);
    assert_eq!(sm0(&net).election().state(), SmState::Standby);
    assert_eq!(sm0(&net).stats().sets, 0);
    assert_eq!(sm1(&net, app).election().state(), SmState::Master);
    assert_eq!(answered(&net, 1).1, SmState::Master);
    assert_eq!(answered(&net, 0).1, SmState::Standby);
    managed_by(&net, &[0, 1, 2], 1);
    ping(&mut net, &all_pairs(3));
}

// IBA 1 §14.4 (OpenSM `osm_sm_state_mgr.c`): the Standby polls the master every
// sminfo_polling_timeout; after polling_retry_number failed polls it sweeps and is master.
#[test]
fn standby_takes_over_when_the_master_is_gone() {
    let (mut net, app) = two_sms(0, 0);
    let s = ElectionSettings::default();
    let polls_before = sm1(&net, app).smp_counters().sent;
    // Alive master: polls are answered, nothing changes.
    let t = net.sim().now() + s.polling_timeout * 3;
    net.sim_mut().run_until(t);
    assert_eq!(sm1(&net, app).election().state(), SmState::Standby);
    let polls = sm1(&net, app).smp_counters().sent - polls_before;
    assert!(
        (2..=3).contains(&polls),
        "a poll per polling timeout: {polls}"
    );
    // ActCount (OpenSM: QP0 MADs sent) counts the Standby's polls too.
    let act = net
        .host_device(1)
        .hca()
        .port(1)
        .unwrap()
        .sm_info
        .unwrap()
        .act_count;
    assert_eq!(u64::from(act), sm1(&net, app).smp_counters().sent);
    assert!(act >= 2);
    // The master's host goes away.
    assert!(net.set_cable(0, false).unwrap());
    let gone = net.sim().now();
    // Not before polling_retry_number polls failed.
    let t = gone + s.polling_timeout * (s.polling_retries - 1);
    net.sim_mut().run_until(t);
    assert_eq!(sm1(&net, app).election().state(), SmState::Standby);
    let t = gone + s.polling_timeout * (s.polling_retries + 1);
    net.sim_mut().run_until(t);
    let new = sm1(&net, app);
    assert_eq!(new.election().state(), SmState::Master);
    assert_eq!(new.election().takeovers(), 1);
    assert_eq!(new.phase(), SweepPhase::Done);
    assert_eq!(new.generation(), 1);
    assert!(new.stats().sets > 0, "it swept and programmed the subnet");
    assert_eq!(answered(&net, 1).1, SmState::Master);
    managed_by(&net, &[1, 2], 1);
    ping(&mut net, &[(1, 2), (2, 1)]);
}

/// Starts a second SM, of priority 5 (greater than host 0's), on host 1: its application.
fn add_greater_sm(net: &mut Subnet) -> AppId {
    net.add_sm(
        1,
        ElectionSettings {
            priority: 5,
            ..ElectionSettings::default()
        },
    )
    .unwrap()
}

/// What the SM of `app` on host 1 counted.
fn stats1(net: &Subnet, app: AppId) -> ElectionStats {
    sm1(net, app).election().stats()
}

// IBA 1 §14.4.1 (OpenSM `osm_state_mgr.c`, `osm_sm_state_mgr.c`): a greater SM that starts after
// the subnet is up finds the master and goes Standby, telling it with a trap 144; the master
// sweeps, finds the greater Standby in its SMInfo round and hands mastership over by
// SubnSet(SMInfo) HANDOVER; the greater SM acknowledges (ACKNOWLEDGE), becomes Master and
// programs the subnet; the old master is Standby polling it. Hosts keep working.
#[test]
fn a_greater_sm_started_later_gets_mastership_by_handover() {
    let mut net = Subnet::build(options(chain(), seed(11))).unwrap();
    assert!(net.run_until_joined(at(5)), "every host has carrier");
    assert_eq!(sm0(&net).election().state(), SmState::Master);
    let app = add_greater_sm(&mut net);
    let t = net.sim().now() + Duration::from_secs(1);
    net.sim_mut().run_until(t);
    let (old, new) = (sm0(&net).election(), sm1(&net, app).election());
    assert_eq!(
        (old.state(), new.state()),
        (SmState::Standby, SmState::Master)
    );
    assert_eq!(
        old.master_guid(),
        Some(port_guid(&net, 1)),
        "it polls the new master"
    );
    assert_eq!(
        (old.stats().handovers_sent, old.stats().acknowledged),
        (1, 1)
    );
    assert_eq!(stats1(&net, app).handovers_received, 1);
    assert_eq!(sm0(&net).stats().traps, 1, "the new Standby's trap 144");
    assert_eq!(sm0(&net).phase(), SweepPhase::Standby);
    assert_eq!(answered(&net, 0).1, SmState::Standby);
    assert_eq!(answered(&net, 1).1, SmState::Master);
    let new = sm1(&net, app);
    assert_eq!((new.phase(), new.generation()), (SweepPhase::Done, 1));
    assert!(new.stats().sets > 0, "the new master programmed the subnet");
    managed_by(&net, &[0, 1, 2], 1);
    // The old master's polls are answered: it stays Standby.
    let t = net.sim().now() + ElectionSettings::default().polling_timeout * 6;
    net.sim_mut().run_until(t);
    assert_eq!(sm0(&net).election().state(), SmState::Standby);
    assert_eq!(sm0(&net).election().takeovers(), 0);
    ping(&mut net, &all_pairs(3));
}

// IBA 1 §14.4.11 (docs/IPOIB-JOINS.md "Unicast through a light flush"): hosts that know each
// other keep pinging through a HANDOVER, the new master's sweep and its ClientReregister (a light
// flush: paths invalid, groups joined again at the new SA). Host 2 pings host 0 every millisecond
// of simulated time for the second in which a greater SM takes over: every echo is answered
// within a millisecond (measured: all 1,000 round trips 786 ns, the same before, during and
// after the handover).
#[test]
fn pings_between_known_hosts_are_answered_through_a_handover() {
    let mut net = Subnet::build(options(chain(), seed(11))).unwrap();
    assert!(net.run_until_joined(at(5)), "every host has carrier");
    ping(&mut net, &[(2, 0), (0, 2)]);
    let rereg: Vec<u64> = (0..3).map(|i| reregisters(&net, i)).collect();
    let app = add_greater_sm(&mut net);
    let dst = v4(&net, 0);
    let mut sent = Vec::new();
    for _ in 0..1000 {
        let k = net.with_ipoib(2, |a, now| a.ping(now, dst)).unwrap();
        sent.push(k.expect("ping sent"));
        let t = net.sim().now() + Duration::from_millis(1);
        net.sim_mut().run_until(t);
    }
    let t = net.sim().now() + Duration::from_millis(10);
    net.sim_mut().run_until(t);
    assert_eq!(sm1(&net, app).election().state(), SmState::Master);
    for i in [0, 2] {
        assert_eq!(reregisters(&net, i), rereg[i] + 1, "host {i} was asked");
    }
    let pings = app_rtts(&net, 2, &sent);
    let lost = pings.iter().filter(|r| r.is_none()).count();
    assert_eq!(lost, 0, "echoes unanswered through the handover");
    let worst = pings.iter().flatten().max().copied().unwrap_or_default();
    assert!(
        worst < Duration::from_millis(1),
        "largest round trip {worst:?}"
    );
}

/// The round trips of host `i`'s pings `sent` (`None`: unanswered).
fn app_rtts(net: &Subnet, i: usize, sent: &[usize]) -> Vec<Option<Duration>> {
    let pings = app(net, i).ip().pings();
    sent.iter().map(|&k| pings[k].rtt()).collect()
}

// IBA 1 §14.4.1, C14-60.2.1 (OpenSM `osm_state_mgr.c`): two halves of a subnet, each with its
// own Master, are cabled together. Both sweep on the switches' traps 128; the lesser master
// finds the greater one Master and hands over to it; the greater one waits for that HANDOVER,
// then sweeps again as the only master (a first master sweep) and programs the whole subnet.
#[test]
fn two_masters_meet_and_the_lesser_hands_over() {
    let mut net = Subnet::build(options(chain(), seed(11))).unwrap();
    let app = net.add_sm(1, ElectionSettings::default()).unwrap();
    // sw0 - sw1 cut from the start: host 0's SM and host 1's each master their half.
    assert!(net.set_cable(1, false).unwrap());
    let t = net.sim().now() + Duration::from_secs(1);
    net.sim_mut().run_until(t);
    assert_eq!(sm0(&net).election().state(), SmState::Master);
    assert_eq!(sm1(&net, app).election().state(), SmState::Master);
    managed_by(&net, &[1, 2], 1);
    assert!(net.set_cable(1, true).unwrap());
    let t = net.sim().now() + Duration::from_secs(2);
    net.sim_mut().run_until(t);
    let (a, b) = (sm0(&net).election(), sm1(&net, app).election());
    assert_eq!((a.state(), b.state()), (SmState::Master, SmState::Standby));
    assert_eq!(b.stats().handovers_sent, 1);
    assert_eq!(a.stats().handovers_received, 1);
    assert_eq!(b.master_guid(), Some(port_guid(&net, 0)));
    assert_eq!(a.master_guid(), None, "no longer waiting");
    managed_by(&net, &[0, 1, 2], 0);
    ping(&mut net, &all_pairs(3));
}

// IBA 1 §14.2.5.13, §14.4: a port has one SMInfo and one QP0, so a host runs at most one SM:
// a second SM of ours on host 1, or one on host 0 (which runs the first), is refused, and the
// two SMs there are still one master and one standby (`ipoib show counters` names their
// sections by host, `sm` and `sm_h2`, unique only so).
#[test]
fn a_second_sm_on_a_host_is_refused() {
    let (mut net, app) = two_sms(1, 1);
    for host in [1, 0] {
        match net.add_sm(host, ElectionSettings::default()) {
            Err(SubnetError::SmOnHost(h)) => assert_eq!(h, host),
            other => panic!("host {host}: {other:?}"),
        }
    }
    let hosts: Vec<usize> = net.sms().iter().map(|s| s.host).collect();
    assert_eq!(hosts, vec![0, 1]);
    let t = net.sim().now() + Duration::from_secs(2);
    net.sim_mut().run_until(t);
    let states = [
        sm0(&net).election().state(),
        sm1(&net, app).election().state(),
    ];
    assert_eq!(states, [SmState::Master, SmState::Standby]);
}

/// The port GUIDs of the broadcast group's members in `sa`.
fn bcast_members(sa: &ipoib_proto::sa::SaServer) -> Vec<u64> {
    let bcast = broadcast_mgid(PKey(0xffff), Scope::LinkLocal);
    sa.groups()
        .into_iter()
        .find(|g| g.record.mgid == bcast)
        .map(|g| g.members.iter().map(|m| m.0.interface_id()).collect())
        .unwrap_or_default()
}

/// ClientReregisters host `i`'s port has seen.
fn reregisters(net: &Subnet, i: usize) -> u64 {
    net.host_port(i).unwrap().client_reregisters
}

// IBA 1 §14.4.11 (OpenSM `first_time_master_sweep`, `osm_lid_mgr.c`): the first sweep of a new
// master sets PortInfo:ClientReregister on every CA port; the hosts' IPoIB interfaces join
// again (Linux IB_EVENT_CLIENT_REREGISTER: light flush) at the new master's SA, whose broadcast
// group then has them, and traffic flows.
#[test]
fn a_new_master_asks_the_hosts_to_register_again() {
    let (mut net, app) = two_sms(0, 0);
    for i in 0..3 {
        assert_eq!(
            reregisters(&net, i),
            1,
            "host {i}: the first master's first sweep"
        );
    }
    let members = bcast_members(net.sa());
    assert_eq!(members.len(), 3);
    assert!(
        bcast_members(net.sa_on(1, app).unwrap()).is_empty(),
        "the Standby's SA knows no group"
    );
    cut_and_let_sm1_take_over(&mut net, app, 0);
    for i in [1, 2] {
        assert_eq!(
            reregisters(&net, i),
            2,
            "host {i}: the new master's first sweep"
        );
    }
    let want: Vec<u64> = [1, 2].iter().map(|&i| port_guid(&net, i).0).collect();
    let mut got = bcast_members(net.sa_on(1, app).unwrap());
    got.sort();
    assert_eq!(
        got, want,
        "hosts 1 and 2 joined the new SA's broadcast group"
    );
    ping(&mut net, &[(1, 2), (2, 1)]);
}

/// A SubnSet(SMInfo) with `modifier` and the sender's SMInfo `sender`, by directed route from
/// host 2 (a umad user, as `sminfo` sends it) to host 1's port: the GetResp host 2 got.
fn set_sminfo_from_host2(net: &mut Subnet, modifier: u32, sender: SmInfoRepr) -> SmpMadRepr {
    // h2 - sw1 (port 3), sw1 port 2 - sw2 port 1, sw2 port 2 - h1.
    set_sminfo_from_host2_by(net, &[1, 2, 2], modifier, sender)
}

/// [`set_sminfo_from_host2`] by the directed route `path`.
fn set_sminfo_from_host2_by(
    net: &mut Subnet,
    path: &[u8],
    modifier: u32,
    sender: SmInfoRepr,
) -> SmpMadRepr {
    let mut smp = directed(
        Method::Set,
        attr::SM_INFO,
        modifier,
        path,
        Some(SmpAttribute::SmInfo(sender)),
    );
    smp.header.transaction_id = 0x7e57_0000 + u64::from(modifier);
    let node = net.host(2).node;
    let to = MadAddr {
        qpn: 0,
        ..MadAddr::gsi(LID_PERMISSIVE)
    };
    let got = net
        .sim_mut()
        .with_node::<Host, _>(node, |h, now, tx| {
            let agent = h.umad_attach();
            h.umad_send(agent, to, &smp.to_bytes()).unwrap();
            h.drive(now, tx);
            agent
        })
        .unwrap();
    let t = net.sim().now() + Duration::from_millis(1);
    net.sim_mut().run_until(t);
    let mut back = net
        .sim_mut()
        .with_node::<Host, _>(node, |h, _, _| h.umad_take(got))
        .unwrap();
    assert_eq!(back.len(), 1, "one GetResp");
    SmpMadRepr::parse(&back.remove(0).mad).unwrap()
}

/// The SMInfo an SM on host 2's port would give: `priority`, `state`, the default SM_Key.
fn host2_sm_info(net: &Subnet, priority: u8, state: SmState) -> SmInfoRepr {
    SmInfoRepr {
        guid: port_guid(net, 2),
        sm_key: ElectionSettings::default().sm_key,
        act_count: 0,
        priority,
        sm_state: state,
    }
}

// IBA 1 §14.4.1 (OpenSM `smi_rcv_check_set_req_legality`, `osm_sm_state_mgr_process`): a
// SubnSet(SMInfo) by directed route reaches the SM on the port (not its SMA), which answers it
// back along the return path with its SMInfo as it was. From a Master sender, DISABLE makes a
// Standby NotActive and STANDBY makes it Standby again, polling the sender (by the route back);
// an ACKNOWLEDGE from a Master sender is refused with status 0x001C and changes nothing.
#[test]
fn a_standby_obeys_subn_set_sminfo() {
    let (mut net, app) = two_sms(0, 0);
    let (m, s) = (
        host2_sm_info(&net, 9, SmState::Master),
        host2_sm_info(&net, 9, SmState::Standby),
    );
    let r = set_sminfo_from_host2(&mut net, modifier::DISABLE, m);
    assert_eq!(
        (r.status(), r.direction()),
        (MadStatus::SUCCESS, Some(true))
    );
    let SmpAttribute::SmInfo(i) = r.attribute else {
        panic!("{:?}", r.attribute)
    };
    assert_eq!((i.guid, i.sm_state), (port_guid(&net, 1), SmState::Standby));
    assert_eq!(i.sm_key, m.sm_key, "the sender presented the key");
    assert_eq!(sm1(&net, app).election().state(), SmState::NotActive);
    assert_eq!(answered(&net, 1).1, SmState::NotActive);

    let r = set_sminfo_from_host2(&mut net, modifier::ACKNOWLEDGE, m);
    assert_eq!(r.status(), MadStatus::INVALID_ATTR_VALUE);
    let r = set_sminfo_from_host2(&mut net, modifier::HANDOVER, s);
    assert_eq!(r.status(), MadStatus::INVALID_ATTR_VALUE);
    assert_eq!(sm1(&net, app).election().state(), SmState::NotActive);

    let r = set_sminfo_from_host2(&mut net, modifier::STANDBY, m);
    assert_eq!(r.status(), MadStatus::SUCCESS);
    let e = sm1(&net, app).election();
    assert_eq!(
        (e.state(), e.master_guid()),
        (SmState::Standby, Some(port_guid(&net, 2)))
    );
    // Host 2 runs no SM: the polls fail, and after them the SM sweeps and finds host 0's master.
    let p = ElectionSettings::default();
    let t = net.sim().now() + p.polling_timeout * (p.polling_retries + 1);
    net.sim_mut().run_until(t);
    let e = sm1(&net, app).election();
    assert_eq!(
        (e.state(), e.master_guid(), e.takeovers()),
        (SmState::Standby, Some(port_guid(&net, 0)), 1)
    );
    assert_eq!(sm0(&net).election().state(), SmState::Master);
}

/// Takes cable `cable` down and runs past the Standby's failed polls (OpenSM's defaults): host
/// 1's SM is then Master.
fn cut_and_let_sm1_take_over(net: &mut Subnet, app: AppId, cable: usize) {
    assert!(net.set_cable(cable, false).unwrap());
    let s = ElectionSettings::default();
    let t = net.sim().now() + s.polling_timeout * (s.polling_retries + 2);
    net.sim_mut().run_until(t);
    assert_eq!(sm1(net, app).election().state(), SmState::Master);
}

// IBA 1 §14.4.1 (OpenSM `osm_sm_state_mgr.c`: a HANDOVER or a polling timeout sets
// `coming_out_of_standby`, and `do_sweep` then rewrites every switch's tables, `need_update`): a
// master that got mastership back cannot trust its copy of what it last set, since another master
// programmed the switches in between. Host 0's SM masters the subnet; the sw0 - sw1 cable is cut
// and host 1's SM masters its half with forwarding tables of its own (no routes to the other half); the cable comes
// back, host 1's SM hands over, and host 0's SM must program the whole subnet again.
#[test]
fn a_master_coming_back_reprograms_what_another_master_changed() {
    let (mut net, app) = two_sms(0, 0);
    cut_and_let_sm1_take_over(&mut net, app, 1);
    managed_by(&net, &[1, 2], 1);
    assert!(
        sm1(&net, app).stats().sets > 0,
        "host 1's SM programmed its half: no routes to host 0's side"
    );
    assert!(net.set_cable(1, true).unwrap());
    let t = net.sim().now() + Duration::from_secs(2);
    net.sim_mut().run_until(t);
    let (a, b) = (sm0(&net).election(), sm1(&net, app).election());
    assert_eq!((a.state(), b.state()), (SmState::Master, SmState::Standby));
    managed_by(&net, &[0, 1, 2], 0);
    ping(&mut net, &all_pairs(3));
}

/// Host 0's SM sweeps now (as on a trap).
fn sweep0(net: &mut Subnet) {
    let app = net.sm_app_id().unwrap();
    let node = net.host(0).node;
    net.sim_mut()
        .with_node::<Host, _>(node, |h, now, tx| {
            let id = h.app::<SmApp>(app).unwrap().smp_agent();
            h.agent_mut::<SmpSm>(id).unwrap().sweep_at(now);
            h.drive(now, tx);
        })
        .unwrap();
}

// IBA 1 §14.4.1 C14-60.2.1 (OpenSM `WAIT_FOR_HANDOVER`): a master that found a lesser Master polls
// it while waiting for its HANDOVER. A poll that falls due while the master sweeps again waits for
// the end of the sweep; the SM's timer is not left in the past, where the simulator would fire it
// again and again at one instant and never reach the answers of the sweep.
#[test]
fn a_poll_due_during_a_sweep_waits_for_it() {
    let mut net = Subnet::build(options(chain(), seed(11))).unwrap();
    assert!(net.run_until_joined(at(5)), "every host has carrier");
    // Host 2's port answers SubnGet(SMInfo) as a Master lesser than host 0's SM (equal
    // Priority, higher GUID), which never hands over.
    assert!(port_guid(&net, 0) < port_guid(&net, 2));
    let lesser = host2_sm_info(&net, 0, SmState::Master);
    let node = net.host(2).node;
    net.sim_mut()
        .with_node::<Host, _>(node, |h, _, _| h.hca_mut().set_sm_info(1, Some(lesser)))
        .unwrap();
    sweep0(&mut net);
    let t = net.sim().now() + Duration::from_secs(1);
    net.sim_mut().run_until(t);
    let e = sm0(&net).election();
    assert_eq!(
        (e.state(), e.master_guid()),
        (SmState::Master, Some(port_guid(&net, 2))),
        "waiting for the lesser master's HANDOVER"
    );
    let due = e.poll_timeout().expect("a poll is due");
    let sweeps = sm0(&net).stats().sweeps;
    let now = net.sim().now();
    net.sim_mut()
        .run_until(now + ((due - now) - Duration::from_micros(1)));
    sweep0(&mut net);
    let end = due + Duration::from_secs(1);
    let mut events = 0;
    while net.sim().now() < end && events < 100_000 && net.sim_mut().step() {
        events += 1;
    }
    assert!(
        events < 100_000,
        "the simulation stalls at {:?} (poll due {due:?})",
        net.sim().now()
    );
    net.sim_mut().run_until(end);
    let sm = sm0(&net);
    assert_eq!(sm.stats().sweeps, sweeps + 1, "the sweep ended");
    assert_eq!(sm.phase(), SweepPhase::Done);
    assert_eq!(sm.election().master_guid(), Some(port_guid(&net, 2)));
}

// OpenSM `osm_lid_mgr.c` (a port the LID manager has no guid2lid entry for keeps the LID it has
// when no other port holds it): a Standby that takes over gives the hosts the LIDs they already
// have, its own port's included, so that no host's address changes (a LID change is a normal
// flush of the IPoIB interface: carrier down, connections torn down, docs/DEPLOYED.md).
#[test]
fn a_takeover_keeps_the_hosts_lids() {
    let (mut net, app) = two_sms(0, 0);
    let lids: Vec<u16> = [1, 2]
        .iter()
        .map(|&i| net.host_port(i).unwrap().lid)
        .collect();
    cut_and_let_sm1_take_over(&mut net, app, 0);
    managed_by(&net, &[1, 2], 1);
    let now: Vec<u16> = [1, 2]
        .iter()
        .map(|&i| net.host_port(i).unwrap().lid)
        .collect();
    assert_eq!(now, lids, "hosts 1 and 2 keep their LIDs");
    ping(&mut net, &[(1, 2), (2, 1)]);
}

// IBA 1 §14.4.11 (OpenSM `osm_sm_state_mgr.c`: a HANDOVER received while Master forces a first
// master sweep; Linux `ipoib_event` on IB_EVENT_CLIENT_REREGISTER, docs/DEPLOYED.md): the master
// gets a HANDOVER (from a umad user on host 2 whose SMInfo says Master) and sweeps as a new
// master, setting ClientReregister on every CA port while no LID and no MasterSMLID changes; each
// host's IPoIB interface rejoins on the ClientReregister alone, and traffic flows.
#[test]
fn client_reregister_alone_makes_the_hosts_rejoin() {
    let mut net = Subnet::build(options(chain(), seed(11))).unwrap();
    assert!(net.run_until_joined(at(5)), "every host has carrier");
    let ports: Vec<(u16, u16)> = (0..3)
        .map(|i| {
            let p = net.host_port(i).unwrap();
            (p.lid, p.sm_lid)
        })
        .collect();
    let rejoins = |net: &Subnet, i: usize| {
        app(net, i)
            .log()
            .filter(|(_, _, m)| m.starts_with("client reregister"))
            .count()
    };
    let sender = host2_sm_info(&net, 0, SmState::Master);
    // h2 - sw1 port 3, sw1 port 1 - sw0 port 2, sw0 port 1 - h0.
    let r = set_sminfo_from_host2_by(&mut net, &[1, 1, 1], modifier::HANDOVER, sender);
    assert_eq!(r.status(), MadStatus::SUCCESS);
    let t = net.sim().now() + Duration::from_secs(2);
    net.sim_mut().run_until(t);
    assert_eq!(sm0(&net).election().stats().handovers_received, 1);
    for (i, &before) in ports.iter().enumerate() {
        let p = net.host_port(i).unwrap();
        assert_eq!((p.lid, p.sm_lid), before, "host {i}");
        assert_eq!(reregisters(&net, i), 2, "host {i}");
        assert_eq!(rejoins(&net, i), 1, "host {i} rejoined");
    }
    assert_eq!(bcast_members(net.sa()).len(), 3);
    ping(&mut net, &all_pairs(3));
}

/// True for a LID-routed Trap(Notice 128) SMP (LRH, BTH, DETH, then the MAD: class SubnLid at
/// byte 1, method Trap at 3, the Notice in the SMP data from byte 64, its TrapNumber at 4-5).
fn is_trap_128(pkt: &[u8]) -> bool {
    let Some(mad) = pkt.get(28..) else {
        return false;
    };
    mad.len() >= 70
        && mad[1] == 0x01
        && mad[3] == 0x05
        && u16::from_be_bytes([mad[68], mad[69]]) == 128
}

// IBA 1 §14.4.1 C14-60.2.1; OpenSM `smi_rcv_process_get_sm`: a master waiting for the HANDOVER
// of a lesser master sends it a trap 144 after each answered poll, so that a lesser master that
// missed what should have made it sweep does not stay master for ever. Here every trap 128 is
// lost: host 1's SM takes over its half (sw2 and host 1) unseen by host 0's SM, whose tables
// still route to host 1; the cable comes back and host 0's SM sweeps (as an operator would ask
// it), finds host 1's Master and waits. Host 1's SM hears of nothing until the trap 144 after
// host 0's first poll: it sweeps on it, finds the greater master and hands over.
#[test]
fn a_lesser_master_that_missed_its_traps_is_told_by_trap_144() {
    let (mut net, app) = two_sms(0, 0);
    net.sim_mut()
        .set_drop_filter(Some(Box::new(|_, _, pkt: &[u8]| is_trap_128(pkt))));
    cut_and_let_sm1_take_over(&mut net, app, 2);
    managed_by(&net, &[1], 1);
    assert!(net.set_cable(2, true).unwrap());
    let t = net.sim().now() + Duration::from_secs(1);
    net.sim_mut().run_until(t);
    assert_eq!(
        sm1(&net, app).election().state(),
        SmState::Master,
        "no trap 128 came"
    );
    sweep0(&mut net);
    let t = net.sim().now() + Duration::from_secs(1);
    net.sim_mut().run_until(t);
    let a = sm0(&net).election();
    assert_eq!(
        (a.state(), a.master_guid()),
        (SmState::Master, Some(port_guid(&net, 1))),
        "host 0's SM waits for host 1's HANDOVER"
    );
    let traps = sm1(&net, app).stats().traps;
    // The first poll, its trap 144, host 1's sweep and HANDOVER, host 0's first master sweep.
    let s = ElectionSettings::default();
    let t = net.sim().now() + s.polling_timeout + Duration::from_secs(2);
    net.sim_mut().run_until(t);
    assert!(sm1(&net, app).stats().traps > traps, "a trap 144 came");
    let (a, b) = (sm0(&net).election(), sm1(&net, app).election());
    assert_eq!((a.state(), b.state()), (SmState::Master, SmState::Standby));
    assert_eq!(
        (b.stats().handovers_sent, a.stats().handovers_received),
        (1, 1)
    );
    assert_eq!(a.master_guid(), None, "no longer waiting");
    managed_by(&net, &[0, 1, 2], 0);
    ping(&mut net, &all_pairs(3));
}
