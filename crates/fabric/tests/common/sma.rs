//! A fabric for the management agents' tests: a probe standing where an SM would be, two
//! switches and a CA, and the SMPs an SM sends (IBA 1 §14.2.1).
//!
//! ```text
//! probe:1 ── 3:S1:5 ── 2:S2:7 ── 1:CA
//! ```

#![allow(dead_code)]

use ipoib_fabric::hw::hca::Hca;
use ipoib_fabric::hw::link::{LinkId, LinkParams};
use ipoib_fabric::hw::sim::{Device, NodeId, PortRef, Simulator, Tx};
use ipoib_fabric::hw::sma;
use ipoib_fabric::hw::switch::Switch;
use ipoib_proto::time::Instant;
use ipoib_wire::ib::lid::LID_PERMISSIVE;
use ipoib_wire::mad::attr::perf as perf_attr;
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::{MadHeaderRepr, MadStatus, Method, MgmtClass, BASE_VERSION, MAD_LEN};
use ipoib_wire::packet::Packet;
use ipoib_wire::perf::{PortCountersRepr, PERF_DATA_OFFSET};
use ipoib_wire::smp::{
    DirectedRoute, LftBlockRepr, PortInfoRepr, PortState, SmpAttribute, SmpMadRepr, SmpRoute,
    SwitchInfoRepr, SMP_CLASS_VERSION, SMP_DATA_LEN, SMP_PATH_LEN,
};
use ipoib_wire::{Guid, PKey};
use std::any::Any;

pub const S1_GUID: u64 = 0x0002_c903_00aa_0001;
pub const S2_GUID: u64 = 0x0002_c903_00aa_0002;
pub const CA_GUID: u64 = 0x0002_c903_0000_0100;
/// DR paths from the probe (InitialPath[1..]).
pub const TO_S1: &[u8] = &[1];
pub const TO_S2: &[u8] = &[1, 5];
pub const TO_CA: &[u8] = &[1, 5, 7];
/// LIDs the tests give out.
pub const PROBE_LID: u16 = 1;
pub const CA_LID: u16 = 7;
pub const S1_LID: u16 = 10;
pub const S2_LID: u16 = 11;

/// Sends what the test gives it, keeps what arrives.
#[derive(Default)]
pub struct Probe {
    pub inbox: Vec<Vec<u8>>,
}

impl Device for Probe {
    fn receive(&mut self, _now: Instant, _port: u8, packet: Vec<u8>, _tx: &mut Tx) {
        self.inbox.push(packet);
    }
    fn handle_timeout(&mut self, _now: Instant, _tx: &mut Tx) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

pub struct Fabric {
    pub sim: Simulator,
    pub probe: NodeId,
    pub s1: NodeId,
    pub s2: NodeId,
    pub ca: NodeId,
    next_tid: u64,
}

impl Fabric {
    pub fn new(seed: u64) -> Fabric {
        let mut sim = Simulator::new(seed);
        let probe = sim.add_node(Box::<Probe>::default(), 1);
        let s1 = sim.add_node(Box::new(Switch::new(Guid(S1_GUID), 8, "S1 leaf")), 8);
        let s2 = sim.add_node(Box::new(Switch::new(Guid(S2_GUID), 8, "S2 leaf")), 8);
        let ca = sim.add_node(Box::new(Hca::new(Guid(CA_GUID), 1)), 1);
        let p = |node, port| PortRef { node, port };
        let l1 = sim.connect(p(probe, 1), p(s1, 3), LinkParams::default());
        let l2 = sim.connect(p(s1, 5), p(s2, 2), LinkParams::default());
        let l = sim.connect(p(s2, 7), p(ca, 1), LinkParams::default());
        // The cables come up: their ports go Init (IBA 1 §7.2).
        for l in [l1, l2, l] {
            sim.schedule_link_state(l, Instant::ZERO, true);
        }
        sim.run_until_idle(100);
        Fabric {
            sim,
            probe,
            s1,
            s2,
            ca,
            next_tid: 0x100,
        }
    }

    pub fn switch(&self, id: NodeId) -> &Switch {
        self.sim.node::<Switch>(id).expect("switch")
    }

    pub fn hca(&self) -> &Hca {
        self.sim.node::<Hca>(self.ca).expect("hca")
    }

    /// The cable between S2's port 7 and the CA.
    pub fn ca_link(&self) -> LinkId {
        self.sim
            .link_of(PortRef {
                node: self.ca,
                port: 1,
            })
            .unwrap()
    }

    /// Takes the CA's cable up or down now and runs the fabric until it is quiet; returns what
    /// the probe received meanwhile (S2's trap 128).
    pub fn set_ca_link(&mut self, up: bool) -> Vec<Vec<u8>> {
        let (link, at) = (self.ca_link(), self.sim.now());
        self.sim.schedule_link_state(link, at, up);
        self.sim.run_until_idle(1000);
        std::mem::take(&mut self.sim.node_mut::<Probe>(self.probe).unwrap().inbox)
    }

    /// Sends `packet` from the probe and runs the fabric until it is quiet; returns what the
    /// probe received meanwhile.
    pub fn exchange(&mut self, packet: Vec<u8>) -> Vec<Vec<u8>> {
        self.sim
            .with_node::<Probe, _>(self.probe, |_, _, tx| tx.send(1, packet));
        self.sim.run_until_idle(10_000);
        let probe = self.sim.node_mut::<Probe>(self.probe).expect("probe");
        std::mem::take(&mut probe.inbox)
    }

    /// A directed-route SMP along `path` and the one SMP that came back (`None`: no answer).
    pub fn dr(
        &mut self,
        method: Method,
        attribute_id: u16,
        modifier: u32,
        path: &[u8],
        mkey: u64,
        attribute: SmpAttribute,
    ) -> Option<SmpMadRepr> {
        let smp = self.smp(method, attribute_id, modifier, Some(path), mkey, attribute);
        let back = self.exchange(sma::smp_packet(LID_PERMISSIVE, LID_PERMISSIVE, 0, &smp));
        one_smp(back)
    }

    /// A LID-routed SMP from the probe (LID 1) to `dlid`, and the SMP that came back.
    pub fn lid(
        &mut self,
        method: Method,
        attribute_id: u16,
        modifier: u32,
        dlid: u16,
        mkey: u64,
        attribute: SmpAttribute,
    ) -> Option<SmpMadRepr> {
        let smp = self.smp(method, attribute_id, modifier, None, mkey, attribute);
        let back = self.exchange(sma::smp_packet(PROBE_LID, dlid, 0, &smp));
        one_smp(back)
    }

    /// The 256 bytes of an SMP; a directed one leaves the probe with HopPointer 1 (C14-9:1: the
    /// sender moved it).
    pub fn smp(
        &mut self,
        method: Method,
        attribute_id: u16,
        modifier: u32,
        path: Option<&[u8]>,
        mkey: u64,
        attribute: SmpAttribute,
    ) -> [u8; MAD_LEN] {
        self.next_tid += 1;
        let mut s = SmpMadRepr::lid_routed_get(self.next_tid, attribute_id, modifier);
        s.header.method = method;
        s.mkey = mkey;
        s.attribute = attribute;
        if let Some(path) = path {
            let mut ip = [0u8; SMP_PATH_LEN];
            ip[1..=path.len()].copy_from_slice(path);
            s.header.mgmt_class = MgmtClass::SubnDirectedRoute;
            s.header.class_specific = 1 << 8 | path.len() as u16;
            s.route = SmpRoute::Directed(DirectedRoute {
                dr_slid: LID_PERMISSIVE,
                dr_dlid: LID_PERMISSIVE,
                initial_path: ip,
                return_path: [0; SMP_PATH_LEN],
            });
        }
        s.to_bytes()
    }

    /// A PerfMgt Get of `attribute_id` for `port` (IBA 1 §16.1.1).
    pub fn perf_mad(&mut self, attribute_id: u16, port: u8) -> [u8; MAD_LEN] {
        self.next_tid += 1;
        let mut mad = [0u8; MAD_LEN];
        MadHeaderRepr {
            base_version: BASE_VERSION,
            mgmt_class: MgmtClass::Perf,
            class_version: 1,
            method: Method::Get,
            status: MadStatus::SUCCESS,
            class_specific: 0,
            transaction_id: self.next_tid,
            attribute_id,
            attribute_modifier: 0,
        }
        .emit(&mut mad);
        mad[ipoib_wire::perf::PERF_DATA_OFFSET + 1] = port;
        mad
    }

    /// A PerfMgt Get of `attribute_id` for `port` to `dlid`'s QP1, and the MAD that came back.
    pub fn perf_get(&mut self, attribute_id: u16, port: u8, dlid: u16) -> Option<[u8; MAD_LEN]> {
        let mad = self.perf_mad(attribute_id, port);
        let packet = sma::gmp_packet(PROBE_LID, dlid, 0, PKey::DEFAULT, 1, &mad);
        let back = self.exchange(packet);
        let [one] = back.as_slice() else {
            return None;
        };
        let p = Packet::parse(one).ok()?;
        <[u8; MAD_LEN]>::try_from(p.payload).ok()
    }

    /// PortCounters of `port` read through the PMA at `lid`, as `perfquery` reads them.
    pub fn port_counters(&mut self, port: u8, lid: u16) -> PortCountersRepr {
        let resp = self
            .perf_get(perf_attr::PORT_COUNTERS, port, lid)
            .expect("PMA answer");
        PortCountersRepr::parse(&resp[PERF_DATA_OFFSET..]).unwrap()
    }
}

/// The single SMP among `packets` (`None` if there is none; panics on more than one).
pub fn one_smp(packets: Vec<Vec<u8>>) -> Option<SmpMadRepr> {
    assert!(packets.len() <= 1, "{} packets came back", packets.len());
    let b = packets.into_iter().next()?;
    let p = Packet::parse(&b).expect("a whole packet");
    assert!(p.crc_ok(), "CRCs of the answer");
    assert_eq!(p.lrh.vl, 15, "SMPs travel on VL15");
    Some(SmpMadRepr::parse(p.payload).expect("an SMP"))
}

/// A Get carries no attribute value.
pub fn none() -> SmpAttribute {
    SmpAttribute::Raw([0; SMP_DATA_LEN])
}

/// The class version every SMP carries.
pub const CLASS_VERSION: u8 = SMP_CLASS_VERSION;

pub fn port_info(r: &SmpMadRepr) -> PortInfoRepr {
    match r.attribute {
        SmpAttribute::PortInfo(p) => p,
        ref a => panic!("not a PortInfo: {a:?}"),
    }
}

pub fn get_port_info(f: &mut Fabric, path: &[u8], port: u32, mkey: u64) -> Option<PortInfoRepr> {
    f.dr(Method::Get, attr::PORT_INFO, port, path, mkey, none())
        .map(|r| port_info(&r))
}

/// SubnSet(PortInfo) along `path` of what `edit` makes of the current value.
pub fn set_port_info(
    f: &mut Fabric,
    path: &[u8],
    port: u32,
    edit: impl FnOnce(&mut PortInfoRepr),
) -> SmpMadRepr {
    let mut p = get_port_info(f, path, port, 0).expect("PortInfo");
    p.port_state = PortState::NoStateChange;
    edit(&mut p);
    f.dr(
        Method::Set,
        attr::PORT_INFO,
        port,
        path,
        0,
        SmpAttribute::PortInfo(p),
    )
    .expect("an answer")
}

/// `ibportstate`: writes PortPhysicalState `phys` to `port` of the node at `path` (PortState
/// NoStateChange, the rest as read back); the SMPs that came back to the probe (the answer, and a
/// trap 128 if the link changed).
pub fn set_phys(
    f: &mut Fabric,
    path: &[u8],
    port: u32,
    phys: ipoib_wire::smp::PortPhysState,
) -> Vec<SmpMadRepr> {
    let mut w = get_port_info(f, path, port, 0).expect("PortInfo");
    w.port_state = ipoib_wire::smp::PortState::NoStateChange;
    w.port_phys_state = phys;
    let smp = f.smp(
        Method::Set,
        attr::PORT_INFO,
        port,
        Some(path),
        0,
        SmpAttribute::PortInfo(w),
    );
    f.exchange(sma::smp_packet(0xffff, 0xffff, 0, &smp))
        .into_iter()
        .map(|b| one_smp(vec![b]).expect("an SMP"))
        .collect()
}

/// Sends the directed-route SMP `dr` (built by [`Fabric::smp`]) from umad user `user` of host
/// `host` of `net` as a umad user sends it (HopPointer 0: the port moves it), runs the subnet for
/// 1 ms and returns what the user received.
pub fn umad_dr(
    net: &mut ipoib_fabric::node::subnet::Subnet,
    host: usize,
    user: ipoib_fabric::node::host::AgentId,
    mut dr: [u8; MAD_LEN],
) -> Vec<ipoib_proto::mad_agent::MadIn> {
    use ipoib_fabric::node::host::Host;
    dr[6] = 0;
    let node = net.host(host).node;
    net.sim_mut()
        .with_node::<Host, _>(node, |h, now, tx| {
            let to = ipoib_proto::mad_agent::MadAddr {
                qpn: 0,
                ..ipoib_proto::mad_agent::MadAddr::gsi(0xffff)
            };
            h.umad_send(user, to, &dr).unwrap();
            h.drive(now, tx);
        })
        .unwrap();
    net.sim_mut().run_for(std::time::Duration::from_millis(1));
    net.sim_mut()
        .node_mut::<Host>(node)
        .unwrap()
        .umad_take(user)
}

/// SubnSet(LinearForwardingTable) block 0 (LIDs 0-63) of the switch at `path`: each (LID, port)
/// of `routes`, 255 (no port) elsewhere; checks the block is answered as written and returns it.
pub fn set_lft_block(f: &mut Fabric, path: &[u8], routes: &[(u16, u8)]) -> LftBlockRepr {
    let mut b = LftBlockRepr { ports: [255; 64] };
    for &(lid, port) in routes {
        b.ports[usize::from(lid)] = port;
    }
    let r = f
        .dr(
            Method::Set,
            attr::LINEAR_FORWARDING_TABLE,
            0,
            path,
            0,
            SmpAttribute::LinearForwardingTable(b),
        )
        .expect("a LinearForwardingTable answer");
    // The block reads back as written, entries above LinearFDBTop included.
    assert_eq!(r.attribute, SmpAttribute::LinearForwardingTable(b));
    b
}

/// SubnSet(SwitchInfo) of the switch at `path` with LinearFDBTop `top`; the SwitchInfo answered.
pub fn set_lft_top(f: &mut Fabric, path: &[u8], top: u16) -> SwitchInfoRepr {
    let r = f
        .dr(
            Method::Set,
            attr::SWITCH_INFO,
            0,
            path,
            0,
            SmpAttribute::SwitchInfo(SwitchInfoRepr {
                linear_fdb_top: top,
                ..SwitchInfoRepr::default()
            }),
        )
        .expect("a SwitchInfo answer");
    assert_eq!(r.status(), MadStatus::SUCCESS);
    let SmpAttribute::SwitchInfo(s) = r.attribute else {
        panic!("a SwitchInfo answer: {r:?}")
    };
    s
}

/// Gives every node its LID and both switches their LFTs by directed route.
pub fn assign_lids(f: &mut Fabric) {
    for (path, lid) in [(TO_S1, S1_LID), (TO_S2, S2_LID), (TO_CA, CA_LID)] {
        let r = set_port_info(f, path, 0, |p| {
            p.lid = lid;
            p.master_sm_lid = PROBE_LID;
        });
        assert_eq!(r.status(), MadStatus::SUCCESS);
    }
    for (path, routes) in [
        (
            TO_S1,
            [(PROBE_LID, 3), (CA_LID, 5), (S1_LID, 0), (S2_LID, 5)],
        ),
        (
            TO_S2,
            [(PROBE_LID, 2), (CA_LID, 7), (S1_LID, 2), (S2_LID, 0)],
        ),
    ] {
        set_lft_block(f, path, &routes);
        // LinearFDBTop, the highest LID routed, after the blocks as our SM writes it (OpenSM
        // writes it first); DLIDs above it are discarded (IBA 1 §14.2.5.4).
        set_lft_top(f, path, S2_LID);
    }
    // Every port on the probe's path to the CA Active, as an SM leaves them: a switch port in
    // Init receives no data packet and one not Active sends none (IBA 1 §7.2).
    for (path, port) in [(TO_CA, 0), (TO_S2, 7), (TO_S2, 2), (TO_S1, 5), (TO_S1, 3)] {
        for state in [PortState::Armed, PortState::Active] {
            let r = set_port_info(f, path, port, |p| p.port_state = state);
            assert_eq!(r.status(), MadStatus::SUCCESS);
        }
    }
}
