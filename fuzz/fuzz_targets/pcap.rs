//! Capture files (`pcap::CaptureReader`: classic pcap of link types 197 (ERF) and 247, and pcapng).
//! Property: the reader never panics, stops after its first error, and the IB packets it yields,
//! written again with `PcapWriter` (as ERF), read back as the same bytes, with the same time stamps
//! where the format can carry them (before 2^32 s; ERF fixed-point time stamps round to the same
//! nanosecond).
#![no_main]

use ipoib_wire::pcap::{erf_ts_from_ns, erf_ts_to_ns, CaptureReader, LinkType, PcapWriter};
use libfuzzer_sys::fuzz_target;

/// 2^32 seconds in nanoseconds: the first time stamp 32-bit seconds cannot hold.
const MAX_TS_NS: u64 = (1 << 32) * 1_000_000_000;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = CaptureReader::new(data) else {
        return;
    };
    let mut packets = Vec::new();
    let mut errors = 0;
    while let Some(p) = reader.next_packet() {
        match p {
            Ok(p) => {
                assert_eq!(errors, 0, "a packet after an error");
                assert!(p.offset < data.len() as u64);
                if let Some(erf) = &p.erf {
                    assert_eq!(p.ts_ns, Some(erf.ts_ns()));
                    // ERF time: nanoseconds -> fixed point -> nanoseconds is the identity within
                    // the 32-bit seconds of the format (the last fraction of second 2^32 - 1 rounds
                    // up to 2^32 s, which wraps like every pcap time stamp does in 2106).
                    if erf.ts_ns() < MAX_TS_NS {
                        assert_eq!(erf_ts_to_ns(erf_ts_from_ns(erf.ts_ns())), erf.ts_ns());
                    }
                }
                if matches!(p.link_type, LinkType::Erf | LinkType::Infiniband) {
                    packets.push((p.ts_ns.unwrap_or(0), p.data.to_vec()));
                }
            }
            Err(e) => {
                errors += 1;
                let _ = e.to_string();
            }
        }
    }
    assert!(errors <= 1);

    let mut w = PcapWriter::new(Vec::new(), LinkType::Erf).expect("197 is writable");
    for (ts, d) in &packets {
        w.write_packet(*ts, d).expect("writing to a Vec");
    }
    let out = w.into_inner().expect("a Vec");
    let again = CaptureReader::read_all(&out[..]).expect("a written capture reads");
    assert_eq!(again.len(), packets.len());
    for ((ts, d), q) in packets.iter().zip(&again) {
        // An ERF record holds at most 65535 - 16 captured bytes; the writer cuts longer ones.
        let cut = d.len().min(usize::from(u16::MAX) - 16);
        assert_eq!(q.data, &d[..cut]);
        // The pcap record header holds 32-bit seconds: later times wrap (year 2106).
        if *ts < MAX_TS_NS {
            assert_eq!(q.ts_ns, Some(*ts));
        }
    }
});
