//! Whole IB packets (`packet::Packet::parse`). Property: a packet that parses, rebuilt from its
//! `repr()` by `PacketRepr::emit`, has the same length, parses to the same headers and payload, and
//! its rebuilt CRCs are good (emit computes them). Its description is well formed.
#![no_main]
mod common;

use ipoib_wire::packet::Packet;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = Packet::parse(data) else {
        return;
    };
    common::check_describe(&p);
    let repr = p.repr();
    assert_eq!(repr.buffer_len(), data.len(), "buffer_len of {p:?}");
    let mut buf = vec![0u8; data.len()];
    let n = repr.emit(&mut buf).expect("a parsed packet re-emits");
    assert_eq!(n, data.len());
    let q = Packet::parse(&buf).expect("an emitted packet parses");
    assert_eq!(q.repr(), repr);
    assert_eq!(q.pad_count, p.pad_count);
    assert!(q.icrc_ok && q.vcrc_ok, "emit wrote bad CRCs: {q:?}");
    // The CRC fields are the only bytes emit computes that parse reads back as a verdict: when the
    // input's CRCs were good, the rebuilt packet carries the same ones unless reserved bits or pad
    // bytes (covered by the ICRC, dropped by the repr) were set in the input.
    if p.crc_ok() && buf != data {
        assert!(
            q.icrc != p.icrc || q.vcrc != p.vcrc,
            "bytes differ but CRCs match: {p:?}"
        );
    }
});
