//! Multicast Listener Discovery: the ICMPv6 messages of MLDv1 (RFC 2710 §3) and MLDv2
//! (RFC 3810 §5).
//!
//! MLDv1 messages and every query start with `Type(8) | Code(8) | Checksum(16) | Maximum
//! Response Delay/Code(16) | Reserved(16) | Multicast Address(128)`, 24 bytes; an MLDv2 query adds
//! `Resv/S/QRV(8) | QQIC(8) | Number of Sources(16) | Sources` (RFC 3810 §5.1), and a query's
//! version is told by its length (RFC 3810 §8.1). An MLDv2 report is `Type 143 | Reserved(8) |
//! Checksum(16) | Reserved(16) | Nr of Mcast Address Records(16) | Records` (RFC 3810 §5.2), the
//! records in [`super::group_record`]. The checksum is ICMPv6's, with the IPv6 pseudo-header
//! (RFC 4443 §2.3).

use super::checksum;
use super::group_record::GroupRecords;
use super::icmp::Icmpv6Type;
use crate::types::{be16, put16};
use crate::{Error, Result};
use std::net::Ipv6Addr;

mod field {
    pub const TYPE: usize = 0;
    pub const CHECKSUM: usize = 2;
    pub const MAX_RESP: usize = 4;
    pub const NUM_RECORDS: usize = 6;
    pub const RECORDS: usize = 8;
    pub const GROUP: usize = 8;
    /// Length of an MLDv1 message, and of an MLDv1 query.
    pub const LEN: usize = 24;
    /// Length of an MLDv2 query without sources (RFC 3810 §5.1).
    pub const V2_QUERY_LEN: usize = 28;
}

/// Length of an MLDv1 message (RFC 2710 §3).
pub const MLD_V1_LEN: usize = field::LEN;

fixed_view! {
    /// A read/write view of an MLD message (the ICMPv6 message, from its type byte).
    #[derive(Debug, Clone)]
    pub struct MldPacket;
    /// `Err(Truncated)` below 8 bytes (the fixed part of an MLDv2 report).
    fn check_len(min = field::RECORDS);
}

impl<T: AsRef<[u8]>> MldPacket<T> {
    /// ICMPv6 type.
    pub fn msg_type(&self) -> Icmpv6Type {
        Icmpv6Type::from(self.buffer.as_ref()[field::TYPE])
    }
    /// Checksum as received.
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }
    /// Maximum Response Delay (v1) or Code (v2) of a query.
    pub fn max_resp_code(&self) -> u16 {
        be16(self.buffer.as_ref(), field::MAX_RESP)
    }
    /// Number of address records of an MLDv2 report.
    pub fn num_records(&self) -> u16 {
        be16(self.buffer.as_ref(), field::NUM_RECORDS)
    }
    /// Multicast address of a query or an MLDv1 message; `None` if the buffer is shorter than 24.
    pub fn group_addr(&self) -> Option<Ipv6Addr> {
        let b = self.buffer.as_ref().get(field::GROUP..field::LEN)?;
        let mut a = [0u8; 16];
        a.copy_from_slice(b);
        Some(Ipv6Addr::from(a))
    }
    /// True if the ICMPv6 checksum for `src` → `dst` is correct.
    pub fn verify_checksum(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        checksum::icmpv6(src, dst, self.buffer.as_ref()) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> MldPacket<T> {
    /// Sets the type.
    pub fn set_msg_type(&mut self, t: Icmpv6Type) {
        self.buffer.as_mut()[field::TYPE] = t.into();
    }
    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, v);
    }
    /// Computes and writes the ICMPv6 checksum for `src` → `dst` (RFC 4443 §2.3).
    pub fn fill_checksum(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        self.set_checksum(0);
        let c = checksum::icmpv6(src, dst, self.buffer.as_ref());
        self.set_checksum(c);
    }
}

/// An MLD message, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MldRepr<'a> {
    /// A multicast listener query: general (`::`) or address-specific. `v2` holds the bytes after
    /// the first 24 of an MLDv2 query (RFC 3810 §8.1: a query of 28 bytes or more).
    Query {
        /// Maximum Response Delay (v1, ms) or Code (v2).
        max_resp_code: u16,
        /// The address, `::` for a general query.
        group: Ipv6Addr,
        /// The MLDv2 fields (S, QRV, QQIC, sources); empty for an MLDv1 query.
        v2: &'a [u8],
    },
    /// An MLDv1 report (type 131, RFC 2710 §3): the node listens to `group`.
    Report {
        /// The address.
        group: Ipv6Addr,
    },
    /// An MLDv1 done (type 132, RFC 2710 §3): the node stopped listening to `group`.
    Done {
        /// The address.
        group: Ipv6Addr,
    },
    /// An MLDv2 report (type 143, RFC 3810 §5.2).
    V2Report {
        /// The multicast address records.
        records: GroupRecords<'a, Ipv6Addr>,
    },
}

impl<'a> MldRepr<'a> {
    /// True for the ICMPv6 types of MLD (130, 131, 132, 143).
    pub fn is_mld(t: Icmpv6Type) -> bool {
        matches!(
            t,
            Icmpv6Type::MldQuery
                | Icmpv6Type::MldReport
                | Icmpv6Type::MldDone
                | Icmpv6Type::MldV2Report
        )
    }

    /// Parses an ICMPv6 message sent from `src` to `dst` as MLD. `Err(Truncated)` if shorter than
    /// its type needs, `Err(Checksum)` if the checksum is wrong, `Err(Malformed)` for a query of 25
    /// to 27 bytes (RFC 3810 §8.1: not a valid query), `Err(Unsupported)` for another ICMPv6 type.
    /// Bytes past an MLDv1 message's 24 are ignored (RFC 2710 §3.7: MUST ignore anything past
    /// the first 24 octets).
    pub fn parse(src: Ipv6Addr, dst: Ipv6Addr, data: &'a [u8]) -> Result<MldRepr<'a>> {
        let p = MldPacket::new_checked(data)?;
        let t = p.msg_type();
        if !Self::is_mld(t) {
            return Err(Error::Unsupported);
        }
        if t != Icmpv6Type::MldV2Report && data.len() < field::LEN {
            return Err(Error::Truncated);
        }
        if !p.verify_checksum(src, dst) {
            return Err(Error::Checksum);
        }
        if t == Icmpv6Type::MldV2Report {
            return Ok(MldRepr::V2Report {
                records: GroupRecords::new_checked(&data[field::RECORDS..], p.num_records())?,
            });
        }
        let group = p.group_addr().ok_or(Error::Truncated)?;
        Ok(match t {
            Icmpv6Type::MldQuery => {
                if data.len() > field::LEN && data.len() < field::V2_QUERY_LEN {
                    return Err(Error::Malformed);
                }
                MldRepr::Query {
                    max_resp_code: p.max_resp_code(),
                    group,
                    v2: &data[field::LEN..],
                }
            }
            Icmpv6Type::MldReport => MldRepr::Report { group },
            _ => MldRepr::Done { group },
        })
    }

    /// Bytes [`MldRepr::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        match self {
            MldRepr::Query { v2, .. } => field::LEN + v2.len(),
            MldRepr::V2Report { records } => field::RECORDS + records.as_bytes().len(),
            _ => field::LEN,
        }
    }

    /// Writes the message and its checksum for `src` → `dst` into the first `buffer_len()` bytes
    /// of `buf`; `Err(Truncated)` if `buf` is shorter.
    pub fn emit(&self, src: Ipv6Addr, dst: Ipv6Addr, buf: &mut [u8]) -> Result<()> {
        let b = buf.get_mut(..self.buffer_len()).ok_or(Error::Truncated)?;
        b.fill(0);
        let (t, group) = match *self {
            MldRepr::Query {
                max_resp_code,
                group,
                v2,
            } => {
                put16(b, field::MAX_RESP, max_resp_code);
                b[field::LEN..].copy_from_slice(v2);
                (Icmpv6Type::MldQuery, Some(group))
            }
            MldRepr::Report { group } => (Icmpv6Type::MldReport, Some(group)),
            MldRepr::Done { group } => (Icmpv6Type::MldDone, Some(group)),
            MldRepr::V2Report { records } => {
                put16(b, field::NUM_RECORDS, records.len() as u16);
                b[field::RECORDS..].copy_from_slice(records.as_bytes());
                (Icmpv6Type::MldV2Report, None)
            }
        };
        if let Some(g) = group {
            b[field::GROUP..field::LEN].copy_from_slice(&g.octets());
        }
        let mut p = MldPacket::new_unchecked(b);
        p.set_msg_type(t);
        p.fill_checksum(src, dst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::group_record::RecordType;
    use super::*;
    use proptest::prelude::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    // RFC 3810 §5.2: an MLDv2 report from fe80::1 to ff02::16 with one record,
    // CHANGE_TO_EXCLUDE_MODE of no sources for ff12::1234 (Linux's any-source join).
    // Checksum by hand, 16-bit words: pseudo-header fe80 + 0001 (source) + ff02 + 0016
    // (destination) + 001c (length 28) + 003a (next header 58) = 0x1fdef; message 8f00 + 0001
    // (one record) + 0400 (type 4, aux 0) + 0000 (no sources) + ff12 + 1234 = 0x1a447.
    // Total 0x3a236, folded 0xa239, complemented 0x5dc6.
    static V2_JOIN: [u8; 28] = [
        0x8f, 0, 0x5d, 0xc6, 0, 0, 0, 1, // header, one record
        4, 0, 0, 0, // CHANGE_TO_EXCLUDE, no aux, no sources
        0xff, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34, // ff12::1234
    ];

    /// RFC 3810 §5.2: field layout, checksum, parse and emit of a v2 report.
    #[test]
    fn v2_report() {
        let (s, d) = (a("fe80::1"), a("ff02::16"));
        let p = MldPacket::new_checked(&V2_JOIN[..]).unwrap();
        assert_eq!(p.msg_type(), Icmpv6Type::MldV2Report);
        assert_eq!(p.checksum(), 0x5dc6);
        assert_eq!(p.num_records(), 1);
        assert!(p.verify_checksum(s, d));
        let r = MldRepr::parse(s, d, &V2_JOIN).unwrap();
        let MldRepr::V2Report { records } = r else {
            panic!("{r:?}")
        };
        let v: Vec<_> = records.iter().collect();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].record_type, RecordType::ChangeToExclude);
        assert_eq!(v[0].group, a("ff12::1234"));
        let mut out = [0u8; 28];
        r.emit(s, d, &mut out).unwrap();
        assert_eq!(out, V2_JOIN);
        // The pseudo-header is covered: another destination does not verify.
        assert_eq!(
            MldRepr::parse(s, a("ff02::1"), &V2_JOIN),
            Err(Error::Checksum)
        );
    }

    /// RFC 2710 §3: MLDv1 report and done, 24 bytes, the address at byte 8.
    #[test]
    fn v1_messages() {
        let (s, d) = (a("fe80::1"), a("ff12::1234"));
        for r in [MldRepr::Report { group: d }, MldRepr::Done { group: d }] {
            let mut b = [0u8; 24];
            r.emit(s, d, &mut b).unwrap();
            assert_eq!(&b[8..24], &d.octets());
            assert_eq!(MldRepr::parse(s, d, &b), Ok(r));
            assert_eq!(MldRepr::parse(s, d, &b[..20]), Err(Error::Truncated));
        }
    }

    /// RFC 3810 §8.1: queries told by length; other ICMPv6 types are not MLD.
    #[test]
    fn queries_and_others() {
        let (s, d) = (a("fe80::1"), a("ff02::1"));
        let q = MldRepr::Query {
            max_resp_code: 10_000,
            group: Ipv6Addr::UNSPECIFIED,
            v2: &[0x02, 125, 0, 0],
        };
        let mut b = [0u8; 28];
        q.emit(s, d, &mut b).unwrap();
        assert_eq!(MldRepr::parse(s, d, &b), Ok(q));
        let mut odd = b[..26].to_vec();
        MldPacket::new_unchecked(&mut odd[..]).fill_checksum(s, d);
        assert_eq!(MldRepr::parse(s, d, &odd), Err(Error::Malformed));
        let mut echo = [128u8, 0, 0, 0, 0, 0, 0, 0];
        MldPacket::new_unchecked(&mut echo[..]).fill_checksum(s, d);
        assert_eq!(MldRepr::parse(s, d, &echo), Err(Error::Unsupported));
    }

    /// RFC 2710 §3.7: anything past the first 24 octets of an MLDv1 message is ignored.
    #[test]
    fn longer_v1_message_uses_its_first_24_bytes() {
        let (s, d) = (a("fe80::1"), a("ff12::1234"));
        let mut b = vec![0u8; 28];
        MldRepr::Report { group: d }.emit(s, d, &mut b).unwrap();
        b[24..].copy_from_slice(&[1, 2, 3, 4]);
        MldPacket::new_unchecked(&mut b[..]).fill_checksum(s, d);
        assert_eq!(MldRepr::parse(s, d, &b), Ok(MldRepr::Report { group: d }));
    }

    proptest! {
        #[test]
        fn parse_never_panics(mut data in proptest::collection::vec(any::<u8>(), 0..200), t in 0usize..4) {
            let (s, d) = (a("fe80::1"), a("ff02::16"));
            if data.len() >= 8 {
                data[0] = [130, 131, 132, 143][t];
                MldPacket::new_unchecked(&mut data[..]).fill_checksum(s, d);
            }
            if let Ok(r) = MldRepr::parse(s, d, &data) {
                let mut b = vec![0u8; r.buffer_len()];
                prop_assert!(r.emit(s, d, &mut b).is_ok());
                prop_assert_eq!(MldRepr::parse(s, d, &b), Ok(r));
            }
        }
    }
}
