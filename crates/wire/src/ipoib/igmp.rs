//! IGMP messages (the payload of IP protocol 2): version 1 (RFC 1112 appendix I), version 2
//! (RFC 2236 §2) and version 3 (RFC 3376 §4).
//!
//! Versions 1 and 2 and every query start with the same 8 bytes: `Type(8) | Max Resp(8) |
//! Checksum(16) | Group Address(32)`; a version 3 query adds `Resv/S/QRV(8) | QQIC(8) |
//! Number of Sources(16) | Sources` (RFC 3376 §4.1), and the query's version is told by its
//! length (RFC 3376 §7.1). A version 3 report is `Type 0x22 | Reserved(8) | Checksum(16) |
//! Reserved(16) | Number of Group Records(16) | Group Records` (RFC 3376 §4.2), the records in
//! [`super::group_record`]. The checksum covers the whole IGMP message (RFC 2236 §2.3, RFC 3376
//! §4.1.2).

use super::checksum;
use super::group_record::GroupRecords;
use crate::types::{be16, put16};
use crate::{Error, Result};
use std::net::Ipv4Addr;

mod field {
    pub const TYPE: usize = 0;
    pub const MAX_RESP: usize = 1;
    pub const CHECKSUM: usize = 2;
    pub const GROUP: usize = 4;
    pub const NUM_RECORDS: usize = 6;
    pub const RECORDS: usize = 8;
    /// Length of a version 1/2 message and of the common part of every message.
    pub const LEN: usize = 8;
    /// Length of a version 3 query without sources (RFC 3376 §4.1).
    pub const V3_QUERY_LEN: usize = 12;
}

/// Length of an IGMPv1/v2 message and of the fixed part of every IGMP message.
pub const IGMP_HEADER_LEN: usize = field::LEN;

code_enum! {
    /// IGMP message type (RFC 2236 §2.1, RFC 3376 §4). Unknown values are kept.
    pub enum IgmpType(u8) {
        /// 0x11: membership query (every version).
        MembershipQuery = 0x11 => "membership query",
        /// 0x12: version 1 membership report (RFC 1112).
        V1Report = 0x12 => "v1 membership report",
        /// 0x16: version 2 membership report (RFC 2236).
        V2Report = 0x16 => "v2 membership report",
        /// 0x17: leave group (RFC 2236).
        LeaveGroup = 0x17 => "leave group",
        /// 0x22: version 3 membership report (RFC 3376).
        V3Report = 0x22 => "v3 membership report",
        /// Any other value.
        Unknown(_) => "Unknown",
    }
}

fixed_view! {
    /// A read/write view of an IGMP message.
    #[derive(Debug, Clone)]
    pub struct IgmpPacket;
    /// `Err(Truncated)` below 8 bytes.
    fn check_len(min = field::LEN);
}

impl<T: AsRef<[u8]>> IgmpPacket<T> {
    /// Message type.
    pub fn msg_type(&self) -> IgmpType {
        IgmpType::from(self.buffer.as_ref()[field::TYPE])
    }
    /// Max Resp Time (v2) or Code (v3) of a query; zero in v1 messages; reserved in reports.
    pub fn max_resp_code(&self) -> u8 {
        self.buffer.as_ref()[field::MAX_RESP]
    }
    /// Checksum as received.
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }
    /// Group address of a query, a v1/v2 report or a leave.
    pub fn group_addr(&self) -> Ipv4Addr {
        let b = self.buffer.as_ref();
        Ipv4Addr::new(b[4], b[5], b[6], b[7])
    }
    /// Number of group records of a v3 report.
    pub fn num_group_records(&self) -> u16 {
        be16(self.buffer.as_ref(), field::NUM_RECORDS)
    }
    /// The bytes after the first 8: a v3 report's records, a v3 query's fields.
    pub fn rest(&self) -> &[u8] {
        &self.buffer.as_ref()[field::RECORDS..]
    }
    /// True if the checksum over the whole buffer is correct.
    pub fn verify_checksum(&self) -> bool {
        checksum::internet(self.buffer.as_ref()) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IgmpPacket<T> {
    /// Sets the type.
    pub fn set_msg_type(&mut self, t: IgmpType) {
        self.buffer.as_mut()[field::TYPE] = t.into();
    }
    /// Sets Max Resp Time / Code.
    pub fn set_max_resp_code(&mut self, v: u8) {
        self.buffer.as_mut()[field::MAX_RESP] = v;
    }
    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, v);
    }
    /// Sets the group address.
    pub fn set_group_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::GROUP..field::GROUP + 4].copy_from_slice(&a.octets());
    }
    /// Sets the number of group records (v3 report; writes over the group address's low half).
    pub fn set_num_group_records(&mut self, n: u16) {
        put16(self.buffer.as_mut(), field::NUM_RECORDS, n);
    }
    /// The bytes after the first 8, writable.
    pub fn rest_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::RECORDS..]
    }
    /// Computes and writes the checksum over the whole buffer.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::internet(self.buffer.as_ref());
        self.set_checksum(c);
    }
}

/// An IGMP message, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IgmpRepr<'a> {
    /// A membership query: general (group 0.0.0.0) or group-specific. `v3` holds the bytes after
    /// the first 8 of a version 3 query (RFC 3376 §7.1: a query of 12 bytes or more).
    Query {
        /// Max Resp Time (v2, tenths of a second) or Max Resp Code (v3); zero from v1 routers.
        max_resp_code: u8,
        /// The group, 0.0.0.0 for a general query.
        group: Ipv4Addr,
        /// The v3 fields (S, QRV, QQIC, sources), empty for a v1 or v2 query.
        v3: &'a [u8],
    },
    /// A version 1 membership report (RFC 1112): the host is a member of `group`.
    V1Report {
        /// The group.
        group: Ipv4Addr,
    },
    /// A version 2 membership report (RFC 2236 §2): the host is a member of `group`.
    V2Report {
        /// The group.
        group: Ipv4Addr,
    },
    /// A leave group message (RFC 2236 §3): the host left `group`.
    Leave {
        /// The group.
        group: Ipv4Addr,
    },
    /// A version 3 membership report (RFC 3376 §4.2).
    V3Report {
        /// The group records.
        records: GroupRecords<'a, Ipv4Addr>,
    },
}

impl<'a> IgmpRepr<'a> {
    /// Parses a whole IGMP message (the IPv4 payload). `Err(Truncated)` if shorter than its
    /// type needs, `Err(Checksum)` if the checksum is wrong, `Err(Malformed)` for a query of 9 to
    /// 11 bytes (RFC 3376 §7.1: not a valid query), `Err(Unsupported)` for an unknown type.
    /// Bytes past a v1/v2 message's 8 are ignored (RFC 2236 §2.5).
    pub fn parse(data: &'a [u8]) -> Result<IgmpRepr<'a>> {
        let p = IgmpPacket::new_checked(data)?;
        if !p.verify_checksum() {
            return Err(Error::Checksum);
        }
        let group = p.group_addr();
        Ok(match p.msg_type() {
            IgmpType::MembershipQuery => {
                if data.len() > field::LEN && data.len() < field::V3_QUERY_LEN {
                    return Err(Error::Malformed);
                }
                IgmpRepr::Query {
                    max_resp_code: p.max_resp_code(),
                    group,
                    v3: &data[field::LEN..],
                }
            }
            IgmpType::V1Report => IgmpRepr::V1Report { group },
            IgmpType::V2Report => IgmpRepr::V2Report { group },
            IgmpType::LeaveGroup => IgmpRepr::Leave { group },
            IgmpType::V3Report => IgmpRepr::V3Report {
                records: GroupRecords::new_checked(&data[field::RECORDS..], p.num_group_records())?,
            },
            IgmpType::Unknown(_) => return Err(Error::Unsupported),
        })
    }

    /// Bytes [`IgmpRepr::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        match self {
            IgmpRepr::Query { v3, .. } => field::LEN + v3.len(),
            IgmpRepr::V3Report { records } => field::RECORDS + records.as_bytes().len(),
            _ => field::LEN,
        }
    }

    /// Writes the message and its checksum into the first `buffer_len()` bytes of `buf`;
    /// `Err(Truncated)` if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let b = buf.get_mut(..self.buffer_len()).ok_or(Error::Truncated)?;
        b.fill(0);
        let mut p = IgmpPacket::new_unchecked(b);
        match *self {
            IgmpRepr::Query {
                max_resp_code,
                group,
                v3,
            } => {
                p.set_msg_type(IgmpType::MembershipQuery);
                p.set_max_resp_code(max_resp_code);
                p.set_group_addr(group);
                p.rest_mut().copy_from_slice(v3);
            }
            IgmpRepr::V1Report { group } => {
                p.set_msg_type(IgmpType::V1Report);
                p.set_group_addr(group);
            }
            IgmpRepr::V2Report { group } => {
                p.set_msg_type(IgmpType::V2Report);
                p.set_group_addr(group);
            }
            IgmpRepr::Leave { group } => {
                p.set_msg_type(IgmpType::LeaveGroup);
                p.set_group_addr(group);
            }
            IgmpRepr::V3Report { records } => {
                p.set_msg_type(IgmpType::V3Report);
                p.set_num_group_records(records.len() as u16);
                p.rest_mut().copy_from_slice(records.as_bytes());
            }
        }
        p.fill_checksum();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::group_record::RecordType;
    use super::*;
    use proptest::prelude::*;

    // RFC 2236 §2: v2 report for 239.1.2.3. Checksum by hand: 0x1600 + 0xef01 + 0x0203 =
    // 0x10704, folded 0x0705, complemented 0xf8fa.
    static V2_REPORT: [u8; 8] = [0x16, 0, 0xf8, 0xfa, 239, 1, 2, 3];

    // RFC 3376 §4.2: a v3 report with one record, CHANGE_TO_EXCLUDE_MODE of no sources for
    // 239.1.2.3 (Linux's any-source join). Checksum by hand: 0x2200 + 0x0001 + 0x0400 + 0x0000 +
    // 0xef01 + 0x0203 = 0x11705, folded 0x1706, complemented 0xe8f9.
    static V3_JOIN: [u8; 16] = [
        0x22, 0, 0xe8, 0xf9, 0, 0, 0, 1, // header, one record
        4, 0, 0, 0, 239, 1, 2, 3, // CHANGE_TO_EXCLUDE {} 239.1.2.3
    ];

    /// RFC 2236 §2: field layout of a v2 report.
    #[test]
    fn deconstruct_v2() {
        let p = IgmpPacket::new_checked(&V2_REPORT[..]).unwrap();
        assert_eq!(p.msg_type(), IgmpType::V2Report);
        assert_eq!(p.max_resp_code(), 0);
        assert_eq!(p.checksum(), 0xf8fa);
        assert_eq!(p.group_addr(), Ipv4Addr::new(239, 1, 2, 3));
        assert!(p.verify_checksum());
    }

    /// RFC 2236 §2: the same report built field by field, and through the repr.
    #[test]
    fn construct_v2() {
        let mut b = [0xffu8; 8];
        let mut p = IgmpPacket::new_unchecked(&mut b[..]);
        p.set_msg_type(IgmpType::V2Report);
        p.set_max_resp_code(0);
        p.set_group_addr(Ipv4Addr::new(239, 1, 2, 3));
        p.fill_checksum();
        assert_eq!(b, V2_REPORT);
        let r = IgmpRepr::V2Report {
            group: Ipv4Addr::new(239, 1, 2, 3),
        };
        let mut out = [0u8; 8];
        r.emit(&mut out).unwrap();
        assert_eq!(out, V2_REPORT);
        assert_eq!(IgmpRepr::parse(&V2_REPORT), Ok(r));
    }

    /// RFC 3376 §4.2: a v3 report's header and record, parse and emit.
    #[test]
    fn v3_report() {
        let r = IgmpRepr::parse(&V3_JOIN).unwrap();
        let IgmpRepr::V3Report { records } = r else {
            panic!("{r:?}")
        };
        let v: Vec<_> = records.iter().collect();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].record_type, RecordType::ChangeToExclude);
        assert_eq!(v[0].group, Ipv4Addr::new(239, 1, 2, 3));
        assert_eq!(v[0].num_sources(), 0);
        let mut out = [0u8; 16];
        r.emit(&mut out).unwrap();
        assert_eq!(out, V3_JOIN);
        assert_eq!(r.buffer_len(), 16);
        // One record announced, none present.
        let mut short = V3_JOIN[..8].to_vec();
        IgmpPacket::new_unchecked(&mut short[..]).fill_checksum();
        assert_eq!(IgmpRepr::parse(&short), Err(Error::Truncated));
    }

    /// RFC 1112, RFC 2236 §3, RFC 3376 §7.1: v1 report, leave, and queries told by length.
    #[test]
    fn other_types() {
        let g = Ipv4Addr::new(224, 0, 0, 251);
        for r in [
            IgmpRepr::V1Report { group: g },
            IgmpRepr::Leave { group: g },
        ] {
            let mut b = [0u8; 8];
            r.emit(&mut b).unwrap();
            assert_eq!(IgmpRepr::parse(&b), Ok(r));
        }
        let q = IgmpRepr::Query {
            max_resp_code: 100,
            group: Ipv4Addr::UNSPECIFIED,
            v3: &[0x02, 125, 0, 0],
        };
        let mut b = [0u8; 12];
        q.emit(&mut b).unwrap();
        assert_eq!(IgmpRepr::parse(&b), Ok(q));
        // 9 to 11 bytes: no valid query (RFC 3376 §7.1).
        let mut odd = b[..10].to_vec();
        IgmpPacket::new_unchecked(&mut odd[..]).fill_checksum();
        assert_eq!(IgmpRepr::parse(&odd), Err(Error::Malformed));
        let mut unknown = V2_REPORT;
        unknown[0] = 0x99;
        IgmpPacket::new_unchecked(&mut unknown[..]).fill_checksum();
        assert_eq!(IgmpRepr::parse(&unknown), Err(Error::Unsupported));
        let mut bad = V2_REPORT;
        bad[7] ^= 1;
        assert_eq!(IgmpRepr::parse(&bad), Err(Error::Checksum));
        assert_eq!(IgmpRepr::parse(&V2_REPORT[..7]), Err(Error::Truncated));
    }

    /// RFC 2236 §2.5: only the first 8 bytes of a longer v1/v2 message are used (the checksum
    /// still covers them all).
    #[test]
    fn longer_v2_message_uses_its_first_8_bytes() {
        let mut b = V2_REPORT.to_vec();
        b.extend_from_slice(&[1, 2, 3, 4]);
        IgmpPacket::new_unchecked(&mut b[..]).fill_checksum();
        assert_eq!(
            IgmpRepr::parse(&b),
            Ok(IgmpRepr::V2Report {
                group: Ipv4Addr::new(239, 1, 2, 3)
            })
        );
    }

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(r) = IgmpRepr::parse(&data) {
                let mut b = vec![0u8; r.buffer_len()];
                prop_assert!(r.emit(&mut b).is_ok());
            }
        }

        #[test]
        fn parse_never_panics_with_good_checksum(mut data in proptest::collection::vec(any::<u8>(), 8..200)) {
            IgmpPacket::new_unchecked(&mut data[..]).fill_checksum();
            if let Ok(r) = IgmpRepr::parse(&data) {
                let mut b = vec![0u8; r.buffer_len()];
                prop_assert!(r.emit(&mut b).is_ok());
                prop_assert_eq!(IgmpRepr::parse(&b), Ok(r));
            }
        }
    }
}
