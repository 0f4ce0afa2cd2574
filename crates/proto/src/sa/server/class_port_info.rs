//! The SA's answer to Get(ClassPortInfo) (IBA 1 §13.4.8.1): what this SA implements, as
//! OpenSM 3.3.23 fills it.

use super::*;

impl SaServer {
    pub(super) fn class_port_info(&mut self, req: &Req<'_>) {
        // Another method: ERR_REQ_INVALID, as OpenSM 3.3.23 answers a GetTable (osm_sa_class_port_info.c
        // "ERR 1403: Unsupported Method"; runtime test `opensm_sa_edges`).
        if req.mad.header.method != Method::Get {
            return self.respond_error(req.raw, &req.from, MadStatus::sa(SaStatus::ReqInvalid));
        }
        // As OpenSM 3.3.23 answers (measured by `opensm_diff::our_class_port_info_matches_opensm`;
        // OpenSM osm_sa_class_port_info.c), limited to what this SA implements:
        // CapabilityMask (IBA 1 §13.4.8.1, Table 193) bit 1 IsNoticeSupported (Get/Set(Notice)
        // through InformInfo and Reports; no Traps, so not bit 0), bit 9 IsUDMulticastSupported,
        // bit 10 IsMultiPathSupported (multipath.rs) and bit 13 IsPortInfoCapMaskMatchSupported
        // (records.rs);
        // CapabilityMask2 bit 12 IsSendOnlyFullMemberSupported (Linux IPoIB joins send-only groups
        // as SendOnlyFullMember only when it is set: `ib_sa_sendonly_fullmem_support`). OpenSM's
        // other bits name what this SA does not serve (MulticastFDBTop, full PortInfoRecords,
        // ...) or serves only in part: CapabilityMask2 bit 5 IsAliasGUIDsSupported, alias GUIDs
        // this SA keeps (alias_guids.rs) but never writes to a port's GUIDInfo nor takes as a
        // PathRecord end (docs/OPENSM-LIMITS.md "Alias GUIDs"). RespTimeValue from the
        // transaction timeout; redirect and trap Q_Keys are QP1's, RedirectQP 1, as OpenSM fills
        // them.
        let cpi = ClassPortInfoRepr {
            base_version: BASE_VERSION,
            class_version: SA_CLASS_VERSION,
            capability_mask: CAP_MASK,
            capability_mask2: CAP_MASK2,
            resp_time_value: resp_time_value(self.cfg.report_timeout),
            redirect_qp: 1,
            redirect_qkey: QKey::GSI,
            trap_qkey: QKey::GSI,
            ..ClassPortInfoRepr::default()
        };
        self.respond(req, SaAttribute::ClassPortInfo(cpi));
    }
}
