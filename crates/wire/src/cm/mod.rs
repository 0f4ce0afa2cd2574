//! Communication Manager messages (IBA 1 §12.6): the 232-byte bodies that follow the 24-byte MAD
//! common header of a CM MAD (management class 0x07).
//!
//! Offsets here are relative to the start of that body, as in the `Byte[Bit]` columns of IBA 1
//! Tables 106-120 minus the 24-byte header. Every message fills the body exactly; its private data
//! runs to byte 231, so a message view needs the whole body and nothing else (`check_len`).
//!
//! Invariants:
//! - each message has a view (`ReqMsg`, `RepMsg`, ...) with one getter and setter per field and a
//!   `Copy` representation (`ReqRepr`, ...) that keeps private data as a fixed array, so parse and emit
//!   never allocate;
//! - emit writes all 232 bytes, zeroing reserved fields (the IBA 1 convention: reserved fields are
//!   sent as zero and ignored on receipt); parse ignores reserved bits, so a parse/emit round trip is the identity on representations;
//! - code points the spec leaves open (`RejReason`, `ApStatus`, `SidrStatus`, ...) keep unknown values.
//!
//! Field names follow the spec tables in snake_case; bit positions were checked against Linux
//! `include/rdma/ibta_vol1_c12.h` and wireshark's `packet-infiniband.c`.

#[macro_use]
mod view;

mod common;
mod lap;
mod message;
mod mra;
mod path;
mod rej;
mod rep;
mod req;
mod rtu;
mod sidr;

pub use common::{RespondedTo, TransportServiceType};
pub use lap::{ApStatus, AprMsg, AprRepr, LapMsg, LapRepr};
pub use message::CmMessage;
pub use mra::{MraMsg, MraRepr};
pub use path::CmPath;
pub use rej::{RejMsg, RejReason, RejRepr};
pub use rep::{RepMsg, RepRepr};
pub use req::{ReqMsg, ReqRepr};
pub use rtu::{DrepMsg, DrepRepr, DreqMsg, DreqRepr, RtuMsg, RtuRepr};
pub use sidr::{SidrRepMsg, SidrRepRepr, SidrReqMsg, SidrReqRepr, SidrStatus};

/// Length of a CM message body: the MAD data area (IBA 1 §13.4.2, 256-byte MAD minus its 24-byte
/// common header).
pub const BODY_LEN: usize = 232;

/// Management class of the Communication Manager (IBA 1 §13.4.4).
pub const MGMT_CLASS_CM: u8 = 0x07;

/// CM attribute IDs (IBA 1 §12.6; Linux `include/rdma/ib_cm.h` `CM_*_ATTR_ID`); one list for the
/// whole crate, kept with the other classes' IDs in [`crate::mad::attr::cm`].
pub use crate::mad::attr::cm as attr;

/// The short name of a CM attribute ID ("REQ", "REP", ...), or "Unknown".
pub fn attr_name(attribute_id: u16) -> &'static str {
    attr::name(attribute_id)
}

#[cfg(test)]
pub(crate) mod testutil {
    use crate::describe::{Collect, Describe};

    /// Collects a representation's description.
    pub fn describe<D: Describe>(r: &D) -> Collect {
        let mut c = Collect::default();
        r.describe(&mut c);
        c
    }

    /// A 232-byte body from (offset, bytes) patches over zeros.
    pub fn body(patches: &[(usize, &[u8])]) -> [u8; super::BODY_LEN] {
        let mut b = [0u8; super::BODY_LEN];
        for (off, bytes) in patches {
            b[*off..*off + bytes.len()].copy_from_slice(bytes);
        }
        b
    }
}
