//! Sample packets of every kind, for tests, benchmarks and demos: complete InfiniBand packets (LRH
//! through VCRC, lengths, pad and both CRCs computed by [`PacketRepr`]) of every kind this project
//! sends or receives, and a set of malformed ones.
//!
//! The packets form one small, consistent story on a three-port fabric (see [`SM`], [`A`], [`B`]):
//! IPoIB over UD (ICMP, multicast UDP, ARP, neighbour discovery), the SA MADs of a multicast join,
//! a path query and trap subscriptions, the SMPs that read NodeInfo and PortInfo, the CM MADs of IPoIB-CM, Annex A11 and iWarp-emulation
//! connections, and RC/UC traffic on them. A [`crate::decode::Decoder`] fed [`all`] in order
//! therefore sees each CM REQ before the answers that refer to it.
//!
//! Invariants: the bytes are deterministic (no randomness, no clock); every packet of [`all`]
//! parses with [`crate::packet::Packet::parse`] with both CRCs good and decodes without an error;
//! every packet of [`malformed`] fails to parse, has a bad CRC, or decodes with an error.
//! Sample names are stable snake_case identifiers, unique within each list.

use crate::ib::{BthRepr, DethRepr, ExtHeaders, GrhRepr, LrhRepr};
use crate::keys::{PKey, QKey};
use crate::packet::PacketRepr;
use crate::types::{Gid, Guid};
use std::net::{Ipv4Addr, Ipv6Addr};

mod cm;
mod ipoib;
mod malformed;
mod rc;
mod sa;
mod sma;
mod smp;

/// One sample packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// A stable snake_case name (`ud_icmp_echo_request`, `cm_req_ipoib_cm`, ...).
    pub name: &'static str,
    /// The whole packet, LRH first byte through VCRC.
    pub bytes: Vec<u8>,
}

impl Sample {
    fn new(name: &'static str, bytes: Vec<u8>) -> Sample {
        Sample { name, bytes }
    }
}

/// Every well-formed sample, in the order a capture would show them (CM REQs before their
/// answers).
pub fn all() -> Vec<Sample> {
    let mut v = ipoib::samples();
    v.extend(sa::samples());
    v.extend(smp::samples());
    v.extend(sma::samples());
    v.extend(cm::samples());
    v.extend(rc::samples());
    v
}

/// Broken packets: truncated, wrong PktLen, bad ICRC, bad VCRC, PadCnt too large, wrong GRH
/// PayLen, a MAD shorter than 256 bytes, a CM REQ with a garbage Annex A11 header.
pub fn malformed() -> Vec<Sample> {
    malformed::samples()
}

/// The sample of [`all`] or [`malformed`] called `name`.
pub fn find(name: &str) -> Option<Sample> {
    all()
        .into_iter()
        .chain(malformed())
        .find(|s| s.name == name)
}

/// A port of the sample fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    /// Base LID.
    pub lid: u16,
    /// Port GUID; the port GID is fe80::/64 + GUID.
    pub guid: u64,
    /// The IPoIB UD QPN.
    pub ud_qpn: u32,
    /// The QPN of the IPoIB-CM RC QP this port uses in the samples.
    pub cm_qpn: u32,
    /// Local communication ID of this port's first CM connection.
    pub comm_id: u32,
    /// IPv4 address of the IPoIB interface.
    pub ipv4: Ipv4Addr,
}

impl Node {
    /// The port GID (default subnet prefix).
    pub const fn gid(&self) -> Gid {
        Gid::new(Gid::DEFAULT_SUBNET_PREFIX, self.guid)
    }

    /// The IPv6 link-local address of the IPoIB interface (draft-ietf-ipoib-ip-over-infiniband-06
    /// §8.1: from the port GUID).
    pub fn ipv6(&self) -> Ipv6Addr {
        crate::ipoib::addr::link_local_from_guid(Guid(self.guid))
    }
}

/// The subnet manager's port (LID 1): answers SA MADs and sends traps.
pub const SM: Node = Node {
    lid: 1,
    guid: 0x0002_c903_0000_0001,
    ud_qpn: 0x40,
    cm_qpn: 0,
    comm_id: 0,
    ipv4: Ipv4Addr::new(10, 0, 0, 254),
};

/// Host A (LID 2, 10.0.0.1): the active side of every connection.
pub const A: Node = Node {
    lid: 2,
    guid: 0x0002_c903_0000_0002,
    ud_qpn: 0x48,
    cm_qpn: 0x4a,
    comm_id: 0x1a2b_3c4d,
    ipv4: Ipv4Addr::new(10, 0, 0, 1),
};

/// Host B (LID 3, 10.0.0.2): the passive side, and the IPv6 router.
pub const B: Node = Node {
    lid: 3,
    guid: 0x0002_c903_0000_0003,
    ud_qpn: 0x49,
    cm_qpn: 0x4b,
    comm_id: 0x5e6f_7081,
    ipv4: Ipv4Addr::new(10, 0, 0, 2),
};

/// The default partition (full member).
pub const P_KEY: PKey = PKey::DEFAULT;
/// The MLID the SA gives the broadcast group in the samples.
pub const BROADCAST_MLID: u16 = 0xc000;

/// Emits a packet; the sample parts always fit together.
fn emit(r: &PacketRepr<'_>) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut b).expect("sample packet parts fit together");
    b
}

/// An LRH from `src` to `dlid`, VL 0, SL 0 (LNH and PktLen are computed by the builder).
fn lrh(src: &Node, dlid: u16) -> LrhRepr {
    LrhRepr::local(0, 0, dlid, src.lid)
}

/// A GRH from `src`'s port GID to `dgid`, hop limit 0 (subnet-local, as Linux uses the hop limit
/// of the group's MCMemberRecord, which OpenSM sets to 0).
fn grh(src: &Node, dgid: Gid) -> GrhRepr {
    GrhRepr::new(src.gid(), dgid, 0)
}

/// Where a UD datagram goes.
#[derive(Debug, Clone, Copy)]
struct UdDest {
    dlid: u16,
    dgid: Option<Gid>,
    qpn: u32,
    qkey: QKey,
}

impl UdDest {
    /// To `n`'s IPoIB UD QP, without a GRH.
    fn ipoib(n: &Node) -> UdDest {
        UdDest {
            dlid: n.lid,
            dgid: None,
            qpn: n.ud_qpn,
            qkey: QKey::IPOIB_BROADCAST,
        }
    }

    /// To `n`'s IPoIB UD QP, with a GRH.
    fn ipoib_global(n: &Node) -> UdDest {
        UdDest {
            dgid: Some(n.gid()),
            ..UdDest::ipoib(n)
        }
    }

    /// To multicast group `mgid` at `mlid` (IBA 1 §9.2: DestQP 0xFFFFFF; a GRH always).
    fn multicast(mgid: Gid, mlid: u16) -> UdDest {
        UdDest {
            dlid: mlid,
            dgid: Some(mgid),
            qpn: BthRepr::MULTICAST_QPN,
            qkey: QKey::IPOIB_BROADCAST,
        }
    }

    /// To `n`'s QP1 (the GSI: SA and CM MADs).
    fn gsi(n: &Node) -> UdDest {
        UdDest {
            dlid: n.lid,
            dgid: None,
            qpn: 1,
            qkey: QKey::GSI,
        }
    }
}

/// A UD SEND Only datagram from `src_qp` of `src` to `to`, with PSN `psn`.
fn ud(src: &Node, src_qp: u32, to: UdDest, psn: u32, payload: &[u8]) -> Vec<u8> {
    let bth = BthRepr::new(crate::ib::Opcode::UD_SEND_ONLY, P_KEY, to.qpn, psn);
    let deth = DethRepr {
        qkey: to.qkey,
        src_qp,
    };
    let g = to.dgid.map(|d| grh(src, d));
    emit(&PacketRepr::ud_send_only(
        lrh(src, to.dlid),
        g,
        bth,
        deth,
        payload,
    ))
}

/// A MAD from `src`'s QP1 to `dst`'s QP1.
fn gsi(src: &Node, dst: &Node, psn: u32, mad: &[u8]) -> Vec<u8> {
    ud(src, 1, UdDest::gsi(dst), psn, mad)
}

/// An RC/UC packet from `src` to `dst_lid`/`dest_qp`.
fn connected(src: &Node, dst_lid: u16, bth: BthRepr, ext: ExtHeaders, payload: &[u8]) -> Vec<u8> {
    emit(&PacketRepr {
        lrh: lrh(src, dst_lid),
        grh: None,
        bth: Some(bth),
        ext,
        payload,
    })
}

/// `n` bytes 0x10, 0x11, ... (wrapping), as ping fills its data.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (0x10 + i) as u8).collect()
}

#[cfg(test)]
mod tests;
