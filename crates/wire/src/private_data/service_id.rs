//! Service IDs of the connection services whose private data this crate formats, and the classifier
//! that tells the decoder which private-data format a REQ carries.
//!
//! # The ranges
//!
//! | range | service | source |
//! |---|---|---|
//! | `0x10000000_00xxxxxx` | IPoIB-CM, QPN = UD QPN (as Linux emits) | RFC 4755 §3.5,
//! docs/DEPLOYED.md |
//! | `0x01000000_00xxxxxx` | IPoIB-CM, the RFC figure read literally | RFC 4755 §3.5 |
//! | `0x00000000_01PPpppp` | Annex A11 IP CM service, protocol PP, port pppp | Annex A11 §A11.5, CA11-6 |
//! | `0x00000000_0002pppp` | iWarp emulation, port pppp | iWarp mapping "IB Service ID's used" |
//! | `0x00000000_0001pppp` | SDP (Linux rdma_cm SDP port space); iWarp emulation when the Hello's FlowC is 1 | Linux `RDMA_PS_SDP`; iWarp mapping "IB Service ID's used" |
//!
//! Linux rdma_cm builds service IDs as `(port_space << 16) + port` with port spaces SDP 0x0001,
//! IPOIB 0x0002, TCP 0x0106, UDP 0x0111 and IB 0x013F. TCP, UDP and IB therefore fall inside the
//! Annex A11 range with protocol numbers 6, 17 and 63, and carry the Annex A11 header: they classify
//! as [`ServiceKind::IpCm`].
//!
//! # The overlap at `0x0000000000020000`
//!
//! The iWarp-emulation prefix equals Linux's IPOIB port space (`0x0002 << 16`). [`classify`] looks
//! at the service ID only and prefers [`ServiceKind::IwarpEmulation`], because the range was
//! published for it and this project's iWarp peers use it. [`classify_with_data`] resolves the
//! overlap by content: a Hello has MID 0 or 1 and a reserved (zero) byte 1, while Linux's rdma_cm
//! header has version 0 and the IP version (4 or 6) in the upper nibble of byte 1; when byte 0 is 0
//! and the upper nibble of byte 1 is 4 or 6, the REQ is rdma_cm's and classifies as
//! [`ServiceKind::RdmaCm`] with [`RdmaPortSpace::Ipoib`].

use crate::describe::{Describe, Describer, Value};

/// Linux's IPoIB-CM service-ID base (`IPOIB_CM_IETF_ID`): top octet 0x10. RFC 4755 §3.5.
pub const IPOIB_CM_SID_LINUX: u64 = 0x1000_0000_0000_0000;
/// RFC 4755 §3.5's figure read literally: first octet `00000001`, i.e. 0x01.
pub const IPOIB_CM_SID_RFC: u64 = 0x0100_0000_0000_0000;
/// The bits of an IPoIB-CM service ID other than the 24-bit QPN (prefix, Type, Reserved).
pub const IPOIB_CM_SID_MASK: u64 = 0xffff_ffff_ff00_0000;
/// Annex A11 service-ID prefix `0x0000000001` (bytes 0-4), in place. Annex A11 CA11-6.
pub const IP_CM_SID_PREFIX: u64 = 0x0000_0000_0100_0000;
/// The bits covered by [`IP_CM_SID_PREFIX`].
pub const IP_CM_SID_PREFIX_MASK: u64 = 0xffff_ffff_ff00_0000;
/// `IBTA_IWARP_PREFIX` of the iWarp mapping: the service ID is this plus the listener's TCP port.
pub const IWARP_SID_PREFIX: u64 = 0x0000_0000_0002_0000;

/// Which spelling of the IPoIB-CM service ID was seen (RFC 4755 §3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpoibCmSidForm {
    /// Top octet 0x10, as Linux emits (`IPOIB_CM_IETF_ID | qpn`).
    Linux,
    /// Top octet 0x01, the RFC figure's literal bits.
    Rfc,
}

/// The IPoIB-CM service ID of an interface whose UD QPN is `ud_qpn`: `0x1000000000000000 | qpn`.
///
/// RFC 4755 §3.5 draws the IETF block as `|00000001|<-- IETF use -->|`, which read bit for bit gives a
/// first octet of 0x01. The IBTA block reserved for the IETF is the one whose top *nibble* is 1
/// (0x1000000000000000-0x1FFFFFFFFFFFFFFF), and Linux (`IPOIB_CM_IETF_ID`) uses 0x10 in the top
/// octet. A peer listens where Linux connects, so we emit the Linux form and recognise both
/// ([`ipoib_cm_qpn`]). Type and Reserved are zero ("MUST be set to 0", RFC 4755 §3.5); only the low
/// 24 bits of `ud_qpn` are used.
pub fn ipoib_cm_service_id(ud_qpn: u32) -> u64 {
    IPOIB_CM_SID_LINUX | u64::from(ud_qpn & 0x00ff_ffff)
}

/// The RFC-literal spelling, `0x0100000000000000 | qpn` (RFC 4755 §3.5); for talking to a peer that
/// reads the figure bit for bit.
pub fn ipoib_cm_service_id_rfc(ud_qpn: u32) -> u64 {
    IPOIB_CM_SID_RFC | u64::from(ud_qpn & 0x00ff_ffff)
}

/// The UD QPN of an IPoIB-CM service ID in either spelling, with the spelling; `None` when the
/// prefix, Type or Reserved bits do not match (RFC 4755 §3.5: Type and Reserved MUST be zero).
pub fn ipoib_cm_qpn(service_id: u64) -> Option<(u32, IpoibCmSidForm)> {
    let qpn = (service_id & 0x00ff_ffff) as u32;
    match service_id & IPOIB_CM_SID_MASK {
        IPOIB_CM_SID_LINUX => Some((qpn, IpoibCmSidForm::Linux)),
        IPOIB_CM_SID_RFC => Some((qpn, IpoibCmSidForm::Rfc)),
        _ => None,
    }
}

/// The Annex A11 service ID for `protocol` (IANA IP protocol number) and destination `port`:
/// `0x0000000001 ‖ protocol ‖ port` (Annex A11 §A11.5 Table 2, CA11-6).
pub fn ip_cm_service_id(protocol: u8, port: u16) -> u64 {
    IP_CM_SID_PREFIX | (u64::from(protocol) << 16) | u64::from(port)
}

/// `(protocol, port)` of an Annex A11 service ID, or `None` outside the range (Annex A11 CA11-6).
pub fn ip_cm_protocol_port(service_id: u64) -> Option<(u8, u16)> {
    if service_id & IP_CM_SID_PREFIX_MASK == IP_CM_SID_PREFIX {
        Some(((service_id >> 16) as u8, service_id as u16))
    } else {
        None
    }
}

/// The iWarp-emulation service ID of a listener on TCP `port`: `IBTA_IWARP_PREFIX + port`
/// (iWarp mapping, "IB Service ID's used").
pub fn iwarp_service_id(port: u16) -> u64 {
    IWARP_SID_PREFIX + u64::from(port)
}

code_enum! {
    /// A Linux rdma_cm port space (`enum rdma_ucm_port_space`); the service ID is `(ps << 16) + port`.
    pub enum RdmaPortSpace(u16) {
        /// `RDMA_PS_SDP` 0x0001.
        Sdp = 0x0001 => "SDP",
        /// `RDMA_PS_IPOIB` 0x0002 (overlaps the iWarp-emulation prefix).
        Ipoib = 0x0002 => "IPOIB",
        /// `RDMA_PS_TCP` 0x0106 (= Annex A11 with protocol 6).
        Tcp = 0x0106 => "TCP",
        /// `RDMA_PS_UDP` 0x0111 (= Annex A11 with protocol 17).
        Udp = 0x0111 => "UDP",
        /// `RDMA_PS_IB` 0x013F (= Annex A11 with protocol 63).
        Ib = 0x013f => "IB",
        /// Any other value.
        Unknown(_) => "Unknown",
    }
}

/// The Linux rdma_cm service ID `(ps << 16) + port`.
pub fn rdma_cm_service_id(ps: RdmaPortSpace, port: u16) -> u64 {
    (u64::from(u16::from(ps)) << 16) + u64::from(port)
}

/// What a service ID says about the REQ private data (Annex A11 CA11-7 for the A11 range).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceKind {
    /// IPoIB connected mode towards the interface with UD QPN `qpn` (RFC 4755 §3.5); private data
    /// per [`super::ipoib_cm`].
    IpoibCm {
        /// The listener's UD QPN.
        qpn: u32,
    },
    /// Annex A11 IP CM service (includes Linux rdma_cm TCP/UDP/IB port spaces); private data per
    /// [`super::ip_cm`].
    IpCm {
        /// IP protocol number (6 TCP, 17 UDP, 132 SCTP, ...).
        protocol: u8,
        /// Destination port.
        port: u16,
    },
    /// iWarp emulation (Hello / HelloReply, [`super::iwarp`]).
    IwarpEmulation {
        /// Listener TCP port.
        port: u16,
    },
    /// A Linux rdma_cm port space outside the A11 range (SDP, or IPOIB recognised by content).
    RdmaCm {
        /// The port space.
        port_space: RdmaPortSpace,
        /// The port.
        port: u16,
    },
    /// No private-data format known for this service ID.
    Other,
}

/// Classifies a service ID by its bits alone. Precedence: IPoIB-CM (top octet 0x10 or 0x01), then
/// the Annex A11 range, then iWarp emulation `0x0000000000020000 + port` (chosen over Linux's IPOIB
/// port space, see the module docs), then Linux's SDP port space; everything else is
/// [`ServiceKind::Other`]. The ranges other than the iWarp/IPOIB pair are disjoint.
pub fn classify(service_id: u64) -> ServiceKind {
    if let Some((qpn, _)) = ipoib_cm_qpn(service_id) {
        return ServiceKind::IpoibCm { qpn };
    }
    if let Some((protocol, port)) = ip_cm_protocol_port(service_id) {
        return ServiceKind::IpCm { protocol, port };
    }
    let port = service_id as u16;
    match service_id >> 16 {
        0x0002 => ServiceKind::IwarpEmulation { port },
        0x0001 => ServiceKind::RdmaCm {
            port_space: RdmaPortSpace::Sdp,
            port,
        },
        _ => ServiceKind::Other,
    }
}

/// [`classify`], then looks at the REQ private data where the service ID alone is ambiguous:
///
/// - the iWarp / Linux-IPOIB overlap, by the first two bytes: `00 4x` or `00 6x` is Linux's
///   rdma_cm header (version 0, IP version 4 or 6 in bits 7:4), anything else stays iWarp emulation
///   (whose byte 1 is reserved, zero);
/// - SDP's service IDs (`0x000000000001pppp`), which the iWarp mapping lets an emulated connection
///   use, "distinguish between SDP and raw iWarp emulation based on the FlowC field" (iWarp mapping,
///   "IB Service ID's used"): a Hello (MID 0) whose FlowC (byte 17, bits 3:0, reserved and zero in
///   SDP's Hello) is 1 is raw iWarp emulation; FlowC 0 is SDP, whose Hello it then is.
pub fn classify_with_data(service_id: u64, private_data: &[u8]) -> ServiceKind {
    match classify(service_id) {
        ServiceKind::IwarpEmulation { port } => match private_data {
            [0, b, ..] if matches!(b >> 4, 4 | 6) => ServiceKind::RdmaCm {
                port_space: RdmaPortSpace::Ipoib,
                port,
            },
            _ => ServiceKind::IwarpEmulation { port },
        },
        ServiceKind::RdmaCm {
            port_space: RdmaPortSpace::Sdp,
            port,
        } => match private_data.get(..18) {
            Some([0, rest @ ..]) if rest[16] & 0x0f == 1 => ServiceKind::IwarpEmulation { port },
            _ => ServiceKind::RdmaCm {
                port_space: RdmaPortSpace::Sdp,
                port,
            },
        },
        k => k,
    }
}

impl ServiceKind {
    /// A short stable name of the kind.
    pub fn name(&self) -> &'static str {
        match self {
            ServiceKind::IpoibCm { .. } => "ipoib_cm",
            ServiceKind::IpCm { .. } => "ip_cm",
            ServiceKind::IwarpEmulation { .. } => "iwarp",
            ServiceKind::RdmaCm { .. } => "rdma_cm",
            ServiceKind::Other => "other",
        }
    }
}

impl Describe for ServiceKind {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("kind", Value::Str(self.name()));
        match *self {
            ServiceKind::IpoibCm { qpn } => d.field("qpn", Value::Hex(qpn.into(), 6)),
            ServiceKind::IpCm { protocol, port } => {
                d.field("protocol", Value::Uint(protocol.into()));
                d.field("dport", Value::Uint(port.into()));
            }
            ServiceKind::IwarpEmulation { port } => d.field("port", Value::Uint(port.into())),
            ServiceKind::RdmaCm { port_space, port } => {
                d.field(
                    "port_space",
                    Value::Named(u16::from(port_space).into(), port_space.name()),
                );
                d.field("port", Value::Uint(port.into()));
            }
            ServiceKind::Other => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    #[test]
    fn ipoib_cm_both_forms() {
        // RFC 4755 §3.5; Linux IPOIB_CM_IETF_ID (docs/DEPLOYED.md).
        assert_eq!(ipoib_cm_service_id(0x48), 0x1000_0000_0000_0048);
        assert_eq!(ipoib_cm_service_id_rfc(0x48), 0x0100_0000_0000_0048);
        assert_eq!(ipoib_cm_service_id(0xff12_3456), 0x1000_0000_0012_3456);
        assert_eq!(
            ipoib_cm_qpn(0x1000_0000_00ab_cdef),
            Some((0xab_cdef, IpoibCmSidForm::Linux))
        );
        assert_eq!(
            ipoib_cm_qpn(0x0100_0000_0000_0048),
            Some((0x48, IpoibCmSidForm::Rfc))
        );
        // RFC 4755 §3.5: Type MUST be 0, Reserved MUST be zero.
        assert_eq!(ipoib_cm_qpn(0x0101_0000_0000_0048), None);
        assert_eq!(ipoib_cm_qpn(0x1000_0000_0100_0048), None);
        assert_eq!(
            classify(0x1000_0000_0000_0048),
            ServiceKind::IpoibCm { qpn: 0x48 }
        );
        assert_eq!(
            classify(0x0100_0000_0000_0048),
            ServiceKind::IpoibCm { qpn: 0x48 }
        );
    }

    #[test]
    fn annex_a11_examples() {
        // Annex A11 §A11.5, CA11-6: NFSv4 over SCTP port 2049, iSER over TCP port 3260.
        assert_eq!(ip_cm_service_id(132, 2049), 0x0000_0000_0184_0801);
        assert_eq!(ip_cm_service_id(6, 3260), 0x0000_0000_0106_0cbc);
        assert_eq!(
            ip_cm_protocol_port(0x0000_0000_0184_0801),
            Some((132, 2049))
        );
        assert_eq!(ip_cm_protocol_port(0x0000_0000_0106_0cbc), Some((6, 3260)));
        assert_eq!(ip_cm_protocol_port(0x0000_0001_0106_0cbc), None);
        assert_eq!(
            classify(0x0000_0000_0106_0cbc),
            ServiceKind::IpCm {
                protocol: 6,
                port: 3260
            }
        );
    }

    #[test]
    fn linux_port_spaces() {
        // docs/DEPLOYED.md: service ID = (ps << 16) + port.
        assert_eq!(
            rdma_cm_service_id(RdmaPortSpace::Tcp, 3260),
            ip_cm_service_id(6, 3260)
        );
        assert_eq!(
            rdma_cm_service_id(RdmaPortSpace::Udp, 4791),
            ip_cm_service_id(17, 4791)
        );
        assert_eq!(
            rdma_cm_service_id(RdmaPortSpace::Ib, 1),
            0x0000_0000_013f_0001
        );
        assert_eq!(
            rdma_cm_service_id(RdmaPortSpace::Sdp, 80),
            0x0000_0000_0001_0050
        );
        assert_eq!(
            classify(0x0000_0000_0001_0050),
            ServiceKind::RdmaCm {
                port_space: RdmaPortSpace::Sdp,
                port: 80
            }
        );
        for v in [1u16, 2, 0x106, 0x111, 0x13f, 0x777] {
            assert_eq!(u16::from(RdmaPortSpace::from(v)), v);
        }
    }

    #[test]
    fn iwarp_and_overlap() {
        // iWarp mapping: IBTA_IWARP_PREFIX = 0x0000000000020000 + port.
        assert_eq!(iwarp_service_id(3260), 0x0000_0000_0002_0cbc);
        assert_eq!(
            rdma_cm_service_id(RdmaPortSpace::Ipoib, 3260),
            iwarp_service_id(3260)
        );
        assert_eq!(
            classify(0x0000_0000_0002_0cbc),
            ServiceKind::IwarpEmulation { port: 3260 }
        );
        // A Hello: MID 0, reserved 0.
        assert_eq!(
            classify_with_data(0x0000_0000_0002_0cbc, &[0, 0, 0, 1]),
            ServiceKind::IwarpEmulation { port: 3260 }
        );
        // Linux rdma_cm header: version 0, IPv4.
        assert_eq!(
            classify_with_data(0x0000_0000_0002_0cbc, &[0, 0x40, 0x12, 0x34]),
            ServiceKind::RdmaCm {
                port_space: RdmaPortSpace::Ipoib,
                port: 3260
            }
        );
        assert_eq!(classify(0x0000_0000_0003_0001), ServiceKind::Other);
    }

    #[test]
    fn sdp_service_id_told_apart_by_flowc() {
        // iWarp mapping "IB Service ID's used": on SDP's service ID, FlowC tells raw iWarp
        // emulation (FlowC 1) from SDP (FlowC 0, SDP's reserved nibble).
        let sid = rdma_cm_service_id(RdmaPortSpace::Sdp, 3260);
        let sdp = ServiceKind::RdmaCm {
            port_space: RdmaPortSpace::Sdp,
            port: 3260,
        };
        let mut hello = [0u8; 64];
        hello[17] = 0x41; // IPVer 4, FlowC 1
        assert_eq!(
            classify_with_data(sid, &hello),
            ServiceKind::IwarpEmulation { port: 3260 }
        );
        hello[17] = 0x60; // IPVer 6, FlowC 0: SDP's own Hello
        assert_eq!(classify_with_data(sid, &hello), sdp);
        hello[17] = 0x41;
        hello[0] = 1; // not a Hello
        assert_eq!(classify_with_data(sid, &hello), sdp);
        hello[0] = 0;
        assert_eq!(classify_with_data(sid, &hello[..17]), sdp);
        assert_eq!(classify(sid), sdp);
        assert_eq!(classify(0x0002_c903_0000_0001), ServiceKind::Other);
    }

    #[test]
    fn describe_kind() {
        let mut c = Collect::default();
        ServiceKind::IpCm {
            protocol: 6,
            port: 3260,
        }
        .describe(&mut c);
        assert_eq!(c.get("kind"), Some("ip_cm"));
        assert_eq!(c.get("dport"), Some("3260"));
    }

    proptest! {
        #[test]
        fn ip_cm_round_trip(p in any::<u8>(), port in any::<u16>()) {
            prop_assert_eq!(ip_cm_protocol_port(ip_cm_service_id(p, port)), Some((p, port)));
        }

        #[test]
        fn ipoib_round_trip(qpn in 0u32..(1 << 24)) {
            prop_assert_eq!(classify(ipoib_cm_service_id(qpn)), ServiceKind::IpoibCm { qpn });
            prop_assert_eq!(classify(ipoib_cm_service_id_rfc(qpn)), ServiceKind::IpoibCm { qpn });
        }

        #[test]
        fn classify_never_panics(sid in any::<u64>(), data in proptest::collection::vec(any::<u8>(), 0..8)) {
            let _ = classify_with_data(sid, &data);
        }
    }
}
