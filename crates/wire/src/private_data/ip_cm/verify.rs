//! The byte-level checks an RDMA IP CM service connection server makes on REQ private data before
//! accepting it (Annex A11 §A11.4, §A11.6, §A11.7), in the order the annex requires: versions first
//! (CA11-11), then the fields it leaves unordered, in wire order.

use super::rej::{IpCmAriCode, IpCmReject, SuggestedValue};
use super::{IpCmReq, IpCmReqRepr, HEADER_LEN, MAJOR_VERSION, MINOR_VERSION};
use crate::private_data::{unicast_source, v4_padding, IpPair, V4Padding};
use std::net::IpAddr;

/// What a server supports, for [`verify_req_private_data`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpCmServerPolicy {
    /// The major version served (CA11-2); 0 in this annex.
    pub major_version: u8,
    /// The highest minor version served (CA11-3.1.1, CA11-3.1.2); 0 in this annex.
    pub minor_version: u8,
    /// IPv4 addressing accepted (CA11-4).
    pub ipv4: bool,
    /// IPv6 addressing accepted (CA11-4).
    pub ipv6: bool,
    /// Accept IPv4 fields padded as `::ffff:a.b.c.d` instead of 12 zero bytes. CA11-5 requires
    /// zeros, so the default is `false`; the decoder reads both either way.
    pub accept_mapped_ipv4: bool,
}

impl Default for IpCmServerPolicy {
    fn default() -> Self {
        IpCmServerPolicy {
            major_version: MAJOR_VERSION,
            minor_version: MINOR_VERSION,
            ipv4: true,
            ipv6: true,
            accept_mapped_ipv4: false,
        }
    }
}

/// Checks REQ private data as an RDMA IP CM service connection server must, returning the parsed
/// header or the ARI to reject with (CM REJ reason 28, oA11-1). Checks, in order:
///
/// 1. MajV equals the served major version, else `MajorVersion` suggesting it (CA11-2, CA11-11).
/// 2. MinV is not above the served minor version, else `MinorVersion` suggesting it (CA11-3.1.1);
///    lower or equal minors are accepted (CA11-3, CA11-3.1.2): the connection runs at the client's
///    minor version, which the returned repr carries.
/// 3. The header is complete (36 to 92 bytes), else `Unspecified` (no code fits a short REQ).
/// 4. IPV is supported, else `Ipv` suggesting a supported one, 4 first (CA11-4).
/// 5. For IPv4, Source IP Address(127-32) is zero, else `SourceIpAddress` (CA11-5).
/// 6. Likewise for the destination, else `DestinationIpAddress` (CA11-5).
/// 7. The source is a unicast address ([`unicast_source`]), else `Unspecified`: Linux refuses such
///    a REQ too, and no Table 5 code fits (the address has the IP version's format); §A11.7 lets
///    a server refuse "for security or any other reason" with the unspecified code.
/// 8. The destination is one of `local_addrs`, else `UnknownIpAddress` (Table 5 code 0x06). An empty
///    `local_addrs` skips this check.
///
/// Res is ignored (§A11.4.4). A server that does not run the IP CM service at all answers REJ
/// reason 8 instead ([`super::REJ_REASON_INVALID_SERVICE_ID`], CA11-8); that is not decided here.
pub fn verify_req_private_data<'a>(
    data: &'a [u8],
    policy: &IpCmServerPolicy,
    local_addrs: &[IpAddr],
) -> Result<IpCmReqRepr<'a>, IpCmReject> {
    // CA11-11: the version fields first.
    let Some(&version) = data.first() else {
        return Err(IpCmReject::new(IpCmAriCode::Unspecified));
    };
    if version >> 4 != policy.major_version {
        return Err(IpCmReject {
            code: IpCmAriCode::MajorVersion,
            suggested: SuggestedValue::byte(policy.major_version),
        });
    }
    if version & 0x0f > policy.minor_version {
        return Err(IpCmReject {
            code: IpCmAriCode::MinorVersion,
            suggested: SuggestedValue::byte(policy.minor_version),
        });
    }
    let p = IpCmReq::new_checked(data).map_err(|_| IpCmReject::new(IpCmAriCode::Unspecified))?;
    let ipv = p.ip_version();
    let supported = match ipv {
        4 => policy.ipv4,
        6 => policy.ipv6,
        _ => false,
    };
    if !supported {
        let suggest = if policy.ipv4 {
            Some(4)
        } else if policy.ipv6 {
            Some(6)
        } else {
            None
        };
        return Err(IpCmReject {
            code: IpCmAriCode::Ipv,
            suggested: suggest.map_or(SuggestedValue::NONE, SuggestedValue::byte),
        });
    }
    if ipv == 4 {
        let ok = |f: &[u8]| match v4_padding(f) {
            V4Padding::Zero => true,
            V4Padding::Mapped => policy.accept_mapped_ipv4,
            V4Padding::Invalid => false,
        };
        if !ok(p.source_ip_field()) {
            return Err(IpCmReject::new(IpCmAriCode::SourceIpAddress));
        }
        if !ok(p.destination_ip_field()) {
            return Err(IpCmReject::new(IpCmAriCode::DestinationIpAddress));
        }
    }
    let addrs = IpPair::read(ipv, p.source_ip_field(), p.destination_ip_field())
        .map_err(|_| IpCmReject::new(IpCmAriCode::Unspecified))?;
    let (src, dst) = match addrs {
        IpPair::V4 { src, dst } => (IpAddr::V4(src), IpAddr::V4(dst)),
        IpPair::V6 { src, dst } => (IpAddr::V6(src), IpAddr::V6(dst)),
    };
    if !unicast_source(src) {
        return Err(IpCmReject::new(IpCmAriCode::Unspecified));
    }
    if !local_addrs.is_empty() && !local_addrs.contains(&dst) {
        return Err(IpCmReject::new(IpCmAriCode::UnknownIpAddress));
    }
    Ok(IpCmReqRepr {
        major_version: p.major_version(),
        minor_version: p.minor_version(),
        source_port: p.source_port(),
        addrs,
        consumer_private_data: &data[HEADER_LEN..],
    })
}
