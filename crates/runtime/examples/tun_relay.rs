//! Baseline for scripts/bench-ip.sh: a bare TUN-to-TUN relay, the ceiling of any link that
//! carries the Linux IP stack through TUN devices (as `ipoib lab` will).
//!
//! ```sh
//! cargo run --release -p ipoib-runtime --example tun_relay -- NAME_A NAME_B MTU
//! ```
//!
//! Opens two layer-3 TUN devices without packet information (no 4-byte flags/protocol header in
//! front of each packet), named NAME_A and NAME_B with the given MTU, in the network namespace it
//! runs in, and leaves them down and without addresses: the caller moves each into its own
//! namespace and configures it there (a TUN device keeps its open file across the move). Then two
//! threads each read one device and write every packet, unchanged, to the other. Nothing else:
//! no parsing, no queue, no copy beyond the one buffer per direction. A TUN file gives one
//! packet per read(2) and takes one per write(2) (no batching call exists for it without
//! `IFF_VNET_HDR` segmentation offload, which would no longer be the bare path), so there is
//! nothing cheap to batch.
//!
//! Prints one `ready` line on standard output once both devices exist. A write that fails (the
//! other device down, its queue full) drops that packet and is counted; a read that fails other
//! than by interruption ends that direction (the device went away, e.g. with its namespace).
//! SIGINT or SIGTERM ends the program with status 0 and a count of packets per direction on
//! standard error; closing the files removes both devices (they are not persistent). It exits
//! with status 1 if a direction ended by itself, 2 on bad arguments or devices it cannot open.
//! Linux only, needs CAP_NET_ADMIN. Not run by the test suite (benchmark only).
#![forbid(unsafe_code)]

use std::io::ErrorKind;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// Packets moved and dropped in one direction.
#[derive(Default)]
struct Counts {
    packets: AtomicU64,
    bytes: AtomicU64,
    dropped: AtomicU64,
}

fn open(name: &str, mtu: u16) -> std::io::Result<Arc<tun_rs::SyncDevice>> {
    // Blocking, no packet information, no offload; left down.
    tun_rs::DeviceBuilder::new()
        .name(name)
        .mtu(mtu)
        .layer(tun_rs::Layer::L3)
        .packet_information(false)
        .offload(false)
        .inherit_enable_state()
        .build_sync()
        .map(Arc::new)
}

/// Copies every packet read from `from` to `to` until a read fails; returns that error.
fn relay(from: &tun_rs::SyncDevice, to: &tun_rs::SyncDevice, counts: &Counts) -> std::io::Error {
    // The largest IPv4 or IPv6 (non-jumbo) packet; a TUN MTU is at most 65535.
    let mut buf = vec![0u8; 65_536];
    loop {
        let n = match from.recv(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return e,
        };
        match to.send(&buf[..n]) {
            // A TUN write takes the whole packet or fails; a short count would be a cut packet.
            Ok(w) if w == n => {
                counts.packets.fetch_add(1, Ordering::Relaxed);
                counts.bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            Ok(_) | Err(_) => {
                counts.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (name_a, name_b, mtu) = match args.as_slice() {
        [a, b, m] => match m.parse::<u16>() {
            Ok(m) if m >= 68 => (a.clone(), b.clone(), m),
            _ => {
                eprintln!("tun_relay: MTU must be 68..=65535, not {m}");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("usage: tun_relay NAME_A NAME_B MTU");
            return ExitCode::from(2);
        }
    };

    let stop = Arc::new(AtomicBool::new(false));
    for s in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(s, Arc::clone(&stop)) {
            eprintln!("tun_relay: cannot install the signal handler: {e}");
            return ExitCode::from(2);
        }
    }

    let (dev_a, dev_b) = match (open(&name_a, mtu), open(&name_b, mtu)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("tun_relay: cannot open the TUN devices {name_a}, {name_b}: {e}");
            return ExitCode::from(2);
        }
    };
    let (read_a, write_a) = (Arc::clone(&dev_a), Arc::clone(&dev_a));
    let (read_b, write_b) = (Arc::clone(&dev_b), Arc::clone(&dev_b));
    let a_to_b = Arc::new(Counts::default());
    let b_to_a = Arc::new(Counts::default());
    let workers = [
        (
            format!("{name_a} -> {name_b}"),
            read_a,
            write_b,
            Arc::clone(&a_to_b),
        ),
        (
            format!("{name_b} -> {name_a}"),
            read_b,
            write_a,
            Arc::clone(&b_to_a),
        ),
    ]
    .map(|(label, from, to, counts)| {
        let handle = thread::spawn(move || relay(&from, &to, &counts));
        (label, handle)
    });
    println!("ready");

    // The workers block in read(2); they are not joined on a signal but end with the process,
    // whose exit closes the files and so removes the devices.
    let mut status = ExitCode::SUCCESS;
    while !stop.load(Ordering::Relaxed) {
        if workers.iter().any(|(_, h)| h.is_finished()) {
            status = ExitCode::from(1);
            break;
        }
        thread::sleep(Duration::from_millis(50));
    }
    for (label, handle) in workers {
        if handle.is_finished() {
            let why = handle
                .join()
                .map_or_else(|_| "panicked".to_string(), |e| e.to_string());
            eprintln!("tun_relay: {label} ended: {why}");
        }
    }
    for (label, c) in [
        (format!("{name_a} -> {name_b}"), &a_to_b),
        (format!("{name_b} -> {name_a}"), &b_to_a),
    ] {
        eprintln!(
            "tun_relay: {label}: {} packets, {} bytes, {} dropped",
            c.packets.load(Ordering::Relaxed),
            c.bytes.load(Ordering::Relaxed),
            c.dropped.load(Ordering::Relaxed)
        );
    }
    status
}
