//! A subnet with no SM of ours ([`SmMode::None`]): every cabled port comes up to Init with no LID
//! and an SM program on a host's QP0 (a umad user, as OpenSM under the ibsim server) configures
//! it by SMPs: a directed route with HopCount 0 reaches the host's own SMA (IBA 1 §14.2.2), a
//! SubnSet(PortInfo) makes the port Active with the LID and SM LID given, and the host's IPoIB
//! link then sends its broadcast join to that SM LID (IBA 1 §14.2.5.6 MasterSMLID; the SA client
//! addresses the SM's port, docs/OPENSM-NOTES.md).

#[path = "common/sma.rs"]
mod fabric;

use fabric::*;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::host::{method_mask, Host, Registration};
use ipoib_fabric::node::subnet::{SmMode, Subnet, SubnetOptions};
use ipoib_fabric::PortState;
use ipoib_proto::mad_agent::MadAddr;
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::{MadHeaderRepr, Method, MgmtClass};
use ipoib_wire::smp::{PortState as WireState, SmpAttribute, SmpMadRepr};
use std::time::Duration;

#[test]
fn an_external_sm_configures_a_subnet_without_ours() {
    let mut o = SubnetOptions::new(Topology::single_switch(2).unwrap(), 4);
    o.sm_mode = SmMode::None;
    let mut net = Subnet::build(o).unwrap();
    assert_eq!(net.sm_mode(), SmMode::None);
    net.sim_mut().run_for(Duration::from_millis(5));
    for i in 0..2 {
        let p = net.host_port(i).unwrap();
        assert_eq!(
            (p.state, p.lid, p.sm_lid),
            (PortState::Init, 0, 0),
            "host {i}"
        );
    }
    assert!(net.is_settled(), "nothing of ours to wait for");

    let h0 = net.host(0);
    let user = net
        .sim_mut()
        .with_node::<Host, _>(h0.node, |h, _, _| {
            let u = h.umad_attach();
            // The SM's SA: MCMemberRecord joins (SubnAdmSet) come to it.
            h.umad_register(
                u,
                Registration {
                    class: MgmtClass::SubnAdm,
                    version: 2,
                    methods: method_mask(&[Method::Set]),
                },
            )
            .unwrap();
            u
        })
        .unwrap();
    let send = |net: &mut Subnet, mad: &[u8]| {
        net.sim_mut()
            .with_node::<Host, _>(h0.node, |h, now, tx| {
                h.umad_send(
                    user,
                    MadAddr {
                        qpn: 0,
                        ..MadAddr::gsi(0xffff)
                    },
                    mad,
                )
                .unwrap();
                h.drive(now, tx);
            })
            .unwrap();
        net.sim_mut().run_for(Duration::from_millis(1));
        net.sim_mut()
            .node_mut::<Host>(h0.node)
            .unwrap()
            .umad_take(user)
    };
    let mut f = Fabric::new(0); // only for its MAD builders
    let hop0 = |f: &mut Fabric, method, id, a| {
        let mut m = f.smp(method, id, 0, Some(&[]), 0, a);
        m[6] = 0; // HopPointer 0, HopCount 0
        m
    };

    // HopCount 0: our own HCA answers, the SMP never leaves the node.
    let got = send(
        &mut net,
        &hop0(&mut f, Method::Get, attr::NODE_INFO, none()),
    );
    assert_eq!(got.len(), 1, "{got:?}");
    let r = SmpMadRepr::parse(&got[0].mad).unwrap();
    let SmpAttribute::NodeInfo(n) = r.attribute else {
        panic!("{:?}", r.attribute)
    };
    assert_eq!(
        n.port_guid,
        net.host_port(0).unwrap().guid,
        "our own port, not the switch"
    );
    assert_eq!(r.direction(), Some(true));

    // One hop: the switch, whose management port 0 is up (Init) too.
    let mut dr = f.smp(Method::Get, attr::PORT_INFO, 0, Some(&[h0.port]), 0, none());
    dr[6] = 0;
    let got = send(&mut net, &dr);
    let pi = port_info(&SmpMadRepr::parse(&got[0].mad).unwrap());
    assert_eq!(pi.port_state, WireState::Init, "switch port 0");

    // SubnSet(PortInfo) to our port: LID 1, SM LID 1 (the SM runs here), Armed then Active.
    let mut pi = port_info(
        &SmpMadRepr::parse(
            &send(
                &mut net,
                &hop0(&mut f, Method::Get, attr::PORT_INFO, none()),
            )[0]
            .mad,
        )
        .unwrap(),
    );
    pi.lid = 1;
    pi.master_sm_lid = 1;
    let mut sa_mads: Vec<ipoib_proto::mad_agent::MadIn> = Vec::new();
    for state in [WireState::Armed, WireState::Active] {
        pi.port_state = state;
        let set = hop0(
            &mut f,
            Method::Set,
            attr::PORT_INFO,
            SmpAttribute::PortInfo(pi),
        );
        let got = send(&mut net, &set);
        let smp = got
            .iter()
            .find(|m| m.mad[1] == u8::from(MgmtClass::SubnDirectedRoute))
            .expect("the SetResp");
        assert_eq!(
            port_info(&SmpMadRepr::parse(&smp.mad).unwrap()).port_state,
            state
        );
        sa_mads.extend(
            got.into_iter()
                .filter(|m| m.mad[1] == u8::from(MgmtClass::SubnAdm)),
        );
    }
    let p = net.host_port(0).unwrap();
    assert_eq!((p.state, p.lid, p.sm_lid), (PortState::Active, 1, 1));

    // The host's IPoIB link saw the port change and sends its broadcast join to the SM LID it
    // was given: here, to our user's SA registration.
    net.sim_mut().run_for(Duration::from_millis(50));
    sa_mads.extend(
        net.sim_mut()
            .node_mut::<Host>(h0.node)
            .unwrap()
            .umad_take(user),
    );
    let join = sa_mads
        .iter()
        .filter_map(|m| MadHeaderRepr::parse_bytes(&m.mad).ok())
        .find(|h| h.mgmt_class == MgmtClass::SubnAdm && h.method == Method::Set);
    assert!(join.is_some(), "a join reached the SM's port: {sa_mads:?}");
}

// IBA 1 §7.2: a switch port with no cable has no link (PortPhysicalState Polling, PortState
// Down), whichever SM runs, so that diags and SMs do not explore it; a cabled one is LinkUp.
#[test]
fn uncabled_ports_have_no_link() {
    use ipoib_wire::smp::PortPhysState;
    for mode in [SmMode::Ours, SmMode::None] {
        // One leaf of 36 ports: hosts on ports 1 and 2, the rest uncabled.
        let mut o = SubnetOptions::new(Topology::fat_tree(2).unwrap(), 4);
        o.sm_mode = mode;
        let mut net = Subnet::build(o).unwrap();
        net.sim_mut().run_for(Duration::from_millis(5));
        let mut dr = DrPortInfo::attach(&mut net);
        let h0_port = net.host(0).port;
        let mut state = |port: u32| {
            let pi = dr.get(&mut net, &[h0_port], port);
            (pi.port_phys_state, pi.port_state)
        };
        assert_eq!(
            state(30),
            (PortPhysState::Polling, WireState::Down),
            "{mode:?}"
        );
        assert_eq!(state(2).0, PortPhysState::LinkUp, "{mode:?}");
    }
}

// IBA 1 §14.2.5.6: a switch port's LinkWidthActive and LinkSpeedActive are its link's, the same
// at both ends of a cable: a net file's links of ibsim's default (4x SDR) and of 4x DDR (`s=3`:
// both ends enable SDR and DDR) read the same from the switch's port as from the CA's, whichever
// SM runs (OpenSM on ibsim and on our fabric then sees the same speeds).
#[test]
fn switch_ports_report_their_cables_rate() {
    let net_file = "Switch\t8 \"sw\"\n[1]\t\"h0\"[1]\n[2]\t\"h1\"[1]\ts=3\n\n\
                    Hca\t1 \"h0\"\n[1]\t\"sw\"[1]\n\n\
                    Hca\t1 \"h1\"\n[1]\t\"sw\"[2]\ts=3\n";
    for mode in [SmMode::Ours, SmMode::None] {
        let mut o = SubnetOptions::new(Topology::parse_net(net_file).unwrap(), 4);
        o.sm_mode = mode;
        let mut net = Subnet::build(o).unwrap();
        net.sim_mut().run_for(Duration::from_millis(5));
        let h0 = net.host(0);
        let mut dr = DrPortInfo::attach(&mut net);
        // PortInfo of `port` of the node at the end of `path` from h0.
        let mut get = |path: &[u8], port: u32| {
            let pi = dr.get(&mut net, path, port);
            (pi.link_width_active, pi.link_speed_active)
        };
        // 4x is width 2; SDR speed 1, DDR speed 2.
        assert_eq!(get(&[], 1), (2, 1), "h0's port, {mode:?}");
        assert_eq!(get(&[h0.port], 1), (2, 1), "the switch's end, {mode:?}");
        assert_eq!(get(&[h0.port, 2], 1), (2, 2), "h1's port, {mode:?}");
        assert_eq!(get(&[h0.port], 2), (2, 2), "the switch's end, {mode:?}");
    }
}

// IBA 1 §14.2.5.6: a cable's MTU (a topology link's) is the MTUCap of both its ends, whichever SM
// runs; our SM sets NeighborMTU on that link to it (the smaller MTUCap of the two ends, as
// OpenSM `osm_physp_calc_link_mtu`), the others' to this fabric's largest, 4096.
#[test]
fn ports_report_their_cables_mtu() {
    use ipoib_fabric::hw::topology::{End, NodeKind};
    use ipoib_wire::{Guid, Mtu};
    let mut t = Topology::new();
    let sw = t.add_node(NodeKind::Switch, "sw", Guid(0x200), 4);
    for i in 0..2 {
        let h = t.add_node(NodeKind::Ca, format!("h{i}"), Guid(0x100 + 2 * i as u64), 1);
        let mtu = (i == 1).then_some(Mtu::Mtu2048);
        let (a, b) = (
            End { node: h, port: 1 },
            End {
                node: sw,
                port: 1 + i as u8,
            },
        );
        t.connect(a, b, mtu, None).unwrap();
    }
    for mode in [SmMode::Ours, SmMode::None] {
        let mut o = SubnetOptions::new(t.clone(), 4);
        o.sm_mode = mode;
        let mut net = Subnet::build(o).unwrap();
        net.sim_mut().run_for(Duration::from_millis(100));
        let h0 = net.host(0);
        let mut dr = DrPortInfo::attach(&mut net);
        let mut get = |path: &[u8], port: u32| {
            let pi = dr.get(&mut net, path, port);
            (pi.mtu_cap, pi.neighbor_mtu)
        };
        let (cap_h0, _) = get(&[], 1);
        let (cap_sw1, _) = get(&[h0.port], 1);
        let (cap_sw2, nb_sw2) = get(&[h0.port], 2);
        let (cap_h1, nb_h1) = get(&[h0.port, 2], 1);
        assert_eq!((cap_h0, cap_sw1), (Mtu::Mtu4096, Mtu::Mtu4096), "{mode:?}");
        assert_eq!((cap_sw2, cap_h1), (Mtu::Mtu2048, Mtu::Mtu2048), "{mode:?}");
        if mode == SmMode::Ours {
            assert_eq!(
                (nb_sw2, nb_h1),
                (Mtu::Mtu2048, Mtu::Mtu2048),
                "our SM's NeighborMTU"
            );
            assert_eq!(net.host_port(1).unwrap().mtu, Mtu::Mtu2048);
            assert_eq!(net.host_port(0).unwrap().mtu, Mtu::Mtu4096);
        }
    }
}

/// SubnGet(PortInfo) by directed route from host 0, through a umad agent attached to it (as a
/// diagnostic tool on the host sends them).
struct DrPortInfo {
    user: ipoib_fabric::node::host::AgentId,
    f: Fabric,
}

impl DrPortInfo {
    fn attach(net: &mut Subnet) -> DrPortInfo {
        let h0 = net.host(0);
        let user = net
            .sim_mut()
            .with_node::<Host, _>(h0.node, |h, _, _| h.umad_attach())
            .unwrap();
        DrPortInfo {
            user,
            f: Fabric::new(0),
        }
    }

    /// PortInfo of `port` of the node at the end of `path` from host 0 (HopPointer 0).
    fn get(&mut self, net: &mut Subnet, path: &[u8], port: u32) -> ipoib_wire::smp::PortInfoRepr {
        let dr = self
            .f
            .smp(Method::Get, attr::PORT_INFO, port, Some(path), 0, none());
        let got = umad_dr(net, 0, self.user, dr);
        port_info(&SmpMadRepr::parse(&got[0].mad).unwrap())
    }
}
