//! Private data of connection requests: IPoIB-CM, Annex A11 IP CM service, iWarp emulation.
//!
//! A CM REQ carries 92 bytes of private data, a REP 196, a REJ 148 (IBA 1 §12.6). The CM itself does
//! not interpret them: the service ID of the REQ says which format the consumer put there
//! (Annex A11 CA11-7). [`service_id::classify`] maps a service ID to a [`ServiceKind`], and the
//! decoder then picks the matching format:
//!
//! | kind | format | module |
//! |---|---|---|
//! | [`ServiceKind::IpoibCm`] | `{UD QPN, receive MTU}` (RFC 4755 §6) | [`ipoib_cm`] |
//! | [`ServiceKind::IpCm`] | IP CM REQ header + consumer data (Annex A11 Table 1) | [`ip_cm`] |
//! | [`ServiceKind::IwarpEmulation`] | Hello / HelloReply (iWarp mapping Figure 1) | [`iwarp`] |
//! | [`ServiceKind::RdmaCm`] | Linux rdma_cm port spaces outside the A11 range | [`ip_cm`] for IPOIB |
//!
//! Every view here follows the crate's pattern (zero-copy view, validated `Repr`, [`Describe`]).
//! Parsing never allocates and never panics on short or hostile input.
//!
//! [`Describe`]: crate::describe::Describe

pub mod ip_cm;
pub mod ipoib_cm;
pub mod iwarp;
pub mod service_id;

pub use ip_cm::{
    verify_req_private_data, IpCmAriCode, IpCmReject, IpCmReq, IpCmReqRepr, IpCmServerPolicy,
    RejAri, RejectionLayer, SuggestedValue,
};
pub use ipoib_cm::{IpoibCmPrivateData, IpoibCmPrivateDataRepr};
pub use iwarp::{FlowControl, Hello, HelloReply, HelloReplyRepr, HelloRepr, IwarpMid};
pub use service_id::{classify, classify_with_data, IpoibCmSidForm, RdmaPortSpace, ServiceKind};

use crate::describe::{Describer, Value};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A source and destination IP address of one family, as carried by the Annex A11 header and the
/// iWarp Hello: both addresses share one IP-version field, so mixed families cannot be expressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpPair {
    /// IP version 4 (IPV = 4).
    V4 {
        /// Source address.
        src: Ipv4Addr,
        /// Destination address.
        dst: Ipv4Addr,
    },
    /// IP version 6 (IPV = 6).
    V6 {
        /// Source address.
        src: Ipv6Addr,
        /// Destination address.
        dst: Ipv6Addr,
    },
}

impl IpPair {
    /// The value of the 4-bit IP-version field: 4 or 6.
    pub fn version(&self) -> u8 {
        match self {
            IpPair::V4 { .. } => 4,
            IpPair::V6 { .. } => 6,
        }
    }

    /// Reads a pair from two 16-byte address fields (`src16`, `dst16`) given the IP-version field.
    /// IPv4 addresses are the last 4 bytes of each field; the first 12 bytes must be zero (Annex A11
    /// CA11-5, Linux `cma_ip_addr.ip4`) or, read leniently, the `::ffff:0:0/96` mapped prefix.
    /// Returns `Err(Unsupported)` for a reserved IP version and `Err(Malformed)` for other padding.
    pub(crate) fn read(ipv: u8, src16: &[u8], dst16: &[u8]) -> crate::Result<IpPair> {
        match ipv {
            4 => {
                let src = v4_from_field(src16).ok_or(crate::Error::Malformed)?;
                let dst = v4_from_field(dst16).ok_or(crate::Error::Malformed)?;
                Ok(IpPair::V4 { src, dst })
            }
            6 => Ok(IpPair::V6 {
                src: Ipv6Addr::from(field16(src16)),
                dst: Ipv6Addr::from(field16(dst16)),
            }),
            _ => Err(crate::Error::Unsupported),
        }
    }

    /// Writes the pair into two 16-byte fields, IPv4 with 12 zero bytes first (Annex A11 CA11-5).
    pub(crate) fn write(&self, src16: &mut [u8], dst16: &mut [u8]) {
        match self {
            IpPair::V4 { src, dst } => {
                write_v4_field(src16, *src);
                write_v4_field(dst16, *dst);
            }
            IpPair::V6 { src, dst } => {
                src16[..16].copy_from_slice(&src.octets());
                dst16[..16].copy_from_slice(&dst.octets());
            }
        }
    }

    /// Lists `sip` and `dip` (the names tshark uses for the A11 fields).
    pub(crate) fn describe(&self, d: &mut dyn Describer) {
        match self {
            IpPair::V4 { src, dst } => {
                d.field("sip", Value::Ipv4(*src));
                d.field("dip", Value::Ipv4(*dst));
            }
            IpPair::V6 { src, dst } => {
                d.field("sip", Value::Ipv6(*src));
                d.field("dip", Value::Ipv6(*dst));
            }
        }
    }
}

/// True when `ip` can be the source of a connection: a unicast address. Linux rdma_cm refuses a
/// REQ whose Annex A11 header names an IPv4 source in 0.0.0.0/8, 127.0.0.0/8, 224.0.0.0/4 or
/// 255.255.255.255 (`validate_ipv4_net_dev` in `drivers/infiniband/core/cma.c`, called for every
/// REQ through `cma_get_net_dev`; docs/DEPLOYED.md "Linux rdma_cm"). For IPv6 we refuse the
/// unspecified address, loopback and multicast: none names a remote interface (RFC 4291 §2.5.2,
/// §2.5.3, §2.7), though Linux makes no such test of an IPv6 source.
pub fn unicast_source(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            !(a.octets()[0] == 0 || a.is_loopback() || a.is_multicast() || a.is_broadcast())
        }
        IpAddr::V6(a) => !(a.is_unspecified() || a.is_loopback() || a.is_multicast()),
    }
}

/// How the upper 96 bits of an IPv4 address field are filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum V4Padding {
    /// 12 zero bytes (Annex A11 CA11-5; what Linux rdma_cm and wireshark use).
    Zero,
    /// `::ffff:a.b.c.d`, an IPv4-mapped IPv6 address (not per the annex; accepted when reading).
    Mapped,
    /// Anything else: not an IPv4 address.
    Invalid,
}

/// Classifies the padding of a 16-byte IPv4 address field. `f` must hold at least 16 bytes.
pub fn v4_padding(f: &[u8]) -> V4Padding {
    if f[..12].iter().all(|&b| b == 0) {
        V4Padding::Zero
    } else if f[..10].iter().all(|&b| b == 0) && f[10] == 0xff && f[11] == 0xff {
        V4Padding::Mapped
    } else {
        V4Padding::Invalid
    }
}

fn v4_from_field(f: &[u8]) -> Option<Ipv4Addr> {
    match v4_padding(f) {
        V4Padding::Invalid => None,
        _ => Some(Ipv4Addr::new(f[12], f[13], f[14], f[15])),
    }
}

fn write_v4_field(f: &mut [u8], a: Ipv4Addr) {
    f[..12].fill(0);
    f[12..16].copy_from_slice(&a.octets());
}

fn field16(f: &[u8]) -> [u8; 16] {
    let mut a = [0u8; 16];
    a.copy_from_slice(&f[..16]);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v4_padding_forms() {
        // Annex A11 CA11-5: bits 127-32 zero.
        let mut f = [0u8; 16];
        f[12..].copy_from_slice(&[10, 0, 0, 1]);
        assert_eq!(v4_padding(&f), V4Padding::Zero);
        f[10] = 0xff;
        f[11] = 0xff;
        assert_eq!(v4_padding(&f), V4Padding::Mapped);
        f[0] = 1;
        assert_eq!(v4_padding(&f), V4Padding::Invalid);
    }

    #[test]
    fn unicast_sources() {
        // Linux `validate_ipv4_net_dev`: zeronet, loopback, multicast, limited broadcast.
        for a in [
            "0.0.0.0",
            "0.1.2.3",
            "127.0.0.1",
            "224.0.0.1",
            "239.1.1.1",
            "255.255.255.255",
        ] {
            assert!(!unicast_source(a.parse().unwrap()), "{a}");
        }
        for a in ["::", "::1", "ff02::1"] {
            assert!(!unicast_source(a.parse().unwrap()), "{a}");
        }
        for a in [
            "10.0.0.1",
            "1.0.0.0",
            "192.168.255.255",
            "fe80::1",
            "fd00::2",
        ] {
            assert!(unicast_source(a.parse().unwrap()), "{a}");
        }
    }

    #[test]
    fn pair_read_write() {
        let p = IpPair::V4 {
            src: Ipv4Addr::new(192, 168, 1, 1),
            dst: Ipv4Addr::new(192, 168, 1, 2),
        };
        let mut s = [0xaau8; 16];
        let mut d = [0xaau8; 16];
        p.write(&mut s, &mut d);
        assert_eq!(s[..12], [0u8; 12]);
        assert_eq!(IpPair::read(4, &s, &d), Ok(p));
        assert_eq!(IpPair::read(5, &s, &d), Err(crate::Error::Unsupported));
        s[0] = 1;
        assert_eq!(IpPair::read(4, &s, &d), Err(crate::Error::Malformed));
    }
}
