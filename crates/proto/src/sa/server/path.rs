//! PathRecord Get and GetTable (IBA 1 §15.2.5.16; OpenSM `osm_sa_path_record.c`).
//!
//! Statuses: a method other than Get/GetTable -> METHOD_ATTR_UNSUPPORTED; an invalid rate or MTU
//! code given with its selector -> ERR_REQ_INVALID; half a ServiceID mask ->
//! ERR_REQ_INSUFFICIENT_COMPONENTS; SGID and SLID naming different ports -> ERR_REQ_INVALID.
//! Unknown end points (GID or LID), ports sharing no P_Key, selectors that cannot be met: no
//! records, so Get answers ERR_NO_RECORDS and GetTable an empty table (OpenSM answers the
//! endpoint lookup failures that way too, `goto Unlock` then `osm_sa_respond`).
//!
//! End points: CA ports and switches' management ports 0 (IBA 1 §15.2.5.16, paths between end
//! ports; OpenSM answers both, `saquery -p` starting with a switch's path to itself).
//!
//! Records: MTU and rate are the smallest along the route the forwarding tables give
//! ([`crate::subnet::SubnetModel::path`]), narrowed by the selectors; PacketLifeTime the subnet
//! timeout (0 for a port to itself); P_Key the requested one if both ends have it, else the first
//! P_Key of the source's table the destination shares; SL the requested one, else the partition's;
//! HopLimit 0 (no routers); Reversible set when the reverse route exists; NumbPath 0; selectors
//! "exactly"; Preference 0 for the LMC-aligned LID pairs, 2 for the others.

use super::mcast::share_pkey;
use super::{Req, SaServer};
use crate::subnet::CaPort;
use crate::time::Instant;
use core::cmp::Ordering;
use ipoib_wire::ib::lid::LID_UNICAST_LAST;
use ipoib_wire::ipoib::mcast::{mgid_scope, Scope};
use ipoib_wire::mad::{MadStatus, Method, SaStatus};
use ipoib_wire::sa::{pr_mask as pm, Mtu, PathRecordRepr, Rate, SaAttribute, Selector};
use ipoib_wire::{Gid, PKey};

struct Parms {
    mtu: Mtu,
    rate: Rate,
    pkt_life: u8,
    pkey: PKey,
    sl: u8,
}

/// Applies a selector to a value the path offers (OpenSM `pr_rcv_get_path_parms`): `None` when the
/// path cannot satisfy it.
fn select(have: u8, want: u8, sel: Selector) -> Option<u8> {
    match sel {
        Selector::GreaterThan => (have > want).then_some(have),
        Selector::LessThan if have >= want => (want > 1).then(|| want - 1),
        Selector::LessThan => Some(have),
        Selector::Exactly => (have >= want).then_some(want),
        Selector::LargestAvailable => Some(have),
    }
}

/// The first P_Key of `a`'s table that `b` also has, not limited at both ends (OpenSM
/// `osm_physp_find_common_pkey`).
fn common_pkey(a: &CaPort, b: &CaPort) -> Option<PKey> {
    a.pkeys
        .iter()
        .copied()
        .find(|&ka| b.pkeys.iter().any(|&kb| ka.matches(kb)))
}

/// Both ports have partition `k`, and their (first) entries for it match (OpenSM
/// `osm_physp_share_this_pkey`).
fn share_this_pkey(a: &CaPort, b: &CaPort, k: PKey) -> bool {
    let find = |p: &CaPort| p.pkeys.iter().copied().find(|&x| x.same_partition(k));
    match (find(a), find(b)) {
        (Some(x), Some(y)) => x.matches(y),
        _ => false,
    }
}

impl SaServer {
    pub(super) fn path_record(&mut self, now: Instant, req: &Req<'_>, p: PathRecordRepr) {
        let mask = req.mad.sa.component_mask;
        if !matches!(req.mad.header.method, Method::Get | Method::GetTable) {
            return self.respond_error(req.raw, &req.from, MadStatus::METHOD_ATTR_UNSUPPORTED);
        }
        if (mask & pm::RATE_SELECTOR != 0 && mask & pm::RATE != 0 && !p.rate.is_valid())
            || (mask & pm::MTU_SELECTOR != 0 && mask & pm::MTU != 0 && !p.mtu.is_valid())
        {
            return self.respond_sa_error(req, SaStatus::ReqInvalid);
        }
        let sid = mask & pm::SERVICE_ID;
        if sid != 0 && sid != pm::SERVICE_ID {
            return self.respond_sa_error(req, SaStatus::ReqInsufficientComponents);
        }
        match self.path_records(req, &p) {
            Ok(recs) => self.respond_records(now, req, recs),
            Err(s) => self.respond_sa_error(req, s),
        }
    }

    fn path_records(
        &self,
        req: &Req<'_>,
        p: &PathRecordRepr,
    ) -> Result<Vec<SaAttribute>, SaStatus> {
        let mask = req.mad.sa.component_mask;
        let model = self.model();
        if mask & pm::DGID != 0 && p.dgid.is_multicast() {
            return Ok(self.multicast_path(req, p).into_iter().collect());
        }
        let prefix_ok = |g: &Gid| {
            g.subnet_prefix() == model.subnet_prefix
                || g.subnet_prefix() == Gid::DEFAULT_SUBNET_PREFIX
        };
        // Each end the mask names must be a known port, or there is no record (newer OpenSM
        // `osm_pr_rcv_process`). GIDs are looked up in the port index, as LIDs are.
        let by_gid = |g: &Gid| {
            if prefix_ok(g) {
                self.endport_index_by_guid(g.interface_id())
            } else {
                None
            }
        };
        let end = |bit: u64, find: Option<usize>| match (mask & bit != 0, find) {
            (false, _) => Ok(None),
            (true, Some(i)) => Ok(Some(i)),
            (true, None) => Err(()),
        };
        let (Ok(src_gid_port), Ok(src_lid_port), Ok(dst_gid_port), Ok(dst_lid_port)) = (
            end(pm::SGID, by_gid(&p.sgid)),
            end(pm::SLID, self.endport_index_by_lid(p.slid)),
            end(pm::DGID, by_gid(&p.dgid)),
            end(pm::DLID, self.endport_index_by_lid(p.dlid)),
        ) else {
            return Ok(Vec::new());
        };
        if matches!((src_gid_port, src_lid_port), (Some(a), Some(b)) if a != b)
            || matches!((dst_gid_port, dst_lid_port), (Some(a), Some(b)) if a != b)
        {
            return Err(SaStatus::ReqInvalid);
        }
        // End ports in GUID order (OpenSM walks its port-GUID map), switch ports 0 among them.
        let mut order: Vec<usize> = (0..self.endport_count()).collect();
        order.sort_by_key(|&i| self.endport(i).map(|p| p.port_guid));
        let srcs: Vec<usize> = match src_gid_port.or(src_lid_port) {
            Some(i) => vec![i],
            None => order.clone(),
        };
        let dsts: Vec<usize> = match dst_gid_port.or(dst_lid_port) {
            Some(i) => vec![i],
            None => order,
        };
        let get = req.mad.header.method == Method::Get;
        let mut out = Vec::new();
        // OpenSM pr_rcv_process_world iterates destinations outside, sources inside.
        for &d in &dsts {
            for &s in &srcs {
                self.port_pair_paths(req, p, s, d, &mut out);
                if get && !out.is_empty() {
                    return Ok(out);
                }
            }
        }
        Ok(out)
    }

    /// OpenSM `pr_rcv_get_port_pair_paths`.
    fn port_pair_paths(
        &self,
        req: &Req<'_>,
        p: &PathRecordRepr,
        s: usize,
        d: usize,
        out: &mut Vec<SaAttribute>,
    ) {
        let mask = req.mad.sa.component_mask;
        let iterations = if req.mad.header.method == Method::Get {
            1
        } else if mask & pm::NUMB_PATH != 0 {
            u32::from(p.numb_path)
        } else {
            u32::MAX
        };
        self.port_pair_paths_upto(req.port, p, mask, iterations, s, d, out);
    }

    /// [`Self::port_pair_paths`] for requester `requester`'s request `p` of PathRecord mask
    /// `mask`, at most `iterations` records (also MultiPathRecord's, `multipath.rs`); the count
    /// added.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn port_pair_paths_upto(
        &self,
        requester: usize,
        p: &PathRecordRepr,
        mask: u64,
        iterations: u32,
        s: usize,
        d: usize,
        out: &mut Vec<SaAttribute>,
    ) -> u32 {
        let (Some(rq), Some(sp), Some(dp)) =
            (self.port(requester), self.endport(s), self.endport(d))
        else {
            return 0;
        };
        if !share_pkey(rq, sp) || !share_pkey(rq, dp) || !share_pkey(sp, dp) {
            return 0;
        }
        let range = |port: &CaPort| {
            let n = 1u32 << port.lmc.min(7);
            let last = u32::from(port.lid) + n - 1;
            (port.lid, last.min(u32::from(LID_UNICAST_LAST)) as u16)
        };
        let (dmin, dmax) = if mask & pm::DLID != 0 {
            (p.dlid, p.dlid)
        } else {
            range(dp)
        };
        let (smin, smax) = if mask & pm::SLID != 0 {
            (p.slid, p.slid)
        } else {
            range(sp)
        };
        if smin == 0 || dmin == 0 {
            return 0;
        }
        let mut n = 0u32;
        let (mut sl, mut dl) = (smin, dmin);
        while n < iterations {
            if let Some(r) = self.lid_pair_path(p, mask, s, sl, d, dl, 0) {
                out.push(SaAttribute::PathRecord(r));
                n += 1;
            }
            if sl >= smax || dl >= dmax {
                break;
            }
            sl += 1;
            dl += 1;
        }
        if n >= iterations {
            return n;
        }
        let (smin, smax, dmin, dmax) = (
            u32::from(smin),
            u32::from(smax),
            u32::from(dmin),
            u32::from(dmax),
        );
        let (mut sl, mut dl, mut so, mut dof) = (smin, dmin, 0u32, 0u32);
        while n < iterations {
            dof += 1;
            dl += 1;
            if dl > dmax {
                so += 1;
                sl += 1;
                if sl > smax {
                    break;
                }
                dof = 0;
                dl = dmin;
            }
            if so == dof {
                continue;
            }
            if let Some(r) = self.lid_pair_path(p, mask, s, sl as u16, d, dl as u16, 2) {
                out.push(SaAttribute::PathRecord(r));
                n += 1;
            }
        }
        n
    }

    #[allow(clippy::too_many_arguments)]
    fn lid_pair_path(
        &self,
        p: &PathRecordRepr,
        mask: u64,
        s: usize,
        slid: u16,
        d: usize,
        dlid: u16,
        preference: u8,
    ) -> Option<PathRecordRepr> {
        let parms = self.path_parms(p, mask, s, slid, d, dlid)?;
        let reversible = self.path_parms(p, mask, d, dlid, s, slid).is_some();
        if mask & pm::REVERSIBLE != 0 && p.reversible && !reversible {
            return None;
        }
        let model = self.model();
        let (sp, dp) = (self.endport(s)?, self.endport(d)?);
        Some(PathRecordRepr {
            dgid: model.gid(dp),
            sgid: model.gid(sp),
            dlid,
            slid,
            raw_traffic: mask & pm::RAW_TRAFFIC != 0 && p.raw_traffic,
            pkey: parms.pkey,
            sl: parms.sl,
            mtu_selector: Selector::Exactly,
            mtu: parms.mtu,
            rate_selector: Selector::Exactly,
            rate: parms.rate,
            packet_life_time_selector: Selector::Exactly,
            packet_life_time: parms.pkt_life,
            preference,
            reversible,
            numb_path: 0,
            ..PathRecordRepr::default()
        })
    }

    /// OpenSM `pr_rcv_get_path_parms`.
    fn path_parms(
        &self,
        p: &PathRecordRepr,
        mask: u64,
        s: usize,
        slid: u16,
        d: usize,
        dlid: u16,
    ) -> Option<Parms> {
        let model = self.model();
        let props = model.path(slid, dlid)?;
        let (sp, dp) = (self.endport(s)?, self.endport(d)?);
        let mut mtu = props.mtu;
        let mut rate = props.rate;
        let mut pkt_life = if s == d { 0 } else { self.cfg().subnet_timeout };
        if mask & pm::MTU_SELECTOR != 0 && mask & pm::MTU != 0 {
            // The selector works on codes (OpenSM `pr_rcv_get_path_parms`).
            mtu = Mtu::from(select(u8::from(mtu), u8::from(p.mtu), p.mtu_selector)?);
        }
        if mask & pm::RATE_SELECTOR != 0 && mask & pm::RATE != 0 {
            let want = p.rate;
            let c = rate.cmp_speed(want);
            rate = match p.rate_selector {
                Selector::GreaterThan => (c == Ordering::Greater).then_some(rate)?,
                Selector::LessThan if c != Ordering::Less => want.slower()?,
                Selector::LessThan => rate,
                Selector::Exactly => (c == Ordering::Equal).then_some(want)?,
                Selector::LargestAvailable => rate,
            };
        }
        if mask & pm::PACKET_LIFE_TIME_SELECTOR != 0 && mask & pm::PACKET_LIFE_TIME != 0 {
            pkt_life = select(pkt_life, p.packet_life_time, p.packet_life_time_selector)?;
        }
        let raw = mask & pm::RAW_TRAFFIC != 0 && p.raw_traffic;
        let pkey = if raw {
            common_pkey(sp, dp).unwrap_or(PKey(0))
        } else if mask & pm::P_KEY != 0 {
            if !share_this_pkey(sp, dp, p.pkey) {
                return None;
            }
            p.pkey
        } else {
            common_pkey(sp, dp)?
        };
        let sl = if mask & pm::SL != 0 {
            p.sl
        } else if pkey != PKey(0) && self.cfg().qos {
            self.partitions().partition(pkey).map_or(0, |x| x.flags.sl)
        } else {
            0
        };
        Some(Parms {
            mtu,
            rate,
            pkt_life,
            pkey: if raw { PKey(0) } else { pkey },
            sl,
        })
    }

    /// OpenSM `pr_process_multicast`: a path to a multicast group.
    fn multicast_path(&self, req: &Req<'_>, p: &PathRecordRepr) -> Option<SaAttribute> {
        let mask = req.mad.sa.component_mask;
        let g = self.mc.by_mgid.get(&p.dgid)?;
        let gr = &g.rec;
        let model = self.model();
        if (mask & pm::DLID != 0 && p.dlid != gr.mlid)
            || (mask & pm::SGID != 0 && !g.members.contains_key(&p.sgid))
            || (mask & pm::SLID != 0
                && !self
                    .port_index_by_lid(p.slid)
                    .and_then(|i| self.port(i))
                    .is_some_and(|x| g.members.contains_key(&model.gid(x))))
            || (mask & pm::P_KEY != 0 && p.pkey != gr.pkey)
            || (mask & pm::SL != 0 && p.sl != gr.sl)
            || (mask & pm::NUMB_PATH != 0
                && req.mad.header.method != Method::Get
                && p.numb_path == 0)
            || (mask & pm::FLOW_LABEL != 0 && p.flow_label != gr.flow_label)
            || (mask & pm::HOP_LIMIT != 0 && p.hop_limit != gr.hop_limit)
            || (mask & pm::TCLASS != 0 && p.tclass != gr.tclass)
        {
            return None;
        }
        let requester = self.port(req.port)?;
        let mut r = *p;
        if mask & pm::SGID == 0 {
            r.sgid = model.gid(requester);
        }
        if mask & pm::SLID == 0 {
            r.slid = requester.lid;
        }
        r.dlid = gr.mlid;
        r.tclass = gr.tclass;
        r.numb_path = 1;
        r.pkey = gr.pkey;
        r.mtu_selector = Selector::Exactly;
        r.mtu = gr.mtu;
        r.rate_selector = Selector::Exactly;
        r.rate = gr.rate;
        r.packet_life_time_selector = Selector::Exactly;
        r.packet_life_time = gr.packet_life_time;
        r.sl = gr.sl;
        r.qos_class = 0;
        r.flow_label = gr.flow_label;
        r.hop_limit = if mgid_scope(&gr.mgid) != Scope::LinkLocal {
            0xff
        } else {
            gr.hop_limit
        };
        Some(SaAttribute::PathRecord(r))
    }
}
