//! Pulling a cable of a running subnet and plugging it back in ([`Subnet::set_cable`]): both ends
//! go Down with PortPhysicalState Polling, then Init with LinkUp (IBA 1 §7.2); each switch end
//! sends trap 128 to the master SM both times (IBA 1 §14.2.5.1).

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::{CableError, Subnet, SubnetOptions};
use ipoib_fabric::{Instant, PortState};
use std::time::Duration;

/// Two switches joined by two cables, a host on each.
const NET: &str = "Switch 8 \"s1\"\n[1] \"a\"[1]\n[3] \"s2\"[3]\n[5] \"s2\"[5]\n\n\
Switch 8 \"s2\"\n[1] \"b\"[1]\n[3] \"s1\"[3]\n[5] \"s1\"[5]\n\n\
Hca 1 \"a\"\n[1] \"s1\"[1]\n\nHca 1 \"b\"\n[1] \"s2\"[1]\n";

fn switch_ports(net: &Subnet, port: u8) -> Vec<(PortState, bool, u64)> {
    net.switches()
        .map(|(_, s)| {
            (
                s.port_state(port).unwrap(),
                s.port_link_up(port).unwrap(),
                s.stats().traps_sent,
            )
        })
        .collect()
}

#[test]
fn a_pulled_cable_goes_down_and_comes_back_to_init() {
    let topo = Topology::parse_net(NET).unwrap();
    let cable = topo
        .links()
        .iter()
        .position(|l| l.a.port == 3 && l.b.port == 3)
        .unwrap();
    let mut net = Subnet::build(SubnetOptions::new(topo, 3)).unwrap();
    assert!(net.run_until_joined(Instant::ZERO + Duration::from_secs(10)));
    assert_eq!(net.cable_up(cable), Some(true));
    let before: Vec<u64> = switch_ports(&net, 3).iter().map(|p| p.2).collect();
    assert!(switch_ports(&net, 3)
        .iter()
        .all(|p| p.0 == PortState::Active && p.1));

    // IBA 1 §14.2.5.1: pulled, both ends Down/Polling, a trap 128 from each switch.
    assert_eq!(net.set_cable(cable, false), Ok(true));
    assert_eq!(net.cable_up(cable), Some(false));
    let down = switch_ports(&net, 3);
    for (i, p) in down.iter().enumerate() {
        assert_eq!((p.0, p.1, p.2), (PortState::Down, false, before[i] + 1));
    }
    assert_eq!(net.set_cable(cable, false), Ok(false), "already pulled");
    // IBA 1 §16.1.3.5 LinkDownedCounter, as the PMA reports it.
    for (_, s) in net.switches() {
        assert_eq!(s.port_traffic(3).unwrap().link_downed, 1);
        assert_eq!(
            s.port_traffic(3).unwrap().counters(3).link_downed_counter,
            1
        );
        assert_eq!(s.port_traffic(5).unwrap().link_downed, 0);
    }

    // IBA 1 §7.2: plugged back, the link trains and waits in Init for the SM; trap 128 again.
    assert_eq!(net.set_cable(cable, true), Ok(true));
    let up = switch_ports(&net, 3);
    for (i, p) in up.iter().enumerate() {
        assert_eq!((p.0, p.1, p.2), (PortState::Init, true, before[i] + 2));
    }
    assert_eq!(net.set_cable(99, true), Err(CableError::NoSuchCable(99)));
}

#[test]
fn a_pulled_host_cable_takes_the_host_port_down() {
    let mut net = Subnet::build(SubnetOptions::new(Topology::parse_net(NET).unwrap(), 3)).unwrap();
    assert!(net.run_until_joined(Instant::ZERO + Duration::from_secs(10)));
    let topo = net.topology().clone();
    let a = topo.find("a").unwrap();
    let cable = topo
        .links()
        .iter()
        .position(|l| l.b.node == a || l.a.node == a)
        .unwrap();
    let host = net.host_of_topo_node(a).unwrap();
    assert_eq!(net.set_cable(cable, false), Ok(true));
    let p = net.host_port(host).unwrap();
    assert_eq!((p.state, p.phys_up), (PortState::Down, false));
    assert_eq!(p.traffic.link_downed, 1);
    // IBA 1 §16.1.3.5: LinkDownedCounter counts a link that goes down, not a down link told
    // again (as the cross-process fabric's sessions can): neither end counts twice.
    let id = net.built().links[cable];
    let now = net.sim().now();
    net.sim_mut().schedule_link_state(id, now, false);
    net.sim_mut().run_until(now);
    assert_eq!(net.host_port(host).unwrap().traffic.link_downed, 1);
    let l = &topo.links()[cable];
    let other = if l.a.node == a { l.b } else { l.a };
    let (_, sw) = net.switches().find(|(i, _)| *i == other.node).unwrap();
    assert_eq!(sw.port_traffic(other.port).unwrap().link_downed, 1);
    assert_eq!(net.set_cable(cable, true), Ok(true));
    let p = net.host_port(host).unwrap();
    assert_eq!((p.state, p.phys_up), (PortState::Init, true));
}
