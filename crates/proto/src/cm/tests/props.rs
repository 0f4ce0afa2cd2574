//! Random input: arbitrary CM MADs (well-formed messages with IDs the agent holds, broken
//! headers, random bytes), random user commands and random time steps never panic the agent,
//! keep its timer index consistent, and leave nothing behind once its user has released what is
//! established and every timer has run.

use super::*;
use ipoib_wire::QKey;
use proptest::prelude::*;

const ATTRS: [u16; 12] = [
    attr::REQ,
    attr::MRA,
    attr::REJ,
    attr::REP,
    attr::RTU,
    attr::DREQ,
    attr::DREP,
    attr::SIDR_REQ,
    attr::SIDR_REP,
    attr::LAP,
    attr::APR,
    attr::CLASS_PORT_INFO,
];

#[derive(Debug, Clone)]
enum Action {
    /// A CM message of kind `ATTRS[kind]` from `body`, optionally aimed at a connection we hold
    /// (`aim`: which one), with the header spoiled when `spoil` says so.
    Mad {
        kind: usize,
        body: Vec<u8>,
        tid: u64,
        from: u16,
        aim: Option<usize>,
        spoil: Option<(usize, u8)>,
    },
    /// Arbitrary bytes.
    Raw(Vec<u8>),
    /// Time passes (milliseconds) and timers run.
    Wait(u32),
    /// Our user connects (QPN).
    Connect(u32),
    /// Our user acts on connection `which`: accept, reject, disconnect or establish.
    User { which: usize, how: u8 },
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        6 => (
            0..ATTRS.len(),
            proptest::collection::vec(any::<u8>(), 232),
            0u64..4,
            1u16..4,
            proptest::option::weighted(0.7, 0usize..8),
            proptest::option::weighted(0.1, (0usize..24, any::<u8>())),
        )
            .prop_map(|(kind, body, tid, from, aim, spoil)| Action::Mad {
                kind,
                body,
                tid,
                from,
                aim,
                spoil
            }),
        1 => proptest::collection::vec(any::<u8>(), 0..300).prop_map(Action::Raw),
        3 => (0u32..20_000).prop_map(Action::Wait),
        1 => (1u32..16).prop_map(Action::Connect),
        2 => (0usize..8, 0u8..5).prop_map(|(which, how)| Action::User { which, how }),
    ]
}

/// The timer index holds exactly one entry per record with a deadline, and only Established
/// connections have none.
fn check_invariants(cm: &Cm) {
    let conn_deadlines = cm.conns.values().filter(|c| c.deadline.is_some()).count();
    assert_eq!(cm.timers.len(), conn_deadlines + cm.sidr.len());
    for c in cm.conns.values() {
        assert_eq!(
            c.deadline.is_none(),
            c.state == State::Established,
            "{:?}",
            c.state
        );
        if let Some(t) = c.deadline {
            assert!(cm.timers.contains(&(t, timer::TimerKey::Conn(c.local_id))));
        }
    }
    // The lookup indexes are what the records say, nothing more.
    let ids: BTreeSet<(Guid, u32, u32)> = cm
        .conns
        .values()
        .filter(|c| c.remote_id != 0)
        .map(|c| (c.remote_ca_guid, c.remote_id, c.local_id))
        .collect();
    assert_eq!(cm.remote_ids, ids);
    let qps: BTreeSet<(Guid, u32, u32)> = cm
        .conns
        .values()
        .filter(|c| c.holds_remote_qp())
        .map(|c| (c.remote_ca_guid, c.remote_qpn, c.local_id))
        .collect();
    assert_eq!(cm.remote_qps, qps);
    let mut per_ca = BTreeMap::new();
    for c in cm.conns.values() {
        *per_ca.entry(c.remote_ca_guid).or_insert(0) += 1;
    }
    assert_eq!(cm.per_ca, per_ca);
    let local: BTreeSet<u32> = cm
        .conns
        .values()
        .filter(|c| c.local_qpn != 0)
        .map(|c| c.local_qpn)
        .collect();
    assert_eq!(cm.local_qpns, local);
}

fn build(cm: &Cm, kind: usize, body: &[u8], tid: u64, aim: Option<usize>) -> Vec<u8> {
    let id = ATTRS[kind];
    let mut mad = vec![0u8; 256];
    let h = MadHeaderRepr {
        base_version: 1,
        mgmt_class: ipoib_wire::mad::MgmtClass::ComMgt,
        class_version: 2,
        method: if id == attr::CLASS_PORT_INFO {
            ipoib_wire::mad::Method::Get
        } else {
            ipoib_wire::mad::Method::Send
        },
        status: ipoib_wire::mad::MadStatus::SUCCESS,
        class_specific: 0,
        transaction_id: tid,
        attribute_id: id,
        attribute_modifier: 0,
    };
    h.emit(&mut mad);
    mad[24..].copy_from_slice(body);
    let ids: Vec<(u32, u32)> = cm
        .conns
        .values()
        .map(|c| (c.local_id, c.remote_id))
        .collect();
    if let (Some(i), false) = (aim, ids.is_empty()) {
        let (local, remote) = ids[i % ids.len()];
        // Every message but REQ and SIDR carries (sender's ID, receiver's ID) in bytes 0..8.
        mad[24..28].copy_from_slice(&remote.to_be_bytes());
        mad[28..32].copy_from_slice(&local.to_be_bytes());
    }
    if id == attr::REQ || id == attr::SIDR_REQ {
        // Mostly for our listener, with a valid MTU and transport, so establishment runs.
        if aim.is_some() {
            mad[24 + 8..24 + 16].copy_from_slice(&SID.to_be_bytes());
            if id == attr::REQ {
                mad[24 + 43] &= !0x06; // RC
                mad[24 + 50] = (mad[24 + 50] & 0x0f) | 0x40; // MTU 2048
            }
        }
    }
    mad
}

fn user(cm: &mut Cm, now: Instant, which: usize, how: u8) {
    let ids: Vec<ConnId> = cm.connection_ids().collect();
    if ids.is_empty() {
        return;
    }
    let c = ids[which % ids.len()];
    let qpn = 0x1000 + c.0 % 0x1000;
    let _ = match how {
        0 => cm.accept(now, c, qpn, &[1]).map(|_| ()),
        1 => cm.reject(
            now,
            c,
            ipoib_wire::cm::RejReason::ConsumerDefined,
            &[2],
            &[3],
        ),
        2 => cm.disconnect(now, c, &[4]),
        3 => cm.notify_established(c),
        _ => {
            let sidr: Vec<u32> = cm.sidr.keys().copied().collect();
            match sidr.first() {
                Some(s) => cm.sidr_reply(
                    SidrId(*s),
                    ipoib_wire::cm::SidrStatus::Success,
                    5,
                    QKey(6),
                    &[],
                ),
                None => Ok(()),
            }
        }
    };
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_input_never_panics_nor_leaks(actions in proptest::collection::vec(action(), 1..60)) {
        let mut cm = Cm::new(config(B_GUID), crate::rng::Rng::new(7));
        cm.listen(SID, u64::MAX).unwrap();
        let mut now = Instant::ZERO;
        let mut sent = 0usize;
        for a in actions {
            match a {
                Action::Mad { kind, body, tid, from, aim, spoil } => {
                    let mut mad = build(&cm, kind, &body, tid, aim);
                    if let Some((i, v)) = spoil {
                        mad[i] = v;
                    }
                    cm.handle_mad(now, MadIn { from: MadAddr::gsi(from), mad });
                }
                Action::Raw(bytes) => cm.handle_mad(now, MadIn { from: MadAddr::gsi(3), mad: bytes }),
                Action::Wait(ms) => {
                    now += Duration::from_millis(u64::from(ms));
                    cm.handle_timeout(now);
                }
                Action::Connect(q) => {
                    let _ = cm.connect(now, params(B_LID, A_LID, q));
                }
                Action::User { which, how } => user(&mut cm, now, which, how),
            }
            while cm.poll_transmit(now).is_some() {
                sent += 1;
            }
            while cm.poll_event().is_some() {}
            check_invariants(&cm);
        }
        // The user releases whatever is established; then every timer runs out.
        let up: Vec<ConnId> = cm
            .connection_ids()
            .filter(|c| cm.state(*c) == Some(State::Established))
            .collect();
        for c in up {
            cm.disconnect(now, c, &[]).unwrap();
        }
        for _ in 0..10_000 {
            let Some(t) = cm.poll_timeout() else { break };
            now = now.max(t);
            cm.handle_timeout(now);
            while cm.poll_transmit(now).is_some() {
                sent += 1;
            }
            check_invariants(&cm);
        }
        prop_assert_eq!(cm.connections(), 0);
        prop_assert_eq!(cm.sidr_exchanges(), 0);
        prop_assert_eq!(cm.timers(), 0);
        prop_assert!(sent < 100_000);
    }
}
