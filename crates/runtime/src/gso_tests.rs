//! Tests of [`super`]: checked against the checksum computed word by word as RFC 1071 §4.1
//! writes it (16-bit words), not by the code under test.

use super::*;

/// RFC 1071 §4.1: the 16-bit ones' complement sum, complemented (also for the tests of
/// `crate::gro`).
pub(crate) fn rfc1071(data: &[u8]) -> u16 {
    let mut acc: u32 = 0;
    for w in data.chunks(2) {
        acc += u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]));
    }
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

// The running sum takes 64-bit little-endian words (`sum`): it must equal RFC 1071's 16-bit
// big-endian sum for every length (the 32-byte blocks, the 8-byte words, an odd last byte),
// every alignment of the data, all-zero data (the sum 0, not 0xffff) and all-ones data (every
// word carrying), and it must add to the running sum it is given.
#[test]
fn the_checksum_is_rfc_1071s_for_every_length_alignment_and_carry() {
    let data: Vec<u8> = (0..300u32).map(|i| (i * 151 + i / 7) as u8).collect();
    for (name, d) in [
        ("mixed", data),
        ("zeros", vec![0u8; 300]),
        ("ones", vec![0xffu8; 300]),
    ] {
        for start in 0..8 {
            for len in 0..=(d.len() - start).min(140) {
                let b = &d[start..start + len];
                assert_eq!(checksum(b), rfc1071(b), "{name} at {start}, {len} bytes");
            }
        }
    }
    // A running sum carried in (a pseudo-header's), and a long buffer whose sum wraps 64 bits
    // many times over.
    let long = vec![0xffu8; 65_536 + 5];
    assert_eq!(checksum(&long), rfc1071(&long));
    let (a, b) = (
        &[0x12u8, 0x34, 0xab][..],
        &[0xcdu8, 0xef, 0x01, 0x99, 0x77][..],
    );
    let mut both = a.to_vec();
    both.push(0); // `a`'s odd byte is padded on its own
    both.extend_from_slice(b);
    assert_eq!(!fold(sum(sum(0, a), b)), rfc1071(&both));
}

// The fast path (`sum_blocks`, an add-with-carry chain over 64-byte blocks on x86-64) against
// the word-by-word sum with the carry added at once (`sum_words`), for any bytes, any length
// (blocks and a remainder of words and bytes) and any running sum carried in below 2^48 (a
// pseudo-header's sums); and against RFC 1071's 16-bit sum itself.
proptest::proptest! {
    #[test]
    fn the_block_sum_is_the_word_sum(
        data in proptest::collection::vec(proptest::num::u8::ANY, 0..700),
        start in 0usize..8,
        acc in 0u64..(1 << 48),
    ) {
        let d = &data[start.min(data.len())..];
        proptest::prop_assert_eq!(sum(acc, d), sum_words(acc, d));
        proptest::prop_assert_eq!(checksum(d), rfc1071(d));
    }

    #[test]
    fn the_fixed_fold_is_the_loop(acc in proptest::num::u64::ANY) {
        proptest::prop_assert_eq!(fold(acc), fold_loop(acc));
    }
}

// The fold's edges: the largest sums, and those whose carries ripple through every step.
#[test]
fn the_fold_of_the_largest_sums_and_rippling_carries() {
    for acc in [
        0,
        0xffff,
        0x1_0000,
        0xffff_ffff,
        0x1_0000_fffe,
        0xffff_0000_ffff_ffff,
        0xffff_ffff_ffff_fffe,
        u64::MAX,
    ] {
        assert_eq!(fold(acc), fold_loop(acc), "{acc:#x}");
    }
}

/// The pseudo-header of an IPv4 or IPv6 packet's transport part (RFC 793 §3.1, RFC 8200 §8.1).
fn pseudo(p: &[u8], l4: usize) -> Vec<u8> {
    let len = (p.len() - l4) as u32;
    let mut v = Vec::new();
    if p[0] >> 4 == 4 {
        v.extend_from_slice(&p[12..20]);
        v.extend_from_slice(&[0, p[9]]);
        v.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        v.extend_from_slice(&p[8..40]);
        v.extend_from_slice(&len.to_be_bytes());
        v.extend_from_slice(&[0, 0, 0, p[6]]);
    }
    v
}

/// The transport checksum of `p` verifies (sum over pseudo-header and segment is all ones).
fn l4_valid(p: &[u8], l4: usize) -> bool {
    let mut all = pseudo(p, l4);
    all.extend_from_slice(&p[l4..]);
    rfc1071(&all) == 0
}

fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// A TCP super-packet as the kernel gives it with `TUN_F_CSUM | TUN_F_TSO4/6`: total length of
/// the whole, the checksum field holding only the pseudo-header's sum (partial).
fn tcp_super(v4: bool, data: &[u8], flags: u8) -> (VnetHdr, Vec<u8>) {
    let l4 = if v4 { 20 } else { 40 };
    let mut p = vec![0u8; l4 + 20];
    if v4 {
        p[0] = 0x45;
        p[2..4].copy_from_slice(&((l4 + 20 + data.len()) as u16).to_be_bytes());
        p[4..6].copy_from_slice(&0xfff0u16.to_be_bytes());
        p[6] = 0x40; // DF
        p[8] = 64;
        p[9] = TCP;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        let c = rfc1071(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
    } else {
        p[0] = 0x60;
        p[4..6].copy_from_slice(&((20 + data.len()) as u16).to_be_bytes());
        p[6] = TCP;
        p[7] = 64;
        p[8] = 0xfe;
        p[8 + 8..8 + 16].copy_from_slice(&[1; 8]);
        p[24] = 0xfe;
        p[24 + 8..24 + 16].copy_from_slice(&[2; 8]);
    }
    p[l4..l4 + 2].copy_from_slice(&5001u16.to_be_bytes());
    p[l4 + 2..l4 + 4].copy_from_slice(&40000u16.to_be_bytes());
    p[l4 + 4..l4 + 8].copy_from_slice(&0xffff_f000u32.to_be_bytes());
    p[l4 + 12] = 5 << 4;
    p[l4 + 13] = flags;
    p[l4 + 14..l4 + 16].copy_from_slice(&512u16.to_be_bytes());
    p.extend_from_slice(data);
    // Partial: the field holds the pseudo-header's folded sum (Linux `~csum_tcpudp_magic`).
    let ps = pseudo(&p, l4);
    let partial = !rfc1071(&ps);
    p[l4 + 16..l4 + 18].copy_from_slice(&partial.to_be_bytes());
    let hdr = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: if v4 { GSO_TCPV4 } else { GSO_TCPV6 },
        hdr_len: (l4 + 20) as u16,
        gso_size: if v4 { 1992 } else { 1972 },
        csum_start: l4 as u16,
        csum_offset: 16,
    };
    (hdr, p)
}

fn cut(hdr: &VnetHdr, p: &[u8], headroom: usize) -> Vec<Vec<u8>> {
    let mut segs = Vec::new();
    let n = segment(hdr, p, headroom, &mut |f| segs.push(f)).expect("segments");
    assert_eq!(n, segs.len());
    segs
}

#[test]
fn a_tcp_super_packet_leaves_as_segments_of_at_most_the_mtu_with_valid_checksums() {
    for v4 in [true, false] {
        let data = payload(65_000);
        let (hdr, p) = tcp_super(v4, &data, 0x18 | 0x01 | 0x80); // PSH ACK FIN CWR
        let l4 = usize::from(hdr.csum_start);
        let segs = cut(&hdr, &p, 4);
        assert_eq!(segs.len(), data.len().div_ceil(usize::from(hdr.gso_size)));
        let mut stream = Vec::new();
        for (i, f) in segs.iter().enumerate() {
            assert_eq!(&f[..4], &[0; 4], "headroom");
            let s = &f[4..];
            assert!(s.len() <= 2044, "segment {i}: {} bytes", s.len());
            if v4 {
                assert_eq!(u16::from_be_bytes([s[2], s[3]]) as usize, s.len());
                assert_eq!(rfc1071(&s[..20]), 0, "IPv4 header checksum of {i}");
                assert_eq!(
                    u16::from_be_bytes([s[4], s[5]]),
                    0xfff0u16.wrapping_add(i as u16)
                );
            } else {
                assert_eq!(u16::from_be_bytes([s[4], s[5]]) as usize, s.len() - 40);
            }
            assert!(l4_valid(s, l4), "TCP checksum of segment {i}");
            let seq = u32::from_be_bytes([s[l4 + 4], s[l4 + 5], s[l4 + 6], s[l4 + 7]]);
            assert_eq!(seq, 0xffff_f000u32.wrapping_add(stream.len() as u32));
            let last = i + 1 == segs.len();
            assert_eq!(s[l4 + 13] & 0x09 != 0, last, "FIN/PSH only on the last");
            assert_eq!(s[l4 + 13] & 0x80 != 0, i == 0, "CWR only on the first");
            assert_eq!(s[l4 + 13] & 0x10, 0x10, "ACK on all");
            stream.extend_from_slice(&s[l4 + 20..]);
        }
        assert_eq!(stream, data, "the same byte stream");
    }
}

#[test]
fn a_udp_super_packet_is_cut_into_datagrams_with_their_own_length_and_checksum() {
    let data = payload(5000);
    let mut p = vec![0u8; 28];
    p[0] = 0x45;
    p[8] = 64;
    p[9] = UDP;
    p[12..16].copy_from_slice(&[10, 0, 0, 1]);
    p[16..20].copy_from_slice(&[10, 0, 0, 2]);
    p[20..22].copy_from_slice(&53u16.to_be_bytes());
    p.extend_from_slice(&data);
    let hdr = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: GSO_UDP_L4,
        hdr_len: 28,
        gso_size: 1400,
        csum_start: 20,
        csum_offset: 6,
    };
    let segs = cut(&hdr, &p, 0);
    assert_eq!(segs.len(), 4);
    let mut all = Vec::new();
    for s in &segs {
        assert_eq!(u16::from_be_bytes([s[24], s[25]]) as usize, s.len() - 20);
        assert_eq!(rfc1071(&s[..20]), 0);
        assert!(l4_valid(s, 20));
        all.extend_from_slice(&s[28..]);
    }
    assert_eq!(all, data);
}

#[test]
fn an_ipv6_udp_super_packet_is_cut_with_the_ipv6_pseudo_header() {
    // `TUN_F_USO6`: a UDP_SEGMENT send over IPv6; each datagram's UDP length, IPv6 payload
    // length and checksum over the RFC 8200 §8.1 pseudo-header are its own.
    let data = payload(5000);
    let mut p = vec![0u8; 48];
    p[0] = 0x60;
    p[6] = UDP;
    p[7] = 64;
    p[8..10].copy_from_slice(&[0xfd, 0]);
    p[23] = 1;
    p[24..26].copy_from_slice(&[0xfd, 0]);
    p[39] = 2;
    p[40..42].copy_from_slice(&5353u16.to_be_bytes());
    p[42..44].copy_from_slice(&53u16.to_be_bytes());
    p.extend_from_slice(&data);
    let hdr = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: GSO_UDP_L4,
        hdr_len: 48,
        gso_size: 1400,
        csum_start: 40,
        csum_offset: 6,
    };
    let segs = cut(&hdr, &p, 0);
    assert_eq!(segs.len(), 4);
    let mut all = Vec::new();
    for s in &segs {
        assert_eq!(u16::from_be_bytes([s[4], s[5]]) as usize, s.len() - 40);
        assert_eq!(u16::from_be_bytes([s[44], s[45]]) as usize, s.len() - 40);
        assert_ne!(
            u16::from_be_bytes([s[46], s[47]]),
            0,
            "no zero UDP checksum in IPv6"
        );
        assert!(l4_valid(s, 40));
        all.extend_from_slice(&s[48..]);
    }
    assert_eq!(all, data);
}

#[test]
fn a_partial_checksum_is_completed_in_place() {
    let (mut hdr, mut p) = tcp_super(true, &payload(1001), 0x18);
    hdr.gso_type = GSO_NONE;
    assert!(!l4_valid(&p, 20));
    complete_checksum(&hdr, &mut p).expect("complete");
    assert!(l4_valid(&p, 20));
    let (mut hdr, mut p) = tcp_super(false, &payload(1001), 0x18);
    hdr.gso_type = GSO_NONE;
    assert!(!l4_valid(&p, 40));
    complete_checksum(&hdr, &mut p).expect("complete");
    assert!(l4_valid(&p, 40), "IPv6");
}

#[test]
fn headers_that_point_outside_the_packet_are_refused() {
    let (mut hdr, p) = tcp_super(true, &payload(100), 0x10);
    hdr.csum_start = 200;
    assert_eq!(segment(&hdr, &p, 0, &mut |_| {}), Err(GsoError::Malformed));
    assert_eq!(
        complete_checksum(&hdr, &mut p.clone()),
        Err(GsoError::Malformed)
    );
    hdr.gso_type = 3; // UFO, never asked for
    assert_eq!(segment(&hdr, &p, 0, &mut |_| {}), Err(GsoError::Unknown(3)));
    let (hdr, p) = tcp_super(false, &payload(100), 0x10);
    let v4_kind = VnetHdr {
        gso_type: GSO_TCPV4,
        ..hdr
    };
    assert_eq!(
        segment(&v4_kind, &p, 0, &mut |_| {}),
        Err(GsoError::Malformed)
    );
}

#[test]
fn the_header_reads_back_as_written() {
    let h = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: GSO_TCPV4 | GSO_ECN,
        hdr_len: 52,
        gso_size: 1992,
        csum_start: 20,
        csum_offset: 16,
    };
    assert_eq!(VnetHdr::parse(&h.to_bytes()), h);
    assert!(h.is_gso());
    assert!(!VnetHdr::parse(&PLAIN_HDR).is_gso());
}

#[test]
fn a_segment_that_would_not_fit_an_ip_length_field_is_refused() {
    // A read of MAX_PACKET (65,536) bytes with a gso_size larger than its payload would make
    // one segment of 65,536 bytes whose IPv4 total length (or IPv6 payload length) wraps to
    // a wrong value; an IP packet has at most 65,535 (RFC 791 §3.1, RFC 8200 §3).
    for v4 in [true, false] {
        let (mut hdr, mut p) = tcp_super(v4, &payload(100), 0x10);
        let head = p.len() - 100;
        let extra = if v4 { 65_536 } else { 65_535 + 40 + 1 } - p.len();
        p.extend(payload(extra));
        hdr.gso_size = u16::MAX;
        let mut lens = Vec::new();
        let r = segment(&hdr, &p, 0, &mut |f| lens.push(f.len()));
        assert_eq!(
            r,
            Err(GsoError::Malformed),
            "v4 {v4}: {lens:?}, head {head}"
        );
        assert!(lens.is_empty());
    }
}
