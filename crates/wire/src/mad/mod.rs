//! Management datagrams (IBA 1 §13.4): the 256-byte MAD, its 24-byte common header, the RMPP header
//! that SA and other RMPP classes put after it (IBA 1 §13.6), the attribute identifiers of the classes
//! this project speaks (SA, CM), and the class-independent attributes of §13.4.8 (ClassPortInfo,
//! Notice, InformInfo).
//!
//! Invariants: a [`Mad`] view is only built on at least [`MAD_LEN`] bytes once `check_len` passed,
//! after which no getter panics; every Repr emits exactly its `buffer_len()` bytes and zeroes the
//! reserved bits it covers. Unknown code points survive parse/emit.
//!
//! The CM message bodies live in `crate::cm`; they read the 232-byte data area through
//! [`Mad::data`].

pub mod attr;
mod class_port_info;
mod codes;
mod header;
mod inform_info;
mod notice;
mod rmpp;
mod trap_256;
mod trap_257;

pub use class_port_info::{ClassPortInfo, ClassPortInfoRepr};
pub use codes::{MadStatus, Method, MgmtClass, SaStatus, StatusCode};
pub use header::{Mad, MadHeaderRepr};
pub use inform_info::{InformInfo, InformInfoRepr};
pub use notice::{Notice, NoticeRepr, NoticeType, ProducerType};
pub use rmpp::{Rmpp, RmppFlags, RmppRepr, RmppStatus, RmppType};
pub use trap_256::{BadMKeyTrap, TRAP_256_PATH_LEN};
pub use trap_257::{BadKey, BadKeyTrap};

/// Size of every MAD on the wire (IBA 1 §13.4.1).
pub const MAD_LEN: usize = 256;
/// Size of the common MAD header (IBA 1 §13.4.2).
pub const MAD_HEADER_LEN: usize = 24;
/// Size of the data area after the common header.
pub const MAD_DATA_LEN: usize = MAD_LEN - MAD_HEADER_LEN;
/// Size of the RMPP header that follows the common header in RMPP classes (IBA 1 §13.6.2).
pub const RMPP_HEADER_LEN: usize = 12;
/// The only MAD BaseVersion this crate speaks (IBA 1 §13.4.2).
pub const BASE_VERSION: u8 = 1;
/// ClassVersion of the SA class used by Linux and OpenSM (IBA 1.2+ §15.2.1).
pub const SA_CLASS_VERSION: u8 = 2;
/// ClassVersion of the CM class used by Linux (IBA 1.2+ §12.6).
pub const CM_CLASS_VERSION: u8 = 2;

/// Proptest strategies for the MAD Reprs, shared with the SA tests.
#[cfg(test)]
pub(crate) mod strategy {
    use super::*;
    use crate::types::Gid;
    use proptest::prelude::*;

    pub fn arb_gid() -> impl Strategy<Value = Gid> {
        any::<[u8; 16]>().prop_map(Gid)
    }

    pub fn arb_header() -> impl Strategy<Value = MadHeaderRepr> {
        (
            (any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>()),
            (any::<u16>(), any::<u16>(), any::<u64>()),
            (any::<u16>(), any::<u32>()),
        )
            .prop_map(|((bv, c, cv, m), (s, cs, tid), (a, am))| MadHeaderRepr {
                base_version: bv,
                mgmt_class: c.into(),
                class_version: cv,
                method: m.into(),
                status: MadStatus(s),
                class_specific: cs,
                transaction_id: tid,
                attribute_id: a,
                attribute_modifier: am,
            })
    }

    pub fn arb_rmpp() -> impl Strategy<Value = RmppRepr> {
        (
            (any::<u8>(), any::<u8>(), 0u8..32, 0u8..8, any::<u8>()),
            (any::<u32>(), any::<u32>()),
        )
            .prop_map(|((v, t, rt, f, s), (d1, d2))| RmppRepr {
                version: v,
                rmpp_type: t.into(),
                resp_time: rt,
                flags: RmppFlags(f),
                status: s.into(),
                data1: d1,
                data2: d2,
            })
    }
}
