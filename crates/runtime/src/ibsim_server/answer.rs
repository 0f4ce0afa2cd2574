//! The server's writes to its clients: what the fabric delivered for each ([`IbsimServer::flush`],
//! one sendmmsg(2) per client and turn), and single answers ([`IbsimServer::write_client`]).

use super::IbsimNet;
use super::{umad_length, IbsimServer};
use crate::ibsim::msg::{
    SimRequest, SimRequestHead, MAD_LEN, SIM_REQUEST_LEN, SIM_REQUEST_MAD_OFFSET,
};
use ipoib_fabric::node::host::{is_smp_class, Host};
use ipoib_wire::mad::{Mad, Method, MgmtClass, MAD_HEADER_LEN};
use std::io::ErrorKind;

/// MAD allocations kept for the MADs handed to the subnet next (`IbsimServer::on_mad`), at most.
const SPARE_MADS: usize = 64;
/// The largest MAD allocation kept (a reassembled RMPP answer's is not).
const SPARE_MAD_MAX: usize = 4096;

impl IbsimServer {
    /// Writes every MAD the fabric delivered for each client.
    pub fn flush(&mut self, net: &mut impl IbsimNet) {
        // The turn's answers are built in a buffer kept from turn to turn.
        let mut out = std::mem::take(&mut self.out);
        let mut from = Some(0u32);
        while let Some(next) = from {
            let Some((&slot, c)) = self.clients.range(next..).next() else {
                break;
            };
            from = slot.checked_add(1);
            let (node, agent, host) = (c.node, c.agent, c.host);
            let lid = net.lid(host);
            let Some(device) = net.sim_mut().node_mut::<Host>(node) else {
                continue;
            };
            // Each answer is written in place, over an earlier turn's where there is one (every
            // byte is written: not cleared first): its MAD zero-padded to 256 bytes, then the
            // head (the bytes `SimRequest::to_bytes` gives for the same fields).
            let mut k = 0;
            let mut traps = Vec::new();
            for m in device.umad_drain(agent) {
                // A whole MAD header whose MgmtClass (byte 1, IBA 1 §13.4.2) is an SMP's.
                let smp = m.mad.len() >= MAD_HEADER_LEN && is_smp_class(MgmtClass::from(m.mad[1]));
                if let Some(h) = m
                    .mad
                    .first_chunk::<MAD_HEADER_LEN>()
                    .map(Mad::new_unchecked)
                {
                    if h.method() == Method::Trap {
                        traps.push(h.transaction_id());
                    }
                }
                if k == out.len() {
                    out.push([0u8; SIM_REQUEST_LEN]);
                }
                let Some(b) = out.get_mut(k) else { break };
                k += 1;
                let n = m.mad.len().min(MAD_LEN);
                b[SIM_REQUEST_MAD_OFFSET..SIM_REQUEST_MAD_OFFSET + n].copy_from_slice(&m.mad[..n]);
                b[SIM_REQUEST_MAD_OFFSET + n..].fill(0);
                let length = match b.last_chunk::<MAD_LEN>() {
                    Some(mad) => umad_length(mad),
                    None => MAD_LEN as u64,
                };
                let head = SimRequestHead {
                    dlid: lid,
                    slid: m.from.lid,
                    dqp: u32::from(!smp),
                    sqp: m.from.qpn,
                    status: 0,
                    length,
                };
                head.write(b);
                if self.spare_mads.len() < SPARE_MADS && m.mad.capacity() <= SPARE_MAD_MAX {
                    self.spare_mads.push(m.mad);
                }
            }
            if let Some(c) = self.clients.get_mut(&slot) {
                c.remember_traps(traps);
            }
            if k > 0 {
                self.write_many(net, slot, &out[..k]);
            }
        }
        self.out = out;
    }

    /// Sends `msgs` to client `slot`, as many at once as its socket takes ([`Sock::send_many`]);
    /// what its full socket does not take is dropped and counted, as [`IbsimServer::write_client`]
    /// does; a client whose socket is gone is dropped.
    fn write_many(&mut self, net: &mut impl IbsimNet, slot: u32, msgs: &[[u8; SIM_REQUEST_LEN]]) {
        /// At most this many per sendmmsg(2) call.
        const BATCH: usize = 64;
        let mut rest = msgs;
        while !rest.is_empty() {
            let Some(sock) = self.slots.get(slot as usize) else {
                return;
            };
            let batch = &rest[..rest.len().min(BATCH)];
            match sock.send_many(batch, &mut self.headers) {
                Ok(n) => {
                    self.counters.mads_out += n as u64;
                    // A short count: the first of the rest did not fit; it is dropped.
                    let skip = if n < batch.len() { n + 1 } else { n };
                    self.counters.out_dropped += (skip - n) as u64;
                    rest = &rest[skip.min(rest.len())..];
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    self.counters.out_dropped += 1;
                    rest = &rest[1..];
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    self.counters.vanished += 1;
                    self.drop_client(net, slot);
                    return;
                }
            }
        }
    }

    /// Sends `r` to client `slot`; false when the client was dropped (its socket is gone).
    pub(super) fn write_client(
        &mut self,
        net: &mut impl IbsimNet,
        slot: u32,
        r: &SimRequest,
    ) -> bool {
        let Some(sock) = self.slots.get(slot as usize) else {
            return false;
        };
        match sock.send(&r.to_bytes()) {
            Ok(_) => {
                self.counters.mads_out += 1;
                true
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                self.counters.out_dropped += 1;
                true
            }
            Err(_) => {
                self.counters.vanished += 1;
                self.drop_client(net, slot);
                false
            }
        }
    }
}
