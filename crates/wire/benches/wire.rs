//! Wire-format benchmarks: whole-packet parse with both CRC checks, emit, the ICRC and VCRC next
//! to plain `crc32fast`, IPoIB frame parsing and the layer-by-layer decoder.
//!
//! Run: `cargo bench -p ipoib-wire --bench wire` (add `-- --warm-up-time 1 --measurement-time 3`
//! for a shorter run, or a filter such as `-- crc/`). docs/benchmarks/wire.md has the figures.

mod common;

use common::{Null, FULL_ECHO_DATA, SMALL_ECHO_DATA};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ipoib_wire::crc;
use ipoib_wire::decode::Decoder;
use ipoib_wire::ipoib::IpoibFrame;
use ipoib_wire::packet::Packet;
use ipoib_wire::render::Json;
use std::hint::black_box;

/// The four UD IPoIB ICMP frames: (name, IPoIB payload, whole packet).
fn ud_frames() -> Vec<(&'static str, Vec<u8>, Vec<u8>)> {
    let mut v = Vec::new();
    for (size, data) in [("small", SMALL_ECHO_DATA), ("mtu2048", FULL_ECHO_DATA)] {
        for (grh, global) in [("lrh", false), ("grh", true)] {
            let payload = common::ping_payload(data);
            let packet = common::ud_ping(data, global);
            let name: &'static str = Box::leak(format!("{size}_{grh}").into_boxed_str());
            v.push((name, payload, packet));
        }
    }
    v
}

/// (a) `Packet::parse`: header chain, length checks, ICRC and VCRC verdicts.
fn parse_check(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse_check");
    for (name, _, packet) in ud_frames() {
        let p = Packet::parse(&packet).expect("bench packet parses");
        assert!(p.crc_ok(), "bench packet has good CRCs");
        g.throughput(Throughput::Bytes(packet.len() as u64));
        g.bench_with_input(BenchmarkId::new(name, packet.len()), &packet, |b, pk| {
            b.iter(|| {
                let p = Packet::parse(black_box(pk)).unwrap();
                black_box(p.crc_ok())
            })
        });
    }
    g.finish();
}

/// (b) `PacketRepr::emit` of the same frames: headers, pad, ICRC and VCRC into a ready buffer.
fn emit(c: &mut Criterion) {
    let mut g = c.benchmark_group("emit");
    for (name, payload, packet) in ud_frames() {
        let global = name.ends_with("grh");
        let repr = common::ud_repr(&payload, global);
        let mut buf = vec![0u8; repr.buffer_len()];
        assert_eq!(repr.emit(&mut buf), Ok(packet.len()));
        assert_eq!(buf, packet);
        g.throughput(Throughput::Bytes(packet.len() as u64));
        g.bench_function(BenchmarkId::new(name, packet.len()), |b| {
            b.iter(|| black_box(&repr).emit(black_box(&mut buf)).unwrap())
        });
    }
    g.finish();
}

/// A buffer of `len` bytes that starts like a local IBA packet (LNH 2), or a global one (LNH 3), so
/// the ICRC accepts it.
fn crc_buffer(len: usize, global: bool) -> Vec<u8> {
    let mut b: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
    b[1] = if global { 0x03 } else { 0x02 };
    b
}

/// (c) ICRC (crc32fast from a masked initial register) of a local and of a global packet, plain
/// `crc32fast::hash`, and the VCRC (`vcrc`, and `vcrc_table`: the slicing table alone, which `vcrc`
/// uses below `VCRC_SIMD_MIN` bytes), over the same bytes.
fn crcs(c: &mut Criterion) {
    let mut g = c.benchmark_group("crc");
    // 2076 bytes: the ICRC span (LRH through pad) of a full 2048-byte-MTU UD packet without GRH.
    let sizes = [
        ("64B", 64),
        ("2KiB", 2048),
        ("2076B", 2076),
        // The VCRC span of a connected-mode RC SEND Middle packet: LRH, BTH, 4096 bytes, ICRC.
        ("4120B", 4120),
        ("64KiB", 65536),
    ];
    for (label, len) in sizes {
        let data = crc_buffer(len, false);
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_with_input(BenchmarkId::new("icrc", label), &data, |b, d| {
            b.iter(|| crc::icrc(black_box(d)).unwrap())
        });
        // With a GRH, five fields of the first 53 bytes are variant rather than two.
        let global = crc_buffer(len, true);
        g.bench_with_input(BenchmarkId::new("icrc_grh", label), &global, |b, d| {
            b.iter(|| crc::icrc(black_box(d)).unwrap())
        });
        g.bench_with_input(BenchmarkId::new("crc32fast", label), &data, |b, d| {
            b.iter(|| crc32fast::hash(black_box(d)))
        });
        g.bench_with_input(BenchmarkId::new("vcrc", label), &data, |b, d| {
            b.iter(|| crc::vcrc(black_box(d)))
        });
        g.bench_with_input(BenchmarkId::new("vcrc_table", label), &data, |b, d| {
            b.iter(|| crc::vcrc_table(black_box(d)))
        });
    }
    g.finish();
}

/// (d) `IpoibFrame::parse` of the UD payloads (IPv4 header and ICMP checksums verified).
fn ipoib_frame(c: &mut Criterion) {
    let mut g = c.benchmark_group("ipoib_frame");
    for (name, payload, _) in ud_frames().into_iter().filter(|f| f.0.ends_with("lrh")) {
        let name = name.trim_end_matches("_lrh");
        IpoibFrame::parse(&payload).expect("bench frame parses");
        g.throughput(Throughput::Bytes(payload.len() as u64));
        g.bench_with_input(BenchmarkId::new(name, payload.len()), &payload, |b, p| {
            b.iter(|| IpoibFrame::parse(black_box(p)).unwrap())
        });
    }
    g.finish();
}

/// (e) `Decoder::packet` over a set of packets, with a describer that drops the fields and with
/// one that renders JSON like `ipoib decode --json`. One iteration decodes the whole set. Two
/// sets: `ipoib_wire::samples::all()` (one packet of every kind: mostly SA and CM MADs) and the
/// traffic-like mix of `common::mixed()` (mostly UD IPoIB data, half of it full 2048-byte MTU).
fn decode(c: &mut Criterion) {
    let samples: Vec<Vec<u8>> = ipoib_wire::samples::all()
        .into_iter()
        .map(|s| s.bytes)
        .collect();
    let mut g = c.benchmark_group("decode");
    for (set_name, set) in [("samples", samples), ("mixed", common::mixed())] {
        let bytes: usize = set.iter().map(Vec::len).sum();
        let id = format!("{set_name}_{}pkts_{bytes}B", set.len());
        g.throughput(Throughput::Elements(set.len() as u64));
        let mut dec = Decoder::new();
        for p in &set {
            dec.packet(p, &mut Null).expect("bench packet decodes");
        }
        g.bench_function(BenchmarkId::new("null", &id), |b| {
            b.iter(|| {
                for p in &set {
                    dec.packet(black_box(p), &mut Null).unwrap();
                }
            })
        });
        // The renderer `ipoib decode --json` uses, reusing its buffer between packets.
        let mut j = Json::lines();
        g.bench_function(BenchmarkId::new("json", &id), |b| {
            b.iter(|| {
                for p in &set {
                    j.out.clear();
                    j.open();
                    dec.packet(black_box(p), &mut j).unwrap();
                    j.close();
                    black_box(j.out.len());
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, parse_check, emit, crcs, ipoib_frame, decode);
criterion_main!(benches);
