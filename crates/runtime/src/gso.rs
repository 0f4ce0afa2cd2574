//! Segmentation offload at the OS boundary (docs/LINUX-DEVICE.md "Offload at the TUN device"):
//! a TUN device opened with `IFF_VNET_HDR` and `TUNSETOFFLOAD` (`TUN_F_CSUM`, `TUN_F_TSO4`,
//! `TUN_F_TSO6`) puts a `struct virtio_net_hdr` in front of every packet it gives and takes, and
//! may give a TCP "super-packet" of up to 64 KiB that the reader is to cut into segments of
//! `gso_size` payload bytes, and packets whose TCP or UDP checksum is partial (only the
//! pseudo-header's sum is in the field). [`segment`] cuts such a packet into the IP packets a
//! NIC doing TSO would send, each with its IPv4 header checksum and TCP or UDP checksum computed
//! over exactly its bytes; [`complete_checksum`] finishes a partial checksum. So every packet the
//! emulated interface sends is a whole, correct IP packet of at most the device's MTU.
//!
//! The header (Linux include/uapi/linux/virtio_net.h, `struct virtio_net_hdr`) is 10 bytes, in
//! the machine's byte order for a TUN device not set to another (drivers/net/tun.c
//! `tun16_to_cpu`, "legacy" virtio). Pure functions, no IO.

/// Bytes of `struct virtio_net_hdr` (the TUN device's default `TUNSETVNETHDRSZ`).
pub const VNET_HDR_LEN: usize = 10;

/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum at `csum_start + csum_offset` holds only the
/// pseudo-header's sum; the sum over the bytes from `csum_start` on is to be added.
pub const F_NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_NONE`.
pub const GSO_NONE: u8 = 0;
/// `VIRTIO_NET_HDR_GSO_TCPV4`.
pub const GSO_TCPV4: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_TCPV6`.
pub const GSO_TCPV6: u8 = 4;
/// `VIRTIO_NET_HDR_GSO_UDP_L4` (a UDP_SEGMENT send: the tun-rs crate asks for `TUN_F_USO4/6`
/// where the kernel has them, since 6.2; docs/LINUX-DEVICE.md).
pub const GSO_UDP_L4: u8 = 5;
/// `VIRTIO_NET_HDR_GSO_ECN`: the TCP packet has ECN's CWR set (kept on the first segment).
pub const GSO_ECN: u8 = 0x80;

/// A header that asks nothing of the kernel: the packet is whole, its checksums are complete
/// and are verified by the receiving stack as for any NIC that verifies none.
pub const PLAIN_HDR: [u8; VNET_HDR_LEN] = [0; VNET_HDR_LEN];

/// `struct virtio_net_hdr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VnetHdr {
    /// `VIRTIO_NET_HDR_F_*`.
    pub flags: u8,
    /// `VIRTIO_NET_HDR_GSO_*`.
    pub gso_type: u8,
    /// Bytes of the headers (IP and TCP/UDP) in front of the payload (a hint).
    pub hdr_len: u16,
    /// Payload bytes of each segment.
    pub gso_size: u16,
    /// Where the checksummed bytes start (the TCP or UDP header).
    pub csum_start: u16,
    /// Where the checksum field is, from `csum_start`.
    pub csum_offset: u16,
}

impl VnetHdr {
    /// The header from its 10 bytes (machine byte order, module docs).
    pub fn parse(b: &[u8; VNET_HDR_LEN]) -> VnetHdr {
        let u = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u(2),
            gso_size: u(4),
            csum_start: u(6),
            csum_offset: u(8),
        }
    }

    /// Its 10 bytes.
    pub fn to_bytes(self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        for (i, v) in [
            self.hdr_len,
            self.gso_size,
            self.csum_start,
            self.csum_offset,
        ]
        .into_iter()
        .enumerate()
        {
            b[2 + 2 * i..4 + 2 * i].copy_from_slice(&v.to_ne_bytes());
        }
        b
    }

    /// The packet must be cut.
    pub fn is_gso(&self) -> bool {
        self.gso_type & !GSO_ECN != GSO_NONE
    }
}

/// Why a packet from the device could not be handled (it is dropped and counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GsoError {
    /// The header points outside the packet, or the packet is no IPv4/IPv6 TCP/UDP packet the
    /// kind of segmentation asks for.
    #[error("malformed offload packet")]
    Malformed,
    /// A segmentation kind this code does not know.
    #[error("unknown GSO type {0}")]
    Unknown(u8),
}

/// The Internet checksum's running sum (RFC 1071): `acc` plus the ones' complement sum of
/// `data`'s big-endian 16-bit words (a last odd byte padded with a zero), in 64 bits, folded at
/// the end ([`fold`]).
///
/// How: `data` is summed as little-endian 64-bit words with the end-around carry, which is the
/// ones' complement sum of its 16-bit words byte-swapped (RFC 1071 §2 (B): the sum of swapped
/// words is the swapped sum; (C): the sum may be taken over any multiple of 16 bits and folded,
/// since 2^16 - 1 divides 2^64 - 1). The folded sum, swapped back, is added to `acc`. On x86-64
/// the 64-byte blocks go through one chain of add-with-carry instructions ([`sum_blocks`]), the
/// carry of each word added with the next, as RFC 1071 §4.2's 68020 example chains `addxl`: an
/// instruction per 8 bytes and the loop's few per 64. Inlined: each caller's lengths (a
/// 20-byte header, 8 bytes of addresses) are known there, and most of the code falls away.
#[inline(always)]
fn sum(acc: u64, data: &[u8]) -> u64 {
    let mut blocks = data.chunks_exact(64);
    let mut s = sum_blocks(&mut blocks);
    let mut words = blocks.remainder().chunks_exact(8);
    for w in &mut words {
        s = add(s, word(w));
    }
    s = add(s, tail_word(words.remainder()));
    acc + u64::from(fold(s).swap_bytes())
}

/// The last 0 to 7 bytes of the data as a little-endian word padded with zeros, without a
/// call to copy them (a 4-, 2- and 1-byte piece, each at most once).
#[inline(always)]
fn tail_word(rest: &[u8]) -> u64 {
    let (mut w, mut at, mut shift) = (0u64, 0, 0);
    if rest.len() & 4 != 0 {
        w = u64::from(u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]));
        (at, shift) = (4, 32);
    }
    if rest.len() & 2 != 0 {
        w |= u64::from(u16::from_le_bytes([rest[at], rest[at + 1]])) << shift;
        at += 2;
        shift += 16;
    }
    if rest.len() & 1 != 0 {
        w |= u64::from(rest[at]) << shift;
    }
    w
}

/// Ones' complement addition of two 64-bit words.
fn add(s: u64, w: u64) -> u64 {
    let (t, carry) = s.overflowing_add(w);
    t + u64::from(carry)
}

/// `b`'s first 8 bytes as a little-endian word.
fn word(b: &[u8]) -> u64 {
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// The ones' complement sum of the 64-byte blocks' little-endian 64-bit words: one chain of
/// `adc` over a block, its last carry taken into the next block's chain (x86-64).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn sum_blocks(blocks: &mut std::slice::ChunksExact<'_, u8>) -> u64 {
    use std::arch::x86_64::_addcarry_u64;
    let (mut s, mut c) = (0u64, 0u8);
    for b in blocks {
        c = _addcarry_u64(c, s, word(&b[..8]), &mut s);
        c = _addcarry_u64(c, s, word(&b[8..16]), &mut s);
        c = _addcarry_u64(c, s, word(&b[16..24]), &mut s);
        c = _addcarry_u64(c, s, word(&b[24..32]), &mut s);
        c = _addcarry_u64(c, s, word(&b[32..40]), &mut s);
        c = _addcarry_u64(c, s, word(&b[40..48]), &mut s);
        c = _addcarry_u64(c, s, word(&b[48..56]), &mut s);
        c = _addcarry_u64(c, s, word(&b[56..64]), &mut s);
    }
    add(s, u64::from(c))
}

/// The ones' complement sum of the 64-byte blocks' little-endian 64-bit words (elsewhere: the
/// carry of each word added at once).
#[cfg(not(target_arch = "x86_64"))]
fn sum_blocks(blocks: &mut std::slice::ChunksExact<'_, u8>) -> u64 {
    blocks.fold(0, |s, b| (0..8).fold(s, |s, i| add(s, word(&b[8 * i..]))))
}

/// [`sum`] one word at a time with the carry added at once, whatever the architecture: the
/// reference of the tests (`gso_tests.rs`), since [`sum_blocks`] differs by target.
#[cfg(test)]
fn sum_words(acc: u64, data: &[u8]) -> u64 {
    let mut words = data.chunks_exact(8);
    let mut s = 0u64;
    for w in &mut words {
        s = add(s, word(w));
    }
    let rest = words.remainder();
    let mut tail = [0u8; 8];
    tail[..rest.len()].copy_from_slice(rest);
    s = add(s, word(&tail));
    acc + u64::from(fold_loop(s).swap_bytes())
}

/// [`fold`] as a loop, until no carry is left (the tests' reference).
#[cfg(test)]
fn fold_loop(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// Folds a running sum into 16 bits (not complemented), in four fixed steps: 64 bits to 33, to
/// 18, to 17 and to 16 (each adds the high part to the low 16 or 32 bits, RFC 1071 §2 (C)).
fn fold(acc: u64) -> u16 {
    let s = (acc >> 32) + (acc & 0xffff_ffff);
    let s = (s >> 16) + (s & 0xffff);
    let s = (s >> 16) + (s & 0xffff);
    let s = (s >> 16) + (s & 0xffff);
    s as u16
}

/// The Internet checksum of `data` (RFC 1071): the complement of its ones' complement sum.
pub fn checksum(data: &[u8]) -> u16 {
    !fold(sum(0, data))
}

/// Finishes the partial checksum of `packet` (`F_NEEDS_CSUM`): the field at `csum_start +
/// csum_offset` holds the pseudo-header's sum; the complement of the sum over the bytes from
/// `csum_start` on (the field included) goes there. A UDP checksum that comes out 0 is sent
/// as 0xffff (RFC 768).
pub fn complete_checksum(hdr: &VnetHdr, packet: &mut [u8]) -> Result<(), GsoError> {
    let start = usize::from(hdr.csum_start);
    let at = start + usize::from(hdr.csum_offset);
    if at + 2 > packet.len() {
        return Err(GsoError::Malformed);
    }
    let mut c = checksum(&packet[start..]);
    if c == 0 && hdr.csum_offset == 6 {
        c = 0xffff;
    }
    packet[at..at + 2].copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// IP protocol numbers (IANA).
const TCP: u8 = 6;
const UDP: u8 = 17;

/// Cuts `packet` (without its virtio header), which `hdr` says is a GSO packet, into segments
/// of at most `hdr.gso_size` payload bytes, as a NIC doing TSO (or USO) would send them: each
/// with a copy of the IP and TCP/UDP headers in front, the IPv4 total length and header
/// checksum, identification (the first's plus the segment's index) or IPv6 payload length, TCP
/// sequence number (FIN and PSH only on the last segment, CWR only on the first) or UDP length,
/// and the TCP/UDP checksum computed over the segment (RFC 793 §3.1, RFC 768, RFC 8200 §8.1).
/// Each segment is given to `out` in a buffer of its own after `headroom` zero bytes. Returns
/// the number of segments.
pub fn segment(
    hdr: &VnetHdr,
    packet: &[u8],
    headroom: usize,
    out: &mut dyn FnMut(Vec<u8>),
) -> Result<usize, GsoError> {
    segment_into(hdr, packet, headroom, &mut |f| {
        out(f);
        Vec::new()
    })
}

/// [`segment`] with the segments' buffers from the caller: `out` takes each segment and gives
/// back the allocation to build the next one in (its bytes are written over; an empty `Vec`
/// when it has none, and a new allocation is made), so that a caller that gets its spent
/// packets back (the emulated HCA's, after they were sent) allocates nothing per segment.
pub fn segment_into(
    hdr: &VnetHdr,
    packet: &[u8],
    headroom: usize,
    out: &mut dyn FnMut(Vec<u8>) -> Vec<u8>,
) -> Result<usize, GsoError> {
    let kind = hdr.gso_type & !GSO_ECN;
    let proto = match kind {
        GSO_TCPV4 | GSO_TCPV6 => TCP,
        GSO_UDP_L4 => UDP,
        k => return Err(GsoError::Unknown(k)),
    };
    let v4 = match packet.first().map(|b| b >> 4) {
        Some(4) => true,
        Some(6) => false,
        _ => return Err(GsoError::Malformed),
    };
    if (kind == GSO_TCPV4 && !v4) || (kind == GSO_TCPV6 && v4) {
        return Err(GsoError::Malformed);
    }
    // The transport header starts where the checksum does (the kernel sets both).
    let l4 = usize::from(hdr.csum_start);
    let ip_ok = if v4 {
        let ihl = usize::from(packet[0] & 0xf) * 4;
        packet.len() >= 20 && ihl >= 20 && l4 == ihl && packet[9] == proto
    } else {
        // Extension headers: their last Next Header is not checked here; the transport
        // header's own length is.
        packet.len() >= 40 && l4 >= 40
    };
    if !ip_ok || packet.len() < l4 + 8 {
        return Err(GsoError::Malformed);
    }
    let l4_len = if proto == TCP {
        let off = usize::from(packet.get(l4 + 12).ok_or(GsoError::Malformed)? >> 4) * 4;
        if off < 20 {
            return Err(GsoError::Malformed);
        }
        off
    } else {
        8
    };
    let head = l4 + l4_len;
    let mss = usize::from(hdr.gso_size);
    if packet.len() < head || mss == 0 {
        return Err(GsoError::Malformed);
    }
    let (headers, payload) = packet.split_at(head);
    // The largest segment's IPv4 total length or IPv6 payload length must fit its 16 bits
    // (RFC 791 §3.1, RFC 8200 §3): a read may be 65,536 bytes (`MAX_PACKET`).
    let largest = head + mss.min(payload.len());
    if largest - if v4 { 0 } else { 40 } > usize::from(u16::MAX) {
        return Err(GsoError::Malformed);
    }
    let count = payload.len().div_ceil(mss).max(1);
    let id0 = u16::from_be_bytes([headers[4], headers[5]]);
    let seq0 = u32::from_be_bytes([
        headers[l4 + 4],
        headers[l4 + 5],
        headers[l4 + 6],
        headers[l4 + 7],
    ]);
    let chunks = payload.chunks(mss.max(1));
    let mut next = Vec::new();
    let mut emit = |i: usize, chunk: &[u8]| {
        let mut f = std::mem::take(&mut next);
        f.clear();
        f.reserve(headroom + head + chunk.len());
        f.resize(headroom, 0);
        f.extend_from_slice(headers);
        f.extend_from_slice(chunk);
        let p = &mut f[headroom..];
        let total = p.len();
        let l4_total = total - l4;
        if v4 {
            p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            p[4..6].copy_from_slice(&id0.wrapping_add(i as u16).to_be_bytes());
            p[10..12].copy_from_slice(&[0, 0]);
            let c = checksum(&p[..l4]);
            p[10..12].copy_from_slice(&c.to_be_bytes());
        } else {
            p[4..6].copy_from_slice(&((total - 40) as u16).to_be_bytes());
        }
        let t = &mut p[l4..];
        let field = if proto == TCP {
            let seq = seq0.wrapping_add((i * mss) as u32);
            t[4..8].copy_from_slice(&seq.to_be_bytes());
            if i + 1 < count {
                t[13] &= !(0x01 | 0x08); // FIN, PSH
            }
            if i > 0 {
                t[13] &= !0x80; // CWR
            }
            16
        } else {
            t[4..6].copy_from_slice(&(l4_total as u16).to_be_bytes());
            6
        };
        t[field..field + 2].copy_from_slice(&[0, 0]);
        // The pseudo-header (RFC 793 §3.1, RFC 768, RFC 8200 §8.1): addresses, protocol,
        // transport length.
        let addrs = if v4 { &p[12..20] } else { &p[8..40] };
        let mut acc = sum(0, addrs);
        acc += u64::from(proto) + l4_total as u64;
        let mut c = !fold(sum(acc, &p[l4..]));
        if c == 0 && proto == UDP {
            c = 0xffff;
        }
        p[l4 + field..l4 + field + 2].copy_from_slice(&c.to_be_bytes());
        next = out(f);
    };
    if payload.is_empty() {
        emit(0, &[]);
        return Ok(1);
    }
    for (i, chunk) in chunks.enumerate() {
        emit(i, chunk);
    }
    Ok(count)
}

#[cfg(test)]
#[path = "gso_tests.rs"]
pub(crate) mod tests;
