//! Receive offload at the OS boundary (docs/LINUX-DEVICE.md "Offload at the TUN device"): a run
//! of in-order IPv4 TCP segments of one connection, delivered by the interface in one turn, is
//! written to a TUN device with offload as one GSO packet (`VIRTIO_NET_HDR_GSO_TCPV4`), so that
//! the receiving kernel handles one packet where it would handle up to 32, as a NIC doing LRO or
//! the kernel's own GRO hands its stack one. Segments coalesce under the conditions of Linux's
//! `tcp_gro_receive` (net/ipv4/tcp_offload.c) and `inet_gro_receive` (net/ipv4/af_inet.c): same
//! addresses, ports, IP TOS, TTL and DF, IP identifications increasing by one per segment (or,
//! with DF, all the same), consecutive sequence numbers, the same acknowledgment, header
//! length, flags (ACK, PSH only on the last), window and options, every segment but the last of
//! the first's payload size.
//!
//! Checksums: each segment's IPv4 header checksum and TCP checksum are verified here, over the
//! segment's bytes as the interface delivered them (a segment that fails is written alone, and
//! the kernel drops it as it always did). The coalesced packet is written with
//! `VIRTIO_NET_HDR_F_NEEDS_CSUM` and the pseudo-header's sum in its checksum field, which Linux
//! takes as a checksum still to be computed (`CHECKSUM_PARTIAL`), i.e. not verified again: what
//! it would verify are exactly the bytes verified here, copied unchanged since. Pure functions,
//! no IO.

use crate::gso::{checksum, VnetHdr, F_NEEDS_CSUM, GSO_TCPV4, VNET_HDR_LEN};

/// One IPv4 TCP segment that may coalesce.
#[derive(Debug, Clone, Copy)]
struct Seg {
    /// Bytes of the IP and TCP headers.
    head: usize,
    seq: u32,
    payload: usize,
    psh: bool,
}

/// IP header length of the segments that coalesce (no options).
const IHL: usize = 20;

/// `p` as a segment that may coalesce: IPv4 without options or fragmentation, TCP with ACK
/// (and perhaps PSH) only, and payload.
fn seg(p: &[u8]) -> Option<Seg> {
    if p.len() < IHL + 20 || p[0] != 0x45 || p[9] != 6 {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([p[2], p[3]]));
    // MF or a fragment offset: not a whole segment.
    if total != p.len() || u16::from_be_bytes([p[6], p[7]]) & 0x3fff != 0 {
        return None;
    }
    let thl = usize::from(p[IHL + 12] >> 4) * 4;
    let flags = p[IHL + 13];
    if thl < 20 || p.len() <= IHL + thl || flags & !0x08 != 0x10 {
        return None;
    }
    Some(Seg {
        head: IHL + thl,
        seq: u32::from_be_bytes([p[24], p[25], p[26], p[27]]),
        payload: p.len() - IHL - thl,
        psh: flags & 0x08 != 0,
    })
}

/// `b` (segment `s`) continues `a` (segment `r`, not ending in PSH): `tcp_gro_receive`'s
/// conditions (module docs).
fn follows(a: &[u8], r: &Seg, b: &[u8], s: &Seg, mss: usize) -> bool {
    !r.psh
        && r.payload == mss
        && s.payload <= mss
        && s.head == r.head
        && s.seq == r.seq.wrapping_add(r.payload as u32)
        // TOS; DF; TTL, protocol; addresses.
        && a[1] == b[1]
        && a[6] & 0x40 == b[6] & 0x40
        && a[8..10] == b[8..10]
        && a[12..20] == b[12..20]
        // Ports; acknowledgment; header length, flags but PSH, window; options.
        && a[IHL..IHL + 4] == b[IHL..IHL + 4]
        && a[IHL + 8..IHL + 12] == b[IHL + 8..IHL + 12]
        && a[IHL + 12] == b[IHL + 12]
        && a[IHL + 13] | 0x08 == b[IHL + 13] | 0x08
        && a[IHL + 14..IHL + 16] == b[IHL + 14..IHL + 16]
        && a[IHL + 20..r.head] == b[IHL + 20..s.head]
}

/// The IPv4 header and TCP checksums of `p` verify (RFC 791 §3.1, RFC 793 §3.1).
fn valid(p: &[u8]) -> bool {
    checksum(&p[..IHL]) == 0 && checksum_with_pseudo(p) == 0
}

/// The TCP checksum over `p`'s pseudo-header and TCP part, the field counted as it is.
fn checksum_with_pseudo(p: &[u8]) -> u16 {
    let len = p.len() - IHL;
    let mut pseudo = [0u8; 12];
    pseudo[..8].copy_from_slice(&p[12..20]);
    pseudo[9] = 6;
    pseudo[10..12].copy_from_slice(&(len as u16).to_be_bytes());
    // Sums of 16-bit words add (RFC 1071 §2 (A), (B)): complement back, add, complement.
    let parts = [!checksum(&pseudo), !checksum(&p[IHL..])];
    let mut acc: u32 = parts.iter().map(|&x| u32::from(x)).sum();
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// How many packets from the start of `packets` coalesce into one (1: the first goes alone).
/// At most 65,535 bytes of IP packet result.
pub fn run_len<P: AsRef<[u8]>>(packets: &[P]) -> usize {
    let Some(first) = packets.first().map(AsRef::as_ref) else {
        return 0;
    };
    let Some(mut r) = seg(first) else {
        return 1;
    };
    let mss = r.payload;
    let id = |p: &[u8]| u16::from_be_bytes([p[4], p[5]]);
    // With DF, the second segment may start a run of one fixed ID (`inet_gro_receive`).
    let mut fixed_id = false;
    let mut total = first.len();
    let mut prev = first;
    let mut n = 1;
    for p in &packets[1..] {
        let p = p.as_ref();
        let Some(s) = seg(p) else { break };
        if total + s.payload > 65_535 || !follows(prev, &r, p, &s, mss) {
            break;
        }
        if n == 1 {
            fixed_id = first[6] & 0x40 != 0 && id(p) == id(first);
        }
        let want = if fixed_id { 0 } else { n as u16 };
        if id(p) != id(first).wrapping_add(want) {
            break;
        }
        if n == 1 && !valid(first) {
            return 1;
        }
        if !valid(p) {
            break;
        }
        total += s.payload;
        prev = p;
        r = s;
        n += 1;
    }
    n
}

/// The packets of a run ([`run_len`] ≥ 2) as one GSO packet: the first's headers (total
/// length and header checksum set, PSH if the last had it, the TCP checksum field holding the
/// pseudo-header's sum) and every payload, behind its virtio header (module docs).
pub fn coalesce<P: AsRef<[u8]>>(run: &[P]) -> Vec<u8> {
    debug_assert!(run.len() >= 2);
    let first = run[0].as_ref();
    let head = seg(first).map_or(IHL + 20, |s| s.head);
    let payload: usize = run.iter().map(|p| p.as_ref().len() - head).sum();
    let total = head + payload;
    let mut v = Vec::with_capacity(VNET_HDR_LEN + total);
    let hdr = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: GSO_TCPV4,
        hdr_len: head as u16,
        gso_size: (first.len() - head) as u16,
        csum_start: IHL as u16,
        csum_offset: 16,
    };
    v.extend_from_slice(&hdr.to_bytes());
    v.extend_from_slice(&first[..head]);
    for p in run {
        v.extend_from_slice(&p.as_ref()[head..]);
    }
    let p = &mut v[VNET_HDR_LEN..];
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[10..12].copy_from_slice(&[0, 0]);
    let c = checksum(&p[..IHL]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    if run.last().is_some_and(|l| l.as_ref()[IHL + 13] & 0x08 != 0) {
        p[IHL + 13] |= 0x08;
    }
    // The pseudo-header's folded sum (Linux `~csum_tcpudp_magic(.., 0)`).
    let mut pseudo = [0u8; 12];
    pseudo[..8].copy_from_slice(&p[12..20]);
    pseudo[9] = 6;
    pseudo[10..12].copy_from_slice(&((total - IHL) as u16).to_be_bytes());
    let partial = !checksum(&pseudo);
    p[IHL + 16..IHL + 18].copy_from_slice(&partial.to_be_bytes());
    v
}

#[cfg(test)]
#[path = "gro_tests.rs"]
mod tests;
