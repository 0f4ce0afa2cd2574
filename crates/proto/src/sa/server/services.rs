//! ServiceRecord (IBA 1 §15.2.5.14): services ports register with Set, find with Get/GetTable
//! and remove with Delete, each kept until its lease runs out; served as OpenSM 3.3.23 serves
//! them (`osm_sa_service_record.c`, `osm_service.c`; docs/OPENSM-SERVICES.md).
//!
//! OpenSM's rules, kept here:
//! - Set and Delete: from a LID no port has, ERR_REQ_INVALID (answered in `handle_request`,
//!   where other requests from such a LID are dropped). With ServiceP_Key in the component mask,
//!   the requester's port must hold that P_Key, and with ServiceGID too, the port of the GID's
//!   GUID must exist and hold it; a P_Key whose low 15 bits are 0 passes (`osm_physp_has_pkey`
//!   "treats it loosely"). Otherwise ERR_REQ_INVALID. Nothing ties the ServiceGID to the requester.
//! - Set needs ServiceID and ServiceGID in the mask (ERR_REQ_INVALID). Without ServiceLease the
//!   lease is infinite (0xFFFFFFFF). The record is kept as sent (name, data, P_Key even when
//!   its bit is clear: no check of the name for a NUL, of the lease for sense). A record with
//!   the same RID (ServiceID, ServiceGID, ServiceP_Key as sent) is replaced in place and its
//!   lease starts again; a new one goes first in the list. The answer is the record sent, its
//!   P_Key 0xFFFF when the mask had no P_Key.
//! - Delete removes the record of the request's RID whatever the mask (none: ERR_NO_RECORDS)
//!   and answers it.
//! - Get/GetTable: the records every masked field of which is equal (ServiceLease and the
//!   reserved bit select nothing), and only those whose P_Key, when valid, the requester holds;
//!   Get with none is ERR_NO_RECORDS, with several ERR_TOO_MANY_RECORDS.
//! - Every answer zeroes ServiceKey unless the request carried the SM_Key (p923: trusted).
//! - A finite lease runs out `max(lease, 1)` seconds after the Set (OpenSM's lease timer counts
//!   at least one second per round); the record is then gone. Time is the `now` of the request
//!   ([`crate::mad_agent::MadAgent`]): an expired record is removed before a request is served.

use super::{Req, SaServer};
use crate::time::Instant;
use ipoib_wire::mad::{MadStatus, Method, SaStatus};
use ipoib_wire::sa::{sr_mask, SaAttribute, ServiceRecordRepr, SERVICE_LEASE_INFINITE};
use ipoib_wire::PKey;
use std::time::Duration;

/// Records kept at most. OpenSM keeps as many as memory holds and answers ERR_NO_RESOURCES
/// when an allocation fails; this SA answers so past this count (docs/OPENSM-SERVICES.md).
pub const MAX_SERVICES: usize = 4096;

/// One registered service.
#[derive(Debug, Clone)]
struct Service {
    rec: ServiceRecordRepr,
    /// When the lease runs out; `None`: never.
    expires: Option<Instant>,
}

/// The registered services, newest first (OpenSM `osm_svcr_insert_to_db` inserts at the head).
#[derive(Debug, Default)]
pub(super) struct Services {
    list: Vec<Service>,
}

impl Services {
    /// Removes the services whose lease ran out by `now`.
    pub(super) fn expire(&mut self, now: Instant) {
        self.list.retain(|s| s.expires.is_none_or(|t| now < t));
    }

    /// The services in list order.
    pub(super) fn records(&self) -> impl Iterator<Item = &ServiceRecordRepr> + '_ {
        self.list.iter().map(|s| &s.rec)
    }

    fn position(&self, q: &ServiceRecordRepr) -> Option<usize> {
        self.list.iter().position(|s| s.rec.rid() == q.rid())
    }
}

/// The port's P_Key table holds `k`'s partition, or `k` is invalid (OpenSM `osm_physp_has_pkey`).
fn has_pkey(pkeys: &[PKey], k: u16) -> bool {
    let k = PKey(k);
    !k.is_valid() || pkeys.iter().any(|p| p.same_partition(k))
}

impl SaServer {
    /// ServiceRecord (OpenSM `osm_sr_rcv_process`); see the module docs.
    pub(super) fn service_record(&mut self, now: Instant, req: &Req<'_>, q: ServiceRecordRepr) {
        self.services.expire(now);
        match req.mad.header.method {
            Method::Get | Method::GetTable => self.service_get(now, req, q),
            Method::Set | Method::Delete if !self.service_allowed(req, &q) => {
                self.respond_sa_error(req, SaStatus::ReqInvalid)
            }
            Method::Set => self.service_set(now, req, q),
            Method::Delete => match self.services.position(&q) {
                None => self.respond_sa_error(req, SaStatus::NoRecords),
                Some(i) => {
                    let s = self.services.list.remove(i);
                    self.service_respond(now, req, vec![s.rec]);
                }
            },
            _ => self.respond_error(req.raw, &req.from, MadStatus::METHOD_ATTR_UNSUPPORTED),
        }
    }

    /// OpenSM `validate_sr`: the P_Key checks of a Set or Delete.
    fn service_allowed(&self, req: &Req<'_>, q: &ServiceRecordRepr) -> bool {
        let mask = req.mad.sa.component_mask;
        if mask & sr_mask::SERVICE_P_KEY == 0 {
            return true;
        }
        let Some(requester) = self.requester(req) else {
            return false;
        };
        if !has_pkey(&requester.pkeys, q.service_p_key) {
            return false;
        }
        if mask & sr_mask::SERVICE_GID == 0 {
            return true;
        }
        // `osm_get_port_by_guid`: the GUID alone names the port (a switch's port 0 too).
        self.endport_index_by_guid(q.service_gid.interface_id())
            .and_then(|i| self.endport(i))
            .is_some_and(|p| has_pkey(&p.pkeys, q.service_p_key))
    }

    fn service_set(&mut self, now: Instant, req: &Req<'_>, mut q: ServiceRecordRepr) {
        let mask = req.mad.sa.component_mask;
        if mask & (sr_mask::SERVICE_ID | sr_mask::SERVICE_GID)
            != sr_mask::SERVICE_ID | sr_mask::SERVICE_GID
        {
            return self.respond_sa_error(req, SaStatus::ReqInvalid);
        }
        if mask & sr_mask::SERVICE_LEASE == 0 {
            q.service_lease = SERVICE_LEASE_INFINITE;
        }
        let expires = (q.service_lease != SERVICE_LEASE_INFINITE)
            .then(|| now.saturating_add(Duration::from_secs(q.service_lease.max(1).into())));
        let s = Service { rec: q, expires };
        match self.services.position(&q) {
            Some(i) => self.services.list[i] = s,
            None if self.services.list.len() >= MAX_SERVICES => {
                self.stats_mut().services_refused += 1;
                return self.respond_sa_error(req, SaStatus::NoResources);
            }
            None => self.services.list.insert(0, s),
        }
        if mask & sr_mask::SERVICE_P_KEY == 0 {
            q.service_p_key = PKey::DEFAULT.0;
        }
        self.service_respond(now, req, vec![q]);
    }

    fn service_get(&mut self, now: Instant, req: &Req<'_>, q: ServiceRecordRepr) {
        let mask = req.mad.sa.component_mask;
        let Some(requester) = self.requester(req) else {
            return;
        };
        let recs = self
            .services
            .records()
            .filter(|r| q.matches(r, mask) && has_pkey(&requester.pkeys, r.service_p_key))
            .copied()
            .collect();
        self.service_respond(now, req, recs);
    }

    /// OpenSM `sr_rcv_respond`: ServiceKey zeroed unless the request is trusted, then
    /// `osm_sa_respond` ([`SaServer::respond_records`]).
    fn service_respond(&mut self, now: Instant, req: &Req<'_>, mut recs: Vec<ServiceRecordRepr>) {
        if req.mad.sa.sm_key == 0 {
            for r in &mut recs {
                r.service_key = [0; 16];
            }
        }
        let recs: Vec<SaAttribute> = recs.into_iter().map(SaAttribute::ServiceRecord).collect();
        // Set and Delete answer their one record in a GetResp / DeleteResp.
        match (req.mad.header.method, recs.first()) {
            (Method::Set | Method::Delete, Some(&r)) => self.respond(req, r),
            _ => self.respond_records(now, req, recs),
        }
    }
}
