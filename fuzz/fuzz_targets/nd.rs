//! Neighbour Discovery messages (`ipoib::NdRepr::parse(src, dst, icmp)`). Input: source and
//! destination IPv6 addresses (16 bytes each), then the ICMPv6 message, whose checksum the target
//! fixes first so that mutations reach the ND parser. Property: parse -> emit -> parse is the
//! identity, every option a parsed message holds parses and round-trips on its own, and the
//! description and summary render.
#![no_main]
mod common;

use ipoib_wire::ipoib::{NdOptionRepr, NdRepr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 32 {
        return;
    }
    let src = common::addr16(&data[..16]);
    let dst = common::addr16(&data[16..32]);
    let mut msg = data[32..].to_vec();
    common::fix_icmpv6(src, dst, &mut msg);
    let Ok(nd) = NdRepr::parse(src, dst, &msg) else {
        return;
    };
    common::check_describe(&nd);
    let _ = nd.summary().to_string();
    let _ = (nd.source_lla(), nd.target_lla(), nd.mtu());
    for o in nd.options() {
        let o: NdOptionRepr = o.expect("parse checked every option");
        common::check_describe(&o);
        let mut b = vec![0u8; o.buffer_len()];
        o.emit(&mut b).expect("buffer_len is enough");
        let view = ipoib_wire::ipoib::NdOption::new_checked(&b[..]).expect("an emitted option");
        assert_eq!(NdOptionRepr::parse(&view), Ok(o));
    }
    let mut buf = vec![0u8; nd.buffer_len()];
    nd.emit(src, dst, &mut buf).expect("buffer_len is enough");
    assert_eq!(NdRepr::parse(src, dst, &buf), Ok(nd));
});
