use super::*;
use crate::hw::frame::SWITCH_HOP_LIMIT;
use crate::hw::mgmt::PortConfig;
use crate::hw::sim::Frame;
use ipoib_wire::ib::{DethRepr, Opcode};
use ipoib_wire::packet::{fill_crcs, Packet, PacketRepr};
use ipoib_wire::QKey;
use ipoib_wire::{Mtu, PKey, Rate};

pub(crate) use crate::testing::ud_packet as ud;

fn port(port: u8, mtu: u8, pkeys: Vec<u16>) -> Config {
    Config::Port(PortConfig {
        port,
        lid: if port == 0 { 9 } else { 0 },
        lmc: 0,
        sm_lid: 1,
        sm_sl: 0,
        subnet_prefix: ipoib_wire::Gid::DEFAULT_SUBNET_PREFIX,
        state: PortState::Active,
        mtu: Mtu::from(mtu),
        rate: Rate::Gbps10,
        pkeys: pkeys.into_iter().map(PKey).collect(),
    })
}

/// A 4-port switch, LID 9: LID 2 -> port 1, 3 -> port 2, 4 -> 255; MLID 0xC001 -> 1, 2, 3.
pub(crate) fn switch() -> Switch {
    let mut sw = Switch::new(Guid(0x20_0000), 4, "sw");
    let mut tx = Tx::default();
    let mut lft = vec![LFT_DROP; 10];
    lft[2] = 1;
    lft[3] = 2;
    for (p, mtu) in [(0, 5), (1, 5), (2, 1), (3, 5), (4, 5)] {
        sw.configure(Instant::ZERO, port(p, mtu, vec![0xffff]), &mut tx);
    }
    lft[9] = 0;
    sw.configure(Instant::ZERO, Config::Lft(lft), &mut tx);
    sw.configure(
        Instant::ZERO,
        Config::Mft {
            mlid: 0xc001,
            ports: vec![3, 1, 2],
        },
        &mut tx,
    );
    assert!(tx.is_empty());
    sw
}

fn feed(sw: &mut Switch, inport: u8, p: Vec<u8>) -> Vec<(u8, Vec<u8>)> {
    let mut tx = Tx::default();
    sw.receive(Instant::ZERO, inport, p, &mut tx);
    tx.drain().collect()
}

#[test]
fn unicast_follows_the_lft_byte_for_byte() {
    let mut sw = switch();
    let p = ud(2, 3, 100, PKey(0xffff));
    let out = feed(&mut sw, 1, p.clone());
    assert_eq!(out, vec![(2, p)]);
    assert_eq!(sw.stats().forwarded, 1);
    assert_eq!(sw.lid(), 9);
    assert_eq!(sw.sm_lid(), 1);
}

#[test]
fn unknown_lid_and_lft_255_are_dropped_and_counted() {
    let mut sw = switch();
    assert!(feed(&mut sw, 1, ud(2, 100, 8, PKey(0xffff))).is_empty()); // beyond the LFT
    assert!(feed(&mut sw, 1, ud(2, 0, 8, PKey(0xffff))).is_empty());
    assert!(feed(&mut sw, 1, ud(2, 4, 8, PKey(0xffff))).is_empty());
    let s = sw.stats();
    assert_eq!(s.dropped(SwitchDropReason::UnknownLid), 2);
    assert_eq!(s.dropped(SwitchDropReason::LftDrop), 1);
    assert_eq!(s.forwarded, 0);
}

/// IBA 1 §16.1.3.5 PortRcvSwitchRelayErrors (DLID mapping): an LFT entry naming a port the
/// switch does not have, DLID 0 and the permissive DLID on a packet that is no directed-route
/// SMP are not forwarded, each counted once in the arrival port's relay errors; nothing counts
/// in any port's PortXmitDiscards.
#[test]
fn an_lft_port_the_switch_lacks_and_reserved_dlids_are_relay_errors() {
    let mut sw = switch();
    let mut tx = Tx::default();
    let mut lft = sw.lft().to_vec();
    lft[5] = 7; // a 4-port switch
    sw.configure(Instant::ZERO, Config::Lft(lft), &mut tx);
    for dlid in [5, 0, 0xffff] {
        assert!(feed(&mut sw, 3, ud(2, dlid, 8, PKey(0xffff))).is_empty());
    }
    let s = sw.stats();
    assert_eq!(s.dropped(SwitchDropReason::LftDrop), 1);
    assert_eq!(s.dropped(SwitchDropReason::UnknownLid), 2);
    let t: Vec<_> = (0..=4).map(|p| sw.port_traffic(p).unwrap()).collect();
    let relay: Vec<u64> = t.iter().map(|t| t.rcv_switch_relay_errors).collect();
    assert_eq!(relay, [0, 0, 0, 3, 0]);
    assert!(t.iter().all(|t| t.xmit_discards == 0));
}

#[test]
fn own_lid_goes_to_management_port() {
    let mut sw = switch();
    assert!(feed(&mut sw, 1, ud(2, 9, 8, PKey(0xffff))).is_empty());
    assert_eq!(sw.stats().to_management, 1);
    assert_eq!(sw.stats().dropped_total(), 0);
}

/// IBA 1 §18.2.4.3: a multicast packet leaves by every MFT port except its arrival port.
#[test]
fn multicast_replicates_to_every_member_port_but_the_arrival_port() {
    let mut sw = switch();
    let p = ud(2, 0xc001, 64, PKey(0xffff));
    let out = feed(&mut sw, 1, p.clone());
    assert_eq!(out, vec![(2, p.clone()), (3, p.clone())]);
    let out = feed(&mut sw, 4, p.clone());
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert!(feed(&mut sw, 1, ud(2, 0xc002, 64, PKey(0xffff))).is_empty());
    assert_eq!(sw.stats().dropped(SwitchDropReason::NoMftEntry), 1);
    // An empty entry removes the group.
    let mut tx = Tx::default();
    sw.configure(
        Instant::ZERO,
        Config::Mft {
            mlid: 0xc001,
            ports: vec![],
        },
        &mut tx,
    );
    assert!(feed(&mut sw, 1, p).is_empty());
    assert_eq!(sw.stats().dropped(SwitchDropReason::NoMftEntry), 2);
}

#[test]
fn oversized_payload_is_dropped_at_the_output_mtu() {
    let mut sw = switch();
    // Port 2 has MTU code 1 = 256 bytes of payload.
    assert_eq!(feed(&mut sw, 1, ud(2, 3, 256, PKey(0xffff))).len(), 1);
    assert!(feed(&mut sw, 1, ud(2, 3, 257, PKey(0xffff))).is_empty());
    assert_eq!(sw.stats().dropped(SwitchDropReason::Mtu), 1);
    // The same size fits port 1 (4096).
    assert_eq!(feed(&mut sw, 2, ud(3, 2, 257, PKey(0xffff))).len(), 1);
    // Multicast copies are checked per port: port 2 drops, 3 forwards.
    let out = feed(&mut sw, 1, ud(2, 0xc001, 1000, PKey(0xffff)));
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), vec![3]);
    assert_eq!(sw.stats().dropped(SwitchDropReason::Mtu), 2);
}

/// A PortInfo write with an undefined MTU code is refused whole: the port keeps its MTU (and its
/// P_Keys), so the MTU check never meets an undefined code.
#[test]
fn port_write_with_an_undefined_mtu_is_refused() {
    let mut sw = switch();
    let mut tx = Tx::default();
    for code in [0, 6, 15] {
        sw.configure(Instant::ZERO, port(2, code, vec![0x8001]), &mut tx);
        assert_eq!(sw.port_mtu(2), Some(Mtu::Mtu256), "code {code}");
    }
    assert_eq!(feed(&mut sw, 1, ud(2, 3, 256, PKey(0xffff))).len(), 1);
    sw.configure(Instant::ZERO, port(2, 5, vec![0xffff]), &mut tx);
    assert_eq!(sw.port_mtu(2), Some(Mtu::Mtu4096));
}

/// IBA 1 §7.8: the VCRC is checked at every hop, the ICRC only end to end.
#[test]
fn bad_vcrc_is_dropped_but_bad_icrc_is_forwarded() {
    let mut sw = switch();
    let mut p = ud(2, 3, 40, PKey(0xffff));
    let n = p.len();
    p[n - 10] ^= 1; // a payload byte: both CRCs now wrong
    assert!(feed(&mut sw, 1, p.clone()).is_empty());
    assert_eq!(sw.stats().dropped(SwitchDropReason::VcrcBad), 1);
    // Recompute the VCRC only: the ICRC stays wrong, the switch forwards.
    let v = crc::vcrc(&p[..n - 2]);
    p[n - 2..].copy_from_slice(&v.to_le_bytes());
    assert_eq!(feed(&mut sw, 1, p).len(), 1);
}

/// IBA 1 §7.8.2 with the emulation's shortcut (`crate::hw::frame`): a packet whose CRCs the
/// emulation computed is forwarded without a VCRC check, with its mark; once its bytes were
/// changed (a corrupting link) the mark is gone and the switch checks and drops it as before.
#[test]
fn a_marked_frame_is_checked_again_once_its_bytes_change() {
    let mut sw = switch();
    let p = ud(2, 3, 40, PKey(0xffff));
    let mut tx = Tx::default();
    sw.receive_frame(Instant::ZERO, 1, Frame::with_crcs(p.clone()), &mut tx);
    let out: Vec<(u8, Frame)> = tx.drain_frames().collect();
    assert_eq!(out.len(), 1);
    assert!(out[0].1.crcs_good(), "forwarded unchanged, with its mark");
    assert_eq!(&out[0].1[..], &p[..]);
    let mut f = Frame::with_crcs(p);
    let n = f.len();
    f.bytes_mut()[n - 10] ^= 1;
    sw.receive_frame(Instant::ZERO, 1, f, &mut tx);
    assert!(tx.is_empty());
    assert_eq!(sw.stats().dropped(SwitchDropReason::VcrcBad), 1);
}

/// A directed-route SubnGet(NodeInfo) packet along `path` (InitialPath[1..], HopCount its
/// length) as it reaches the first switch: HopPointer 1, DrSLID and DrDLID permissive.
/// A UDP fabric slot checks a host's packet's VCRC as the switch port at the other end of its
/// cable would (IBA 1 §7.8.2) and marks the frame (`Frame::with_vcrc_checked`): the port takes
/// the mark for its check's result and does not compute the VCRC again (here the mark is false,
/// which shows it), and the frame leaves without a mark for the ICRC, which its destination
/// checks (IBA 1 §7.8.1).
#[test]
fn a_frame_whose_vcrc_a_slot_checked_is_not_checked_again() {
    let mut sw = switch();
    let mut p = ud(2, 3, 40, PKey(0xffff));
    let mut tx = Tx::default();
    sw.receive_frame(
        Instant::ZERO,
        1,
        Frame::with_vcrc_checked(p.clone()),
        &mut tx,
    );
    let out: Vec<(u8, Frame)> = tx.drain_frames().collect();
    assert_eq!(out.len(), 1);
    assert!(out[0].1.vcrc_good() && !out[0].1.crcs_good());
    assert_eq!(&out[0].1[..], &p[..]);
    let n = p.len();
    p[n - 1] ^= 1;
    sw.receive_frame(
        Instant::ZERO,
        1,
        Frame::with_vcrc_checked(p.clone()),
        &mut tx,
    );
    assert_eq!(tx.len(), 1, "the VCRC is not computed again");
    assert_eq!(sw.stats().dropped(SwitchDropReason::VcrcBad), 0);
    let _ = tx.drain_frames().count();
    sw.receive_frame(Instant::ZERO, 1, Frame::new(p), &mut tx);
    assert!(tx.is_empty(), "unmarked, it is checked");
    assert_eq!(sw.stats().dropped(SwitchDropReason::VcrcBad), 1);
}

fn dr_node_info_at_hop_1(path: &[u8]) -> Vec<u8> {
    use crate::hw::sma::smp_packet;
    use ipoib_wire::mad::attr::smp as attr;
    use ipoib_wire::mad::MgmtClass;
    use ipoib_wire::smp::{DirectedRoute, SmpMadRepr, SmpRoute};
    let mut dr = SmpMadRepr::lid_routed_get(1, attr::NODE_INFO, 0);
    dr.header.mgmt_class = MgmtClass::SubnDirectedRoute;
    dr.header.class_specific = 1 << 8 | path.len() as u16;
    let mut initial_path = [0u8; 64];
    initial_path[1..=path.len()].copy_from_slice(path);
    dr.route = SmpRoute::Directed(DirectedRoute {
        dr_slid: 0xffff,
        dr_dlid: 0xffff,
        initial_path,
        return_path: [0; 64],
    });
    smp_packet(0xffff, 0xffff, 0, &dr.to_bytes())
}

/// IBA 1 §7.8.1: the switch's management port is the end port of a packet for its agents, so it
/// checks the ICRC there: a directed-route SMP (always for the agent at each hop) with a bad ICRC
/// is dropped and counted; a LID-routed SMP for another node passes through unchecked.
#[test]
fn bad_icrc_is_dropped_by_the_agents_but_not_in_transit() {
    use crate::hw::sma::smp_packet;
    use ipoib_wire::mad::attr::smp as attr;
    use ipoib_wire::smp::SmpMadRepr;
    // HopPointer 1 = HopCount 1: this switch.
    let good = dr_node_info_at_hop_1(&[1]);
    // Flip an ICRC bit, then give the packet a good VCRC again.
    let bad_icrc = |mut p: Vec<u8>| {
        let n = p.len();
        p[n - 3] ^= 1;
        let v = crc::vcrc(&p[..n - 2]);
        p[n - 2..].copy_from_slice(&v.to_le_bytes());
        p
    };
    let mut sw = switch();
    assert_eq!(feed(&mut sw, 1, good.clone()).len(), 1, "answered");
    assert!(feed(&mut sw, 1, bad_icrc(good)).is_empty());
    assert_eq!(sw.stats().dropped(SwitchDropReason::SmpDiscarded), 1);
    assert_eq!(sw.stats().dropped_total(), 1);
    // LID-routed, to LID 3 behind port 2: forwarded with its bad ICRC.
    let lid = SmpMadRepr::lid_routed_get(2, attr::NODE_INFO, 0);
    let out = feed(&mut sw, 1, bad_icrc(smp_packet(2, 3, 0, &lid.to_bytes())));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, 2);
    // And to the switch itself (LID 9): dropped like the directed-route one.
    assert!(feed(&mut sw, 1, bad_icrc(smp_packet(2, 9, 0, &lid.to_bytes()))).is_empty());
    assert_eq!(sw.stats().dropped(SwitchDropReason::SmpDiscarded), 2);
}

/// IBA 1 §14.2.2.2 with the emulation's shortcut (`crate::hw::frame`): a marked directed-route
/// SMP re-sent by the switch leaves with its CRCs pending; written, they are the bytes the
/// switch writes for the same SMP unmarked (checked, then `update_crcs`).
#[test]
fn a_marked_directed_route_smp_leaves_with_pending_crcs_that_seal_to_the_same_bytes() {
    // HopPointer 1, HopCount 2: on to the next hop.
    let smp = dr_node_info_at_hop_1(&[1, 2]);
    let checked = feed(&mut switch(), 1, smp.clone());
    assert_eq!(checked.len(), 1);
    assert_eq!(checked[0].0, 2);
    let mut sw = switch();
    let mut tx = Tx::default();
    sw.receive_frame(Instant::ZERO, 1, Frame::with_crcs(smp), &mut tx);
    let out: Vec<(u8, Frame)> = tx.drain_frames().collect();
    assert_eq!(out.len(), 1);
    let (port, frame) = out.into_iter().next().unwrap();
    assert_eq!(port, 2);
    assert!(frame.crcs_good());
    assert_ne!(&frame[..], &checked[0].1[..], "CRC fields not written yet");
    assert_eq!(frame.into_vec(), checked[0].1, "sealed: the same bytes");
    assert_eq!(sw.stats().smp_forwarded, 1);
}

#[test]
fn malformed_packets_are_dropped_and_counted() {
    let mut sw = switch();
    let p = ud(2, 3, 40, PKey(0xffff));
    assert!(feed(&mut sw, 1, p[..5].to_vec()).is_empty());
    assert!(feed(&mut sw, 1, p[..p.len() - 4].to_vec()).is_empty());
    assert!(feed(&mut sw, 1, Vec::new()).is_empty());
    // PktLen says 4 words: LRH + BTH do not fit, even with a correct VCRC.
    let mut short = p[..18].to_vec();
    short[4] = 0;
    short[5] = 4;
    let v = crc::vcrc(&short[..16]);
    short[16..].copy_from_slice(&v.to_le_bytes());
    assert!(fill_crcs(&mut short).is_err());
    assert!(feed(&mut sw, 1, short).is_empty());
    assert_eq!(sw.stats().dropped(SwitchDropReason::Malformed), 4);
}

#[test]
fn down_output_port_drops() {
    let mut sw = switch();
    let mut tx = Tx::default();
    sw.link_state(Instant::ZERO, 2, false, &mut tx);
    assert!(feed(&mut sw, 1, ud(2, 3, 8, PKey(0xffff))).is_empty());
    assert_eq!(sw.stats().dropped(SwitchDropReason::PortDown), 1);
    // Trained again, the port is in Init (IBA 1 §7.2): data waits for the SM to make it Active.
    sw.link_state(Instant::ZERO, 2, true, &mut tx);
    assert!(feed(&mut sw, 1, ud(2, 3, 8, PKey(0xffff))).is_empty());
    sw.configure(Instant::ZERO, port(2, 1, vec![0xffff]), &mut tx);
    assert_eq!(feed(&mut sw, 1, ud(2, 3, 8, PKey(0xffff))).len(), 1);
    assert_eq!(
        sw.port_traffic(2).unwrap().xmit_discards,
        2,
        "PortXmitDiscards"
    );
}

/// Port `p` of the test switch in `state` (MTU 4096).
fn set_state(sw: &mut Switch, p: u8, state: PortState) {
    let Config::Port(mut c) = port(p, 5, vec![0xffff]) else {
        unreachable!()
    };
    c.state = state;
    sw.configure(Instant::ZERO, Config::Port(c), &mut Tx::default());
}

/// A LID-routed SubnGet(NodeInfo) from `slid` to `dlid` (VL15).
fn lid_routed_smp(slid: u16, dlid: u16) -> Vec<u8> {
    let mad =
        ipoib_wire::smp::SmpMadRepr::lid_routed_get(7, ipoib_wire::mad::attr::smp::NODE_INFO, 0);
    crate::hw::sma::smp_packet(slid, dlid, 0, &mad.to_bytes())
}

/// IBA 1 §7.2 and §16.1.3.5: a data packet for an output port in Init or Armed is discarded
/// and counted in its PortXmitDiscards; an SMP (VL15) leaves by it.
#[test]
fn a_data_packet_to_an_output_port_not_active_is_discarded() {
    let mut sw = switch();
    for (i, state) in [PortState::Init, PortState::Armed].into_iter().enumerate() {
        set_state(&mut sw, 2, state);
        assert!(feed(&mut sw, 1, ud(2, 3, 8, PKey(0xffff))).is_empty());
        let n = i as u64 + 1;
        assert_eq!(sw.stats().dropped(SwitchDropReason::PortNotActive), n);
        assert_eq!(sw.port_traffic(2).unwrap().xmit_discards, n);
        let smp = lid_routed_smp(2, 3);
        assert_eq!(feed(&mut sw, 1, smp.clone()), vec![(2, smp)], "{state:?}");
    }
    // Multicast: the copy for the Armed port 2 is discarded, the others leave.
    let out = feed(&mut sw, 1, ud(2, 0xc001, 8, PKey(0xffff)));
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), vec![3]);
    assert_eq!(sw.stats().dropped(SwitchDropReason::PortNotActive), 3);
    set_state(&mut sw, 2, PortState::Active);
    assert_eq!(feed(&mut sw, 1, ud(2, 3, 8, PKey(0xffff))).len(), 1);
}

/// IBA 1 §7.2: a port in Init receives SMPs only, so a data packet arriving there is discarded
/// (counted as `InPortNotArmed`, not in PortRcvErrors, whose causes §16.1.3.5 lists); an Armed
/// port receives data packets.
#[test]
fn a_data_packet_arriving_at_a_port_in_init_is_discarded() {
    let mut sw = switch();
    set_state(&mut sw, 1, PortState::Init);
    assert!(feed(&mut sw, 1, ud(2, 3, 8, PKey(0xffff))).is_empty());
    assert_eq!(sw.stats().dropped(SwitchDropReason::InPortNotArmed), 1);
    assert_eq!(
        sw.port_traffic(1).unwrap().rcv_pkts,
        1,
        "PortRcvPkts counts it"
    );
    let smp = lid_routed_smp(2, 3);
    assert_eq!(feed(&mut sw, 1, smp.clone()), vec![(2, smp)]);
    set_state(&mut sw, 1, PortState::Armed);
    assert_eq!(feed(&mut sw, 1, ud(2, 3, 8, PKey(0xffff))).len(), 1);
    assert_eq!(sw.stats().dropped_total(), 1);
}

/// The module docs: a packet dropped at its output port counts in that port's PortXmitDiscards
/// (IBA 1 §16.1.3.5, the port down), a directed-route SMP the switch re-sends toward a down port
/// as a packet it forwards by its LFT.
#[test]
fn a_directed_route_smp_toward_a_down_port_counts_in_port_xmit_discards() {
    let mut sw = switch();
    let mut tx = Tx::default();
    sw.link_state(Instant::ZERO, 2, false, &mut tx);
    let _ = tx.drain_frames().count();
    assert!(feed(&mut sw, 1, dr_node_info_at_hop_1(&[1, 2])).is_empty());
    assert_eq!(sw.stats().dropped(SwitchDropReason::PortDown), 1);
    assert_eq!(sw.port_traffic(2).unwrap().xmit_discards, 1);
}

/// The lifetime limit (module docs, check 6): a frame already forwarded by SWITCH_HOP_LIMIT
/// switches is discarded at its output port and counted there in PortXmitDiscards; one
/// forwarded by one switch fewer goes out, its count one more, its bytes unchanged.
#[test]
fn a_frame_forwarded_by_too_many_switches_is_discarded() {
    let mut sw = switch();
    let p = ud(2, 3, 8, PKey(0xffff));
    let mut aged = Frame::with_crcs(p.clone());
    for _ in 1..SWITCH_HOP_LIMIT {
        assert!(aged.count_switch_hop());
    }
    assert_eq!(aged.switch_hops(), SWITCH_HOP_LIMIT - 1);
    let mut tx = Tx::default();
    sw.receive_frame(Instant::ZERO, 1, aged.clone(), &mut tx);
    let out: Vec<(u8, Frame)> = tx.drain_frames().collect();
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].0, out[0].1.switch_hops()), (2, SWITCH_HOP_LIMIT));
    assert_eq!(&out[0].1[..], &p[..]);
    sw.receive_frame(Instant::ZERO, 1, out[0].1.clone(), &mut tx);
    assert!(tx.is_empty());
    assert_eq!(sw.stats().dropped(SwitchDropReason::Lifetime), 1);
    assert_eq!(sw.stats().forwarded, 1);
    assert_eq!(sw.port_traffic(2).unwrap().xmit_discards, 1);
    assert_eq!(sw.port_traffic(1).unwrap().xmit_discards, 0);
    // A new frame starts at 0.
    assert_eq!(Frame::new(p).switch_hops(), 0);
}

/// IBA 1 §16.1.3.5: LinkDownedCounter counts a trained link going down, not a port that never
/// trained (a fabric slot with no host at power-on) nor one told again that it is down.
#[test]
fn link_downed_counts_only_links_that_had_trained() {
    let mut sw = Switch::new(Guid(0x20_0000), 4, "sw");
    let mut tx = Tx::default();
    sw.link_state(Instant::ZERO, 2, false, &mut tx);
    sw.link_state(Instant::ZERO, 2, false, &mut tx);
    assert_eq!(sw.port_traffic(2).unwrap().link_downed, 0);
    sw.link_state(Instant::ZERO, 2, true, &mut tx);
    sw.link_state(Instant::ZERO, 2, false, &mut tx);
    assert_eq!(sw.port_traffic(2).unwrap().link_downed, 1);
}

/// IBA 1 §10.9: with enforcement on, the P_Key must match both ports' tables; off by default.
#[test]
fn partition_enforcement_is_optional() {
    let mut sw = switch();
    let mut tx = Tx::default();
    sw.configure(Instant::ZERO, port(2, 5, vec![0x8001]), &mut tx);
    sw.configure(Instant::ZERO, port(1, 5, vec![0x8001, 0xffff]), &mut tx);
    assert_eq!(feed(&mut sw, 1, ud(2, 3, 8, PKey(0xffff))).len(), 1);
    sw.set_partition_enforcement(true);
    assert!(feed(&mut sw, 1, ud(2, 3, 8, PKey(0xffff))).is_empty());
    assert_eq!(sw.stats().dropped(SwitchDropReason::Partition), 1);
    assert_eq!(feed(&mut sw, 1, ud(2, 3, 8, PKey(0x0001))).len(), 1);
    assert_eq!(feed(&mut sw, 1, ud(2, 3, 8, PKey(0x8001))).len(), 1);
    let pkey_match = |a: u16, b: u16| PKey(a).matches(PKey(b));
    assert!(pkey_match(0x8001, 0x0001));
    assert!(!pkey_match(0x0001, 0x0001));
    assert!(!pkey_match(0x8000, 0x8000));
}

/// IBA 1 §10.9, §16.1.3.5: with enforcement on, a multicast packet is checked once against its
/// arrival port's table (failing: no copy at all, one PortRcvConstraintErrors there) and each
/// copy against its own output port's table (failing: that copy only, one
/// PortXmitConstraintErrors at that port; the other member ports still get theirs).
#[test]
fn partition_enforcement_filters_each_multicast_copy_at_its_output_port() {
    let mut sw = switch();
    let mut tx = Tx::default();
    sw.configure(Instant::ZERO, port(1, 5, vec![0xffff, 0x8001]), &mut tx);
    sw.configure(Instant::ZERO, port(3, 5, vec![0xffff, 0x8001]), &mut tx);
    sw.set_partition_enforcement(true);
    let traffic = |sw: &Switch, p: u8| {
        let t = sw.port_traffic(p).unwrap();
        (t.rcv_constraint_errors, t.xmit_constraint_errors)
    };
    // From port 1 (which holds 0x8001): port 2 lacks it, port 3 gets its copy.
    let p = ud(2, 0xc001, 64, PKey(0x8001));
    let out = feed(&mut sw, 1, p.clone());
    assert_eq!(out, vec![(3, p.clone())]);
    assert_eq!([1, 2, 3].map(|n| traffic(&sw, n)), [(0, 0), (0, 1), (0, 0)]);
    // From port 2 (which lacks it): no copy, counted at port 2 on receipt only.
    assert!(feed(&mut sw, 2, p).is_empty());
    assert_eq!([1, 2, 3].map(|n| traffic(&sw, n)), [(0, 0), (1, 1), (0, 0)]);
    assert_eq!(sw.stats().dropped(SwitchDropReason::Partition), 2);
    // 0xFFFF is in every table: every member port but the arrival one.
    let out = feed(&mut sw, 2, ud(2, 0xc001, 64, PKey(0xffff)));
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), vec![1, 3]);
}

/// The one parse of a marked frame's headers ([`Headers`]) reads what the step by step reads of
/// an unmarked one read: payload length, BTH P_Key and QP, and where a MAD starts (with a good
/// ICRC), for a data packet, an SMP, a GMP, a packet with a GRH and a raw one; and it refuses
/// what it cannot parse, so that such a packet takes the step by step reads.
#[test]
fn one_parse_reads_what_the_step_by_step_reads_read() {
    use crate::hw::sma::{gmp_packet, smp_packet};
    use ipoib_wire::ib::GrhRepr;
    use ipoib_wire::Gid;
    let mut grh_packet = {
        let payload = [7u8; 37];
        let lrh = LrhRepr {
            vl: 0,
            lver: 0,
            sl: 0,
            lnh: Lnh::IbaGlobal,
            dlid: 2,
            pkt_len: 0,
            slid: 1,
        };
        let grh = GrhRepr::new(Gid::ZERO, Gid::ZERO, 0);
        let bth = BthRepr::new(Opcode::UD_SEND_ONLY, PKey(0x8001), 5, 0);
        let deth = DethRepr {
            qkey: QKey(1),
            src_qp: 2,
        };
        let repr = PacketRepr::ud_send_only(lrh, Some(grh), bth, deth, &payload);
        let mut buf = vec![0; repr.buffer_len()];
        repr.emit(&mut buf).expect("emit");
        buf
    };
    let raw = {
        let mut b = vec![0u8; 8 + 16 + 2];
        LrhRepr {
            vl: 0,
            lver: 0,
            sl: 0,
            lnh: Lnh::Raw,
            dlid: 2,
            pkt_len: 6,
            slid: 1,
        }
        .emit(&mut ipoib_wire::ib::Lrh::new_unchecked(&mut b[..8]));
        fill_crcs(&mut b).expect("crcs");
        b
    };
    let packets = [
        ud(1, 2, 40, PKey(0xffff)),
        ud(1, 2, 41, PKey(0x8001)),
        dr_node_info_at_hop_1(&[3, 4]),
        smp_packet(1, 2, 0, &[0x11; 256]),
        gmp_packet(1, 2, 0, PKey(0xffff), 1, &[0x22; 256]),
        grh_packet.clone(),
        raw,
    ];
    for p in &packets {
        let lrh = LrhRepr::parse_bytes(p).expect("lrh");
        let h = Headers::of(&lrh, p).expect("parses");
        assert_eq!(Some(h.payload), Switch::payload_len(&lrh, p), "{p:02x?}");
        assert_eq!(h.bth, Switch::pkey_and_qp(&lrh, p));
        let mad = sma::mad_offset(&Frame::new(p.clone())).map(|(off, _, icrc_ok)| {
            assert!(icrc_ok);
            off
        });
        assert_eq!(h.mad, mad);
    }
    // Headers::of refuses exactly what the packet parser refuses, and otherwise reads the
    // parser's payload: the packets above, and each with one header field changed (every value
    // of the BTH's opcode and PadCnt byte; a GRH's PayLen and NxtHdr).
    let mut variants = Vec::new();
    for p in &packets {
        let bth_at = if p[1] & 3 == 3 { 8 + 40 } else { 8 };
        for b in 0..=255u8 {
            for at in [bth_at, bth_at + 1] {
                let mut v = p.clone();
                v[at] = b;
                variants.push(v);
            }
        }
    }
    for at in [8 + 4, 8 + 5, 8 + 6] {
        let mut v = grh_packet.clone();
        v[at] ^= 0x10;
        variants.push(v);
    }
    for v in packets.iter().chain(&variants) {
        let lrh = LrhRepr::parse_bytes(v).expect("lrh");
        let parsed = Packet::parse_crcs_known_good(v);
        let h = Headers::of(&lrh, v);
        assert_eq!(h.is_some(), parsed.is_ok(), "{v:02x?}");
        if let (Some(h), Ok(p)) = (h, parsed) {
            assert_eq!(h.payload, p.payload.len());
            assert_eq!(h.bth, p.bth.map(|b| (b.pkey, b.dest_qp)));
        }
    }
    // A GRH whose NxtHdr is not IBA: the full parse refuses it, the step by step reads pass it.
    grh_packet[8 + 6] = 0x3b;
    let lrh = LrhRepr::parse_bytes(&grh_packet).expect("lrh");
    assert!(Headers::of(&lrh, &grh_packet).is_none());
    assert!(Switch::payload_len(&lrh, &grh_packet).is_some());
}

proptest::proptest! {
    /// [`Headers::of`] against the packet parser and the step by step reads on arbitrary bytes
    /// whose PktLen agrees with their length (and often whose GRH NxtHdr and PayLen agree too,
    /// so that the reads get past it): refused exactly when the parser refuses; otherwise the
    /// parser's payload length, the step by step reads' values and the MAD's offset.
    #[test]
    fn one_parse_agrees_with_the_parser_on_any_bytes(
        mut v in proptest::collection::vec(proptest::arbitrary::any::<u8>(), 8..400),
        grh_fix in 0..3u8,
        paylen_off in 0..3u16,
        target in proptest::sample::select(vec![None, Some(0usize), Some(4), Some(256)]),
    ) {
        // Often a length that leaves `target` bytes for payload and pad after the headers the
        // opcode calls for: a pad longer than what is left, a MAD's 256 bytes.
        if let Some(t) = target.filter(|_| v[1] & 2 != 0 && v.len() >= 8 + 40 + 12) {
            let bth_at = if v[1] & 3 == 3 { 8 + 40 } else { 8 };
            let set = Opcode(v[bth_at]).ext_headers().unwrap_or(ExtHeaderSet::NONE);
            v.resize(bth_at + 12 + set.len() + t + 4 + 2, 0x5a);
        }
        let words = (v.len() - 2) / 4;
        v.truncate(words * 4 + 2);
        v[4] = (words >> 8) as u8 & 7;
        v[5] = words as u8;
        // A GRH with NxtHdr IBA (1), and also the right PayLen or one a word or two off (2).
        if grh_fix > 0 && v[1] & 3 == 3 && v.len() >= 8 + 40 + 2 {
            v[8 + 6] = GrhRepr::NXT_HDR_IBA;
            if grh_fix == 2 {
                let paylen = (v.len() - 2 - 8 - 40) as u16 + 4 * paylen_off;
                v[8 + 4..8 + 6].copy_from_slice(&paylen.to_be_bytes());
            }
        }
        let Ok(lrh) = LrhRepr::parse_bytes(&v) else {
            return Ok(());
        };
        let parsed = Packet::parse_crcs_known_good(&v);
        let h = Headers::of(&lrh, &v);
        proptest::prop_assert_eq!(h.is_some(), parsed.is_ok());
        if let (Some(h), Ok(p)) = (h, parsed) {
            proptest::prop_assert_eq!(h.payload, p.payload.len());
            proptest::prop_assert_eq!(Some(h.payload), Switch::payload_len(&lrh, &v));
            proptest::prop_assert_eq!(h.bth, Switch::pkey_and_qp(&lrh, &v));
            let mad = sma::mad_offset(&Frame::new(v.clone())).map(|(off, _, _)| off);
            proptest::prop_assert_eq!(h.mad, mad);
        }
    }
}

/// Check 6 of the module docs: a copy the simulator discarded at a full output port buffer
/// (`Device::discarded`) is taken back from the port's sent counters and counted as a discard
/// there (IBA 1 §16.1.3.5 PortXmitDiscards, the port congested) and as `BufferFull`.
#[test]
fn a_copy_discarded_at_a_full_port_buffer_counts_as_a_discard_not_as_sent() {
    let mut sw = switch();
    assert_eq!(sw.port_buffer(), Some(SWITCH_PORT_BUFFER));
    let out = feed(&mut sw, 1, ud(2, 0xc001, 64, PKey(0xffff)));
    assert_eq!(out.len(), 2, "to ports 2 and 3");
    let before = sw.port_traffic(3).unwrap();
    assert_eq!((before.xmit_pkts, before.multicast_xmit_pkts), (1, 1));
    sw.discarded(3, &Frame::new(out[1].1.clone()));
    let after = sw.port_traffic(3).unwrap();
    assert_eq!(after.xmit_pkts, 0);
    assert_eq!(after.multicast_xmit_pkts, 0);
    assert_eq!(after.xmit_words, 0);
    assert_eq!(after.xmit_discards, 1);
    assert_eq!(sw.port_traffic(2).unwrap().xmit_pkts, 1, "port 2 untouched");
    assert_eq!(sw.stats().dropped(SwitchDropReason::BufferFull), 1);
}

/// IBA 1 §16.1.3.5 PortRcvErrors: a packet the port receives malformed (LVer not 0, IBA 1 §7.7;
/// a PktLen that does not match its bytes) or with a bad VCRC is discarded and counted on the
/// arrival port; a bad ICRC is no error at a switch (it forwards the packet, §7.8.1), nor is a
/// DLID without a route.
#[test]
fn malformed_packets_and_bad_vcrcs_count_in_the_arrival_ports_rcv_errors() {
    let mut sw = switch();
    let good = ud(2, 3, 40, PKey(0xffff));
    let n = good.len();
    let mut lver = good.clone();
    lver[0] |= 1; // LVer 1
    fill_crcs(&mut lver).unwrap();
    let mut short = good[..n - 4].to_vec(); // PktLen now says 4 bytes more
    let v = crc::vcrc(&short[..n - 6]);
    short[n - 6..].copy_from_slice(&v.to_le_bytes());
    let mut bad_vcrc = good.clone();
    bad_vcrc[n - 1] ^= 1;
    let mut bad_icrc = good.clone();
    bad_icrc[n - 3] ^= 1;
    let v = crc::vcrc(&bad_icrc[..n - 2]);
    bad_icrc[n - 2..].copy_from_slice(&v.to_le_bytes());
    for p in [lver, short, bad_vcrc] {
        assert!(feed(&mut sw, 1, p).is_empty());
    }
    assert_eq!(feed(&mut sw, 1, bad_icrc).len(), 1);
    assert!(feed(&mut sw, 1, ud(2, 40, 40, PKey(0xffff))).is_empty());
    let s = sw.stats();
    assert_eq!(s.dropped(SwitchDropReason::Malformed), 2);
    assert_eq!(s.dropped(SwitchDropReason::VcrcBad), 1);
    let t = sw.port_traffic(1).unwrap();
    assert_eq!((t.rcv_errors, t.rcv_pkts), (3, 5));
    assert_eq!(t.counters(1).port_rcv_errors, 3);
    assert_eq!(sw.port_traffic(2).unwrap().rcv_errors, 0);
}
