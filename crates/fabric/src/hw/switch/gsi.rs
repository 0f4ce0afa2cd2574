//! The switch's general services interface on QP1 of management port 0 (IBA 1 §13.5): its
//! performance management agent (§16.1, `crate::hw::sma::pma`) answers PerfMgt; a Get or Set of
//! any other class (Congestion Control, Annex A10, which is optional; the vendor classes) is
//! answered GetResp with status 0x000C, method/attribute unsupported (§13.4.7), the request's
//! header and data otherwise kept, as Linux's MAD layer answers a Get or Set no agent registered
//! (`drivers/infiniband/core/mad.c` `generate_unmatched_resp`; the hosts here do the same,
//! `crate::node::host`); any other method of such a class is dropped. docs/DIAGS.md has what
//! `ibccquery` and `vendstat` print for it, and what ibsim answers.

use super::Switch;
use crate::hw::sim::{Frame, Tx};
use crate::hw::sma::{self, pma};
use ipoib_wire::ib::LrhRepr;
use ipoib_wire::mad::{MadHeaderRepr, MadStatus, Method, MgmtClass, MAD_LEN};
use ipoib_wire::packet::Packet;

/// The answer to a GMP of a class the switch serves no agent for: the request with GetResp and
/// status 0x000C written over its header, for a Get or Set; `None` for any other method.
pub fn unsupported_class_answer(mad: &[u8]) -> Option<[u8; MAD_LEN]> {
    let h = MadHeaderRepr::parse_bytes(mad).ok()?;
    if !matches!(h.method, Method::Get | Method::Set) {
        return None;
    }
    let mut out = <[u8; MAD_LEN]>::try_from(mad.get(..MAD_LEN)?).ok()?;
    h.response(Method::GetResp, MadStatus::METHOD_ATTR_UNSUPPORTED)
        .emit(&mut out);
    Some(out)
}

impl Switch {
    /// Answers the GMP at `off` in `packet` (QP1, to the switch's LID) by its class.
    pub(super) fn gsi_answer(
        &mut self,
        class: MgmtClass,
        port: u8,
        lrh: &LrhRepr,
        packet: &[u8],
        off: usize,
        tx: &mut Tx,
    ) {
        // `management` checked the ICRC already (the VCRC was checked on arrival): only the
        // headers are read here.
        let Ok(p) = Packet::parse_crcs_known_good(packet) else {
            return;
        };
        let (Some(bth), Some(deth)) = (p.bth, p.ext.deth) else {
            return;
        };
        let Some(mad) = packet.get(off..off + MAD_LEN) else {
            return;
        };
        let resp = if class == MgmtClass::Perf {
            let ports = &self.ports;
            let mut cleared = None;
            let resp = pma::answer(
                mad,
                |n| ports.get(usize::from(n)).map(|p| p.traffic),
                |n, c| cleared = Some((n, c)),
            );
            if let Some((n, c)) = cleared {
                if let Some(p) = self.ports.get_mut(usize::from(n)) {
                    p.traffic = c;
                }
            }
            resp
        } else {
            unsupported_class_answer(mad)
        };
        let Some(resp) = resp else {
            return;
        };
        let out = self.route_or(lrh.slid, port);
        let reply = sma::gmp_packet(self.lid, lrh.slid, lrh.sl, bth.pkey, deth.src_qp, &resp);
        self.send_from_management(out, Frame::with_crcs(reply), tx);
    }
}
