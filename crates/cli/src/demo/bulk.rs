//! The demo's bulk transfer: one host sends a number of bytes to another in UDP datagrams of the
//! largest size its MTU towards the other allows (one IP packet each, no fragmentation: 65,520-byte
//! packets in connected mode, RFC 4755 §5.1; 2044-byte ones in datagram mode,
//! draft-ietf-ipoib-ip-over-infiniband-06 §7), and the receiver checks that every datagram
//! arrived once. The sender keeps at most [`WINDOW`] bytes in flight, as a socket's send buffer
//! would, and is fed the instant a datagram arrives ([`super::drive::Driver::run_stepwise`]), so
//! the link is never idle for want of data; the receiver's datagrams are handed over as they
//! come ([`ipoib_proto::ip_host::IpHost::take_udp_received`]), so memory stays bounded by the
//! window whatever the size of the transfer.
//!
//! The figures are simulated time (first datagram sent to last one delivered) and wall time of
//! the phase; the run is otherwise deterministic.

use super::drive::{Driver, Interrupted, Meter};
use ipoib_fabric::node::subnet::Subnet;
use ipoib_proto::ipoib::Mode;
use std::net::IpAddr;
use std::time::{Duration, Instant as Wall};

/// UDP port of the bulk datagrams (source and destination).
pub const PORT: u16 = 5002;
/// Bytes in flight at most (sent and not yet delivered).
pub const WINDOW: usize = 1 << 20;
/// The default size of the transfer: 64 MiB or 1,000 connected-mode datagrams (65,492 bytes of
/// UDP payload each), whichever is smaller.
pub const DEFAULT_BYTES: u64 = 1000 * 65_492;
/// The largest `--bulk-bytes`: 1 GiB.
pub const MAX_BYTES: u64 = 1 << 30;
/// IPv4 and UDP headers: the UDP payload of a packet of the MTU is the MTU less these.
const HEADERS: usize = 20 + 8;
/// How long a transfer may take in simulated time before it is given up (32 Gb/s links carry
/// the largest one, 1 GiB, in about a third of a second).
const DEADLINE: Duration = Duration::from_secs(10);

/// What one bulk transfer did.
#[derive(Debug, Clone)]
pub struct BulkReport {
    /// The sender's mode.
    pub mode: Mode,
    pub from: usize,
    pub to: usize,
    /// Size of the IP packets (the sender's MTU) and of their UDP payload.
    pub packet_len: usize,
    pub payload_len: usize,
    /// Bytes to carry, and datagrams they take.
    pub bytes: u64,
    pub datagrams: u64,
    /// Datagrams sent and delivered (each once; duplicates and strangers counted apart).
    pub sent: u64,
    pub delivered: u64,
    pub bytes_delivered: u64,
    pub duplicates: u64,
    /// Datagrams that arrived after a later one.
    pub reordered: u64,
    /// Packets the transfer put on the links (both directions, acknowledgements included).
    pub wire_packets: u64,
    /// First datagram sent to last one delivered, in simulated time.
    pub sim: Duration,
    /// Wall time of the phase.
    pub wall: Duration,
    /// What each IP packet cost the sender's processor (`--packet-cost-ns`).
    pub packet_cost: Duration,
}

impl BulkReport {
    /// Every datagram arrived, once.
    pub fn ok(&self) -> bool {
        self.delivered == self.datagrams && self.bytes_delivered == self.bytes
    }

    /// Gb/s of UDP payload delivered in simulated time.
    pub fn sim_gbps(&self) -> f64 {
        gbps(self.bytes_delivered, self.sim)
    }

    /// Gb/s of UDP payload delivered per second of wall time.
    pub fn wall_gbps(&self) -> f64 {
        gbps(self.bytes_delivered, self.wall)
    }
}

fn gbps(bytes: u64, d: Duration) -> f64 {
    if d.is_zero() {
        return 0.0;
    }
    bytes as f64 * 8.0 / d.as_secs_f64() / 1e9
}

/// The payload of datagram `seq`: its number in the first 4 bytes, the rest a pattern.
fn payload(seq: u64, len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..len).map(|i| (i as u64 ^ seq) as u8).collect();
    let n = len.min(4);
    v[..n].copy_from_slice(&(seq as u32).to_be_bytes()[..n]);
    v
}

/// Sends `bytes` from host `from` to host `to` in datagrams of the largest size `from`'s MTU
/// allows. What it did goes into `out`, also when the run is interrupted; nothing when either
/// host has no interface, IPv4 address or MTU.
pub fn run(
    net: &mut Subnet,
    drv: &mut Driver,
    (from, to): (usize, usize),
    bytes: u64,
    out: &mut Option<BulkReport>,
) -> Result<(), Interrupted> {
    let wall = Wall::now();
    let Some(dst) = net.ipoib_app(to).and_then(|a| a.ip().ipv4()) else {
        return Ok(());
    };
    let Some(iface) = net.interface(from) else {
        return Ok(());
    };
    // The MTU towards `to`: its connection's (RFC 4755 §5.1) or the UD one.
    let (mode, mtu) = (iface.mode(), iface.path_mtu(IpAddr::V4(dst)) as usize);
    let payload_len = mtu.saturating_sub(HEADERS);
    if payload_len < 4 || bytes == 0 {
        return Ok(());
    }
    let datagrams = bytes.div_ceil(payload_len as u64);
    let len_of = |seq: u64| -> usize {
        let rest = bytes - seq * payload_len as u64;
        rest.min(payload_len as u64) as usize
    };
    let mut seen = vec![false; datagrams as usize];
    let mut r = BulkReport {
        mode,
        from,
        to,
        packet_len: mtu,
        payload_len,
        bytes,
        datagrams,
        sent: 0,
        delivered: 0,
        bytes_delivered: 0,
        duplicates: 0,
        reordered: 0,
        wire_packets: 0,
        sim: Duration::ZERO,
        wall: Duration::ZERO,
        packet_cost: net
            .ipoib_app(from)
            .map_or(Duration::ZERO, |a| a.stack_cost().per_packet),
    };
    let packets_before = net.sim().stats().packets;
    let start = net.sim().now();
    let mut last_at = start;
    let mut highest: Option<u64> = None;
    let mut in_flight = 0usize;
    let mut step = |net: &mut Subnet| -> bool {
        let arrived = net
            .ipoib_app(to)
            .is_some_and(|a| !a.ip().udp_received().is_empty());
        if arrived {
            let got = net
                .with_ipoib(to, |a, _| a.ip_mut().take_udp_received())
                .unwrap_or_default();
            for u in got {
                if u.dst.1 != PORT || u.src.1 != PORT {
                    continue;
                }
                let mut seq = [0u8; 4];
                let n = u.payload.len().min(4);
                seq[..n].copy_from_slice(&u.payload[..n]);
                let seq = u64::from(u32::from_be_bytes(seq));
                let fresh = seen.get(seq as usize).is_some_and(|s| !s);
                if !fresh || u.payload.len() != len_of(seq) {
                    r.duplicates += 1;
                    continue;
                }
                seen[seq as usize] = true;
                if highest.is_some_and(|h| h > seq) {
                    r.reordered += 1;
                }
                highest = highest.max(Some(seq));
                r.delivered += 1;
                r.bytes_delivered += u.payload.len() as u64;
                in_flight = in_flight.saturating_sub(u.payload.len());
                last_at = u.at;
            }
        }
        if r.delivered == datagrams {
            return true;
        }
        let mut batch = Vec::new();
        while r.sent < datagrams && in_flight + len_of(r.sent) <= WINDOW.max(payload_len) {
            let len = len_of(r.sent);
            batch.push(payload(r.sent, len));
            in_flight += len;
            r.sent += 1;
        }
        if !batch.is_empty() {
            net.with_ipoib(from, |a, _| {
                for p in &batch {
                    // Cannot fail: the source address and the size were checked above.
                    let _ = a.ip_mut().send_udp(PORT, IpAddr::V4(dst), PORT, p);
                }
            });
        }
        false
    };
    let received = |net: &Subnet| {
        net.ipoib_app(to)
            .map_or(0, |a| a.ip().counters().udp_received)
    };
    let (base, total) = (received(net), datagrams as usize);
    let meter: Meter<'_> = &|net| {
        let k = received(net).saturating_sub(base) as usize;
        (k.min(total), total, "bulk datagrams delivered")
    };
    let deadline = net.sim().now() + DEADLINE;
    let result = drv.run_stepwise(net, deadline, &mut step, meter);
    r.sim = last_at - start;
    r.wire_packets = net.sim().stats().packets - packets_before;
    r.wall = wall.elapsed();
    *out = Some(r);
    result.map(|_| ())
}
