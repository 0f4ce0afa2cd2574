//! Capture files (`pcap::PcapReader::new` and iteration), link types 197 (ERF) and 247. Property:
//! the reader never panics, stops after its first error, and the packets it yields, written again
//! with `PcapWriter` (same link type), read back as the same bytes, with the same time stamps
//! where the format can carry them (before 2^32 s; ERF fixed-point time stamps round to the same
//! nanosecond).
#![no_main]

use ipoib_wire::pcap::{erf_ts_from_ns, erf_ts_to_ns, LinkType, PcapReader, PcapWriter};
use libfuzzer_sys::fuzz_target;

/// 2^32 seconds in nanoseconds: the first time stamp 32-bit seconds cannot hold.
const MAX_TS_NS: u64 = (1 << 32) * 1_000_000_000;

fuzz_target!(|data: &[u8]| {
    let Ok(reader) = PcapReader::new(data) else {
        return;
    };
    let link = reader.header().link_type;
    let mut packets = Vec::new();
    let mut errors = 0;
    for p in reader {
        match p {
            Ok(p) => {
                assert_eq!(errors, 0, "a packet after an error");
                assert!(p.offset < data.len());
                if let Some(erf) = &p.erf {
                    assert_eq!(p.ts_ns, erf.ts_ns());
                    // ERF time: nanoseconds -> fixed point -> nanoseconds is the identity within
                    // the 32-bit seconds of the format (the last fraction of second 2^32 - 1 rounds
                    // up to 2^32 s, which wraps like every pcap time stamp does in 2106).
                    if p.ts_ns < MAX_TS_NS {
                        assert_eq!(erf_ts_to_ns(erf_ts_from_ns(p.ts_ns)), p.ts_ns);
                    }
                }
                packets.push((p.ts_ns, p.data));
            }
            Err(e) => {
                errors += 1;
                let _ = e.to_string();
            }
        }
    }
    assert!(errors <= 1);

    let mut w = PcapWriter::new(Vec::new(), link).expect("197 and 247 are writable");
    for (ts, d) in &packets {
        w.write_packet(*ts, d).expect("writing to a Vec");
    }
    let out = w.into_inner().expect("a Vec");
    let again: Vec<_> = PcapReader::new(&out)
        .expect("a written capture reads")
        .map(|p| p.expect("a written record reads"))
        .collect();
    assert_eq!(again.len(), packets.len());
    for ((ts, d), q) in packets.iter().zip(&again) {
        // An ERF record holds at most 65535 - 16 captured bytes; the writer cuts longer ones.
        let cut = match link {
            LinkType::Erf => d.len().min(usize::from(u16::MAX) - 16),
            _ => d.len(),
        };
        assert_eq!(q.data, &d[..cut]);
        // The pcap record header holds 32-bit seconds: later times wrap (year 2106).
        if *ts < MAX_TS_NS {
            assert_eq!(q.ts_ns, *ts);
        }
    }
});
