//! Host software on the emulated hardware: hosts and their applications, the Communication
//! Manager, the subnet manager, IPoIB interfaces, the RDMA IP CM service, and
//! [`subnet::Subnet`], which assembles a whole subnet from a topology.

pub mod cm;
pub mod host;
pub mod ipcm;
pub mod ipoib;
pub mod sm;
pub mod subnet;
