//! Our SA (`ipoib_proto::sa::SaServer`) serving a model of the ibsim fabric as OpenSM configured it,
//! behind the same [`Sa`] trait as OpenSM, so the differential test feeds both the same MADs.
//!
//! The model is read back from the running fabric, not assumed: node and port GUIDs, LIDs and LMC
//! of the HCAs through ibsim's NodeInfo/PortInfo; the switch is the port in OpenSM's `guid2lid`
//! cache that no HCA has, and its GUID, LID and the linear forwarding table OpenSM programmed come
//! from LID-routed SubnGet SMPs (IBA 1 §14.2.5: NodeInfo 0x0011, SwitchInfo 0x0012, PortInfo
//! 0x0015, LinearForwardingTable 0x0019); MTU and rate from each port's PortInfo (NeighborMTU,
//! LinkWidthActive × LinkSpeedActive); the NodeInfo facts (NumPorts, SystemImageGUID,
//! PartitionCap, DeviceID, Revision, VendorID) from NodeInfo. Cabling follows the LFT (one
//! switch: the port the LFT sends an HCA's LID to is the HCA's cable). The partitions are
//! OpenSM's default (`PartitionConfig::default_config()`), as the harness gives OpenSM no
//! partitions.conf.
//! A request goes in as a `MadIn` from the requester's LID; the response is the `MadOut` addressed
//! back to that LID with the request's TransactionID.

use ipoib_proto::mad_agent::{MadAddr, MadAgent, MadIn};
use ipoib_proto::partitions::{PartitionConfig, PortId, PortKind};
use ipoib_proto::rng::Rng;
use ipoib_proto::sa::{SaServer, SaServerConfig};
use ipoib_proto::subnet::{CaPort, NodeFacts, Peer, SubnetModel, SwitchNode, SwitchPort};
use ipoib_proto::time::Instant;
use ipoib_wire::mad::attr::smp::{
    LINEAR_FORWARDING_TABLE as LFT, NODE_INFO, PORT_INFO, SWITCH_INFO,
};
use ipoib_wire::smp::{LftBlockRepr, NodeInfoRepr, NodeType, PortInfoRepr, SwitchInfoRepr};
use ipoib_wire::{Gid, Guid, Mtu, Rate};
use std::time::Duration;

use super::mcr::Sa;
use super::Fabric;

/// Our SA plus who the requesters are.
pub struct OurSa {
    sa: SaServer,
    /// LID of each requester.
    lids: Vec<u16>,
    gids: Vec<Gid>,
    unknown: Gid,
    now: Instant,
}

/// Rate of a link from PortInfo LinkWidthActive and LinkSpeedActive (IBA 1 §14.2.5.6), `None`
/// for combinations this test does not expect.
fn link_rate(width: u8, speed: u8) -> Option<Rate> {
    let lanes: u32 = match width {
        1 => 1,
        2 => 4,
        4 => 8,
        8 => 12,
        _ => return None,
    };
    let lane_mbps: u32 = match speed {
        1 => 2500,
        2 => 5000,
        4 => 10000,
        _ => return None,
    };
    Rate::from_mbps(lanes * lane_mbps)
}

/// The node facts the model keeps (the NodeRecords and GUIDInfoRecords carry them), from a
/// NodeInfo and the PortInfo of one of the node's ports (GUIDCap).
fn facts(n: &NodeInfoRepr, pi: &[u8; 64]) -> Result<NodeFacts, String> {
    let p = PortInfoRepr::parse(pi).map_err(|e| format!("PortInfo: {e}"))?;
    Ok(NodeFacts {
        num_ports: n.num_ports,
        system_image_guid: n.system_image_guid,
        partition_cap: n.partition_cap,
        device_id: n.device_id,
        revision: n.revision,
        vendor_id: n.vendor_id,
        guid_cap: p.guid_cap,
    })
}

/// (LID, LMC, MTU, rate) from PortInfo data.
fn port_props(pi: &[u8; 64]) -> Result<(u16, u8, Mtu, Rate), String> {
    let p = PortInfoRepr::parse(pi).map_err(|e| format!("PortInfo: {e}"))?;
    let (width, speed) = (p.link_width_active, p.link_speed_active);
    let rate = link_rate(width, speed)
        .ok_or_else(|| format!("PortInfo: width {width:#x} speed {speed:#x} not expected"))?;
    Ok((p.lid, p.lmc, p.neighbor_mtu, rate))
}

impl OurSa {
    /// Builds the model of `fabric` as seen from `hcas` (every HCA of the net, single-port, all on
    /// the one switch; `sm_node` among them), requesters `requesters` (names from `hcas`).
    pub fn new(
        fabric: &Fabric,
        hcas: &[&str],
        requesters: &[&str],
        seed: u64,
    ) -> Result<OurSa, String> {
        let e = |what: &str, err: std::io::Error| format!("{what}: {err}");
        let mut ports = Vec::new();
        let mut prefix = 0;
        for &node in hcas {
            let f = fabric.facts(node).map_err(|x| e(node, x))?;
            // The CA's own PortInfo (an SMP to its own LID), for width and speed.
            let pi = fabric
                .smp_get(
                    node,
                    f.port.lid,
                    PORT_INFO,
                    u32::from(f.port.local_port_num),
                )
                .map_err(|x| e(node, x))?;
            let (lid, lmc, mtu, rate) = port_props(&pi)?;
            if lid != f.port.lid {
                return Err(format!("{node}: SMP LID {lid} vs ibsim's {}", f.port.lid));
            }
            prefix = f.port.gid_prefix;
            let port_guid = Guid(f.port_guid);
            let pkeys = PartitionConfig::default_config().pkey_table(&PortId {
                guid: port_guid,
                kind: PortKind::Ca,
                is_sm: node == fabric.sm_node,
            });
            ports.push(CaPort {
                node_guid: f.node.node_guid,
                port_guid,
                port_num: f.port.local_port_num,
                lid,
                lmc,
                mtu,
                rate,
                pkeys,
                active: f.port.is_up(),
                peer: Peer::None,
                name: node.to_string(),
                node: facts(&f.node, &pi)?,
            });
        }
        // The switch: the port OpenSM gave a LID that is no HCA's.
        let first = hcas[0];
        let g2l = fabric.guid2lid().map_err(|e| e.to_string())?;
        let &(_, sw_lid) = g2l
            .iter()
            .find(|(g, _)| ports.iter().all(|p| p.port_guid.0 != *g))
            .ok_or_else(|| format!("no switch in OpenSM's guid2lid {g2l:x?}"))?;
        let ni = fabric
            .smp_get(first, sw_lid, NODE_INFO, 0)
            .map_err(|x| e("switch NodeInfo", x))?;
        let ni = NodeInfoRepr::parse(&ni).map_err(|x| format!("switch NodeInfo: {x}"))?;
        if ni.node_type != NodeType::Switch {
            return Err(format!(
                "LID {sw_lid} is not a switch (type {})",
                u8::from(ni.node_type)
            ));
        }
        let sw_pi0 = fabric
            .smp_get(first, sw_lid, PORT_INFO, 0)
            .map_err(|x| e("switch port 0 PortInfo", x))?;
        let sw_facts = facts(&ni, &sw_pi0)?;
        let nports = ni.num_ports;
        let sw_guid = ni.node_guid;
        let si = fabric
            .smp_get(first, sw_lid, SWITCH_INFO, 0)
            .map_err(|x| e("SwitchInfo", x))?;
        let si = SwitchInfoRepr::parse(&si).map_err(|x| format!("SwitchInfo: {x}"))?;
        let top = si.linear_fdb_top;
        let mut lft = Vec::new();
        for block in 0..=u32::from(top / 64) {
            let b = fabric
                .smp_get(first, sw_lid, LFT, block)
                .map_err(|x| e("LinearForwardingTable", x))?;
            let b = LftBlockRepr::parse(&b).map_err(|x| format!("LinearForwardingTable: {x}"))?;
            lft.extend_from_slice(&b.ports);
        }
        let mut sw_ports = vec![SwitchPort::default(); usize::from(nports) + 1];
        for (i, p) in ports.iter_mut().enumerate() {
            let out = *lft
                .get(usize::from(p.lid))
                .ok_or_else(|| format!("LFT (top {top}) lacks LID {}", p.lid))?;
            let sp = sw_ports
                .get_mut(usize::from(out))
                .filter(|_| out != 0)
                .ok_or_else(|| format!("LFT sends LID {} to port {out}", p.lid))?;
            let pi = fabric
                .smp_get(first, sw_lid, PORT_INFO, u32::from(out))
                .map_err(|x| e("switch port PortInfo", x))?;
            let (_, _, mtu, rate) = port_props(&pi)?;
            *sp = SwitchPort {
                mtu,
                rate,
                peer: Peer::Ca(i),
            };
            p.peer = Peer::Switch(0, out);
        }
        let model = SubnetModel {
            subnet_prefix: prefix,
            sm_lid: fabric.sm_lid,
            ports,
            port_infos: Default::default(),
            switch_link_pkeys: Vec::new(),
            switch_port0_pkeys: Default::default(),
            sms: Vec::new(),
            sl2vl: Default::default(),
            vlarb: Default::default(),
            switch_infos: [(sw_guid, si)].into(),
            mfts: Default::default(),
            switches: vec![SwitchNode {
                guid: sw_guid,
                lid: sw_lid,
                ports: sw_ports,
                lft,
                name: "Switch1".into(),
                node: sw_facts,
            }],
        };
        let find = |name: &str| {
            model
                .ports
                .iter()
                .find(|p| p.name == name)
                .ok_or_else(|| format!("requester {name} is not among {hcas:?}"))
        };
        let mut lids = Vec::new();
        let mut gids = Vec::new();
        let mut unknown = Gid::ZERO;
        for &r in requesters {
            let p = find(r)?;
            lids.push(p.lid);
            gids.push(model.gid(p));
            // As for OpenSM: ibsim's NodeInfo.PortGUID (the node GUID) is no port's GUID.
            unknown = Gid::new(prefix, p.node_guid.0);
        }
        let sa = SaServer::new(
            SaServerConfig::default(),
            model,
            PartitionConfig::default_config(),
            Rng::new(seed),
        );
        Ok(OurSa {
            sa,
            lids,
            gids,
            unknown,
            now: Instant::ZERO,
        })
    }

    /// The model the SA serves.
    pub fn model(&self) -> &SubnetModel {
        self.sa.subnet()
    }
}

impl Sa for OurSa {
    fn port_gid(&self, who: usize) -> Gid {
        self.gids[who]
    }

    fn unknown_gid(&self) -> Gid {
        self.unknown
    }

    fn request(&mut self, who: usize, mad: &[u8; 256]) -> Result<Vec<u8>, String> {
        let lid = self.lids[who];
        self.now += Duration::from_millis(1);
        self.sa.handle_mad(
            self.now,
            MadIn {
                from: MadAddr::gsi(lid),
                mad: mad.to_vec(),
            },
        );
        let mut resp = None;
        while let Some(out) = self.sa.poll_transmit(self.now) {
            // Reports (traps 66/67) would go to subscribers; nobody subscribed here.
            let is_resp = out.mad.len() >= 16 && out.mad[3] & 0x80 != 0;
            if out.to.lid == lid && is_resp && out.mad[8..16] == mad[8..16] && resp.is_none() {
                resp = Some(out.mad);
            }
        }
        resp.ok_or_else(|| "our SA did not answer".to_string())
    }
}
