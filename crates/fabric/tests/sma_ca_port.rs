//! A CA port's PortPhysicalState written by a SubnSet(PortInfo) (IBA 1 §14.2.5.6, §5.6.2.1), as
//! `ibportstate LID 1 disable` / `enable` write it, measured against ibsim under OpenSM
//! (docs/OPENSM-NOTES.md "ibsim against our fabric"): Disabled takes the CA's link down as a
//! pulled cable does, Polling brings it back; a value a Set may not write is refused, on a CA
//! port as on a switch port. The probe and fabric of `sma.rs`, and a subnet of hosts with
//! IPoIB and our SM.

#[path = "common/sma.rs"]
mod fabric;

use fabric::*;
use ipoib_fabric::hw::sim::PortRef;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::host::{AgentId, Host};
use ipoib_fabric::node::subnet::{SmMode, Subnet};
use ipoib_fabric::testing::cm::with_host;
use ipoib_fabric::testing::*;
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::{MadStatus, Method};
use ipoib_wire::smp::{PortInfoRepr, PortPhysState, PortState, SmpAttribute, SmpMadRepr};
use std::time::Duration;

fn states(p: &PortInfoRepr) -> (PortPhysState, PortState) {
    (p.port_phys_state, p.port_state)
}

// `ibportstate CA_LID 1 disable`: the CA answers (Disabled), then its link goes down: the CA's
// port Disabled and Down, S2's end Polling and Down, S2's trap 128 to the SM, LinkDownedCounter 1
// at both ends, the CA out of reach. The Set used to be ignored and the link stayed up. Polling
// can then reach the CA only through its own SMA (HopCount 0, the test's write on the HCA itself
// here): the link trains again, both ends LinkUp and Init, another trap 128.
#[test]
fn a_ca_port_disabled_takes_its_link_down() {
    let mut f = Fabric::new(4);
    assign_lids(&mut f);
    let smps = set_phys(&mut f, TO_CA, 1, PortPhysState::Disabled);
    assert_eq!(smps.len(), 2, "the answer and a trap: {smps:?}");
    assert_eq!(smps[0].status(), MadStatus::SUCCESS);
    assert_eq!(port_info(&smps[0]).port_phys_state, PortPhysState::Disabled);
    let SmpAttribute::Notice(n) = smps[1].attribute else {
        panic!("a trap: {:?}", smps[1])
    };
    assert_eq!(
        (n.trap_number(), n.trap_lid_addr()),
        (Some(128), Some(S2_LID))
    );
    let ca = f.hca().port_info(1).unwrap();
    assert_eq!(states(&ca), (PortPhysState::Disabled, PortState::Down));
    let s2 = get_port_info(&mut f, TO_S2, 7, 0).expect("S2 answers");
    assert_eq!(states(&s2), (PortPhysState::Polling, PortState::Down));
    assert!(get_port_info(&mut f, TO_CA, 1, 0).is_none(), "out of reach");
    assert_eq!(f.port_counters(7, S2_LID).link_downed_counter, 1);
    assert_eq!(f.hca().port(1).unwrap().traffic.link_downed, 1);
    // Disabled again: nothing changes (the CA is out of reach: S2's port is written instead,
    // its link already down), no trap.
    let smps = set_phys(&mut f, TO_S2, 7, PortPhysState::Disabled);
    assert_eq!(smps.len(), 1, "the answer alone: {smps:?}");
    assert_eq!(f.port_counters(7, S2_LID).link_downed_counter, 1);
}

// IBA 1 §14.2.5.6: a SubnSet(PortInfo) acts on PortPhysicalState 2 (Polling) and 3 (Disabled).
// Any other value (no state change, Sleep, the LinkUp a read-modify-write sends back, a reserved
// one) changes nothing of the link and the rest of the write is taken (here a new LID), by a CA
// port and a switch port alike.
#[test]
fn a_phys_state_other_than_polling_or_disabled_changes_no_link_on_ca_and_switch_ports() {
    let mut f = Fabric::new(4);
    assign_lids(&mut f);
    for (path, port) in [(TO_CA, 1), (TO_S2, 7)] {
        for (i, phys) in [
            PortPhysState::NoStateChange,
            PortPhysState::Sleep,
            PortPhysState::LinkUp,
            PortPhysState::PortConfigurationTraining,
            PortPhysState::from(9),
            PortPhysState::from(15),
        ]
        .into_iter()
        .enumerate()
        {
            let lid = 0x30 + i as u16;
            let mut a = get_port_info(&mut f, path, port, 0).expect("PortInfo");
            let r = set_port_info(&mut f, path, port, |w| {
                w.port_phys_state = phys;
                w.lid = lid;
            });
            assert_eq!(r.status(), MadStatus::SUCCESS, "{path:?} {phys:?}");
            let after = get_port_info(&mut f, path, port, 0).expect("PortInfo");
            if path == TO_CA {
                a.lid = lid; // a switch's external ports answer with port 0's
            }
            assert_eq!(after, a, "{path:?} {phys:?}: the LID alone changed");
            assert_eq!(after.port_phys_state, PortPhysState::LinkUp);
        }
    }
    assert_eq!(f.port_counters(7, S2_LID).link_downed_counter, 0);
}

/// SMPs from a host's umad agent (as `ibportstate` on the host sends them).
struct Diag {
    host: usize,
    user: AgentId,
    f: Fabric,
}

impl Diag {
    fn attach(net: &mut Subnet, host: usize) -> Diag {
        let node = net.host(host).node;
        let user = net
            .sim_mut()
            .with_node::<Host, _>(node, |h, _, _| h.umad_attach())
            .unwrap();
        Diag {
            host,
            user,
            f: Fabric::new(0),
        }
    }

    /// The answer to a directed-route SMP along `path` (HopCount 0: the host's own SMA), if any.
    fn dr(
        &mut self,
        net: &mut Subnet,
        method: Method,
        path: &[u8],
        port: u8,
        attribute: SmpAttribute,
    ) -> Option<SmpMadRepr> {
        let dr = self.f.smp(
            method,
            attr::PORT_INFO,
            u32::from(port),
            Some(path),
            0,
            attribute,
        );
        let got = umad_dr(net, self.host, self.user, dr);
        got.first().map(|m| SmpMadRepr::parse(&m.mad).unwrap())
    }

    /// PortInfo along `path`, written back with PortPhysicalState `phys`; the Set's answer.
    fn set_phys(&mut self, net: &mut Subnet, path: &[u8], phys: PortPhysState) -> SmpMadRepr {
        let got = self
            .dr(net, Method::Get, path, 1, none())
            .expect("PortInfo");
        let mut w = port_info(&got);
        w.port_state = PortState::NoStateChange;
        w.port_phys_state = phys;
        self.dr(net, Method::Set, path, 1, SmpAttribute::PortInfo(w))
            .expect("the Set's answer")
    }
}

// The same on a subnet of hosts with IPoIB and our SM: host 0 (the SM's) disables host 2's
// port by directed route. The answer comes back; host 2's port reads Disabled and Down, the
// switch's end Polling and Down, the switch's trap 128 reaches the SM, host 2's IPoIB loses
// carrier as on a cable pull, and a ping to it is not delivered. Host 2 then enables its port
// through its own SMA (HopCount 0, `ibportstate -D 0 1 enable` on the host): both ends train to
// Init, trap 128 again, our SM's sweep makes the port Active and pings work again.
#[test]
fn a_disabled_host_port_loses_carrier_and_polling_brings_it_back() {
    let seed = seed(52);
    let _g = SeedGuard(seed);
    let n = 4;
    let victim = 2;
    let mut o = options(Topology::single_switch(n).unwrap(), seed);
    o.sm_mode = SmMode::Ours;
    let mut net = up(o, false);
    let h0_port = net.host(0).port;
    let node = net.host(victim).node;
    let link = net.sim().link_of(PortRef { node, port: 1 }).unwrap();
    let sw_port = net
        .sim()
        .link(link)
        .ends
        .into_iter()
        .find(|e| e.node != node)
        .unwrap()
        .port;
    let to_victim = [h0_port, sw_port];
    let traps = net.smp_sm().unwrap().stats().traps;
    let mut sm = Diag::attach(&mut net, 0);
    let r = sm.set_phys(&mut net, &to_victim, PortPhysState::Disabled);
    assert_eq!(r.status(), MadStatus::SUCCESS);
    assert_eq!(port_info(&r).port_phys_state, PortPhysState::Disabled);
    net.sim_mut().run_for(Duration::from_millis(5));
    let pi = with_host(&mut net, victim, |h, _| h.hca().port_info(1)).unwrap();
    assert_eq!(states(&pi), (PortPhysState::Disabled, PortState::Down));
    let sw_end = port_info(
        &sm.dr(&mut net, Method::Get, &[h0_port], sw_port, none())
            .unwrap(),
    );
    assert_eq!(states(&sw_end), (PortPhysState::Polling, PortState::Down));
    assert!(
        net.smp_sm().unwrap().stats().traps > traps,
        "the switch's trap 128"
    );
    assert!(!app(&net, victim).carrier(), "carrier lost with the port");
    assert!(
        sm.dr(&mut net, Method::Get, &to_victim, 1, none())
            .is_none(),
        "out of reach"
    );
    let rx = with_host(&mut net, victim, |h, _| h.hca().counters().rx_packets);
    let sent = ping_pairs(&mut net, &[(1, victim)], v4, Duration::from_millis(200));
    assert!(
        rtt(&net, sent[0]).is_none(),
        "no answer from a disabled port"
    );
    assert_eq!(
        with_host(&mut net, victim, |h, _| h.hca().counters().rx_packets),
        rx,
        "nothing delivered to the disabled port"
    );
    // Enabled through its own SMA.
    let traps = net.smp_sm().unwrap().stats().traps;
    let mut own = Diag::attach(&mut net, victim);
    let r = own.set_phys(&mut net, &[], PortPhysState::Polling);
    assert_eq!(r.status(), MadStatus::SUCCESS);
    assert_eq!(port_info(&r).port_phys_state, PortPhysState::Polling);
    assert!(net.run_until_joined(net.sim().now() + Duration::from_secs(5)));
    assert!(net.smp_sm().unwrap().stats().traps > traps, "trap 128");
    let pi = with_host(&mut net, victim, |h, _| h.hca().port_info(1)).unwrap();
    assert_eq!(states(&pi), (PortPhysState::LinkUp, PortState::Active));
    let sw_end = port_info(
        &sm.dr(&mut net, Method::Get, &[h0_port], sw_port, none())
            .unwrap(),
    );
    assert_eq!(states(&sw_end), (PortPhysState::LinkUp, PortState::Active));
    let log: Vec<bool> = app(&net, victim)
        .carrier_log()
        .iter()
        .map(|c| c.1)
        .collect();
    assert_eq!(log, vec![true, false, true]);
    let sent = ping_pairs(
        &mut net,
        &[(1, victim), (victim, 3)],
        v4,
        Duration::from_secs(1),
    );
    for s in sent {
        assert!(rtt(&net, s).is_some(), "{} -> {} unanswered", s.0, s.1);
    }
}

// IBA 1 §14.2.4.1, §14.2.5.1 Table 131: a CA port whose M_Key check fails sends its SM (the
// probe, MasterSMLID) Trap(Notice 256, Bad M_Key) from its LID, as a switch does and as Linux's
// qib does (`qib_bad_mkey`, M_Key 0 in the trap): LIDADDR the CA's LID, the SMP's Method,
// AttributeID, AttributeModifier and M_Key, and of the directed route its DRSLID, hop count and
// return path. A second violation within 4.096 µs × 2^SubnetTimeOut is counted, not reported.
// Before, the CA dropped them and sent nothing.
#[test]
fn a_ca_port_sends_trap_256_for_a_bad_mkey() {
    use ipoib_fabric::hw::sma;
    use ipoib_wire::mad::{BadMKeyTrap, ProducerType};
    let mut f = Fabric::new(14);
    assign_lids(&mut f);
    set_port_info(&mut f, TO_CA, 0, |p| {
        p.mkey = 0x5eed;
        p.mkey_protect_bits = 2;
        p.subnet_timeout = 18;
    });
    let smp = f.smp(Method::Get, attr::PORT_INFO, 1, Some(TO_CA), 0x0bad, none());
    let back = f.exchange(sma::smp_packet(0xffff, 0xffff, 0, &smp));
    assert_eq!(back.len(), 1, "a trap instead of an answer");
    let lrh = ipoib_wire::packet::Packet::parse(&back[0]).unwrap().lrh;
    assert_eq!((lrh.slid, lrh.dlid), (CA_LID, PROBE_LID));
    let trap = one_smp(back).unwrap();
    assert_eq!((trap.header.method, trap.mkey), (Method::Trap, 0));
    let SmpAttribute::Notice(n) = trap.attribute else {
        panic!("{:?}", trap.attribute)
    };
    assert_eq!(
        (n.producer_type_or_vendor_id, n.trap_number_or_device_id),
        (u32::from(ProducerType::Ca), 256)
    );
    let t = BadMKeyTrap::from_notice(&n).expect("trap 256");
    assert_eq!(
        (t.lid, t.method, t.attribute_id, t.attribute_modifier),
        (CA_LID, 1, attr::PORT_INFO, 1)
    );
    assert_eq!((t.mkey, t.dr_notice, t.dr_hop_count), (0x0bad, true, 3));
    assert_eq!(t.dr_slid, 0xffff);
    assert_eq!(
        &t.dr_return_path[..4],
        &[0, 3, 2, 1],
        "the ports each hop came in by"
    );
    // Within the window (1.07 s; the fabric ran microseconds): counted, no trap.
    assert!(f
        .lid(Method::Set, attr::PORT_INFO, 1, CA_LID, 0x0bad, none())
        .is_none());
    let p = get_port_info(&mut f, TO_CA, 0, 0x5eed).expect("answered with the M_Key");
    assert_eq!(p.mkey_violations, 2);
}
