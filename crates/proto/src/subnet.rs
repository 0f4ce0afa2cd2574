//! The subnet as the subnet manager configured it, as plain data: every channel-adapter port with its
//! LID, GID, MTU, rate and P_Keys, every switch with its linear forwarding table, and what each port
//! is cabled to. The subnet manager (crates/fabric) builds it and hands it to the subnet administrator
//! (`crate::sa`) as a value; the SA answers PathRecord queries by walking it (IBA 1 §15.2.5.16: the
//! path's MTU and rate are the smallest along the route), and NodeRecord, PortInfoRecord,
//! LinkRecord and P_KeyTableRecord queries from the nodes' [`NodeFacts`] and the PortInfo
//! [`SubnetModel::ca_port_info`] and [`SubnetModel::switch_port_info`] derive from it (from the
//! PortInfo the SM read, [`SubnetModel::port_infos`], where it has it).

use ipoib_wire::smp::{
    MftBlockRepr, PortInfoRepr, PortPhysState, PortState, SlToVlTableRepr, SmInfoRepr,
    SwitchInfoRepr, VlArbTableRepr,
};
use ipoib_wire::PKey;
use ipoib_wire::{Gid, Guid, Mtu, Rate};
use std::collections::BTreeMap;

/// PortInfo CapabilityMask IsSM (IBA 1 §14.2.5.6, Table 146 bit 1).
pub const CAP_IS_SM: u32 = 1 << 1;
/// PortInfo CapabilityMask IsExtendedSpeedsSupported (bit 14).
pub const CAP_EXT_SPEEDS: u32 = 1 << 14;

/// What a port is cabled to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Peer {
    /// Nothing (or the link is down).
    #[default]
    None,
    /// A channel-adapter port: index into [`SubnetModel::ports`].
    Ca(usize),
    /// A switch port: index into [`SubnetModel::switches`] and the port number.
    Switch(usize, u8),
}

/// What a node's NodeInfo says besides its type, GUIDs and the port it was read through (IBA 1
/// §14.2.5.3), as the SM read it. The SA's NodeRecords carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodeFacts {
    /// NumPorts: the node's physical ports.
    pub num_ports: u8,
    /// SystemImageGUID.
    pub system_image_guid: Guid,
    /// PartitionCap: P_Key table entries of a CA port or of switch port 0.
    pub partition_cap: u16,
    /// DeviceID.
    pub device_id: u16,
    /// Revision.
    pub revision: u32,
    /// VendorID (24 bits).
    pub vendor_id: u32,
    /// GUIDCap of the node's ports (PortInfo, IBA 1 §14.2.5.6): how many GUIDs each holds, the
    /// port GUID first; the SA's GUIDInfoRecords have GUIDCap / 8 blocks, rounded up.
    pub guid_cap: u8,
}

/// A channel-adapter port (an HCA port, or the SM's own port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaPort {
    /// Node GUID of the adapter.
    pub node_guid: Guid,
    /// Port GUID (the GID's interface ID).
    pub port_guid: Guid,
    /// Port number on the adapter (1-based).
    pub port_num: u8,
    /// Base LID (0 before the SM assigned one).
    pub lid: u16,
    /// LID mask control: the port answers LIDs `lid ..= lid + 2^lmc - 1`.
    pub lmc: u8,
    /// Active MTU.
    pub mtu: Mtu,
    /// Active rate.
    pub rate: Rate,
    /// The P_Key table the SM wrote.
    pub pkeys: Vec<PKey>,
    /// True once the port is Active.
    pub active: bool,
    /// Where its cable goes.
    pub peer: Peer,
    /// A name for logs, and the node's NodeDescription (IBA 1 §14.2.5.2).
    pub name: String,
    /// The adapter's NodeInfo facts.
    pub node: NodeFacts,
}

/// A switch port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SwitchPort {
    /// Active MTU.
    pub mtu: Mtu,
    /// Active rate.
    pub rate: Rate,
    /// Where its cable goes.
    pub peer: Peer,
}

/// A switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchNode {
    /// Node GUID.
    pub guid: Guid,
    /// LID of management port 0.
    pub lid: u16,
    /// Ports 1..=N at index 1..=N (index 0 is management port 0 and has no cable).
    pub ports: Vec<SwitchPort>,
    /// Linear forwarding table: output port per DLID (255 = drop).
    pub lft: Vec<u8>,
    /// A name for logs, and the node's NodeDescription (IBA 1 §14.2.5.2).
    pub name: String,
    /// The switch's NodeInfo facts.
    pub node: NodeFacts,
}

/// The properties of the route from one LID to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathProps {
    /// Smallest MTU along the route.
    pub mtu: Mtu,
    /// Smallest rate code along the route (the smaller code, not always the slower rate).
    pub rate: Rate,
    /// Links crossed (255 for 255 and more).
    pub hops: u8,
}

/// The whole subnet.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubnetModel {
    /// Subnet prefix of every port's GID (default FE80::/64).
    pub subnet_prefix: u64,
    /// LID of the master SM.
    pub sm_lid: u16,
    /// Channel-adapter ports.
    pub ports: Vec<CaPort>,
    /// Switches.
    pub switches: Vec<SwitchNode>,
    /// PortInfo of each port as the SM read it by SMPs (IBA 1 §14.2.5.6) with what it then set
    /// there, by (node GUID, port number): the hardware's fields of the PortInfo the SA gives
    /// (OpenSM's SA answers from the PortInfo its sweep stored). A port missing here gets our
    /// HCAs' values (`port_info`).
    pub port_infos: BTreeMap<(Guid, u8), PortInfoRepr>,
    /// The P_Key table the SM writes on the switch ports cabled to other switches (every
    /// partition, full; crates/fabric `SubnetManager::bring_up`).
    pub switch_link_pkeys: Vec<PKey>,
    /// The P_Key table the SM writes on each switch's management port 0, by switch GUID (the
    /// default P_Key alone for a switch missing here).
    pub switch_port0_pkeys: BTreeMap<Guid, Vec<PKey>>,
    /// The SMInfo of the subnet's SMs as the master knows them, its own first (as its port
    /// answers SubnGet(SMInfo) when the model was made; OpenSM's SA lists its own SM, then the
    /// remote SMs of `sm_guid_tbl`). Empty: the SA lists no SMInfoRecord.
    pub sms: Vec<SmInfoRepr>,
    /// The SLtoVLMappingTables (IBA 1 §14.2.5.8) the SM wrote, by (node GUID, output port,
    /// input port; 0 for a CA's port), what the SA's SLtoVLMappingTableRecords give. A table
    /// missing here reads all zero: OpenSM's copy of a table it never read or wrote is zeroed
    /// (docs/OPENSM-NOTES.md "Subnet records"), and so is what our SMAs hold until an SM writes
    /// there (crates/fabric `hw::hca::port`, `hw::switch::sma`). Our SM writes none yet (no QoS).
    pub sl2vl: BTreeMap<(Guid, u8, u8), SlToVlTableRepr>,
    /// The VLArbitrationTable blocks (IBA 1 §14.2.5.9) the SM wrote, by (node GUID, port,
    /// block 1-4), for the SA's VLArbitrationTableRecords; missing: all zero, as
    /// [`SubnetModel::sl2vl`].
    pub vlarb: BTreeMap<(Guid, u8, u8), VlArbTableRepr>,
    /// The SwitchInfo (IBA 1 §14.2.5.4) of each switch as the SM read it and then set it, by
    /// node GUID: what the SA's SwitchInfoRecords give (OpenSM's SA answers from the SwitchInfo
    /// its sweep stored, `osm_sa_sw_info_record.c`). A switch missing here has no record, as a
    /// switch OpenSM has read no SwitchInfo of is not in its switch table. MulticastFDBTop
    /// follows the MFT blocks the SM writes (`SaServer::set_multicast_fdb_top`), as OpenSM's
    /// copy follows the switch's from its next read (docs/OPENSM-MFT.md).
    pub switch_infos: BTreeMap<Guid, SwitchInfoRepr>,
    /// The MulticastForwardingTable blocks (IBA 1 §14.2.5.12) the SM wrote, by (switch node
    /// GUID, block, position): what the SA's MulticastForwardingTableRecords give (OpenSM's SA
    /// answers from its own copy of the tables it computed, `osm_sa_mft_record.c`). A block
    /// missing below a switch's highest one here reads all zero; a switch with none here has no
    /// record (OpenSM: no block in use).
    pub mfts: BTreeMap<(Guid, u16, u8), MftBlockRepr>,
}

impl SubnetModel {
    /// The port GID of a CA port.
    pub fn gid(&self, port: &CaPort) -> Gid {
        Gid::new(self.subnet_prefix, port.port_guid.0)
    }

    /// The CA port whose GID is `gid`.
    pub fn port_by_gid(&self, gid: &Gid) -> Option<(usize, &CaPort)> {
        if gid.subnet_prefix() != self.subnet_prefix {
            return None;
        }
        self.ports
            .iter()
            .enumerate()
            .find(|(_, p)| p.port_guid.0 == gid.interface_id())
    }

    /// The CA port that answers `lid`.
    pub fn port_by_lid(&self, lid: u16) -> Option<(usize, &CaPort)> {
        self.ports.iter().enumerate().find(|(_, p)| {
            p.lid != 0 && lid >= p.lid && u32::from(lid) < u32::from(p.lid) + (1u32 << p.lmc)
        })
    }

    /// The switch whose management port 0 answers `lid` (LMC 0: its LID alone).
    pub fn switch_by_lid(&self, lid: u16) -> Option<(usize, &SwitchNode)> {
        self.switches
            .iter()
            .enumerate()
            .find(|(_, s)| s.lid != 0 && s.lid == lid)
    }

    /// The end port answering `lid`: a CA port or a switch's management port 0 (IBA 1 §4.1:
    /// both are end ports, with a LID and a GID).
    fn endport_by_lid(&self, lid: u16) -> Option<EndPort> {
        match self.port_by_lid(lid) {
            Some((i, _)) => Some(EndPort::Ca(i)),
            None => self.switch_by_lid(lid).map(|(s, _)| EndPort::Switch(s)),
        }
    }

    /// Walks the forwarding tables from the end port answering `slid` to the one answering
    /// `dlid`, either a CA port or a switch's management port 0 (a switch's own LID ends the walk
    /// at that switch, whose port 0 takes it). `None` when there is no such route (unknown LID,
    /// a hole in a table, a loop, a down link). LID-routed packets have no hop limit (IBA 1 §7.7:
    /// the LRH has no hop count; only the GRH's HopLimit, for routers, has one), so neither has
    /// the walk: a route may cross every switch.
    pub fn path(&self, slid: u16, dlid: u16) -> Option<PathProps> {
        let src = self.endport_by_lid(slid)?;
        let dst = self.endport_by_lid(dlid)?;
        let (mut props, mut at) = match src {
            EndPort::Ca(i) => {
                let p = self.ports.get(i)?;
                (
                    PathProps {
                        mtu: p.mtu,
                        rate: p.rate,
                        hops: 0,
                    },
                    p.peer,
                )
            }
            // A switch's own packets leave by its LFT from port 0 (IBA 1 §18.2.4.2).
            EndPort::Switch(s) => {
                let p0 = self.switches.get(s)?.ports.first()?;
                (
                    PathProps {
                        mtu: p0.mtu,
                        rate: p0.rate,
                        hops: 0,
                    },
                    Peer::Switch(s, 0),
                )
            }
        };
        if src == dst {
            return Some(props);
        }
        // A loop-free route crosses every switch at most once.
        for _ in 0..=self.switches.len() {
            match at {
                Peer::None => return None,
                Peer::Ca(i) => {
                    props.hops = props.hops.saturating_add(1);
                    let p = &self.ports[i];
                    props.mtu = props.mtu.min(p.mtu);
                    props.rate = min_rate_code(props.rate, p.rate);
                    return (EndPort::Ca(i) == dst).then_some(props);
                }
                Peer::Switch(s, inport) => {
                    if inport != 0 {
                        props.hops = props.hops.saturating_add(1);
                    }
                    let sw = self.switches.get(s)?;
                    let inp = sw.ports.get(usize::from(inport))?;
                    props.mtu = props.mtu.min(inp.mtu);
                    props.rate = min_rate_code(props.rate, inp.rate);
                    if EndPort::Switch(s) == dst {
                        // Its management port 0 takes the packet (LFT entry 0).
                        let p0 = sw.ports.first()?;
                        props.mtu = props.mtu.min(p0.mtu);
                        props.rate = min_rate_code(props.rate, p0.rate);
                        return Some(props);
                    }
                    let out = *sw.lft.get(usize::from(dlid))?;
                    let op = sw.ports.get(usize::from(out)).filter(|_| out != 0)?;
                    props.mtu = props.mtu.min(op.mtu);
                    props.rate = min_rate_code(props.rate, op.rate);
                    at = op.peer;
                }
            }
        }
        None
    }
}

/// An end port of the model: a CA port (index into [`SubnetModel::ports`]) or a switch's
/// management port 0 (index into [`SubnetModel::switches`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EndPort {
    Ca(usize),
    Switch(usize),
}

/// (LinkWidthActive, LinkSpeedActive, LinkSpeedExtActive) of a link of `rate` (IBA 1 §14.2.5.6:
/// width 1X=1, 4X=2, 8X=4, 12X=8; speed SDR=1, DDR=2, QDR=4; extended FDR=1, EDR=2), as
/// our HCAs' SMA answers (crates/fabric/src/hw/hca/sma.rs). A code with no such link: 4X SDR.
pub fn link_width_speed(rate: Rate) -> (u8, u8, u8) {
    match rate {
        Rate::Gbps2_5 => (1, 1, 0),
        Rate::Gbps5 => (1, 2, 0),
        Rate::Gbps10 => (2, 1, 0),
        Rate::Gbps20 => (2, 2, 0),
        Rate::Gbps30 => (8, 1, 0),
        Rate::Gbps40 => (2, 4, 0),
        Rate::Gbps60 => (8, 2, 0),
        Rate::Gbps80 => (4, 4, 0),
        Rate::Gbps120 => (8, 4, 0),
        Rate::Gbps14 => (1, 4, 1),
        Rate::Gbps56 => (2, 4, 1),
        Rate::Gbps112 => (4, 4, 1),
        Rate::Gbps168 => (8, 4, 1),
        Rate::Gbps25 => (1, 4, 2),
        Rate::Gbps100 => (2, 4, 2),
        _ => (2, 1, 0),
    }
}

/// The PortInfo of a port the model describes (IBA 1 §14.2.5.6): what the SM configured (LID,
/// LMC, master SM LID, subnet prefix, state, MTU, width and speed of the link's rate) and, for
/// what the model does not hold, the values our HCAs' SMA answers (crates/fabric/src/hw/hca/
/// sma.rs: one data VL, GUIDCap 1, no thresholds).
#[allow(clippy::too_many_arguments)]
fn port_info(
    prefix: u64,
    sm_lid: u16,
    lid: u16,
    lmc: u8,
    num: u8,
    mtu: Mtu,
    rate: Rate,
    up: bool,
    cap: u32,
    guid_cap: u8,
) -> PortInfoRepr {
    let (width, speed, ext) = link_width_speed(rate);
    PortInfoRepr {
        gid_prefix: prefix,
        lid,
        master_sm_lid: sm_lid,
        capability_mask: cap | if ext != 0 { CAP_EXT_SPEEDS } else { 0 },
        local_port_num: num,
        link_width_enabled: width,
        link_width_supported: width,
        link_width_active: width,
        link_speed_supported: speed,
        port_state: if up {
            PortState::Active
        } else {
            PortState::Down
        },
        port_phys_state: if up {
            PortPhysState::LinkUp
        } else {
            PortPhysState::Polling
        },
        lmc,
        link_speed_active: speed,
        link_speed_enabled: speed,
        neighbor_mtu: mtu,
        vl_cap: 1,
        mtu_cap: mtu,
        operational_vls: 1,
        link_speed_ext_active: ext,
        link_speed_ext_supported: ext,
        link_speed_ext_enabled: ext,
        guid_cap,
        ..PortInfoRepr::default()
    }
}

impl SubnetModel {
    /// The PortInfo of CA port `p` (see `port_info`): IsSM in its CapabilityMask when it answers
    /// the master SM's LID.
    pub fn ca_port_info(&self, p: &CaPort) -> PortInfoRepr {
        let is_sm = p.lid != 0
            && self.sm_lid >= p.lid
            && u32::from(self.sm_lid) < u32::from(p.lid) + (1u32 << p.lmc.min(16));
        let pi = port_info(
            self.subnet_prefix,
            self.sm_lid,
            p.lid,
            p.lmc,
            p.port_num,
            p.mtu,
            p.rate,
            p.active,
            if is_sm { CAP_IS_SM } else { 0 },
            p.node.guid_cap,
        );
        self.as_read(p.node_guid, p.port_num, pi)
    }

    /// `model`, the PortInfo of port `num` of node `guid` as this model describes it, with the
    /// hardware's fields (CapabilityMask, with IsSM on the master SM's port, LinkWidth*, LinkSpeed*, LinkDownDefaultState,
    /// VLCap, MTUCap, SubnetTimeOut, MasterSMSL, GUIDCap...) from the PortInfo the SM read, when
    /// it read one. What the SM chose stays the model's: GidPrefix, LID, LMC, MasterSMLID,
    /// LocalPortNum, NeighborMTU, PortState and PortPhysicalState (the SM brought the port up).
    fn as_read(&self, guid: Guid, num: u8, model: PortInfoRepr) -> PortInfoRepr {
        let Some(read) = self.port_infos.get(&(guid, num)) else {
            return model;
        };
        PortInfoRepr {
            gid_prefix: model.gid_prefix,
            lid: model.lid,
            master_sm_lid: model.master_sm_lid,
            capability_mask: read.capability_mask | model.capability_mask & CAP_IS_SM,
            local_port_num: model.local_port_num,
            port_state: model.port_state,
            port_phys_state: model.port_phys_state,
            lmc: model.lmc,
            neighbor_mtu: model.neighbor_mtu,
            ..*read
        }
    }

    /// The PortInfo of port `port` of switch `sw` (see `port_info`), as the SM reads it (IBA 1
    /// §14.2.5.6): LocalPortNum is the port the SM's SMP entered the switch by (the port the LFT
    /// sends the SM's LID to; 0 when the SM is the switch), for every port; port 0, the management
    /// port, carries the switch's LID, the master SM's LID and the subnet prefix; the external
    /// ports carry none (only port 0 of a switch has them: OpenSM on ibsim reads 0) and are up
    /// when cabled. `None` past the switch's ports.
    pub fn switch_port_info(&self, sw: &SwitchNode, port: u8) -> Option<PortInfoRepr> {
        let sp = sw.ports.get(usize::from(port))?;
        let ingress = sw
            .lft
            .get(usize::from(self.sm_lid))
            .copied()
            .filter(|&p| usize::from(p) < sw.ports.len())
            .unwrap_or(0);
        let mut pi = if port == 0 {
            port_info(
                self.subnet_prefix,
                self.sm_lid,
                sw.lid,
                0,
                ingress,
                sp.mtu,
                sp.rate,
                sw.lid != 0,
                0,
                sw.node.guid_cap,
            )
        } else {
            port_info(
                0,
                0,
                0,
                0,
                ingress,
                sp.mtu,
                sp.rate,
                sp.peer != Peer::None,
                0,
                0,
            )
        };
        pi.local_port_num = ingress;
        Some(self.as_read(sw.guid, port, pi))
    }

    /// The P_Key table of port `port` of switch `sw` as the SM writes it (crates/fabric
    /// `SubnetManager::bring_up`): [`Self::switch_port0_pkeys`] on management port 0, the table of the CA
    /// port a port is cabled to, [`Self::switch_link_pkeys`] on a port cabled to a switch; empty
    /// on a port with no cable (the SM writes none there). A port cabled to a CA or a switch holds
    /// at most the switch's PartitionEnforcementCap entries (IBA 1 §14.2.5.4), whatever the SM
    /// wrote: the model takes it as the switch's NodeInfo PartitionCap, the same value in our
    /// switches (crates/fabric `hw::switch::PARTITION_ENFORCEMENT_CAP`, one block); 0, a value no
    /// NodeInfo carries (a model built without reading one), limits nothing.
    pub fn switch_port_pkeys(&self, sw: &SwitchNode, port: u8) -> Vec<PKey> {
        if port == 0 {
            return self
                .switch_port0_pkeys
                .get(&sw.guid)
                .cloned()
                .unwrap_or_else(|| vec![PKey::DEFAULT]);
        }
        let mut t = match sw.ports.get(usize::from(port)).map(|p| p.peer) {
            Some(Peer::Ca(i)) => self.ports.get(i).map_or_else(Vec::new, |p| p.pkeys.clone()),
            Some(Peer::Switch(..)) => self.switch_link_pkeys.clone(),
            _ => Vec::new(),
        };
        if sw.node.partition_cap != 0 {
            t.truncate(usize::from(sw.node.partition_cap));
        }
        t
    }
}

/// The rate with the smaller code: how this model combines rates along a route. The smaller code
/// is not always the slower rate (code 5, 5 Gb/s, is slower than code 3, 10 Gb/s); OpenSM combines
/// them by speed, as [`Rate::cmp_speed`] orders them.
fn min_rate_code(a: Rate, b: Rate) -> Rate {
    if u8::from(b) < u8::from(a) {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca(guid: u64, lid: u16, peer: Peer) -> CaPort {
        CaPort {
            node_guid: Guid(guid),
            port_guid: Guid(guid),
            port_num: 1,
            lid,
            lmc: 0,
            mtu: Mtu::Mtu2048,
            rate: Rate::Gbps10,
            pkeys: vec![PKey(0xffff)],
            active: true,
            peer,
            name: format!("h{lid}"),
            node: NodeFacts::default(),
        }
    }

    #[test]
    fn path_through_one_switch_takes_the_smallest_mtu() {
        let mut lft = vec![255u8; 8];
        lft[2] = 1;
        lft[3] = 2;
        let mut ports = vec![SwitchPort::default(); 3];
        ports[1] = SwitchPort {
            mtu: Mtu::Mtu2048,
            rate: Rate::Gbps10,
            peer: Peer::Ca(0),
        };
        ports[2] = SwitchPort {
            mtu: Mtu::Mtu1024,
            rate: Rate::Gbps10,
            peer: Peer::Ca(1),
        };
        let m = SubnetModel {
            subnet_prefix: Gid::DEFAULT_SUBNET_PREFIX,
            sm_lid: 1,
            ports: vec![
                ca(0x10, 2, Peer::Switch(0, 1)),
                ca(0x11, 3, Peer::Switch(0, 2)),
            ],
            port_infos: Default::default(),
            switch_link_pkeys: Vec::new(),
            switch_port0_pkeys: Default::default(),
            sms: Vec::new(),
            sl2vl: BTreeMap::new(),
            vlarb: BTreeMap::new(),
            switch_infos: BTreeMap::new(),
            mfts: BTreeMap::new(),
            switches: vec![SwitchNode {
                guid: Guid(1),
                lid: 1,
                ports,
                lft,
                name: "s".into(),
                node: NodeFacts::default(),
            }],
        };
        assert_eq!(
            m.path(2, 3),
            Some(PathProps {
                mtu: Mtu::Mtu1024,
                rate: Rate::Gbps10,
                hops: 2
            })
        );
        assert_eq!(m.path(2, 2).map(|p| p.hops), Some(0));
        assert_eq!(m.path(2, 7), None);
        let g = m.gid(&m.ports[1]);
        assert_eq!(m.port_by_gid(&g).map(|(i, _)| i), Some(1));
    }

    /// A line of `n` switches, CA 0 (LID 1) on the first, CA 1 (LID 2) on the last; switch `s`
    /// has LID 3 + s, port 1 to its CA, 2 to the previous switch, 3 to the next.
    fn chain(n: usize) -> SubnetModel {
        let lids = 3 + n;
        let switches = (0..n)
            .map(|s| {
                let mut ports = vec![SwitchPort::default(); 4];
                if s == 0 {
                    ports[1].peer = Peer::Ca(0);
                }
                if s == n - 1 {
                    ports[1].peer = Peer::Ca(1);
                }
                if s > 0 {
                    ports[2].peer = Peer::Switch(s - 1, 3);
                }
                if s + 1 < n {
                    ports[3].peer = Peer::Switch(s + 1, 2);
                }
                for p in &mut ports {
                    (p.mtu, p.rate) = (Mtu::Mtu2048, Rate::Gbps10);
                }
                let mut lft = vec![255u8; lids];
                lft[1] = if s == 0 { 1 } else { 2 };
                lft[2] = if s == n - 1 { 1 } else { 3 };
                SwitchNode {
                    guid: Guid(0x100 + s as u64),
                    lid: 3 + s as u16,
                    ports,
                    lft,
                    name: format!("s{s}"),
                    node: NodeFacts::default(),
                }
            })
            .collect();
        SubnetModel {
            subnet_prefix: Gid::DEFAULT_SUBNET_PREFIX,
            sm_lid: 1,
            ports: vec![
                ca(0x10, 1, Peer::Switch(0, 1)),
                ca(0x11, 2, Peer::Switch(n - 1, 1)),
            ],
            port_infos: Default::default(),
            switch_link_pkeys: Vec::new(),
            switch_port0_pkeys: Default::default(),
            sms: Vec::new(),
            sl2vl: BTreeMap::new(),
            vlarb: BTreeMap::new(),
            switch_infos: BTreeMap::new(),
            mfts: BTreeMap::new(),
            switches,
        }
    }

    // IBA 1 §7.7: the LRH carries no hop count, so a LID route may be as long as the fabric; the
    // walk used to stop at 64 links, and the SA answered no PathRecord beyond.
    #[test]
    fn long_routes_are_found() {
        for n in [2, 63, 64, 100, 300] {
            let m = chain(n);
            let want = u8::try_from(n + 1).unwrap_or(255);
            assert_eq!(m.path(1, 2).map(|p| p.hops), Some(want), "{n} switches");
            assert_eq!(m.path(2, 1).map(|p| p.hops), Some(want), "{n} switches");
        }
        // A loop still ends the walk.
        let mut m = chain(3);
        m.switches[2].lft[2] = 2;
        assert_eq!(m.path(1, 2), None);
    }
}
