//! Tests of [`super`]: segments made by [`crate::gso::segment`] from a super-packet, coalesced
//! back; checksums checked word by word as RFC 1071 §4.1 writes it.

use super::*;
use crate::gso::tests::rfc1071;
use crate::gso::{complete_checksum, segment, GSO_NONE};

fn tcp_valid(p: &[u8]) -> bool {
    let mut all = p[12..20].to_vec();
    all.extend_from_slice(&[0, 6]);
    all.extend_from_slice(&((p.len() - 20) as u16).to_be_bytes());
    all.extend_from_slice(&p[20..]);
    rfc1071(&p[..20]) == 0 && rfc1071(&all) == 0
}

/// Segments of `data` (ACK, PSH on the last) as a TSO NIC sends them, 1992 bytes each.
fn segments(data: &[u8], seq: u32) -> Vec<Vec<u8>> {
    let mut p = vec![0u8; 52];
    p[0] = 0x45;
    p[6] = 0x40;
    p[8] = 64;
    p[9] = 6;
    p[12..16].copy_from_slice(&[10, 0, 0, 1]);
    p[16..20].copy_from_slice(&[10, 0, 0, 2]);
    p[20..22].copy_from_slice(&40000u16.to_be_bytes());
    p[22..24].copy_from_slice(&5201u16.to_be_bytes());
    p[24..28].copy_from_slice(&seq.to_be_bytes());
    p[28..32].copy_from_slice(&77u32.to_be_bytes());
    p[32] = 8 << 4; // 12 bytes of options (timestamps)
    p[33] = 0x18;
    p[34..36].copy_from_slice(&512u16.to_be_bytes());
    p[40..52].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 7]);
    p.extend_from_slice(data);
    let hdr = VnetHdr {
        gso_type: GSO_TCPV4,
        gso_size: 1992 - 12,
        csum_start: 20,
        csum_offset: 16,
        ..VnetHdr::default()
    };
    let mut out = Vec::new();
    segment(&hdr, &p, 0, &mut |f| out.push(f)).expect("segments");
    out
}

fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 13 + i / 253) as u8).collect()
}

#[test]
fn in_order_segments_coalesce_into_one_gso_packet_of_the_same_bytes() {
    let data = payload(60_000);
    let segs = segments(&data, 0xffff_ff00);
    assert!(segs.iter().all(|s| tcp_valid(s)));
    assert_eq!(run_len(&segs), segs.len());
    let v = coalesce(&segs);
    let mut h = [0u8; VNET_HDR_LEN];
    h.copy_from_slice(&v[..VNET_HDR_LEN]);
    let hdr = VnetHdr::parse(&h);
    assert_eq!(hdr.gso_type, GSO_TCPV4);
    assert_eq!(hdr.flags, F_NEEDS_CSUM);
    assert_eq!(usize::from(hdr.gso_size), segs[0].len() - 52);
    let mut p = v[VNET_HDR_LEN..].to_vec();
    assert_eq!(u16::from_be_bytes([p[2], p[3]]) as usize, p.len());
    assert_eq!(&p[52..], &data[..], "the same byte stream");
    assert_eq!(p[33], 0x18, "PSH of the last");
    assert_eq!(&p[24..28], &0xffff_ff00u32.to_be_bytes());
    // What the kernel would compute from the partial checksum verifies.
    complete_checksum(
        &VnetHdr {
            gso_type: GSO_NONE,
            ..hdr
        },
        &mut p,
    )
    .unwrap();
    assert!(tcp_valid(&p));
}

#[test]
fn a_run_ends_at_a_bad_checksum_a_gap_or_another_connection() {
    let data = payload(10_000);
    let segs = segments(&data, 1);
    let mut bad = segs.clone();
    bad[3][60] ^= 1;
    assert_eq!(run_len(&bad), 3);
    assert_eq!(run_len(&bad[3..]), 1, "a bad segment goes alone");
    let mut gap = segs.clone();
    gap.remove(2);
    assert_eq!(run_len(&gap), 2);
    let mut other = segs.clone();
    other[2][21] ^= 1; // another port
    assert_eq!(run_len(&other), 2);
    // The last (PSH) ends a run: nothing follows it.
    let mut two = segments(&data, 1);
    two.extend(segments(&data, 1 + data.len() as u32));
    assert_eq!(run_len(&two), segs.len());
}

#[test]
fn a_non_tcp_packet_passes_alone_and_unchanged() {
    let mut udp = vec![0u8; 100];
    udp[0] = 0x45;
    udp[2..4].copy_from_slice(&100u16.to_be_bytes());
    udp[9] = 17;
    let segs = segments(&payload(5000), 1);
    let mixed = [udp.clone(), segs[0].clone(), segs[1].clone()];
    assert_eq!(run_len(&mixed), 1);
    assert_eq!(run_len(&mixed[1..]), 2);
    assert_eq!(mixed[0], udp);
    assert_eq!(run_len::<Vec<u8>>(&[]), 0);
}

/// `p` with IP identification `id` and DF as given, its header checksum made again.
fn with_id(p: &[u8], id: u16, df: bool) -> Vec<u8> {
    let mut p = p.to_vec();
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[6] = if df { 0x40 } else { 0 };
    p[10..12].copy_from_slice(&[0, 0]);
    let c = rfc1071(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p
}

#[test]
fn segments_coalesce_only_with_the_ip_ids_linux_gro_takes() {
    // inet_gro_receive (net/ipv4/af_inet.c): the IDs increase by one per segment, or, with
    // DF, stay the same; anything else ends the run (the kernel would cut the packet again
    // with IDs first + index when it forwards it).
    let segs = segments(&payload(8000), 1);
    let ids = |ids: &[u16], df: bool| -> Vec<Vec<u8>> {
        segs.iter()
            .zip(ids)
            .map(|(s, &id)| with_id(s, id, df))
            .collect()
    };
    assert_eq!(run_len(&ids(&[7, 8, 9, 10], false)), 4, "incrementing");
    assert_eq!(run_len(&ids(&[0xffff, 0, 1, 2], false)), 4, "wrapping");
    assert_eq!(run_len(&ids(&[7, 7, 7, 7], true)), 4, "fixed, DF");
    assert_eq!(run_len(&ids(&[7, 7, 7, 7], false)), 1, "fixed without DF");
    assert_eq!(run_len(&ids(&[7, 8, 30, 31], false)), 2, "a jump");
    assert_eq!(run_len(&ids(&[5, 900, 3, 77], true)), 1, "random, DF");
    assert_eq!(
        run_len(&ids(&[7, 8, 8, 9], true)),
        2,
        "incrementing, then fixed"
    );
    assert_eq!(
        run_len(&ids(&[7, 7, 8, 9], true)),
        2,
        "fixed, then incrementing"
    );
}
