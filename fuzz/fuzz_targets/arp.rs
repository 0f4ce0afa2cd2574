//! IPoIB ARP/RARP (`ipoib::ArpRepr`, hardware type 32, 20-byte addresses). Property: parse -> emit
//! -> parse is the identity and emit reproduces the 56 bytes parsed (every byte is a field).
#![no_main]
mod common;

use ipoib_wire::ipoib::{ArpPacket, ArpRepr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(a) = ArpRepr::parse(&ArpPacket::new_unchecked(data)) else {
        return;
    };
    common::check_describe(&a);
    let n = a.buffer_len();
    let mut buf = vec![0xa5u8; n];
    a.emit(&mut ArpPacket::new_unchecked(&mut buf[..]));
    assert_eq!(ArpRepr::parse(&ArpPacket::new_unchecked(&buf[..])), Ok(a));
    assert_eq!(&buf[..], &data[..n]);
});
