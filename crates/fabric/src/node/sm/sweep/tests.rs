//! The sweep's answer to its transport's results where a unit test reaches what a subnet does
//! not: a timed-out SubnSet the transport cannot submit again.

use super::*;
use ipoib_proto::partitions::PartitionConfig;

// A bring-up SubnSet that timed out and that the transport refuses to queue again (no copy of
// its MAD, `SmpRequester::resubmit` false) is a failed Set: counted in `set_failures`, not in
// `resubmitted`, and it leaves its wave, so the sweep goes on (here: the Activate wave's last
// Set, so the sweep ends) instead of waiting for an answer that never comes.
#[test]
fn a_set_the_transport_cannot_resubmit_fails_and_leaves_its_wave() {
    let mut sm = SmpSm::new(
        SmOptions::default(),
        PartitionConfig::default_config(),
        SmpSettings::default(),
    );
    assert!(sm.settings.rounds > 1, "the Set would be resubmitted");
    sm.start();
    sm.phase = SweepPhase::Activate;
    sm.wave = 1;
    sm.smp
        .push_result_without_copy(Tag::Set(attr::PORT_INFO, 1), Err(SmpFailure::Timeout));
    sm.step(Instant::ZERO);
    let s = sm.stats();
    assert_eq!((s.set_failures, s.resubmitted), (1, 0));
    assert_eq!(sm.wave, 0);
    assert_eq!(sm.phase(), SweepPhase::Done);
    assert_eq!(s.done_at, Some(Instant::ZERO));
    assert_eq!(sm.smp.in_flight(), 0, "nothing was queued");
}

// The same Set with its copy kept is queued again and stays in its wave.
#[test]
fn a_timed_out_set_with_its_copy_is_resubmitted() {
    let mut sm = SmpSm::new(
        SmOptions::default(),
        PartitionConfig::default_config(),
        SmpSettings {
            retries: 0,
            ..SmpSettings::default()
        },
    );
    sm.start();
    sm.phase = SweepPhase::Activate;
    sm.set(SmpAttribute::PortInfo(PortInfoRepr::default()), 1, &[1]);
    let now = Instant::ZERO;
    assert!(sm.smp.poll_transmit(now).is_some());
    let t = sm.smp.poll_timeout().expect("a deadline");
    sm.smp.handle_timeout(t);
    sm.step(t);
    let s = sm.stats();
    assert_eq!((s.set_failures, s.resubmitted), (0, 1));
    assert_eq!((sm.wave, sm.phase()), (1, SweepPhase::Activate));
    assert_eq!(sm.smp.in_flight(), 1, "queued again");
}
