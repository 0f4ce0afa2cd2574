//! The receive path common to every transport: parse (LVer 0), VCRC/ICRC, a data VL
//! the port operates and a payload within its MTUCap (`crate::hw::sma::rcv_malformed`), port state, VL15 for QP0 only, DLID
//! (unicast range or attached multicast group), then the QP's transport (UD here, RC/UC to the
//! engine). Every early return counts its [`HcaDropReason`]; a malformed packet or a bad CRC also
//! counts in the port's PortRcvErrors (IBA 1 §16.1.3.5).

use super::connected::{grh_from_path, PacketSource};
use super::qp::{can_receive, special_qpn, wire_qpn, QpKind};
use super::sma::Qp0In;
use super::{Hca, HcaDropReason};
use crate::hw::mgmt::PortState;
use crate::hw::sim::Frame;
use crate::hw::verbs::{QpType, Qpn};
use ipoib_proto::time::Instant;
use ipoib_wire::ib::lid::{is_multicast_lid, LID_PERMISSIVE};
use ipoib_wire::ib::{BthRepr, Operation, Transport};
use ipoib_wire::mad::{BadKey, BadKeyTrap};
use ipoib_wire::packet::Packet;
use ipoib_wire::PKey;

impl Hca {
    /// Handles one packet arriving on `port_num`; `exclude` skips the sending QP of a looped-back
    /// multicast.
    pub(super) fn rx(&mut self, now: Instant, port_num: u8, bytes: &Frame, exclude: Option<Qpn>) {
        self.counters.rx_packets += 1;
        let Some(port) = self.port(port_num) else {
            return self.counters.count(HcaDropReason::NoSuchPort);
        };
        // Its CRCs are not computed again when the emulation computed them on these very bytes
        // ([`Frame`]): the verdicts below are the same.
        let parsed = if bytes.crcs_good() {
            Packet::parse_crcs_known_good(bytes)
        } else {
            Packet::parse(bytes)
        };
        // Borrowed where it was parsed, not moved out of the result.
        let pkt = match &parsed {
            // IBA 1 §7.7: LVer is 0 in this version of the link layer; a packet of another is a
            // malformed data packet (§16.1.3.5 PortRcvErrors).
            Ok(p) if p.lrh.lver == 0 => p,
            _ => return self.rcv_error(port_num, HcaDropReason::Malformed),
        };
        // IBA 1 §7.8: a packet with a bad VCRC or ICRC is discarded.
        if !pkt.vcrc_ok {
            return self.rcv_error(port_num, HcaDropReason::BadVcrc);
        }
        if !pkt.icrc_ok {
            return self.rcv_error(port_num, HcaDropReason::BadIcrc);
        }
        // A data VL the port does not operate, or a payload over its MTUCap (IBA 1 §7.7).
        if crate::hw::sma::rcv_malformed(pkt.lrh.vl, pkt.payload.len(), port.mtu_cap) {
            return self.rcv_error(port_num, HcaDropReason::Malformed);
        }
        let Some(bth) = pkt.bth else {
            return self.counters.count(HcaDropReason::Raw);
        };
        // IBA 1 §9.2, §9.6: TVer 0 is the only transport header version; a packet of another
        // is discarded by the transport layer, whatever QP it names (Linux rxe `hdr_check`).
        if bth.tver != 0 {
            return self.counters.count(HcaDropReason::BadTver);
        }
        // IBA 1 §14.2.2: a directed-route SMP with HopCount 0 (and its answer) never left the
        // node, so a port without a link takes it too (`ud.rs`, the local SMA).
        let own_sma = || {
            ipoib_wire::smp::SmpMad::new_checked(pkt.payload)
                .is_ok_and(|m| m.is_directed() && m.hop_count() == 0)
        };
        if port.state == PortState::Down && !own_sma() {
            return self.counters.count(HcaDropReason::PortNotActive);
        }
        let dest = bth.dest_qp;
        // IBA 1 §7.6.3: VL15 carries subnet management packets only, and those go to QP0.
        if (pkt.lrh.vl == 15) != (dest == 0) {
            return self.counters.count(HcaDropReason::BadVl);
        }
        let dlid = pkt.lrh.dlid;
        if dest == 0 {
            // SMPs: any state but Down, permissive DLID allowed (IBA 1 §14.2.2).
            let bits = if dlid == LID_PERMISSIVE {
                Some(0)
            } else {
                port.path_bits(dlid)
            };
            let Some(bits) = bits else {
                return self.counters.count(HcaDropReason::BadDlid);
            };
            let qp0 = special_qpn(port_num, 0);
            return match self.sma_take(now, port_num, pkt) {
                Qp0In::Taken => {}
                Qp0In::Deliver => self.deliver(now, qp0, pkt, bits),
                Qp0In::DeliverAs(mad) => {
                    let pkt = Packet {
                        payload: &mad[..],
                        ..*pkt
                    };
                    self.deliver(now, qp0, &pkt, bits)
                }
            };
        }
        // IBA 1 §7.2: Init passes SMPs only; Armed and Active receive data packets, and an
        // Armed port that receives one goes Active.
        if !port.state.receives_data() {
            return self.counters.count(HcaDropReason::PortNotActive);
        }
        // IBA 1 §7.11.1: a unicast DLID outside the port's LID range fails the link layer's
        // checks; such a packet takes no Armed port Active.
        let unicast_bits = port.path_bits(dlid);
        if unicast_bits.is_none() && !is_multicast_lid(dlid) {
            return self.counters.count(HcaDropReason::BadDlid);
        }
        if port.state == PortState::Armed {
            self.data_received(port_num);
        }
        if is_multicast_lid(dlid) {
            let Some(grh) = pkt.grh else {
                return self.counters.count(HcaDropReason::McastNoGrh);
            };
            if dest != BthRepr::MULTICAST_QPN {
                return self.counters.count(HcaDropReason::McastBadQpn);
            }
            // IBA 1 §10.5.2: every QP of this port attached to the group gets a copy.
            let first = self
                .mcast
                .partition_point(|&(l, g, _)| (l, g) < (dlid, grh.dgid));
            let targets: Vec<Qpn> = self.mcast[first..]
                .iter()
                .take_while(|&&(l, g, _)| (l, g) == (dlid, grh.dgid))
                .map(|&(_, _, q)| q)
                .filter(|q| Some(*q) != exclude)
                .filter(|q| self.qps.get(q).is_some_and(|qp| qp.port == port_num))
                .collect();
            if targets.is_empty() {
                return self.counters.count(HcaDropReason::McastNotAttached);
            }
            for q in targets {
                self.deliver(now, q, pkt, 0);
            }
            return;
        }
        let Some(bits) = unicast_bits else {
            return self.counters.count(HcaDropReason::BadDlid);
        };
        if dest == 1 && self.pma_take(port_num, pkt) {
            return;
        }
        let handle = if dest == 1 {
            special_qpn(port_num, 1)
        } else {
            dest
        };
        let bound_here = matches!(self.qps.get(&handle), Some(q) if q.port == port_num);
        if dest == BthRepr::MULTICAST_QPN || !bound_here {
            return self.counters.count(HcaDropReason::UnknownQp);
        }
        self.deliver(now, handle, pkt, bits);
    }

    /// A packet received on `port_num` discarded as malformed or for a bad CRC: counted in the
    /// port's PortRcvErrors too (IBA 1 §16.1.3.5: local physical errors, the ICRC and VCRC among
    /// them, and malformed data packets). The checks after these (raw packet, port state, VL,
    /// DLID, QP, keys) are not among its causes: they count in the HCA's drops only.
    fn rcv_error(&mut self, port_num: u8, reason: HcaDropReason) {
        self.counters.count(reason);
        if let Some(p) = self.port_mut(port_num) {
            p.traffic.rcv_errors += 1;
        }
    }

    /// Hands a packet that passed the link checks to QP `handle`'s transport.
    fn deliver(&mut self, now: Instant, handle: Qpn, pkt: &Packet<'_>, bits: u8) {
        let Some(qp) = self.qps.get_mut(&handle) else {
            return self.counters.count(HcaDropReason::UnknownQp);
        };
        let state = match &qp.kind {
            QpKind::Connected(e) => e.state(),
            QpKind::Ud => qp.state,
        };
        if !can_receive(state) {
            return self.counters.count(HcaDropReason::QpNotReady);
        }
        let Some(bth) = pkt.bth else {
            return;
        };
        let want = match qp.qp_type {
            QpType::Ud => Transport::Ud,
            QpType::Rc => Transport::Rc,
            QpType::Uc => Transport::Uc,
        };
        if bth.opcode.transport() != want {
            return self.counters.count(HcaDropReason::BadOpcode);
        }
        if matches!(qp.kind, QpKind::Ud) {
            return self.ud_receive(handle, pkt, bits);
        }
        // RC/UC: the packet comes from the QP's path (IBA 1 §9.6.1.5), checked before the P_Key
        // as Linux qib's `qib_ruc_check_hdr` does, so a stranger's packet raises no trap; then the
        // P_Key against the QP's own index (IBA 1 §10.9.3), then the engine.
        let port = self.ports.get_mut(usize::from(qp.port).wrapping_sub(1));
        if let (Some(attr), Some(p)) = (&qp.connected, port.as_deref()) {
            if !grh_from_path(&attr.path, pkt.grh.as_ref(), p) {
                return self.counters.count(HcaDropReason::GrhNotPath);
            }
        }
        let entry = port
            .as_ref()
            .and_then(|p| p.pkey(qp.pkey_index))
            .unwrap_or(PKey(0));
        if !bth.pkey.matches(entry) {
            if let Some(p) = port {
                p.pkey_violations = p.pkey_violations.saturating_add(1);
            }
            self.counters.count(HcaDropReason::PkeyMismatch);
            // Trap 257 (`trap.rs`): no DETH, so QP1 (the sender's) is 0, as Linux's qib
            // `qib_ruc_check_hdr` reports it.
            let t = BadKeyTrap {
                lid1: pkt.lrh.slid,
                lid2: pkt.lrh.dlid,
                key: u32::from(bth.pkey.0),
                sl: pkt.lrh.sl,
                qp2: wire_qpn(handle),
                ..BadKeyTrap::default()
            };
            let port_num = qp.port;
            return self.bad_key_trap(now, port_num, BadKey::PKey, t);
        }
        let QpKind::Connected(engine) = &mut qp.kind else {
            return self.counters.count(HcaDropReason::NoConnectedEngine);
        };
        let from = PacketSource {
            slid: pkt.lrh.slid,
            sl: pkt.lrh.sl,
            grh: pkt.grh,
        };
        engine.handle_packet_parts(now, from, bth, pkt.ext, pkt.payload, &mut self.mrs);
        // An engine with nothing to give (a middle packet of a message: no acknowledgement
        // asked for, no completion) is not drained: the walk would find nothing
        // ([`ConnectedEngine::has_work`]).
        if engine.has_work() {
            self.sched.touch(handle, engine.poll_timeout());
        } else {
            let t = engine.poll_timeout();
            // A message's first or middle packet (IBA 1 §9.7.5.2: no acknowledgement unless
            // asked for) that changed no timer: [`Hca::took_quietly`].
            self.rx_quiet = matches!(
                bth.opcode.operation(),
                Operation::SendFirst
                    | Operation::SendMiddle
                    | Operation::RdmaWriteFirst
                    | Operation::RdmaWriteMiddle
            ) && self.sched.timer_of(handle) == t;
            self.sched.set_timer(handle, t);
        }
        self.counters.rx_delivered += 1;
        self.connected_dirty = true;
    }
}
