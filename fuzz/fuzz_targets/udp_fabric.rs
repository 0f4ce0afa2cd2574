//! The datagrams between a host and the fabric (`udp_fabric::DatagramRepr`, docs/UDP-FABRIC.md).
//! Property: parse -> emit -> parse is the identity.
#![no_main]

use ipoib_wire::udp_fabric::DatagramRepr;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(d) = DatagramRepr::parse(data) else {
        return;
    };
    let buf = d.to_vec().expect("what parses emits");
    assert_eq!(buf.len(), d.buffer_len());
    assert_eq!(DatagramRepr::parse(&buf), Ok(d));
});
