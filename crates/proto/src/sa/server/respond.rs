//! How the SA answers (IBA 1 §15.2.1, §15.4): one MAD, an error as OpenSM's `osm_sa_send_error`,
//! or a table, over RMPP (IBA 1 §13.6) when it does not fit one MAD; and the RMPP transfers that
//! are open, bounded in number and bytes ([`SaServerConfig::max_rmpp_transfers`],
//! [`SaServerConfig::max_rmpp_bytes`]).

use super::*;

impl SaServer {
    pub(super) fn reply_addr(from: &MadAddr) -> MadAddr {
        MadAddr {
            qkey: QKey::GSI,
            ..*from
        }
    }

    /// Sends a single-MAD response. Its AttributeOffset is the record's length in 8-byte words
    /// (IBA 1 §15.2.1.1), as OpenSM 3.3.23's `osm_sa_respond` fills it for every answer with a
    /// record, a GetResp of one record included (osm_sa.c; measured by runtime test
    /// `opensm_diff::our_subnet_records_match_opensm`); ClassPortInfo, no record, keeps 0.
    pub(super) fn respond(&mut self, req: &Req<'_>, attribute: SaAttribute) {
        let mut resp = req.mad.response(MadStatus::SUCCESS, attribute);
        let id = req.mad.header.attribute_id;
        if id != attr::CLASS_PORT_INFO {
            resp.sa.attribute_offset = record_len(id).map_or(0, attribute_offset_for);
        }
        self.push_out(MadOut {
            to: Self::reply_addr(&req.from),
            mad: resp.to_bytes().to_vec(),
        });
    }

    /// Sends an error response as OpenSM's `osm_sa_send_error` does: the request copied back with
    /// the status set, the method turned into its response (Set -> GetResp, GetTable ->
    /// GetTableResp with AttributeOffset 0), SM_Key zeroed.
    pub(super) fn respond_error(&mut self, raw: &[u8], from: &MadAddr, status: MadStatus) {
        let mut mad = [0u8; MAD_LEN];
        let n = raw.len().min(MAD_LEN);
        mad[..n].copy_from_slice(&raw[..n]);
        if let Ok(h) = MadHeaderRepr::parse_bytes(&mad) {
            let method = h.method.response().unwrap_or(Method::GetResp);
            h.response(method, status).emit(&mut mad);
            mad[36..44].fill(0);
            if method == Method::GetTableResp {
                mad[44..46].fill(0);
            }
        }
        self.push_out(MadOut {
            to: Self::reply_addr(from),
            mad: mad.to_vec(),
        });
    }

    pub(super) fn respond_sa_error(&mut self, req: &Req<'_>, s: SaStatus) {
        let raw = req.raw;
        self.respond_error(raw, &req.from, MadStatus::sa(s));
    }

    /// Answers a Get or GetTable with `records` as OpenSM's `osm_sa_respond`: Get with none is
    /// ERR_NO_RECORDS, Get with several ERR_TOO_MANY_RECORDS; GetTable returns them all, over RMPP
    /// when they do not fit one MAD.
    pub(super) fn respond_records(
        &mut self,
        now: Instant,
        req: &Req<'_>,
        records: Vec<SaAttribute>,
    ) {
        let id = req.mad.header.attribute_id;
        if req.mad.header.method == Method::Get {
            match records.len() {
                0 => return self.respond_sa_error(req, SaStatus::NoRecords),
                1 => return self.respond(req, records[0]),
                _ => return self.respond_sa_error(req, SaStatus::TooManyRecords),
            }
        }
        let Some(len) = record_len(id) else {
            return self.respond_error(req.raw, &req.from, MadStatus::METHOD_ATTR_UNSUPPORTED);
        };
        let stride = usize::from(attribute_offset_for(len)) * 8;
        let mut data = vec![0u8; stride * records.len()];
        if emit_records(id, &records, &mut data).is_err() {
            self.drop_mad("record encoding");
            return;
        }
        // A GetMulti (MultiPathRecord, `multipath.rs`) gets a GetMultiResp.
        let method = if req.mad.header.method == Method::GetMulti {
            Method::GetMultiResp
        } else {
            Method::GetTableResp
        };
        let header = req.mad.header.response(method, MadStatus::SUCCESS);
        let sa = SaHeaderRepr {
            sm_key: 0,
            attribute_offset: if records.is_empty() {
                0
            } else {
                (stride / 8) as u16
            },
            component_mask: req.mad.sa.component_mask,
        };
        let key = (req.from.lid, req.mad.header.transaction_id);
        let nseg = data.len().div_ceil(ipoib_wire::sa::SA_DATA_LEN);
        if nseg > 1 {
            // The request resent while its transfer runs: that transfer goes on and the new
            // answer is dropped, as Linux refuses a second response of the same TID to the same
            // destination while the first is being sent (drivers/infiniband/core/user_mad.c
            // `is_duplicate`; OpenSM's send then fails, "ERR 4C04").
            if self.transfers.contains_key(&key) {
                return self.drop_mad("answer to a request whose RMPP transfer runs");
            }
            let (open, held) = self.rmpp_open();
            if open >= self.cfg.max_rmpp_transfers
                || held.saturating_add(nseg * MAD_LEN) > self.cfg.max_rmpp_bytes
            {
                self.stats.rmpp_refused += 1;
                return self.respond_sa_error(req, SaStatus::NoResources);
            }
        }
        let segments = segment_table(header, sa, &data);
        let to = Self::reply_addr(&req.from);
        if segments.len() == 1 {
            self.push_out(MadOut {
                to,
                mad: segments[0].to_vec(),
            });
            return;
        }
        self.stats.rmpp_started += 1;
        let tx = RmppSender::new(
            now,
            to,
            segments,
            self.cfg.rmpp_timeout,
            self.cfg.rmpp_tries,
        );
        self.transfers.insert(key, tx);
        self.send_window(key, now);
    }

    /// Sends the segments the window of transfer `key` lets go at `now` (the first window, one
    /// moved on by an ACK, a resend after a timeout).
    pub(super) fn send_window(&mut self, key: (u16, u64), now: Instant) {
        let Some(tx) = self.transfers.get_mut(&key) else {
            return;
        };
        let to = tx.to;
        for s in tx.poll_segments(now) {
            self.push_out(MadOut {
                to,
                mad: s.to_vec(),
            });
        }
    }

    /// The RMPP transfers open now and the bytes of segments they hold together (bounded by
    /// [`SaServerConfig::max_rmpp_transfers`] and [`SaServerConfig::max_rmpp_bytes`]).
    pub fn rmpp_open(&self) -> (usize, usize) {
        let held = self.transfers.values().map(RmppSender::bytes).sum();
        (self.transfers.len(), held)
    }

    pub(super) fn rmpp_control(
        &mut self,
        now: Instant,
        from: &MadAddr,
        h: &MadHeaderRepr,
        r: &RmppRepr,
        raw: &[u8],
    ) {
        let key = (from.lid, h.transaction_id);
        let Some(tx) = self.transfers.get_mut(&key) else {
            self.drop_mad("RMPP control for unknown transfer");
            return;
        };
        let state = match r.rmpp_type {
            RmppType::Ack => tx.on_ack(now, r.segment_number(), r.new_window_last()),
            _ => SendState::Failed,
        };
        match state {
            SendState::Active => self.send_window(key, now),
            SendState::Done => {
                self.transfers.remove(&key);
                self.stats.rmpp_done += 1;
            }
            SendState::Failed => {
                self.transfers.remove(&key);
                self.stats.rmpp_failed += 1;
            }
            SendState::Abort(status) => {
                let to = tx.to;
                self.transfers.remove(&key);
                self.stats.rmpp_failed += 1;
                if let Some(mad) = abort_for(raw, status) {
                    self.push_out(MadOut {
                        to,
                        mad: mad.to_vec(),
                    });
                }
            }
        }
    }
}
