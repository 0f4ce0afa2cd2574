//! Tests of [`super::Election`]: the decisions of IBA 1 §14.4 as OpenSM takes them.

use super::*;
use proptest::prelude::*;

/// An SMInfo answer with the default SM_Key.
fn info(guid: u64, priority: u8, state: SmState) -> SmInfoRepr {
    SmInfoRepr {
        guid: Guid(guid),
        sm_key: ElectionSettings::default().sm_key,
        act_count: 0,
        priority,
        sm_state: state,
    }
}

/// An SM of GUID 5 and `priority`, Discovering.
fn sm(priority: u8) -> Election {
    let mut e = Election::new(ElectionSettings {
        priority,
        ..ElectionSettings::default()
    });
    e.set_guid(Guid(5));
    e
}

/// An SM of GUID 5 and `priority` that became Master.
fn master(priority: u8) -> Election {
    let mut e = sm(priority);
    assert_eq!(e.decide(Instant::ZERO), Decision::Master);
    assert!(e.take_first_master_sweep(), "a new master's first sweep");
    e
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
    let mut e = sm(0);
    e.discovered(&[1], Some(&info(9, 0, SmState::Discovering)));
    e.discovered(&[2], Some(&info(3, 0, SmState::NotActive)));
    e.discovered(&[3], None);
    assert_eq!(e.decide(t), Decision::Master);
    assert_eq!(e.state(), SmState::Master);

    let mut e = sm(0);
    e.discovered(&[1, 2], Some(&info(9, 0, SmState::Master)));
    assert_eq!(e.decide(t), Decision::Standby);
    assert_eq!(
        (e.state(), e.master_guid()),
        (SmState::Standby, Some(Guid(9)))
    );
    assert!(!e.take_first_master_sweep());

    let mut e = sm(3);
    e.discovered(&[1], Some(&info(3, 2, SmState::Standby)));
    assert_eq!(
        e.decide(t),
        Decision::Master,
        "lower priority loses whatever its GUID"
    );
    let mut e = sm(3);
    e.discovered(&[1], Some(&info(3, 3, SmState::Discovering)));
    assert_eq!(
        e.decide(t),
        Decision::Standby,
        "equal priority: the lower GUID wins"
    );

    // Of several, the Master is stood by for, else the greatest.
    let mut e = sm(0);
    e.discovered(&[1], Some(&info(3, 9, SmState::Standby)));
    e.discovered(&[2], Some(&info(8, 0, SmState::Master)));
    e.discovered(&[3], Some(&info(2, 9, SmState::Discovering)));
    assert_eq!(e.decide(t), Decision::Standby);
    assert_eq!(e.master_guid(), Some(Guid(8)));
    let mut e = sm(0);
    e.discovered(&[1], Some(&info(3, 9, SmState::Standby)));
    e.discovered(&[3], Some(&info(2, 9, SmState::Discovering)));
    e.discovered(&[4], Some(&info(1, 7, SmState::Discovering)));
    assert_eq!(e.decide(t), Decision::Standby);
    assert_eq!(e.master_guid(), Some(Guid(2)));
}

// OpenSM `osm_sm_state_mgr.c`: the master is gone after polling_retry_number failed polls
// in a row; an answer resets the count.
#[test]
fn standby_polls_then_takes_over() {
    let s = ElectionSettings::default();
    let mut e = sm(0);
    e.discovered(&[1], Some(&info(1, 0, SmState::Master)));
    assert_eq!(e.decide(Instant::ZERO), Decision::Standby);
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

// OpenSM `osm_state_mgr.c`, `smi_rcv_process_get_sm`: a new Standby tells its master (trap 144);
// a Standby greater than the master it polls tells it again after every answered poll.
#[test]
fn standby_tells_a_lesser_master() {
    let s = ElectionSettings::default();
    let mut e = sm(5);
    e.discovered(&[1], Some(&info(1, 0, SmState::Master)));
    assert_eq!(e.decide(Instant::ZERO), Decision::Standby);
    assert!(e.take_notify(), "entering Standby");
    assert!(!e.take_notify());
    let now = Instant::ZERO + s.polling_timeout;
    assert!(e.poll_due(now).is_some());
    assert!(!e.polled(now, Some(&info(1, 0, SmState::Master))));
    assert!(e.take_notify(), "the master is lesser: again");
    let mut e = sm(0);
    e.discovered(&[1], Some(&info(1, 3, SmState::Master)));
    assert_eq!(e.decide(Instant::ZERO), Decision::Standby);
    assert!(e.take_notify());
    assert!(!e.polled(now, Some(&info(1, 3, SmState::Master))));
    assert!(!e.take_notify(), "a greater master is not told again");
}

// OpenSM `osm_state_mgr.c` after a heavy sweep as master: a greater SM found (Standby here) is
// handed mastership over (SubnSet(SMInfo) HANDOVER) and this one is Standby, polling it; a
// lesser Standby changes nothing.
#[test]
fn master_hands_over_to_a_greater_sm() {
    let t = Instant::ZERO;
    let mut e = master(0);
    e.discovered(&[1], Some(&info(9, 0, SmState::Standby)));
    assert_eq!(e.decide(t), Decision::Master, "a lesser Standby");
    assert_eq!(e.poll_timeout(), None);

    e.discovered(&[1], Some(&info(9, 0, SmState::Standby)));
    e.discovered(&[2, 3], Some(&info(7, 4, SmState::Standby)));
    e.discovered(&[4], Some(&info(2, 9, SmState::NotActive)));
    assert_eq!(e.decide(t), Decision::Handover(vec![2, 3]));
    assert_eq!(
        (e.state(), e.master_guid(), e.stats().handovers_sent),
        (SmState::Standby, Some(Guid(7)), 1)
    );
    assert!(e.poll_timeout().is_some(), "it polls the new master");
    assert!(!e.take_first_master_sweep());
}

// OpenSM `osm_state_mgr.c` (IBA 1 C14-60.2.1): a master that finds a lesser Master waits for its
// HANDOVER, programming nothing and polling it; a greater Master is handed over to; when the
// waited-for master stops answering this one sweeps as the only master.
#[test]
fn master_meets_another_master() {
    let s = ElectionSettings::default();
    let mut e = master(0);
    e.discovered(&[1], Some(&info(9, 0, SmState::Master)));
    assert_eq!(e.decide(Instant::ZERO), Decision::WaitForHandover);
    assert_eq!(
        (e.state(), e.master_guid()),
        (SmState::Master, Some(Guid(9)))
    );
    let mut now = Instant::ZERO + s.polling_timeout;
    assert_eq!(e.poll_due(now), Some(vec![1]));
    assert!(!e.take_notify(), "no trap 144 before an answer");
    assert!(!e.polled(now, Some(&info(9, 0, SmState::Master))), "alive");
    // OpenSM `smi_rcv_process_get_sm`: the lesser master is told again by a trap 144 after
    // each answer, so that one lost trap does not leave it master for ever.
    assert!(e.take_notify(), "trap 144 to the lesser master");
    now += s.polling_timeout;
    assert_eq!(e.poll_due(now), Some(vec![1]));
    assert!(!e.polled(now, Some(&info(9, 0, SmState::Master))));
    assert!(e.take_notify(), "and again");
    for i in 0..s.polling_retries {
        now += s.polling_timeout;
        assert!(e.poll_due(now).is_some());
        assert_eq!(e.polled(now, None), i + 1 == s.polling_retries);
    }
    assert_eq!((e.state(), e.master_guid()), (SmState::Master, None));
    assert!(e.take_first_master_sweep(), "a first master sweep again");
    assert!(!e.take_notify(), "no answer, no trap");

    // The polled master answers greater than this one (its priority rose): this one sweeps
    // (OpenSM `force_heavy_sweep`), still polling it, and hands over in that sweep.
    let mut e = master(0);
    e.discovered(&[1], Some(&info(9, 0, SmState::Master)));
    assert_eq!(e.decide(Instant::ZERO), Decision::WaitForHandover);
    let now = Instant::ZERO + s.polling_timeout;
    assert!(e.poll_due(now).is_some());
    assert!(e.polled(now, Some(&info(9, 3, SmState::Master))), "sweep");
    assert!(!e.take_notify(), "a greater master gets no trap");
    assert!(!e.take_first_master_sweep());
    assert_eq!(e.master_guid(), Some(Guid(9)));
    e.discovered(&[1], Some(&info(9, 3, SmState::Master)));
    assert_eq!(e.decide(now), Decision::Handover(vec![1]));

    let mut e = master(0);
    e.discovered(&[1], Some(&info(2, 0, SmState::Master)));
    assert_eq!(e.decide(Instant::ZERO), Decision::Handover(vec![1]));
    assert_eq!(e.state(), SmState::Standby);
}

// OpenSM `smi_rcv_check_set_req_legality`, `osm_sm_state_mgr_check_legality` and
// `osm_sm_state_mgr_process`: what each SubnSet(SMInfo) does in each state, and what is refused.
#[test]
fn subn_set_transitions() {
    use modifier::*;
    let t = Instant::ZERO;
    let from_master = info(2, 0, SmState::Master);
    let from_standby = info(2, 0, SmState::Standby);
    let ok = MadStatus::SUCCESS;
    let bad = (MadStatus::INVALID_ATTR_VALUE, SetEffect::Nothing);
    let standby = || {
        let mut e = sm(0);
        e.discovered(&[1], Some(&from_master));
        assert_eq!(e.decide(t), Decision::Standby);
        e
    };

    // Standby: HANDOVER makes it Master (a first master sweep, acknowledged).
    let mut e = standby();
    let r = e.handle_set(t, HANDOVER, &from_master, Some(&[1]));
    assert_eq!(r, (ok, SetEffect::TakeOver));
    assert_eq!((e.state(), e.poll_timeout()), (SmState::Master, None));
    assert!(e.take_first_master_sweep());
    assert_eq!(e.stats().handovers_received, 1);
    // Master: a HANDOVER from another master: sweep again, a first master sweep.
    let r = e.handle_set(t, HANDOVER, &from_master, None);
    assert_eq!(r, (ok, SetEffect::Sweep));
    assert!(e.take_first_master_sweep());
    // Master: DISCOVER, DISABLE, STANDBY, ACKNOWLEDGE are not transitions of a Master.
    for m in [DISCOVER, DISABLE, STANDBY] {
        assert_eq!(e.handle_set(t, m, &from_master, Some(&[1])), bad, "{m}");
    }
    assert_eq!(e.handle_set(t, ACKNOWLEDGE, &from_standby, None), bad);
    assert_eq!(e.state(), SmState::Master);

    // Standby: ACKNOWLEDGE (from a Standby sender) changes nothing; DISCOVER sweeps.
    let mut e = standby();
    let r = e.handle_set(t, ACKNOWLEDGE, &from_standby, None);
    assert_eq!((r, e.stats().acknowledged), ((ok, SetEffect::Nothing), 1));
    assert_eq!(
        e.handle_set(t, ACKNOWLEDGE, &from_master, None),
        bad,
        "ACKNOWLEDGE from a Master sender"
    );
    assert_eq!(
        e.handle_set(t, HANDOVER, &from_standby, None),
        bad,
        "HANDOVER from a Standby sender"
    );
    assert_eq!(e.handle_set(t, STANDBY, &from_master, Some(&[1])), bad);
    assert_eq!(
        e.handle_set(t, 9, &from_master, None),
        bad,
        "no such modifier"
    );
    assert_eq!(e.state(), SmState::Standby);
    let r = e.handle_set(t, DISCOVER, &from_master, None);
    assert_eq!(
        (r, e.state()),
        ((ok, SetEffect::Sweep), SmState::Discovering)
    );
    // Discovering: HANDOVER sweeps again; the others are refused.
    let r = e.handle_set(t, HANDOVER, &from_master, None);
    assert_eq!(
        (r, e.state()),
        ((ok, SetEffect::Sweep), SmState::Discovering)
    );
    assert_eq!(e.handle_set(t, DISABLE, &from_master, None), bad);

    // Standby: DISABLE makes it NotActive (no polls); STANDBY makes it Standby again, polling
    // the sender by the route back (none: refused).
    let mut e = standby();
    let r = e.handle_set(t, DISABLE, &from_master, None);
    assert_eq!(
        (r, e.state()),
        ((ok, SetEffect::Nothing), SmState::NotActive)
    );
    assert_eq!(e.poll_timeout(), None);
    assert_eq!(e.handle_set(t, HANDOVER, &from_master, None), bad);
    assert_eq!(e.handle_set(t, STANDBY, &from_master, None), bad);
    let r = e.handle_set(t, STANDBY, &from_master, Some(&[4, 2]));
    assert_eq!((r, e.state()), ((ok, SetEffect::Nothing), SmState::Standby));
    assert_eq!(e.master_guid(), Some(Guid(2)));
    let due = t + e.settings().polling_timeout;
    assert_eq!(e.poll_due(due), Some(vec![4, 2]));
}

// IBA 1 §14.4.1, OpenSM "ERR 2F18": with an SM_Key of ours, answers and SubnSets carrying
// another key are ignored; with SM_Key 0 every answer counts.
#[test]
fn sm_key_of_others() {
    let t = Instant::ZERO;
    let foreign = SmInfoRepr {
        sm_key: 77,
        ..info(2, 9, SmState::Master)
    };
    let mut e = sm(0);
    e.discovered(&[1], Some(&foreign));
    assert_eq!(e.decide(t), Decision::Master, "a master of another key");
    assert_eq!(e.stats().foreign_keys, 1);
    let r = e.handle_set(t, modifier::HANDOVER, &foreign, None);
    assert_eq!(r.0, MadStatus::INVALID_ATTR_VALUE);
    assert_eq!(e.state(), SmState::Master);

    let mut e = Election::new(ElectionSettings {
        sm_key: 0,
        ..ElectionSettings::default()
    });
    e.set_guid(Guid(5));
    e.discovered(&[1], Some(&foreign));
    assert_eq!(
        e.decide(t),
        Decision::Standby,
        "SM_Key 0 takes every answer"
    );
    assert_eq!(e.sm_info(Guid(5), 3).sm_key, 0);
    assert_eq!(sm(0).request_info(3).sm_key, 1, "OpenSM's default sm_key");
}

proptest! {
    // Any SMInfo answer, SubnSet or poll answer, never panics and leaves a valid state.
    #[test]
    fn any_answer_never_panics(
        answers in proptest::collection::vec(
            (any::<u64>(), any::<u8>(), any::<u8>(), 0u8..3, any::<u32>(), 0u32..7), 0..20),
        priority in any::<u8>(),
    ) {
        let mut e = Election::new(ElectionSettings { priority, ..ElectionSettings::default() });
        e.set_guid(Guid(0x100));
        let mut now = Instant::ZERO;
        for (guid, pri, state, what, act, m) in answers {
            let i = SmInfoRepr {
                guid: Guid(guid), sm_key: 1, act_count: act, priority: pri & 0x0f,
                sm_state: SmState::from(state),
            };
            match what {
                0 => {
                    now += e.settings().polling_timeout;
                    let _ = e.poll_due(now);
                    if e.polled(now, Some(&i)) {
                        prop_assert!(e.is_deciding());
                    }
                }
                1 if e.is_deciding() => {
                    e.discovered(&[1], Some(&i));
                    let _ = e.decide(now);
                }
                _ => {
                    let _ = e.handle_set(now, m, &i, Some(&[1]));
                }
            }
            let s = e.sm_info(Guid(0x100), 0);
            prop_assert!(s.priority <= 15);
            prop_assert!(matches!(
                e.state(),
                SmState::NotActive | SmState::Discovering | SmState::Standby | SmState::Master
            ));
        }
    }
}
