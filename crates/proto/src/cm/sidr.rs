//! Service ID resolution for UD services (IBA 1 §12.6 Tables 119-120, SIDR_REQ and SIDR_REP):
//! one request, one reply, no connection. The requester resends until Max CM Retries are spent;
//! the responder asks its user, keeps the request (to drop duplicates) until it answers, and
//! forgets it after a while if it never does.

use super::msg::{self, iba_time};
use super::timer::TimerKey;
use super::{Cm, CmError, CmEvent, CmMessage, SidrId, SIDR_NO_LISTENER};
use crate::mad_agent::MadAddr;
use crate::time::Instant;
use ipoib_wire::cm::{SidrRepRepr, SidrReqRepr, SidrStatus};
use ipoib_wire::QKey;
use std::time::Duration;

#[derive(Debug, Clone)]
pub(super) enum Sidr {
    /// We asked.
    Out {
        to: MadAddr,
        request_id: u32,
        mad: Box<[u8; msg::MAD_LEN]>,
        retries_left: u8,
        wait: Duration,
        deadline: Instant,
    },
    /// We were asked; our user has not answered yet.
    In {
        from: MadAddr,
        tid: u64,
        request_id: u32,
        service_id: u64,
        deadline: Instant,
    },
}

impl Sidr {
    fn deadline(&self) -> Instant {
        match self {
            Sidr::Out { deadline, .. } | Sidr::In { deadline, .. } => *deadline,
        }
    }
}

impl Cm {
    fn sidr_insert(&mut self, id: u32, s: Sidr) {
        self.timers.insert((s.deadline(), TimerKey::Sidr(id)));
        self.sidr.insert(id, s);
    }

    fn sidr_remove(&mut self, id: u32) -> Option<Sidr> {
        let s = self.sidr.remove(&id)?;
        self.timers.remove(&(s.deadline(), TimerKey::Sidr(id)));
        Some(s)
    }

    fn alloc_sidr(&mut self) -> u32 {
        loop {
            let id = self.next_sidr;
            self.next_sidr = self.next_sidr.wrapping_add(1);
            if !self.sidr.contains_key(&id) {
                return id;
            }
        }
    }

    /// Asks the CM at `to` which UD QP serves `service_id` (a SIDR_REQ); the answer comes as
    /// [`CmEvent::SidrReply`] or [`CmEvent::SidrTimedOut`]. Each try waits our own CM response
    /// time plus two lifetimes of `packet_life_time`.
    pub fn sidr_request(
        &mut self,
        now: Instant,
        to: MadAddr,
        service_id: u64,
        packet_life_time: u8,
        private_data: &[u8],
    ) -> Result<SidrId, CmError> {
        let mut req = msg::blank_sidr_req();
        msg::fill(&mut req.private_data, private_data).map_err(CmError::PrivateDataTooLong)?;
        let id = self.alloc_sidr();
        req.request_id = id;
        req.partition_key = to.pkey;
        req.service_id = service_id;
        let mad = msg::cm_mad(self.new_tid(id), &CmMessage::SidrReq(req));
        let wait = iba_time(self.cfg.response_timeout) + iba_time(packet_life_time) * 2;
        self.send(to, mad);
        self.sidr_insert(
            id,
            Sidr::Out {
                to,
                request_id: id,
                mad: Box::new(mad),
                retries_left: self.cfg.max_cm_retries,
                wait,
                deadline: now + wait,
            },
        );
        Ok(SidrId(id))
    }

    /// Answers a [`CmEvent::SidrRequest`] with a SIDR_REP: `status` (0 = success) and, on
    /// success, the QPN and Q_Key of the UD service.
    pub fn sidr_reply(
        &mut self,
        id: SidrId,
        status: SidrStatus,
        qpn: u32,
        qkey: QKey,
        private_data: &[u8],
    ) -> Result<(), CmError> {
        if !matches!(self.sidr.get(&id.0), Some(Sidr::In { .. })) {
            return Err(CmError::Unknown);
        }
        if qpn > 0x00ff_ffff {
            return Err(CmError::Invalid("QPN must fit 24 bits"));
        }
        let mut rep = msg::blank_sidr_rep();
        msg::fill(&mut rep.private_data, private_data).map_err(CmError::PrivateDataTooLong)?;
        let Some(Sidr::In {
            from,
            tid,
            request_id,
            service_id,
            ..
        }) = self.sidr_remove(id.0)
        else {
            return Err(CmError::Unknown);
        };
        rep.request_id = request_id;
        rep.status = status;
        rep.qpn = qpn;
        rep.service_id = service_id;
        rep.qkey = qkey;
        self.send(from, msg::cm_mad(tid, &CmMessage::SidrRep(rep)));
        Ok(())
    }

    /// How long an unanswered SIDR_REQ is kept after it (or its last duplicate) came: twice our
    /// own response time, after which the requester has resent or given up.
    fn sidr_keep(&self) -> Duration {
        iba_time(self.cfg.response_timeout) * 2
    }

    /// A SIDR_REQ: reported to the listener's user, dropped as a duplicate while one from the
    /// same port with the same Request ID waits (Linux keeps a `remote_sidr_table` for this),
    /// answered "unsupported" when nobody listens, or dropped beyond
    /// [`super::CmConfig::max_sidr_requests`] held (or `max_sidr_requests_per_port` from its port).
    pub(super) fn on_sidr_req(&mut self, now: Instant, from: MadAddr, tid: u64, req: SidrReqRepr) {
        let dup = self.sidr.iter().find_map(|(id, s)| match s {
            Sidr::In {
                from: f,
                request_id,
                ..
            } if f.lid == from.lid && *request_id == req.request_id => Some(*id),
            _ => None,
        });
        if let Some(id) = dup {
            // The requester is still waiting: keep the request as long again.
            if let Some(mut s) = self.sidr_remove(id) {
                if let Sidr::In { deadline, .. } = &mut s {
                    *deadline = now + self.sidr_keep();
                }
                self.sidr_insert(id, s);
            }
            return Self::count(&mut self.duplicates, "SIDR_REQ");
        }
        let Some(listen) = self.find_listener(req.service_id) else {
            let mut rep = msg::blank_sidr_rep();
            rep.request_id = req.request_id;
            rep.status = SIDR_NO_LISTENER;
            rep.service_id = req.service_id;
            return self.send(from, msg::cm_mad(tid, &CmMessage::SidrRep(rep)));
        };
        // Held requests are bounded, in all and per requester port; a request beyond is dropped
        // and keeps no record (its requester resends after its wait).
        let (held, from_port) = self.sidr.values().fold((0, 0), |(n, m), s| match s {
            Sidr::In { from: f, .. } => (n + 1, m + usize::from(f.lid == from.lid)),
            Sidr::Out { .. } => (n, m),
        });
        if held >= self.cfg.max_sidr_requests || from_port >= self.cfg.max_sidr_requests_per_port {
            return self.drop_mad("SIDR_REQ beyond the limit");
        }
        let id = self.alloc_sidr();
        let deadline = now + self.sidr_keep();
        self.sidr_insert(
            id,
            Sidr::In {
                from,
                tid,
                request_id: req.request_id,
                service_id: req.service_id,
                deadline,
            },
        );
        self.events.push_back(CmEvent::SidrRequest {
            id: SidrId(id),
            listen,
            req,
            from,
        });
    }

    /// A SIDR_REP: the answer to one of our requests.
    pub(super) fn on_sidr_rep(&mut self, rep: SidrRepRepr) {
        let ours = matches!(
            self.sidr.get(&rep.request_id),
            Some(Sidr::Out { request_id, .. }) if *request_id == rep.request_id
        );
        if !ours {
            return self.drop_mad("SIDR_REP for no request");
        }
        self.sidr_remove(rep.request_id);
        self.events.push_back(CmEvent::SidrReply {
            id: SidrId(rep.request_id),
            rep,
        });
    }

    pub(super) fn sidr_timer(&mut self, now: Instant, id: u32) {
        let Some(s) = self.sidr.get(&id) else {
            return;
        };
        if s.deadline() > now {
            return;
        }
        let Some(s) = self.sidr_remove(id) else {
            return;
        };
        match s {
            Sidr::Out {
                to,
                request_id,
                mad,
                retries_left,
                wait,
                ..
            } if retries_left > 0 => {
                self.send(to, *mad);
                self.sidr_insert(
                    id,
                    Sidr::Out {
                        to,
                        request_id,
                        mad,
                        retries_left: retries_left - 1,
                        wait,
                        deadline: now + wait,
                    },
                );
            }
            Sidr::Out { .. } => self
                .events
                .push_back(CmEvent::SidrTimedOut { id: SidrId(id) }),
            Sidr::In { .. } => self.drop_mad("SIDR_REQ never answered"),
        }
    }
}
