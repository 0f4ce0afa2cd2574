//! InfiniBand routing and transport headers (IBA 1 ch. 7 and 9): LRH, GRH, BTH and the extended
//! transport headers (RDETH, DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH).
//!
//! Each header has a zero-copy view (`Lrh<T>`, `Bth<T>`, ...) and a validated representation
//! (`LrhRepr`, `BthRepr`, ...). All fields are big-endian. Which extended headers follow a BTH is
//! decided by its opcode alone ([`Opcode::ext_headers`], IBA 1 §9.2); [`ExtHeaders`] parses
//! and emits that chain. Whole packets (with pad, ICRC and VCRC) live in [`crate::packet`].

mod aeth;
mod atomic;
mod bth;
mod deth;
mod ext;
mod grh;
mod ieth;
mod immdt;
pub mod lid;
mod lrh;
mod opcode;
mod rdeth;
mod reth;

pub use aeth::{Aeth, AethRepr, NakCode, Syndrome};
pub use atomic::{AtomicAckEth, AtomicAckEthRepr, AtomicEth, AtomicEthRepr};
pub use bth::{Bth, BthRepr};
pub use deth::{Deth, DethRepr};
pub use ext::{ExtHeaderSet, ExtHeaders};
pub use grh::{Grh, GrhRepr};
pub use ieth::{Ieth, IethRepr};
pub use immdt::{ImmDt, ImmDtRepr};
pub use lrh::{Lnh, Lrh, LrhRepr};
pub use opcode::{Opcode, Operation, Position, Transport};
pub use rdeth::{Rdeth, RdethRepr};
pub use reth::{Reth, RethRepr};

/// Length of the ICRC (IBA 1 §7.8.1).
pub const ICRC_LEN: usize = 4;
/// Length of the VCRC (IBA 1 §7.8.2).
pub const VCRC_LEN: usize = 2;
