//! IPoIB over UD: ICMP echo with and without GRH, multicast UDP, ARP, neighbour discovery, ICMPv6
//! echo (draft-ietf-ipoib-ip-over-infiniband-06 §6-§9).

use super::{pattern, ud, Node, Sample, UdDest, A, B, BROADCAST_MLID, P_KEY};
use crate::ipoib::mcast::{broadcast_mgid, ipv4_mgid, ipv6_mgid, Scope};
use crate::ipoib::{
    ArpOperation, ArpRepr, EtherType, HwAddr, HwAddrFlags, Icmpv4Repr, Icmpv6Repr, Icmpv6Type,
    IpPayload, IpProtocol, IpoibFrame, IpoibPayload, Ipv4Datagram, Ipv4Repr, Ipv6Datagram,
    Ipv6Repr, NdMessage, NdOptionRepr, NdProfile, NdRepr, PrefixInfo, UdpRepr,
};
use crate::types::Gid;
use std::net::{Ipv4Addr, Ipv6Addr};

/// The IPv4 group of the multicast UDP sample.
pub const MCAST_GROUP: Ipv4Addr = Ipv4Addr::new(224, 1, 2, 3);
/// The MLID of that group.
pub const MCAST_MLID: u16 = 0xc001;
/// MLIDs of the IPv6 solicited-node group of B and of all-nodes.
const SOLICITED_MLID: u16 = 0xc002;
const ALL_NODES_MLID: u16 = 0xc003;
/// The echo identifier of every ping sample.
const ECHO_ID: u16 = 0x1234;

pub(super) fn samples() -> Vec<Sample> {
    vec![
        Sample::new("ud_icmp_echo_request", echo(&A, &B, true, false)),
        Sample::new("ud_icmp_echo_reply", echo(&B, &A, false, false)),
        Sample::new("ud_grh_icmp_echo_request", echo(&A, &B, true, true)),
        Sample::new("ud_grh_icmp_echo_reply", echo(&B, &A, false, true)),
        Sample::new("ud_mcast_udp", mcast_udp()),
        Sample::new("ud_arp_request", arp_request()),
        Sample::new("ud_arp_reply", arp_reply()),
        Sample::new("ud_nd_neighbor_solicit", neighbor_solicit()),
        Sample::new("ud_nd_neighbor_advert", neighbor_advert()),
        Sample::new("ud_nd_router_advert", router_advert()),
        Sample::new("ud_icmpv6_echo_request", icmpv6_echo()),
    ]
}

/// The link-layer address of `n` (draft-ietf-ipoib-ip-over-infiniband-06 §9.1.1; RFC 4755 §3.1:
/// flag 0x80, connected mode supported, as Linux sets it when CM is on).
pub fn hw_addr(n: &Node) -> HwAddr {
    HwAddr::new(HwAddrFlags::RC, n.ud_qpn, n.gid())
}

/// The encapsulated bytes of `payload` (draft-ietf-ipoib-ip-over-infiniband-06 §6).
pub(super) fn frame(payload: IpoibPayload<'_>) -> Vec<u8> {
    let f = IpoibFrame::new(payload, EtherType::Unknown(0));
    let mut b = vec![0u8; f.buffer_len()];
    f.emit(&mut b).expect("sample frame fits");
    b
}

fn ipv4_header(src: Ipv4Addr, dst: Ipv4Addr, protocol: IpProtocol, ident: u16) -> Ipv4Repr {
    Ipv4Repr {
        tos: 0,
        ident,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
        ttl: 64,
        protocol,
        src_addr: src,
        dst_addr: dst,
        payload_len: 0,
    }
}

/// An IPoIB frame holding an ICMP echo request or reply of `data_len` bytes of data.
pub(super) fn echo_frame(
    src: &Node,
    dst: &Node,
    request: bool,
    seq: u16,
    data_len: usize,
) -> Vec<u8> {
    let data = pattern(data_len);
    let dg = Ipv4Datagram {
        header: ipv4_header(src.ipv4, dst.ipv4, IpProtocol::Icmp, 0x4000 + seq),
        options: &[],
        payload: IpPayload::Icmpv4(Icmpv4Repr::echo(request, ECHO_ID, seq, &data)),
    };
    frame(IpoibPayload::Ipv4(dg))
}

fn echo(src: &Node, dst: &Node, request: bool, global: bool) -> Vec<u8> {
    let f = echo_frame(src, dst, request, 1, 56);
    let to = if global {
        UdDest::ipoib_global(dst)
    } else {
        UdDest::ipoib(dst)
    };
    ud(src, src.ud_qpn, to, u32::from(global) + 1, &f)
}

/// UDP 10.0.0.1:40001 -> 224.1.2.3:5001 to the mapped MGID (draft-ietf-ipoib-ip-over-infiniband-06
/// §4), TTL 1, UDP checksum computed (RFC 768).
fn mcast_udp() -> Vec<u8> {
    let udp = UdpRepr::new(40001, 5001, b"ipoib sample multicast datagram!");
    let mut header = ipv4_header(A.ipv4, MCAST_GROUP, IpProtocol::Udp, 0x0100);
    header.ttl = 1;
    let f = frame(IpoibPayload::Ipv4(Ipv4Datagram {
        header,
        options: &[],
        payload: IpPayload::Udp(udp),
    }));
    let mgid = ipv4_mgid(MCAST_GROUP, P_KEY, Scope::LinkLocal);
    ud(&A, A.ud_qpn, UdDest::multicast(mgid, MCAST_MLID), 3, &f)
}

/// A asks the broadcast group who has 10.0.0.2 (draft-ietf-ipoib-ip-over-infiniband-06 §9.2;
/// Linux sends a zero target hardware address).
fn arp_request() -> Vec<u8> {
    let arp = ArpRepr {
        operation: ArpOperation::Request,
        sender_hw: hw_addr(&A),
        sender_ip: A.ipv4,
        target_hw: HwAddr::new(HwAddrFlags::NONE, 0, Gid::ZERO),
        target_ip: B.ipv4,
    };
    let mgid = broadcast_mgid(P_KEY, Scope::LinkLocal);
    let f = frame(IpoibPayload::Arp(arp));
    ud(&A, A.ud_qpn, UdDest::multicast(mgid, BROADCAST_MLID), 4, &f)
}

/// B answers A directly.
fn arp_reply() -> Vec<u8> {
    let arp = ArpRepr {
        operation: ArpOperation::Reply,
        sender_hw: hw_addr(&B),
        sender_ip: B.ipv4,
        target_hw: hw_addr(&A),
        target_ip: A.ipv4,
    };
    ud(
        &B,
        B.ud_qpn,
        UdDest::ipoib(&A),
        1,
        &frame(IpoibPayload::Arp(arp)),
    )
}

/// The solicited-node multicast address of `a` (RFC 4291 §2.7.1).
fn solicited_node(a: Ipv6Addr) -> Ipv6Addr {
    let o = a.octets();
    Ipv6Addr::new(
        0xff02,
        0,
        0,
        0,
        0,
        1,
        0xff00 | u16::from(o[13]),
        u16::from_be_bytes([o[14], o[15]]),
    )
}

/// An IPoIB frame holding an IPv6 ICMPv6 ND message with `options`, hop limit 255 (RFC 4861).
fn nd_frame(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    message: NdMessage,
    options: &[NdOptionRepr<'_>],
) -> Vec<u8> {
    let mut opts = Vec::new();
    for o in options {
        let at = opts.len();
        opts.resize(at + o.buffer_len(), 0);
        o.emit(&mut opts[at..]).expect("ND option fits");
    }
    let nd = NdRepr {
        message,
        options: &opts,
        profile: NdProfile::Rfc4391,
    };
    let mut icmp = vec![0u8; nd.buffer_len()];
    nd.emit(src, dst, &mut icmp).expect("ND message fits");
    frame(IpoibPayload::Ipv6(Ipv6Datagram {
        header: ipv6_header(src, dst, 255),
        payload: IpPayload::Raw(&icmp),
    }))
}

fn ipv6_header(src: Ipv6Addr, dst: Ipv6Addr, hop_limit: u8) -> Ipv6Repr {
    Ipv6Repr {
        traffic_class: 0,
        flow_label: 0,
        payload_len: 0,
        next_header: IpProtocol::Icmpv6,
        hop_limit,
        src_addr: src,
        dst_addr: dst,
    }
}

/// A asks B's solicited-node group for B's link-layer address, giving its own
/// (draft-ietf-ipoib-ip-over-infiniband-06 §9.3: 24-byte option, type 1, length 3).
fn neighbor_solicit() -> Vec<u8> {
    let group = solicited_node(B.ipv6());
    let f = nd_frame(
        A.ipv6(),
        group,
        NdMessage::NeighborSolicit { target: B.ipv6() },
        &[NdOptionRepr::SourceLinkLayerAddr(hw_addr(&A))],
    );
    let mgid = ipv6_mgid(group, P_KEY, Scope::LinkLocal);
    ud(&A, A.ud_qpn, UdDest::multicast(mgid, SOLICITED_MLID), 5, &f)
}

/// B answers: solicited, override, with its target link-layer address option (type 2).
fn neighbor_advert() -> Vec<u8> {
    let f = nd_frame(
        B.ipv6(),
        A.ipv6(),
        NdMessage::NeighborAdvert {
            flags: 0x60,
            target: B.ipv6(),
        },
        &[NdOptionRepr::TargetLinkLayerAddr(hw_addr(&B))],
    );
    ud(&B, B.ud_qpn, UdDest::ipoib(&A), 2, &f)
}

/// B, the router, advertises to all nodes: its link-layer address, the IPoIB MTU 2044
/// (draft-ietf-ipoib-ip-over-infiniband-06 §7) and the prefix 2001:db8::/64.
fn router_advert() -> Vec<u8> {
    let all_nodes = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
    let prefix = PrefixInfo {
        prefix_len: 64,
        on_link: true,
        autonomous: true,
        valid_lifetime: 86_400,
        preferred_lifetime: 14_400,
        prefix: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
    };
    let f = nd_frame(
        B.ipv6(),
        all_nodes,
        NdMessage::RouterAdvert {
            cur_hop_limit: 64,
            flags: 0,
            router_lifetime: 1800,
            reachable_time: 0,
            retrans_timer: 0,
        },
        &[
            NdOptionRepr::SourceLinkLayerAddr(hw_addr(&B)),
            NdOptionRepr::Mtu(crate::ipoib::DEFAULT_MTU as u32),
            NdOptionRepr::PrefixInformation(prefix),
        ],
    );
    let mgid = ipv6_mgid(all_nodes, P_KEY, Scope::LinkLocal);
    ud(&B, B.ud_qpn, UdDest::multicast(mgid, ALL_NODES_MLID), 3, &f)
}

/// A pings B over IPv6 (link-local addresses, no GRH).
fn icmpv6_echo() -> Vec<u8> {
    let data = pattern(56);
    let icmp = Icmpv6Repr {
        msg_type: Icmpv6Type::EchoRequest,
        code: 0,
        rest: u32::from(ECHO_ID) << 16 | 1,
        body: &data,
    };
    let f = frame(IpoibPayload::Ipv6(Ipv6Datagram {
        header: ipv6_header(A.ipv6(), B.ipv6(), 64),
        payload: IpPayload::Icmpv6(icmp),
    }));
    ud(&A, A.ud_qpn, UdDest::ipoib(&B), 6, &f)
}
