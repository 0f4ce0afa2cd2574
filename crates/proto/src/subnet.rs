//! The subnet as the subnet manager configured it, as plain data: every channel-adapter port with its
//! LID, GID, MTU, rate and P_Keys, every switch with its linear forwarding table, and what each port
//! is cabled to. The subnet manager (crates/fabric) builds it and hands it to the subnet administrator
//! (`crate::sa`) as a value; the SA answers PathRecord queries by walking it (IBA 1 §15.2.5.16: the
//! path's MTU and rate are the smallest along the route).

use ipoib_wire::PKey;
use ipoib_wire::{Gid, Guid, Mtu, Rate};

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
    /// A name for logs (node description).
    pub name: String,
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
    /// A name for logs.
    pub name: String,
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

    /// Walks the forwarding tables from the CA port answering `slid` to the one answering `dlid`.
    /// `None` when there is no such route (unknown LID, a hole in a table, a loop, a down link).
    /// LID-routed packets have no hop limit (IBA 1 §7.7: the LRH has no hop count; only the GRH's
    /// HopLimit, for routers, has one), so neither has the walk: a route may cross every switch.
    pub fn path(&self, slid: u16, dlid: u16) -> Option<PathProps> {
        let (src, sp) = self.port_by_lid(slid)?;
        let (dst, _) = self.port_by_lid(dlid)?;
        let mut props = PathProps {
            mtu: sp.mtu,
            rate: sp.rate,
            hops: 0,
        };
        if src == dst {
            return Some(props);
        }
        let mut at = sp.peer;
        // A loop-free route crosses every switch at most once.
        for _ in 0..=self.switches.len() {
            props.hops = props.hops.saturating_add(1);
            match at {
                Peer::None => return None,
                Peer::Ca(i) => {
                    let p = &self.ports[i];
                    props.mtu = props.mtu.min(p.mtu);
                    props.rate = min_rate_code(props.rate, p.rate);
                    return (i == dst).then_some(props);
                }
                Peer::Switch(s, inport) => {
                    let sw = self.switches.get(s)?;
                    let inp = sw.ports.get(usize::from(inport))?;
                    props.mtu = props.mtu.min(inp.mtu);
                    props.rate = min_rate_code(props.rate, inp.rate);
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
            switches: vec![SwitchNode {
                guid: Guid(1),
                lid: 1,
                ports,
                lft,
                name: "s".into(),
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
