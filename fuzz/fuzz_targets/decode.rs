//! Layer-by-layer decoding (`decode::Decoder::packet`), as `ipoib decode` runs it. Input: a sequence
//! of packets, each preceded by its length (2 bytes, big-endian), decoded by one `Decoder` so that
//! the CM state (REQ service kinds remembered for REP/REJ) is exercised. Properties, per packet:
//! no panic; the fields form a well-formed JSON object (balanced groups, snake_case names, no
//! duplicate key in any object, counting the `<name>_name` keys of named code points and the
//! `packet`/`ts_ns`/`len` keys the CLI adds); there is always a `summary`; `error` appears exactly
//! when `packet` returns an error; a packet that parses has `icrc_ok` and `vcrc_ok`. Each packet is
//! also described through `describe::Collect`, which renders every value.
#![no_main]
mod common;

use ipoib_wire::decode::Decoder;
use ipoib_wire::describe::Collect;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut dec = Decoder::new();
    let mut dec2 = Decoder::new();
    let mut rest = data;
    while rest.len() >= 2 {
        let n = usize::from(u16::from_be_bytes([rest[0], rest[1]])).min(rest.len() - 2);
        let pkt = &rest[2..2 + n];
        rest = &rest[2 + n..];

        let mut c = common::Checker::for_cli();
        let r = dec.packet(pkt, &mut c);
        c.finish();
        assert!(c.has_top("summary"), "no summary");
        assert_eq!(
            c.has_top("error"),
            r.is_err(),
            "error field vs result {r:?}"
        );
        if ipoib_wire::packet::Packet::parse(pkt).is_ok() {
            assert!(c.has_top("icrc_ok") && c.has_top("vcrc_ok"));
        }

        let mut col = Collect::default();
        let r2 = dec2.packet(pkt, &mut col);
        assert_eq!(r, r2, "two decoders fed the same packets disagree");
        assert_eq!(
            col.fields.len(),
            c.fields,
            "the same packet described differently"
        );
    }
});
