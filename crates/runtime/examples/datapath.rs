//! The CPU cost of the lab's data path, in process, without TUN devices or the kernel: what
//! `ipoib lab` does per packet on its emulation thread (docs/benchmarks/ip.md "The data path in
//! process"). Two hosts on one switch with their IP layer outside ([`SubnetHost`] ports, as the
//! lab binds them to TUN devices); host 0 hands the largest IPv4 packet of the mode (2044 bytes
//! datagram, 65,520 connected) to its interface in batches, the emulation runs until host 1 has
//! them all, host 1 answers each batch with one 52-byte packet (a TCP ACK's size), and both sides
//! take what is theirs. Every IB packet is built, checked (ICRC, VCRC) and switched as in the lab.
//!
//!   cargo run --release -p ipoib-runtime --example datapath -- [MiB] [datagram|connected|both]
//!
//! Prints, per mode, the emulation thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`, steadier than
//! wall time on a shared machine) per packet and per byte, and the wall time.

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::{IpoibOptions, Subnet, SubnetOptions};
use ipoib_proto::ipoib::{ConnectedConfig, InterfaceConfig};
use ipoib_runtime::ipoib_port::SubnetHost;
use ipoib_runtime::tun::{OsPort, FRAME_HEADROOM, HAND_OVER_MIN, READ_BUFFER};
use nix::time::{clock_gettime, ClockId};
use std::time::{Duration, Instant};

/// Packets handed over per batch (what one driver turn reads at most is 64).
const BATCH: usize = 16;

fn connected(_i: usize, c: &mut InterfaceConfig) {
    c.connected = Some(ConnectedConfig::rc());
}

fn subnet(conn: bool) -> Subnet {
    let mut o = SubnetOptions::new(Topology::single_switch(2).expect("topology"), 1);
    o.capture = false;
    let mut ip = IpoibOptions::external();
    ip.ipv6 = false;
    ip.ipv6_network = None;
    if conn {
        ip.configure = Some(connected);
    }
    o.ipoib = Some(ip);
    let mut net = Subnet::build(o).expect("subnet");
    let deadline = net.sim().now() + Duration::from_secs(10);
    assert!(net.run_until_joined(deadline), "carrier on both hosts");
    net
}

// The packets as `examples/udppath.rs` builds them (one copy of the builder).
#[path = "../tests/common/udp_world.rs"]
mod world;
use world::ipv4;

fn thread_cpu() -> Duration {
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(Duration::from)
        .unwrap_or_default()
}

/// Runs the emulation until host `to` has taken `want` packets (or 5 s of virtual time pass);
/// returns the bytes taken.
fn take(net: &mut Subnet, to: usize, want: usize) -> (usize, u64) {
    let (mut n, mut bytes) = (0, 0u64);
    let deadline = net.sim().now() + Duration::from_secs(5);
    while n < want && net.sim().now() < deadline {
        let t = net.sim().next_event_at().unwrap_or(deadline).min(deadline);
        net.sim_mut().run_until(t);
        SubnetHost(to).packets_to_os(net, &mut |p| {
            n += 1;
            bytes += p.len() as u64;
        });
    }
    (n, bytes)
}

/// Hands `p` to host `from`'s interface `k` times, as the lab's TUN endpoint does: a packet of
/// `HAND_OVER_MIN` bytes or more is copied into `buf` (standing for the read(2) from the device,
/// whose copy the lab's thread makes in the kernel) and handed over in it, and the next one is
/// read into the buffer the emulation gives back (or a new one); a smaller one is copied by the
/// interface.
fn send(net: &mut Subnet, from: usize, p: &[u8], k: usize, buf: &mut Vec<u8>) {
    let mut port = SubnetHost(from);
    for _ in 0..k {
        if p.len() < HAND_OVER_MIN {
            port.packet_from_os(net, p);
            continue;
        }
        buf.resize(READ_BUFFER, 0);
        buf[FRAME_HEADROOM..FRAME_HEADROOM + p.len()].copy_from_slice(p);
        let mut frame = std::mem::take(buf);
        frame.truncate(FRAME_HEADROOM + p.len());
        *buf = port
            .frame_from_os(net, frame)
            .filter(|b| b.capacity() >= READ_BUFFER)
            .unwrap_or_else(|| vec![0; READ_BUFFER]);
    }
    port.end_of_batch(net);
}

fn bench(conn: bool, total: u64) {
    let mut net = subnet(conn);
    let len = if conn { 65_520 } else { 2_044 };
    let big = ipv4(len, 1, 2);
    let ack = ipv4(52, 2, 1);
    let mut buf = vec![0; READ_BUFFER];
    // Warm up: ARP, the path, (connected) the connection.
    for _ in 0..3 {
        send(&mut net, 0, &ack, 1, &mut buf);
        take(&mut net, 1, 1);
        send(&mut net, 1, &ack, 1, &mut buf);
        take(&mut net, 0, 1);
    }
    send(&mut net, 0, &big, 1, &mut buf);
    assert_eq!(take(&mut net, 1, 1).0, 1, "one warm-up packet");
    let batches = (total / (len * BATCH) as u64).max(1);
    let (cpu0, wall0, sim0) = (thread_cpu(), Instant::now(), net.sim().now());
    let stats0 = net.sim().stats();
    let mut bytes = 0u64;
    for _ in 0..batches {
        send(&mut net, 0, &big, BATCH, &mut buf);
        let (n, b) = take(&mut net, 1, BATCH);
        assert_eq!(n, BATCH, "every packet of the batch delivered");
        bytes += b;
        send(&mut net, 1, &ack, 1, &mut buf);
        assert_eq!(take(&mut net, 0, 1).0, 1, "the answer delivered");
    }
    let cpu = thread_cpu().saturating_sub(cpu0);
    let stats = net.sim().stats();
    let wall = wall0.elapsed();
    let sim = net.sim().now().saturating_duration_since(sim0);
    let packets = batches * BATCH as u64;
    let mode = if conn { "connected" } else { "datagram" };
    println!("{mode}.packets {packets}");
    println!("{mode}.bytes {bytes}");
    println!(
        "{mode}.cpu_ns_per_packet {:.0}",
        cpu.as_nanos() as f64 / packets as f64
    );
    println!(
        "{mode}.cpu_ns_per_kib {:.1}",
        cpu.as_nanos() as f64 * 1024.0 / bytes as f64
    );
    println!(
        "{mode}.cpu_gbit_s {:.2}",
        bytes as f64 * 8.0 / cpu.as_secs_f64() / 1e9
    );
    // The simulation per IP packet: events run, IB packets put on links (each one twice here:
    // host to switch, switch to host).
    let per = |n: u64| n as f64 / packets as f64;
    println!(
        "{mode}.events_per_packet {:.1}",
        per(stats.events - stats0.events)
    );
    println!(
        "{mode}.ib_packets_per_packet {:.1}",
        per(stats.packets - stats0.packets)
    );
    println!("{mode}.wall_ms {:.1}", wall.as_secs_f64() * 1e3);
    println!("{mode}.sim_ms {:.1}", sim.as_secs_f64() * 1e3);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mib: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(512);
    let which = args.get(2).map_or("both", String::as_str);
    // As the lab's driver does at its start.
    ipoib_runtime::realtime::keep_freed_heap();
    if which != "connected" {
        bench(false, mib << 20);
    }
    if which != "datagram" {
        bench(true, mib << 20);
    }
}
