//! Receive offload at the OS boundary (docs/LINUX-DEVICE.md "Offload at the TUN device"): a run
//! of in-order TCP segments of one connection (IPv4 or IPv6), delivered by the interface in one
//! turn, is written to a TUN device with offload as one GSO packet (`VIRTIO_NET_HDR_GSO_TCPV4`
//! or `_TCPV6`), so that the receiving kernel handles one packet where it would handle up to 32,
//! as a NIC doing LRO or the kernel's own GRO hands its stack one. Segments coalesce under the
//! conditions of Linux's `tcp_gro_receive` (net/ipv4/tcp_offload.c) and, for IPv4,
//! `inet_gro_receive` (net/ipv4/af_inet.c): same addresses, ports, IP TOS, TTL and DF, IP
//! identifications increasing by one per segment (or, with DF, all the same); for IPv6,
//! `ipv6_gro_receive` (net/ipv6/ip6_offload.c): same version, traffic class, flow label, next
//! header (TCP itself: a segment with extension headers goes alone), hop limit and addresses.
//! For both: consecutive sequence numbers, the same acknowledgment, header length, flags (ACK,
//! PSH only on the last), window and options, every segment but the last of the first's
//! payload size.
//!
//! Checksums: each segment's IPv4 header checksum and TCP checksum (over the IPv4 or IPv6
//! pseudo-header) are verified here, over the segment's bytes as the interface delivered them (a
//! segment that fails is written alone, and the kernel drops it as it always did). The coalesced
//! packet is written with `VIRTIO_NET_HDR_F_NEEDS_CSUM` and the pseudo-header's sum in its
//! checksum field, which Linux takes as a checksum still to be computed (`CHECKSUM_PARTIAL`),
//! i.e. not verified again: what it would verify are exactly the bytes verified here, copied
//! unchanged since. Pure functions, no IO.

use crate::gso::{checksum, VnetHdr, F_NEEDS_CSUM, GSO_TCPV4, GSO_TCPV6, VNET_HDR_LEN};

/// IP header bytes of the segments that coalesce: IPv4 without options, IPv6 without
/// extension headers.
const IPV4: usize = 20;
const IPV6: usize = 40;
/// The largest IP packet a run makes (Linux's `gro_max_size`, 65,536, is a bound it stays
/// below; the IPv4 total length and the IPv6 payload length fit their 16 bits).
const MAX_PACKET: usize = 65_535;

/// One TCP segment that may coalesce.
#[derive(Debug, Clone, Copy)]
struct Seg {
    /// Bytes of the IP header ([`IPV4`] or [`IPV6`]), where TCP's starts.
    ip: usize,
    /// Bytes of the IP and TCP headers.
    head: usize,
    seq: u32,
    payload: usize,
    psh: bool,
}

/// `p` as a segment that may coalesce: IPv4 without options or fragmentation, or IPv6 whose
/// next header is TCP, its length that of `p`; TCP with ACK (and perhaps PSH) only, and
/// payload.
fn seg(p: &[u8]) -> Option<Seg> {
    let ip = match p.first()? >> 4 {
        4 if p.len() >= IPV4 && p[0] == 0x45 && p[9] == 6 => {
            let total = usize::from(u16::from_be_bytes([p[2], p[3]]));
            // MF or a fragment offset: not a whole segment.
            if total != p.len() || u16::from_be_bytes([p[6], p[7]]) & 0x3fff != 0 {
                return None;
            }
            IPV4
        }
        6 if p.len() >= IPV6 && p[6] == 6 => {
            if usize::from(u16::from_be_bytes([p[4], p[5]])) != p.len() - IPV6 {
                return None;
            }
            IPV6
        }
        _ => return None,
    };
    if p.len() < ip + 20 {
        return None;
    }
    let thl = usize::from(p[ip + 12] >> 4) * 4;
    let flags = p[ip + 13];
    if thl < 20 || p.len() <= ip + thl || flags & !0x08 != 0x10 {
        return None;
    }
    Some(Seg {
        ip,
        head: ip + thl,
        seq: u32::from_be_bytes([p[ip + 4], p[ip + 5], p[ip + 6], p[ip + 7]]),
        payload: p.len() - ip - thl,
        psh: flags & 0x08 != 0,
    })
}

/// `b` (segment `s`) continues `a` (segment `r`, not ending in PSH): the conditions of
/// `tcp_gro_receive` and `inet_gro_receive` or `ipv6_gro_receive` (module docs).
fn follows(a: &[u8], r: &Seg, b: &[u8], s: &Seg, mss: usize) -> bool {
    let t = r.ip;
    let ip = if t == IPV4 {
        // TOS; DF; TTL, protocol; addresses.
        a[1] == b[1] && a[6] & 0x40 == b[6] & 0x40 && a[8..10] == b[8..10] && a[12..20] == b[12..20]
    } else {
        // Version, traffic class, flow label; next header, hop limit, addresses.
        a[..4] == b[..4] && a[6..IPV6] == b[6..IPV6]
    };
    ip && !r.psh
        && s.ip == r.ip
        && r.payload == mss
        && s.payload <= mss
        && s.head == r.head
        && s.seq == r.seq.wrapping_add(r.payload as u32)
        // Ports; acknowledgment; header length, flags but PSH, window; options.
        && a[t..t + 4] == b[t..t + 4]
        && a[t + 8..t + 12] == b[t + 8..t + 12]
        && a[t + 12] == b[t + 12]
        && a[t + 13] | 0x08 == b[t + 13] | 0x08
        && a[t + 14..t + 16] == b[t + 14..t + 16]
        && a[t + 20..r.head] == b[t + 20..s.head]
}

/// The folded sum (not complemented) of the TCP pseudo-header of `p`, whose IP header has `ip`
/// bytes, for a TCP part of `len` bytes: RFC 793 §3.1 (addresses, zero, protocol, 16-bit
/// length) or RFC 8200 §8.1 (addresses, 32-bit length, zeros, next header). Linux's
/// `~csum_tcpudp_magic(.., 0)` or `~csum_ipv6_magic(.., 0)`.
fn pseudo_sum(p: &[u8], ip: usize, len: usize) -> u16 {
    let mut b = [0u8; 40];
    let n = if ip == IPV4 {
        b[..8].copy_from_slice(&p[12..20]);
        b[9] = 6;
        b[10..12].copy_from_slice(&(len as u16).to_be_bytes());
        12
    } else {
        b[..32].copy_from_slice(&p[8..40]);
        b[32..36].copy_from_slice(&(len as u32).to_be_bytes());
        b[39] = 6;
        40
    };
    !checksum(&b[..n])
}

/// The IPv4 header (if any) and TCP checksums of `p` (segment `s`) verify (RFC 791 §3.1, RFC
/// 793 §3.1, RFC 8200 §8.1).
fn valid(p: &[u8], s: &Seg) -> bool {
    (s.ip != IPV4 || checksum(&p[..IPV4]) == 0) && checksum_with_pseudo(p, s.ip) == 0
}

/// The TCP checksum over `p`'s pseudo-header and TCP part, the field counted as it is.
fn checksum_with_pseudo(p: &[u8], ip: usize) -> u16 {
    // Sums of 16-bit words add (RFC 1071 §2 (A), (B)): complement back, add, complement.
    let parts = [pseudo_sum(p, ip, p.len() - ip), !checksum(&p[ip..])];
    let mut acc: u32 = parts.iter().map(|&x| u32::from(x)).sum();
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// How many packets from the start of `packets` coalesce into one (1: the first goes alone).
/// At most 65,535 bytes of IP packet result (`MAX_PACKET`).
pub fn run_len<P: AsRef<[u8]>>(packets: &[P]) -> usize {
    let Some(first) = packets.first().map(AsRef::as_ref) else {
        return 0;
    };
    let Some(mut r) = seg(first) else {
        return 1;
    };
    let first_seg = r;
    let mss = r.payload;
    let v4 = r.ip == IPV4;
    let id = |p: &[u8]| u16::from_be_bytes([p[4], p[5]]);
    // With DF, the second segment may start a run of one fixed ID (`inet_gro_receive`). IPv6
    // has no identification in its header (`ipv6_gro_receive` clears `flush_id`).
    let mut fixed_id = false;
    let mut total = first.len();
    let mut prev = first;
    let mut n = 1;
    for p in &packets[1..] {
        let p = p.as_ref();
        let Some(s) = seg(p) else { break };
        if total + s.payload > MAX_PACKET || !follows(prev, &r, p, &s, mss) {
            break;
        }
        if v4 {
            if n == 1 {
                fixed_id = first[6] & 0x40 != 0 && id(p) == id(first);
            }
            let want = if fixed_id { 0 } else { n as u16 };
            if id(p) != id(first).wrapping_add(want) {
                break;
            }
        }
        if n == 1 && !valid(first, &first_seg) {
            return 1;
        }
        if !valid(p, &s) {
            break;
        }
        total += s.payload;
        prev = p;
        r = s;
        n += 1;
    }
    n
}

/// The packets of a run ([`run_len`] ≥ 2) as one GSO packet: the first's headers (IPv4 total
/// length and header checksum or IPv6 payload length set, PSH if the last had it, the TCP
/// checksum field holding the pseudo-header's sum, as Linux's `tcp4_gro_complete` and
/// `tcp6_gro_complete` leave it) and every payload, behind its virtio header (module docs).
pub fn coalesce<P: AsRef<[u8]>>(run: &[P]) -> Vec<u8> {
    debug_assert!(run.len() >= 2);
    let first = run[0].as_ref();
    let (ip, head) = seg(first).map_or((IPV4, IPV4 + 20), |s| (s.ip, s.head));
    let payload: usize = run.iter().map(|p| p.as_ref().len() - head).sum();
    let total = head + payload;
    let mut v = Vec::with_capacity(VNET_HDR_LEN + total);
    let hdr = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: if ip == IPV4 { GSO_TCPV4 } else { GSO_TCPV6 },
        hdr_len: head as u16,
        gso_size: (first.len() - head) as u16,
        csum_start: ip as u16,
        csum_offset: 16,
    };
    v.extend_from_slice(&hdr.to_bytes());
    v.extend_from_slice(&first[..head]);
    for p in run {
        v.extend_from_slice(&p.as_ref()[head..]);
    }
    let p = &mut v[VNET_HDR_LEN..];
    if ip == IPV4 {
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[10..12].copy_from_slice(&[0, 0]);
        let c = checksum(&p[..IPV4]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
    } else {
        p[4..6].copy_from_slice(&((total - IPV6) as u16).to_be_bytes());
    }
    if run.last().is_some_and(|l| l.as_ref()[ip + 13] & 0x08 != 0) {
        p[ip + 13] |= 0x08;
    }
    let partial = pseudo_sum(p, ip, total - ip);
    p[ip + 16..ip + 18].copy_from_slice(&partial.to_be_bytes());
    v
}

#[cfg(test)]
#[path = "gro_tests.rs"]
mod tests;
