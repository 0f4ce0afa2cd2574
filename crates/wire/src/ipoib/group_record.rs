//! The group records of IGMPv3 and MLDv2 membership reports (RFC 3376 §4.2.4, RFC 3810 §5.2.4),
//! one layout for both families, only the address width differs:
//! `Record Type(8) | Aux Data Len(8) | Number of Sources(16) | Multicast Address | Source
//! Address [N] | Auxiliary Data`. The auxiliary data length counts 32-bit words (RFC 3376
//! §4.2.6, RFC 3810 §5.2.6).
//!
//! Records are read with [`GroupRecordRepr::parse`], which borrows the source list and auxiliary
//! data, and a report's records with [`GroupRecords`], validated as a whole: once
//! [`GroupRecords::new_checked`] accepted a report's bytes, iterating never fails and never
//! panics.

use crate::types::{be16, put16};
use crate::{Error, Result};
use core::marker::PhantomData;
use std::net::{Ipv4Addr, Ipv6Addr};

mod field {
    pub const TYPE: usize = 0;
    pub const AUX_LEN: usize = 1;
    pub const NUM_SOURCES: usize = 2;
    pub const GROUP: usize = 4;
}

code_enum! {
    /// The type of a group record: the same values in IGMPv3 (RFC 3376 §4.2.12) and MLDv2
    /// (RFC 3810 §5.2.12). Unknown values are kept (receivers ignore such records: RFC 3376
    /// §4.2.12, RFC 3810 §5.2.12).
    pub enum RecordType(u8) {
        /// 1: current state, filter mode INCLUDE of the sources.
        ModeIsInclude = 1 => "MODE_IS_INCLUDE",
        /// 2: current state, filter mode EXCLUDE of the sources.
        ModeIsExclude = 2 => "MODE_IS_EXCLUDE",
        /// 3: filter mode changed to INCLUDE of the sources (no sources: the host left).
        ChangeToInclude = 3 => "CHANGE_TO_INCLUDE_MODE",
        /// 4: filter mode changed to EXCLUDE of the sources (no sources: an any-source join).
        ChangeToExclude = 4 => "CHANGE_TO_EXCLUDE_MODE",
        /// 5: the sources are now wanted.
        AllowNewSources = 5 => "ALLOW_NEW_SOURCES",
        /// 6: the sources are no longer wanted.
        BlockOldSources = 6 => "BLOCK_OLD_SOURCES",
        /// Any other value.
        Unknown(_) => "Unknown",
    }
}

/// An IP address as a group record carries it: 4 bytes (IGMPv3) or 16 (MLDv2).
pub trait RecordAddr: Copy + core::fmt::Debug + PartialEq + 'static {
    /// Bytes on the wire.
    const LEN: usize;
    /// Reads the address from the first [`RecordAddr::LEN`] bytes (the caller checked the length).
    fn read(b: &[u8]) -> Self;
    /// Writes the address into the first [`RecordAddr::LEN`] bytes (the caller checked the
    /// length).
    fn write(&self, b: &mut [u8]);
}

impl RecordAddr for Ipv4Addr {
    const LEN: usize = 4;
    fn read(b: &[u8]) -> Self {
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }
    fn write(&self, b: &mut [u8]) {
        b[..4].copy_from_slice(&self.octets());
    }
}

impl RecordAddr for Ipv6Addr {
    const LEN: usize = 16;
    fn read(b: &[u8]) -> Self {
        let mut a = [0u8; 16];
        a.copy_from_slice(&b[..16]);
        Ipv6Addr::from(a)
    }
    fn write(&self, b: &mut [u8]) {
        b[..16].copy_from_slice(&self.octets());
    }
}

/// One group record with its source list and auxiliary data borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupRecordRepr<'a, A> {
    /// The record type.
    pub record_type: RecordType,
    /// The multicast address.
    pub group: A,
    /// The source addresses, [`RecordAddr::LEN`] bytes each.
    pub sources: &'a [u8],
    /// The auxiliary data (a whole number of 32-bit words; RFC 3376 §4.2.10: receivers ignore it).
    pub aux: &'a [u8],
}

impl<'a, A: RecordAddr> GroupRecordRepr<'a, A> {
    /// Parses the record at the start of `data` and says how many bytes it took.
    /// `Err(Truncated)` if the sources or the auxiliary data run past `data`.
    pub fn parse(data: &'a [u8]) -> Result<(GroupRecordRepr<'a, A>, usize)> {
        let head = field::GROUP + A::LEN;
        if data.len() < head {
            return Err(Error::Truncated);
        }
        let n = usize::from(be16(data, field::NUM_SOURCES));
        let aux = usize::from(data[field::AUX_LEN]) * 4;
        let src_end = head + n * A::LEN;
        let end = src_end + aux;
        if data.len() < end {
            return Err(Error::Truncated);
        }
        Ok((
            GroupRecordRepr {
                record_type: RecordType::from(data[field::TYPE]),
                group: A::read(&data[field::GROUP..]),
                sources: &data[head..src_end],
                aux: &data[src_end..end],
            },
            end,
        ))
    }

    /// The number of sources.
    pub fn num_sources(&self) -> usize {
        self.sources.len() / A::LEN
    }

    /// The source addresses.
    pub fn source_addrs(&self) -> impl Iterator<Item = A> + 'a {
        self.sources.chunks_exact(A::LEN).map(A::read)
    }

    /// Bytes [`GroupRecordRepr::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        field::GROUP + A::LEN + self.sources.len() + self.aux.len()
    }

    /// Writes the record into the first `buffer_len()` bytes of `buf`. `Err(Truncated)` if `buf`
    /// is shorter; `Err(Malformed)` if the sources are not a whole number of addresses (or more
    /// than 65535), or the auxiliary data not a whole number of 32-bit words (or more than 255).
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let n = self.sources.len() / A::LEN;
        if !self.sources.len().is_multiple_of(A::LEN) || !self.aux.len().is_multiple_of(4) {
            return Err(Error::Malformed);
        }
        let n = u16::try_from(n).map_err(|_| Error::Malformed)?;
        let aux = u8::try_from(self.aux.len() / 4).map_err(|_| Error::Malformed)?;
        let b = buf.get_mut(..self.buffer_len()).ok_or(Error::Truncated)?;
        b[field::TYPE] = self.record_type.into();
        b[field::AUX_LEN] = aux;
        put16(b, field::NUM_SOURCES, n);
        self.group.write(&mut b[field::GROUP..]);
        let head = field::GROUP + A::LEN;
        b[head..head + self.sources.len()].copy_from_slice(self.sources);
        b[head + self.sources.len()..].copy_from_slice(self.aux);
        Ok(())
    }
}

/// The group records of one report: `count` records laid end to end in `data`, all checked to fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupRecords<'a, A> {
    data: &'a [u8],
    count: u16,
    addr: PhantomData<A>,
}

impl<'a, A: RecordAddr> GroupRecords<'a, A> {
    /// `count` records from the start of `data`; `Err(Truncated)` if one runs past `data`. Bytes
    /// after the last record are not part of it.
    pub fn new_checked(data: &'a [u8], count: u16) -> Result<GroupRecords<'a, A>> {
        let mut at = 0;
        for _ in 0..count {
            let (_, len) = GroupRecordRepr::<A>::parse(&data[at..])?;
            at += len;
        }
        Ok(GroupRecords {
            data: &data[..at],
            count,
            addr: PhantomData,
        })
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        usize::from(self.count)
    }

    /// True without records.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The records' bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.data
    }

    /// The records in order.
    pub fn iter(&self) -> impl Iterator<Item = GroupRecordRepr<'a, A>> + 'a {
        let mut rest = self.data;
        (0..self.count).map_while(move |_| {
            let (r, len) = GroupRecordRepr::<A>::parse(rest).ok()?;
            rest = &rest[len..];
            Some(r)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // RFC 3376 §4.2.4: CHANGE_TO_EXCLUDE_MODE, no aux data, one source 10.0.0.9, group
    // 239.1.2.3.
    static V4_RECORD: [u8; 12] = [4, 0, 0, 1, 239, 1, 2, 3, 10, 0, 0, 9];

    /// RFC 3376 §4.2.4: field layout, and emit writes the same bytes.
    #[test]
    fn v4_record() {
        let (r, len) = GroupRecordRepr::<Ipv4Addr>::parse(&V4_RECORD).unwrap();
        assert_eq!(len, 12);
        assert_eq!(r.record_type, RecordType::ChangeToExclude);
        assert_eq!(r.group, Ipv4Addr::new(239, 1, 2, 3));
        assert_eq!(r.num_sources(), 1);
        assert_eq!(
            r.source_addrs().collect::<Vec<_>>(),
            [Ipv4Addr::new(10, 0, 0, 9)]
        );
        let mut b = [0u8; 12];
        r.emit(&mut b).unwrap();
        assert_eq!(b, V4_RECORD);
        assert_eq!(r.emit(&mut [0u8; 11]), Err(Error::Truncated));
        let odd = GroupRecordRepr {
            sources: &[1, 2, 3],
            ..r
        };
        assert_eq!(odd.emit(&mut [0u8; 64]), Err(Error::Malformed));
    }

    /// RFC 3810 §5.2.4: a 16-byte group, one aux word (RFC 3810 §5.2.6: counted in words).
    #[test]
    fn v6_record_with_aux() {
        let mut b = vec![2u8, 1, 0, 0];
        b.extend_from_slice(&"ff12::1234".parse::<Ipv6Addr>().unwrap().octets());
        b.extend_from_slice(&[0xaa, 0xbb, 0xcc, 0xdd]);
        let (r, len) = GroupRecordRepr::<Ipv6Addr>::parse(&b).unwrap();
        assert_eq!(len, 24);
        assert_eq!(r.record_type, RecordType::ModeIsExclude);
        assert_eq!(r.aux, &[0xaa, 0xbb, 0xcc, 0xdd]);
        assert_eq!(r.num_sources(), 0);
        assert_eq!(
            GroupRecordRepr::<Ipv6Addr>::parse(&b[..23]),
            Err(Error::Truncated)
        );
    }

    /// Records are checked as a whole: a count that claims more than the bytes hold is refused.
    #[test]
    fn records() {
        let mut two = V4_RECORD.to_vec();
        two.extend_from_slice(&[3, 0, 0, 0, 239, 1, 2, 4]);
        let rs = GroupRecords::<Ipv4Addr>::new_checked(&two, 2).unwrap();
        assert_eq!(rs.len(), 2);
        let v: Vec<_> = rs.iter().map(|r| (r.record_type, r.group)).collect();
        assert_eq!(
            v,
            [
                (RecordType::ChangeToExclude, Ipv4Addr::new(239, 1, 2, 3)),
                (RecordType::ChangeToInclude, Ipv4Addr::new(239, 1, 2, 4)),
            ]
        );
        assert_eq!(
            GroupRecords::<Ipv4Addr>::new_checked(&two, 3),
            Err(Error::Truncated)
        );
        assert_eq!(RecordType::from(9), RecordType::Unknown(9));
    }

    proptest! {
        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..200), n: u16) {
            if let Ok(rs) = GroupRecords::<Ipv4Addr>::new_checked(&data, n) {
                prop_assert_eq!(rs.iter().count(), rs.len());
            }
            if let Ok(rs) = GroupRecords::<Ipv6Addr>::new_checked(&data, n % 8) {
                for r in rs.iter() {
                    let mut b = vec![0u8; r.buffer_len()];
                    prop_assert!(r.emit(&mut b).is_ok());
                    prop_assert_eq!(GroupRecordRepr::<Ipv6Addr>::parse(&b).unwrap().0, r);
                }
            }
        }
    }
}
