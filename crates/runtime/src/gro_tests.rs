//! Tests of [`super`]: segments made by [`crate::gso::segment`] from a super-packet, coalesced
//! back; checksums checked word by word as RFC 1071 §4.1 writes it.

use super::*;
use crate::gso::tests::rfc1071;
use crate::gso::{complete_checksum, segment, GSO_NONE};
use proptest::prelude::*;

/// The TCP pseudo-header of `p` (RFC 793 §3.1; RFC 8200 §8.1: addresses, 32-bit upper-layer
/// length, three zeros, next header), built byte by byte.
fn pseudo(p: &[u8]) -> Vec<u8> {
    if p[0] >> 4 == 4 {
        let mut v = p[12..20].to_vec();
        v.extend_from_slice(&[0, 6]);
        v.extend_from_slice(&((p.len() - 20) as u16).to_be_bytes());
        v
    } else {
        let mut v = p[8..40].to_vec();
        v.extend_from_slice(&((p.len() - 40) as u32).to_be_bytes());
        v.extend_from_slice(&[0, 0, 0, 6]);
        v
    }
}

/// IP header bytes of `p` (no IPv4 options, no IPv6 extension headers in these tests).
fn ip_len(p: &[u8]) -> usize {
    if p[0] >> 4 == 4 {
        20
    } else {
        40
    }
}

/// The IPv4 header checksum (if IPv4) and the TCP checksum of `p` verify.
fn tcp_valid(p: &[u8]) -> bool {
    let ip = ip_len(p);
    let mut all = pseudo(p);
    all.extend_from_slice(&p[ip..]);
    (ip == 40 || rfc1071(&p[..20]) == 0) && rfc1071(&all) == 0
}

/// `p` with its TCP checksum computed again (after a change to its headers).
fn fix_tcp(mut p: Vec<u8>) -> Vec<u8> {
    let ip = ip_len(&p);
    p[ip + 16..ip + 18].copy_from_slice(&[0, 0]);
    let mut all = pseudo(&p);
    all.extend_from_slice(&p[ip..]);
    let c = rfc1071(&all);
    p[ip + 16..ip + 18].copy_from_slice(&c.to_be_bytes());
    p
}

/// IPv4 segments of `data` (ACK, PSH on the last) as a TSO NIC sends them, 1980 payload bytes
/// each (an MSS of 1992 less 12 bytes of timestamps).
fn segments(data: &[u8], seq: u32) -> Vec<Vec<u8>> {
    segments_of(true, data, seq, 1992 - 12)
}

/// IPv4 or IPv6 segments of `data` with `mss` payload bytes each (IPv6: traffic class 0x28,
/// flow label 0x12345, hop limit 64).
fn segments_of(v4: bool, data: &[u8], seq: u32, mss: u16) -> Vec<Vec<u8>> {
    let ip = if v4 { 20 } else { 40 };
    let mut p = vec![0u8; ip + 32];
    if v4 {
        p[0] = 0x45;
        p[6] = 0x40;
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
    } else {
        p[..4].copy_from_slice(&[0x62, 0x81, 0x23, 0x45]);
        p[6] = 6;
        p[7] = 64;
        p[8..10].copy_from_slice(&[0xfd, 0]);
        p[23] = 1;
        p[24..26].copy_from_slice(&[0xfd, 0]);
        p[39] = 2;
    }
    let t = &mut p[ip..];
    t[0..2].copy_from_slice(&40000u16.to_be_bytes());
    t[2..4].copy_from_slice(&5201u16.to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&77u32.to_be_bytes());
    t[12] = 8 << 4; // 12 bytes of options (timestamps)
    t[13] = 0x18;
    t[14..16].copy_from_slice(&512u16.to_be_bytes());
    t[20..32].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 7]);
    p.extend_from_slice(data);
    let hdr = VnetHdr {
        gso_type: if v4 { GSO_TCPV4 } else { GSO_TCPV6 },
        gso_size: mss,
        csum_start: ip as u16,
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

/// The virtio header and IP packet of a coalesced write.
fn split(v: &[u8]) -> (VnetHdr, Vec<u8>) {
    let mut h = [0u8; VNET_HDR_LEN];
    h.copy_from_slice(&v[..VNET_HDR_LEN]);
    (VnetHdr::parse(&h), v[VNET_HDR_LEN..].to_vec())
}

#[test]
fn in_order_ipv6_segments_coalesce_into_one_tcpv6_gso_packet() {
    // ipv6_gro_receive (net/ipv6/ip6_offload.c) with tcp_gro_receive; tcp6_gro_complete
    // (net/ipv6/tcpv6_offload.c) leaves the pseudo-header's sum in the checksum field.
    let data = payload(50_000);
    let segs = segments_of(false, &data, 0xffff_ff00, 1400);
    assert!(segs.iter().all(|s| tcp_valid(s)));
    assert_eq!(run_len(&segs), segs.len());
    let (hdr, mut p) = split(&coalesce(&segs));
    assert_eq!(
        hdr,
        VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV6,
            hdr_len: 40 + 32,
            gso_size: 1400,
            csum_start: 40,
            csum_offset: 16,
        }
    );
    assert_eq!(usize::from(u16::from_be_bytes([p[4], p[5]])), p.len() - 40);
    assert_eq!(&p[72..], &data[..], "the same byte stream");
    assert_eq!(&p[..4], &segs[0][..4], "version, traffic class, flow label");
    assert_eq!(
        &p[6..40],
        &segs[0][6..40],
        "next header, hop limit, addresses"
    );
    assert_eq!(p[40 + 13], 0x18, "PSH of the last");
    assert_eq!(&p[44..48], &0xffff_ff00u32.to_be_bytes());
    // The field holds the folded sum of the pseudo-header (RFC 8200 §8.1), nothing else.
    let want = !rfc1071(&pseudo(&p));
    assert_eq!(u16::from_be_bytes([p[56], p[57]]), want);
    // What the kernel would compute from it (sum from csum_start on, complemented) verifies.
    let c = rfc1071(&p[40..]);
    p[56..58].copy_from_slice(&c.to_be_bytes());
    assert!(tcp_valid(&p));
}

#[test]
fn ipv6_segments_coalesce_only_when_every_field_linux_compares_agrees() {
    let segs = segments_of(false, &payload(6000), 1, 1400);
    assert_eq!((segs.len(), run_len(&segs)), (5, 5));
    // The third segment changed by `f` (its TCP checksum made again): the run stops before it.
    let cut = |what: &str, f: &dyn Fn(&mut Vec<u8>)| {
        let mut v = segs.clone();
        f(&mut v[2]);
        v[2] = fix_tcp(std::mem::take(&mut v[2]));
        assert!(tcp_valid(&v[2]), "{what}");
        assert_eq!(run_len(&v), 2, "{what}");
    };
    cut("traffic class", &|p| p[1] ^= 0x10);
    cut("flow label", &|p| p[3] ^= 1);
    cut("hop limit", &|p| p[7] = 63);
    cut("source address", &|p| p[23] = 9);
    cut("destination address", &|p| p[39] = 9);
    cut("payload length", &|p| p[5] ^= 2);
    cut("source port", &|p| p[41] ^= 1);
    cut("acknowledgment", &|p| p[51] ^= 1);
    cut("window", &|p| p[55] ^= 1);
    cut("option", &|p| p[67] ^= 1);
    cut("sequence number", &|p| p[47] ^= 1);
    cut("URG", &|p| p[53] |= 0x20);
    cut("ECE", &|p| p[53] |= 0x40);
    cut("no ACK", &|p| p[53] &= !0x10);
    // Not TCP right after the IPv6 header: a Hop-by-Hop Options header (PadN) in front of
    // TCP (RFC 8200 §4.3). Linux would compare it byte by byte; we write such segments alone.
    let hop_by_hop = |p: &[u8]| {
        let mut q = p[..40].to_vec();
        q[6] = 0;
        q.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]);
        q.extend_from_slice(&p[40..]);
        let len = (q.len() - 40) as u16;
        q[4..6].copy_from_slice(&len.to_be_bytes());
        q
    };
    let ext: Vec<Vec<u8>> = segs.iter().map(|p| hop_by_hop(p)).collect();
    assert_eq!(run_len(&ext), 1);
    let mut v = segs.clone();
    v[2] = ext[2].clone();
    assert_eq!(run_len(&v), 2, "extension header");
    // A bad TCP checksum (the field as delivered) ends the run; a bad first goes alone.
    let mut bad = segs.clone();
    bad[2][100] ^= 1;
    assert_eq!(run_len(&bad), 2);
    assert_eq!(run_len(&bad[2..]), 1);
    // A PSH in the middle ends the run after it; a short segment ends it with itself.
    let mut psh = segs.clone();
    psh[1][53] |= 0x08;
    psh[1] = fix_tcp(std::mem::take(&mut psh[1]));
    assert_eq!(run_len(&psh), 2);
    let mut short = segments_of(false, &payload(1000), 1 + 2800, 1400).remove(0);
    short[53] &= !0x08;
    let next = segments_of(false, &payload(2800), 1 + 3800, 1400).remove(0);
    let v = [segs[0].clone(), segs[1].clone(), fix_tcp(short), next];
    assert_eq!(run_len(&v), 3);
    // IPv4 and IPv6 never share a run.
    let v4 = segments_of(true, &payload(6000), 1, 1400);
    let mixed = [v4[0].clone(), v4[1].clone(), segs[2].clone()];
    assert_eq!(run_len(&mixed), 2);
    let mixed = [segs[0].clone(), segs[1].clone(), v4[2].clone()];
    assert_eq!(run_len(&mixed), 2);
}

#[test]
fn a_run_stops_below_65536_bytes_of_ip_packet() {
    // Linux's GRO stops below gro_max_size (65,536 by default); the IPv6 payload length and
    // IPv4 total length fit 16 bits.
    for v4 in [true, false] {
        let segs = segments_of(v4, &payload(200_000), 1, 1400);
        let n = run_len(&segs);
        let ip = if v4 { 20 } else { 40 };
        let size = ip + 32 + n * 1400;
        assert!(
            size <= 65_535 && size + 1400 > 65_535,
            "{n} segments, v4 {v4}"
        );
        let (_, p) = split(&coalesce(&segs[..n]));
        assert_eq!(p.len(), size);
    }
}

/// Runs of `packets` as [`run_len`] finds them, each checked: a run of one is a packet as it
/// came; a longer one has segments that each verified, and its coalesced packet carries
/// their payloads in order behind the first's headers and completes to a valid checksum.
/// Returns the runs' lengths.
fn check_runs(packets: &[Vec<u8>]) -> Vec<usize> {
    let mut lens = Vec::new();
    let mut i = 0;
    while i < packets.len() {
        let n = run_len(&packets[i..]);
        assert!(n >= 1);
        let run = &packets[i..i + n];
        if n > 1 {
            assert!(run.iter().all(|p| tcp_valid(p)));
            let (hdr, mut p) = split(&coalesce(run));
            let head = usize::from(hdr.hdr_len);
            let ip = usize::from(hdr.csum_start);
            assert!(p.len() <= 65_535);
            let payloads: Vec<u8> = run.iter().flat_map(|s| s[head..].to_vec()).collect();
            assert_eq!(&p[head..], &payloads[..]);
            assert_eq!(usize::from(hdr.gso_size), run[0].len() - head);
            assert_eq!(
                u16::from_be_bytes([p[ip + 16], p[ip + 17]]),
                !rfc1071(&pseudo(&p))
            );
            let c = rfc1071(&p[ip..]);
            p[ip + 16..ip + 18].copy_from_slice(&c.to_be_bytes());
            assert!(tcp_valid(&p));
        }
        lens.push(n);
        i += n;
    }
    lens
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A stream cut into segments comes back in as few packets as 65,535 bytes allow; a byte
    /// flipped anywhere never makes a coalesced packet of bytes that did not verify.
    #[test]
    fn segments_of_a_stream_coalesce_back_and_a_flipped_byte_never_passes(
        v4 in any::<bool>(),
        len in 1usize..150_000,
        mss in 64u16..2000,
        seq in any::<u32>(),
        flip in any::<(usize, usize, u8)>(),
    ) {
        let data = payload(len);
        let segs = segments_of(v4, &data, seq, mss);
        let lens = check_runs(&segs);
        prop_assert_eq!(lens.iter().sum::<usize>(), segs.len());
        let head = if v4 { 52 } else { 72 };
        let most = (65_535 - head) / usize::from(mss);
        for &n in &lens[..lens.len() - 1] {
            prop_assert_eq!(n, most);
        }
        let mut bad = segs.clone();
        let k = flip.0 % bad.len();
        let at = flip.1 % bad[k].len();
        bad[k][at] ^= flip.2.max(1);
        check_runs(&bad);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Hostile input: segments cut short, lengthened or overwritten anywhere never make
    /// `run_len` or `coalesce` panic, and a run found still passes [`check_runs`].
    #[test]
    fn truncated_or_garbled_packets_never_panic(
        v4 in any::<bool>(),
        cuts in proptest::collection::vec((any::<usize>(), any::<usize>(), any::<u8>()), 1..6),
    ) {
        let mut segs = segments_of(v4, &payload(5000), 7, 1000);
        for (k, at, b) in cuts {
            let k = k % segs.len();
            match b % 3 {
                0 => {
                    let n = segs[k].len() + 1;
                    segs[k].truncate(at % n);
                }
                1 => segs[k].extend_from_slice(&[b; 3]),
                _ => {
                    let n = segs[k].len().max(1);
                    if let Some(x) = segs[k].get_mut(at % n) {
                        *x = b;
                    }
                }
            }
        }
        check_runs(&segs);
    }
}
