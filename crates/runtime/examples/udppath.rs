//! The emulation's instructions per connected-mode packet over the UDP fabric, without sockets
//! or TUN devices: what `ipoib fabric` and two `ipoib attach` processes run per packet
//! (docs/benchmarks/udp.md "Instructions per packet by process"). The three processes run in
//! one, as `tests/common/udp_world.rs` drives them (the runtime's agents, turned as the
//! real-time driver turns them, datagrams in memory on one virtual clock): nothing depends on
//! wall time, so every run of the same arguments runs the same instructions.
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

#[path = "../tests/common/udp_world.rs"]
mod world;

use std::time::Duration;
use world::{ipv4, World, BATCH};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let packets: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(96);
    let pcap = args
        .iter()
        .position(|a| a == "--pcap")
        .and_then(|i| args.get(i + 1));
    // As the processes do at their start (`realtime::Driver`).
    ipoib_runtime::realtime::keep_freed_heap();
    let mut w = World::new(pcap.is_some());
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
    for _ in 0..packets.div_ceil(BATCH) {
        let (a0, b0) = (w.a.delivered, w.b.delivered);
        w.send_a(&big, BATCH);
        assert!(
            w.run(Duration::from_secs(5), |w| w.b.delivered >= b0 + BATCH),
            "every packet of the batch delivered"
        );
        w.send_b(&ack);
        assert!(
            w.run(Duration::from_secs(5), |w| w.a.delivered > a0),
            "the answer"
        );
    }
    let events = w.fabric.server().sim().stats();
    let n = packets.div_ceil(BATCH) * BATCH;
    println!("packets {n}");
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
