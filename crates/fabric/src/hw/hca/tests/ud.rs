//! UD unicast: delivery with and without GRH, CRC checks, receive queue rules, QP state diagram
//! (the Q_Key and P_Key rules are in `keys.rs`).

use super::*;
use crate::hw::capture::Capture;
use crate::hw::link::Fault;
use crate::hw::verbs::WcOpcode;

/// IBA 1 §9.8 / §11.4.2: a datagram arrives with its source, and byte_len counts the 40-byte
/// GRH area whether a GRH came or not; with a GRH the completion carries it.
#[test]
fn ud_unicast_with_and_without_grh() {
    let mut p = pair(1);
    let a = ud_qp(&mut p.sim, p.a, QKey(0x1111), 0, 0);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x1111), 0, 4);
    send(
        &mut p.sim,
        p.a,
        a.qpn,
        wr(7, b"hello", dest(2, b.qpn, QKey(0x1111))),
    );
    let gid_b = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, GUID_B + 1);
    let gid_a = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, GUID_A + 1);
    let d = with_grh(dest(2, b.qpn, QKey(0x1111)), gid_b);
    let mut w = wr(8, b"global!", d);
    w.op = SendOp::SendWithImm(0xdead_beef);
    send(&mut p.sim, p.a, a.qpn, w);

    let sent = poll(&mut p.sim, p.a, a.cq);
    assert_eq!(sent.len(), 2);
    assert!(sent
        .iter()
        .all(|c| c.status == WcStatus::Success && c.opcode == WcOpcode::Send));
    let got = poll(&mut p.sim, p.b, b.cq);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].wr_id, 1000);
    assert_eq!(got[0].data, b"hello");
    assert_eq!(got[0].byte_len, 5 + 40);
    assert_eq!(got[0].src_qp, a.qpn);
    assert_eq!(got[0].slid, 1);
    assert_eq!(got[0].grh, None);
    assert_eq!(got[0].imm, None);
    assert_eq!(got[1].data, b"global!");
    assert_eq!(got[1].imm, Some(0xdead_beef));
    let grh = got[1].grh.expect("GRH delivered");
    assert_eq!((grh.sgid, grh.dgid), (gid_a, gid_b));
    assert_eq!(counters(&p.sim, p.b).total_drops(), 0);
    assert_eq!(counters(&p.sim, p.b).rx_delivered, 2);
}

/// IBA 1 §7.8: a corrupted packet fails VCRC or ICRC (or no longer parses) and is never
/// delivered; every one is counted.
#[test]
fn corrupted_packets_are_never_delivered() {
    let mut p = pair(9);
    let from = PortRef { node: p.a, port: 1 };
    p.sim
        .set_faults(p.link, Some(from), vec![Fault::Corrupt(1.0)]);
    let a = ud_qp(&mut p.sim, p.a, QKey(0x1), 0, 0);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x1), 0, 64);
    for i in 0..40u8 {
        let data = vec![i; 64 + usize::from(i)];
        send_a_to_b(&mut p, a.qpn, b.qpn, u64::from(i), &data);
    }
    assert!(poll(&mut p.sim, p.b, b.cq).is_empty());
    let c = counters(&p.sim, p.b);
    assert_eq!(c.rx_packets, 40);
    assert_eq!(c.rx_delivered, 0);
    assert_eq!(c.total_drops(), 40, "{:?}", c.nonzero_drops());
    assert!(c.drops(HcaDropReason::BadIcrc) + c.drops(HcaDropReason::BadVcrc) > 30);
}

/// A device that puts bytes from outside the emulation on its cable (as a UDP fabric host or a
/// replayed capture does): through `Tx::send`, unmarked. It keeps what it receives, through the
/// default `Device::receive_frame`, as such a host does.
#[derive(Default)]
pub(super) struct Outside(pub(super) Vec<Vec<u8>>);

impl Device for Outside {
    fn receive(&mut self, _now: Instant, _port: u8, packet: Vec<u8>, _tx: &mut Tx) {
        self.0.push(packet);
    }
    fn handle_timeout(&mut self, _now: Instant, _tx: &mut Tx) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

/// A simulator (seed `seed`) with an [`Outside`] device cabled to an HCA: (simulator, outside,
/// HCA).
pub(super) fn outside_and_hca(seed: u64) -> (Simulator, NodeId, NodeId) {
    let mut sim = Simulator::new(seed);
    let out = sim.add_node(Box::new(Outside::default()), 1);
    let hca = sim.add_node(Box::new(Hca::new(Guid(GUID_B), 1)), 1);
    sim.connect(
        PortRef { node: out, port: 1 },
        PortRef { node: hca, port: 1 },
        LinkParams::default(),
    );
    (sim, out, hca)
}

/// IBA 1 §7.8: packets from outside the emulation carry no "CRCs known good" mark
/// (`crate::hw::frame`), so the HCA computes both CRCs: a bad ICRC under a good VCRC and a bad
/// VCRC are each dropped and counted; so is a packet of LVer 1 (IBA 1 §7.7), malformed; each
/// counts in the port's PortRcvErrors (§16.1.3.5); the good packet is delivered.
#[test]
fn packets_from_outside_are_checked_in_full() {
    let (mut sim, out, hca) = outside_and_hca(3);
    configure::<Hca>(&mut sim, hca, port_config(2, vec![0xffff]));
    let b = ud_qp(&mut sim, hca, QKey(0x0b1b), 0, 8);
    let mut good = crate::hw::switch::tests::ud(1, 2, 40, PKey(0xffff));
    // DestQP and Q_Key of the QP made above, then the CRCs again.
    good[12..16].copy_from_slice(&b.qpn.to_be_bytes());
    ipoib_wire::packet::fill_crcs(&mut good).unwrap();
    let n = good.len();
    let mut bad_icrc = good.clone();
    bad_icrc[n - 3] ^= 1;
    let v = ipoib_wire::crc::vcrc(&bad_icrc[..n - 2]);
    bad_icrc[n - 2..].copy_from_slice(&v.to_le_bytes());
    let mut bad_vcrc = good.clone();
    bad_vcrc[n - 1] ^= 1;
    let mut lver = good.clone();
    lver[0] |= 1;
    ipoib_wire::packet::fill_crcs(&mut lver).unwrap();
    for p in [bad_icrc, bad_vcrc, lver, good] {
        sim.with_node::<Outside, _>(out, |_, _, tx| tx.send(1, p));
    }
    sim.run_until_idle(1_000);
    let c = counters(&sim, hca);
    assert_eq!(c.drops(HcaDropReason::BadIcrc), 1);
    assert_eq!(c.drops(HcaDropReason::BadVcrc), 1);
    assert_eq!(c.drops(HcaDropReason::Malformed), 1);
    assert_eq!(c.total_drops(), 3, "{:?}", c.nonzero_drops());
    let h = sim.node::<Hca>(hca).unwrap();
    assert_eq!(h.port(1).unwrap().traffic.rcv_errors, 3);
    assert_eq!(poll(&mut sim, hca, b.cq).len(), 1);
}

/// What a device outside the emulation receives from an HCA (a UD send, then the SMA's answer to
/// an SMP it sends), and what a drop filter on the link saw, when there is one (it drops nothing).
fn to_outside(filter: bool) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    use crate::hw::sma::smp_packet;
    use ipoib_wire::mad::attr::smp as attr;
    use ipoib_wire::smp::SmpMadRepr;
    use std::cell::RefCell;
    use std::rc::Rc;
    let (mut sim, out, hca) = outside_and_hca(4);
    let seen = Rc::new(RefCell::new(Vec::new()));
    if filter {
        let s = Rc::clone(&seen);
        sim.set_drop_filter(Some(Box::new(move |_, from, p| {
            if from.node == hca {
                s.borrow_mut().push(p.to_vec());
            }
            false
        })));
    }
    configure::<Hca>(&mut sim, hca, port_config(2, vec![0xffff]));
    let b = ud_qp(&mut sim, hca, QKey(0x0b1b), 0, 0);
    send(
        &mut sim,
        hca,
        b.qpn,
        wr(1, b"out", dest(1, 0x48, QKey(0x0b1b))),
    );
    let get = SmpMadRepr::lid_routed_get(3, attr::NODE_INFO, 0).to_bytes();
    sim.with_node::<Outside, _>(out, |_, _, tx| tx.send(1, smp_packet(1, 2, 0, &get)));
    sim.run_until_idle(1_000);
    assert!(sim.capture_mut().is_none());
    let got = sim.node::<Outside>(out).unwrap().0.clone();
    let seen = seen.borrow().clone();
    (got, seen)
}

/// IBA 1 §7.8 with the emulation's shortcut (`crate::hw::frame`): the HCA builds its packets with
/// their CRCs pending; a device outside the emulation receives both CRCs written, with no
/// capture, drop filter or fault on the link to write them on the way, and a drop filter sees
/// them written too: for a UD send and for an SMA answer.
#[test]
fn packets_to_outside_carry_written_crcs() {
    use ipoib_wire::packet::Packet;
    let (got, seen) = to_outside(false);
    assert!(seen.is_empty());
    assert_eq!(got.len(), 2, "the datagram and the GetResp");
    for p in &got {
        let pkt = Packet::parse(p).unwrap();
        assert!(pkt.icrc_ok && pkt.vcrc_ok, "{p:02x?}");
    }
    assert_eq!(Packet::parse(&got[0]).unwrap().lrh.vl, 0);
    assert_eq!(Packet::parse(&got[1]).unwrap().lrh.vl, 15);
    let (got_filtered, seen) = to_outside(true);
    assert_eq!(got_filtered, got);
    assert_eq!(seen, got, "the filter sees the bytes delivered");
}

/// IBA 1 §9.8.3.2: a UD datagram with no receive posted is silently dropped (counted); a
/// datagram larger than the buffer completes with LocLenErr.
#[test]
fn no_receive_posted_and_short_buffer() {
    let mut p = pair(10);
    let a = ud_qp(&mut p.sim, p.a, QKey(0x1), 0, 0);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x1), 0, 0);
    send_a_to_b(&mut p, a.qpn, b.qpn, 1, b"lost");
    assert_eq!(counters(&p.sim, p.b).drops(HcaDropReason::NoRecvPosted), 1);
    p.sim
        .with_node::<Hca, _>(p.b, |h, _, _| {
            h.post_recv(
                b.qpn,
                RecvWr {
                    wr_id: 5,
                    capacity: 40 + 3,
                },
            )
        })
        .unwrap()
        .unwrap();
    send_a_to_b(&mut p, a.qpn, b.qpn, 2, b"four");
    let c = poll(&mut p.sim, p.b, b.cq);
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].wr_id, c[0].status), (5, WcStatus::LocLenErr));
}

/// IBA 1 §9.8.2: a UD message is one packet; larger than the port MTU completes LocLenErr.
#[test]
fn message_larger_than_mtu_fails() {
    let mut p = pair(11);
    let a = ud_qp(&mut p.sim, p.a, QKey(0x1), 0, 0);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x1), 0, 4);
    send_a_to_b(&mut p, a.qpn, b.qpn, 1, &[0; 2049]);
    assert_eq!(poll(&mut p.sim, p.a, a.cq)[0].status, WcStatus::LocLenErr);
    assert!(poll(&mut p.sim, p.b, b.cq).is_empty());
}

/// IBA 1 §7.2: a port that is not Armed/Active drops data packets; IBA 1 §10.3.1: a QP in
/// Init does not receive.
#[test]
fn port_and_qp_states_gate_reception() {
    let mut p = pair(12);
    let a = ud_qp(&mut p.sim, p.a, QKey(0x1), 0, 0);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x1), 0, 4);
    let mut pc = port_config(2, vec![0xffff]);
    pc.state = PortState::Init;
    configure::<Hca>(&mut p.sim, p.b, pc);
    p.sim.run_until_idle(100);
    send_a_to_b(&mut p, a.qpn, b.qpn, 1, b"x");
    assert_eq!(counters(&p.sim, p.b).drops(HcaDropReason::PortNotActive), 1);
    configure::<Hca>(&mut p.sim, p.b, port_config(2, vec![0xffff]));
    p.sim.run_until_idle(100);
    let r = p.sim.with_node::<Hca, _>(p.b, |h, _, _| {
        h.modify_qp(b.qpn, ModifyQp::Reset).unwrap();
        h.modify_qp(
            b.qpn,
            ModifyQp::Init {
                port: 1,
                pkey_index: 0,
                qkey: QKey(1),
            },
        )
        .unwrap();
        h.post_recv(
            b.qpn,
            RecvWr {
                wr_id: 1,
                capacity: 100,
            },
        )
        .unwrap();
        // IBA 1 §10.3.1: Init cannot go straight to RTS.
        h.modify_qp(b.qpn, ModifyQp::Rts(None))
    });
    assert_eq!(
        r.unwrap(),
        Err(VerbsError::InvalidTransition {
            from: QpState::Init,
            to: QpState::Rts
        })
    );
    send_a_to_b(&mut p, a.qpn, b.qpn, 2, b"y");
    assert_eq!(counters(&p.sim, p.b).drops(HcaDropReason::QpNotReady), 1);
    // Wrong DLID and unknown QP.
    send(
        &mut p.sim,
        p.a,
        a.qpn,
        wr(3, b"z", dest(3, b.qpn, QKey(0x1))),
    );
    send(
        &mut p.sim,
        p.a,
        a.qpn,
        wr(4, b"z", dest(2, 0x999, QKey(0x1))),
    );
    let c = counters(&p.sim, p.b);
    assert_eq!(c.drops(HcaDropReason::BadDlid), 1);
    assert_eq!(c.drops(HcaDropReason::UnknownQp), 1);
}

/// `Hca::qp_state`, `qp_qkey` and `qp_recv_posted` (the data path's look-ups) say what
/// `qp_info` says, through the QP's life: RTS with receives posted, a receive used, SQE after a
/// refused send (IBA 1 §10.2.4), Reset; nothing for a QP that does not exist.
#[test]
fn the_single_attribute_lookups_agree_with_qp_info() {
    let mut p = pair(3);
    let a = ud_qp(&mut p.sim, p.a, QKey(0x8000_0005), 0, 2);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x1), 0, 3);
    let agree = |sim: &Simulator, node, qpn| {
        let h = sim.node::<Hca>(node).unwrap();
        let i = h.qp_info(qpn).unwrap();
        assert_eq!(h.qp_state(qpn), Some(i.state));
        assert_eq!(h.qp_qkey(qpn), Some(i.qkey));
        assert_eq!(h.qp_recv_posted(qpn), Some(i.recv_posted));
        (i.state, i.recv_posted)
    };
    assert_eq!(agree(&p.sim, p.a, a.qpn), (QpState::Rts, 2));
    send(
        &mut p.sim,
        p.a,
        a.qpn,
        wr(1, b"x", dest(2, b.qpn, QKey(0x1))),
    );
    assert_eq!(
        agree(&p.sim, p.b, b.qpn),
        (QpState::Rts, 2),
        "one receive used"
    );
    send(
        &mut p.sim,
        p.a,
        a.qpn,
        wr(2, b"y", dest(2, b.qpn, QKey(0x8000_0000))),
    );
    assert_eq!(agree(&p.sim, p.a, a.qpn).0, QpState::Sqe);
    p.sim
        .with_node::<Hca, _>(p.a, |h, _, _| h.modify_qp(a.qpn, ModifyQp::Reset))
        .unwrap()
        .unwrap();
    assert_eq!(agree(&p.sim, p.a, a.qpn).0, QpState::Reset);
    let h = p.sim.node::<Hca>(p.a).unwrap();
    let none: Qpn = 0x00ab_cdef;
    assert!(h.qp_info(none).is_none());
    assert_eq!(
        (h.qp_state(none), h.qp_qkey(none), h.qp_recv_posted(none)),
        (None, None, None)
    );
}

/// A UD send's data buffer, once its packet is built, is kept by the HCA for a datagram received
/// (`DATA_SPARES` of them) and past those given to the simulator's spares (`Tx::recycle`, from
/// which the HCA takes the buffer of its next packet), not freed: a stream of datagrams from the OS allocates nothing per datagram
/// (docs/benchmarks/udp.md "Datagram mode").
#[test]
fn spent_send_data_past_the_hcas_own_spares_goes_to_the_simulators() {
    let mut h = Hca::new(Guid(1), 1);
    assert!(h.port_mut(1).unwrap().apply(&port_config(1, vec![0xffff])));
    let e = make_ud_qp(&mut h, QKey(1), 0, 0);
    let n = crate::hw::hca::ud::DATA_SPARES + 4;
    let mut sent = Vec::new();
    for i in 0..n {
        let mut w = wr(i as u64, &[], dest(2, 0x99, QKey(1)));
        w.data = Vec::with_capacity(2_100);
        w.data.resize(2_000, i as u8);
        sent.push(w.data.as_ptr());
        h.post_send(e.qpn, w).unwrap();
    }
    let mut tx = Tx::default();
    h.flush(Instant::ZERO, &mut tx);
    // The packets sent (each built in a spare: a recycled send buffer may carry one), then
    // the simulator's spares.
    let mut back: Vec<*const u8> = tx.drain_frames().map(|(_, f)| f.as_ptr()).collect();
    assert_eq!(back.len(), n, "every datagram sent");
    loop {
        let b = tx.spare();
        if b.capacity() == 0 {
            break;
        }
        back.push(b.as_ptr());
    }
    // The HCA's own: its spares for receives, and the buffer it builds its next UD packet in
    // (which it takes from the simulator's spares, so a recycled one may be there).
    let kept: Vec<*const u8> = h
        .data_spares
        .iter()
        .chain(h.spare.iter())
        .map(|b| b.as_ptr())
        .collect();
    assert_eq!(h.data_spares.len(), crate::hw::hca::ud::DATA_SPARES);
    for (i, p) in sent.iter().enumerate() {
        assert!(
            back.contains(p) || kept.contains(p),
            "send {i}'s buffer freed"
        );
    }
}

/// RC/UC need the connected-QP engine; without one create_qp refuses.
#[test]
fn rc_without_engine_is_refused() {
    let mut h = Hca::new(Guid(1), 1).with_engine(crate::hw::rc::engine_factory());
    let cq = h.create_cq();
    let r = h.create_qp(QpInit {
        qp_type: QpType::Rc,
        port: 1,
        send_cq: cq,
        recv_cq: cq,
        privileged: false,
        sq_sig_all: false,
    });
    // RC is served by the default connected-QP engine (crate::hw::rc); the QP starts in Reset.
    let qpn = r.expect("RC QP");
    assert_eq!(h.qp_info(qpn).unwrap().state, QpState::Reset);
    assert_eq!(
        h.port(1).unwrap().guid,
        Guid(2),
        "port GUID = node GUID + 1"
    );
    assert_eq!(h.port(1).unwrap().state, PortState::Down);
}

/// An HCA built without an engine refuses RC and UC QPs (the engine is installed by whoever
/// builds the HCA, not chosen by it).
#[test]
fn rc_and_uc_are_refused_without_an_engine() {
    let mut h = Hca::new(Guid(1), 1);
    let cq = h.create_cq();
    for qp_type in [QpType::Rc, QpType::Uc] {
        let r = h.create_qp(QpInit {
            qp_type,
            port: 1,
            send_cq: cq,
            recv_cq: cq,
            privileged: false,
            sq_sig_all: false,
        });
        assert_eq!(
            r,
            Err(VerbsError::Unsupported(
                "RC/UC without a connected-QP engine"
            ))
        );
    }
}

fn capture_run(seed: u64) -> Vec<u8> {
    let mut p = pair(seed);
    p.sim.set_faults(
        p.link,
        None,
        vec![
            Fault::Drop(0.2),
            Fault::Jitter(std::time::Duration::from_nanos(300)),
        ],
    );
    p.sim.set_capture(Capture::new());
    let a = ud_qp(&mut p.sim, p.a, QKey(0x1), 0, 0);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x1), 0, 64);
    for i in 0..30u8 {
        send_a_to_b(&mut p, a.qpn, b.qpn, u64::from(i), &[i; 17]);
    }
    p.sim.take_capture().unwrap().into_bytes()
}

/// The same seed twice gives byte-identical captures.
#[test]
fn same_seed_same_capture() {
    let one = capture_run(21);
    assert_eq!(one, capture_run(21));
    assert_ne!(one, capture_run(22));
}

/// A packet built over a spent packet's bytes (`ud::emit`, the HCA's spares) is the packet built
/// in a new buffer, whatever those bytes were: every header byte is written, the pad and CRC
/// fields too (an ACK with its AETH, an RDMA WRITE First with its RETH and a GRH, a padded UD
/// SEND with its DETH), over a longer buffer and a shorter one.
#[test]
fn a_packet_built_over_stale_bytes_is_the_packet() {
    use ipoib_wire::ib::{
        AethRepr, BthRepr, DethRepr, ExtHeaders, GrhRepr, LrhRepr, Opcode, Operation, RethRepr,
        Syndrome, Transport,
    };
    use ipoib_wire::packet::PacketRepr;
    let lrh = LrhRepr::local(0, 3, 2, 1);
    let bth = |op| BthRepr::new(op, PKey(0xffff), 0x48, 77);
    let ack = ExtHeaders {
        aeth: Some(AethRepr {
            syndrome: Syndrome::Ack { credit_count: 31 },
            msn: 5,
        }),
        ..ExtHeaders::default()
    };
    let write = ExtHeaders {
        reth: Some(RethRepr {
            va: 0x1234,
            rkey: 9,
            dma_len: 8192,
        }),
        ..ExtHeaders::default()
    };
    let ud = ExtHeaders {
        deth: Some(DethRepr {
            qkey: QKey(0x1111),
            src_qp: 3,
        }),
        ..ExtHeaders::default()
    };
    let gid = |i| ipoib_wire::Gid::new(ipoib_wire::Gid::DEFAULT_SUBNET_PREFIX, i);
    let payload = [0x5au8; 4096];
    let reprs = [
        (Opcode::RC_ACKNOWLEDGE, ack, None, &payload[..0]),
        (
            Opcode::new(Transport::Rc, Operation::RdmaWriteFirst),
            write,
            Some(GrhRepr::new(gid(1), gid(2), 8)),
            &payload[..],
        ),
        (
            Opcode::new(Transport::Ud, Operation::SendOnly),
            ud,
            None,
            &payload[..13],
        ),
    ];
    for (op, ext, grh, payload) in reprs {
        let repr = PacketRepr {
            lrh,
            grh,
            bth: Some(bth(op)),
            ext,
            payload,
        };
        let want = repr.to_vec().expect("a valid packet");
        for stale in [vec![0xee; 5000], vec![0xee; 3]] {
            let got = super::super::ud::emit(stale, &repr).expect("built");
            assert_eq!(got.into_vec(), want, "{op:?}");
        }
    }
}

/// IBA 1 §7.2: only an Active port transmits data packets; a UD send from a port in Init or
/// Armed completes (the link layer discards the packet) and counts in the port's
/// PortXmitDiscards ("output port not in the Active state", IBA 1 §16.1.3.5).
#[test]
fn a_port_not_active_transmits_no_data_and_counts_the_discard() {
    let mut p = pair(13);
    let a = ud_qp(&mut p.sim, p.a, QKey(0x1), 0, 0);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x1), 0, 4);
    for (i, state) in [PortState::Init, PortState::Armed].into_iter().enumerate() {
        let mut pc = port_config(1, vec![0xffff]);
        pc.state = state;
        configure::<Hca>(&mut p.sim, p.a, pc);
        p.sim.run_until_idle(100);
        send_a_to_b(&mut p, a.qpn, b.qpn, 1, b"x");
        let n = i as u64 + 1;
        let ha = p.sim.node::<Hca>(p.a).unwrap();
        assert_eq!(ha.port(1).unwrap().traffic.xmit_discards, n, "{state:?}");
        assert_eq!(ha.port(1).unwrap().traffic.xmit_pkts, 0, "{state:?}");
        assert_eq!(ha.counters().drops(HcaDropReason::TxPortNotActive), n);
        assert!(poll(&mut p.sim, p.b, b.cq).is_empty(), "{state:?}");
    }
    configure::<Hca>(&mut p.sim, p.a, port_config(1, vec![0xffff]));
    p.sim.run_until_idle(100);
    send_a_to_b(&mut p, a.qpn, b.qpn, 2, b"y");
    assert_eq!(poll(&mut p.sim, p.b, b.cq).len(), 1, "Active sends");
}

/// IBA 1 §7.2: an Armed port goes Active on a data packet that passed the link layer's checks,
/// and the DLID check is one of them (IBA 1 §7.11.1: a unicast DLID outside the port's LID
/// range is discarded, `BadDlid`): a packet for another LID leaves the port Armed; one for its
/// own LID takes it Active.
#[test]
fn a_data_packet_for_another_lid_leaves_an_armed_port_armed() {
    let mut p = pair(14);
    let a = ud_qp(&mut p.sim, p.a, QKey(0x1), 0, 0);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x1), 0, 4);
    let mut pc = port_config(2, vec![0xffff]);
    pc.state = PortState::Armed;
    configure::<Hca>(&mut p.sim, p.b, pc);
    p.sim.run_until_idle(100);
    let state = |p: &Pair| p.sim.node::<Hca>(p.b).unwrap().port(1).unwrap().state;
    send(
        &mut p.sim,
        p.a,
        a.qpn,
        wr(1, b"x", dest(3, b.qpn, QKey(0x1))),
    );
    assert_eq!(counters(&p.sim, p.b).drops(HcaDropReason::BadDlid), 1);
    assert_eq!(state(&p), PortState::Armed);
    send(
        &mut p.sim,
        p.a,
        a.qpn,
        wr(2, b"y", dest(2, b.qpn, QKey(0x1))),
    );
    assert_eq!(state(&p), PortState::Active);
    assert_eq!(poll(&mut p.sim, p.b, b.cq).len(), 1);
}

/// A data datagram (larger than a MAD: IPoIB's) is built in a consumed packet's allocation kept
/// by the simulator (`Tx::spare`) when the HCA kept none of its own, and is the same packet: in
/// a stream one host sends the datagrams and the other consumes them, so the sender's own spare
/// is at best an acknowledgement's, and each datagram took a new allocation while the consumed
/// ones were freed. (Where the packet was built is seen by a drop filter on the link.)
#[test]
fn a_data_datagram_is_built_in_a_consumed_packets_allocation() {
    use std::cell::RefCell;
    use std::rc::Rc;
    let run = |spare: Option<Vec<u8>>| {
        let (mut sim, out, hca) = outside_and_hca(5);
        let seen = Rc::new(RefCell::new(Vec::new()));
        let s = Rc::clone(&seen);
        sim.set_drop_filter(Some(Box::new(move |_, from, p| {
            if from.node == hca {
                s.borrow_mut().push(p.as_ptr() as usize);
            }
            false
        })));
        configure::<Hca>(&mut sim, hca, port_config(2, vec![0xffff]));
        let b = ud_qp(&mut sim, hca, QKey(0x0b1b), 0, 0);
        let at = spare.as_ref().map(|v| v.as_ptr() as usize);
        if let Some(v) = spare {
            sim.recycle(v);
        }
        let data: Vec<u8> = (0..1500u32).map(|i| i as u8).collect();
        send(
            &mut sim,
            hca,
            b.qpn,
            wr(1, &data, dest(1, 0x48, QKey(0x0b1b))),
        );
        sim.run_until_idle(1_000);
        let got = sim.node::<Outside>(out).unwrap().0.clone();
        let seen = seen.borrow().clone();
        (got, seen, at)
    };
    // A consumed packet's allocation, its bytes stale.
    let (got, seen, at) = run(Some(vec![0xa5u8; 4096]));
    assert_eq!(got.len(), 1);
    assert_eq!(seen.len(), 1);
    assert_eq!(Some(seen[0]), at, "built in the spare allocation");
    // The same packet as one built in a new allocation.
    let (fresh, _, _) = run(None);
    assert_eq!(fresh, got);
}

/// A UD packet adds up to 81 bytes to its payload: LRH, GRH, BTH, DETH, ImmDt, up to 3 bytes of
/// pad (IBA 1 §9.2 PadCnt: the payload is padded to a multiple of 4), ICRC and VCRC. An HCA's
/// own spare 1 to 3 bytes short of such a packet is not kept for it: the packet is built in a
/// consumed packet's allocation large enough (`Tx::spare`), not grown out of the short one.
/// Before, the pad was not counted: the short spare was kept and reallocated by `emit`.
#[test]
fn a_spare_short_by_the_pad_is_not_kept_for_a_data_datagram() {
    use std::cell::RefCell;
    use std::rc::Rc;
    let (mut sim, _out, hca) = outside_and_hca(6);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let s = Rc::clone(&seen);
    sim.set_drop_filter(Some(Box::new(move |_, from, p| {
        if from.node == hca {
            s.borrow_mut().push((p.as_ptr() as usize, p.len()));
        }
        false
    })));
    configure::<Hca>(&mut sim, hca, port_config(2, vec![0xffff]));
    let b = ud_qp(&mut sim, hca, QKey(0x0b1b), 0, 0);
    // 1,501 bytes (3 of pad) with GRH and ImmDt: a packet of 1,501 + 81 bytes.
    let data: Vec<u8> = (0..1501u32).map(|i| i as u8).collect();
    let consumed = vec![0xa5u8; 4096];
    let at = consumed.as_ptr() as usize;
    sim.recycle(consumed);
    sim.node_mut::<Hca>(hca).unwrap().spare = Some(Vec::with_capacity(data.len() + 78));
    let gid = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, GUID_A + 1);
    let mut w = wr(1, &data, with_grh(dest(1, 0x48, QKey(0x0b1b)), gid));
    w.op = SendOp::SendWithImm(7);
    send(&mut sim, hca, b.qpn, w);
    sim.run_until_idle(1_000);
    let seen = seen.borrow().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1, data.len() + 81, "LRH..VCRC with 3 bytes of pad");
    assert_eq!(seen[0].0, at, "built in the consumed packet's allocation");
}
