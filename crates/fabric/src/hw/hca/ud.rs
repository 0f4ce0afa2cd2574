//! The UD transport: building a datagram from a send work request (IBA 1 §9.8, §10.2.4) and
//! placing a received datagram into a posted receive buffer (IBA 1 §9.8.3, §10.9.3, §11.4.2).
//! Also the link-layer framing of RC/UC engine output ([`super::connected`]).

use super::port::Port;
use super::qp::wire_qpn;
use super::{Hca, HcaDropReason};
use crate::hw::sim::{Frame, Tx};
use crate::hw::verbs::{Completion, GlobalRoute, QpState, Qpn, SendOp, SendWr, WcOpcode, WcStatus};
use ipoib_proto::time::Instant;
use ipoib_wire::ib::lid::is_multicast_lid;
use ipoib_wire::ib::{BthRepr, DethRepr, ExtHeaders, GrhRepr, ImmDtRepr, LrhRepr, Opcode};
use ipoib_wire::mad::{BadKey, BadKeyTrap, MAD_LEN};
use ipoib_wire::packet::{Packet, PacketRepr};
use ipoib_wire::smp::SmpMad;
use ipoib_wire::PKey;

/// Bytes of the GRH area at the start of every UD receive buffer (IBA 1 §11.4.1.2; verbs counts
/// them in byte_len whether or not a GRH arrived).
pub const GRH_AREA: u32 = 40;

/// The largest spent send allocation kept for a datagram received: a 4,096-byte MTU's payload.
const DATA_SPARE_MAX: usize = 4096;
/// Spent send allocations kept, at most: an SM keeps 4 SMPs outstanding (OpenSM's
/// `max_wire_smps`), so 4 sends come before their 4 answers.
pub(super) const DATA_SPARES: usize = 8;

/// The most a UD packet adds to its payload: LRH 8, GRH 40, BTH 12, DETH 8, ImmDt 4, pad up to
/// 3 (the payload padded to a multiple of 4 bytes, PadCnt), ICRC 4, VCRC 2 bytes (IBA 1 §7.7,
/// §8.3, §9.2, §9.3.3, §7.8).
const UD_FRAMING_MAX: usize = 8 + 40 + 12 + 8 + 4 + 3 + 4 + 2;

/// A completion for the send side (or a flushed receive, after changing the opcode).
pub(crate) fn send_completion(wr_id: u64, status: WcStatus, qpn: Qpn, len: u32) -> Completion {
    Completion {
        wr_id,
        status,
        opcode: WcOpcode::Send,
        qpn,
        byte_len: len,
        imm: None,
        src_qp: 0,
        slid: 0,
        sl: 0,
        dlid_path_bits: 0,
        pkey_index: 0,
        grh: None,
        data: Vec::new(),
    }
}

/// A packet ready for a port.
pub(super) struct Built {
    port: u8,
    /// Built by `emit`: its CRCs are known good, pending ([`Frame`]).
    bytes: Frame,
    /// DLID is the sending port's own: loop back instead of using the wire.
    local: bool,
    mcast: bool,
}

fn grh_for(port: &Port, g: &GlobalRoute) -> Result<GrhRepr, WcStatus> {
    let sgid = port.gid(g.sgid_index).ok_or(WcStatus::LocQpOpErr)?;
    let mut grh = GrhRepr::new(sgid, g.dgid, g.hop_limit);
    grh.tclass = g.tclass;
    grh.flow_label = g.flow_label & 0x000f_ffff;
    Ok(grh)
}

/// `repr` in `buf`'s allocation (a spent packet's, or a new one), its CRCs pending: written when
/// the bytes leave the emulation's receivers ([`Frame`]). The spent packet's bytes are written
/// over, not zeroed first: `emit_without_crcs` writes every byte up to the VCRC (whole headers,
/// the payload, zeroed pad and CRC fields; wire's `to_vec_is_emit` test checks a buffer of other
/// bytes comes out as a zeroed one), so only a longer packet's extra bytes are zeroed here.
pub(super) fn emit(mut buf: Vec<u8>, repr: &PacketRepr<'_>) -> Option<Frame> {
    buf.resize(repr.buffer_len(), 0);
    repr.emit_without_crcs(&mut buf).ok()?;
    Some(Frame::with_crcs_pending(buf))
}

/// The link and network layers of an RC/UC QP's packets ([`Hca::connected_framing`]).
pub(super) struct Framing {
    port: u8,
    lrh: LrhRepr,
    grh: Option<GrhRepr>,
    pkey: PKey,
    /// The path's DLID is the port's own: the packets loop back.
    local: bool,
}

impl Framing {
    /// One packet of the engine's output, built in `buf`'s allocation ([`Tx::spare`]), the
    /// payload copied once into it, with its CRCs.
    pub(super) fn build(
        &self,
        buf: Vec<u8>,
        bth: &BthRepr,
        ext: &ExtHeaders,
        payload: &[u8],
    ) -> Result<Built, HcaDropReason> {
        let repr = PacketRepr {
            lrh: self.lrh,
            grh: self.grh,
            bth: Some(BthRepr {
                pkey: self.pkey,
                ..*bth
            }),
            ext: *ext,
            payload,
        };
        let bytes = emit(buf, &repr).ok_or(HcaDropReason::Malformed)?;
        Ok(Built {
            port: self.port,
            bytes,
            local: self.local,
            mcast: false,
        })
    }
}

impl Hca {
    /// Builds and transmits one UD send; completes it (IBA 1 §10.8.3: signaled, or any error).
    /// After an error the QP enters SQE and its remaining sends are flushed (IBA 1 §10.3.1).
    pub(super) fn ud_send(&mut self, now: Instant, qpn: Qpn, mut wr: SendWr, tx: &mut Tx) {
        // A MAD's packet in a consumed small packet's allocation when the HCA kept none of its
        // own (several MADs sent before their answers come back, an SM's).
        if self.spare.is_none() && wr.data.len() <= MAD_LEN {
            self.spare = Some(tx.spare_small());
        } else if wr.data.len() > MAD_LEN
            && self
                .spare
                .as_ref()
                .is_none_or(|b| b.capacity() < wr.data.len() + UD_FRAMING_MAX)
        {
            // A data datagram (IPoIB's) in a consumed packet's allocation ([`Tx::spare`]) when
            // the HCA kept none large enough: in a stream one host sends the datagrams and the
            // other consumes them, so the sender's own spare is at best an acknowledgement's, and
            // each datagram took a new allocation (zeroed by `emit`) while the consumed ones were
            // freed. Its own small spare goes back for small packets.
            if let Some(small) = self.spare.replace(tx.spare()) {
                tx.recycle(small);
            }
        }
        let built = self.build_ud(qpn, &mut wr);
        let status = match built {
            Ok(Some(b)) => {
                self.transmit(now, qpn, b, tx);
                WcStatus::Success
            }
            Ok(None) => {
                // IBA 1 §16.1.3.5 PortXmitDiscards: "output port not in the Active state".
                let port = self.qps.get(&qpn).map(|q| q.port);
                if let Some(p) = port.and_then(|n| self.port_mut(n)) {
                    p.traffic.xmit_discards += 1;
                }
                self.counters.count(HcaDropReason::TxPortNotActive);
                WcStatus::Success
            }
            Err(s) => s,
        };
        let Some(qp) = self.qps.get_mut(&qpn) else {
            return;
        };
        let cq = qp.send_cq;
        let signaled = wr.signaled || qp.sq_sig_all;
        if status != WcStatus::Success {
            qp.state = QpState::Sqe;
        }
        if signaled || status != WcStatus::Success {
            let c = send_completion(wr.wr_id, status, qpn, wr.data.len() as u32);
            self.push_completion(cq, c);
        }
        if status != WcStatus::Success {
            let mut rest = Vec::new();
            self.sendq.retain(|(q, w)| {
                if *q == qpn {
                    rest.push(w.wr_id);
                }
                *q != qpn
            });
            for id in rest {
                let c = send_completion(id, WcStatus::WrFlushErr, qpn, 0);
                self.push_completion(cq, c);
            }
        }
        // The spent data's allocation, for a datagram received: a host's MADs go out and
        // their answers come back (an allocation and a free fewer per MAD).
        // Past those, the simulator's spares ([`Tx::recycle`]): a packet the OS sent in a buffer
        // of its own comes back for the next packet built or read (an allocation and a free
        // fewer per datagram of a stream).
        if self.data_spares.len() < DATA_SPARES && wr.data.capacity() <= DATA_SPARE_MAX {
            self.data_spares.push(wr.data);
        } else {
            tx.recycle(wr.data);
        }
    }

    /// The payload of a datagram received, in a spent allocation when one is kept and large
    /// enough (every byte written), else in a new one with room for a whole packet of that
    /// payload ([`UD_FRAMING_MAX`] more): once its consumer gives it back (a TUN device's
    /// writer, `Simulator::recycle`), it may hold the next datagram that arrives, not only the
    /// next payload, without growing.
    fn received_data(&mut self, payload: &[u8]) -> Vec<u8> {
        match self.data_spares.pop() {
            Some(mut v) if v.capacity() >= payload.len() => {
                v.clear();
                v.extend_from_slice(payload);
                v
            }
            other => {
                self.data_spares.extend(other);
                let mut v = Vec::with_capacity(payload.len() + UD_FRAMING_MAX);
                v.extend_from_slice(payload);
                v
            }
        }
    }

    /// The datagram for `wr`, `Ok(None)` when the port may not send it now (IBA 1 §7.2: only
    /// an Active port sends data packets; QP0 sends from Init on), or the completion error.
    fn build_ud(&mut self, qpn: Qpn, wr: &mut SendWr) -> Result<Option<Built>, WcStatus> {
        let buf = self.spare.take().unwrap_or_default();
        let qp = self.qps.get(&qpn).ok_or(WcStatus::LocQpOpErr)?;
        let dest = wr.ud.ok_or(WcStatus::LocQpOpErr)?;
        let port = self.port(qp.port).ok_or(WcStatus::LocQpOpErr)?;
        let qp0 = qp.special == Some(0);
        // IBA 1 §14.2.2: a directed-route SMP with HopCount 0 is for this node's own SMA and
        // never leaves it, so QP0 sends it from a port without a link too: the local SMA is how a
        // Disabled port is switched on again (`ibportstate -D 0 PORT enable` on the host).
        let own_sma = || {
            qp0 && SmpMad::new_checked(&wr.data[..])
                .is_ok_and(|m| m.is_directed() && m.hop_count() == 0)
        };
        let may_send = match port.state {
            crate::hw::mgmt::PortState::Active => true,
            crate::hw::mgmt::PortState::Down => own_sma(),
            _ => qp0,
        };
        if !may_send {
            return Ok(None);
        }
        // IBA 1 §9.8.2: a UD message is a single packet no larger than the path MTU (always a
        // defined code: `Port::apply` refuses an undefined one).
        let fits = port
            .mtu
            .bytes()
            .is_some_and(|m| wr.data.len() <= m as usize);
        if !fits {
            return Err(WcStatus::LocLenErr);
        }
        let ah = dest.ah;
        let mcast = is_multicast_lid(ah.dlid);
        // IBA 1 §10.5.2: a multicast datagram carries a GRH.
        if mcast && ah.grh.is_none() {
            return Err(WcStatus::LocQpOpErr);
        }
        // IBA 1 §10.2.4: a WR Q_Key with the high bit set means "the QP's own Q_Key"; only a
        // privileged QP may send a controlled (high bit set) Q_Key.
        let qkey = if dest.remote_qkey.is_controlled() {
            qp.qkey
        } else {
            dest.remote_qkey
        };
        if qkey.is_controlled() && !qp.privileged {
            return Err(WcStatus::LocQpOpErr);
        }
        // IBA 1 §13.5.1: QP1 chooses the P_Key per datagram; other QPs use their own index.
        let pkey_index = match qp.special {
            Some(1) => dest.pkey_index.unwrap_or(qp.pkey_index),
            _ => qp.pkey_index,
        };
        let pkey = match qp.special {
            Some(0) => port.pkey(0).unwrap_or(PKey::DEFAULT),
            _ => port.pkey(pkey_index).unwrap_or(PKey(0)),
        };
        if !qp0 && !pkey.is_valid() {
            return Err(WcStatus::LocQpOpErr);
        }
        let grh = match &ah.grh {
            Some(g) => Some(grh_for(port, g)?),
            None => None,
        };
        let (opcode, immdt) = match wr.op {
            SendOp::SendWithImm(data) => (
                Opcode::UD_SEND_ONLY_WITH_IMMEDIATE,
                Some(ImmDtRepr { data }),
            ),
            _ => (Opcode::UD_SEND_ONLY, None),
        };
        // IBA 1 §7.6.3: SMPs (QP0) travel on VL15, everything else here on VL0.
        let vl = if qp0 { 15 } else { 0 };
        let lrh = LrhRepr::local(vl, ah.sl & 0xf, ah.dlid, port.slid(ah.src_path_bits));
        let mut bth = BthRepr::new(opcode, pkey, dest.remote_qpn & 0x00ff_ffff, qp.next_psn);
        bth.se = wr.solicited;
        let ext = ExtHeaders {
            deth: Some(DethRepr {
                qkey,
                src_qp: wire_qpn(qpn),
            }),
            immdt,
            ..Default::default()
        };
        // IBA 1 §14.2.2.2 C14-9:1: QP0's port moves the HopPointer of a directed-route SMP it
        // originates, and sends it only out of the port its path names.
        // The MAD changes in the work request itself, which is spent once sent (only its
        // length is read again, for the completion).
        let smp = qp0 && wr.data.len() == MAD_LEN;
        if smp && !crate::hw::sma::dr::originate(&mut wr.data, qp.port) {
            return Err(WcStatus::LocQpOpErr);
        }
        let repr = PacketRepr {
            lrh,
            grh,
            bth: Some(bth),
            ext,
            payload: &wr.data,
        };
        let bytes = emit(buf, &repr).ok_or(WcStatus::LocLenErr)?;
        // IBA 1 §14.2.2: a directed-route SMP with HopCount 0 is for this node's own SMA.
        let hop0 = smp
            && SmpMad::new_checked(&wr.data[..])
                .is_ok_and(|m| m.is_directed() && m.hop_count() == 0);
        let local = hop0 || (!mcast && port.path_bits(ah.dlid).is_some());
        let port_num = qp.port;
        if let Some(q) = self.qps.get_mut(&qpn) {
            q.next_psn = (q.next_psn + 1) & 0x00ff_ffff;
        }
        Ok(Some(Built {
            port: port_num,
            bytes,
            local,
            mcast,
        }))
    }

    fn transmit(&mut self, now: Instant, qpn: Qpn, b: Built, tx: &mut Tx) {
        self.counters.tx_packets += 1;
        if b.local {
            self.rx(now, b.port, &b.bytes, None);
            return;
        }
        if b.mcast && self.mcast_loopback {
            self.rx(now, b.port, &b.bytes, Some(qpn));
        }
        if let Some(p) = self.port_mut(b.port) {
            p.traffic.count_xmit(&b.bytes);
        }
        tx.send_frame(b.port, b.bytes);
    }

    /// How QP `qpn`'s RC/UC engine output is framed ([`super::connected`]): BTH P_Key from the
    /// QP's P_Key index, LRH and GRH from the QP's path; or why nothing it sends can leave.
    pub(super) fn connected_framing(&self, qpn: Qpn) -> Result<Framing, HcaDropReason> {
        let qp = self.qps.get(&qpn).ok_or(HcaDropReason::TxPortNotActive)?;
        let (Some(attr), Some(port)) = (qp.connected, self.port(qp.port)) else {
            return Err(HcaDropReason::TxPortNotActive);
        };
        if port.state != crate::hw::mgmt::PortState::Active {
            return Err(HcaDropReason::TxPortNotActive);
        }
        let path = attr.path;
        let grh = match &path.grh {
            Some(g) => Some(grh_for(port, g).map_err(|_| HcaDropReason::Malformed)?),
            None => None,
        };
        Ok(Framing {
            port: qp.port,
            lrh: LrhRepr::local(0, path.sl & 0xf, path.dlid, port.slid(path.src_path_bits)),
            grh,
            pkey: port.pkey(qp.pkey_index).unwrap_or(PKey(0)),
            local: port.path_bits(path.dlid).is_some(),
        })
    }

    /// Sends a packet [`Framing::build`] made for QP `qpn`, or counts why there is none.
    pub(super) fn connected_send(
        &mut self,
        now: Instant,
        qpn: Qpn,
        built: Result<Built, HcaDropReason>,
        tx: &mut Tx,
    ) {
        match built {
            Ok(b) => self.transmit(now, qpn, b, tx),
            Err(reason) => {
                // IBA 1 §16.1.3.5 PortXmitDiscards: "output port not in the Active state".
                let port = self.qps.get(&qpn).map(|q| q.port);
                if let Some(p) = port.and_then(|n| self.port_mut(n)) {
                    if reason == HcaDropReason::TxPortNotActive && !p.state.transmits_data() {
                        p.traffic.xmit_discards += 1;
                    }
                }
                self.counters.count(reason)
            }
        }
    }

    /// Places a UD datagram that passed the link checks into QP `handle` (IBA 1 §9.8.3):
    /// P_Key (§10.9.3; QP1 accepts any entry of the table, QP0 does not check), Q_Key
    /// (§10.2.4; QP0 does not check), then the next posted receive or a silent drop.
    pub(super) fn ud_receive(&mut self, handle: Qpn, pkt: &Packet<'_>, path_bits: u8) {
        let Some(bth) = pkt.bth else {
            return;
        };
        if bth.opcode != Opcode::UD_SEND_ONLY && bth.opcode != Opcode::UD_SEND_ONLY_WITH_IMMEDIATE {
            self.counters.count(HcaDropReason::BadOpcode);
            return;
        }
        let Some(deth) = pkt.ext.deth else {
            self.counters.count(HcaDropReason::Malformed);
            return;
        };
        // One look-up of the QP: the port is read beside it (another field of the HCA).
        let Some(qp) = self.qps.get_mut(&handle) else {
            self.counters.count(HcaDropReason::UnknownQp);
            return;
        };
        let Some(port) = usize::from(qp.port)
            .checked_sub(1)
            .and_then(|i| self.ports.get_mut(i))
        else {
            self.counters.count(HcaDropReason::NoSuchPort);
            return;
        };
        // What a trap 257/258 reports of a datagram that fails a check (IBA 1 §14.2.5.1 Table
        // 131; `trap.rs`): sender LID and QP, receiver LID and QP, SL, the key it carried.
        let bad = |key: u32| BadKeyTrap {
            lid1: pkt.lrh.slid,
            lid2: pkt.lrh.dlid,
            key,
            sl: pkt.lrh.sl,
            qp1: deth.src_qp,
            qp2: wire_qpn(handle),
            ..BadKeyTrap::default()
        };
        let port_num = qp.port;
        let pkey_ok = match qp.special {
            Some(0) => Some(port.match_any_pkey(bth.pkey).unwrap_or(0)),
            Some(_) => port.match_any_pkey(bth.pkey),
            None => {
                let entry = port.pkey(qp.pkey_index).unwrap_or(PKey(0));
                bth.pkey.matches(entry).then_some(qp.pkey_index)
            }
        };
        let Some(pkey_index) = pkey_ok else {
            port.pkey_violations = port.pkey_violations.saturating_add(1);
            self.counters.count(HcaDropReason::PkeyMismatch);
            let t = bad(u32::from(bth.pkey.0));
            return self.bad_key_trap(self.last_now, port_num, BadKey::PKey, t);
        };
        if qp.special != Some(0) && deth.qkey != qp.qkey {
            port.qkey_violations = port.qkey_violations.saturating_add(1);
            self.counters.count(HcaDropReason::QkeyMismatch);
            let t = bad(deth.qkey.0);
            return self.bad_key_trap(self.last_now, port_num, BadKey::QKey, t);
        }
        let Some(wr) = qp.recv.pop_front() else {
            // IBA 1 §16.1.3.5 VL15Dropped: an incoming VL15 packet (QP0's) dropped for lack of a
            // buffer, as Linux's qib and hfi1 count it (docs/PERF-COUNTERS.md).
            if qp.special == Some(0) {
                port.traffic.vl15_dropped += 1;
            }
            return self.counters.count(HcaDropReason::NoRecvPosted);
        };
        let cq = qp.recv_cq;
        let byte_len = GRH_AREA.saturating_add(pkt.payload.len() as u32);
        // IBA 1 §11.4.2.1 / C10-?: a datagram larger than the buffer completes in error.
        let ok = byte_len <= wr.capacity;
        let c = Completion {
            wr_id: wr.wr_id,
            status: if ok {
                WcStatus::Success
            } else {
                WcStatus::LocLenErr
            },
            opcode: WcOpcode::Recv,
            qpn: handle,
            byte_len,
            imm: pkt.ext.immdt.map(|i| i.data),
            src_qp: deth.src_qp,
            slid: pkt.lrh.slid,
            sl: pkt.lrh.sl,
            dlid_path_bits: path_bits,
            pkey_index,
            grh: pkt.grh,
            data: if ok {
                self.received_data(pkt.payload)
            } else {
                Vec::new()
            },
        };
        if ok {
            self.counters.rx_delivered += 1;
        }
        self.push_completion(cq, c);
    }
}
