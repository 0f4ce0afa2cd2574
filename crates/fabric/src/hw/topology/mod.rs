//! Fabric topologies as plain data: nodes (channel adapters and switches, with GUIDs, names and
//! port counts) and the cables between their ports, with an optional MTU and rate per cable.
//!
//! Where topologies come from: generators ([`Topology::single_switch`], [`Topology::fat_tree`],
//! in `gen`), and the ibnetdiscover / ibsim net-file format ([`Topology::parse_net`],
//! [`Topology::load_net`], in `netfile`). [`build`] instantiates one in a
//! [`crate::hw::sim::Simulator`].
//!
//! Invariants: a port carries at most one cable and is within its node's port range (CA ports
//! 1..=N, switch ports 1..=N; switch port 0 is the management port and never cabled); node order
//! and link order are the order of creation, so everything derived from a topology is
//! deterministic.

mod build;
mod gen;
mod netfile;

pub use build::{build, link_params, Built};
pub use gen::FatTreeShape;
pub use netfile::{NetFileError, MAX_NET_BYTES};

use ipoib_wire::{Guid, Mtu, Rate};

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeKind {
    /// A channel adapter (HCA): an end node, each port with its own LID.
    Ca,
    /// A switch: one LID on management port 0.
    Switch,
}

/// One node of a topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopoNode {
    /// Channel adapter or switch.
    pub kind: NodeKind,
    /// Unique name (the net file's node id, e.g. `"Hca1"`, or `h12`, `leaf3` from a generator).
    pub name: String,
    /// Node description (defaults to the name).
    pub desc: String,
    /// Node GUID.
    pub guid: Guid,
    /// Number of ports (1..=254 for switches, not counting port 0).
    pub ports: u8,
}

impl TopoNode {
    /// Port GUID of `port`: for a CA the node GUID plus the port number (every port its own GUID,
    /// the node GUID shared, IBA 1 §4.1.1), for a switch the node GUID (its only port with a GUID
    /// is port 0). This is how ibsim numbers them (docs/IBSIM.md, "ibsim"), so a net file's
    /// ports get the GUIDs ibsim and OpenSM give them.
    pub fn port_guid(&self, port: u8) -> Guid {
        match self.kind {
            NodeKind::Ca => Guid(self.guid.0.wrapping_add(u64::from(port))),
            NodeKind::Switch => self.guid,
        }
    }
}

/// One end of a cable: node index (into [`Topology::nodes`]) and port number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct End {
    /// Node index.
    pub node: usize,
    /// Port number.
    pub port: u8,
}

/// A cable between two ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopoLink {
    /// One end.
    pub a: End,
    /// The other end.
    pub b: End,
    /// MTU of the link (a defined code); `None` = the SM's default.
    pub mtu: Option<Mtu>,
    /// Rate of the link (a defined code); `None` = the SM's default.
    pub rate: Option<Rate>,
}

/// Errors building a topology.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopoError {
    /// A port number outside the node's ports (or switch port 0).
    #[error("{node} has no port {port}")]
    NoSuchPort {
        /// Node name.
        node: String,
        /// Port number.
        port: u8,
    },
    /// A port already carries a cable.
    #[error("{node} port {port} is already cabled")]
    PortInUse {
        /// Node name.
        node: String,
        /// Port number.
        port: u8,
    },
    /// A node index that does not exist.
    #[error("no node #{0}")]
    NoSuchNode(usize),
    /// A generator was asked for a size it cannot build.
    #[error("{0}")]
    BadSize(String),
    /// A cable's MTU or rate code is undefined.
    #[error("{0}")]
    BadLinkCode(String),
}

/// A whole topology. See the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Topology {
    nodes: Vec<TopoNode>,
    links: Vec<TopoLink>,
    /// Per node, per port (index = port number): (peer end, link index).
    peers: Vec<Vec<Option<(End, usize)>>>,
}

impl Topology {
    /// An empty topology.
    pub fn new() -> Topology {
        Topology::default()
    }

    /// Adds a node; returns its index.
    pub fn add_node(
        &mut self,
        kind: NodeKind,
        name: impl Into<String>,
        guid: Guid,
        ports: u8,
    ) -> usize {
        let name = name.into();
        self.nodes.push(TopoNode {
            kind,
            desc: name.clone(),
            name,
            guid,
            ports,
        });
        self.peers.push(vec![None; usize::from(ports) + 1]);
        self.nodes.len() - 1
    }

    /// Cables `a` to `b`; returns the link index. A given MTU or rate must be a defined code.
    pub fn connect(
        &mut self,
        a: End,
        b: End,
        mtu: Option<Mtu>,
        rate: Option<Rate>,
    ) -> Result<usize, TopoError> {
        if let Some(m) = mtu.filter(|m| !m.is_valid()) {
            return Err(TopoError::BadLinkCode(format!(
                "undefined MTU code {}",
                u8::from(m)
            )));
        }
        if let Some(r) = rate.filter(|r| !r.is_valid()) {
            return Err(TopoError::BadLinkCode(format!(
                "undefined rate code {}",
                u8::from(r)
            )));
        }
        for e in [a, b] {
            let node = self
                .nodes
                .get(e.node)
                .ok_or(TopoError::NoSuchNode(e.node))?;
            if e.port == 0 || e.port > node.ports {
                return Err(TopoError::NoSuchPort {
                    node: node.name.clone(),
                    port: e.port,
                });
            }
            if self.peers[e.node][usize::from(e.port)].is_some() || (a == b) {
                return Err(TopoError::PortInUse {
                    node: node.name.clone(),
                    port: e.port,
                });
            }
        }
        let id = self.links.len();
        self.links.push(TopoLink { a, b, mtu, rate });
        self.peers[a.node][usize::from(a.port)] = Some((b, id));
        self.peers[b.node][usize::from(b.port)] = Some((a, id));
        Ok(id)
    }

    /// All nodes, in creation order.
    pub fn nodes(&self) -> &[TopoNode] {
        &self.nodes
    }

    /// A node's description (the net file's `# "desc"`).
    pub fn set_desc(&mut self, node: usize, desc: impl Into<String>) {
        if let Some(n) = self.nodes.get_mut(node) {
            n.desc = desc.into();
        }
    }

    /// All links, in creation order.
    pub fn links(&self) -> &[TopoLink] {
        &self.links
    }

    /// What `node`'s `port` is cabled to, and the link index.
    pub fn peer(&self, node: usize, port: u8) -> Option<(End, usize)> {
        *self.peers.get(node)?.get(usize::from(port))?
    }

    /// The index of the node called `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// Indices of the channel adapters, in order.
    pub fn cas(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.kind == NodeKind::Ca)
            .map(|(i, _)| i)
    }

    /// Indices of the switches, in order.
    pub fn switches(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.kind == NodeKind::Switch)
            .map(|(i, _)| i)
    }

    /// The cabled ports of `node`, in port order (none for a node that does not exist).
    pub fn cabled_ports(&self, node: usize) -> impl Iterator<Item = u8> + '_ {
        let ports = self.nodes.get(node).map_or(0, |n| n.ports);
        (1..=ports).filter(move |&p| self.peer(node, p).is_some())
    }

    /// The first cabled CA port in node order: where ibsim puts its default port when the first
    /// node is a CA, and the usual choice for the SM's port.
    pub fn first_ca_port(&self) -> Option<End> {
        self.host_ports().next()
    }

    /// Every channel adapter with at least one cabled port, at its lowest-numbered cabled port,
    /// in node order: the hosts a subnet runs (a CA with no cable cannot reach anything). A CA
    /// cabled only on port 2 counts, on port 2.
    pub fn host_ports(&self) -> impl Iterator<Item = End> + '_ {
        self.cas().filter_map(|n| {
            self.cabled_ports(n)
                .next()
                .map(|port| End { node: n, port })
        })
    }
}

#[cfg(test)]
pub(crate) mod tests;
