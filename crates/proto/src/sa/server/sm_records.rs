//! The records of the SA's own state: SMInfoRecord (IBA 1 §15.2.5.10), the subnet's SMs, and
//! InformInfoRecord (§15.2.5.12), the subscriptions ports made with Set(InformInfo)
//! ([`super::inform`]), answered as OpenSM answers them (`osm_sa_sminfo_record.c`,
//! `osm_sa_informinfo.c`; docs/OPENSM-NOTES.md "Subnet records").
//!
//! Both are read-only: Get and GetTable only, as [`SaServer::get_or_table`].

use super::records::share_pkey;
use super::{Req, SaServer};
use crate::time::Instant;
use ipoib_wire::sa::{iir_mask, smir_mask, InformInfoRecordRepr, SaAttribute, SmInfoRecordRepr};

impl SaServer {
    /// SMInfoRecord (OpenSM `osm_smir_rcv_process`): one record per SM of
    /// [`crate::subnet::SubnetModel::sms`] (the master first) whose port the model knows, LID its
    /// port's base LID; LID in the mask names the SM by that LID (none: no records), GUID, Priority
    /// and SMState select by equality (the other fields select nothing, as in OpenSM). SM_Key reads
    /// 0 whatever the request carries (OpenSM never copies it). A requester that shares no P_Key
    /// with the master's port gets no answer at all when the master's record is asked for (OpenSM
    /// "ERR 2805: Cannot get SMInfo record due to pkey violation", then no response).
    pub(super) fn sm_info_record(&mut self, now: Instant, req: &Req<'_>, q: SmInfoRecordRepr) {
        if !self.get_or_table(req) {
            return;
        }
        let mask = req.mad.sa.component_mask;
        let model = self.model();
        let Some(requester) = self.requester(req) else {
            return;
        };
        let mut recs = Vec::new();
        for (n, smi) in model.sms.iter().enumerate() {
            let Some((i, port)) = model
                .ports
                .iter()
                .enumerate()
                .find(|(_, p)| p.port_guid == smi.guid && p.lid != 0)
            else {
                continue;
            };
            if mask & smir_mask::LID != 0 && port.lid != q.lid {
                continue;
            }
            if n == 0 && !share_pkey(&requester.pkeys, &port.pkeys, i == req.port) {
                self.drop_mad("SMInfoRecord: requester shares no P_Key with the SM");
                return;
            }
            let qi = &q.sm_info;
            let ok = [
                (smir_mask::GUID, smi.guid == qi.guid),
                (smir_mask::PRIORITY, smi.priority == qi.priority),
                (smir_mask::SM_STATE, smi.sm_state == qi.sm_state),
            ]
            .iter()
            .all(|&(bit, ok)| mask & bit == 0 || ok);
            if ok {
                let mut sm_info = *smi;
                sm_info.sm_key = 0;
                recs.push(SaAttribute::SmInfoRecord(SmInfoRecordRepr {
                    lid: port.lid,
                    sm_info,
                }));
            }
        }
        self.respond_records(now, req, recs);
    }

    /// InformInfoRecord (OpenSM `infr_rcv_process_get_method`): one record per subscription, in
    /// the order they were made, SubscriberGID the GID of the port the Set came from, Enum 0
    /// (OpenSM: "enum is always 0"), the InformInfo as kept (its QPN the subscriber's QP).
    /// SubscriberGID and Enum select by equality, the InformInfo's fields select nothing (as in
    /// OpenSM); only subscriptions of ports that share a P_Key with the requester are listed. No
    /// SM_Key is needed: OpenSM checks none for this record (a wrong non-zero one is refused for
    /// every attribute, [`SaServer`]'s request handling).
    pub(super) fn inform_info_record(
        &mut self,
        now: Instant,
        req: &Req<'_>,
        q: InformInfoRecordRepr,
    ) {
        if !self.get_or_table(req) {
            return;
        }
        let mask = req.mad.sa.component_mask;
        let model = self.model();
        let Some(requester) = self.requester(req) else {
            return;
        };
        let mut recs = Vec::new();
        for s in &self.informs.subs {
            let Some((i, port)) = model.port_by_lid(s.to.lid) else {
                continue;
            };
            let r = InformInfoRecordRepr {
                subscriber_gid: model.gid(port),
                subscriber_enum: 0,
                inform_info: s.info,
            };
            let ok = [
                (
                    iir_mask::SUBSCRIBER_GID,
                    r.subscriber_gid == q.subscriber_gid,
                ),
                (iir_mask::ENUM, r.subscriber_enum == q.subscriber_enum),
            ]
            .iter()
            .all(|&(bit, ok)| mask & bit == 0 || ok);
            if ok && share_pkey(&requester.pkeys, &port.pkeys, i == req.port) {
                recs.push(SaAttribute::InformInfoRecord(r));
            }
        }
        self.respond_records(now, req, recs);
    }
}
