//! The emulation's instructions per packet over the UDP fabric (connected mode, or datagram mode
//! with offload: `--dgram` below), without sockets or TUN devices: what `ipoib fabric` and two
//! `ipoib attach` processes run per packet (docs/benchmarks/udp.md "Instructions per packet by
//! process"). The three processes run in one, as `tests/common/udp_world.rs` drives them (the
//! runtime's agents, turned as the real-time driver turns them, datagrams in memory on one
//! virtual clock): nothing depends on wall time, so every run of the same arguments runs the
//! same instructions.
//!
//! Host A (10.0.0.2) hands IPv4 packets of 65,520 bytes (connected mode, RFC 4755) to its
//! interface in batches of 16, the processes turn until host B (10.0.0.3) has them all, and B
//! answers each batch with one 52-byte packet (a TCP ACK's size), as `examples/datapath.rs` does
//! inside one process. Each process's turn is a function of its own (`turn_a`, `turn_fabric`,
//! `turn_b`), so `callgrind_annotate --inclusive=yes` gives each side's instructions; the
//! harness's stand-ins for the kernel (the copy of each packet into the read buffer, the copy of
//! each datagram into the socket) are outside them.
//!
//!   cargo build --release -p ipoib-runtime --example udppath
//!   valgrind --tool=callgrind target/release/examples/udppath 96
//!   valgrind --tool=callgrind target/release/examples/udppath 32
//!
//! takes the difference of the two runs over 64 packets (bring-up and warm-up cancel out).
//! `udppath N --pcap FILE` writes the fabric's capture of the whole run (for comparing builds).
//!
//! `udppath N --dgram`: datagram mode (MTU 2,044) with offload at the TUN devices, as `ipoib
//! attach` runs it: A's OS hands over TCP super-packets of 32 segments of 1,992 bytes (two a
//! turn), which A cuts (`ipoib_runtime::gso`) into IP packets of 2,044 bytes, one InfiniBand
//! packet each; B's writer thread coalesces what B delivers (`ipoib_runtime::gro`, the function
//! `tun_writer`); B answers each pair with one 52-byte packet. N counts the 2,044-byte packets
//! (a multiple of 64): `udppath 192 --dgram` minus `udppath 64 --dgram` is over 128.

#[path = "../tests/common/udp_world.rs"]
mod world;

use std::time::Duration;
use world::{ipv4, tcp_super, World, BATCH, DGRAM_MSS};

/// Datagram mode: segments per super-packet, super-packets per turn of A.
const SEGS: usize = 32;
const SUPERS: usize = 2;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let packets: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(96);
    let pcap = args
        .iter()
        .position(|a| a == "--pcap")
        .and_then(|i| args.get(i + 1));
    // As the processes do at their start (`realtime::Driver`).
    ipoib_runtime::realtime::keep_freed_heap();
    let dgram = args.iter().any(|a| a == "--dgram");
    let mut w = World::with_mode(pcap.is_some(), !dgram);
    let carrier = |w: &World| {
        w.a.emu.app().is_some_and(|a| a.carrier()) && w.b.emu.app().is_some_and(|a| a.carrier())
    };
    assert!(w.run(Duration::from_secs(30), carrier), "both hosts up");
    // Warm up: ARP, the path, the IPoIB-CM connection both ways.
    let big = ipv4(65_520, 2, 3);
    let ack = ipv4(52, 3, 2);
    let small = ipv4(52, 2, 3);
    for _ in 0..3 {
        let (a0, b0) = (w.a.delivered, w.b.delivered);
        w.send_a(&small, 1);
        assert!(
            w.run(Duration::from_secs(5), |w| w.b.delivered > b0),
            "warm-up to B"
        );
        w.send_b(&ack);
        assert!(
            w.run(Duration::from_secs(5), |w| w.a.delivered > a0),
            "warm-up to A"
        );
    }
    let (sim0, events0) = (w.now, w.fabric.server().sim().stats());
    let b_bytes0 = w.b.delivered_bytes;
    let batch = if dgram { SEGS * SUPERS } else { BATCH };
    let writes0 = w.b.writes;
    let (mut seq, mut id) = (1u32, 1u16);
    for _ in 0..packets.div_ceil(batch) {
        let (a0, b0) = (w.a.delivered, w.b.delivered);
        if dgram {
            let supers: Vec<_> = (0..SUPERS)
                .map(|_| {
                    let s = tcp_super(2, 3, id, seq, DGRAM_MSS, SEGS);
                    seq = seq.wrapping_add(u32::from(DGRAM_MSS) * SEGS as u32);
                    id = id.wrapping_add(SEGS as u16);
                    s
                })
                .collect();
            let reads: Vec<_> = supers.iter().map(|(h, p)| (*h, &p[..])).collect();
            w.send_a_reads(&reads);
        } else {
            w.send_a(&big, BATCH);
        }
        assert!(
            w.run(Duration::from_secs(5), |w| w.b.delivered >= b0 + batch),
            "every packet of the batch delivered"
        );
        w.send_b(&ack);
        assert!(
            w.run(Duration::from_secs(5), |w| w.a.delivered > a0),
            "the answer"
        );
    }
    let events = w.fabric.server().sim().stats();
    let n = packets.div_ceil(batch) * batch;
    println!("packets {n}");
    println!("b.tun_writes {}", w.b.writes - writes0);
    println!("bytes {}", w.b.delivered_bytes - b_bytes0);
    println!(
        "fabric.events_per_packet {:.1}",
        (events.events - events0.events) as f64 / n as f64
    );
    println!(
        "fabric.ib_packets_per_packet {:.1}",
        (events.packets - events0.packets) as f64 / n as f64
    );
    println!("virtual_ms {:.3}", (w.now - sim0).as_secs_f64() * 1e3);
    let s = w.fabric.server().slot(0).map(|s| s.counters());
    println!("slot0 {s:?}");
    if let Some(path) = pcap {
        let bytes = w
            .fabric
            .server_mut()
            .sim_mut()
            .capture_mut()
            .map(|c| c.take_bytes())
            .unwrap_or_default();
        std::fs::write(path, bytes).expect("write the capture");
    }
}
