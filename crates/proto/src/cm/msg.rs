//! CM MADs as bytes: the common header every CM message carries (IBA 1 §12.6: method Send, class
//! 0x07, class version 2), blank message representations to fill in, and IBA time values.

use crate::mad_agent::MadAddr;
use ipoib_wire::cm::{self, CmMessage};
use ipoib_wire::mad::{
    ClassPortInfoRepr, MadHeaderRepr, MadStatus, Method, MgmtClass, BASE_VERSION, CM_CLASS_VERSION,
    MAD_HEADER_LEN,
};
use ipoib_wire::QKey;
use std::time::Duration;

/// Every CM MAD is a whole 256-byte MAD (IBA 1 §13.4.1).
pub const MAD_LEN: usize = ipoib_wire::mad::MAD_LEN;

/// An IBA time value: 4.096 µs × 2^`exp` (IBA 1 §12.6 Table 106, CM response timeouts and
/// PacketLifeTime; §12.7). Exponents above 31 are taken as 31.
pub fn iba_time(exp: u8) -> Duration {
    Duration::from_nanos(4096u64 << exp.min(31))
}

/// `to` with the QP1 Q_Key (IBA 1 §13.5.1): every CM MAD goes to QP1.
pub fn gsi(to: MadAddr) -> MadAddr {
    MadAddr {
        qpn: 1,
        qkey: QKey::GSI,
        ..to
    }
}

/// The header of a CM message (IBA 1 §12.6: CM messages are sent with method Send; Linux
/// `cm_format_mad_hdr`).
fn header(tid: u64, attribute_id: u16) -> MadHeaderRepr {
    MadHeaderRepr {
        base_version: BASE_VERSION,
        mgmt_class: MgmtClass::ComMgt,
        class_version: CM_CLASS_VERSION,
        method: Method::Send,
        status: MadStatus::SUCCESS,
        class_specific: 0,
        transaction_id: tid,
        attribute_id,
        attribute_modifier: 0,
    }
}

/// The whole MAD carrying `m` with TransactionID `tid`.
pub fn cm_mad(tid: u64, m: &CmMessage) -> [u8; MAD_LEN] {
    let mut b = [0u8; MAD_LEN];
    header(tid, m.attribute_id()).emit(&mut b);
    // The buffer holds the 232-byte body exactly: emit cannot fail.
    let _ = m.emit(&mut b[MAD_HEADER_LEN..]);
    b
}

/// The common header of a MAD for the CM, or why it is not one (IBA 1 §13.4.2: base version 1;
/// the CM class, version 2 as Linux registers it).
pub fn check_header(raw: &[u8]) -> Result<MadHeaderRepr, &'static str> {
    if raw.len() < MAD_LEN {
        return Err("short MAD");
    }
    let h = MadHeaderRepr::parse_bytes(raw).map_err(|_| "short MAD")?;
    if h.base_version != BASE_VERSION {
        return Err("bad base version");
    }
    if h.mgmt_class != MgmtClass::ComMgt {
        return Err("not a CM MAD");
    }
    if h.class_version != CM_CLASS_VERSION {
        return Err("bad CM class version");
    }
    Ok(h)
}

/// 232 zero bytes: every CM message parses from them (each field may be zero).
const ZERO_BODY: [u8; cm::BODY_LEN] = [0; cm::BODY_LEN];

macro_rules! blank_fn {
    ($name:ident, $repr:ty, $msg:ident) => {
        /// A blank message with every field zero, to be filled in.
        pub fn $name() -> $repr {
            <$repr>::parse(&cm::$msg::new_unchecked(&ZERO_BODY[..]))
                .expect("a whole zero body parses")
        }
    };
}

blank_fn!(blank_req, cm::ReqRepr, ReqMsg);
blank_fn!(blank_mra, cm::MraRepr, MraMsg);
blank_fn!(blank_rej, cm::RejRepr, RejMsg);
blank_fn!(blank_rep, cm::RepRepr, RepMsg);
blank_fn!(blank_rtu, cm::RtuRepr, RtuMsg);
blank_fn!(blank_dreq, cm::DreqRepr, DreqMsg);
blank_fn!(blank_drep, cm::DrepRepr, DrepMsg);
blank_fn!(blank_sidr_req, cm::SidrReqRepr, SidrReqMsg);
blank_fn!(blank_sidr_rep, cm::SidrRepRepr, SidrRepMsg);
blank_fn!(blank_apr, cm::AprRepr, AprMsg);

/// Copies `data` into a private-data field (zero-padded), or says how long it was if it does not fit.
pub fn fill(field: &mut [u8], data: &[u8]) -> Result<(), usize> {
    if data.len() > field.len() {
        return Err(data.len());
    }
    field[..data.len()].copy_from_slice(data);
    field[data.len()..].fill(0);
    Ok(())
}

/// The GetResp to a management request: ClassPortInfo when `resp_time` is given (base version 1,
/// class version 2, no optional capability, RespTimeValue = our CM response time), else the header
/// alone with `status` (IBA 1 §13.4.7).
pub fn class_port_info_response(
    req: &MadHeaderRepr,
    status: MadStatus,
    resp_time: Option<u8>,
) -> [u8; MAD_LEN] {
    let mut b = [0u8; MAD_LEN];
    let h = MadHeaderRepr {
        base_version: BASE_VERSION,
        class_version: CM_CLASS_VERSION,
        ..req.response(Method::GetResp, status)
    };
    h.emit(&mut b);
    if let Some(rt) = resp_time {
        if let Ok(mut cpi) = ClassPortInfoRepr::parse(&[0u8; 72]) {
            cpi.base_version = BASE_VERSION;
            cpi.class_version = CM_CLASS_VERSION;
            cpi.resp_time_value = rt & 0x1f;
            cpi.emit(&mut b[MAD_HEADER_LEN..]);
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    // IBA 1 §12.6 Table 106: 4.096 µs × 2^n.
    #[test]
    fn iba_time_values() {
        assert_eq!(iba_time(0), Duration::from_nanos(4096));
        assert_eq!(iba_time(20), Duration::from_nanos(4096 << 20)); // ~4.29 s
        assert_eq!(iba_time(40), iba_time(31));
    }

    #[test]
    fn blanks_are_blank_and_headers_checked() {
        assert_eq!(blank_req().local_comm_id, 0);
        assert_eq!(blank_rej().reason, cm::RejReason::from(0));
        let mad = cm_mad(7, &CmMessage::Rtu(blank_rtu()));
        let h = check_header(&mad).unwrap();
        assert_eq!(h.method, Method::Send);
        assert_eq!(h.transaction_id, 7);
        assert_eq!(h.attribute_id, cm::attr::RTU);
        let mut bad = mad;
        bad[2] = 1;
        assert_eq!(check_header(&bad), Err("bad CM class version"));
        assert_eq!(check_header(&mad[..255]), Err("short MAD"));
        let mut f = [9u8; 4];
        assert_eq!(fill(&mut f, &[1, 2]), Ok(()));
        assert_eq!(f, [1, 2, 0, 0]);
        assert_eq!(fill(&mut f, &[0; 5]), Err(5));
    }
}
