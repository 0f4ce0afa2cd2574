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

pub use common::{mtu_name, RespondedTo, TransportServiceType};
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

/// CM attribute IDs (IBA 1 §12.6; Linux `include/rdma/ib_cm.h` `CM_*_ATTR_ID`).
pub mod attr {
    /// ClassPortInfo (not a connection message; handled with the MAD class code).
    pub const CLASS_PORT_INFO: u16 = 0x0001;
    /// ConnectRequest.
    pub const REQ: u16 = 0x0010;
    /// MsgRcptAck.
    pub const MRA: u16 = 0x0011;
    /// ConnectReject.
    pub const REJ: u16 = 0x0012;
    /// ConnectReply.
    pub const REP: u16 = 0x0013;
    /// ReadyToUse.
    pub const RTU: u16 = 0x0014;
    /// DisconnectRequest.
    pub const DREQ: u16 = 0x0015;
    /// DisconnectReply.
    pub const DREP: u16 = 0x0016;
    /// ServiceIDResReq.
    pub const SIDR_REQ: u16 = 0x0017;
    /// ServiceIDResReqResp.
    pub const SIDR_REP: u16 = 0x0018;
    /// LoadAlternatePath.
    pub const LAP: u16 = 0x0019;
    /// AlternatePathResponse.
    pub const APR: u16 = 0x001a;
}

/// The short name of a CM attribute ID ("REQ", "REP", ...), or "Unknown".
pub fn attr_name(attribute_id: u16) -> &'static str {
    match attribute_id {
        attr::CLASS_PORT_INFO => "ClassPortInfo",
        attr::REQ => "REQ",
        attr::MRA => "MRA",
        attr::REJ => "REJ",
        attr::REP => "REP",
        attr::RTU => "RTU",
        attr::DREQ => "DREQ",
        attr::DREP => "DREP",
        attr::SIDR_REQ => "SIDR_REQ",
        attr::SIDR_REP => "SIDR_REP",
        attr::LAP => "LAP",
        attr::APR => "APR",
        _ => "Unknown",
    }
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
