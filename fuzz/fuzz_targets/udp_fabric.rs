//! The datagrams between a host and the fabric (`udp_fabric::DatagramRepr`, docs/UDP-FABRIC.md).
//! Properties: parse -> emit -> parse is the identity (AttachChallenge and the AttachRequest's
//! cookie included); a reject of another version is read only from what this version does not
//! parse.
#![no_main]

use ipoib_wire::udp_fabric::{foreign_reject, DatagramRepr, VERSION};
use ipoib_wire::Error;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some((v, _)) = foreign_reject(data) {
        assert_ne!(v, VERSION);
        assert_eq!(DatagramRepr::parse(data), Err(Error::Unsupported));
    }
    let Ok(d) = DatagramRepr::parse(data) else {
        return;
    };
    let buf = d.to_vec().expect("what parses emits");
    assert_eq!(buf.len(), d.buffer_len());
    assert_eq!(DatagramRepr::parse(&buf), Ok(d));
});
