//! Code points shared by several CM messages.

code_enum! {
    /// Which message an MRA acknowledges or a REJ rejects: the 2-bit "Message MRAed" (IBA 1 §12.6,
    /// Table 107) and "Message REJected" (IBA 1 §12.6, Table 108) fields.
    pub enum RespondedTo(u8) {
        /// 0: the REQ.
        Req = 0 => "REQ",
        /// 1: the REP.
        Rep = 1 => "REP",
        /// 2: another message (a LAP for an MRA; for a REJ, none of REQ/REP, e.g. a REJ sent because of
        /// a timeout or a stale connection; Linux `CM_MSG_RESPONSE_OTHER`).
        Other = 2 => "Other",
        /// 3 (reserved) or any value that does not fit in two bits.
        Unknown(_) => "Unknown",
    }
}

code_enum! {
    /// The 2-bit Transport Service Type of a REQ (IBA 1 §12.6, Table 106).
    pub enum TransportServiceType(u8) {
        /// 0: Reliable Connection.
        Rc = 0 => "RC",
        /// 1: Unreliable Connection.
        Uc = 1 => "UC",
        /// 2: Reliable Datagram.
        Rd = 2 => "RD",
        /// 3 (reserved in the base spec; see the Extended Transport Type field).
        Unknown(_) => "Unknown",
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
        assert_eq!(crate::sa::Mtu::from(4).name(), "2048");
    }
}
