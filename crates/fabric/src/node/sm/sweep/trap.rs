//! Traps to the SM agent (IBA 1 §14.2.5.1): each is answered with TrapRepress, and a trap 128
//! (a switch's link went up or down) or 144 (a port's local changes) asks for a sweep.

use super::SmpSm;
use ipoib_proto::mad_agent::{MadAddr, MadIn, MadOut};
use ipoib_proto::time::Instant;
use ipoib_wire::mad::{MadStatus, Method};
use ipoib_wire::smp::{SmpAttribute, SmpMadRepr, SmpRoute};

impl SmpSm {
    /// A Trap() on QP0 (IBA 1 §14.2.5.1): TrapRepress to its sender (LID routed, the same
    /// TransactionID and attribute, §13.4.9); a trap 128 (link state change) asks for a sweep.
    pub(super) fn trap(&mut self, now: Instant, m: &MadIn) {
        self.stats.traps += 1;
        let Ok(t) = SmpMadRepr::parse(&m.mad) else {
            return;
        };
        if t.route != SmpRoute::Lid {
            return;
        }
        let mut r = t;
        r.header.method = Method::TrapRepress;
        r.header.status = MadStatus::SUCCESS;
        self.represses.push_back(MadOut {
            to: MadAddr {
                qpn: 0,
                sl: m.from.sl,
                ..MadAddr::gsi(m.from.lid)
            },
            mad: r.to_bytes().to_vec(),
        });
        // Trap 144 too: a port's local changes, as a new Standby SM tells its master (OpenSM
        // `osm_trap_rcv.c` sweeps on both).
        let sweep = matches!(&t.attribute,
            SmpAttribute::Notice(n) if matches!(n.trap_number(), Some(128 | 144)));
        if sweep {
            self.sweep_at(now);
        }
    }
}
