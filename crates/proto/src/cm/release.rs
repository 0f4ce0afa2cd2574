//! Connection release (IBA 1 §12.9, the release state diagram): DREQ and DREP either way, then
//! TimeWait; stale connections released (IBA 1 §12.9.8.3.1); LAP answered with an APR saying
//! alternate paths are not supported (this CM does no path migration).

use super::msg;
use super::state::State;
use super::{Cm, CmError, CmEvent, CmMessage, ConnId};
use crate::mad_agent::MadAddr;
use crate::time::Instant;
use ipoib_wire::cm::{ApStatus, DrepRepr, DreqRepr, LapRepr, RejReason};

impl Cm {
    /// Releases a connection: a DREQ when it is established (IBA 1 §12.6 Table 112; resent until
    /// a DREP comes or Max CM Retries are spent), a REJ (reason 28, consumer reject) when it is
    /// still being set up. [`CmEvent::Disconnected`] follows the DREP (or the last retry).
    pub fn disconnect(
        &mut self,
        now: Instant,
        conn: ConnId,
        private_data: &[u8],
    ) -> Result<(), CmError> {
        let c = self.conns.get(&conn.0).ok_or(CmError::Unknown)?;
        match c.state {
            State::Established => {}
            State::DreqSent | State::TimeWait => return Err(CmError::WrongState(c.state)),
            _ => {
                return self.reject(now, conn, RejReason::ConsumerDefined, &[], private_data);
            }
        }
        let mut dreq = msg::blank_dreq();
        msg::fill(&mut dreq.private_data, private_data).map_err(CmError::PrivateDataTooLong)?;
        dreq.local_comm_id = conn.0;
        dreq.remote_comm_id = c.remote_id;
        dreq.remote_qpn_eecn = c.remote_qpn;
        // A DREQ starts a transaction of our own (Linux `cm_format_dreq` forms the TID from the
        // local communication ID, as for a REQ).
        let mad = msg::cm_mad(self.new_tid(conn.0), &CmMessage::Dreq(dreq));
        let Some(c) = self.conns.get_mut(&conn.0) else {
            return Err(CmError::Unknown);
        };
        c.state = State::DreqSent;
        c.retries_left = c.max_retries;
        c.last = Some(Box::new(mad));
        let (to, wait) = (c.peer, c.answer_wait());
        self.send(to, mad);
        self.arm(conn.0, Some(now + wait));
        Ok(())
    }

    /// Releases connection `old`, found stale (IBA 1 §12.9.8.3.1: DREQ with the remote QPN until
    /// a DREP comes or Max CM Retries are spent). A connection not yet established is left to its
    /// own timer.
    pub(super) fn release_stale(&mut self, now: Instant, old: u32) {
        Self::count(&mut self.dropped, "stale connection found");
        if self.state(ConnId(old)) == Some(State::Established) {
            let _ = self.disconnect(now, ConnId(old), &[]);
        }
    }

    fn drep_for(dreq: &DreqRepr) -> CmMessage {
        let mut drep = msg::blank_drep();
        drep.local_comm_id = dreq.remote_comm_id;
        drep.remote_comm_id = dreq.local_comm_id;
        CmMessage::Drep(drep)
    }

    /// A DREQ (IBA 1 §12.6 Table 112): answered with a DREP in every case where the connection
    /// is or was up, duplicates in TimeWait included; a DREQ for a connection we do not know is
    /// answered too, so that a peer whose DREP was lost can finish (Linux `cm_issue_drep`).
    pub(super) fn on_dreq(&mut self, now: Instant, from: MadAddr, tid: u64, dreq: DreqRepr) {
        let id = dreq.remote_comm_id;
        let known = self
            .conns
            .get(&id)
            .filter(|c| c.remote_id == dreq.local_comm_id);
        let Some(c) = known else {
            Self::count(&mut self.duplicates, "DREQ for unknown ID");
            return self.send(from, msg::cm_mad(tid, &Self::drep_for(&dreq)));
        };
        if c.local_qpn != dreq.remote_qpn_eecn {
            // Linux `cm_dreq_handler` checks the QPN too: the DREQ is for another connection.
            return self.drop_mad("DREQ for another QP");
        }
        let conn = c.id();
        match c.state {
            State::Established | State::RepSent | State::MraRepRcvd | State::DreqSent => {
                let mad = msg::cm_mad(tid, &Self::drep_for(&dreq));
                if let Some(c) = self.conns.get_mut(&id) {
                    c.last = Some(Box::new(mad));
                }
                self.send(from, mad);
                self.events.push_back(CmEvent::Disconnected {
                    conn,
                    by_peer: true,
                    private_data: dreq.private_data.to_vec(),
                });
                self.enter_time_wait(now, id);
            }
            State::TimeWait => {
                // IBA 1 §12.9: a duplicate DREQ in TimeWait gets a DREP again.
                Self::count(&mut self.duplicates, "DREQ");
                self.send(from, msg::cm_mad(tid, &Self::drep_for(&dreq)));
            }
            _ => self.drop_mad("DREQ before establishment"),
        }
    }

    /// A DREP (IBA 1 §12.6 Table 113): our DREQ is answered; TimeWait.
    pub(super) fn on_drep(&mut self, now: Instant, drep: DrepRepr) {
        let id = drep.remote_comm_id;
        let Some(c) = self.conns.get(&id) else {
            return self.drop_mad("DREP for unknown ID");
        };
        if c.remote_id != drep.local_comm_id {
            return self.drop_mad("DREP from another connection");
        }
        if c.state != State::DreqSent {
            return Self::count(&mut self.duplicates, "DREP");
        }
        self.events.push_back(CmEvent::Disconnected {
            conn: c.id(),
            by_peer: false,
            private_data: drep.private_data.to_vec(),
        });
        self.enter_time_wait(now, id);
    }

    /// A LAP (IBA 1 §12.6 Table 115): we load no alternate paths, so the APR says so (AP status
    /// 2, unsupported), or names the communication ID as invalid when we have no such connection
    /// (IBA 1 §12.6 Table 116).
    pub(super) fn on_lap(&mut self, from: MadAddr, tid: u64, lap: LapRepr) {
        let known = self
            .conns
            .get(&lap.remote_comm_id)
            .is_some_and(|c| c.remote_id == lap.local_comm_id && c.state == State::Established);
        let mut apr = msg::blank_apr();
        apr.local_comm_id = if known { lap.remote_comm_id } else { 0 };
        apr.remote_comm_id = lap.local_comm_id;
        apr.ap_status = if known {
            ApStatus::Unsupported
        } else {
            ApStatus::InvalidCommId
        };
        self.send(from, msg::cm_mad(tid, &CmMessage::Apr(apr)));
    }
}
