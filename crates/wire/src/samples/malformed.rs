//! Broken packets, each made from a good one by one change, CRCs recomputed where the point is
//! another error (so that only the intended check fails).

use super::ipoib::echo_frame;
use super::{connected, gsi, ud, Sample, UdDest, A, B, P_KEY, SM};
use crate::crc;
use crate::ib::{AethRepr, BthRepr, ExtHeaders, Opcode, Syndrome};
use crate::packet::fill_crcs;

pub(super) fn samples() -> Vec<Sample> {
    vec![
        Sample::new("truncated", truncated()),
        Sample::new("wrong_pkt_len", wrong_pkt_len()),
        Sample::new("bad_icrc", bad_icrc()),
        Sample::new("bad_vcrc", bad_vcrc()),
        Sample::new("pad_count_too_large", pad_count_too_large()),
        Sample::new("grh_paylen_wrong", grh_paylen_wrong()),
        Sample::new("mad_short", mad_short()),
        Sample::new("cm_req_a11_garbage_header", cm_req_a11_garbage()),
    ]
}

fn echo(global: bool) -> Vec<u8> {
    let f = echo_frame(&A, &B, true, 9, 56);
    let to = if global {
        UdDest::ipoib_global(&B)
    } else {
        UdDest::ipoib(&B)
    };
    ud(&A, A.ud_qpn, to, 9, &f)
}

/// Writes the VCRC of `b` again, leaving everything else (IBA 1 §7.8.2).
fn refresh_vcrc(b: &mut [u8]) {
    let n = b.len() - 2;
    let v = crc::vcrc(&b[..n]);
    b[n..].copy_from_slice(&v.to_le_bytes());
}

/// An echo request cut after 30 bytes: shorter than its LRH PktLen (IBA 1 §7.7).
fn truncated() -> Vec<u8> {
    let mut b = echo(false);
    b.truncate(30);
    b
}

/// PktLen one word more than the packet has (IBA 1 §7.7).
fn wrong_pkt_len() -> Vec<u8> {
    let mut b = echo(false);
    let pkt_len = u16::from_be_bytes([b[4], b[5]]) & 0x07ff;
    let v = (pkt_len + 1).to_be_bytes();
    b[4] = (b[4] & 0xf8) | (v[0] & 0x07);
    b[5] = v[1];
    refresh_vcrc(&mut b);
    b
}

/// One payload byte changed after the ICRC was computed; the VCRC is right for the bytes sent
/// (a corruption inside a switch that regenerates the VCRC; IBA 1 §7.8.1).
fn bad_icrc() -> Vec<u8> {
    let mut b = echo(false);
    let at = b.len() - 10;
    b[at] ^= 0x01;
    refresh_vcrc(&mut b);
    b
}

/// The VCRC's low byte flipped (IBA 1 §7.8.2).
fn bad_vcrc() -> Vec<u8> {
    let mut b = echo(false);
    let at = b.len() - 2;
    b[at] ^= 0xff;
    b
}

/// An RC ACK (no payload) claiming 3 pad bytes (IBA 1 §9.2: PadCnt cannot exceed the payload).
fn pad_count_too_large() -> Vec<u8> {
    let bth = BthRepr::new(Opcode::RC_ACKNOWLEDGE, P_KEY, A.cm_qpn, 5);
    let ext = ExtHeaders {
        aeth: Some(AethRepr {
            syndrome: Syndrome::Ack { credit_count: 31 },
            msn: 1,
        }),
        ..ExtHeaders::default()
    };
    let mut b = connected(&B, A.lid, bth, ext, &[]);
    b[9] |= 0x30;
    fill_crcs(&mut b).expect("lengths unchanged");
    b
}

/// GRH PayLen 4 bytes longer than the packet carries (IBA 1 §8.3).
fn grh_paylen_wrong() -> Vec<u8> {
    let mut b = echo(true);
    let paylen = u16::from_be_bytes([b[12], b[13]]) + 4;
    b[12..14].copy_from_slice(&paylen.to_be_bytes());
    fill_crcs(&mut b).expect("lengths unchanged");
    b
}

/// A ClassPortInfo Get cut to 100 bytes: QP1 carries whole 256-byte MADs only (IBA 1 §13.4.1).
fn mad_short() -> Vec<u8> {
    let mad = crate::sa::SaMadRepr::class_port_info_get(0x0000_0001_0000_00ff).to_bytes();
    gsi(&A, &SM, 0x1ff, &mad[..100])
}

/// A REQ to an Annex A11 service ID whose private data header has IP version 7 and garbage
/// addresses (Annex A11 §A11.4.3: only 4 and 6 are defined).
fn cm_req_a11_garbage() -> Vec<u8> {
    let mut req = super::cm::a11_req_v4();
    req.private_data[1] = 0x70;
    req.private_data[4..36].fill(0xa5);
    let s = super::cm::cm("", &A, &B, 0x2ff, crate::cm::CmMessage::Req(req));
    s.bytes
}
