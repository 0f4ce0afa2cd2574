//! Code points of the common MAD header: management class, method and status (IBA 1 §13.4.2-§13.4.7).
//! Every enum keeps values it does not name (`Unknown`), so a parse/emit round trip is lossless.

code_enum! {
    /// Management class (IBA 1 §13.4.4, Table 109 in 1.3). Vendor-specific ranges are recognised by
    /// [`MgmtClass::is_vendor_specific`] and stay `Unknown(code)`.
    pub enum MgmtClass(u8) {
        /// Subnet management, LID routed.
        SubnLid = 0x01 => "SubnLid",
        /// Subnet administration.
        SubnAdm = 0x03 => "SubnAdm",
        /// Performance management.
        Perf = 0x04 => "Perf",
        /// Baseboard management.
        Bm = 0x05 => "BM",
        /// Device management.
        DevMgt = 0x06 => "DevMgt",
        /// Communication management (CM).
        ComMgt = 0x07 => "ComMgt",
        /// SNMP tunnelling.
        Snmp = 0x08 => "SNMP",
        /// Device administration.
        DevAdm = 0x10 => "DevAdm",
        /// Boot integrity service.
        Bis = 0x12 => "BIS",
        /// Congestion control (IBA 1 Annex A10).
        Cc = 0x21 => "CC",
        /// Subnet management, directed route.
        SubnDirectedRoute = 0x81 => "SubnDirectedRoute",
        /// A value this crate has no name for, kept as received.
        Unknown(_) => "Unknown",
    }
}

impl MgmtClass {
    /// True for the vendor-specific classes 0x09-0x0F and 0x30-0x4F (IBA 1 §13.4.4).
    pub fn is_vendor_specific(self) -> bool {
        matches!(u8::from(self), 0x09..=0x0f | 0x30..=0x4f)
    }

    /// True for the classes that carry an RMPP header after the common header (IBA 1 §13.6.1):
    /// SubnAdm, DevMgt, DevAdm, BIS and the vendor range 0x30-0x4F. (OpenSM's `ib_class_is_rmpp`.)
    pub fn uses_rmpp(self) -> bool {
        matches!(u8::from(self), 0x03 | 0x06 | 0x10 | 0x12 | 0x30..=0x4f)
    }
}

code_enum! {
    /// Method, with the response bit R (bit 7) included (IBA 1 §13.4.5 Table 110, §15.2.2 Table 187).
    pub enum Method(u8) {
        /// Get().
        Get = 0x01 => "Get",
        /// Set().
        Set = 0x02 => "Set",
        /// Send().
        Send = 0x03 => "Send",
        /// Trap().
        Trap = 0x05 => "Trap",
        /// Report().
        Report = 0x06 => "Report",
        /// TrapRepress().
        TrapRepress = 0x07 => "TrapRepress",
        /// SubnAdmGetTable().
        GetTable = 0x12 => "GetTable",
        /// SubnAdmGetTraceTable().
        GetTraceTable = 0x13 => "GetTraceTable",
        /// SubnAdmGetMulti().
        GetMulti = 0x14 => "GetMulti",
        /// SubnAdmDelete().
        Delete = 0x15 => "Delete",
        /// GetResp(), the response to Get() and Set().
        GetResp = 0x81 => "GetResp",
        /// ReportResp().
        ReportResp = 0x86 => "ReportResp",
        /// SubnAdmGetTableResp(), also the response to GetTraceTable().
        GetTableResp = 0x92 => "GetTableResp",
        /// SubnAdmGetMultiResp().
        GetMultiResp = 0x94 => "GetMultiResp",
        /// SubnAdmDeleteResp().
        DeleteResp = 0x95 => "DeleteResp",
        /// A value this crate has no name for, kept as received.
        Unknown(_) => "Unknown",
    }
}

impl Method {
    /// The response bit R (IBA 1 §13.4.5): set in every response method.
    pub const RESPONSE_BIT: u8 = 0x80;

    /// True if the R bit is set.
    pub fn is_response(self) -> bool {
        u8::from(self) & Self::RESPONSE_BIT != 0
    }

    /// True for a method that answers a request and so keeps its TransactionID (IBA 1 §13.4.6.2):
    /// the R bit's, and TrapRepress, which answers a Trap (§13.4.9) without the R bit. Such a
    /// MAD goes to the agent that sent the request with that TID, as Linux's `ib_response_mad`
    /// (`drivers/infiniband/core/mad.c`) counts TrapRepress among the responses.
    pub fn answers_request(self) -> bool {
        self.is_response() || self == Method::TrapRepress
    }

    /// The method that answers this one (IBA 1 §13.4.5 Table 110, §15.2.2 Table 187): Get and Set are
    /// answered with GetResp, Report with ReportResp, Trap with TrapRepress, GetTable and GetTraceTable
    /// with GetTableResp, GetMulti with GetMultiResp, Delete with DeleteResp. Send and responses have
    /// no response.
    pub fn response(self) -> Option<Method> {
        match self {
            Method::Get | Method::Set => Some(Method::GetResp),
            Method::Report => Some(Method::ReportResp),
            Method::Trap => Some(Method::TrapRepress),
            Method::GetTable | Method::GetTraceTable => Some(Method::GetTableResp),
            Method::GetMulti => Some(Method::GetMultiResp),
            Method::Delete => Some(Method::DeleteResp),
            _ => None,
        }
    }
}

code_enum! {
    /// The class-independent code in bits 2-4 of the MAD status (IBA 1 §13.4.7 Table 112).
    pub enum StatusCode(u8) {
        /// No invalid fields.
        Ok = 0 => "Ok",
        /// Bad version: base or class version not supported.
        BadVersion = 1 => "BadVersion",
        /// The method is not supported.
        MethodUnsupported = 2 => "MethodUnsupported",
        /// The method/attribute combination is not supported.
        MethodAttrUnsupported = 3 => "MethodAttrUnsupported",
        /// One or more fields of the attribute or modifier hold invalid values.
        InvalidAttrValue = 7 => "InvalidAttrValue",
        /// A value this crate has no name for, kept as received.
        Unknown(_) => "Unknown",
    }
}

code_enum! {
    /// SA class-specific status, bits 8-15 of the MAD status of a SubnAdm MAD (IBA 1 §15.2.1.1
    /// Table 186; OpenSM `IB_SA_MAD_STATUS_*`).
    pub enum SaStatus(u8) {
        /// No error.
        Success = 0 => "Success",
        /// ERR_NO_RESOURCES: the SA has no resources for the request.
        NoResources = 1 => "ERR_NO_RESOURCES",
        /// ERR_REQ_INVALID: the request is invalid.
        ReqInvalid = 2 => "ERR_REQ_INVALID",
        /// ERR_NO_RECORDS: no records match the query.
        NoRecords = 3 => "ERR_NO_RECORDS",
        /// ERR_TOO_MANY_RECORDS: a Get matched more than one record.
        TooManyRecords = 4 => "ERR_TOO_MANY_RECORDS",
        /// ERR_REQ_INVALID_GID: a GID in the request is invalid.
        ReqInvalidGid = 5 => "ERR_REQ_INVALID_GID",
        /// ERR_REQ_INSUFFICIENT_COMPONENTS: the component mask lacks required components.
        ReqInsufficientComponents = 6 => "ERR_REQ_INSUFFICIENT_COMPONENTS",
        /// ERR_REQ_DENIED: the request was denied.
        ReqDenied = 7 => "ERR_REQ_DENIED",
        /// ERR_REQ_PRIORITY_SUGGESTED (IBA 1.2.1 QoS).
        PrioritySuggested = 8 => "ERR_REQ_PRIORITY_SUGGESTED",
        /// A value this crate has no name for, kept as received.
        Unknown(_) => "Unknown",
    }
}

/// The 16-bit MAD status (IBA 1 §13.4.7): bit 0 busy, bit 1 redirect required, bits 2-4 a
/// [`StatusCode`], bits 8-15 class specific (for SA a [`SaStatus`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MadStatus(pub u16);

impl MadStatus {
    /// No error.
    pub const SUCCESS: MadStatus = MadStatus(0);
    /// Busy: the MAD was discarded, try again later (IBA 1 §13.4.7).
    pub const BUSY: MadStatus = MadStatus(0x0001);
    /// Redirect required (IBA 1 §13.4.7).
    pub const REDIRECT: MadStatus = MadStatus(0x0002);
    /// Bad version (code 1).
    pub const BAD_VERSION: MadStatus = MadStatus(0x0004);
    /// Method not supported (code 2).
    pub const METHOD_UNSUPPORTED: MadStatus = MadStatus(0x0008);
    /// Method/attribute combination not supported (code 3).
    pub const METHOD_ATTR_UNSUPPORTED: MadStatus = MadStatus(0x000c);
    /// Invalid attribute or attribute-modifier value (code 7).
    pub const INVALID_ATTR_VALUE: MadStatus = MadStatus(0x001c);
    /// The direction bit D of a directed-route SMP, bit 15 of its Status field (IBA 1 §14.2.1.2).
    pub const DIRECTION: MadStatus = MadStatus(0x8000);

    /// A status carrying an SA class-specific code in bits 8-15 (IBA 1 §15.2.1.1).
    pub fn sa(code: SaStatus) -> MadStatus {
        MadStatus(u16::from(u8::from(code)) << 8)
    }
    /// True for the all-zero status.
    pub fn is_success(self) -> bool {
        self.0 == 0
    }
    /// Bit 0.
    pub fn busy(self) -> bool {
        self.0 & 0x0001 != 0
    }
    /// Bit 1.
    pub fn redirect(self) -> bool {
        self.0 & 0x0002 != 0
    }
    /// Bits 2-4.
    pub fn code(self) -> StatusCode {
        StatusCode::from(((self.0 >> 2) & 0x7) as u8)
    }
    /// Bits 8-15, the class-specific status.
    pub fn class_specific(self) -> u8 {
        (self.0 >> 8) as u8
    }
    /// Bits 8-15 read as an SA status.
    pub fn sa_status(self) -> SaStatus {
        SaStatus::from(self.class_specific())
    }

    /// The status of a MAD of `class`: bit 15 of a directed-route SMP's Status field is the
    /// direction bit D, not status (IBA 1 §14.2.1.2), and is cleared; other classes keep every bit.
    pub fn without_direction(self, class: MgmtClass) -> MadStatus {
        match class {
            MgmtClass::SubnDirectedRoute => MadStatus(self.0 & !Self::DIRECTION.0),
            _ => self,
        }
    }

    /// A short name for display: the SA code when `class` is SubnAdm and bits 8-15 are set,
    /// otherwise the common code, busy or redirect (a directed-route SMP's D bit ignored).
    pub fn name(self, class: MgmtClass) -> &'static str {
        let s = self.without_direction(class);
        if s.0 == 0 {
            "Success"
        } else if class == MgmtClass::SubnAdm && s.class_specific() != 0 {
            s.sa_status().name()
        } else if s.code() != StatusCode::Ok {
            s.code().name()
        } else if s.busy() {
            "Busy"
        } else if s.redirect() {
            "Redirect"
        } else {
            "ClassSpecific"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // IBA 1 §13.4.4
    #[test]
    fn mgmt_class_round_trip_and_ranges() {
        for v in 0..=255u8 {
            assert_eq!(u8::from(MgmtClass::from(v)), v);
        }
        assert_eq!(MgmtClass::from(0x03), MgmtClass::SubnAdm);
        assert_eq!(MgmtClass::from(0x07), MgmtClass::ComMgt);
        assert_eq!(MgmtClass::from(0x81), MgmtClass::SubnDirectedRoute);
        assert!(MgmtClass::from(0x09).is_vendor_specific());
        assert!(MgmtClass::from(0x4f).is_vendor_specific());
        assert!(!MgmtClass::from(0x50).is_vendor_specific());
        assert!(MgmtClass::SubnAdm.uses_rmpp());
        assert!(!MgmtClass::ComMgt.uses_rmpp());
    }

    // IBA 1 §13.4.5
    #[test]
    fn method_codes_and_responses() {
        for v in 0..=255u8 {
            assert_eq!(u8::from(Method::from(v)), v);
        }
        assert_eq!(u8::from(Method::GetTableResp), 0x92);
        assert_eq!(u8::from(Method::DeleteResp), 0x95);
        assert_eq!(Method::Set.response(), Some(Method::GetResp));
        assert_eq!(Method::GetTable.response(), Some(Method::GetTableResp));
        assert_eq!(Method::Delete.response(), Some(Method::DeleteResp));
        assert_eq!(Method::Report.response(), Some(Method::ReportResp));
        assert!(Method::GetResp.is_response());
        assert!(!Method::Get.is_response());
        assert_eq!(Method::GetResp.response(), None);
    }

    // IBA 1 §13.4.7, IBA 1 §15.2.1.1
    #[test]
    fn status_bits() {
        assert_eq!(MadStatus::sa(SaStatus::NoRecords), MadStatus(0x0300));
        assert_eq!(MadStatus::sa(SaStatus::ReqInsufficientComponents).0, 0x0600);
        assert_eq!(MadStatus(0x0300).sa_status(), SaStatus::NoRecords);
        assert_eq!(
            MadStatus::INVALID_ATTR_VALUE.code(),
            StatusCode::InvalidAttrValue
        );
        assert_eq!(
            MadStatus::METHOD_ATTR_UNSUPPORTED.code(),
            StatusCode::MethodAttrUnsupported
        );
        assert!(MadStatus::BUSY.busy());
        assert!(MadStatus::REDIRECT.redirect());
        assert_eq!(
            MadStatus(0x0200).name(MgmtClass::SubnAdm),
            "ERR_REQ_INVALID"
        );
        assert_eq!(
            MadStatus(0x0008).name(MgmtClass::ComMgt),
            "MethodUnsupported"
        );
        assert_eq!(MadStatus(0).name(MgmtClass::SubnAdm), "Success");
    }

    // IBA 1 §14.2.1.2: bit 15 of a directed-route SMP's Status is the direction bit D.
    #[test]
    fn directed_route_status() {
        let dr = MgmtClass::SubnDirectedRoute;
        assert_eq!(MadStatus(0x8000).without_direction(dr), MadStatus::SUCCESS);
        assert_eq!(MadStatus(0x8000).name(dr), "Success");
        assert_eq!(MadStatus(0x801c).name(dr), "InvalidAttrValue");
        assert_eq!(
            MadStatus(0x8000).without_direction(MgmtClass::SubnLid),
            MadStatus(0x8000)
        );
        assert_eq!(MadStatus(0x8000).name(MgmtClass::SubnLid), "ClassSpecific");
    }
}
