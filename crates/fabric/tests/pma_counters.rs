//! The PMA's error counters (IBA 1 §16.1.3.5 PortCounters) fed by the events the emulated
//! fabric has, read through the PMA on QP1 as `perfquery` reads them, and cleared by a Set with
//! their CounterSelect bit as `perfquery -R` clears them.

#[path = "common/sma.rs"]
mod fabric;

use fabric::*;
use ipoib_fabric::hw::switch::SwitchDropReason;
use ipoib_fabric::testing::ud_packet;
use ipoib_wire::mad::attr::perf as perf_attr;
use ipoib_wire::mad::{MadHeaderRepr, Method};
use ipoib_wire::perf::{PortCountersRepr, PERF_DATA_OFFSET};
use ipoib_wire::PKey;

/// A Set of PortCounters of `port` at `lid` with CounterSelect `select` (`perfquery -R`); the
/// counters of the answer (after the clear).
fn clear_counters(f: &mut Fabric, port: u8, lid: u16, select: u16) -> PortCountersRepr {
    let mut mad = f.perf_mad(perf_attr::PORT_COUNTERS, port);
    let mut h = MadHeaderRepr::parse_bytes(&mad).unwrap();
    h.method = Method::Set;
    h.emit(&mut mad);
    mad[PERF_DATA_OFFSET + 2..PERF_DATA_OFFSET + 4].copy_from_slice(&select.to_be_bytes());
    let packet = ipoib_fabric::hw::sma::gmp_packet(PROBE_LID, lid, 0, PKey::DEFAULT, 1, &mad);
    let back = f.exchange(packet);
    let [one] = back.as_slice() else {
        panic!("{} answers", back.len());
    };
    let p = ipoib_wire::packet::Packet::parse(one).unwrap();
    PortCountersRepr::parse(&p.payload[PERF_DATA_OFFSET..]).unwrap()
}

// IBA 1 §16.1.3.5 PortRcvSwitchRelayErrors: packets received on a port that the switch relay
// could not forward, for DLID mapping (a unicast DLID whose LFT entry is 255 or past the table,
// a multicast DLID with no MFT entry) or looping (the LFT sends the DLID back out of the port the
// packet came in by). S1 receives each from the probe on port 3 and counts it there, not in any
// port's PortXmitDiscards (no output port was chosen); a packet S1 forwards counts nowhere.
// CounterSelect bit 5 clears it, and only it.
#[test]
fn packets_the_relay_cannot_forward_count_in_the_arrival_ports_switch_relay_errors() {
    let mut f = Fabric::new(12);
    assign_lids(&mut f);
    // LFT entry 255, above LinearFDBTop (11), multicast without an MFT entry, and the probe's
    // own LID, which S1 routes out of port 3, where the packet came in.
    for dlid in [8, 200, 0xc010, PROBE_LID] {
        assert!(f
            .exchange(ud_packet(PROBE_LID, dlid, 64, PKey::DEFAULT))
            .is_empty());
    }
    let s = f.switch(f.s1).stats();
    assert_eq!(s.dropped(SwitchDropReason::LftDrop), 1);
    assert_eq!(s.dropped(SwitchDropReason::UnknownLid), 1);
    assert_eq!(s.dropped(SwitchDropReason::NoMftEntry), 1);
    assert_eq!(s.dropped(SwitchDropReason::Looping), 1);
    // A packet S1 forwards (to the CA, whose QP 2 does not exist) is no relay error.
    assert!(f
        .exchange(ud_packet(PROBE_LID, CA_LID, 64, PKey::DEFAULT))
        .is_empty());
    let c = f.port_counters(3, S1_LID);
    assert_eq!(c.port_rcv_switch_relay_errors, 4);
    assert_eq!((c.port_xmit_discards, c.port_rcv_errors), (0, 0));
    for p in [5, 0] {
        let c = f.port_counters(p, S1_LID);
        assert_eq!(c.port_rcv_switch_relay_errors, 0, "port {p}");
        assert_eq!(c.port_xmit_discards, 0, "port {p}");
    }
    assert_eq!(f.port_counters(2, S2_LID).port_rcv_switch_relay_errors, 0);
    // perfquery -R with every error bit but 5 leaves it; bit 5 clears it.
    let c = clear_counters(&mut f, 3, S1_LID, 0x0fff & !(1 << 5));
    assert_eq!(c.port_rcv_switch_relay_errors, 4);
    let c = clear_counters(&mut f, 3, S1_LID, 1 << 5);
    assert_eq!(c.port_rcv_switch_relay_errors, 0);
    assert_eq!(f.port_counters(3, S1_LID).port_rcv_switch_relay_errors, 0);
}

// IBA 1 §18.2.4.3: a multicast packet leaves by every MFT port but its arrival port. An entry
// holding only the arrival port leaves no copy to send, which is no relay error.
#[test]
fn a_multicast_packet_with_no_port_but_its_arrival_port_is_no_relay_error() {
    use ipoib_fabric::hw::mgmt::Config;
    let mut f = Fabric::new(13);
    assign_lids(&mut f);
    let s1 = f.s1;
    f.sim
        .with_node::<ipoib_fabric::hw::switch::Switch, _>(s1, |sw, now, tx| {
            use ipoib_fabric::hw::sim::Device;
            let ports = vec![3];
            sw.configure(
                now,
                Config::Mft {
                    mlid: 0xc011,
                    ports,
                },
                tx,
            )
        })
        .unwrap();
    assert!(f
        .exchange(ud_packet(PROBE_LID, 0xc011, 64, PKey::DEFAULT))
        .is_empty());
    let s = f.switch(s1).stats();
    assert_eq!(s.dropped(SwitchDropReason::McastArrivalOnly), 1);
    assert_eq!(s.dropped(SwitchDropReason::NoMftEntry), 0);
    assert_eq!(f.port_counters(3, S1_LID).port_rcv_switch_relay_errors, 0);
}

// IBA 1 §16.1.3.5 VL15Dropped: incoming VL15 packets dropped for lack of resources, as Linux's
// qib and hfi1 count a packet for QP0 that finds no posted receive (docs/PERF-COUNTERS.md). A
// SubnGetResp nobody on the CA asked for is not its SMA's (a response): it goes to QP0, where no
// receive is posted, and counts in the CA port's VL15Dropped. CounterSelect bit 11 clears it.
#[test]
fn a_vl15_packet_qp0_has_no_buffer_for_counts_in_vl15_dropped() {
    use ipoib_fabric::hw::hca::HcaDropReason;
    use ipoib_wire::mad::attr::smp as attr;
    let mut f = Fabric::new(14);
    assign_lids(&mut f);
    let resp = f.smp(Method::GetResp, attr::NODE_INFO, 0, None, 0, none());
    for _ in 0..2 {
        let packet = ipoib_fabric::hw::sma::smp_packet(PROBE_LID, CA_LID, 0, &resp);
        assert!(f.exchange(packet).is_empty());
    }
    assert_eq!(f.hca().counters().drops(HcaDropReason::NoRecvPosted), 2);
    let c = f.port_counters(1, CA_LID);
    assert_eq!((c.vl15_dropped, c.port_rcv_errors), (2, 0));
    // An SMP the SMA answers is no drop.
    assert!(f
        .lid(Method::Get, attr::NODE_INFO, 0, CA_LID, 0, none())
        .is_some());
    assert_eq!(f.port_counters(1, CA_LID).vl15_dropped, 2);
    let c = clear_counters(&mut f, 1, CA_LID, !(1 << 11));
    assert_eq!(c.vl15_dropped, 2);
    let c = clear_counters(&mut f, 1, CA_LID, 1 << 11);
    assert_eq!(c.vl15_dropped, 0);
}

/// SubnSet(P_KeyTable) block 0 of S1's port `port` to `pkeys`, by directed route.
fn set_s1_pkeys(f: &mut Fabric, port: u32, pkeys: &[u16]) {
    use ipoib_wire::mad::attr::smp as attr;
    use ipoib_wire::smp::{PKeyTableRepr, SmpAttribute};
    let mut t = PKeyTableRepr::default();
    for (d, &k) in t.pkeys.iter_mut().zip(pkeys) {
        *d = PKey(k);
    }
    let a = SmpAttribute::PKeyTable(t);
    let r = f.dr(Method::Set, attr::P_KEY_TABLE, port << 16, TO_S1, 0, a);
    assert_eq!(r.expect("an answer").attribute, a);
}

// IBA 1 §16.1.3.5 PortRcvConstraintErrors and PortXmitConstraintErrors: with partition
// enforcement on (IBA 1 §10.9), a packet whose P_Key is not in its arrival port's table is
// discarded and counted there (PartitionEnforcementInbound), one whose P_Key is not in its
// output port's table is discarded and counted at the output port (PartitionEnforcementOutbound).
// S1's port 3 holds 0xFFFF and 0x8001, its port 5 0xFFFF only: 0x8002 fails at port 3, 0x8001
// at port 5, 0xFFFF passes. Read through the PMA; CounterSelect bits 8 and 7 clear them.
#[test]
fn partition_enforcement_failures_count_in_the_constraint_errors() {
    let mut f = Fabric::new(15);
    assign_lids(&mut f);
    set_s1_pkeys(&mut f, 3, &[0xffff, 0x8001]);
    let s1 = f.s1;
    f.sim
        .with_node::<ipoib_fabric::hw::switch::Switch, _>(s1, |sw, _, _| {
            sw.set_partition_enforcement(true)
        })
        .unwrap();
    for (pkey, n) in [(0x8002, 2), (0x8001, 3), (0xffff, 1)] {
        for _ in 0..n {
            let p = ud_packet(PROBE_LID, CA_LID, 64, PKey(pkey));
            assert!(f.exchange(p).is_empty());
        }
    }
    let s = f.switch(s1).stats();
    assert_eq!(s.dropped(SwitchDropReason::Partition), 5);
    let in3 = f.port_counters(3, S1_LID);
    let out5 = f.port_counters(5, S1_LID);
    let c = |c: &PortCountersRepr| (c.port_rcv_constraint_errors, c.port_xmit_constraint_errors);
    assert_eq!(c(&in3), (2, 0));
    assert_eq!(c(&out5), (0, 3));
    assert_eq!((in3.port_rcv_errors, out5.port_xmit_discards), (0, 0));
    assert_eq!(c(&f.port_counters(2, S2_LID)), (0, 0));
    assert_eq!(c(&clear_counters(&mut f, 3, S1_LID, 1 << 7)), (2, 0));
    assert_eq!(c(&clear_counters(&mut f, 3, S1_LID, 1 << 8)), (0, 0));
    assert_eq!(c(&clear_counters(&mut f, 5, S1_LID, 1 << 8)), (0, 3));
    assert_eq!(c(&clear_counters(&mut f, 5, S1_LID, 1 << 7)), (0, 0));
}

// IBA 1 §16.1.3.5 LinkDownedCounter: the times a port's trained link went down. The cable
// between S2's port 7 and the CA is pulled twice and plugged back: S2's port 7 counts 2, its
// port 2 (whose link stayed up) 0; CounterSelect bit 2 clears it. Read through S2's PMA, whose
// answers leave by port 2.
#[test]
fn a_pulled_cable_counts_in_link_downed_counter() {
    use ipoib_fabric::hw::sim::PortRef;
    let mut f = Fabric::new(16);
    assign_lids(&mut f);
    let s2_7 = PortRef {
        node: f.s2,
        port: 7,
    };
    let link = f.sim.link_of(s2_7).unwrap();
    for _ in 0..2 {
        for up in [false, true] {
            let now = f.sim.now();
            f.sim.schedule_link_state(link, now, up);
            f.sim.run_until_idle(1000);
        }
    }
    // S2's trap 128 for each change went to the probe, its MasterSMLID.
    let probe = f.sim.node_mut::<Probe>(f.probe).unwrap();
    assert_eq!(std::mem::take(&mut probe.inbox).len(), 4);
    let c = f.port_counters(7, S2_LID);
    assert_eq!((c.link_downed_counter, c.port_xmit_discards), (2, 0));
    assert_eq!(f.port_counters(2, S2_LID).link_downed_counter, 0);
    assert_eq!(
        clear_counters(&mut f, 7, S2_LID, !(1 << 2)).link_downed_counter,
        2
    );
    assert_eq!(
        clear_counters(&mut f, 7, S2_LID, 1 << 2).link_downed_counter,
        0
    );
}

// IBA 1 §10.9.3: QP1 takes only a P_Key its port's table holds, the PMA's requests too. A
// PortCounters Get with a P_Key the CA lacks (`perfquery` from another partition) is not
// answered and counts in the CA port's PortInfo:P_KeyViolations (as Linux's qib drops and counts
// it, docs/PERF-COUNTERS.md); with the default P_Key it is answered. Before, the PMA answered
// before the P_Key check.
#[test]
fn a_pma_request_with_a_pkey_the_port_lacks_is_not_answered() {
    let mut f = Fabric::new(15);
    assign_lids(&mut f);
    let mad = f.perf_mad(perf_attr::PORT_COUNTERS, 1);
    let packet = ipoib_fabric::hw::sma::gmp_packet(PROBE_LID, CA_LID, 0, PKey(0x8005), 1, &mad);
    let back = f.exchange(packet);
    let perf_answers = back
        .iter()
        .filter_map(|b| ipoib_wire::packet::Packet::parse(b).ok())
        .filter_map(|p| MadHeaderRepr::parse_bytes(p.payload).ok())
        .filter(|h| h.method == Method::GetResp)
        .count();
    assert_eq!(perf_answers, 0, "{back:?}");
    assert_eq!(f.hca().port(1).unwrap().pkey_violations, 1);
    assert!(f.perf_get(perf_attr::PORT_COUNTERS, 1, CA_LID).is_some());
}
