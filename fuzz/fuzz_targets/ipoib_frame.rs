//! IPoIB frames (`ipoib::IpoibFrame::parse`): the 4-byte encapsulation header and the IPv4, IPv6,
//! ARP or RARP datagram behind it. Input: a flags byte, then the frame. Flag bit 0 makes the target
//! fix the IPv4 header / ICMP / ICMPv6 checksums first, so that mutations get past them.
//! Property: parse -> emit -> parse is the identity (emit recomputes lengths and checksums; link
//! padding after the IP total length is dropped), `buffer_len` is what emit writes, and the summary
//! and description render.
#![no_main]
mod common;

use ipoib_wire::ipoib::IpoibFrame;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [flags, frame @ ..] = data else {
        return;
    };
    let mut frame = frame.to_vec();
    if flags & 1 != 0 && frame.len() > 4 {
        common::fix_ip_checksums(&mut frame[4..]);
    }
    let Ok(f) = IpoibFrame::parse(&frame) else {
        assert!(frame.len() < 4);
        return;
    };
    common::check_describe(&f);
    let _ = f.summary().to_string();
    let n = f.buffer_len();
    let mut buf = vec![0u8; n];
    if f.emit(&mut buf).is_err() {
        // Only an IPv4 datagram whose options or length emit refuses; parse never builds one.
        panic!("a parsed frame does not re-emit: {f:?}");
    }
    let g = IpoibFrame::parse(&buf).expect("an emitted frame parses");
    assert_eq!(g, f);
    assert!(n <= frame.len(), "emit made the frame longer");
});
