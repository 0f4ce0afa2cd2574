//! MLD messages (`ipoib::MldRepr::parse(src, dst, icmp)`, RFC 2710, RFC 3810). Input: source and
//! destination IPv6 addresses (16 bytes each), then the ICMPv6 message, whose checksum the target
//! fixes first. Property: parse -> emit -> parse is the identity, and every address record of an
//! MLDv2 report round-trips on its own.
#![no_main]
mod common;

use ipoib_wire::ipoib::{GroupRecordRepr, MldRepr};
use libfuzzer_sys::fuzz_target;
use std::net::Ipv6Addr;

fuzz_target!(|data: &[u8]| {
    if data.len() < 32 {
        return;
    }
    let src = common::addr16(&data[..16]);
    let dst = common::addr16(&data[16..32]);
    let mut msg = data[32..].to_vec();
    common::fix_icmpv6(src, dst, &mut msg);
    let Ok(r) = MldRepr::parse(src, dst, &msg) else {
        return;
    };
    if let MldRepr::V2Report { records } = r {
        assert_eq!(records.iter().count(), records.len());
        for rec in records.iter() {
            let mut b = vec![0u8; rec.buffer_len()];
            rec.emit(&mut b).expect("a parsed record emits");
            let back = GroupRecordRepr::<Ipv6Addr>::parse(&b).map(|(x, _)| x);
            assert_eq!(back, Ok(rec));
        }
    }
    let mut buf = vec![0u8; r.buffer_len()];
    r.emit(src, dst, &mut buf).expect("buffer_len is enough");
    assert_eq!(MldRepr::parse(src, dst, &buf), Ok(r));
});
