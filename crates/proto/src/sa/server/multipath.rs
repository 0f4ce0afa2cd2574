//! MultiPathRecord (IBA 1 §15.2.5.20), answered as OpenSM 3.3.23 answers it
//! (`osm_sa_multipath_record.c` `osm_mpr_rcv_process`; measured by runtime test
//! `opensm_sa_edges::unsupported_methods_and_attributes_answered_like_opensm`,
//! docs/OPENSM-LIMITS.md "MultiPathRecord"):
//!
//! - a request without RMPPFlags.Active (IBA 1 §15.2.5.20: the request is sent with RMPP, a
//!   GetMulti) is ERR_REQ_INVALID, whatever its method; a Set or Delete never gets here (no
//!   handler, dropped like every read-only record's);
//! - with it, a method other than GetMulti is METHOD_ATTR_UNSUPPORTED;
//! - SGIDCount or DGIDCount missing from the mask is ERR_REQ_INSUFFICIENT_COMPONENTS, so is
//!   half a ServiceID; a Rate or MTU code that is none, given with its selector, is
//!   ERR_REQ_INVALID;
//! - a GID of another subnet (or a multicast SGID), or of no port, is ERR_REQ_INVALID_GID; no
//!   SGID or no DGID is ERR_REQ_INVALID;
//! - otherwise the answer is a GetMultiResp of PathRecords (o15-0.2.7: the PathRecord
//!   AttributeID), for each source in turn each destination, the paths of that pair as a
//!   PathRecord GetTable with the same selectors finds them (`path.rs`), at most NumbPath in all
//!   (127 without it, OpenSM's `OSM_SA_MPR_MAX_NUM_PATH`).
//!
//! The request is read from its bytes: the record's first 13 bytes are PathRecord's bytes 44 to
//! 57 (RawTraffic to PacketLifeTime), its mask bits 0 and 2 to 15 PathRecord's bits 6 and 8 to
//! 21; SGIDCount is byte 15, DGIDCount byte 16, the GIDs follow from byte 24 (`ib_types.h`
//! `ib_multipath_rec_t`). Not done: the two-by-two request of two paths (APM,
//! `mpr_rcv_get_apm_paths`, answered here as any other) and IndependenceSelector.

use super::{Req, SaServer};
use crate::time::Instant;
use ipoib_wire::mad::attr::sa as attr;
use ipoib_wire::mad::{MadStatus, Method, SaStatus};
use ipoib_wire::sa::{pr_mask as pm, PathRecordRepr};
use ipoib_wire::Gid;

/// The SA header's end: where the record starts in the MAD (IBA 1 §15.2.1.1).
const RECORD: usize = 56;
/// GIDs a MAD's record holds (200 data bytes, 24 before the GIDs).
const MAX_GIDS: usize = (200 - 24) / 16;
/// Paths answered when the request names no NumbPath (OpenSM `OSM_SA_MPR_MAX_NUM_PATH`).
const MAX_PATHS: u32 = 127;

/// MultiPathRecord ComponentMask bits (IBA 1 §15.2.5.20; OpenSM `IB_MPR_COMPMASK_*`).
mod mpr_mask {
    pub const RATE_SELECTOR: u64 = 1 << 12;
    pub const RATE: u64 = 1 << 13;
    pub const MTU_SELECTOR: u64 = 1 << 10;
    pub const MTU: u64 = 1 << 11;
    pub const NUMB_PATH: u64 = 1 << 6;
    pub const SERVICE_ID: u64 = (1 << 16) | (1 << 21);
    pub const SGID_COUNT: u64 = 1 << 19;
    pub const DGID_COUNT: u64 = 1 << 20;
}

impl SaServer {
    pub(super) fn multipath_record(&mut self, now: Instant, req: &Req<'_>) {
        let raw = req.raw;
        if raw.len() < RECORD + 24 || raw[26] & 0x01 == 0 {
            return self.respond_sa_error(req, SaStatus::ReqInvalid);
        }
        if req.mad.header.method != Method::GetMulti {
            return self.respond_error(raw, &req.from, MadStatus::METHOD_ATTR_UNSUPPORTED);
        }
        let mask = req.mad.sa.component_mask;
        use mpr_mask as m;
        if mask & m::SGID_COUNT == 0 || mask & m::DGID_COUNT == 0 {
            return self.respond_sa_error(req, SaStatus::ReqInsufficientComponents);
        }
        // The record as the PathRecord its first bytes are.
        let mut pr = [0u8; 64];
        pr[44..57].copy_from_slice(&raw[RECORD..RECORD + 13]);
        let Ok(mut p) = PathRecordRepr::parse(&pr) else {
            return self.drop_mad("unparsable MultiPathRecord");
        };
        if (mask & m::RATE_SELECTOR != 0 && mask & m::RATE != 0 && !p.rate.is_valid())
            || (mask & m::MTU_SELECTOR != 0 && mask & m::MTU != 0 && !p.mtu.is_valid())
        {
            return self.respond_sa_error(req, SaStatus::ReqInvalid);
        }
        let sid = mask & m::SERVICE_ID;
        if sid != 0 && sid != m::SERVICE_ID {
            return self.respond_sa_error(req, SaStatus::ReqInsufficientComponents);
        }
        let rec = &raw[RECORD..];
        // As many GIDs as the record holds, 11 at most (OpenSM's IB_MULTIPATH_MAX_GIDS, what a
        // first segment holds: `mpr_rcv_get_end_points` cuts the counts to it). `handle_mad`
        // drops a MAD shorter than 256 bytes; `room` keeps this safe without that.
        let room = (rec.len() - 24) / 16;
        let nsrc = usize::from(rec[15]).min(MAX_GIDS).min(room);
        let ndst = usize::from(rec[16]).min(MAX_GIDS - nsrc).min(room - nsrc);
        let gid = |i: usize| {
            let mut g = [0u8; 16];
            g.copy_from_slice(&rec[24 + 16 * i..40 + 16 * i]);
            Gid(g)
        };
        let mut ends = Vec::with_capacity(nsrc + ndst);
        for i in 0..nsrc + ndst {
            match self.multipath_end(&gid(i), i < nsrc) {
                Ok(e) => ends.push(e),
                Err(s) => return self.respond_sa_error(req, s),
            }
        }
        if nsrc == 0 || ndst == 0 {
            return self.respond_sa_error(req, SaStatus::ReqInvalid);
        }
        // The PathRecord selectors of the MultiPathRecord's mask: bit 0 (RawTraffic) to bit 6,
        // bits 2 to 15 six up (FlowLabel 2 -> 8, ..., PacketLifeTime 15 -> 21); NumbPath counts
        // the paths of all pairs together, below.
        let mut pmask = ((mask & 0xfffc) << 6) & !pm::NUMB_PATH;
        if mask & 1 != 0 {
            pmask |= pm::RAW_TRAFFIC;
        }
        if mask & m::SERVICE_ID == m::SERVICE_ID {
            pmask |= pm::SERVICE_ID;
            let lsb = rec[17..24]
                .iter()
                .fold(0u64, |a, &b| (a << 8) | u64::from(b));
            p.service_id = (u64::from(rec[13]) << 56) | lsb;
        }
        let max = if mask & m::NUMB_PATH != 0 {
            u32::from(rec[5] & 0x7f)
        } else {
            MAX_PATHS
        };
        let mut out = Vec::new();
        let mut total = 0u32;
        'pairs: for &s in &ends[..nsrc] {
            for &d in &ends[nsrc..] {
                total +=
                    self.port_pair_paths_upto(req.port, &p, pmask, max - total, s, d, &mut out);
                if total >= max {
                    break 'pairs;
                }
            }
        }
        // o15-0.2.7: PathRecords, under the PathRecord AttributeID.
        let mut mad = req.mad;
        mad.header.attribute_id = attr::PATH_RECORD;
        let answer = Req {
            mad,
            raw: req.raw,
            from: req.from,
            port: req.port,
        };
        self.respond_records(now, &answer, out);
    }

    /// The end port a MultiPathRecord GID names (OpenSM `mpr_rcv_get_gids`): a GID of another
    /// subnet than ours or the default (link-local) one, a multicast SGID, or a GID of no port is
    /// ERR_REQ_INVALID_GID.
    fn multipath_end(&self, g: &Gid, is_src: bool) -> Result<usize, SaStatus> {
        let prefix = g.subnet_prefix();
        let local = prefix == Gid::DEFAULT_SUBNET_PREFIX;
        if !local && ((is_src && g.is_multicast()) || prefix != self.model().subnet_prefix) {
            return Err(SaStatus::ReqInvalidGid);
        }
        self.endport_index_by_guid(g.interface_id())
            .ok_or(SaStatus::ReqInvalidGid)
    }
}
