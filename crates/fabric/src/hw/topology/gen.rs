//! Topology generators: one switch with N hosts, and a two-level fat tree of any size up to
//! 32,258 hosts.
//!
//! GUIDs follow ibsim's numbering (ibsim/sim_net.c): channel adapters from 0x100000, each taking
//! `ports + 1` GUIDs (node GUID, then one per port), switches from 0x200000, one GUID each. Hosts
//! are created first, so host `i` is node `i` (and `h{i}` by name), then leaves, then spines.

use super::{End, NodeKind, TopoError, Topology};
use ipoib_wire::Guid;

/// First CA node GUID (ibsim's `absguids[HCA_NODE]`).
pub const CA_GUID_BASE: u64 = 0x10_0000;
/// First switch GUID (ibsim's `absguids[SWITCH_NODE]`).
pub const SWITCH_GUID_BASE: u64 = 0x20_0000;

/// The shape of a two-level fat tree (leaf/spine, a folded Clos network).
///
/// Every switch has radix `2 * down`: a leaf has `down` host ports (1..=down) and `down` uplinks
/// (ports down+1..=2*down), uplink `s` going to spine `s`; each spine has one link to every leaf
/// (spine port `l + 1` to leaf `l`). So every leaf reaches every other leaf through any of the
/// `down` spines: full bisection bandwidth, and every host pair at most 4 hops apart.
///
/// Up to 648 hosts the switches are 36-port (18 down, 18 up, 18 spines, up to 36 leaves), the
/// common building block. Beyond that the radix grows to the smallest `2 * down` whose square
/// over two holds the hosts (`leaves = ceil(hosts / down) <= 2 * down`), up to the 254 ports a
/// switch can number (IBA LFT port 255 means drop): 20,000 hosts use 200-port switches (100
/// down), 200 leaves and 100 spines. With a single leaf there are no spines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FatTreeShape {
    /// Hosts.
    pub hosts: usize,
    /// Host ports (and uplinks) per leaf.
    pub down: usize,
    /// Leaf switches.
    pub leaves: usize,
    /// Spine switches.
    pub spines: usize,
    /// Ports of every switch (leaves and spines).
    pub radix: usize,
}

impl FatTreeShape {
    /// Largest number of hosts: 127 down-ports on 254-port switches, 254 leaves.
    pub const MAX_HOSTS: usize = 127 * 254;

    /// The shape for `hosts` hosts (see the type docs).
    pub fn for_hosts(hosts: usize) -> Result<FatTreeShape, TopoError> {
        if hosts == 0 || hosts > Self::MAX_HOSTS {
            return Err(TopoError::BadSize(format!(
                "a two-level fat tree holds 1 to {} hosts (254 leaves of 127 hosts on 254-port \
                 switches, the most a switch can number), not {hosts}; give a net file for \
                 another fabric",
                Self::MAX_HOSTS
            )));
        }
        let mut down = 18;
        while hosts.div_ceil(down) > 2 * down {
            down += 1;
        }
        let leaves = hosts.div_ceil(down);
        Ok(FatTreeShape {
            hosts,
            down,
            leaves,
            spines: if leaves > 1 { down } else { 0 },
            radix: 2 * down,
        })
    }
}

impl Topology {
    /// One switch (`sw0`) with `hosts` single-port hosts `h0..` on ports 1..=hosts.
    pub fn single_switch(hosts: usize) -> Result<Topology, TopoError> {
        if hosts == 0 || hosts > 254 {
            return Err(TopoError::BadSize(format!(
                "a single switch holds 1..=254 hosts, not {hosts} (use a fat tree for more)"
            )));
        }
        let mut t = Topology::new();
        add_hosts(&mut t, hosts);
        let sw = t.add_node(NodeKind::Switch, "sw0", Guid(SWITCH_GUID_BASE), hosts as u8);
        for h in 0..hosts {
            t.connect(
                End { node: h, port: 1 },
                End {
                    node: sw,
                    port: h as u8 + 1,
                },
                None,
                None,
            )?;
        }
        Ok(t)
    }

    /// A two-level fat tree of `hosts` single-port hosts; see [`FatTreeShape`].
    pub fn fat_tree(hosts: usize) -> Result<Topology, TopoError> {
        let shape = FatTreeShape::for_hosts(hosts)?;
        let mut t = Topology::new();
        add_hosts(&mut t, hosts);
        let radix = shape.radix as u8;
        let mut guid = SWITCH_GUID_BASE;
        let mut next_guid = || {
            guid += 1;
            Guid(guid - 1)
        };
        let leaf0 = t.nodes().len();
        for l in 0..shape.leaves {
            t.add_node(NodeKind::Switch, format!("leaf{l}"), next_guid(), radix);
        }
        let spine0 = t.nodes().len();
        for s in 0..shape.spines {
            t.add_node(NodeKind::Switch, format!("spine{s}"), next_guid(), radix);
        }
        for h in 0..hosts {
            let leaf = End {
                node: leaf0 + h / shape.down,
                port: (h % shape.down) as u8 + 1,
            };
            t.connect(End { node: h, port: 1 }, leaf, None, None)?;
        }
        for l in 0..shape.leaves {
            for s in 0..shape.spines {
                t.connect(
                    End {
                        node: leaf0 + l,
                        port: (shape.down + s) as u8 + 1,
                    },
                    End {
                        node: spine0 + s,
                        port: l as u8 + 1,
                    },
                    None,
                    None,
                )?;
            }
        }
        Ok(t)
    }
}

fn add_hosts(t: &mut Topology, hosts: usize) {
    for h in 0..hosts {
        t.add_node(
            NodeKind::Ca,
            format!("h{h}"),
            Guid(CA_GUID_BASE + 2 * h as u64),
            1,
        );
    }
}
