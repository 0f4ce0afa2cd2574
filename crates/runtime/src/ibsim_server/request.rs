//! The server's reads of its clients' MADs ([`IbsimServer::on_mads`]): the datagrams one
//! recvmmsg(2) took from a client go to its host in one [`IbsimNet::with_host`], so the host acts
//! once on all of them (its agents, its HCA's sends, the simulator's look at its timer) instead
//! of once per MAD; each MAD leaves at the same virtual instant, in the order read, as before.

use super::IbsimNet;
use super::{rmpp_as_sent, IbsimServer, SIM_REQUEST_LEN};
use crate::ibsim::msg::{
    SimRequest, SimRequestHead, MAD_LEN, SIM_REQUEST_MAD_OFFSET, STATUS_UNDELIVERED,
};
use ipoib_fabric::node::host::AgentId;
use ipoib_proto::mad_agent::MadAddr;
use ipoib_wire::mad::{Mad, Method};
use ipoib_wire::{PKey, QKey};

/// A datagram's MAD, in place.
fn mad_of(b: &mut [u8; SIM_REQUEST_LEN + 1]) -> Option<&mut [u8; MAD_LEN]> {
    b[SIM_REQUEST_MAD_OFFSET..SIM_REQUEST_LEN].first_chunk_mut::<MAD_LEN>()
}

impl IbsimServer {
    /// The datagrams `bufs` (each used up to its length in `lens`) read from client `slot`, in
    /// order: each `sim_request`'s MAD goes to the fabric, as ibsim's `process_packet` takes it
    /// (a request's TransactionID with the client id in its top 16 bits, `sim_mad.c`
    /// `update_trid`; an SA response as the sending kernel's RMPP layer would send it,
    /// [`rmpp_as_sent`]); a MAD the host refuses goes back to the client with status 110; a
    /// datagram that is not a `sim_request` drops the client, and the datagrams after it, like
    /// any for a slot with no client, are counted as strays.
    pub(super) fn on_mads(
        &mut self,
        net: &mut impl IbsimNet,
        slot: u32,
        bufs: &mut [[u8; SIM_REQUEST_LEN + 1]],
        lens: &[usize],
    ) {
        for (b, _) in bufs
            .iter_mut()
            .zip(lens)
            .filter(|(_, &l)| l == SIM_REQUEST_LEN)
        {
            let Some(head) = SimRequestHead::parse(&b[..SIM_REQUEST_LEN]) else {
                continue;
            };
            let Some(mad) = mad_of(b) else { continue };
            // The Method byte alone (the whole header need not be parsed for it). A TrapRepress
            // keeps the TID of the trap it answers, as a response does (IBA 1 §13.4.9).
            let method = Mad::new_unchecked(&mad[..]).method();
            if method == Method::TrapRepress {
                if let Some(c) = self.clients.get_mut(&slot) {
                    c.repressed(mad);
                }
            } else if !method.answers_request() {
                mad[8..10].copy_from_slice(&(slot as u16).to_be_bytes());
            } else {
                rmpp_as_sent(mad, head.length);
            }
        }
        let mut i = 0;
        while i < lens.len() {
            let Some((host, agent)) = self.clients.get(&slot).map(|c| (c.host, c.agent)) else {
                self.counters.stray += (lens.len() - i) as u64;
                return;
            };
            let end = lens[i..]
                .iter()
                .position(|&l| l != SIM_REQUEST_LEN)
                .map_or(lens.len(), |k| i + k);
            if end == i {
                self.counters.garbage_dropped += 1;
                self.drop_client(net, slot);
                i += 1;
                continue;
            }
            let sent = self.hand_over(net, host, agent, &mut bufs[i..end]);
            self.counters.mads_in += sent as u64;
            i += sent;
            if i == end {
                continue;
            }
            // ibsim process_packet: an undeliverable MAD goes back to its sender with status 110.
            self.counters.undelivered += 1;
            let b = &mut bufs[i];
            let (Some(head), Some(mad)) = (SimRequestHead::parse(&b[..SIM_REQUEST_LEN]), mad_of(b))
            else {
                i += 1;
                continue;
            };
            let back = SimRequest {
                head: SimRequestHead {
                    status: STATUS_UNDELIVERED,
                    ..head
                },
                mad: *mad,
            };
            self.write_client(net, slot, &back);
            i += 1;
        }
    }

    /// Sends the MADs of `bufs` (each a whole `sim_request`, its MAD ready) from `host` through
    /// `agent`, in order, in one [`IbsimNet::with_host`]; stops at the first the host refuses.
    /// Returns how many it took.
    ///
    /// Every MAD of the batch takes the P_Key of the host port's entry 0 as it is when the batch
    /// is handed over, before any of the batch leaves. A SubnSet(P_KeyTable) to the host's own
    /// port earlier in the batch (QP0) does not change the P_Key of a GSI MAD after it (QP1):
    /// the architecture orders work requests only within one send queue, so an HCA may send the
    /// QP1 MAD before the QP0 Set is taken, and either P_Key is one a real port could use.
    fn hand_over(
        &mut self,
        net: &mut impl IbsimNet,
        host: usize,
        agent: AgentId,
        bufs: &mut [[u8; SIM_REQUEST_LEN + 1]],
    ) -> usize {
        let hp = net.host(host).port;
        let pkey = net
            .host_device(host)
            .hca()
            .port(hp)
            .and_then(|p| p.pkeys.first().copied())
            .unwrap_or(PKey::DEFAULT);
        let spare = &mut self.spare_mads;
        net.with_host(host, |h, _| {
            let mut sent = 0;
            for b in bufs.iter_mut() {
                let Some(head) = SimRequestHead::parse(&b[..SIM_REQUEST_LEN]) else {
                    break;
                };
                let Some(mad) = mad_of(b) else { break };
                let to = MadAddr {
                    lid: head.dlid,
                    qpn: head.dqp,
                    qkey: QKey::GSI,
                    sl: 0,
                    pkey,
                    grh: None,
                };
                let buf = spare.pop().unwrap_or_default();
                if h.umad_send_with(agent, to, &mad[..], buf).is_err() {
                    break;
                }
                sent += 1;
            }
            sent
        })
        .unwrap_or(0)
    }
}

/// Where umad2sim writes its agent's number in a TID: bits 32..47 (`umad2sim.c`
/// `umad2sim_write`, of every MAD without the R bit, a TrapRepress included).
const UMAD2SIM_AGENT_BITS: u64 = 0x0000_ffff_0000_0000;

impl super::Client {
    /// Remembers the TIDs of `traps`, MADs of Method Trap handed to this client (the last
    /// [`super::TRAPS_KEPT`]).
    pub(super) fn remember_traps(&mut self, traps: Vec<u64>) {
        for t in traps {
            if self.traps.len() == super::TRAPS_KEPT {
                self.traps.pop_front();
            }
            self.traps.push_back(t);
        }
    }

    /// Gives this client's TrapRepress `mad` the TID of the trap it answers, as a Linux
    /// client's keeps it (`ib_umad_write` leaves a response's TID, TrapRepress included, as
    /// `ib_response_mad` counts it): umad2sim wrote its agent's number over bits 32..47, which
    /// the trap's TID had from the sending host, so the TrapRepress would reach nobody there.
    /// The trap is the one handed to this client with the same other bits; none, the TID is
    /// left as it came.
    fn repressed(&mut self, mad: &mut [u8; MAD_LEN]) {
        let Some(tid) = mad.get(8..16).and_then(|b| <[u8; 8]>::try_from(b).ok()) else {
            return;
        };
        let tid = u64::from_be_bytes(tid);
        let same = |t: &u64| t & !UMAD2SIM_AGENT_BITS == tid & !UMAD2SIM_AGENT_BITS;
        if let Some(i) = self.traps.iter().rposition(same) {
            if let Some(t) = self.traps.remove(i) {
                mad[8..16].copy_from_slice(&t.to_be_bytes());
            }
        }
    }
}
