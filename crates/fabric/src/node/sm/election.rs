//! Master election among SMs by SMInfo (IBA 1 §14.4, §14.4.1), as OpenSM does it
//! (`osm_sminfo_rcv.c`, `osm_sm_state_mgr.c`; docs/OPENSM-NOTES.md):
//!
//! - The SM starts Discovering. Its discovery notes every CA port whose PortInfo:CapabilityMask
//!   has IsSM, other than its own ([`super::discover::Discovered::sm_ports`]); once the discovery
//!   is complete the sweep sends each a SubnGet(SMInfo) before it programs anything.
//! - An answer whose SMState is Master, or Discovering/Standby with a greater SM
//!   ([`is_greater`]: higher Priority, equal Priority and lower GUID), makes this SM Standby: it
//!   programs nothing and polls that SM's SMInfo (a Master's if one answered, else the greatest)
//!   every [`ElectionSettings::polling_timeout`].
//!   NotActive SMs and answers that do not come are ignored. Otherwise this SM is Master and the
//!   sweep goes on.
//! - A Standby SM whose master failed [`ElectionSettings::polling_retries`] polls in a row (no
//!   answer after the transport's retries, or an answer that is not Master) goes back to
//!   Discovering and sweeps: it becomes master if it wins against the SMs it then finds.
//! - What the SM's own port answers SubnGet(SMInfo) with is [`Election::sm_info`]: its GUID,
//!   Priority, current SMState and ActCount (OpenSM answers with the number of QP0 MADs it sent,
//!   `stats.qp0_mads_sent`); the SM application puts it into its HCA's port at every poll.
//!
//! Not done: SubnSet(SMInfo) HANDOVER/ACKNOWLEDGE/DISABLE/STANDBY/DISCOVER (§14.4.1), so a
//! greater SM appearing after a master was elected stays Standby (it finds that master Master),
//! and a Master never polls Standby SMs. SM_Key is always 0.

use ipoib_proto::time::Instant;
use ipoib_wire::smp::{SmInfoRepr, SmState};
use ipoib_wire::Guid;
use std::time::Duration;

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
}

impl Default for ElectionSettings {
    fn default() -> Self {
        ElectionSettings {
            priority: 0,
            polling_timeout: Duration::from_secs(10),
            polling_retries: 4,
        }
    }
}

/// IBA 1 §14.4.1 (OpenSM `osm_sm_is_greater_than`): SM `a` wins over SM `b` if its Priority is
/// higher, or equal with a lower GUID.
pub fn is_greater(a: (u8, Guid), b: (u8, Guid)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 .0 < b.1 .0)
}

/// The election state of one SM. See the module docs.
#[derive(Debug, Clone)]
pub struct Election {
    settings: ElectionSettings,
    state: SmState,
    guid: Guid,
    /// The master polled while Standby: its directed route and GUID.
    master: Option<(Vec<u8>, Guid)>,
    /// The SM to stand by for, of those that answered during the current discovery: its route,
    /// GUID, whether it is Master and its Priority.
    found: Option<(Vec<u8>, Guid, bool, u8)>,
    failed_polls: u32,
    next_poll: Option<Instant>,
    /// Standby to Discovering transitions (the master was lost).
    takeovers: u64,
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
            found: None,
            failed_polls: 0,
            next_poll: None,
            takeovers: 0,
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

    /// Times the SM lost its master and swept again.
    pub fn takeovers(&self) -> u64 {
        self.takeovers
    }

    /// The GUID of the SM polled while Standby.
    pub fn master_guid(&self) -> Option<Guid> {
        self.master.as_ref().map(|m| m.1)
    }

    /// Sets the SM's own port GUID (learnt from its discovery).
    pub fn set_guid(&mut self, guid: Guid) {
        self.guid = guid;
    }

    /// What the SM's port answers SubnGet(SMInfo) with, `act_count` the QP0 MADs sent so far.
    pub fn sm_info(&self, guid: Guid, act_count: u64) -> SmInfoRepr {
        SmInfoRepr {
            guid,
            sm_key: 0,
            act_count: act_count as u32,
            priority: self.settings.priority,
            sm_state: self.state,
        }
    }

    /// True while the discovery's SMInfo answers are to be asked for (the SM is Discovering).
    pub fn is_discovering(&self) -> bool {
        self.state == SmState::Discovering
    }

    /// The answer of the SM at `path` to SubnGet(SMInfo) during discovery (`None`: no answer).
    pub fn discovered(&mut self, path: &[u8], info: Option<&SmInfoRepr>) {
        let Some(i) = info else { return };
        let wins = match i.sm_state {
            SmState::Master => true,
            SmState::Discovering | SmState::Standby => {
                is_greater((i.priority, i.guid), (self.settings.priority, self.guid))
            }
            _ => false,
        };
        // A Master before any other (OpenSM stands by for the master it found), else the
        // greatest.
        let master = i.sm_state == SmState::Master;
        let better = |f: &(Vec<u8>, Guid, bool, u8)| {
            (master && !f.2) || (master == f.2 && is_greater((i.priority, i.guid), (f.3, f.1)))
        };
        if wins && self.found.as_ref().is_none_or(better) {
            self.found = Some((path.to_vec(), i.guid, master, i.priority));
        }
    }

    /// The end of the discovery's SMInfo round at `now`: true if this SM is Master (the sweep
    /// goes on), false if it went Standby.
    pub fn decide(&mut self, now: Instant) -> bool {
        match self.found.take() {
            Some((path, guid, ..)) => {
                self.state = SmState::Standby;
                self.master = Some((path, guid));
                self.failed_polls = 0;
                self.next_poll = Some(now + self.settings.polling_timeout);
                false
            }
            None => {
                self.state = SmState::Master;
                self.master = None;
                self.next_poll = None;
                true
            }
        }
    }

    /// While Standby: the master's directed route if a poll is due at `now`.
    pub fn poll_due(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.state != SmState::Standby || self.next_poll.is_none_or(|t| t > now) {
            return None;
        }
        self.next_poll = None;
        self.master.as_ref().map(|m| m.0.clone())
    }

    /// When the next poll is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_poll.filter(|_| self.state == SmState::Standby)
    }

    /// The master's answer to a poll at `now` (`None`: none came). True when the master is
    /// taken as gone: the SM is Discovering again and must sweep.
    pub fn polled(&mut self, now: Instant, info: Option<&SmInfoRepr>) -> bool {
        if self.state != SmState::Standby {
            return false;
        }
        let alive = info.is_some_and(|i| i.sm_state == SmState::Master);
        if alive {
            self.failed_polls = 0;
        } else {
            self.failed_polls += 1;
        }
        if self.failed_polls >= self.settings.polling_retries.max(1) {
            self.state = SmState::Discovering;
            self.master = None;
            self.next_poll = None;
            self.takeovers += 1;
            return true;
        }
        self.next_poll = Some(now + self.settings.polling_timeout);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn info(guid: u64, priority: u8, state: SmState) -> SmInfoRepr {
        SmInfoRepr {
            guid: Guid(guid),
            sm_key: 0,
            act_count: 0,
            priority,
            sm_state: state,
        }
    }

    // IBA 1 §14.4.1: higher priority wins; equal priority, the lower GUID.
    #[test]
    fn comparison() {
        assert!(is_greater((2, Guid(9)), (1, Guid(1))));
        assert!(!is_greater((1, Guid(1)), (2, Guid(9))));
        assert!(is_greater((1, Guid(1)), (1, Guid(2))));
        assert!(!is_greater((1, Guid(2)), (1, Guid(1))));
        assert!(!is_greater((1, Guid(2)), (1, Guid(2))));
    }

    // OpenSM `osm_sminfo_rcv.c`: Discovering, a Master anywhere or a greater Discovering/Standby
    // SM makes this one Standby; a lesser or NotActive one does not.
    #[test]
    fn discovering_decides() {
        let t = Instant::ZERO;
        let mut e = Election::new(ElectionSettings::default());
        e.set_guid(Guid(5));
        e.discovered(&[1], Some(&info(9, 0, SmState::Discovering)));
        e.discovered(&[2], Some(&info(3, 0, SmState::NotActive)));
        e.discovered(&[3], None);
        assert!(e.decide(t));
        assert_eq!(e.state(), SmState::Master);

        let mut e = Election::new(ElectionSettings::default());
        e.set_guid(Guid(5));
        e.discovered(&[1, 2], Some(&info(9, 0, SmState::Master)));
        assert!(!e.decide(t));
        assert_eq!(
            (e.state(), e.master_guid()),
            (SmState::Standby, Some(Guid(9)))
        );

        let mut e = Election::new(ElectionSettings {
            priority: 3,
            ..ElectionSettings::default()
        });
        e.set_guid(Guid(5));
        e.discovered(&[1], Some(&info(3, 2, SmState::Standby)));
        assert!(e.decide(t), "lower priority loses whatever its GUID");
        e.state = SmState::Discovering;
        e.discovered(&[1], Some(&info(3, 3, SmState::Discovering)));
        assert!(!e.decide(t), "equal priority: the lower GUID wins");

        // Of several, the Master is stood by for, else the greatest.
        let mut e = Election::new(ElectionSettings::default());
        e.set_guid(Guid(5));
        e.discovered(&[1], Some(&info(3, 9, SmState::Standby)));
        e.discovered(&[2], Some(&info(8, 0, SmState::Master)));
        e.discovered(&[3], Some(&info(2, 9, SmState::Discovering)));
        assert!(!e.decide(t));
        assert_eq!(e.master_guid(), Some(Guid(8)));
        e.state = SmState::Discovering;
        e.discovered(&[1], Some(&info(3, 9, SmState::Standby)));
        e.discovered(&[3], Some(&info(2, 9, SmState::Discovering)));
        e.discovered(&[4], Some(&info(1, 7, SmState::Discovering)));
        assert!(!e.decide(t));
        assert_eq!(e.master_guid(), Some(Guid(2)));
    }

    // OpenSM `osm_sm_state_mgr.c`: the master is gone after polling_retry_number failed polls
    // in a row; an answer resets the count.
    #[test]
    fn standby_polls_then_takes_over() {
        let s = ElectionSettings::default();
        let mut e = Election::new(s);
        e.set_guid(Guid(5));
        e.discovered(&[1], Some(&info(1, 0, SmState::Master)));
        assert!(!e.decide(Instant::ZERO));
        let mut now = Instant::ZERO;
        assert_eq!(e.poll_due(now), None, "not before the polling timeout");
        now += s.polling_timeout;
        assert_eq!(e.poll_due(now), Some(vec![1]));
        assert!(!e.polled(now, None));
        now += s.polling_timeout;
        assert!(e.poll_due(now).is_some());
        assert!(
            !e.polled(now, Some(&info(1, 0, SmState::Master))),
            "alive: count reset"
        );
        for i in 0..s.polling_retries {
            now += s.polling_timeout;
            assert!(e.poll_due(now).is_some());
            let gone = e.polled(now, None);
            assert_eq!(gone, i + 1 == s.polling_retries, "poll {i}");
        }
        assert_eq!(e.state(), SmState::Discovering);
        assert_eq!((e.takeovers(), e.poll_timeout()), (1, None));
    }

    proptest! {
        // Any SMInfo answer, in discovery or as a poll, never panics and leaves a valid state.
        #[test]
        fn any_answer_never_panics(
            answers in proptest::collection::vec(
                (any::<u64>(), any::<u8>(), any::<u8>(), any::<bool>(), any::<u32>()), 0..20),
            priority in any::<u8>(),
        ) {
            let mut e = Election::new(ElectionSettings { priority, ..ElectionSettings::default() });
            e.set_guid(Guid(0x100));
            let mut now = Instant::ZERO;
            for (guid, pri, state, poll, act) in answers {
                let i = SmInfoRepr {
                    guid: Guid(guid), sm_key: 0, act_count: act, priority: pri & 0x0f,
                    sm_state: SmState::from(state),
                };
                if poll {
                    now += e.settings().polling_timeout;
                    let _ = e.poll_due(now);
                    if e.polled(now, Some(&i)) {
                        prop_assert_eq!(e.state(), SmState::Discovering);
                    }
                } else if e.is_discovering() {
                    e.discovered(&[1], Some(&i));
                    let _ = e.decide(now);
                }
                let s = e.sm_info(Guid(0x100), 0);
                prop_assert!(s.priority <= 15);
                prop_assert!(matches!(
                    e.state(),
                    SmState::Discovering | SmState::Standby | SmState::Master
                ));
            }
        }
    }
}
