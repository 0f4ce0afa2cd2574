//! The datagrams between a host and the fabric (`udp_fabric::DatagramRepr`, docs/UDP-FABRIC.md).
//! Properties: parse -> emit -> parse is the identity (AttachChallenge, the AttachRequest's
//! cookie and nonce, the AttachAccept's nonce and the AttachReject's optional nonce included);
//! a reject of another version is read only from what this version does not parse; the
//! fabric's challenge and reject to a request that parses are shorter than it (no
//! amplification).
#![no_main]

use ipoib_wire::udp_fabric::{foreign_reject, DatagramRepr, MessageRepr, RejectReason, VERSION};
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
    assert_eq!(DatagramRepr::parse(&buf), Ok(d.clone()));
    if let MessageRepr::AttachRequest { cookie, nonce, .. } = d.message {
        for message in [
            MessageRepr::AttachChallenge { cookie, nonce },
            MessageRepr::AttachReject {
                reason: RejectReason::NoFreeSlot,
                nonce,
            },
        ] {
            let answer = DatagramRepr {
                session: 0,
                message,
            };
            assert!(answer.buffer_len() < buf.len());
        }
    }
});
