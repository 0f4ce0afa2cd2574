//! Host software on the emulated hardware: hosts and their applications, the Communication
//! Manager, the subnet manager, IPoIB interfaces, and [`subnet::Subnet`], which assembles a whole
//! subnet from a topology.

pub mod cm;
pub mod host;
pub mod ipoib;
pub mod sm;
pub mod subnet;
