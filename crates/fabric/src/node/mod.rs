//! Host software on the emulated hardware: hosts and their applications, the Communication
//! Manager, the subnet manager, IPoIB interfaces, the RDMA IP CM service,
//! [`subnet::Subnet`], which assembles a whole subnet from a topology, and [`remote`], the same subnet
//! with its hosts in other processes.

pub mod cm;
pub mod host;
pub mod ipcm;
pub mod ipoib;
pub mod remote;
pub mod sm;
pub mod subnet;
