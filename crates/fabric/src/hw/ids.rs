//! Names of the simulated devices and of their ports, shared by the simulator ([`crate::hw::sim`])
//! and the cables between ports ([`crate::hw::link`]), so that neither of those needs the other's
//! module for them.

/// Identifies a device inside one simulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub usize);

/// A port of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortRef {
    /// The device.
    pub node: NodeId,
    /// Its port number (HCA ports from 1; switch ports from 1, 0 being the management port).
    pub port: u8,
}
