//! Traps 256 (Bad M_Key), 257 (Bad P_Key) and 258 (Bad Q_Key) from an HCA port to its master SM
//! (IBA 1 §14.2.5.1 Table 131): an SMP that failed the port's M_Key check (§14.2.4.1, `sma.rs`),
//! a packet that failed the port's P_Key check (§10.9.3) or a datagram that failed its QP's Q_Key
//! check (§10.2.4) is counted in PortInfo:M_KeyViolations, P_KeyViolations or Q_KeyViolations
//! (`sma.rs`, `ud.rs`, `rx.rs`) and reported by a LID-routed SubnTrap(Notice) from the port's LID
//! to PortInfo:MasterSMLID on MasterSMSL, as the switch sends traps 128 and 256
//! (`hw/switch/sma.rs` `send_trap`).
//!
//! As Linux's qib (docs/PERF-COUNTERS.md): only from an Active port that has a LID and knows the
//! SM's, M_Key 0, and at most one trap per 4.096 µs × 2^PortInfo:SubnetTimeOut; a violation within
//! that time is counted but not reported. The SM's TrapRepress (§13.4.9) is taken by the SMA
//! (`sma.rs`), recognised by the TransactionID's upper half, [`TRAP_TID`].

use super::Hca;
use crate::hw::mgmt::PortState;
use crate::hw::sma;
use ipoib_proto::time::Instant;
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::{BadKey, BadKeyTrap, Method, NoticeRepr, ProducerType};
use ipoib_wire::smp::{SmpAttribute, SmpMadRepr};
use std::time::Duration;

/// The upper 32 bits of the TransactionID of every trap an HCA port sends ("HCTR"); the lower
/// 32 count the port's traps.
pub const TRAP_TID: u64 = 0x4843_5452_0000_0000;

/// True for the TransactionID of a trap an HCA port sent ([`TRAP_TID`]).
pub(super) fn is_own_trap(tid: u64) -> bool {
    tid & 0xffff_ffff_0000_0000 == TRAP_TID
}

/// 4.096 µs × 2^`subnet_timeout` (IBA 1 §14.2.5.6 SubnetTimeOut, 5 bits).
pub fn trap_holdoff(subnet_timeout: u8) -> Duration {
    Duration::from_nanos(4096u64 << subnet_timeout.min(31))
}

impl Hca {
    /// Reports a bad P_Key or Q_Key seen on `port` at `now` to the master SM (the module's rules).
    pub(super) fn bad_key_trap(&mut self, now: Instant, port: u8, kind: BadKey, t: BadKeyTrap) {
        self.send_trap(now, port, |slid| t.notice(kind, ProducerType::Ca, slid));
    }

    /// Reports `req`, an SMP that failed the M_Key check of `port` at `now`, to the master SM
    /// (the module's rules; the details as a switch gives them, `sma::bad_mkey_details`).
    pub(super) fn bad_mkey_trap(&mut self, now: Instant, port: u8, req: &SmpMadRepr) {
        self.send_trap(now, port, |slid| {
            sma::bad_mkey_details(req, slid).notice(ProducerType::Ca, slid)
        });
    }

    /// Sends Trap(the notice `notice` makes of the port's LID) from `port` at `now` to the master
    /// SM, unless the module's rules hold it back.
    fn send_trap(&mut self, now: Instant, port: u8, notice: impl FnOnce(u16) -> NoticeRepr) {
        let Some(p) = self.port_mut(port) else {
            return;
        };
        if p.lid == 0 || p.sm_lid == 0 || p.state != PortState::Active {
            return;
        }
        if p.trap_holdoff.is_some_and(|until| now < until) {
            return;
        }
        p.trap_holdoff = Some(now.saturating_add(trap_holdoff(p.subnet_timeout)));
        p.traps_sent += 1;
        let tid = TRAP_TID | (p.traps_sent & 0xffff_ffff);
        let (slid, dlid, sl) = (p.lid, p.sm_lid, p.sm_sl);
        let mut trap = SmpMadRepr::lid_routed_get(tid, attr::NOTICE, 0);
        trap.header.method = Method::Trap;
        trap.attribute = SmpAttribute::Notice(notice(slid));
        let spare = self.spare.take().unwrap_or_default();
        let frame = sma::smp_frame_in(spare, slid, dlid, sl, &trap.to_bytes());
        let local = self.to_self(port, dlid);
        self.push_sma_out((port, frame, local));
    }
}
