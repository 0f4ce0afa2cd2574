//! Traps 257 and 258 (IBA 1 §14.2.5.1 Table 131) from the port that dropped a datagram for its
//! P_Key or Q_Key, to PortInfo:MasterSMLID (here A, LID 1), at most one per 4.096 µs ×
//! 2^SubnetTimeOut (`hca/trap.rs`).

use super::*;
use crate::hw::capture::Capture;
use ipoib_wire::mad::{BadKey, BadKeyTrap, Method};
use ipoib_wire::packet::Packet;
use ipoib_wire::pcap::CaptureReader;
use ipoib_wire::smp::{SmpAttribute, SmpMadRepr};
use std::time::Duration;

/// Every trap in the capture: its LRH SLID, DLID and SL, and what it reports.
fn traps(capture: Capture) -> Vec<(u16, u16, u8, u16, BadKey, BadKeyTrap)> {
    let bytes = capture.into_bytes();
    let mut out = Vec::new();
    for p in CaptureReader::read_all(&bytes[..]).unwrap() {
        let pkt = Packet::parse(&p.data).unwrap();
        let Ok(smp) = SmpMadRepr::parse(pkt.payload) else {
            continue;
        };
        if smp.header.method != Method::Trap {
            continue;
        }
        let SmpAttribute::Notice(n) = smp.attribute else {
            panic!("a trap without a Notice");
        };
        assert_eq!(smp.mkey, 0, "M_Key 0, as Linux's qib sends it");
        let (kind, t) = BadKeyTrap::from_notice(&n).expect("trap 257 or 258");
        out.push((
            pkt.lrh.slid,
            pkt.lrh.dlid,
            pkt.lrh.sl,
            n.issuer_lid,
            kind,
            t,
        ));
    }
    out
}

/// What B's trap reports of a datagram from A (LID 1, SL 0) to B (LID 2) carrying `key`.
fn from_a_to_b(key: u32, qp1: u32, qp2: u32) -> BadKeyTrap {
    BadKeyTrap {
        lid1: 1,
        lid2: 2,
        key,
        sl: 0,
        qp1,
        qp2,
        ..BadKeyTrap::default()
    }
}

fn set_subnet_timeout(p: &mut Pair, node: NodeId, t: u8) {
    let h = p.sim.node_mut::<Hca>(node).unwrap();
    h.port_mut(1).unwrap().subnet_timeout = t;
}

/// IBA 1 §10.9.3, §14.2.5.1: a datagram whose P_Key B's table does not hold makes B send one trap
/// 257 to its SM (A, LID 1) with the datagram's SLID, DLID, P_Key, SL and QPs; a second within
/// 4.096 µs × 2^18 (1.07 s) is counted but sends none; one after that window sends again.
#[test]
fn bad_pkey_sends_one_trap_257_per_window() {
    let mut p = pair(31);
    configure::<Hca>(&mut p.sim, p.a, port_config(1, vec![0xffff, 0x8005]));
    let b_node = p.b;
    set_subnet_timeout(&mut p, b_node, 18);
    p.sim.set_capture(Capture::new());
    let a = ud_qp(&mut p.sim, p.a, QKey(0x11), 1, 0);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x11), 0, 4);
    for i in 0..2 {
        datagram_a_to_b(&mut p, a.qpn, b.qpn, i, b"x", QKey(0x11));
    }
    let pi = p.sim.node::<Hca>(p.b).unwrap().port_info(1).unwrap();
    assert_eq!(pi.pkey_violations, 2);
    let want = from_a_to_b(0x8005, a.qpn, b.qpn);
    let got = traps(p.sim.take_capture().unwrap());
    assert_eq!(got, vec![(2, 1, 0, 2, BadKey::PKey, want)]);
    let port = |sim: &Simulator| sim.node::<Hca>(b_node).unwrap().port(1).unwrap().traps_sent;
    assert_eq!(port(&p.sim), 1);
    // After the window, the next violation is reported.
    p.sim.run_for(Duration::from_millis(1100));
    p.sim.set_capture(Capture::new());
    datagram_a_to_b(&mut p, a.qpn, b.qpn, 3, b"x", QKey(0x11));
    assert_eq!(traps(p.sim.take_capture().unwrap()).len(), 1);
    assert_eq!(port(&p.sim), 2);
}

/// IBA 1 §10.2.4, §14.2.5.1: a datagram with the wrong Q_Key makes B send trap 258 carrying
/// that Q_Key.
#[test]
fn bad_qkey_sends_trap_258() {
    let mut p = pair(32);
    p.sim.set_capture(Capture::new());
    let a = ud_qp(&mut p.sim, p.a, QKey(0x11), 0, 0);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x22), 0, 4);
    datagram_a_to_b(&mut p, a.qpn, b.qpn, 1, b"x", QKey(0x11));
    let want = from_a_to_b(0x11, a.qpn, b.qpn);
    let got = traps(p.sim.take_capture().unwrap());
    assert_eq!(got, vec![(2, 1, 0, 2, BadKey::QKey, want)]);
}

/// IBA 1 §14.2.5.1: no trap before the port knows its SM (MasterSMLID 0); the violation is
/// still counted.
#[test]
fn no_trap_without_sm_lid() {
    let mut p = pair(33);
    let mut pc = port_config(2, vec![0xffff]);
    pc.sm_lid = 0;
    configure::<Hca>(&mut p.sim, p.b, pc);
    p.sim.set_capture(Capture::new());
    let a = ud_qp(&mut p.sim, p.a, QKey(0x11), 0, 0);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x22), 0, 4);
    datagram_a_to_b(&mut p, a.qpn, b.qpn, 1, b"x", QKey(0x11));
    assert!(traps(p.sim.take_capture().unwrap()).is_empty());
    let pi = p.sim.node::<Hca>(p.b).unwrap().port_info(1).unwrap();
    assert_eq!(pi.qkey_violations, 1);
}
