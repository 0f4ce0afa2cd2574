//! The link layer's receive checks after the CRCs' (IBA 1 §7.7; PortRcvErrors' "malformed data
//! packet errors (LVer, length, VL)", §16.1.3.5): a packet on a data VL its receiving port does
//! not operate, or whose length is not its PktLen's or whose payload is over the port's MTUCap,
//! is discarded there and counted in that port's PortRcvErrors, at a switch port and at an HCA
//! port alike, read through the PMA as `perfquery` reads it (docs/PERF-COUNTERS.md "Malformed
//! data packets").

#[path = "common/sma.rs"]
mod fabric;

use fabric::*;
use ipoib_fabric::hw::hca::{Hca, HcaDropReason};
use ipoib_fabric::hw::sim::Device;
use ipoib_fabric::hw::switch::SwitchDropReason;
use ipoib_fabric::testing::ud_packet;
use ipoib_wire::mad::attr::perf as perf_attr;
use ipoib_wire::packet::fill_crcs;
use ipoib_wire::{Mtu, PKey};

/// `packet` moved to LRH VL `vl`, its CRCs computed again.
fn on_vl(mut packet: Vec<u8>, vl: u8) -> Vec<u8> {
    packet[0] = (vl << 4) | (packet[0] & 0x0f);
    fill_crcs(&mut packet).unwrap();
    packet
}

/// Hands `packet` to the CA's port 1 as its link would.
fn to_ca(f: &mut Fabric, packet: Vec<u8>) {
    f.sim
        .with_node::<Hca, _>(f.ca, |hca, now, tx| hca.receive(now, 1, packet, tx))
        .unwrap();
    f.sim.run_until_idle(1000);
}

// Every port of this fabric operates data VL 0 only (PortInfo:OperationalVLs 1, VLCap 1) and
// VL15. A UD packet on VL 1 or VL 14 from the probe is discarded by S1's port 3, the port it
// arrives at, and counted in its PortRcvErrors; the same packet on VL 0 goes through (to the CA,
// whose QP 2 does not exist). At the CA's port the same: VL 3 is discarded and counted, VL 0 is
// not malformed. No other port counts.
#[test]
fn a_packet_on_a_data_vl_the_port_does_not_operate_counts_in_port_rcv_errors() {
    let mut f = Fabric::new(21);
    assign_lids(&mut f);
    let good = ud_packet(PROBE_LID, CA_LID, 64, PKey::DEFAULT);
    for vl in [1, 14] {
        assert!(f.exchange(on_vl(good.clone(), vl)).is_empty());
    }
    assert!(f.exchange(good.clone()).is_empty());
    assert_eq!(
        f.switch(f.s1).stats().dropped(SwitchDropReason::Malformed),
        2
    );
    assert_eq!(f.port_counters(3, S1_LID).port_rcv_errors, 2);
    assert_eq!(f.port_counters(2, S2_LID).port_rcv_errors, 0);
    assert_eq!(ca_drops(&f), (1, 0));

    to_ca(&mut f, on_vl(good.clone(), 3));
    to_ca(&mut f, good);
    assert_eq!(ca_drops(&f), (2, 1));
    assert_eq!(f.port_counters(1, CA_LID).port_rcv_errors, 1);
}

// VL15 is every port's, whatever OperationalVLs says: the rule that only subnet management
// packets (QP0) travel on it is the receiving end node's, on the BTH DestQP (the SMI's and GSI's
// checks, IBA 1 §13.5.3.1 as Linux's qib_ud_rcv applies it; docs/PERF-COUNTERS.md), not a link
// layer error. A UD packet for QP 2 on VL15 crosses both switches and is discarded by the CA
// (`BadVl`), counted in no port's PortRcvErrors.
#[test]
fn vl15_to_a_qp_but_0_is_no_link_layer_error() {
    let mut f = Fabric::new(22);
    assign_lids(&mut f);
    let p = on_vl(ud_packet(PROBE_LID, CA_LID, 64, PKey::DEFAULT), 15);
    assert!(f.exchange(p).is_empty());
    assert_eq!(f.hca().counters().drops(HcaDropReason::BadVl), 1);
    for (port, lid) in [(3, S1_LID), (2, S2_LID), (1, CA_LID)] {
        assert_eq!(f.port_counters(port, lid).port_rcv_errors, 0, "{lid}");
    }
}

/// The CA's drops of packets for no QP (`UnknownQp`, what passed the link checks) and of
/// malformed ones (`Malformed`).
fn ca_drops(f: &Fabric) -> (u64, u64) {
    let c = f.hca().counters();
    (
        c.drops(HcaDropReason::UnknownQp),
        c.drops(HcaDropReason::Malformed),
    )
}

/// `packet` with its LRH PktLen one more than its bytes, the VCRC over the changed bytes.
fn pkt_len_plus_one(mut packet: Vec<u8>) -> Vec<u8> {
    // LRH bytes 4-5: 5 reserved bits, then PktLen (11 bits).
    let len = u16::from_be_bytes([packet[4], packet[5]]) + 1;
    packet[4..6].copy_from_slice(&len.to_be_bytes());
    let body = packet.len() - 2;
    let vcrc = ipoib_wire::crc::vcrc(&packet[..body]);
    packet[body..].copy_from_slice(&vcrc.to_le_bytes());
    packet
}

// "Length" errors. MTUCap is the largest MTU a port runs (IBA 1 §14.2.5.6), the MTU of the
// link layer's receive check (docs/PERF-COUNTERS.md): S1's port 3 with MTUCap 2048 (its
// NeighborMTU, what it sends by, left at 4096) discards a 4096-byte payload from the probe and
// counts it in its PortRcvErrors; a 2048-byte one goes through to the CA. The CA's port with
// MTUCap 1024 does the same for 2048 and 1024 bytes. A PktLen one more than the packet's bytes
// (IBA 1 §7.7), as a compliance tester sends it, counts at both too.
#[test]
fn a_payload_over_the_ports_mtu_cap_or_a_wrong_pkt_len_counts_in_port_rcv_errors() {
    let mut f = Fabric::new(23);
    assign_lids(&mut f);
    let s1 = f.s1;
    f.sim
        .with_node::<ipoib_fabric::hw::switch::Switch, _>(s1, |sw, _, _| {
            assert!(sw.set_port_mtu_cap(3, Mtu::Mtu2048))
        })
        .unwrap();
    let ud = |len| ud_packet(PROBE_LID, CA_LID, len, PKey::DEFAULT);
    for p in [ud(4096), pkt_len_plus_one(ud(64)), ud(2048)] {
        assert!(f.exchange(p).is_empty());
    }
    assert_eq!(f.switch(s1).stats().dropped(SwitchDropReason::Malformed), 2);
    assert_eq!(f.port_counters(3, S1_LID).port_rcv_errors, 2);
    assert_eq!(f.port_counters(2, S2_LID).port_rcv_errors, 0);
    assert_eq!(ca_drops(&f), (1, 0));

    f.sim
        .with_node::<Hca, _>(f.ca, |hca, _, _| {
            assert!(hca.set_port_mtu_cap(1, Mtu::Mtu1024))
        })
        .unwrap();
    for p in [ud(2048), pkt_len_plus_one(ud(64)), ud(1024)] {
        to_ca(&mut f, p);
    }
    assert_eq!(ca_drops(&f), (2, 2));
    assert_eq!(f.port_counters(1, CA_LID).port_rcv_errors, 2);
}

// The switch's agents as the HCA's: an SMP is taken on VL15 only, a GMP on any VL but 15 (the
// SMI's and GSI's checks on receipt, IBA 1 §13.5.3.1, docs/PERF-COUNTERS.md). A directed-route
// and a LID-routed SubnGet(NodeInfo) to S1 on VL0, and a PMA Get to S1 on VL15, get no answer
// and count as `SmpDiscarded`, in no port's PortRcvErrors; the same on their own VLs are
// answered.
#[test]
fn a_switchs_agents_take_smps_on_vl15_only_and_gmps_off_it() {
    use ipoib_fabric::hw::sma::{gmp_packet, smp_packet};
    use ipoib_wire::ib::lid::LID_PERMISSIVE;
    use ipoib_wire::mad::attr::smp as attr;
    use ipoib_wire::mad::Method;
    let mut f = Fabric::new(24);
    assign_lids(&mut f);
    let dropped = |f: &Fabric| {
        f.switch(f.s1)
            .stats()
            .dropped(SwitchDropReason::SmpDiscarded)
    };
    let before = dropped(&f);
    let dr = f.smp(Method::Get, attr::NODE_INFO, 0, Some(TO_S1), 0, none());
    let lid = f.smp(Method::Get, attr::NODE_INFO, 0, None, 0, none());
    let pma = f.perf_mad(perf_attr::PORT_COUNTERS, 3);
    let packets = [
        smp_packet(LID_PERMISSIVE, LID_PERMISSIVE, 0, &dr),
        smp_packet(PROBE_LID, S1_LID, 0, &lid),
        gmp_packet(PROBE_LID, S1_LID, 0, PKey::DEFAULT, 1, &pma),
    ];
    for (p, vl) in packets.iter().zip([0, 0, 15]) {
        assert!(f.exchange(on_vl(p.clone(), vl)).is_empty(), "VL {vl}");
    }
    assert_eq!(dropped(&f) - before, 3);
    for p in packets {
        assert_eq!(f.exchange(p).len(), 1);
    }
    assert_eq!(dropped(&f) - before, 3);
    for port in [0, 3] {
        assert_eq!(f.port_counters(port, S1_LID).port_rcv_errors, 0);
    }
}

// A port's defaults, before any SM wrote anything: PortInfo reports VLCap and OperationalVLs 1
// (VL0), a directed-route SMP (VL15) is answered, a VL0 data packet is no malformed packet (S1's
// port 3, in Init, discards it for its state, IBA 1 §7.2), a VL 1 one is.
#[test]
fn a_ports_defaults_take_vl0_and_vl15_before_any_sm() {
    let mut f = Fabric::new(25);
    let p = get_port_info(&mut f, TO_S1, 3, 0).expect("a directed-route SMP is answered");
    assert_eq!((p.vl_cap, p.operational_vls), (1, 1));
    let c = get_port_info(&mut f, TO_CA, 1, 0).expect("the CA's SMA answers");
    assert_eq!((c.vl_cap, c.operational_vls), (1, 1));
    let good = ud_packet(PROBE_LID, CA_LID, 64, PKey::DEFAULT);
    assert!(f.exchange(good.clone()).is_empty());
    let s = f.switch(f.s1).stats();
    let d = |s: &ipoib_fabric::hw::switch::SwitchStats| {
        (
            s.dropped(SwitchDropReason::InPortNotArmed),
            s.dropped(SwitchDropReason::Malformed),
        )
    };
    assert_eq!(d(&s), (1, 0));
    assert!(f.exchange(on_vl(good, 1)).is_empty());
    assert_eq!(d(&f.switch(f.s1).stats()), (1, 1));
}
