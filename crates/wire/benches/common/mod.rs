//! Packets for the benchmarks and for `examples/make_pcap.rs`, built with the crate's own builders
//! so that every CRC and checksum is right: UD IPoIB frames (ICMP echo, small and full 2048-byte
//! MTU, with and without GRH), an ARP broadcast, an SA PathRecord query on QP1, an RC ACK and a
//! connected-mode RC SEND Only carrying IPoIB.
//!
//! Shared by two targets, each of which uses part of it.
#![allow(dead_code)]

use ipoib_wire::describe::{Describer, Value};
use ipoib_wire::ib::{AethRepr, BthRepr, DethRepr, ExtHeaders, GrhRepr, LrhRepr, Opcode, Syndrome};
use ipoib_wire::ipoib::{
    ArpOperation, ArpRepr, EtherType, HwAddr, HwAddrFlags, Icmpv4Repr, IpPayload, IpProtocol,
    IpoibFrame, IpoibPayload, Ipv4Datagram, Ipv4Repr,
};
use ipoib_wire::packet::PacketRepr;
use ipoib_wire::sa::{PathRecordRepr, SaMadRepr};
use ipoib_wire::{Gid, PKey, QKey};
use std::net::Ipv4Addr;

/// IB MTU of the "full" frames: the payload after the transport headers is at most this.
pub const IB_MTU: usize = 2048;
/// IPoIB encapsulation header length.
const ENCAP_LEN: usize = 4;
/// IPv4 header + ICMP echo header.
const IP_ICMP_LEN: usize = 20 + 8;
/// ICMP echo data of the small frame: 100-byte packet without GRH (8 + 12 + 8 + 66 + 4 + 2).
pub const SMALL_ECHO_DATA: usize = 34;
/// ICMP echo data that fills the 2048-byte MTU (IPoIB MTU 2044 = 4 + 20 + 8 + 2016).
pub const FULL_ECHO_DATA: usize = IB_MTU - ENCAP_LEN - IP_ICMP_LEN;

fn gid(n: u64) -> Gid {
    Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_0000 | n)
}

/// The IPv4 broadcast group MGID (P_Key 0xffff, link-local scope).
fn broadcast_mgid() -> Gid {
    Gid::new(0xff12_401b_ffff_0000, 0x0000_0000_ffff_ffff)
}

fn lrh(dlid: u16, slid: u16) -> LrhRepr {
    LrhRepr::local(0, 0, dlid, slid)
}

/// An IPoIB frame (encapsulation header, IPv4, ICMP echo request with `data_len` bytes of data).
pub fn ping_payload(data_len: usize) -> Vec<u8> {
    let data: Vec<u8> = (0..data_len).map(|i| (i * 7 + 3) as u8).collect();
    let icmp = Icmpv4Repr::echo(true, 0x4d2, 1, &data);
    let f = IpoibFrame::new(
        IpoibPayload::Ipv4(Ipv4Datagram {
            header: Ipv4Repr {
                tos: 0,
                ident: 0x1c46,
                dont_frag: true,
                more_frags: false,
                frag_offset: 0,
                ttl: 64,
                protocol: IpProtocol::Icmp,
                src_addr: Ipv4Addr::new(10, 0, 0, 1),
                dst_addr: Ipv4Addr::new(10, 0, 0, 2),
                payload_len: icmp.buffer_len() as u16,
            },
            options: &[],
            payload: IpPayload::Icmpv4(icmp),
        }),
        EtherType::Ipv4,
    );
    let mut b = vec![0u8; f.buffer_len()];
    f.emit(&mut b).expect("ping frame emits");
    b
}

/// A UD SEND Only to QPN 0x48 (local) or to the broadcast group (global, with GRH) carrying
/// `payload`.
pub fn ud_repr(payload: &[u8], global: bool) -> PacketRepr<'_> {
    let (grh, dlid, qp) = if global {
        (
            Some(GrhRepr::new(gid(1), broadcast_mgid(), 0x40)),
            0xc001,
            BthRepr::MULTICAST_QPN,
        )
    } else {
        (None, 3, 0x48)
    };
    let bth = BthRepr::new(Opcode::UD_SEND_ONLY, PKey(0xffff), qp, 1);
    let deth = DethRepr {
        qkey: QKey(0x0b1b),
        src_qp: 0x49,
    };
    PacketRepr::ud_send_only(lrh(dlid, 1), grh, bth, deth, payload)
}

/// Emits a packet repr into a fresh buffer.
pub fn emit(r: &PacketRepr<'_>) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut b).expect("packet emits");
    b
}

/// A whole UD IPoIB ICMP packet.
pub fn ud_ping(data_len: usize, global: bool) -> Vec<u8> {
    let p = ping_payload(data_len);
    emit(&ud_repr(&p, global))
}

fn arp_broadcast() -> Vec<u8> {
    let arp = ArpRepr {
        operation: ArpOperation::Request,
        sender_hw: HwAddr::new(HwAddrFlags::RC, 0x49, gid(1)),
        sender_ip: Ipv4Addr::new(10, 0, 0, 1),
        target_hw: HwAddr::new(HwAddrFlags::NONE, 0, Gid::new(0, 0)),
        target_ip: Ipv4Addr::new(10, 0, 0, 2),
    };
    let f = IpoibFrame::new(IpoibPayload::Arp(arp), EtherType::Arp);
    let mut b = vec![0u8; f.buffer_len()];
    f.emit(&mut b).expect("arp emits");
    emit(&ud_repr(&b, true))
}

fn sa_path_query() -> Vec<u8> {
    let rec = PathRecordRepr {
        dgid: gid(2),
        sgid: gid(1),
        numb_path: 1,
        reversible: true,
        pkey: PKey(0xffff),
        ..PathRecordRepr::default()
    };
    // DGID, SGID, Reversible, NumbPath, P_Key (IBA 1 §15.2.5.16 component mask bits 2, 3, 11-13).
    let mad = SaMadRepr::path_get(0x1234_5678, rec, 0b11_1000_0000_1100).to_bytes();
    let bth = BthRepr::new(Opcode::UD_SEND_ONLY, PKey(0xffff), 1, 7);
    let deth = DethRepr {
        qkey: QKey(0x8001_0000),
        src_qp: 1,
    };
    emit(&PacketRepr::ud_send_only(lrh(1, 3), None, bth, deth, &mad))
}

fn rc_ack() -> Vec<u8> {
    let r = PacketRepr {
        lrh: lrh(3, 1),
        grh: None,
        bth: Some(BthRepr::new(Opcode::RC_ACKNOWLEDGE, PKey(0xffff), 0x52, 9)),
        ext: ExtHeaders {
            aeth: Some(AethRepr {
                syndrome: Syndrome::Ack { credit_count: 31 },
                msn: 4,
            }),
            ..ExtHeaders::default()
        },
        payload: &[],
    };
    emit(&r)
}

fn rc_send_ipoib(data_len: usize) -> Vec<u8> {
    let p = ping_payload(data_len);
    let r = PacketRepr {
        lrh: lrh(3, 1),
        grh: None,
        bth: Some(BthRepr::new(Opcode::RC_SEND_ONLY, PKey(0xffff), 0x52, 10)),
        ext: ExtHeaders::default(),
        payload: &p,
    };
    emit(&r)
}

/// A mixed set of packets as a capture of IPoIB traffic might hold: mostly UD IPoIB data, some
/// connected-mode data, ACKs, ARP and an SA query.
pub fn mixed() -> Vec<Vec<u8>> {
    vec![
        ud_ping(SMALL_ECHO_DATA, false),
        ud_ping(SMALL_ECHO_DATA, true),
        ud_ping(FULL_ECHO_DATA, false),
        ud_ping(FULL_ECHO_DATA, true),
        arp_broadcast(),
        sa_path_query(),
        rc_ack(),
        rc_send_ipoib(1000),
    ]
}

/// A describer that drops every field: measures the decoder alone.
#[derive(Debug, Default)]
pub struct Null;

impl Describer for Null {
    fn field(&mut self, _name: &str, _value: Value<'_>) {}
    fn enter(&mut self, _name: &str) {}
    fn leave(&mut self) {}
}
