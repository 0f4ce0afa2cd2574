//! A SubnSet(PortInfo) PortPhysicalState (IBA 1 §14.2.5.6, §5.6.2.1) of an attached host's CA
//! port, or of the switch port facing it, on the subnet across processes (docs/UDP-FABRIC.md,
//! "PortConfig carries what the SMA set"): the host sees what a host in the fabric's process sees
//! (`sma_ca_port::a_disabled_host_port_loses_carrier_and_polling_brings_it_back`). Disabled: the
//! host's port goes Down as of a pulled cable, its IPoIB loses carrier, it is out of reach, and
//! the slot drops what it still sends; Polling: the link trains, the host's port goes Init,
//! Armed and Active by the PortConfigs the SM's sweep causes, its IPoIB joins again and pings
//! get through. SMPs come from a umad user on the SM's host (as `ibportstate` there sends them).

#[path = "common/remote.rs"]
mod remote;
#[path = "common/sma.rs"]
mod sma_fabric;

use ipoib_fabric::hw::mgmt::PortState;
use ipoib_fabric::hw::sim::{NodeId, PortRef};
use ipoib_fabric::hw::sma::smp_packet;
use ipoib_fabric::node::host::{AgentId, Host};
use ipoib_fabric::node::remote::Remote;
use ipoib_fabric::testing::ud_packet;
use ipoib_proto::mad_agent::MadAddr;
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::{MadStatus, Method, MAD_LEN};
use ipoib_wire::smp::SmpMadRepr;
use ipoib_wire::smp::{PortInfoRepr, PortPhysState, PortState as WireState, SmpAttribute};
use ipoib_wire::udp_fabric::{DatagramRepr, MessageRepr, PortStateCode};
use ipoib_wire::PKey;
use remote::{addr, Net};
use std::time::Duration;

const SEC: Duration = Duration::from_secs(1);
/// The slot whose link the tests take down (its host: peer 1).
const VICTIM: usize = 1;

/// Where things are: the SM's host and port, the victim slot's node and port, the switch port
/// facing it.
struct Places {
    sm_node: NodeId,
    sm_port: u8,
    slot_node: NodeId,
    slot_port: u8,
    sw_port: u8,
}

fn places(net: &Net) -> Places {
    let sm = net.fabric.topology().first_ca_port().unwrap();
    let slot_node = net.fabric.built().nodes[net.fabric.slot_topo_node(VICTIM).unwrap()];
    let slot_port = net.fabric.slot(VICTIM).unwrap().port();
    let sim = net.fabric.sim();
    let link = sim
        .link_of(PortRef {
            node: slot_node,
            port: slot_port,
        })
        .unwrap();
    let sw_port = sim
        .link(link)
        .ends
        .into_iter()
        .find(|e| e.node != slot_node)
        .unwrap()
        .port;
    Places {
        sm_node: net.fabric.built().nodes[sm.node],
        sm_port: sm.port,
        slot_node,
        slot_port,
        sw_port,
    }
}

/// A umad user on the SM's host, sending directed-route SMPs.
struct Diag {
    user: AgentId,
    smps: sma_fabric::Fabric,
}

impl Diag {
    fn attach(net: &mut Net, at: &Places) -> Diag {
        let user = net
            .fabric
            .sim_mut()
            .with_node::<Host, _>(at.sm_node, |h, _, _| h.umad_attach())
            .unwrap();
        Diag {
            user,
            smps: sma_fabric::Fabric::new(0),
        }
    }

    /// The answer to a directed-route PortInfo SMP along `path` for `port`, if any.
    fn dr(
        &mut self,
        net: &mut Net,
        at: &Places,
        method: Method,
        path: &[u8],
        port: u8,
        attribute: SmpAttribute,
    ) -> Option<SmpMadRepr> {
        self.send(net, at, method, path, port, attribute);
        net.run_for(Duration::from_millis(2));
        let user = self.user;
        let got = net
            .fabric
            .sim_mut()
            .node_mut::<Host>(at.sm_node)
            .unwrap()
            .umad_take(user);
        got.first().map(|m| SmpMadRepr::parse(&m.mad).unwrap())
    }

    /// Sends the directed-route SMP of [`Diag::dr`] (PortInfo of `port` at the end of `path`)
    /// from the SM's host, without running the fabric after it.
    fn send(
        &mut self,
        net: &mut Net,
        at: &Places,
        method: Method,
        path: &[u8],
        port: u8,
        attribute: SmpAttribute,
    ) {
        let mut mad = self.smps.smp(
            method,
            attr::PORT_INFO,
            u32::from(port),
            Some(path),
            0,
            attribute,
        );
        mad[6] = 0; // a umad user sends HopPointer 0; the port moves it
        net.fabric.handle_timeout(net.now);
        let user = self.user;
        net.fabric
            .sim_mut()
            .with_node::<Host, _>(at.sm_node, |h, now, tx| {
                let to = MadAddr {
                    qpn: 0,
                    ..MadAddr::gsi(0xffff)
                };
                h.umad_send(user, to, &mad).unwrap();
                h.drive(now, tx);
            })
            .unwrap();
    }

    fn port_info(
        &mut self,
        net: &mut Net,
        at: &Places,
        path: &[u8],
        port: u8,
    ) -> Option<PortInfoRepr> {
        self.dr(net, at, Method::Get, path, port, sma_fabric::none())
            .map(|r| sma_fabric::port_info(&r))
    }

    /// `ibportstate`: PortInfo of `port` along `path` written back with PortPhysicalState
    /// `phys`; the Set's answer.
    fn set_phys(
        &mut self,
        net: &mut Net,
        at: &Places,
        path: &[u8],
        port: u8,
        phys: PortPhysState,
    ) -> SmpMadRepr {
        let mut w = self.port_info(net, at, path, port).expect("PortInfo");
        w.port_state = WireState::NoStateChange;
        w.port_phys_state = phys;
        self.dr(net, at, Method::Set, path, port, SmpAttribute::PortInfo(w))
            .expect("the Set's answer")
    }

    /// PortInfo `w` of the victim host's CA port written back with ClientReregister 1 and its
    /// state unchanged (IBA 1 §14.4.11, as a new master's first sweep writes it), which must
    /// succeed.
    fn set_client_reregister(&mut self, net: &mut Net, at: &Places, mut w: PortInfoRepr) {
        w.port_state = WireState::NoStateChange;
        w.client_reregister = true;
        let to_ca = [at.sm_port, at.sw_port];
        let r = self
            .dr(
                net,
                at,
                Method::Set,
                &to_ca,
                at.slot_port,
                SmpAttribute::PortInfo(w),
            )
            .expect("the Set's answer");
        assert_eq!(r.status(), MadStatus::SUCCESS);
    }

    /// [`Diag::set_phys`] of the switch port facing the victim host (one hop from the SM's
    /// host), which must succeed.
    fn set_switch_end(&mut self, net: &mut Net, at: &Places, phys: PortPhysState) {
        let r = self.set_phys(net, at, &[at.sm_port], at.sw_port, phys);
        assert_eq!(r.status(), MadStatus::SUCCESS);
    }
}

/// The victim host's HCA port: (state, link up, LinkDownedCounter).
fn host_port(net: &Net) -> (PortState, bool, u64) {
    let port = net.peers[VICTIM].host.identity().unwrap().port;
    let p = net.peers[VICTIM]
        .host
        .host()
        .unwrap()
        .hca()
        .port(port)
        .unwrap();
    (p.state, p.phys_up, p.traffic.link_downed)
}

/// The PortStates the fabric sent the victim for its port since `from`, repeats folded.
fn states_sent(net: &Net, from: usize) -> Vec<PortStateCode> {
    let port = net.fabric.slot(VICTIM).unwrap().port();
    let mut v: Vec<PortStateCode> = net.configs[from..]
        .iter()
        .filter(|c| usize::from(c.0) == VICTIM && c.1 == port)
        .map(|c| c.2)
        .collect();
    v.dedup();
    v
}

/// A data packet from the victim's session with its own LID, as its HCA would send one: what a
/// host that has not yet heard of its link going down still sends.
fn from_victim(net: &mut Net) {
    let lid = net.fabric.slot(VICTIM).unwrap().lid();
    let peer_lid = net.fabric.slot(0).unwrap().lid();
    let packet = ud_packet(lid, peer_lid, 64, PKey::DEFAULT);
    let session = net.peers[VICTIM].host.link().session().unwrap();
    let d = DatagramRepr {
        session,
        message: MessageRepr::Packet(&packet),
    }
    .to_vec()
    .unwrap();
    let now = net.now;
    net.fabric.handle_datagram(now, VICTIM as u8, &d);
}

/// Everything a local host sees when its link goes down: the slot's port Down with no link, the
/// host's port Down as of a pulled cable (LinkDownedCounter 1), no carrier, out of reach, and
/// what it still sends dropped at the slot and counted.
fn assert_link_down(net: &mut Net) {
    let slot = net.fabric.slot(VICTIM).unwrap();
    let sp = slot.sma().port(slot.port()).unwrap();
    assert_eq!((sp.state, sp.phys_up), (PortState::Down, false));
    assert_eq!(host_port(net), (PortState::Down, false, 1));
    assert!(!net.carrier(VICTIM), "carrier lost with the link");
    assert!(!net.ping_and_wait(0, addr(VICTIM), SEC), "out of reach");
    let before = net.fabric.slot(VICTIM).unwrap().counters();
    from_victim(net);
    let c = net.fabric.slot(VICTIM).unwrap().counters();
    assert_eq!(c.link_down, before.link_down + 1, "{c:?}");
    assert_eq!(c.from_host, before.from_host, "{c:?}");
}

/// The victim host's carrier changes so far, up (`true`) or down.
fn carrier_states(net: &Net) -> Vec<bool> {
    let app = net.app(VICTIM).unwrap();
    app.carrier_log().iter().map(|c| c.1).collect()
}

/// Everything back: the host's port Active with its link, carrier again (once lost), member of
/// the broadcast group, pings both ways; the fabric sent the host's port the states `states`
/// since `from`.
fn assert_back(net: &mut Net, from: usize, states: &[PortStateCode]) {
    assert!(
        net.run_until(5 * SEC, |n| n.carrier(VICTIM)),
        "carrier back"
    );
    assert_eq!(host_port(net), (PortState::Active, true, 1));
    assert_eq!(states_sent(net, from), states);
    let log = carrier_states(net);
    assert_eq!(log, [true, false, true]);
    let gid = net.fabric.slot(VICTIM).unwrap().gid();
    assert!(net
        .fabric
        .sa()
        .unwrap()
        .groups()
        .iter()
        .any(|g| g.members.iter().any(|(m, _)| *m == gid)));
    assert!(net.ping_and_wait(0, addr(VICTIM), SEC), "0 -> victim");
    assert!(net.ping_and_wait(VICTIM, addr(0), SEC), "victim -> 0");
}

fn up(seed: u64) -> (Net, Places) {
    let mut net = Net::new(2, seed);
    assert!(
        net.run_until(2 * SEC, |n| n.carrier(0) && n.carrier(1)),
        "hosts did not come up"
    );
    assert!(net.ping_and_wait(0, addr(VICTIM), SEC));
    let at = places(&net);
    (net, at)
}

// IBA 1 §14.2.5.6, §5.6.2.1: `ibportstate SWITCH_LID PORT disable` on the switch port facing an
// attached host takes the host's link down; `enable` (Polling) brings it back, the SM's sweep
// (trap 128) activating both ends.
#[test]
fn the_switch_port_facing_an_attached_host_disabled_and_enabled() {
    let (mut net, at) = up(11);
    let mut sm = Diag::attach(&mut net, &at);
    let from = net.configs.len();
    sm.set_switch_end(&mut net, &at, PortPhysState::Disabled);
    net.run_for(Duration::from_millis(50));
    let sw = sm
        .port_info(&mut net, &at, &[at.sm_port], at.sw_port)
        .unwrap();
    assert_eq!(
        (sw.port_phys_state, sw.port_state),
        (PortPhysState::Disabled, WireState::Down)
    );
    assert_link_down(&mut net);
    sm.set_switch_end(&mut net, &at, PortPhysState::Polling);
    use PortStateCode::*;
    assert_back(&mut net, from, &[Down, Init, Armed, Active]);
}

// IBA 1 §14.2.5.6, §5.6.2.1: `ibportstate CA_LID 1 disable` on an attached host's CA port (its
// SMA is the slot's, in the fabric) takes the host's link down; the switch's end reads Polling.
// A disabled CA port is reached only through its own SMA (HopCount 0, `ibportstate -D 0 1
// enable` on the CA, given here to the slot's SMA as it would come from the CA itself): Polling
// brings the link back.
#[test]
fn an_attached_hosts_ca_port_disabled_and_enabled() {
    let (mut net, at) = up(12);
    let mut sm = Diag::attach(&mut net, &at);
    let to_ca = [at.sm_port, at.sw_port];
    let from = net.configs.len();
    let r = sm.set_phys(&mut net, &at, &to_ca, at.slot_port, PortPhysState::Disabled);
    assert_eq!(r.status(), MadStatus::SUCCESS);
    assert_eq!(
        sma_fabric::port_info(&r).port_phys_state,
        PortPhysState::Disabled
    );
    net.run_for(Duration::from_millis(50));
    let sw = sm
        .port_info(&mut net, &at, &[at.sm_port], at.sw_port)
        .unwrap();
    assert_eq!(
        (sw.port_phys_state, sw.port_state),
        (PortPhysState::Polling, WireState::Down)
    );
    assert!(
        sm.port_info(&mut net, &at, &to_ca, at.slot_port).is_none(),
        "out of reach"
    );
    assert_link_down(&mut net);
    // Enabled through the CA's own SMA.
    let mut w = net
        .fabric
        .slot(VICTIM)
        .unwrap()
        .sma()
        .port_info(at.slot_port)
        .unwrap();
    assert_eq!(w.port_phys_state, PortPhysState::Disabled);
    w.port_state = WireState::NoStateChange;
    w.port_phys_state = PortPhysState::Polling;
    let mut mad: [u8; MAD_LEN] = sm.smps.smp(
        Method::Set,
        attr::PORT_INFO,
        u32::from(at.slot_port),
        Some(&[]),
        0,
        SmpAttribute::PortInfo(w),
    );
    mad[6] = 0;
    net.fabric.handle_timeout(net.now);
    let port = at.slot_port;
    net.fabric
        .sim_mut()
        .with_node::<Remote, _>(at.slot_node, |r, now, tx| {
            ipoib_fabric::hw::sim::Device::receive(
                r,
                now,
                port,
                smp_packet(0xffff, 0xffff, 0, &mad),
                tx,
            )
        })
        .unwrap();
    // The first Active: the Disabled Set's write of the port, answered before the link went.
    use PortStateCode::*;
    assert_back(&mut net, from, &[Active, Down, Init, Armed, Active]);
}

// docs/UDP-FABRIC.md "Liveness": a host the fabric hears nothing from loses its session and the
// slot's cable; the host, which hears nothing back, takes its own cable down (Down, no carrier,
// LinkDownedCounter 1), attaches again and is brought up by the PortConfigs of the SM's sweep,
// Init, Armed, Active, as a local host whose cable was pulled and plugged.
#[test]
fn a_host_the_fabric_found_silent_goes_down_and_comes_back_through_init_armed_active() {
    let (mut net, _) = up(13);
    // Everything the host sends is lost on the way (garbage at the fabric).
    net.peers[VICTIM].tamper = Some(Box::new(|_: &[u8]| Some(vec![0; 4])));
    assert!(
        net.run_until(3 * SEC, |n| !n.peers[VICTIM].host.link().is_attached()),
        "the host noticed"
    );
    assert_eq!(net.fabric.counters().timed_out, 1);
    net.run_for(Duration::from_millis(5));
    assert_eq!(host_port(&net), (PortState::Down, false, 1));
    assert!(!net.carrier(VICTIM));
    let from = net.configs.len();
    net.peers[VICTIM].tamper = None;
    use PortStateCode::*;
    assert_back(&mut net, from, &[Init, Armed, Active]);
}

// IBA 1 §5.6.2.1: a port whose link partner is disabled never gets a link. A host that loses its
// session while the switch port facing it is Disabled, and attaches again before it is enabled,
// has no link meanwhile (its port stays Down, LinkDownedCounter counts the one loss); the
// enable then brings it back as before.
#[test]
fn a_host_attached_again_while_the_switch_port_facing_it_is_disabled_gets_no_link() {
    let (mut net, at) = up(14);
    let mut sm = Diag::attach(&mut net, &at);
    let from = net.configs.len();
    sm.set_switch_end(&mut net, &at, PortPhysState::Disabled);
    net.run_for(Duration::from_millis(50));
    assert_link_down(&mut net);
    // The host goes silent, loses its session, then attaches again, the port still disabled.
    net.peers[VICTIM].tamper = Some(Box::new(|_: &[u8]| Some(vec![0; 4])));
    assert!(
        net.run_until(5 * SEC, |n| !n.peers[VICTIM].host.link().is_attached()),
        "the host noticed"
    );
    net.peers[VICTIM].tamper = None;
    assert!(
        net.run_until(3 * SEC, |n| n.peers[VICTIM].host.link().is_attached()),
        "attached again"
    );
    net.run_for(Duration::from_millis(50));
    assert_eq!(net.peers[VICTIM].host.builds(), 1, "the same host");
    assert_eq!(host_port(&net), (PortState::Down, false, 1), "no link");
    assert!(!net.carrier(VICTIM));
    sm.set_switch_end(&mut net, &at, PortPhysState::Polling);
    use PortStateCode::*;
    assert_back(&mut net, from, &[Down, Init, Armed, Active]);
}

/// The ClientReregister events the victim host's HCA raised on its port.
fn victim_reregisters(net: &Net) -> u64 {
    let port = net.peers[VICTIM].host.identity().unwrap().port;
    let h = net.peers[VICTIM].host.host().unwrap();
    h.hca().port(port).unwrap().client_reregisters
}

// IBA 1 §14.4.11: a SubnSet(PortInfo) with ClientReregister 1 to an attached host's CA port (as
// a new master's first sweep writes it, OpenSM `osm_lid_mgr.c`) reaches the host as the event
// its HCA raises (docs/UDP-FABRIC.md, "ClientReregister"): its IPoIB registers again with the SA
// (joins, trap subscriptions) while the port stays Active and the carrier never drops.
#[test]
fn client_reregister_to_an_attached_hosts_port_makes_its_ipoib_register_again() {
    let (mut net, at) = up(13);
    let mut sm = Diag::attach(&mut net, &at);
    let to_ca = [at.sm_port, at.sw_port];
    let sa = |net: &Net| net.fabric.sa().unwrap().stats().requests;
    // What `ipoib show counters` of an attach process shows (section `attach`).
    let taken = |net: &Net| {
        let c = net.peers[VICTIM].host.link().counters();
        (c.client_reregisters, c.port_configs)
    };
    let before = victim_reregisters(&net);
    // Our SM's first sweep found the port new and gave it one already (OpenSM's `is_new`).
    let (reregs, configs) = taken(&net);
    assert_eq!(
        reregs, before,
        "one message per event the host's HCA raised"
    );
    assert!(configs >= 3, "Init, Armed, Active: {configs} PortConfigs");
    let w = sm.port_info(&mut net, &at, &to_ca, at.slot_port).unwrap();
    let s0 = sa(&net);
    net.run_for(Duration::from_millis(200));
    let quiet = sa(&net) - s0;
    let s1 = sa(&net);
    sm.set_client_reregister(&mut net, &at, w);
    net.run_for(Duration::from_millis(200));
    assert_eq!(
        victim_reregisters(&net),
        before + 1,
        "the host's HCA raised the event"
    );
    assert_eq!(
        taken(&net),
        (reregs + 1, configs + 1),
        "the Set's PortConfig (every SubnSet(PortInfo) sends one), then one ClientReregister"
    );
    assert_eq!(host_port(&net), (PortState::Active, true, 0));
    let log = carrier_states(&net);
    assert_eq!(log, [true], "the carrier never dropped");
    let asked = sa(&net) - s1;
    assert!(
        asked > quiet,
        "registered again: {asked} SA requests, {quiet} when quiet"
    );
    assert!(net.ping_and_wait(0, addr(VICTIM), SEC), "0 -> victim");
}

// IBA 1 §14.4.11 over a lossy path (docs/UDP-FABRIC.md "Reliable configuration"): the first copy
// of the ClientReregister message is lost on the way to the host, and the host's first
// acknowledgement of the resend on the way back. The fabric sends it again until acknowledged;
// the host takes it once (its HCA raises the event once) and recognises the second resend as a
// duplicate. (Sent once, as before, the event was lost with its datagram.)
#[test]
fn a_client_reregister_lost_once_and_its_acknowledgement_lost_is_taken_once() {
    use std::cell::Cell;
    use std::rc::Rc;
    let (mut net, at) = up(15);
    let mut sm = Diag::attach(&mut net, &at);
    let to_ca = [at.sm_port, at.sw_port];
    let before = victim_reregisters(&net);
    let c0 = net.peers[VICTIM].host.link().counters();
    let f0 = net.fabric.counters();
    let w = sm.port_info(&mut net, &at, &to_ca, at.slot_port).unwrap();
    // The first ClientReregister to the victim is lost, and so is the victim's first ControlAck
    // after it came.
    let came = Rc::new(Cell::new(false));
    let (seen, lost_one) = (came.clone(), Cell::new(false));
    net.loss = Some(Box::new(move |to, d| {
        let rereg = matches!(
            DatagramRepr::parse(d).map(|r| r.message),
            Ok(MessageRepr::SeqClientReregister { .. } | MessageRepr::ClientReregister { .. })
        );
        if usize::from(to) != VICTIM || !rereg {
            return false;
        }
        if lost_one.replace(true) {
            seen.set(true);
            return false;
        }
        true
    }));
    let (seen, acks_lost) = (came.clone(), Cell::new(0));
    net.peers[VICTIM].tamper = Some(Box::new(move |d: &[u8]| {
        let ack = matches!(
            DatagramRepr::parse(d).map(|r| r.message),
            Ok(MessageRepr::ControlAck { .. })
        );
        (ack && seen.get() && acks_lost.replace(1) == 0).then(|| vec![0; 4])
    }));
    sm.set_client_reregister(&mut net, &at, w);
    net.run_for(2 * SEC);
    assert!(came.get(), "a resend reached the host");
    assert_eq!(
        victim_reregisters(&net),
        before + 1,
        "the host's HCA raised the event once"
    );
    let c = net.peers[VICTIM].host.link().counters();
    assert_eq!(c.client_reregisters, c0.client_reregisters + 1, "{c:?}");
    assert_eq!(c.duplicates, c0.duplicates + 1, "{c:?}");
    let f = net.fabric.counters();
    assert!(f.control_resent >= f0.control_resent + 2, "{f:?}");
    assert_eq!(net.fabric.unacked(VICTIM), Some(0), "acknowledged at last");
    assert_eq!(host_port(&net), (PortState::Active, true, 0));
    assert!(net.ping_and_wait(0, addr(VICTIM), SEC), "0 -> victim");
}

// IBA 1 §14.4.11: a ClientReregister the slot's SMA took is not lost when the host's
// AttachRequest comes in the same batch of datagrams (`ipoib fabric` takes a turn's datagrams
// with `queue_datagram` and moves what the slots queued once, after them): a late duplicate of
// the request of a host that attached again, answered with the accept and its configuration.
// Before, the accept started the slot's queue afresh and dropped the event with it: the host's
// IPoIB never registered with the new SA.
#[test]
fn a_client_reregister_queued_with_a_repeated_attach_request_reaches_the_host() {
    let (mut net, at) = up(16);
    let mut sm = Diag::attach(&mut net, &at);
    let to_ca = [at.sm_port, at.sw_port];
    let mut w = sm.port_info(&mut net, &at, &to_ca, at.slot_port).unwrap();
    let before = victim_reregisters(&net);
    w.port_state = WireState::NoStateChange;
    w.client_reregister = true;
    let w = SmpAttribute::PortInfo(w);
    sm.send(&mut net, &at, Method::Set, &to_ca, at.slot_port, w);
    // The Set reaches the slot's SMA within the batch that carries the request.
    let hint = net.peers[VICTIM].host.identity().unwrap().node_guid;
    let request = DatagramRepr {
        session: 0,
        message: MessageRepr::AttachRequest {
            hint,
            cookie: net.fabric.cookie_for(&(VICTIM as u8)),
            nonce: 1,
        },
    }
    .to_vec()
    .unwrap();
    let accepts = net.fabric.counters().accepts_resent;
    let t = net.now + Duration::from_millis(2);
    net.fabric.queue_datagram(t, VICTIM as u8, &request);
    assert_eq!(net.fabric.counters().accepts_resent, accepts + 1);
    net.run_for(2 * SEC);
    assert_eq!(
        victim_reregisters(&net),
        before + 1,
        "the host's HCA raised the event"
    );
    assert_eq!(net.fabric.unacked(VICTIM), Some(0));
    assert!(net.ping_and_wait(0, addr(VICTIM), SEC), "0 -> victim");
}
