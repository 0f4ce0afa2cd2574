//! A queued SMP, kept in fewer bytes than its 256 where it can be.
//!
//! The bring-up's Configure wave queues every SubnSet at once (84,366 at 10,000 hosts), and the
//! transport kept each as its whole MAD: 41 MiB of queue at that size, the largest single
//! allocation of the run (docs/benchmarks/subnet-rounds.md, "What a host holds"). A SMP as
//! [`super::directed`] makes it is mostly zeros: the 28 reserved bytes after DrSLID and DrDLID
//! (IBA 1 §14.2.1.2), the InitialPath past its few hops and the whole ReturnPath, which the
//! directed-route hops fill on the way (IBA 1 §14.2.2). A MAD whose bytes there are zero is kept
//! as the rest; any other is kept whole. Either way [`QueuedMad::bytes`] gives back the very
//! bytes given.

use ipoib_wire::mad::MAD_HEADER_LEN;
use ipoib_wire::smp::{SmpMadRepr, SmpRoute, SMP_PATH_LEN};

/// Bytes kept from the start: the common MAD header (24), M_Key (8), DrSLID and DrDLID (4).
const HEAD: usize = 36;
/// Where the SMP data starts (IBA 1 §14.2.1.2) and how long it is.
const DATA: usize = 64;
const DATA_LEN: usize = 64;
/// Where the InitialPath starts, and how much of it is kept.
const PATH: usize = 128;
const PATH_KEPT: usize = 8;

/// A queued SMP's 256 bytes. See the module docs.
#[derive(Debug, Clone)]
pub(super) enum QueuedMad {
    /// The bytes that may be other than zero: head, data and the InitialPath's first bytes.
    Short {
        head: [u8; HEAD],
        data: [u8; DATA_LEN],
        path: [u8; PATH_KEPT],
    },
    /// Any other MAD, whole.
    Full(Box<[u8; 256]>),
}

impl QueuedMad {
    pub(super) fn new(mad: &[u8; 256]) -> QueuedMad {
        // Compared with zero arrays, not byte by byte: two `bcmp` calls, not 150 rounds of a
        // loop with an early exit (17 M instructions at 2,000 hosts).
        const ZERO: [u8; 256 - PATH - PATH_KEPT] = [0; 256 - PATH - PATH_KEPT];
        if mad[HEAD..DATA] != ZERO[..DATA - HEAD] || mad[PATH + PATH_KEPT..] != ZERO {
            return QueuedMad::Full(Box::new(*mad));
        }
        let mut head = [0; HEAD];
        let mut data = [0; DATA_LEN];
        let mut path = [0; PATH_KEPT];
        head.copy_from_slice(&mad[..HEAD]);
        data.copy_from_slice(&mad[DATA..DATA + DATA_LEN]);
        path.copy_from_slice(&mad[PATH..PATH + PATH_KEPT]);
        QueuedMad::Short { head, data, path }
    }

    /// The SMP `smp` as [`QueuedMad::new`] keeps its bytes (`smp.to_bytes()`), its parts written
    /// where they are kept: a directed-route SMP whose paths are zero past the kept bytes (all
    /// that [`super::directed`] makes with up to 7 hops) without the whole MAD's 256 bytes
    /// zeroed, written and compared with zeros first; any other through its bytes.
    pub(super) fn from_repr(smp: &SmpMadRepr) -> QueuedMad {
        const ZERO: [u8; SMP_PATH_LEN] = [0; SMP_PATH_LEN];
        let SmpRoute::Directed(r) = &smp.route else {
            return QueuedMad::new(&smp.to_bytes());
        };
        if r.initial_path[PATH_KEPT..] != ZERO[PATH_KEPT..] || r.return_path != ZERO {
            return QueuedMad::new(&smp.to_bytes());
        }
        // IBA 1 §14.2.1.2: the common MAD header, M_Key, DrSLID, DrDLID, big-endian.
        let mut head = [0; HEAD];
        smp.header.emit(&mut head[..MAD_HEADER_LEN]);
        head[MAD_HEADER_LEN..MAD_HEADER_LEN + 8].copy_from_slice(&smp.mkey.to_be_bytes());
        head[MAD_HEADER_LEN + 8..MAD_HEADER_LEN + 10].copy_from_slice(&r.dr_slid.to_be_bytes());
        head[MAD_HEADER_LEN + 10..HEAD].copy_from_slice(&r.dr_dlid.to_be_bytes());
        let mut data = [0; DATA_LEN];
        smp.attribute.emit(&mut data);
        let mut path = [0; PATH_KEPT];
        path.copy_from_slice(&r.initial_path[..PATH_KEPT]);
        QueuedMad::Short { head, data, path }
    }

    /// The MAD as given to [`QueuedMad::new`].
    pub(super) fn bytes(&self) -> [u8; 256] {
        match self {
            QueuedMad::Short { head, data, path } => {
                let mut mad = [0; 256];
                mad[..HEAD].copy_from_slice(head);
                mad[DATA..DATA + DATA_LEN].copy_from_slice(data);
                mad[PATH..PATH + PATH_KEPT].copy_from_slice(path);
                mad
            }
            QueuedMad::Full(mad) => **mad,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_directed_set_is_kept_short() {
        let smp = super::super::dr_get(0x0015, 3, &[1, 4, 2]);
        let mad = smp.to_bytes();
        let q = QueuedMad::new(&mad);
        assert!(matches!(q, QueuedMad::Short { .. }));
        assert_eq!(q.bytes(), mad);
        // 108 bytes kept of the 256.
        assert!(std::mem::size_of::<QueuedMad>() <= 112);
    }

    proptest! {
        /// A directed SMP queued from its parts is the SMP's bytes: Gets and Sets of any
        /// attribute data, modifier, TID, M_Key, DR LIDs and path of 0 to 63 hops, and stale
        /// return paths (kept whole then).
        #[test]
        fn a_directed_smp_from_its_parts_is_its_bytes(
            set in any::<bool>(),
            id in any::<u16>(),
            modifier in any::<u32>(),
            tid in any::<u64>(),
            mkey in any::<u64>(),
            lids in any::<(u16, u16)>(),
            path in prop::collection::vec(any::<u8>(), 0..64),
            data in prop::collection::vec(any::<u8>(), 64),
            back in prop::collection::vec((0usize..64, any::<u8>()), 0..2),
        ) {
            let mut raw = [0u8; 64];
            raw.copy_from_slice(&data);
            let attribute = ipoib_wire::smp::SmpAttribute::Raw(raw);
            let mut smp = if set {
                super::super::directed(ipoib_wire::mad::Method::Set, id, modifier, &path, Some(attribute))
            } else {
                super::super::dr_get(id, modifier, &path)
            };
            smp.header.transaction_id = tid;
            smp.mkey = mkey;
            if let SmpRoute::Directed(r) = &mut smp.route {
                (r.dr_slid, r.dr_dlid) = lids;
                for (i, b) in back {
                    r.return_path[i] = b;
                }
            }
            let want = smp.to_bytes();
            prop_assert_eq!(QueuedMad::from_repr(&smp).bytes(), want);
        }

        /// Any 256 bytes come back as given, short or whole: a few bytes set anywhere, so that
        /// both forms are met.
        #[test]
        fn any_mad_comes_back_as_given(set in prop::collection::vec((0usize..256, any::<u8>()), 0..6)) {
            let mut mad = [0u8; 256];
            for (i, b) in set {
                mad[i] = b;
            }
            prop_assert_eq!(QueuedMad::new(&mad).bytes(), mad);
        }
    }
}
