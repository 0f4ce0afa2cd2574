//! Code points shared by several CM messages.

/// Which message an MRA acknowledges or a REJ rejects: the 2-bit "Message MRAed" (IBA 1 §12.6,
/// Table 107) and "Message REJected" (IBA 1 §12.6, Table 108) fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RespondedTo {
    /// 0: the REQ.
    Req,
    /// 1: the REP.
    Rep,
    /// 2: another message (a LAP for an MRA; for a REJ, none of REQ/REP, e.g. a REJ sent because of
    /// a timeout or a stale connection; Linux `CM_MSG_RESPONSE_OTHER`).
    Other,
    /// 3 (reserved) or any value that does not fit in two bits.
    Unknown(u8),
}

impl From<u8> for RespondedTo {
    fn from(v: u8) -> Self {
        match v {
            0 => RespondedTo::Req,
            1 => RespondedTo::Rep,
            2 => RespondedTo::Other,
            v => RespondedTo::Unknown(v),
        }
    }
}

impl From<RespondedTo> for u8 {
    fn from(v: RespondedTo) -> u8 {
        match v {
            RespondedTo::Req => 0,
            RespondedTo::Rep => 1,
            RespondedTo::Other => 2,
            RespondedTo::Unknown(v) => v,
        }
    }
}

impl RespondedTo {
    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            RespondedTo::Req => "REQ",
            RespondedTo::Rep => "REP",
            RespondedTo::Other => "Other",
            RespondedTo::Unknown(_) => "Unknown",
        }
    }
}

/// The 2-bit Transport Service Type of a REQ (IBA 1 §12.6, Table 106).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransportServiceType {
    /// 0: Reliable Connection.
    Rc,
    /// 1: Unreliable Connection.
    Uc,
    /// 2: Reliable Datagram.
    Rd,
    /// 3 (reserved in the base spec; see the Extended Transport Type field).
    Unknown(u8),
}

impl From<u8> for TransportServiceType {
    fn from(v: u8) -> Self {
        match v {
            0 => TransportServiceType::Rc,
            1 => TransportServiceType::Uc,
            2 => TransportServiceType::Rd,
            v => TransportServiceType::Unknown(v),
        }
    }
}

impl From<TransportServiceType> for u8 {
    fn from(v: TransportServiceType) -> u8 {
        match v {
            TransportServiceType::Rc => 0,
            TransportServiceType::Uc => 1,
            TransportServiceType::Rd => 2,
            TransportServiceType::Unknown(v) => v,
        }
    }
}

impl TransportServiceType {
    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            TransportServiceType::Rc => "RC",
            TransportServiceType::Uc => "UC",
            TransportServiceType::Rd => "RD",
            TransportServiceType::Unknown(_) => "Unknown",
        }
    }
}

/// The name of a 4-bit IBA MTU code as PortInfo and PathRecord use it
/// (IBA 1 §14.2.5.6, §15.2.5.16): 1 = 256 ... 5 = 4096 bytes.
pub fn mtu_name(code: u8) -> &'static str {
    match code {
        1 => "256",
        2 => "512",
        3 => "1024",
        4 => "2048",
        5 => "4096",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_points_round_trip() {
        for v in 0..=255u8 {
            assert_eq!(u8::from(RespondedTo::from(v)), v);
            assert_eq!(u8::from(TransportServiceType::from(v)), v);
        }
        assert_eq!(RespondedTo::from(2), RespondedTo::Other);
        assert_eq!(TransportServiceType::from(0).name(), "RC");
        assert_eq!(mtu_name(4), "2048");
    }
}
