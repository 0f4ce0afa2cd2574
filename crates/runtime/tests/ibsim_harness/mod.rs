//! Test harness: ibsim with a small net file and the real OpenSM attached to it (the process
//! handling lives in `ipoib_runtime::ibsim::opensm`, shared with the benchmark example
//! crates/runtime/examples/opensm_joins.rs), the MCMemberRecord sequence, and our SA as a second
//! implementation of the same [`mcr::Sa`].

#![allow(dead_code)]

pub mod mcr;
pub mod ours;
pub mod records;
pub mod sequence;

pub use ipoib_runtime::ibsim::opensm::{Fabric, Setup};

/// One switch with three single-port HCAs. The first port in the file is ibsim's default port;
/// OpenSM runs on Hca1 (`SIM_HOST`). ibsim 0.10 numbers node GUIDs per type in file order: Hca1
/// 0x100000, Hca2 0x100002, Hca3 0x100004, Switch1 0x200000 (read back, not assumed).
pub const NET_ONE_SWITCH: &str = "\
Switch\t8 \"Switch1\"
[1]\t\"Hca1\"[1]
[2]\t\"Hca2\"[1]
[3]\t\"Hca3\"[1]

Hca\t1 \"Hca1\"
[1]\t\"Switch1\"[1]

Hca\t1 \"Hca2\"
[1]\t\"Switch1\"[2]

Hca\t1 \"Hca3\"
[1]\t\"Switch1\"[3]
";
