//! Memory registration (IBA 1 §10.6): the regions of one HCA, their L_Keys and R_Keys and access
//! rights, and the checks the connected-QP engines make against them through [`RdmaMemory`].
//!
//! - [`Hca::reg_mr`] / [`Hca::reg_mr_at`] register `len` bytes with [`Access`] rights and return
//!   an [`MrHandle`]: a fresh L_Key and a different fresh R_Key, and the virtual address of byte 0
//!   (chosen by the HCA, page aligned with an unmapped gap after each region, or given).
//!   Remote write needs local write (IBA 1 §10.6.3.1; `docs/DEPLOYED.md` "Linux verbs (memory
//!   registration)").
//! - [`Hca::dereg_mr`] ends the region: its keys stop working at once, so a later RDMA request
//!   with its R_Key is NAKed remote access error, and an RDMA READ landing in it completes with a
//!   local protection error.
//! - [`Hca::mr_read`], [`Hca::mr_write`] and [`Hca::mr_slice_mut`] are the application touching its
//!   own buffer (by offset from byte 0): no access rights apply to them.
//! - Responder checks (IBA 1 §9.7.5.2, §10.6.3.1): an incoming RDMA WRITE or READ is executed only
//!   when its R_Key names a region, `[va, va + len)` lies inside it, and the region grants remote
//!   write or remote read; otherwise the engine NAKs remote access error (IBA 1 §9.7.5.2.5).
//! - Local checks: RDMA READ response data lands only in a region whose L_Key is valid, which grants
//!   local write and holds the whole destination range (IBA 1 §10.6.3.1); otherwise the READ
//!   completes with [`crate::hw::verbs::WcStatus::LocProtErr`].
//!
//! The HCA has one protection domain: every QP reaches every region of its HCA.
//!
//! Invariants: no key is 0 or names two live regions; keys come from a counter and are not handed
//! out again before it wraps at 2^32; the registered bytes never exceed the HCA's limit
//! ([`DEFAULT_MR_LIMIT`] unless [`Hca::set_mr_limit`]). A region's bytes are zero when registered:
//! `vec![0; len]` takes zeroed pages from the allocator, so a large region costs memory only where
//! it is written.

use super::{Hca, VerbsError};
use crate::hw::verbs::{Access, MrHandle};
use std::collections::BTreeMap;

/// Bytes an HCA may have registered at once unless [`Hca::set_mr_limit`] says otherwise (2 GiB:
/// room for a 1 GiB benchmark buffer and a second one).
pub const DEFAULT_MR_LIMIT: usize = 2 << 30;

/// Virtual address of the first region the HCA places itself.
const FIRST_ADDR: u64 = 0x7f00_0000_0000;
/// Alignment of regions the HCA places, and the unmapped gap after each.
const PAGE: u64 = 4096;
/// First key handed out.
const FIRST_KEY: u32 = 0x100;

/// Memory an RDMA request or response reaches, lent to a connected-QP engine for one packet: the
/// HCA's registered regions ([`crate::hw::hca::ConnectedEngine::handle_packet`]), or, in the
/// engine's own tests, a list of `crate::hw::rc::MemoryRegion`s.
pub trait RdmaMemory {
    /// For an incoming RDMA WRITE: the `len` bytes at `va` of the region R_Key `rkey` names, when
    /// the key is valid, the range lies inside the region and it grants remote write.
    fn remote_write(&mut self, rkey: u32, va: u64, len: u64) -> Option<&mut [u8]>;
    /// For an incoming RDMA READ: as [`RdmaMemory::remote_write`], with remote read.
    fn remote_read(&self, rkey: u32, va: u64, len: u64) -> Option<&[u8]>;
    /// Where RDMA READ response data lands: the `len` bytes at `addr` of the region L_Key `lkey`
    /// names, when the key is valid, the range lies inside and the region grants local write.
    fn local_write(&mut self, lkey: u32, addr: u64, len: u64) -> Option<&mut [u8]>;
    /// Where a SEND or RDMA WRITE takes its bytes ([`crate::hw::verbs::LocalSge`]): the `len`
    /// bytes at `addr` of the region L_Key `lkey` names, when the key is valid and the range
    /// lies inside (local read is always granted, IBA 1 §10.6.3.1).
    fn local_read(&self, lkey: u32, addr: u64, len: u64) -> Option<&[u8]>;
}

/// One registered region.
#[derive(Debug)]
struct Region {
    handle: MrHandle,
    bytes: Vec<u8>,
}

impl Region {
    /// The bytes `[va, va + len)`, when they lie inside the region.
    fn range(&self, va: u64, len: u64) -> Option<core::ops::Range<usize>> {
        let start = usize::try_from(va.checked_sub(self.handle.addr)?).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        (end <= self.bytes.len()).then_some(start..end)
    }
}

/// The regions of one HCA (module docs).
#[derive(Debug)]
pub(crate) struct MrTable {
    /// By L_Key.
    regions: BTreeMap<u32, Region>,
    /// R_Key -> L_Key.
    rkeys: BTreeMap<u32, u32>,
    next_key: u32,
    next_addr: u64,
    total: usize,
    limit: usize,
}

impl Default for MrTable {
    fn default() -> MrTable {
        MrTable {
            regions: BTreeMap::new(),
            rkeys: BTreeMap::new(),
            next_key: FIRST_KEY,
            next_addr: FIRST_ADDR,
            total: 0,
            limit: DEFAULT_MR_LIMIT,
        }
    }
}

impl MrTable {
    /// A key that names no live region (and is not 0).
    fn alloc_key(&mut self) -> u32 {
        loop {
            let k = self.next_key;
            self.next_key = self.next_key.wrapping_add(1);
            if k != 0 && !self.regions.contains_key(&k) && !self.rkeys.contains_key(&k) {
                return k;
            }
        }
    }

    fn register(
        &mut self,
        addr: Option<u64>,
        len: usize,
        access: Access,
    ) -> Result<MrHandle, VerbsError> {
        if access.contains(Access::REMOTE_WRITE) && !access.contains(Access::LOCAL_WRITE) {
            return Err(VerbsError::InvalidArgument(
                "remote write access needs local write access (IBA 1 §10.6.3.1)",
            ));
        }
        let free = self.limit.saturating_sub(self.total);
        if len > free {
            return Err(VerbsError::MrLimit { len, free });
        }
        let span = u64::try_from(len).map_err(|_| VerbsError::MrLimit { len, free })?;
        let addr = match addr {
            Some(a) => a,
            None => {
                let a = self.next_addr;
                let pages = span.div_ceil(PAGE).saturating_add(1);
                self.next_addr = self.next_addr.saturating_add(pages.saturating_mul(PAGE));
                a
            }
        };
        if addr.checked_add(span).is_none() {
            return Err(VerbsError::InvalidArgument(
                "region would wrap the 64-bit address space",
            ));
        }
        // The counter moves on, so the two keys differ.
        let lkey = self.alloc_key();
        let rkey = self.alloc_key();
        let handle = MrHandle {
            lkey,
            rkey,
            addr,
            len,
            access,
        };
        let bytes = vec![0; len];
        self.regions.insert(lkey, Region { handle, bytes });
        self.rkeys.insert(rkey, lkey);
        self.total += len;
        Ok(handle)
    }

    fn region(&self, lkey: u32) -> Result<&Region, VerbsError> {
        self.regions.get(&lkey).ok_or(VerbsError::UnknownMr(lkey))
    }

    fn by_rkey(&self, rkey: u32, need: Access) -> Option<&Region> {
        let r = self.regions.get(self.rkeys.get(&rkey)?)?;
        r.handle.access.contains(need).then_some(r)
    }

    /// The application's view of its buffer: `len` bytes from `offset` of region `lkey`.
    fn app_range(
        &self,
        lkey: u32,
        offset: usize,
        len: usize,
    ) -> Result<core::ops::Range<usize>, VerbsError> {
        let r = self.region(lkey)?;
        offset
            .checked_add(len)
            .filter(|&end| end <= r.bytes.len())
            .map(|end| offset..end)
            .ok_or(VerbsError::MrRange { lkey, offset, len })
    }
}

impl RdmaMemory for MrTable {
    fn remote_write(&mut self, rkey: u32, va: u64, len: u64) -> Option<&mut [u8]> {
        let lkey = *self.rkeys.get(&rkey)?;
        let r = self.regions.get_mut(&lkey)?;
        if !r.handle.access.contains(Access::REMOTE_WRITE) {
            return None;
        }
        let range = r.range(va, len)?;
        r.bytes.get_mut(range)
    }

    fn remote_read(&self, rkey: u32, va: u64, len: u64) -> Option<&[u8]> {
        let r = self.by_rkey(rkey, Access::REMOTE_READ)?;
        r.bytes.get(r.range(va, len)?)
    }

    fn local_write(&mut self, lkey: u32, addr: u64, len: u64) -> Option<&mut [u8]> {
        let r = self.regions.get_mut(&lkey)?;
        if !r.handle.access.contains(Access::LOCAL_WRITE) {
            return None;
        }
        let range = r.range(addr, len)?;
        r.bytes.get_mut(range)
    }

    fn local_read(&self, lkey: u32, addr: u64, len: u64) -> Option<&[u8]> {
        let r = self.regions.get(&lkey)?;
        r.bytes.get(r.range(addr, len)?)
    }
}

impl Hca {
    /// Registers `len` zeroed bytes with `access` rights at a virtual address the HCA chooses
    /// (IBA 1 §10.6; ibv_reg_mr). Fails with [`VerbsError::MrLimit`] when the HCA's registered
    /// bytes would exceed its limit, and with [`VerbsError::InvalidArgument`] for remote write
    /// without local write (IBA 1 §10.6.3.1).
    pub fn reg_mr(&mut self, len: usize, access: Access) -> Result<MrHandle, VerbsError> {
        self.mrs.register(None, len, access)
    }

    /// As [`Hca::reg_mr`], with byte 0 at virtual address `addr` (regions may overlap in address:
    /// their keys tell them apart).
    pub fn reg_mr_at(
        &mut self,
        addr: u64,
        len: usize,
        access: Access,
    ) -> Result<MrHandle, VerbsError> {
        self.mrs.register(Some(addr), len, access)
    }

    /// Deregisters the region with L_Key `lkey` (ibv_dereg_mr): both its keys stop working at once
    /// and its memory is freed.
    pub fn dereg_mr(&mut self, lkey: u32) -> Result<(), VerbsError> {
        let r = self
            .mrs
            .regions
            .remove(&lkey)
            .ok_or(VerbsError::UnknownMr(lkey))?;
        self.mrs.rkeys.remove(&r.handle.rkey);
        self.mrs.total -= r.handle.len;
        Ok(())
    }

    /// The region with L_Key `lkey`.
    pub fn mr(&self, lkey: u32) -> Option<MrHandle> {
        self.mrs.regions.get(&lkey).map(|r| r.handle)
    }

    /// The application reads its buffer: `len` bytes from `offset` of region `lkey`.
    pub fn mr_read(&self, lkey: u32, offset: usize, len: usize) -> Result<&[u8], VerbsError> {
        let range = self.mrs.app_range(lkey, offset, len)?;
        let r = self.mrs.region(lkey)?;
        r.bytes
            .get(range)
            .ok_or(VerbsError::MrRange { lkey, offset, len })
    }

    /// The application writes `data` into its buffer at `offset` of region `lkey`.
    pub fn mr_write(&mut self, lkey: u32, offset: usize, data: &[u8]) -> Result<(), VerbsError> {
        self.mr_slice_mut(lkey, offset, data.len())?
            .copy_from_slice(data);
        Ok(())
    }

    /// The application's buffer to fill in place: `len` bytes from `offset` of region `lkey`.
    pub fn mr_slice_mut(
        &mut self,
        lkey: u32,
        offset: usize,
        len: usize,
    ) -> Result<&mut [u8], VerbsError> {
        let range = self.mrs.app_range(lkey, offset, len)?;
        let r = self
            .mrs
            .regions
            .get_mut(&lkey)
            .ok_or(VerbsError::UnknownMr(lkey))?;
        r.bytes
            .get_mut(range)
            .ok_or(VerbsError::MrRange { lkey, offset, len })
    }

    /// Sets the most bytes this HCA may have registered at once (registrations already made
    /// stay).
    pub fn set_mr_limit(&mut self, bytes: usize) {
        self.mrs.limit = bytes;
    }

    /// Bytes registered now.
    pub fn mr_registered(&self) -> usize {
        self.mrs.total
    }
}
