//! The management agents beyond single attributes (IBA 1 chapter 14, §16.1): the PMA's counters
//! against the simulator's link counts, random SMPs to every device, an SM posting on an HCA's
//! QP0, and a built subnet's SMInfo and node descriptions.

#[path = "common/sma.rs"]
mod fabric;

use fabric::*;
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::Method;
use ipoib_wire::smp::{SmState, SmpAttribute, SmpMadRepr, SmpRoute};
use ipoib_wire::Guid;

use ipoib_fabric::hw::sim::NodeId;
use ipoib_fabric::node::host::{method_mask, AgentId, Host, Registration};
use ipoib_proto::mad_agent::{MadAddr, MadIn};
use ipoib_wire::mad::{MadStatus, MgmtClass};
use std::time::Duration;

/// Packets and 4-byte words (LRH through ICRC) the link carried from `from`.
fn link_sent(f: &Fabric, from: PortRef) -> (u64, u64) {
    let l = f.sim.link(f.sim.link_of(from).unwrap());
    let side = usize::from(l.ends[1] == from);
    let s = l.dirs[side].stats;
    (s.sent, (s.bytes - 2 * s.sent) / 4)
}

// IBA 1 §16.1.3.5, §16.1.4.11: the PMA's counters are the traffic the link carried: the CA's
// PortCountersExtended and the switch's PortCounters equal the simulator's link counts.
#[test]
fn perf_counters_equal_the_fabric_counts() {
    let mut f = Fabric::new(9);
    assign_lids(&mut f);
    for _ in 0..5 {
        f.lid(Method::Get, attr::NODE_INFO, 0, CA_LID, 0, none())
            .unwrap();
    }
    let resp = f
        .perf_get(perf_attr::PORT_COUNTERS_EXTENDED, 1, CA_LID)
        .expect("PMA answer");
    let ext = PortCountersExtRepr::parse(&resp[PERF_DATA_OFFSET..]).unwrap();
    let ca = PortRef {
        node: f.ca,
        port: 1,
    };
    let s2 = PortRef {
        node: f.s2,
        port: 7,
    };
    let (ca_pkts, ca_words) = link_sent(&f, ca);
    let (s2_pkts, s2_words) = link_sent(&f, s2);
    // The answer itself left after the counters were read: one packet of 256 + 36 bytes.
    assert_eq!(ext.port_xmit_pkts, ca_pkts - 1);
    assert_eq!(ext.port_xmit_data, ca_words - (256 + 36 - 2) / 4);
    assert_eq!((ext.port_rcv_pkts, ext.port_rcv_data), (s2_pkts, s2_words));
    assert_eq!(ext.port_unicast_rcv_pkts, s2_pkts);
    // Three SubnGet/SubnSet pairs, five SubnGets and this Get.
    assert_eq!(ext.port_rcv_pkts, 12);
    let pc = f.port_counters(7, S2_LID);
    let (ca_pkts, ca_words) = link_sent(&f, ca);
    let (s2_pkts, s2_words) = link_sent(&f, s2);
    assert_eq!(
        (u64::from(pc.port_xmit_pkts), u64::from(pc.port_xmit_data)),
        (s2_pkts, s2_words)
    );
    assert_eq!(
        (u64::from(pc.port_rcv_pkts), u64::from(pc.port_rcv_data)),
        (ca_pkts, ca_words)
    );
    assert_eq!(f.switch(f.s2).port_traffic(7).unwrap().xmit_pkts, s2_pkts);
    // An attribute the PMA does not have: status 0x000C.
    let resp = f.perf_get(0x0010, 1, CA_LID).unwrap();
    assert_eq!(&resp[4..6], &[0x00, 0x0c]);
    // IBA 1 §16.1.2: ClassPortInfo (what perfquery reads first) says PortCountersExtended is
    // supported.
    let resp = f.perf_get(perf_attr::CLASS_PORT_INFO, 1, CA_LID).unwrap();
    assert_eq!(&resp[4..6], &[0x00, 0x00]);
    let cpi = ipoib_wire::mad::ClassPortInfoRepr::parse(&resp[PERF_DATA_OFFSET..]).unwrap();
    assert_eq!(
        (cpi.class_version, cpi.capability_mask),
        (1, sma::pma::PMA_CAP_EXT_WIDTH)
    );
}

use ipoib_fabric::hw::hca::Hca;
use ipoib_fabric::hw::sim::{Device, PortRef, Tx};
use ipoib_fabric::hw::sma;
use ipoib_fabric::hw::switch::Switch;
use ipoib_proto::time::Instant;
use ipoib_wire::mad::attr::perf as perf_attr;
use ipoib_wire::perf::{PortCountersExtRepr, PERF_DATA_OFFSET};
use proptest::prelude::*;

proptest! {
    // No SMP, however wrong its hop fields, paths, method, attribute or data, panics an SMA
    // (a switch or a CA), and each answers with at most one packet.
    #[test]
    fn random_smps_never_panic(
        mad in proptest::collection::vec(any::<u8>(), 256),
        dr: bool, class_version in 0u8..3, method in prop_oneof![Just(1u8), Just(2), Just(7), any::<u8>()],
        attribute in prop_oneof![0x10u16..0x21, any::<u16>()],
        hops in (any::<u8>(), 0u8..70), port in 0u8..10, lids in (any::<u16>(), any::<u16>()),
        perf: bool,
    ) {
        let mut mad = mad;
        mad[0] = 1;
        mad[1] = if perf { 0x04 } else if dr { 0x81 } else { 0x01 };
        mad[2] = class_version;
        mad[3] = method;
        mad[16..18].copy_from_slice(&attribute.to_be_bytes());
        (mad[6], mad[7]) = hops;
        let packet = if perf {
            sma::gmp_packet(lids.0, lids.1, 0, ipoib_wire::PKey::DEFAULT, 1, &mad)
        } else {
            sma::smp_packet(lids.0, lids.1, 0, &mad)
        };
        let mut sw = Switch::new(ipoib_wire::Guid(1), 8, "s");
        let mut hca = Hca::new(ipoib_wire::Guid(2), 2);
        let mut tx = Tx::default();
        hca.link_state(Instant::ZERO, 1, true, &mut tx);
        for dev in [&mut sw as &mut dyn Device, &mut hca] {
            let mut tx = Tx::default();
            dev.receive(Instant::ZERO, port, packet.clone(), &mut tx);
            dev.receive(Instant::ZERO, port, packet[..packet.len() / 2].to_vec(), &mut tx);
            prop_assert!(tx.drain().count() <= 1);
        }
    }
}

// IBA 1 §14.2.5.13, §14.4, §14.2.5.2: in a built subnet the SM's port answers SMInfo
// (Discovering before it ran, the master once the subnet is up) and every HCA's SMA its node
// description from the topology.
#[test]
fn built_subnet_names_the_sm_and_the_nodes() {
    use ipoib_fabric::hw::topology::Topology;
    use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
    let topo = Topology::parse_net(ipoib_fabric::testing::nets::NET).unwrap();
    let mut net = Subnet::build(SubnetOptions::new(topo, 1)).unwrap();
    let state = |net: &Subnet| {
        let p = net.host_device(0).hca().port(1).unwrap();
        let info = p.sm_info.expect("the SM runs on host 0's port");
        (info.guid == p.guid, info.sm_state)
    };
    assert_eq!(state(&net), (true, SmState::Discovering));
    assert!(net.run_until_joined(ipoib_fabric::testing::at(2)));
    assert_eq!(state(&net), (true, SmState::Master));
    assert!(net.host_device(1).hca().port(1).unwrap().sm_info.is_none());
    let h = net.host(1).topo_node;
    assert_eq!(
        net.host_device(1).hca().node_description(),
        net.topology().nodes()[h].desc
    );
}

// IBA 1 §14.2.2.2 C14-9:1, §14.2.2.3 C14-13: an SM on an HCA's QP0 posts a directed-route
// SubnGet with HopPointer 0; its port moves the pointer to 1 and sends it out of
// InitialPath[1]; the CA's answer comes back through the switch to the SM's QP0.
#[test]
fn an_sm_on_qp0_reads_by_directed_route() {
    use ipoib_fabric::hw::hca::special_qpn;
    use ipoib_fabric::hw::link::LinkParams;
    use ipoib_fabric::hw::sim::Simulator;
    use ipoib_fabric::hw::verbs::{AddressHandle, RecvWr, SendWr, UdDest, WcOpcode, WcStatus};
    use ipoib_wire::QKey;
    let mut sim = Simulator::new(11);
    let sm = sim.add_node(Box::new(Hca::new(Guid(0x10), 2)), 2);
    let sw = sim.add_node(Box::new(Switch::new(Guid(S1_GUID), 8, "S1")), 8);
    let ca = sim.add_node(Box::new(Hca::new(Guid(CA_GUID), 1)), 1);
    let p = |node, port| PortRef { node, port };
    let l1 = sim.connect(p(sm, 2), p(sw, 3), LinkParams::default());
    let l2 = sim.connect(p(sw, 5), p(ca, 1), LinkParams::default());
    for l in [l1, l2] {
        sim.schedule_link_state(l, Instant::ZERO, true);
    }
    sim.run_until_idle(100);
    let mut f = Fabric::new(0); // only for its SMP builder
    let mut mad = f.smp(Method::Get, attr::NODE_INFO, 0, Some(&[2, 5]), 0, none());
    mad[6] = 0; // HopPointer 0: the sending port moves it
    let qp0 = special_qpn(2, 0);
    let send = |h: &mut Hca, path_port: u8, wr_id: u64| {
        let mut m = mad;
        m[129] = path_port;
        let mut wr = SendWr::send(wr_id, m.to_vec());
        wr.ud = Some(UdDest {
            ah: AddressHandle {
                dlid: 0xffff,
                sl: 0,
                src_path_bits: 0,
                grh: None,
                port: 2,
            },
            remote_qpn: 0,
            remote_qkey: QKey(0),
            pkey_index: None,
        });
        h.post_send(qp0, wr).unwrap();
    };
    sim.with_node::<Hca, _>(sm, |h, _, _| {
        h.post_recv(
            qp0,
            RecvWr {
                wr_id: 7,
                capacity: 512,
            },
        )
        .unwrap();
        send(h, 2, 1);
        send(h, 1, 2); // InitialPath[1] names another port: not sent
    });
    sim.run_until_idle(1000);
    let h = sim.node_mut::<Hca>(sm).unwrap();
    let cq = h.special_cq(2).unwrap();
    let done = h.poll_cq(cq, 10);
    let bad = done
        .iter()
        .find(|c| c.wr_id == 2)
        .expect("a completion for the bad path");
    assert_eq!(bad.status, WcStatus::LocQpOpErr);
    let got = done
        .iter()
        .find(|c| c.opcode == WcOpcode::Recv)
        .expect("the answer reached QP0");
    let r = SmpMadRepr::parse(&got.data[got.data.len() - 256..]).unwrap();
    assert_eq!(
        (r.header.method, r.direction()),
        (Method::GetResp, Some(true))
    );
    let SmpAttribute::NodeInfo(n) = r.attribute else {
        panic!("{:?}", r.attribute)
    };
    assert_eq!((n.node_guid, n.local_port_num), (Guid(CA_GUID), 1));
    let SmpRoute::Directed(d) = r.route else {
        panic!()
    };
    assert_eq!(&d.return_path[1..3], &[3, 1]);
    assert_eq!(sim.node::<Hca>(ca).unwrap().counters().smp_answered, 1);
}

// IBA 1 §13.5.1, §14.2.2, §16.1: what infiniband-diags do through umad (smpquery by LID and by
// directed route, perfquery) works on a built subnet: a umad user's SMPs leave from QP0, the
// SMAs answer, and so does the PMA on QP1.
#[test]
fn a_umad_user_queries_the_agents_of_a_built_subnet() {
    use ipoib_fabric::hw::topology::Topology;
    use ipoib_fabric::node::host::Host;
    use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
    use ipoib_proto::mad_agent::MadAddr;
    use ipoib_wire::mad::attr::perf as perf_attr;
    use ipoib_wire::mad::MadStatus;
    use std::time::Duration;
    let topo = Topology::parse_net(ipoib_fabric::testing::nets::NET).unwrap();
    let mut net = Subnet::build(SubnetOptions::new(topo, 3)).unwrap();
    net.sim_mut().run_for(Duration::from_millis(5));
    let (h0, h1) = (net.host(0).node, net.host(1));
    let target = net.host_device(1).hca().port(h1.port).unwrap().clone();
    assert_ne!(target.lid, 0, "the SM gave host 1 a LID");
    let user = net
        .sim_mut()
        .with_node::<Host, _>(h0, |h, _, _| h.umad_attach())
        .unwrap();
    let ask = |net: &mut Subnet, to: MadAddr, mad: &[u8]| {
        net.sim_mut()
            .with_node::<Host, _>(h0, |h, now, tx| {
                h.umad_send(user, to, mad).unwrap();
                h.drive(now, tx);
            })
            .unwrap();
        net.sim_mut().run_for(Duration::from_millis(1));
        let mut got = net.sim_mut().node_mut::<Host>(h0).unwrap().umad_take(user);
        assert_eq!(got.len(), 1);
        got.remove(0).mad
    };
    let mut f = Fabric::new(0); // only for its MAD builders
    let qp0 = |lid| MadAddr {
        qpn: 0,
        ..MadAddr::gsi(lid)
    };
    // smpquery nodeinfo <lid>
    let by_lid = f.smp(Method::Get, attr::NODE_INFO, 0, None, 0, none());
    let r = SmpMadRepr::parse(&ask(&mut net, qp0(target.lid), &by_lid)).unwrap();
    let SmpAttribute::NodeInfo(n) = r.attribute else {
        panic!("{:?}", r.attribute)
    };
    assert_eq!(n.port_guid, target.guid);
    // smpquery -D nodeinfo 0,1,<switch port>: out of host 0's port, then Switch1's port 2
    // (NET cables Hca2 to Switch1 port 2).
    let mut dr = f.smp(
        Method::Get,
        attr::NODE_INFO,
        0,
        Some(&[net.host(0).port, 2]),
        0,
        none(),
    );
    dr[6] = 0; // as a umad user sends it: the port moves the HopPointer
    let r = SmpMadRepr::parse(&ask(&mut net, qp0(0xffff), &dr)).unwrap();
    let SmpAttribute::NodeInfo(n) = r.attribute else {
        panic!("{:?}", r.attribute)
    };
    assert_eq!((n.port_guid, r.direction()), (target.guid, Some(true)));
    // perfquery <lid> <port>
    let f2 = f.perf_mad(perf_attr::PORT_COUNTERS, h1.port);
    let resp = ask(&mut net, MadAddr::gsi(target.lid), &f2);
    assert_eq!(&resp[4..6], &MadStatus::SUCCESS.0.to_be_bytes());
    let pc = ipoib_wire::perf::PortCountersRepr::parse(&resp[64..]).unwrap();
    assert!(pc.port_rcv_pkts >= 2, "at least the two SMPs above");
}

// `perfquery` without arguments asks its own port's PMA by the port's LID, `smpquery nodeinfo`
// with the port's own LID its SMA. The request to a LID of the sending port is looped back in
// the HCA, and so is the answer: neither leaves by the link (the port's PortXmitPkts do not
// change), where the switch would have to send the answer back out of the port it came in by,
// which a switch does not do (IBA 1 §16.1.3.5 PortRcvSwitchRelayErrors: looping, the output
// port the input port, is a relay error).
#[test]
fn a_port_asking_its_own_lid_is_answered_without_the_switch() {
    use ipoib_fabric::hw::topology::Topology;
    use ipoib_fabric::node::host::Host;
    use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
    use ipoib_proto::mad_agent::MadAddr;
    use ipoib_wire::mad::attr::perf as perf_attr;
    use ipoib_wire::perf::{PortCountersRepr, PERF_DATA_OFFSET};
    let topo = Topology::parse_net(ipoib_fabric::testing::nets::NET).unwrap();
    let mut net = Subnet::build(SubnetOptions::new(topo, 3)).unwrap();
    net.sim_mut().run_for(Duration::from_millis(5));
    let h0 = net.host(0);
    let me = net.host_device(0).hca().port(h0.port).unwrap().clone();
    assert_ne!(me.lid, 0, "the SM gave host 0 a LID");
    let user = net
        .sim_mut()
        .with_node::<Host, _>(h0.node, |h, _, _| h.umad_attach())
        .unwrap();
    let ask = |net: &mut Subnet, to: MadAddr, mad: &[u8]| {
        net.sim_mut()
            .with_node::<Host, _>(h0.node, |h, now, tx| {
                h.umad_send(user, to, mad).unwrap();
                h.drive(now, tx);
            })
            .unwrap();
        net.sim_mut().run_for(Duration::from_millis(1));
        let got = net
            .sim_mut()
            .node_mut::<Host>(h0.node)
            .unwrap()
            .umad_take(user);
        assert_eq!(got.len(), 1, "one answer");
        got[0].mad.clone()
    };
    let sent = |net: &Subnet| {
        net.host_device(0)
            .hca()
            .port(h0.port)
            .unwrap()
            .traffic
            .xmit_pkts
    };
    let before = sent(&net);
    let mut f = Fabric::new(0); // only for its MAD builders
    let get = f.perf_mad(perf_attr::PORT_COUNTERS, h0.port);
    let resp = ask(&mut net, MadAddr::gsi(me.lid), &get);
    let pc = PortCountersRepr::parse(&resp[PERF_DATA_OFFSET..]).unwrap();
    assert_eq!(pc.port_select, h0.port);
    let smp = f.smp(Method::Get, attr::NODE_INFO, 0, None, 0, none());
    let to = MadAddr {
        qpn: 0,
        ..MadAddr::gsi(me.lid)
    };
    let r = SmpMadRepr::parse(&ask(&mut net, to, &smp)).unwrap();
    let SmpAttribute::NodeInfo(n) = r.attribute else {
        panic!("{:?}", r.attribute)
    };
    assert_eq!(n.port_guid, me.guid);
    assert_eq!(sent(&net), before, "nothing left the port");
}

/// Host 0 asking host 1's port over umad, an agent attached on each: the requester (`sminfo`)
/// and an SM program (`ibsim-run opensm`), as in IBA 1 §13.4.
struct SmOnHost1 {
    net: ipoib_fabric::node::subnet::Subnet,
    h0: NodeId,
    h1: ipoib_fabric::node::subnet::HostHandle,
    asker: ipoib_fabric::node::host::AgentId,
    sm: ipoib_fabric::node::host::AgentId,
}

impl SmOnHost1 {
    fn new() -> Self {
        use ipoib_fabric::hw::topology::Topology;
        use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
        let topo = Topology::parse_net(ipoib_fabric::testing::nets::NET).unwrap();
        let mut net = Subnet::build(SubnetOptions::new(topo, 3)).unwrap();
        net.sim_mut().run_for(Duration::from_millis(5));
        let (h0, h1) = (net.host(0).node, net.host(1));
        let attach = |net: &mut Subnet, node| {
            net.sim_mut()
                .with_node::<Host, _>(node, |h, _, _| h.umad_attach())
                .unwrap()
        };
        let asker = attach(&mut net, h0);
        let sm = attach(&mut net, h1.node);
        SmOnHost1 {
            net,
            h0,
            h1,
            asker,
            sm,
        }
    }

    /// `agent` on `node` sends `mad` to `to`, then 1 ms passes.
    fn send(&mut self, node: NodeId, agent: AgentId, to: MadAddr, mad: &[u8]) {
        self.net
            .sim_mut()
            .with_node::<Host, _>(node, |h, now, tx| {
                h.umad_send(agent, to, mad).unwrap();
                h.drive(now, tx);
            })
            .unwrap();
        self.net.sim_mut().run_for(Duration::from_millis(1));
    }

    /// Host 0's requester sends `mad` to `to`.
    fn ask(&mut self, to: MadAddr, mad: &[u8]) {
        self.send(self.h0, self.asker, to, mad);
    }

    /// Host 1's SM program sends `mad` to `to`.
    fn answer(&mut self, to: MadAddr, mad: &[u8]) {
        self.send(self.h1.node, self.sm, to, mad);
    }

    fn take(&mut self, node: NodeId, agent: AgentId) -> Vec<MadIn> {
        self.net
            .sim_mut()
            .node_mut::<Host>(node)
            .unwrap()
            .umad_take(agent)
    }

    /// What host 0's requester received.
    fn asker_got(&mut self) -> Vec<MadIn> {
        self.take(self.h0, self.asker)
    }

    /// What host 1's SM program received.
    fn sm_got(&mut self) -> Vec<MadIn> {
        self.take(self.h1.node, self.sm)
    }

    /// Host 0 asks `to` for an SMInfo with `get`, an SM program on host 1's port: the SMA keeps
    /// out, and the SM program receives the one request.
    fn sm_receives(&mut self, to: MadAddr, get: &[u8]) -> (MadIn, SmpMadRepr) {
        self.ask(to, get);
        assert!(self.asker_got().is_empty(), "the SMA kept out");
        let mut asked = self.sm_got();
        assert_eq!(asked.len(), 1);
        let req = SmpMadRepr::parse(&asked[0].mad).unwrap();
        assert_eq!(req.header.attribute_id, attr::SM_INFO);
        (asked.remove(0), req)
    }

    /// An SM program starts on host 1's port: the port's IsSM and a registration for `class`.
    fn start_sm(&mut self, class: MgmtClass, methods: &[Method]) {
        let port = self.h1.port;
        let sm = self.sm;
        self.net
            .sim_mut()
            .with_node::<Host, _>(self.h1.node, |h, _, _| {
                h.hca_mut().set_sm_client(port, true);
                let reg = Registration {
                    class,
                    version: 1,
                    methods: method_mask(methods),
                };
                h.umad_register(sm, reg).unwrap();
            })
            .unwrap();
    }
}

/// The SMInfo the SM program answers with.
fn sm_info() -> ipoib_wire::smp::SmInfoRepr {
    ipoib_wire::smp::SmInfoRepr {
        guid: Guid(0x1234),
        sm_key: 0,
        act_count: 7,
        priority: 3,
        sm_state: SmState::Master,
    }
}

// IBA 1 §14.2.5.13: SMInfo is answered by the SM, not the SMA. On a port with no SM the SMA
// answers a SubnGet(SMInfo) 0x000C; once an SM program runs on the port through QP0 (as
// `ibsim-run opensm` does, registered for SubnGet), a LID-routed SMInfo reaches it, and its
// GetResp reaches the requester (what `sminfo LID` does).
#[test]
fn a_lid_routed_sminfo_goes_to_the_sm_program_on_the_port() {
    let mut s = SmOnHost1::new();
    let lid1 = s.net.host_device(1).hca().port(s.h1.port).unwrap().lid;
    let mut f = Fabric::new(0);
    let get = f.smp(Method::Get, attr::SM_INFO, 0, None, 0, none());
    let to = MadAddr {
        qpn: 0,
        ..MadAddr::gsi(lid1)
    };
    // No SM on h1's port: the SMA answers 0x000C.
    s.ask(to, &get);
    let got = s.asker_got();
    assert_eq!(got.len(), 1);
    let r = SmpMadRepr::parse(&got[0].mad).unwrap();
    assert_eq!(r.header.status, MadStatus::METHOD_ATTR_UNSUPPORTED);

    // An SM program on h1's port: the request is its to answer.
    s.start_sm(
        MgmtClass::SubnLid,
        &[Method::Get, Method::Set, Method::Trap],
    );
    let (asked, req) = s.sm_receives(to, &get);
    let info = sm_info();
    let resp = req
        .get_response(MadStatus::SUCCESS, SmpAttribute::SmInfo(info))
        .to_bytes();
    let back = MadAddr {
        qpn: 0,
        ..MadAddr::gsi(asked.from.lid)
    };
    s.answer(back, &resp);
    let got = s.asker_got();
    assert_eq!(got.len(), 1);
    let r = SmpMadRepr::parse(&got[0].mad).unwrap();
    assert_eq!(r.attribute, SmpAttribute::SmInfo(info));
}

// IBA 1 §14.2.2.2, §14.2.5.13: a directed-route SubnGet(SMInfo) at the end of its path is for the
// SM on that port, not the SMA: with an SM program on QP0 it gets the SMP as the SMI left it
// (ReturnPath[n] the port it came in by, HopPointer n + 1), and its GetResp goes back along the
// return path to the requester (what `sminfo -D` does against OpenSM under ibsim).
#[test]
fn a_directed_route_sminfo_goes_to_the_sm_program_on_the_port() {
    let mut s = SmOnHost1::new();
    let mut f = Fabric::new(0);
    // Out of host 0's port, then Switch1's port 2 to Hca2 (host 1).
    let mut get = f.smp(
        Method::Get,
        attr::SM_INFO,
        0,
        Some(&[s.net.host(0).port, 2]),
        0,
        none(),
    );
    get[6] = 0; // as a umad user sends it: the port moves the HopPointer
    let to = MadAddr {
        qpn: 0,
        ..MadAddr::gsi(0xffff)
    };
    // No SM on host 1's port: the SMA answers 0x000C.
    s.ask(to, &get);
    let got = s.asker_got();
    assert_eq!(got.len(), 1);
    let r = SmpMadRepr::parse(&got[0].mad).unwrap();
    // Bit 15 of a directed-route SMP's status is D (IBA 1 §14.2.1.2).
    let status = MadStatus(r.header.status.0 & 0x7fff);
    assert_eq!(status, MadStatus::METHOD_ATTR_UNSUPPORTED);

    // An SM program on host 1's port, registered for directed-route SubnGet: it gets the SMP.
    s.start_sm(MgmtClass::SubnDirectedRoute, &[Method::Get, Method::Set]);
    let (asked, req) = s.sm_receives(to, &get);
    let SmpRoute::Directed(d) = req.route else {
        panic!("{:?}", req.route)
    };
    assert_eq!(
        (asked.mad[6], asked.mad[7]),
        (3, 2),
        "HopPointer n + 1, HopCount n"
    );
    assert_eq!(
        d.return_path[2], s.h1.port,
        "ReturnPath[n]: the port it came in by"
    );
    let info = sm_info();
    let resp = req
        .get_response(MadStatus::SUCCESS, SmpAttribute::SmInfo(info))
        .to_bytes();
    s.answer(to, &resp);
    let got = s.asker_got();
    assert_eq!(got.len(), 1, "the answer came back along the return path");
    let r = SmpMadRepr::parse(&got[0].mad).unwrap();
    assert_eq!(
        (r.attribute, r.direction()),
        (SmpAttribute::SmInfo(info), Some(true))
    );
}

// IBA 1 §7.2: a PMA answer is a data packet (QP1, not VL15), which only an Active port sends;
// from an Armed port it is discarded and counted in that port's PortXmitDiscards
// (IBA 1 §16.1.3.5). S1's LFT sends its answer to the probe out of port 5 (toward S2), Armed:
// discarded; once the port is Active, sent. (The request comes in by port 3, Active: an Armed
// port that receives a data packet goes Active itself, `sma::an_armed_port_goes_active_on_a_data_packet`.)
// The SubnSet answers (VL15) leave port 5 in Init and Armed.
#[test]
fn pma_answers_leave_only_active_ports() {
    use ipoib_fabric::hw::switch::SwitchDropReason;
    use ipoib_wire::smp::PortState;
    let mut f = Fabric::new(10);
    assign_lids(&mut f);
    let r = f.dr(
        Method::Get,
        attr::LINEAR_FORWARDING_TABLE,
        0,
        TO_S1,
        0,
        none(),
    );
    let SmpAttribute::LinearForwardingTable(mut b) = r.unwrap().attribute else {
        panic!("an LFT block")
    };
    b.ports[usize::from(PROBE_LID)] = 5;
    let set = SmpAttribute::LinearForwardingTable(b);
    let r = f.dr(Method::Set, attr::LINEAR_FORWARDING_TABLE, 0, TO_S1, 0, set);
    assert_eq!(r.unwrap().status(), MadStatus::SUCCESS);
    for state in [PortState::Down, PortState::Armed] {
        let r = set_port_info(&mut f, TO_S1, 5, |p| p.port_state = state);
        assert_eq!(r.status(), MadStatus::SUCCESS, "{state:?}");
    }
    let sent = |f: &Fabric| f.switch(f.s1).port_traffic(5).unwrap().xmit_pkts;
    let before = sent(&f);
    assert!(f.perf_get(perf_attr::PORT_COUNTERS, 1, S1_LID).is_none());
    let s1 = f.switch(f.s1);
    assert_eq!(s1.port_traffic(5).unwrap().xmit_discards, 1);
    assert_eq!(s1.stats().dropped(SwitchDropReason::PortNotActive), 1);
    assert_eq!(sent(&f), before);
    let r = set_port_info(&mut f, TO_S1, 5, |p| p.port_state = PortState::Active);
    assert_eq!(r.status(), MadStatus::SUCCESS);
    let before = sent(&f);
    f.perf_get(perf_attr::PORT_COUNTERS, 1, S1_LID);
    assert_eq!(sent(&f), before + 1, "the answer left port 5");
    assert_eq!(f.switch(f.s1).port_traffic(5).unwrap().xmit_discards, 1);
}

// IBA 1 §16.1.3.5 PortRcvErrors: packets received with local physical errors (the VCRC, and
// the ICRC at the end port) or malformed count on the port that received them. A link that
// flips a bit of every packet (`Fault::Corrupt`) makes S2's port 2 and the CA's port 1 discard
// what they receive, each counting every corrupted packet; a packet whose VCRC is good but whose
// ICRC is not counts at the CA port and at the switch's port 0 (its management port, the end
// port of a PMA request to the switch). Read through the PMA, as `perfquery` reads them.
#[test]
fn corrupted_packets_count_in_port_rcv_errors() {
    use ipoib_fabric::hw::hca::HcaDropReason;
    use ipoib_fabric::hw::link::Fault;
    use ipoib_fabric::hw::switch::SwitchDropReason;
    let mut f = Fabric::new(11);
    assign_lids(&mut f);
    let s1_out = PortRef {
        node: f.s1,
        port: 5,
    };
    let s2_out = PortRef {
        node: f.s2,
        port: 7,
    };
    for (from, lid) in [(s1_out, S2_LID), (s2_out, CA_LID)] {
        let link = f.sim.link_of(from).unwrap();
        f.sim
            .set_faults(link, Some(from), vec![Fault::Corrupt(1.0)]);
        for _ in 0..3 {
            assert!(f.perf_get(perf_attr::PORT_COUNTERS, 1, lid).is_none());
        }
        f.sim.set_faults(link, Some(from), Vec::new());
        let side = usize::from(f.sim.link(link).ends[1] == from);
        assert_eq!(f.sim.link(link).dirs[side].stats.corrupted, 3);
    }
    let s = f.switch(f.s2).stats();
    let dropped = s.dropped(SwitchDropReason::VcrcBad) + s.dropped(SwitchDropReason::Malformed);
    assert_eq!(dropped, 3);
    assert_eq!(f.port_counters(2, S2_LID).port_rcv_errors, 3);
    assert_eq!(f.port_counters(7, S2_LID).port_rcv_errors, 0);
    let c = f.hca().counters();
    let dropped = c.drops(HcaDropReason::BadVcrc)
        + c.drops(HcaDropReason::BadIcrc)
        + c.drops(HcaDropReason::Malformed);
    assert_eq!(dropped, 3);
    assert_eq!(f.port_counters(1, CA_LID).port_rcv_errors, 3);

    // A bad ICRC under a good VCRC: only the end port sees it.
    for lid in [CA_LID, S2_LID] {
        let mad = f.perf_mad(perf_attr::PORT_COUNTERS, 1);
        let mut packet = sma::gmp_packet(PROBE_LID, lid, 0, ipoib_wire::PKey::DEFAULT, 1, &mad);
        let body = packet.len() - 2;
        packet[body - 10] ^= 1;
        let vcrc = ipoib_wire::crc::vcrc(&packet[..body]);
        packet[body..].copy_from_slice(&vcrc.to_le_bytes());
        assert!(f.exchange(packet).is_empty());
    }
    assert_eq!(f.hca().counters().drops(HcaDropReason::BadIcrc), 1);
    assert_eq!(f.port_counters(1, CA_LID).port_rcv_errors, 4);
    assert_eq!(
        f.switch(f.s2)
            .stats()
            .dropped(SwitchDropReason::SmpDiscarded),
        1
    );
    assert_eq!(f.port_counters(0, S2_LID).port_rcv_errors, 1);
    assert_eq!(f.port_counters(2, S2_LID).port_rcv_errors, 3);
}

// IBA 1 §7.2's rule (data packets only through Active ports) is a link layer's, and base switch
// port 0 (SwitchInfo:EnhancedPort0 0) has no link: a data packet for the switch (a PMA GMP on
// QP1) is gated by the external port it enters by (Armed or Active) and the one its answer
// leaves by (Active), never by port 0's PortState. OpenSM leaves port 0 in Init
// (docs/OPENSM-NOTES.md), and the switch's PMA still answers, as a real switch's does.
#[test]
fn a_base_switch_port_0_in_init_does_not_gate_its_pma() {
    use ipoib_wire::smp::PortState as WireState;
    let mut f = Fabric::new(12);
    assign_lids(&mut f);
    // Port 0 comes up with the switch, in Init, as a built subnet's do; the trap 128 this sends
    // the probe is not what the test reads.
    f.sim
        .with_node::<Switch, _>(f.s2, |sw, now, tx| sw.link_state(now, 0, true, tx));
    f.sim.run_until_idle(100);
    f.sim.node_mut::<Probe>(f.probe).unwrap().inbox.clear();
    let p0 = get_port_info(&mut f, TO_S2, 0, 0).unwrap();
    assert_eq!(p0.port_state, WireState::Init);
    let pc = f.port_counters(2, S2_LID);
    assert!(pc.port_rcv_pkts > 0);
    // S2's port 2 Armed: the request it receives takes it Active (IBA 1 §7.2), and the answer
    // leaves by it; port 0 stays in Init.
    let r = set_port_info(&mut f, TO_S2, 2, |p| p.port_state = WireState::Down);
    assert_eq!(r.status(), MadStatus::SUCCESS);
    let r = set_port_info(&mut f, TO_S2, 2, |p| p.port_state = WireState::Armed);
    assert_eq!(r.status(), MadStatus::SUCCESS);
    assert!(f.perf_get(perf_attr::PORT_COUNTERS, 2, S2_LID).is_some());
    assert_eq!(
        f.switch(f.s2).port_state(2),
        Some(ipoib_fabric::hw::mgmt::PortState::Active)
    );
    assert_eq!(
        get_port_info(&mut f, TO_S2, 0, 0).unwrap().port_state,
        WireState::Init
    );
}
