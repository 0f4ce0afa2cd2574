//! `SaServer::has_small_events`: what `poll_small_event` would give, asked without taking it
//! (the subnet manager coalesces a big group's membership changes and asks before it polls).

use super::*;

#[test]
fn has_small_events_is_what_poll_small_event_gives() {
    let mut net = Net::default(5);
    assert!(
        !net.sa.has_small_events(usize::MAX),
        "Net drained the start"
    );
    let now = net.now;
    for lid in 2..=4u16 {
        let m = join(
            join_rec(bcast(), gid_of(lid), JoinState::FULL_MEMBER),
            mcr_mask::JOIN,
        );
        net.sa.handle_mad(
            now,
            MadIn {
                from: MadAddr::gsi(lid),
                mad: m.to_bytes().to_vec(),
            },
        );
    }
    // Three members: a change of a group of more than two is not small at two.
    assert!(net.sa.has_events());
    assert!(!net.sa.has_small_events(2));
    assert!(net.sa.poll_small_event(2).is_none());
    assert!(net.sa.has_events(), "left for poll_event");
    assert!(net.sa.has_small_events(3));
    assert!(net.sa.has_small_events(3), "asking does not drain");
    assert!(matches!(
        net.sa.poll_small_event(3),
        Some(SaEvent::McastGroup { ref members, .. }) if members.len() == 3
    ));
    assert!(!net.sa.has_small_events(usize::MAX));
    assert!(!net.sa.has_events());
}
