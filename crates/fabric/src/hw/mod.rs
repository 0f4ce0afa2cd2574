//! The emulated InfiniBand hardware: what a vendor would sell. Nothing here knows about host
//! software (`crate::node`).

pub mod capture;
pub mod frame;
pub mod hca;
pub mod ids;
pub mod link;
pub mod mgmt;
pub mod rc;
pub mod sim;
pub mod sma;
pub mod switch;
pub mod topology;
pub mod verbs;
