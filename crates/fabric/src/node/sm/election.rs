//! Master election and handover among SMs by SMInfo (IBA 1 §14.4, §14.4.1), as OpenSM does it
//! (`osm_sminfo_rcv.c`, `osm_sm_state_mgr.c`, `osm_state_mgr.c`; docs/OPENSM-NOTES.md "SM
//! election"). Sans-IO: the sweep ([`super::sweep`]) sends the SMPs and feeds the answers in.
//!
//! - The SM starts Discovering. Its discovery notes every CA port whose PortInfo:CapabilityMask
//!   has IsSM, other than its own ([`super::discover::Discovered::sm_ports`]); at the end of
//!   every complete discovery (Discovering or Master) the sweep sends each a SubnGet(SMInfo)
//!   carrying this SM's own SMInfo ([`Election::request_info`]) before it programs anything.
//! - Discovering: an answer whose SMState is Master, or Discovering/Standby with a greater SM
//!   ([`is_greater`]: higher Priority, equal Priority and lower GUID), makes this SM Standby
//!   ([`Decision::Standby`]): it programs nothing and polls that SM's SMInfo (a Master's if one
//!   answered, else the greatest) every [`ElectionSettings::polling_timeout`]; it tells the
//!   master it is there with a trap 144 (OpenSM `osm_send_trap144` on entering Standby), on
//!   which the master sweeps. Otherwise it becomes Master, its first master sweep.
//! - Master (OpenSM `osm_state_mgr.c` after a heavy sweep): if a Discovering, Standby or Master SM
//!   that answered is greater, the master hands over ([`Decision::Handover`]): SubnSet(SMInfo)
//!   with AttributeModifier HANDOVER to the greatest, then it is Standby polling it. Else if
//!   another Master answered, it waits for that one to hand over ([`Decision::WaitForHandover`],
//!   IBA 1 C14-60.2.1): it programs nothing this sweep and polls that master, sending it a trap
//!   144 after each answer (OpenSM `smi_rcv_process_get_sm`: the lesser master sweeps on it,
//!   finds this one and hands over, even if the trap that should have made it sweep was lost);
//!   when the polls fail it sweeps again as the only master; a polled master that answers
//!   greater than this one makes it sweep, and hand over.
//! - A SubnSet(SMInfo) to this SM ([`Election::handle_set`], OpenSM
//!   `smi_rcv_process_set_request` and `osm_sm_state_mgr_check_legality`): ACKNOWLEDGE only from
//!   a Standby sender, HANDOVER/DISABLE/STANDBY/DISCOVER only from a Master sender, and only in
//!   the states of IBA 1 Table "SM state transitions" as OpenSM takes them: Discovering:
//!   HANDOVER (sweep again); Standby: HANDOVER (become Master, acknowledge, sweep), DISCOVER
//!   (Discovering, sweep), DISABLE (NotActive), ACKNOWLEDGE (nothing); NotActive: STANDBY
//!   (Standby, polling the sender); Master: HANDOVER (the other master gave up: sweep again, a
//!   first master sweep). Anything else is answered with status 0x001C and changes nothing.
//! - A Standby SM whose master failed [`ElectionSettings::polling_retries`] polls in a row (no
//!   answer after the transport's retries, or an answer that is neither Master nor a greater
//!   Standby) goes back to Discovering and sweeps: it becomes master if it wins against the SMs
//!   it then finds.
//! - The first sweep of a new master sets PortInfo:ClientReregister on every CA port that
//!   supports it ([`Election::take_first_master_sweep`], OpenSM `first_time_master_sweep`,
//!   IBA 1 §14.4.11): the hosts join their multicast groups and subscribe to traps again at the
//!   new master's SA.
//! - SM_Key ([`ElectionSettings::sm_key`], IBA 1 §14.4.1): the SMInfo this SM's port answers
//!   carries it only to a requester that presented it in its request's SMInfo (the HCA's SMA
//!   hides it otherwise, `crate::hw::hca`); an answer carrying another SM_Key than ours while ours
//!   is not 0 is ignored (OpenSM "ERR 2F18 ... Ignoring SMInfo"), so SMs of different keys take
//!   no part in each other's election.
//! - What the SM's own port answers SubnGet(SMInfo) with is [`Election::sm_info`]: its GUID,
//!   SM_Key, Priority, current SMState and ActCount (OpenSM answers with the number of QP0 MADs
//!   it sent, `stats.qp0_mads_sent`); the SM application puts it into its HCA's port at every
//!   poll.

use ipoib_proto::time::Instant;
use ipoib_wire::mad::MadStatus;
use ipoib_wire::smp::{SmInfoRepr, SmState};
use ipoib_wire::Guid;
use std::time::Duration;

/// SubnSet(SMInfo) AttributeModifier values (IBA 1 §14.2.5.13; OpenSM `IB_SMINFO_ATTR_MOD_*`).
pub mod modifier {
    /// The master hands mastership over to the receiver.
    pub const HANDOVER: u32 = 1;
    /// The receiver of a HANDOVER acknowledges it.
    pub const ACKNOWLEDGE: u32 = 2;
    /// The receiver goes NotActive.
    pub const DISABLE: u32 = 3;
    /// The receiver goes Standby.
    pub const STANDBY: u32 = 4;
    /// The receiver goes Discovering.
    pub const DISCOVER: u32 = 5;
}

/// Election settings of one SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElectionSettings {
    /// SMInfo:Priority, 0 (lowest) to 15 (OpenSM `sm_priority`, default 0).
    pub priority: u8,
    /// Time between two polls of the master by a Standby SM (OpenSM `sminfo_polling_timeout`,
    /// default 10 s).
    pub polling_timeout: Duration,
    /// Failed polls in a row after which the master is taken as gone (OpenSM
    /// `polling_retry_number`, default 4).
    pub polling_retries: u32,
    /// SMInfo:SM_Key (OpenSM `sm_key`, default 1).
    pub sm_key: u64,
}

impl Default for ElectionSettings {
    fn default() -> Self {
        ElectionSettings {
            priority: 0,
            polling_timeout: Duration::from_secs(10),
            polling_retries: 4,
            sm_key: 1,
        }
    }
}

/// IBA 1 §14.4.1 (OpenSM `osm_sm_is_greater_than`): SM `a` wins over SM `b` if its Priority is
/// higher, or equal with a lower GUID.
pub fn is_greater(a: (u8, Guid), b: (u8, Guid)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 .0 < b.1 .0)
}

/// What an SMInfo SMP of this SM is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmInfoAsk {
    /// SubnGet at the end of a discovery.
    Discover,
    /// SubnGet polling the master (or the master a handover is awaited from).
    Poll,
    /// SubnSet with this AttributeModifier ([`modifier`]).
    Set(u32),
}

/// What the sweep does at the end of the SMInfo round ([`Election::decide`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// This SM is master: program the subnet.
    Master,
    /// Another SM is master or greater: this one is Standby and programs nothing.
    Standby,
    /// Hand over to the greater SM at this directed route (SubnSet(SMInfo) HANDOVER); this SM is
    /// Standby now.
    Handover(Vec<u8>),
    /// A lesser SM is Master too: program nothing and wait for its HANDOVER.
    WaitForHandover,
}

/// What the SM does after a SubnSet(SMInfo) it accepted ([`Election::handle_set`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetEffect {
    /// Nothing more.
    Nothing,
    /// Sweep again (as soon as the current sweep is over).
    Sweep,
    /// This SM took over by a HANDOVER: acknowledge it to the sender, then sweep at once.
    TakeOver,
}

/// Counters of the election.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ElectionStats {
    /// Standby to Discovering transitions after failed polls (the master was lost).
    pub takeovers: u64,
    /// HANDOVERs this SM sent.
    pub handovers_sent: u64,
    /// HANDOVERs this SM accepted.
    pub handovers_received: u64,
    /// ACKNOWLEDGEs this SM accepted.
    pub acknowledged: u64,
    /// SubnSet(SMInfo) refused (illegal sender state or transition).
    pub sets_refused: u64,
    /// SMInfo answers ignored for an SM_Key not ours.
    pub foreign_keys: u64,
}

/// The election state of one SM. See the module docs.
#[derive(Debug, Clone)]
pub struct Election {
    settings: ElectionSettings,
    state: SmState,
    guid: Guid,
    /// The SM polled: the master while Standby; a remote master a handover is awaited from
    /// while Master (OpenSM `polling_sm_guid`). Its directed route and GUID.
    master: Option<(Vec<u8>, Guid)>,
    /// The SMInfo answers of the current discovery, by route.
    answers: Vec<(Vec<u8>, SmInfoRepr)>,
    failed_polls: u32,
    next_poll: Option<Instant>,
    /// The next sweep is a new master's first (OpenSM `first_time_master_sweep`).
    first_master_sweep: bool,
    /// The master is to be told of this Standby SM (trap 144, [`Election::take_notify`]).
    notify: bool,
    stats: ElectionStats,
}

impl Election {
    /// An SM with `settings`, Discovering.
    pub fn new(settings: ElectionSettings) -> Election {
        Election {
            settings: ElectionSettings {
                priority: settings.priority.min(15),
                ..settings
            },
            state: SmState::Discovering,
            guid: Guid(0),
            master: None,
            answers: Vec::new(),
            failed_polls: 0,
            next_poll: None,
            first_master_sweep: false,
            notify: false,
            stats: ElectionStats::default(),
        }
    }

    /// The settings.
    pub fn settings(&self) -> ElectionSettings {
        self.settings
    }

    /// SMInfo:SMState now.
    pub fn state(&self) -> SmState {
        self.state
    }

    /// Counters.
    pub fn stats(&self) -> ElectionStats {
        self.stats
    }

    /// Times the SM lost its master and swept again.
    pub fn takeovers(&self) -> u64 {
        self.stats.takeovers
    }

    /// The GUID of the SM polled: the master while Standby, the master a handover is awaited
    /// from while Master.
    pub fn master_guid(&self) -> Option<Guid> {
        self.master.as_ref().map(|m| m.1)
    }

    /// Sets the SM's own port GUID (learnt from its discovery).
    pub fn set_guid(&mut self, guid: Guid) {
        self.guid = guid;
    }

    /// The SM's own port GUID as set.
    pub fn guid(&self) -> Guid {
        self.guid
    }

    /// What the SM's port answers SubnGet(SMInfo) with, `act_count` the QP0 MADs sent so far.
    pub fn sm_info(&self, guid: Guid, act_count: u64) -> SmInfoRepr {
        SmInfoRepr {
            guid,
            sm_key: self.settings.sm_key,
            act_count: act_count as u32,
            priority: self.settings.priority,
            sm_state: self.state,
        }
    }

    /// The SMInfo this SM sends in its own SubnGet/SubnSet(SMInfo) requests: [`Election::sm_info`]
    /// with the SM_Key, which authenticates it to SMs of the same key (module docs). OpenSM puts
    /// its real SM_Key only into a HANDOVER to a Master (`state_mgr_send_handover`); ours go only
    /// to SMs found by its own discovery.
    pub fn request_info(&self, act_count: u64) -> SmInfoRepr {
        self.sm_info(self.guid, act_count)
    }

    /// True while the SM's discoveries are followed by an SMInfo round and a decision: it is
    /// Discovering or Master.
    pub fn is_deciding(&self) -> bool {
        matches!(self.state, SmState::Discovering | SmState::Master)
    }

    /// True while Discovering.
    pub fn is_discovering(&self) -> bool {
        self.state == SmState::Discovering
    }

    /// Takes the flag of a new master's first sweep: ClientReregister goes to every CA port in
    /// this sweep (module docs).
    pub fn take_first_master_sweep(&mut self) -> bool {
        std::mem::take(&mut self.first_master_sweep)
    }

    /// Takes the flag that the polled master is to be told of this SM by a trap 144: on
    /// entering Standby (OpenSM `osm_state_mgr.c`), and after a poll a master answered while
    /// this SM is greater, Standby or Master awaiting the polled master's HANDOVER (OpenSM
    /// `smi_rcv_process_get_sm` sends `TRAP_144_MASK_SM_PRIORITY_CHANGE` again, so that a lost
    /// trap does not leave the lesser SM master).
    pub fn take_notify(&mut self) -> bool {
        std::mem::take(&mut self.notify)
    }

    /// IBA 1 §14.4.1 (OpenSM "ERR 2F18"): an answer is taken unless it carries an SM_Key other
    /// than ours while ours is not 0.
    fn key_ok(&mut self, i: &SmInfoRepr) -> bool {
        let ok = self.settings.sm_key == 0 || i.sm_key == self.settings.sm_key;
        if !ok {
            self.stats.foreign_keys += 1;
        }
        ok
    }

    /// The answer of the SM at `path` to SubnGet(SMInfo) after a discovery (`None`: no answer).
    pub fn discovered(&mut self, path: &[u8], info: Option<&SmInfoRepr>) {
        let Some(i) = info else { return };
        if !self.key_ok(i) || i.guid == self.guid {
            return;
        }
        self.answers.push((path.to_vec(), *i));
    }

    /// The end of the discovery's SMInfo round at `now` (module docs).
    pub fn decide(&mut self, now: Instant) -> Decision {
        let me = (self.settings.priority, self.guid);
        let answers = std::mem::take(&mut self.answers);
        let active = |i: &SmInfoRepr| {
            matches!(
                i.sm_state,
                SmState::Discovering | SmState::Standby | SmState::Master
            )
        };
        // The greatest of those that answered (a Master before any other while Discovering,
        // as OpenSM stands by for the master it found).
        let mut best: Option<&(Vec<u8>, SmInfoRepr)> = None;
        for a in answers.iter().filter(|a| active(&a.1)) {
            let i = &a.1;
            let master_first = self.state == SmState::Discovering;
            let better = best.is_none_or(|b| {
                let (bm, im) = (
                    b.1.sm_state == SmState::Master,
                    i.sm_state == SmState::Master,
                );
                if master_first && bm != im {
                    im
                } else {
                    is_greater((i.priority, i.guid), (b.1.priority, b.1.guid))
                }
            });
            if better {
                best = Some(a);
            }
        }
        let wins = |i: &SmInfoRepr| is_greater((i.priority, i.guid), me);
        match self.state {
            SmState::Discovering => {
                let stand_by = best
                    .filter(|b| b.1.sm_state == SmState::Master || wins(&b.1))
                    .map(|b| (b.0.clone(), b.1.guid));
                match stand_by {
                    Some(m) => {
                        self.stand_by(now, m);
                        self.notify = true;
                        Decision::Standby
                    }
                    None => {
                        self.state = SmState::Master;
                        self.master = None;
                        self.next_poll = None;
                        self.first_master_sweep = true;
                        Decision::Master
                    }
                }
            }
            SmState::Master => {
                if let Some(b) = best.filter(|b| wins(&b.1)) {
                    let path = b.0.clone();
                    self.stats.handovers_sent += 1;
                    self.stand_by(now, (path.clone(), b.1.guid));
                    return Decision::Handover(path);
                }
                let other = answers
                    .iter()
                    .find(|a| a.1.sm_state == SmState::Master)
                    .map(|a| (a.0.clone(), a.1.guid));
                match other {
                    Some(m) => {
                        self.master = Some(m);
                        self.failed_polls = 0;
                        self.next_poll = Some(now + self.settings.polling_timeout);
                        Decision::WaitForHandover
                    }
                    None => {
                        self.master = None;
                        self.next_poll = None;
                        Decision::Master
                    }
                }
            }
            _ => Decision::Standby,
        }
    }

    fn stand_by(&mut self, now: Instant, master: (Vec<u8>, Guid)) {
        self.state = SmState::Standby;
        self.master = Some(master);
        self.failed_polls = 0;
        self.next_poll = Some(now + self.settings.polling_timeout);
    }

    /// The master's directed route if a poll is due at `now` (Standby, or Master awaiting a
    /// handover).
    pub fn poll_due(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.next_poll.is_none_or(|t| t > now) || !self.is_polling() {
            return None;
        }
        self.next_poll = None;
        self.master.as_ref().map(|m| m.0.clone())
    }

    fn is_polling(&self) -> bool {
        match self.state {
            SmState::Standby => true,
            SmState::Master => self.master.is_some(),
            _ => false,
        }
    }

    /// When the next poll is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_poll.filter(|_| self.is_polling())
    }

    /// The polled SM's answer at `now` (`None`: none came). True when the SM must sweep: the
    /// polled SM is taken as gone (Standby: Discovering again; Master: the only master, a first
    /// master sweep), or a master awaiting a HANDOVER found the polled master greater (its sweep
    /// hands over to it, OpenSM `force_heavy_sweep`).
    pub fn polled(&mut self, now: Instant, info: Option<&SmInfoRepr>) -> bool {
        if !self.is_polling() {
            return false;
        }
        let me = (self.settings.priority, self.guid);
        let info = info.filter(|i| self.settings.sm_key == 0 || i.sm_key == self.settings.sm_key);
        // OpenSM `smi_rcv_process_get_sm`: a Master answer means alive; a Standby answer from the
        // SM polled while Standby only when it is greater than this one.
        let alive = info.is_some_and(|i| {
            i.sm_state == SmState::Master
                || (self.state == SmState::Standby
                    && i.sm_state == SmState::Standby
                    && is_greater((i.priority, i.guid), me))
        });
        if alive {
            self.failed_polls = 0;
            // OpenSM `smi_rcv_process_get_sm`: a Master answer that is not greater than this SM
            // gets a trap 144 again, from a Standby as from a master awaiting its HANDOVER (the
            // first may have been lost: a lesser master would never hand over); a master
            // awaiting the HANDOVER of a greater one sweeps instead, and hands over to it.
            let master = info.filter(|i| i.sm_state == SmState::Master);
            let greater = master.is_some_and(|i| is_greater((i.priority, i.guid), me));
            self.notify |= master.is_some() && !greater;
            if greater && self.state == SmState::Master {
                self.next_poll = Some(now + self.settings.polling_timeout);
                return true;
            }
        } else {
            self.failed_polls += 1;
        }
        if self.failed_polls >= self.settings.polling_retries.max(1) {
            self.master = None;
            self.next_poll = None;
            if self.state == SmState::Standby {
                self.state = SmState::Discovering;
                self.stats.takeovers += 1;
            } else {
                self.first_master_sweep = true;
            }
            return true;
        }
        self.next_poll = Some(now + self.settings.polling_timeout);
        false
    }

    /// A SubnSet(SMInfo) with AttributeModifier `modifier` and the sender's SMInfo `sender`,
    /// whose directed route back is `back` (`None`: LID routed), at `now`: the status to answer
    /// with and what to do (module docs; status 0x001C, IBA 1 §13.4.7, when refused).
    pub fn handle_set(
        &mut self,
        now: Instant,
        modifier: u32,
        sender: &SmInfoRepr,
        back: Option<&[u8]>,
    ) -> (MadStatus, SetEffect) {
        use modifier::*;
        let from = sender.sm_state;
        let legal_sender = match modifier {
            ACKNOWLEDGE => from == SmState::Standby,
            HANDOVER | DISABLE | STANDBY | DISCOVER => from == SmState::Master,
            _ => false,
        };
        let refuse = (MadStatus::INVALID_ATTR_VALUE, SetEffect::Nothing);
        if !legal_sender || !self.key_ok(sender) {
            self.stats.sets_refused += 1;
            return refuse;
        }
        let ok = |e| (MadStatus::SUCCESS, e);
        match (self.state, modifier) {
            (SmState::Discovering, HANDOVER) => ok(SetEffect::Sweep),
            (SmState::Standby, HANDOVER) => {
                self.stats.handovers_received += 1;
                self.state = SmState::Master;
                self.master = None;
                self.next_poll = None;
                self.first_master_sweep = true;
                ok(SetEffect::TakeOver)
            }
            (SmState::Standby, DISCOVER) => {
                self.state = SmState::Discovering;
                self.master = None;
                self.next_poll = None;
                ok(SetEffect::Sweep)
            }
            (SmState::Standby, DISABLE) => {
                self.state = SmState::NotActive;
                self.master = None;
                self.next_poll = None;
                ok(SetEffect::Nothing)
            }
            (SmState::Standby, ACKNOWLEDGE) => {
                self.stats.acknowledged += 1;
                ok(SetEffect::Nothing)
            }
            (SmState::NotActive, STANDBY) => match back {
                Some(path) => {
                    self.stand_by(now, (path.to_vec(), sender.guid));
                    ok(SetEffect::Nothing)
                }
                None => {
                    self.stats.sets_refused += 1;
                    refuse
                }
            },
            (SmState::Master, HANDOVER) => {
                self.stats.handovers_received += 1;
                self.master = None;
                self.next_poll = None;
                self.first_master_sweep = true;
                ok(SetEffect::Sweep)
            }
            _ => {
                self.stats.sets_refused += 1;
                refuse
            }
        }
    }
}

#[cfg(test)]
#[path = "election_tests.rs"]
mod tests;
