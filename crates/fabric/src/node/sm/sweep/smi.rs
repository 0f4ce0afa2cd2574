//! The SMInfo side of the SM agent (IBA 1 §14.4; [`super::super::election`] decides, this sends
//! and receives): the SMInfo round at the end of a discovery, the polls, the HANDOVER a master
//! sends to a greater SM, the answer to a SubnSet(SMInfo) sent to this SM and the ACKNOWLEDGE of
//! a HANDOVER, and the trap 144 a new Standby sends its master.

use super::{SmpSm, SweepPhase, Tag};
use crate::node::sm::election::{modifier, Decision, SetEffect, SmInfoAsk};
use crate::node::sm::smp::{directed, SmpFailure};
use ipoib_proto::mad_agent::{MadAddr, MadIn, MadOut};
use ipoib_proto::time::Instant;
use ipoib_wire::ib::lid::LID_PERMISSIVE;
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::{MadHeaderRepr, Method, NoticeRepr, NoticeType, ProducerType};
use ipoib_wire::smp::{SmInfoRepr, SmState, SmpAttribute, SmpMad, SmpMadRepr, SmpRoute};

/// Trap 144: a CA port's local changes, here an SM's priority (IBA 1 §14.2.5.1 Table 131;
/// OpenSM `osm_send_trap144`, `TRAP_144_MASK_SM_PRIORITY_CHANGE`).
const TRAP_LOCAL_CHANGES: u16 = 144;
const TRAP_144_SM_PRIORITY_CHANGE: u16 = 0x0008;

impl SmpSm {
    /// This SM's SMInfo with `state`, for its own requests (the SM_Key authenticates it).
    fn own_info(&self, state: Option<SmState>) -> SmInfoRepr {
        let i = self.election.request_info(self.smp.counters().sent);
        SmInfoRepr {
            sm_state: state.unwrap_or(i.sm_state),
            ..i
        }
    }

    fn submit_sm_info(&mut self, method: Method, ask: SmInfoAsk, path: Vec<u8>, info: SmInfoRepr) {
        let m = match ask {
            SmInfoAsk::Set(m) => m,
            _ => 0,
        };
        let smp = directed(
            method,
            attr::SM_INFO,
            m,
            &path,
            Some(SmpAttribute::SmInfo(info)),
        );
        self.smp.submit(Tag::SmInfo(path, ask), &smp);
    }

    /// The end of discovery: while Discovering or Master (IBA 1 §14.4), asks every other SM's
    /// SMInfo before anything is programmed; else configures at once.
    pub(super) fn elect(&mut self, now: Instant) {
        // The discovery's records are read once, here: what the rest of the sweep needs is in
        // its result, so they are freed before the brain and the Configure wave are made.
        let d = std::mem::take(&mut self.discovery).result();
        if !self.election.is_deciding() {
            return self.configure(now, d);
        }
        let Some(d) = d else {
            return self.configure(now, None);
        };
        if let Some(g) = d.topology.nodes().get(d.sm_port.node) {
            self.election.set_guid(g.port_guid(d.sm_port.port));
        }
        let info = self.own_info(None);
        for (path, _) in &d.sm_ports {
            self.submit_sm_info(Method::Get, SmInfoAsk::Discover, path.clone(), info);
        }
        self.elect = Some(d);
        self.phase = SweepPhase::Elect;
    }

    /// The SMInfo round is over: the election's decision.
    pub(super) fn decided(&mut self, now: Instant) {
        let Some(d) = self.elect.take() else { return };
        match self.election.decide(now) {
            Decision::Master => self.configure(now, Some(d)),
            Decision::Standby => {
                self.phase = SweepPhase::Standby;
                // OpenSM `osm_state_mgr.c`: "notify master SM about us" (trap 144), on which the
                // master sweeps and finds this SM (and hands over if this one is greater).
                let me = d
                    .port_infos
                    .get(d.sm_port.node)
                    .and_then(|p| p.get(usize::from(d.sm_port.port)).copied().flatten());
                self.own_port = me
                    .filter(|p| p.lid != 0 && p.master_sm_lid != 0)
                    .map(|p| (p.lid, p.master_sm_lid, p.capability_mask));
                self.notify_master();
            }
            Decision::Handover(path) => {
                // OpenSM `state_mgr_send_handover`: the SMInfo of the sender, still Master.
                let info = self.own_info(Some(SmState::Master));
                let ask = SmInfoAsk::Set(modifier::HANDOVER);
                self.submit_sm_info(Method::Set, ask, path, info);
                self.phase = SweepPhase::Standby;
            }
            Decision::WaitForHandover => {
                // The traps 144 after each poll (`Election::polled`) go to the polled master's
                // LID, as its port answered in this discovery.
                let port = |guid| {
                    d.topology.nodes().iter().enumerate().find_map(|(n, node)| {
                        (1..=node.ports).find_map(|p| {
                            let info = d.port_infos.get(n)?.get(usize::from(p))?.as_ref()?;
                            (node.port_guid(p) == guid).then_some(*info)
                        })
                    })
                };
                let me = d
                    .topology
                    .nodes()
                    .get(d.sm_port.node)
                    .and_then(|n| port(n.port_guid(d.sm_port.port)));
                let other = self.election.master_guid().and_then(port);
                self.own_port = match (me, other) {
                    (Some(me), Some(o)) if me.lid != 0 && o.lid != 0 => {
                        Some((me.lid, o.lid, me.capability_mask))
                    }
                    _ => None,
                };
                self.sweep_done(now, SweepPhase::Done)
            }
        }
    }

    /// A trap 144 to the master when the election asks for one and the port's LID and the
    /// master's are known.
    fn notify_master(&mut self) {
        if let (true, Some((lid, master, caps))) = (self.election.take_notify(), self.own_port) {
            self.trap_144(lid, master, caps);
        }
    }

    /// Trap 144 from this SM's port (LID `lid`) to the master at `master_lid`.
    fn trap_144(&mut self, lid: u16, master_lid: u16, caps: u32) {
        let mut details = [0u8; 54];
        details[2..4].copy_from_slice(&lid.to_be_bytes());
        details[6..10].copy_from_slice(&caps.to_be_bytes());
        details[10..12].copy_from_slice(&TRAP_144_SM_PRIORITY_CHANGE.to_be_bytes());
        let notice = NoticeRepr {
            is_generic: true,
            notice_type: NoticeType::Info,
            producer_type_or_vendor_id: ProducerType::Ca.into(),
            trap_number_or_device_id: TRAP_LOCAL_CHANGES,
            issuer_lid: lid,
            notice_toggle: false,
            notice_count: 0,
            data_details: details,
            issuer_gid: ipoib_wire::Gid::new(0, 0),
        };
        self.traps_sent += 1;
        let tid = 0x534d_5452_0000_0000 | self.traps_sent;
        let mut trap = SmpMadRepr::lid_routed_get(tid, attr::NOTICE, 0);
        trap.header.method = Method::Trap;
        trap.attribute = SmpAttribute::Notice(notice);
        self.represses.push_back(MadOut {
            to: MadAddr {
                qpn: 0,
                ..MadAddr::gsi(master_lid)
            },
            mad: trap.to_bytes().to_vec(),
        });
    }

    /// A poll of the master (or of the master a handover is awaited from) when one is due.
    pub(super) fn poll_master(&mut self, now: Instant) {
        if let Some(path) = self.election.poll_due(now) {
            let info = self.own_info(None);
            self.submit_sm_info(Method::Get, SmInfoAsk::Poll, path, info);
        }
    }

    /// The outcome of an SMInfo SMP of ours.
    pub(super) fn sm_info_result(
        &mut self,
        now: Instant,
        path: Vec<u8>,
        ask: SmInfoAsk,
        r: Result<SmpAttribute, SmpFailure>,
    ) {
        let info = match &r {
            Ok(SmpAttribute::SmInfo(i)) => Some(*i),
            _ => None,
        };
        match ask {
            SmInfoAsk::Discover => self.election.discovered(&path, info.as_ref()),
            SmInfoAsk::Poll if self.election.polled(now, info.as_ref()) => self.sweep_now(now),
            // Standby, or Master awaiting the polled master's HANDOVER.
            SmInfoAsk::Poll => self.notify_master(),
            // OpenSM `smi_rcv_process_set_response`: nothing to do with the answer to a HANDOVER.
            SmInfoAsk::Set(_) => {}
        }
    }

    /// A sweep at once from Standby (nothing else in flight but polls), else after the current
    /// one.
    fn sweep_now(&mut self, now: Instant) {
        if self.phase == SweepPhase::Standby {
            self.resweep();
        } else {
            self.sweep_at(now);
        }
    }

    /// A SubnSet(SMInfo) for this SM (IBA 1 §14.4.1; the HCA hands it to QP0): answered with
    /// this SM's SMInfo as it was, then acted on ([`crate::node::sm::election::Election::handle_set`]).
    /// False when `m` is not one.
    /// `h` is `m`'s MAD header: only a SubnSet(SMInfo) is parsed whole (every GetResp of the
    /// sweep passes here first, and its attribute is parsed where it is read).
    pub(super) fn sm_info_request(&mut self, now: Instant, h: &MadHeaderRepr, m: &MadIn) -> bool {
        if h.method != Method::Set || h.attribute_id != attr::SM_INFO {
            return false;
        }
        let Ok(req) = SmpMadRepr::parse(&m.mad) else {
            return false;
        };
        let SmpAttribute::SmInfo(sender) = req.attribute else {
            return true;
        };
        let back = path_back(&m.mad);
        let mut mine = self.own_info(None);
        // IBA 1 §14.4.1: the SM_Key only to a requester that presented it.
        if sender.sm_key != mine.sm_key {
            mine.sm_key = 0;
        }
        let modifier = req.header.attribute_modifier;
        let (status, effect) = self
            .election
            .handle_set(now, modifier, &sender, back.as_deref());
        let to = match req.route {
            SmpRoute::Directed(_) => MadAddr {
                qpn: 0,
                ..MadAddr::gsi(LID_PERMISSIVE)
            },
            SmpRoute::Lid => MadAddr {
                qpn: 0,
                sl: m.from.sl,
                ..MadAddr::gsi(m.from.lid)
            },
        };
        let resp = req.get_response(status, SmpAttribute::SmInfo(mine));
        self.represses.push_back(MadOut {
            to,
            mad: resp.to_bytes().to_vec(),
        });
        match effect {
            SetEffect::Nothing => {}
            SetEffect::Sweep => self.sweep_now(now),
            SetEffect::TakeOver => {
                // IBA 1 §14.4.1: the new master acknowledges the HANDOVER, its SMInfo still
                // Standby (OpenSM accepts an ACKNOWLEDGE only from a Standby sender).
                if let Some(path) = back {
                    let info = SmInfoRepr {
                        sm_state: SmState::Standby,
                        ..self.own_info(None)
                    };
                    let ask = SmInfoAsk::Set(modifier::ACKNOWLEDGE);
                    self.submit_sm_info(Method::Set, ask, path, info);
                }
                self.sweep_now(now);
            }
        }
        true
    }
}

/// The directed route back to the sender of a directed-route SMP that reached its end here
/// (IBA 1 §14.2.2: ReturnPath\[i\] is the port it came in by at hop i): ReturnPath\[n\] down to
/// ReturnPath\[1\]. `None` for a LID-routed SMP or one of no hops.
fn path_back(mad: &[u8]) -> Option<Vec<u8>> {
    let m = SmpMad::new_checked(mad).ok()?;
    if !m.is_directed() {
        return None;
    }
    let n = usize::from(m.hop_count());
    let rp = m.return_path();
    if n == 0 || n >= rp.len() {
        return None;
    }
    Some((1..=n).rev().map(|i| rp[i]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::sm::{SmOptions, SmpSettings};
    use ipoib_proto::mad_agent::MadAgent;
    use ipoib_proto::partitions::PartitionConfig;
    use proptest::prelude::*;

    // The input the proptest below mangles reaches the SMInfo code: a well-formed SubnSet(SMInfo)
    // STANDBY from a Master sender to a Discovering SM is answered, refused (IBA 1 §14.4.1).
    #[test]
    fn a_sm_info_set_is_answered() {
        let mut sm = SmpSm::new(
            SmOptions::default(),
            PartitionConfig::default_config(),
            SmpSettings::default(),
        );
        sm.start();
        let sender = SmInfoRepr {
            guid: ipoib_wire::Guid(9),
            sm_key: 1,
            act_count: 0,
            priority: 0,
            sm_state: SmState::Master,
        };
        let req = directed(
            Method::Set,
            attr::SM_INFO,
            modifier::STANDBY,
            &[1, 2],
            Some(SmpAttribute::SmInfo(sender)),
        );
        let from = MadAddr {
            qpn: 0,
            ..MadAddr::gsi(LID_PERMISSIVE)
        };
        let mad = req.to_bytes().to_vec();
        sm.handle_mad(Instant::ZERO, MadIn { from, mad });
        let out = sm.poll_transmit(Instant::ZERO).expect("an answer");
        let r = SmpMadRepr::parse(&out.mad).unwrap();
        assert_eq!(r.header.method, Method::GetResp);
        assert_eq!(r.status(), ipoib_wire::mad::MadStatus::INVALID_ATTR_VALUE);
    }

    proptest! {
        // IBA 1 §14.4.1: any SubnSet(SMInfo) (or other MAD) reaching the SM's QP0, malformed,
        // replayed or spoofed, never panics the agent, and what it sends back is bounded.
        #[test]
        fn any_sm_info_set_never_panics(
            mads in proptest::collection::vec(
                (any::<bool>(), any::<u32>(), any::<u8>(), proptest::collection::vec(any::<u8>(), 256)),
                1..20),
        ) {
            let mut sm = SmpSm::new(
                SmOptions::default(),
                PartitionConfig::default_config(),
                SmpSettings::default(),
            );
            sm.start();
            let mut now = Instant::ZERO;
            for (directed, modifier, hops, mut mad) in mads {
                mad[0] = 1; // BaseVersion
                mad[1] = if directed { 0x81 } else { 0x01 };
                mad[2] = 1; // ClassVersion
                mad[3] = u8::from(Method::Set);
                mad[16..18].copy_from_slice(&attr::SM_INFO.to_be_bytes());
                mad[20..24].copy_from_slice(&modifier.to_be_bytes());
                mad[7] = hops;
                let from = MadAddr { qpn: 0, ..MadAddr::gsi(7) };
                sm.handle_mad(now, MadIn { from, mad });
                let mut out = 0;
                while sm.poll_transmit(now).is_some() {
                    out += 1;
                    prop_assert!(out < 1000);
                }
                now += std::time::Duration::from_millis(1);
            }
        }
    }
}
