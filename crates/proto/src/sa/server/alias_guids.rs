//! GUIDInfoRecord Set and Delete (IBA 1 §15.2.5.18): alias GUIDs, the port GUIDs past index 0
//! of a port's GUID table (IBA 1 §14.2.5.5, GUIDInfo), which the SA assigns or takes as given,
//! as OpenSM 3.3.23 does (`osm_sa_guidinfo_record.c` `osm_gir_rcv_process`, `set_guidinfo`,
//! `del_guidinfo`; measured by runtime test `opensm_sa_edges::alias_guids_answered_like_opensm`,
//! docs/OPENSM-LIMITS.md "Alias GUIDs"):
//!
//! - the component mask must hold LID and BlockNum, else ERR_REQ_INSUFFICIENT_COMPONENTS; no
//!   port with that LID (a CA port or a switch's port 0, any LID of its LMC range) is
//!   ERR_NO_RECORDS; a port sharing no P_Key with the requester: no answer; a BlockNum past
//!   GUIDCap / 8 blocks is ERR_NO_RECORDS;
//! - GUID 0 of block 0 is the port GUID, read-only: GUID 0 in the mask of block 0 is
//!   ERR_REQ_INVALID;
//! - Set, for each GUID of the mask within GUIDCap: a zero GUID keeps the index's alias if it has
//!   one, else takes the GUID the SA assigned that index of that port before (kept after a
//!   Delete), else a new one (`0x001405` OpenIB's OUI, then 0, then a counter from 1: OpenSM's
//!   `sm_assigned_guid` with option `sm_assigned_guid` 0); a GUID any port's table holds already
//!   (another port's, or another index of this one) is left out; otherwise it replaces the
//!   index's;
//! - Delete clears each GUID of the mask;
//! - a port that leaves the subnet (not in the model a sweep gives, [`SaServer::set_subnet`],
//!   or dropped, [`SaServer::drop_port`]) loses its table, as OpenSM's drop manager deletes its
//!   aliases: they are free for other ports, and it comes back with none;
//! - the answer (GetResp to a Set, DeleteResp to a Delete) is the request's record with the
//!   block as the table now holds it. GUIDInfoRecord Get and GetTable show the tables
//!   (`records.rs`).
//!
//! What OpenSM does besides that we do not: it writes the changed block to the port
//! (SubnSet(GUIDInfo), `osm_queue_guidinfo`), refuses a Delete of an alias a multicast group
//! has as member (ERR_REQ_DENIED: ours never lets an alias join) and resolves alias GIDs in
//! PathRecord and MultiPathRecord requests.

use super::records::{lid_in, At};
use super::{Req, SaServer};
use ipoib_wire::mad::{Method, SaStatus};
use ipoib_wire::sa::{gir_mask, GuidInfoRecordRepr, SaAttribute, GUID_BLOCK_ENTRIES};
use ipoib_wire::Guid;
use std::collections::BTreeMap;

/// OpenIB's OUI, the top 24 bits of an SA-assigned alias GUID (OpenSM `OSM_VENDOR_ID_OPENIB`).
const OPENIB_OUI: u64 = 0x00_1405;

/// How many assigned GUIDs one index tries before giving up on it (OpenSM's 1000).
const ASSIGN_TRIES: u32 = 1000;

/// The alias GUIDs the SA keeps, bounded by the model: one table of at most GUIDCap GUIDs per
/// port (index 0 its GUID), as OpenSM's `p_guids`.
#[derive(Debug, Default)]
pub(super) struct AliasGuids {
    /// Per port GUID, its GUID table as Set and Delete left it.
    tables: BTreeMap<Guid, Vec<Guid>>,
    /// Alias GUID -> the port whose table holds it (OpenSM `alias_port_guid_tbl`).
    owners: BTreeMap<Guid, Guid>,
    /// Per port GUID, the GUID the SA assigned each index, kept after a Delete (OpenSM
    /// `assigned_guids_tbl`).
    assigned: BTreeMap<Guid, Vec<Guid>>,
    /// SA-assigned GUIDs so far (OpenSM `sm_assigned_guid`'s counter).
    count: u32,
}

impl AliasGuids {
    /// Block `block` of `port`'s table: its aliases, or the port GUID alone in block 0 when it
    /// has none.
    pub(super) fn block(&self, port: Guid, block: u8) -> [Guid; GUID_BLOCK_ENTRIES] {
        let mut out = [Guid(0); GUID_BLOCK_ENTRIES];
        match self.tables.get(&port) {
            Some(t) => {
                let start = usize::from(block) * GUID_BLOCK_ENTRIES;
                for (o, g) in out.iter_mut().zip(t.iter().skip(start)) {
                    *o = *g;
                }
            }
            None if block == 0 => out[0] = port,
            None => {}
        }
        out
    }
}

impl AliasGuids {
    /// Forgets the GUID table of `port`, which left the subnet: its aliases are free for any
    /// port again, and a port that comes back with its GUID starts with none; the GUIDs the SA
    /// assigned its indices are kept. As OpenSM's drop manager (`osm_drop_mgr.c`
    /// `drop_mgr_remove_port` deletes the port's entries of `alias_port_guid_tbl`, and its GUID
    /// table goes with the port object; `assigned_guids_tbl` stays).
    pub(super) fn forget(&mut self, port: Guid) {
        let Some(table) = self.tables.remove(&port) else {
            return;
        };
        for g in table.iter().skip(1) {
            if self.owners.get(g) == Some(&port) {
                self.owners.remove(g);
            }
        }
    }

    /// The ports that have a GUID table, in GUID order.
    pub(super) fn ports(&self) -> impl Iterator<Item = Guid> + '_ {
        self.tables.keys().copied()
    }
}

/// The next SA-assigned GUID after `count` of them, `None` once the counter is spent.
fn next_assigned(count: &mut u32) -> Option<Guid> {
    *count = count.checked_add(1)?;
    Some(Guid((OPENIB_OUI << 40) | u64::from(*count)))
}

/// What a Set or Delete of alias GUIDs ends in.
enum Outcome {
    /// The block as the table now holds it.
    Block([Guid; GUID_BLOCK_ENTRIES]),
    /// An error status.
    Error(SaStatus),
}

impl SaServer {
    /// GUIDInfoRecord Set and Delete (module docs).
    pub(super) fn guid_info_modify(&mut self, req: &Req<'_>, q: GuidInfoRecordRepr) {
        let mask = req.mad.sa.component_mask;
        let key = gir_mask::LID | gir_mask::BLOCK;
        if mask & key != key {
            return self.respond_sa_error(req, SaStatus::ReqInsufficientComponents);
        }
        let target =
            self.model().phys_ports().into_iter().find(
                |p| { matches!(p.at, At::Ca(_)) || p.num == 0 } && lid_in(p.lid, p.lmc, q.lid),
            );
        let Some(p) = target else {
            return self.respond_sa_error(req, SaStatus::NoRecords);
        };
        if !self.visible(req, &p) {
            return self.drop_mad("GUIDInfoRecord of a port sharing no P_Key");
        }
        let guid_cap = match p.at {
            At::Switch(s) => self.model().switches[s].node.guid_cap,
            At::Ca(i) => self.model().ports[i].node.guid_cap,
        };
        let cap = usize::from(guid_cap);
        let blocks = cap.div_ceil(GUID_BLOCK_ENTRIES);
        if usize::from(q.block) >= blocks {
            return self.respond_sa_error(req, SaStatus::NoRecords);
        }
        let start = usize::from(q.block) * GUID_BLOCK_ENTRIES;
        let range = start..cap.min(start + GUID_BLOCK_ENTRIES);
        // GUID 0 of block 0 is the port's (OpenSM "Not allowed to set RO GID 0").
        if q.block == 0 && mask & gir_mask::GUID0 != 0 {
            return self.respond_sa_error(req, SaStatus::ReqInvalid);
        }
        let picked = |i: usize| mask & (gir_mask::GUID0 << (i % GUID_BLOCK_ENTRIES)) != 0;
        let outcome = if req.mad.header.method == Method::Set {
            self.aliases_set(p.guid, cap, range, &picked, &q)
        } else {
            self.aliases_delete(p.guid, range, &picked)
        };
        match outcome {
            Outcome::Error(s) => self.respond_sa_error(req, s),
            Outcome::Block(guids) => {
                let rec = GuidInfoRecordRepr { guids, ..q };
                self.respond(req, SaAttribute::GuidInfoRecord(rec));
            }
        }
    }

    fn aliases_set(
        &mut self,
        port: Guid,
        cap: usize,
        range: std::ops::Range<usize>,
        picked: &dyn Fn(usize) -> bool,
        q: &GuidInfoRecordRepr,
    ) -> Outcome {
        let ports = &self.by_guid;
        let switches = &self.switch_endports;
        let is_port_guid =
            |g: Guid| ports.contains_key(&g.0) || switches.iter().any(|s| s.port_guid == g);
        let a = &mut self.aliases;
        let size = cap.div_ceil(GUID_BLOCK_ENTRIES) * GUID_BLOCK_ENTRIES;
        let table = a.tables.entry(port).or_insert_with(|| vec![port]);
        // Sized by the port's GUIDCap now (a later sweep may find another).
        if table.len() < size {
            table.resize(size, Guid(0));
        }
        for i in range.clone().filter(|&i| picked(i)) {
            let mut alias = q.guids[i % GUID_BLOCK_ENTRIES];
            if alias == Guid(0) {
                if table[i] != Guid(0) {
                    continue; // keeps its alias
                }
                let before = a
                    .assigned
                    .get(&port)
                    .and_then(|v| v.get(i).copied())
                    .unwrap_or(Guid(0));
                if before != Guid(0) {
                    if a.owners.contains_key(&before) {
                        continue; // held elsewhere meanwhile
                    }
                    alias = before;
                } else {
                    for _ in 0..ASSIGN_TRIES {
                        let Some(g) = next_assigned(&mut a.count) else {
                            return Outcome::Error(SaStatus::NoResources);
                        };
                        // Not a GUID some table holds, a port's own GUID included (OpenSM's
                        // alias table holds the port GUIDs too).
                        if !a.owners.contains_key(&g) && !is_port_guid(g) {
                            alias = g;
                            let v = a.assigned.entry(port).or_default();
                            if v.len() <= i {
                                v.resize(table.len(), Guid(0));
                            }
                            v[i] = g;
                            break;
                        }
                    }
                    if alias == Guid(0) {
                        continue;
                    }
                }
            }
            // A GUID some table holds already, a port's own GUID included, stays where it is
            // (OpenSM keeps the base GUIDs in the same table: "ERR 5108: Duplicate alias port
            // GUID").
            if a.owners.contains_key(&alias) || is_port_guid(alias) {
                continue;
            }
            let old = std::mem::replace(&mut table[i], alias);
            if old != Guid(0) {
                a.owners.remove(&old);
            }
            a.owners.insert(alias, port);
        }
        Outcome::Block(self.aliases.block(port, q_block(&range)))
    }

    fn aliases_delete(
        &mut self,
        port: Guid,
        range: std::ops::Range<usize>,
        picked: &dyn Fn(usize) -> bool,
    ) -> Outcome {
        let a = &mut self.aliases;
        if let Some(table) = a.tables.get_mut(&port) {
            for i in range.clone().filter(|&i| picked(i) && i != 0) {
                let old = table.get_mut(i).map_or(Guid(0), std::mem::take);
                if old != Guid(0) {
                    a.owners.remove(&old);
                }
            }
        }
        Outcome::Block(self.aliases.block(port, q_block(&range)))
    }
}

/// The block a range of table indices lies in.
fn q_block(range: &std::ops::Range<usize>) -> u8 {
    u8::try_from(range.start / GUID_BLOCK_ENTRIES).unwrap_or(u8::MAX)
}
