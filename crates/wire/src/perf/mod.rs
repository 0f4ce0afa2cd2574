//! Performance management (IBA 1 chapter 16.1), the GMPs of class PerfMgt (0x04) a performance
//! manager sends to the PMA on QP1 of every port: the MAD layout (common header, 40 reserved
//! bytes, 192 bytes of data, §16.1.1) and the two counter attributes this project answers,
//! PortCounters (§16.1.3.5) and PortCountersExtended (§16.1.4.11). Attribute identifiers are in
//! [`crate::mad::attr::perf`].
//!
//! Layouts checked against OpenSM `ib_port_counters_t`, `ib_port_counters_ext_t` and wireshark's
//! `parse_PERF_PortCounters`, `parse_PERF_PortCountersExtended`.

mod counters;

pub use counters::{PortCountersExtRepr, PortCountersRepr};

use crate::mad::MAD_HEADER_LEN;

/// Offset of the PerfMgt data in the MAD (IBA 1 §16.1.1: 40 reserved bytes after the header).
pub const PERF_DATA_OFFSET: usize = MAD_HEADER_LEN + 40;
/// Length of the PerfMgt data.
pub const PERF_DATA_LEN: usize = 192;
/// ClassVersion of PerfMgt (IBA 1 §16.1.1).
pub const PERF_CLASS_VERSION: u8 = 1;
