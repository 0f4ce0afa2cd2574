//! Memory registration on one HCA (IBA 1 §10.6, module `mr`): keys, addresses, the limit, the
//! application's reads and writes, and the checks RDMA requests pass through ([`RdmaMemory`]).

use super::*;
use crate::hw::verbs::Access;
use std::collections::BTreeSet;

const RW: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_WRITE)
    .union(Access::REMOTE_READ);

fn hca() -> Hca {
    Hca::new(Guid(GUID_A), 1)
}

/// IBA 1 §10.6: every region gets an L_Key and a different R_Key, neither 0 and neither naming
/// another live region; a deregistered region's keys are not handed out again.
#[test]
fn keys_are_unique_and_not_reused() {
    let mut h = hca();
    let mut seen = BTreeSet::new();
    let mut live = Vec::new();
    for i in 0..200usize {
        let m = h.reg_mr(16 + i, RW).unwrap();
        assert_ne!(m.lkey, m.rkey);
        assert!(m.lkey != 0 && m.rkey != 0);
        assert!(seen.insert(m.lkey) && seen.insert(m.rkey), "fresh keys");
        live.push(m);
        if i % 3 == 0 {
            let gone = live.remove(live.len() / 2);
            h.dereg_mr(gone.lkey).unwrap();
            assert_eq!(h.mr(gone.lkey), None);
        }
    }
    for m in &live {
        assert_eq!(h.mr(m.lkey), Some(*m));
    }
    assert_eq!(h.mr_registered(), live.iter().map(|m| m.len).sum::<usize>());
}

/// Regions the HCA places are page aligned and apart (an access running off one never reaches
/// the next); a chosen address is taken as given.
#[test]
fn addresses_are_aligned_and_apart() {
    let mut h = hca();
    let a = h.reg_mr(5000, RW).unwrap();
    let b = h.reg_mr(1, RW).unwrap();
    let c = h.reg_mr(0, RW).unwrap();
    assert_eq!(a.addr % 4096, 0);
    assert!(b.addr >= a.addr + 8192 + 4096, "a gap after a");
    assert!(c.addr > b.addr + 4096);
    let d = h.reg_mr_at(0x1234, 10, Access::NONE).unwrap();
    assert_eq!((d.addr, d.len, d.access), (0x1234, 10, Access::NONE));
    assert!(matches!(
        h.reg_mr_at(u64::MAX - 5, 10, RW),
        Err(VerbsError::InvalidArgument(_))
    ));
}

/// IBA 1 §10.6.3.1: remote write without local write is refused (and changes nothing).
#[test]
fn remote_write_needs_local_write() {
    let mut h = hca();
    let r = h.reg_mr(8, Access::REMOTE_WRITE | Access::REMOTE_READ);
    assert!(matches!(r, Err(VerbsError::InvalidArgument(_))));
    assert_eq!(h.mr_registered(), 0);
    assert!(h.reg_mr(8, Access::REMOTE_READ).is_ok());
}

/// The HCA's registered bytes are bounded: a registration past the limit fails with MrLimit and
/// the bytes come back with dereg_mr. 1 GiB fits the default limit (the allocator hands out zeroed
/// pages lazily, so only the page written here becomes resident).
#[test]
fn registered_memory_is_bounded() {
    let mut h = hca();
    h.set_mr_limit(1 << 20);
    let a = h.reg_mr(600 << 10, RW).unwrap();
    assert_eq!(
        h.reg_mr(600 << 10, RW),
        Err(VerbsError::MrLimit {
            len: 600 << 10,
            free: 424 << 10
        })
    );
    h.dereg_mr(a.lkey).unwrap();
    assert!(h.reg_mr(600 << 10, RW).is_ok());
    assert_eq!(h.dereg_mr(a.lkey), Err(VerbsError::UnknownMr(a.lkey)));

    let mut h = hca();
    let gib = h.reg_mr(1 << 30, RW).unwrap();
    h.mr_write(gib.lkey, (1 << 30) - 4, &[1, 2, 3, 4]).unwrap();
    assert_eq!(
        h.mr_read(gib.lkey, (1 << 30) - 5, 5).unwrap(),
        &[0, 1, 2, 3, 4]
    );
    assert!(matches!(
        h.reg_mr(DEFAULT_MR_LIMIT, RW),
        Err(VerbsError::MrLimit { .. })
    ));
}

/// The application's reads and writes stay inside the region and need no access right.
#[test]
fn application_reads_and_writes() {
    let mut h = hca();
    let m = h.reg_mr(100, Access::NONE).unwrap();
    h.mr_write(m.lkey, 98, &[7, 8]).unwrap();
    h.mr_slice_mut(m.lkey, 0, 2)
        .unwrap()
        .copy_from_slice(&[5, 6]);
    let r = h.mr_read(m.lkey, 0, 100).unwrap();
    assert_eq!(
        (&r[..2], &r[2..98], &r[98..]),
        (&[5, 6][..], &[0; 96][..], &[7, 8][..])
    );
    let out = VerbsError::MrRange {
        lkey: m.lkey,
        offset: 99,
        len: 2,
    };
    assert_eq!(h.mr_write(m.lkey, 99, &[1, 1]), Err(out));
    assert_eq!(h.mr_read(m.lkey, 99, 2).err(), Some(out));
    assert!(h.mr_read(m.lkey, usize::MAX, 2).is_err());
    assert_eq!(
        h.mr_read(m.rkey, 0, 1).err(),
        Some(VerbsError::UnknownMr(m.rkey))
    );
    h.dereg_mr(m.lkey).unwrap();
    assert_eq!(
        h.mr_read(m.lkey, 0, 1).err(),
        Some(VerbsError::UnknownMr(m.lkey))
    );
}

/// IBA 1 §9.7.5.2.5, §10.6.3.1: what an RDMA request reaches. Remote accesses need the R_Key (not
/// the L_Key), the range inside the region and the right; the destination of READ data needs the
/// L_Key (not the R_Key), the range and local write.
#[test]
fn rdma_checks() {
    let mut h = hca();
    let rw = h.reg_mr(100, RW).unwrap();
    let ro = h.reg_mr(100, Access::REMOTE_READ).unwrap();
    let m = &mut h.mrs;
    assert_eq!(
        m.remote_write(rw.rkey, rw.addr + 10, 90).map(|b| b.len()),
        Some(90)
    );
    assert!(
        m.remote_write(rw.rkey, rw.addr + 10, 91).is_none(),
        "past the end"
    );
    assert!(
        m.remote_write(rw.rkey, rw.addr - 1, 1).is_none(),
        "before the start"
    );
    assert!(
        m.remote_write(rw.lkey, rw.addr, 1).is_none(),
        "L_Key is no R_Key"
    );
    assert!(
        m.remote_write(ro.rkey, ro.addr, 1).is_none(),
        "no remote write"
    );
    assert!(m.remote_write(rw.rkey, u64::MAX, 2).is_none());
    assert!(m.remote_read(ro.rkey, ro.addr, 100).is_some());
    assert!(
        m.remote_read(ro.rkey, ro.addr + 100, 0).is_some(),
        "empty, at the end"
    );
    assert!(m.remote_read(ro.rkey, ro.addr + 101, 0).is_none());
    assert!(m.local_write(rw.lkey, rw.addr, 100).is_some());
    assert!(
        m.local_write(rw.rkey, rw.addr, 1).is_none(),
        "R_Key is no L_Key"
    );
    assert!(
        m.local_write(ro.lkey, ro.addr, 1).is_none(),
        "no local write"
    );
    m.remote_write(rw.rkey, rw.addr + 1, 2)
        .unwrap()
        .copy_from_slice(&[9, 9]);
    assert_eq!(h.mr_read(rw.lkey, 0, 4).unwrap(), &[0, 9, 9, 0]);
    h.dereg_mr(rw.lkey).unwrap();
    assert!(
        h.mrs.remote_read(rw.rkey, rw.addr, 1).is_none(),
        "deregistered"
    );
}
