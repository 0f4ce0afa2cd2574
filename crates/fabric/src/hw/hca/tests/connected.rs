//! The RC/UC hook ([`crate::hw::hca::connected`]) with a stand-in engine: one UC SEND Only packet per
//! message. Shows what the real engine gets from the HCA and what the HCA adds.

use super::ud::Outside;
use super::*;
use crate::hw::verbs::{ConnectedAttr, WcOpcode};
use ipoib_wire::ib::{BthRepr, Opcode};
use ipoib_wire::Mtu;
use ipoib_wire::PKey;

#[derive(Default)]
struct MockUc {
    state: QpState,
    attr: Option<ConnectedAttr>,
    out: VecDeque<TransportPacket>,
    recvs: VecDeque<RecvWr>,
    done: VecDeque<Completion>,
    seen: Vec<PacketSource>,
}

impl ConnectedEngine for MockUc {
    fn modify(
        &mut self,
        _now: Instant,
        to: QpState,
        attr: Option<&ConnectedAttr>,
    ) -> Result<(), VerbsError> {
        self.state = to;
        if let Some(a) = attr {
            self.attr = Some(*a);
        }
        Ok(())
    }
    fn state(&self) -> QpState {
        self.state
    }
    fn post_send(&mut self, _now: Instant, wr: SendWr) -> Result<(), VerbsError> {
        let a = self.attr.ok_or(VerbsError::InvalidArgument("no path"))?;
        // P_Key 0 here: the HCA must fill in the QP's P_Key.
        let bth = BthRepr::new(Opcode::UC_SEND_ONLY, PKey(0), a.dest_qpn, a.sq_psn);
        self.out.push_back(TransportPacket {
            bth,
            ext: Default::default(),
            payload: wr.data,
        });
        let mut c = crate::hw::hca::ud::send_completion(wr.wr_id, WcStatus::Success, 0, 0);
        c.opcode = WcOpcode::Send;
        self.done.push_back(c);
        Ok(())
    }
    fn post_recv(&mut self, wr: RecvWr) -> Result<(), VerbsError> {
        self.recvs.push_back(wr);
        Ok(())
    }
    fn handle_packet(
        &mut self,
        _now: Instant,
        from: PacketSource,
        pkt: TransportPacket,
        _mem: &mut dyn RdmaMemory,
    ) {
        self.seen.push(from);
        if let Some(r) = self.recvs.pop_front() {
            let mut c = crate::hw::hca::ud::send_completion(r.wr_id, WcStatus::Success, 0, 0);
            c.opcode = WcOpcode::Recv;
            c.data = pkt.payload;
            c.slid = from.slid;
            self.done.push_back(c);
        }
    }
    fn poll_transmit(&mut self, _now: Instant) -> Option<TransportPacket> {
        self.out.pop_front()
    }
    fn poll_completion(&mut self) -> Option<Completion> {
        self.done.pop_front()
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _now: Instant) {}
}

fn uc_qp(sim: &mut Simulator, node: NodeId, dlid: u16, pkey_index: u16) -> UdEnd {
    uc_qp_via(sim, node, dest(dlid, 0, QKey(0)), pkey_index)
}

/// A UC QP with the stand-in engine, its path `to`'s address (a GRH when `to` has one), one
/// receive (wr_id 77) posted, in RTS.
fn uc_qp_via(sim: &mut Simulator, node: NodeId, to: UdDest, pkey_index: u16) -> UdEnd {
    let end = sim
        .with_node::<Hca, _>(node, |h, _, _| {
            h.set_engine_factory(Box::new(|_, _| Box::new(MockUc::default())));
            let cq = h.create_cq();
            let qpn = h
                .create_qp(QpInit {
                    qp_type: QpType::Uc,
                    port: 1,
                    send_cq: cq,
                    recv_cq: cq,
                    privileged: false,
                    sq_sig_all: true,
                })
                .unwrap();
            UdEnd { qpn, cq }
        })
        .unwrap();
    let attr = ConnectedAttr {
        path: to.ah,
        dest_qpn: FIRST_QPN,
        rq_psn: 0,
        sq_psn: 0,
        path_mtu: Mtu::Mtu2048,
        pkey_index,
        retry_count: 7,
        rnr_retry: 7,
        timeout: 14,
        min_rnr_timer: 12,
        max_rd_atomic: 1,
        max_dest_rd_atomic: 1,
    };
    sim.with_node::<Hca, _>(node, |h, _, _| {
        let init = ModifyQp::Init {
            port: 1,
            pkey_index,
            qkey: QKey(0),
        };
        h.modify_qp(end.qpn, init).unwrap();
        h.post_recv(
            end.qpn,
            RecvWr {
                wr_id: 77,
                capacity: 4096,
            },
        )
        .unwrap();
        h.modify_qp(end.qpn, ModifyQp::Rtr(Some(attr))).unwrap();
        h.modify_qp(end.qpn, ModifyQp::Rts(Some(attr))).unwrap();
    });
    end
}

/// The HCA frames engine output (LRH from the path, BTH P_Key from the P_Key index, CRCs) and
/// hands incoming RC/UC packets to the engine after the common checks, P_Key included
/// (IBA 1 §10.9.3).
#[test]
fn connected_engine_hook_frames_and_checks() {
    let mut p = pair(51);
    configure::<Hca>(&mut p.sim, p.b, port_config(2, vec![0xffff, 0x8005]));
    p.sim.run_until_idle(100);
    let a = uc_qp(&mut p.sim, p.a, 2, 0);
    let b = uc_qp(&mut p.sim, p.b, 1, 0);
    let mut w = wr(5, b"connected", dest(2, 0, QKey(0)));
    w.ud = None;
    send(&mut p.sim, p.a, a.qpn, w.clone());
    let got = poll(&mut p.sim, p.b, b.cq);
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].wr_id, got[0].slid), (77, 1));
    assert_eq!(got[0].data, b"connected");
    assert_eq!(poll(&mut p.sim, p.a, a.cq)[0].opcode, WcOpcode::Send);

    // Receiver moves to another partition: the HCA drops before the engine sees it.
    p.sim.with_node::<Hca, _>(p.b, |h, _, _| {
        h.post_recv(
            b.qpn,
            RecvWr {
                wr_id: 78,
                capacity: 4096,
            },
        )
        .unwrap();
        h.qps.get_mut(&b.qpn).unwrap().pkey_index = 1;
    });
    send(&mut p.sim, p.a, a.qpn, w);
    assert!(poll(&mut p.sim, p.b, b.cq).is_empty());
    assert_eq!(counters(&p.sim, p.b).drops(HcaDropReason::PkeyMismatch), 1);
    // IBA 1 §14.2.5.6: PortInfo:P_KeyViolations counts it.
    let pi = p.sim.node::<Hca>(p.b).unwrap().port_info(1).unwrap();
    assert_eq!(pi.pkey_violations, 1);
}

/// IBA 1 §7.2: RC/UC output leaves only an Active port; from an Armed one the packet is
/// discarded, counted in the port's PortXmitDiscards (IBA 1 §16.1.3.5) and never arrives.
#[test]
fn connected_output_leaves_only_an_active_port() {
    let mut p = pair(52);
    let a = uc_qp(&mut p.sim, p.a, 2, 0);
    let b = uc_qp(&mut p.sim, p.b, 1, 0);
    let mut pc = port_config(1, vec![0xffff]);
    pc.state = crate::hw::mgmt::PortState::Armed;
    configure::<Hca>(&mut p.sim, p.a, pc);
    p.sim.run_until_idle(100);
    let mut w = wr(5, b"connected", dest(2, 0, QKey(0)));
    w.ud = None;
    send(&mut p.sim, p.a, a.qpn, w);
    assert!(poll(&mut p.sim, p.b, b.cq).is_empty());
    let ha = p.sim.node::<Hca>(p.a).unwrap();
    assert_eq!(ha.port(1).unwrap().traffic.xmit_discards, 1);
    assert_eq!(ha.counters().drops(HcaDropReason::TxPortNotActive), 1);
}

/// IBA 1 §9.6.1.5: a connected QP takes packets from its path only. With a GRH exactly when
/// the path has one, its SGID the path's DGID and its DGID the port GID the path's SGID index
/// names (Linux qib's `qib_ruc_check_hdr` and hfi1's `hfi1_ruc_check_hdr`; rxe's `check_addr`
/// compares the addresses the same way). Packets from outside aimed at two established QPs, one
/// whose path has a GRH and one whose path has none: another port's SGID, a DGID not the port's,
/// no GRH where the path has one and a GRH where it has none are discarded and counted before the
/// engine sees them; the packet that matches each path arrives. Fails on the old code, which
/// checked no GID and delivered the first packet (another port's SGID) to the first QP.
#[test]
fn a_connected_qp_takes_only_packets_with_its_path_gids() {
    let (mut sim, out, hca) = super::ud::outside_and_hca(53);
    configure::<Hca>(&mut sim, hca, port_config(2, vec![0xffff]));
    // Port GUIDs are the node GUID plus the port number.
    let peer = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, GUID_A + 1);
    let own = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, GUID_B + 1);
    let other = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, GUID_A + 2);
    let global = uc_qp_via(&mut sim, hca, with_grh(dest(1, 0, QKey(0)), peer), 0);
    let local = uc_qp_via(&mut sim, hca, dest(1, 0, QKey(0)), 0);
    let packet = |qpn: Qpn, gids: Option<(Gid, Gid)>, tag: u8| {
        let repr = ipoib_wire::packet::PacketRepr {
            lrh: ipoib_wire::ib::LrhRepr::local(0, 0, 2, 1),
            grh: gids.map(|(sgid, dgid)| ipoib_wire::ib::GrhRepr::new(sgid, dgid, 64)),
            bth: Some(BthRepr::new(Opcode::UC_SEND_ONLY, PKey(0xffff), qpn, 0)),
            ext: Default::default(),
            payload: &[tag; 8],
        };
        let mut buf = vec![0; repr.buffer_len()];
        repr.emit(&mut buf).unwrap();
        buf
    };
    for p in [
        packet(global.qpn, Some((other, own)), 1),
        packet(global.qpn, Some((peer, other)), 2),
        packet(global.qpn, None, 3),
        packet(local.qpn, Some((peer, own)), 4),
        packet(global.qpn, Some((peer, own)), 5),
        packet(local.qpn, None, 6),
    ] {
        sim.with_node::<Outside, _>(out, |_, _, tx| tx.send(1, p));
    }
    sim.run_until_idle(1_000);
    let c = counters(&sim, hca);
    assert_eq!(
        c.drops(HcaDropReason::GrhNotPath),
        4,
        "{:?}",
        c.nonzero_drops()
    );
    assert_eq!(c.total_drops(), 4, "{:?}", c.nonzero_drops());
    for (end, tag) in [(global, 5), (local, 6)] {
        let got: Vec<_> = poll(&mut sim, hca, end.cq)
            .into_iter()
            .map(|c| (c.wr_id, c.data))
            .collect();
        assert_eq!(got, vec![(77, vec![tag; 8])]);
    }
}
