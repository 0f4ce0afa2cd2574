//! CM private data formats (`private_data::*`). Input: a selector byte, an 8-byte service ID, then
//! the private data. Every input is classified (`classify_with_data`), and the selector picks the
//! parser: IPoIB-CM (RFC 4755 §6), Annex A11 REQ header (`IpCmReqRepr::parse`) together with the
//! server-side check `verify_req_private_data`, the A11 REJ ARI (`IpCmReject::parse`), the iWarp
//! Hello and HelloReply. Properties: parse -> emit -> parse is the identity for each; the server
//! check accepts exactly the well-formed, version-0, zero-padded headers and then returns what
//! parse returns (and a rejection re-emits as an ARI that parses to the same rejection);
//! `classify_with_data` differs from `classify` only in turning iWarp into Linux rdma_cm IPOIB.
#![no_main]
mod common;

use ipoib_wire::private_data::{
    classify, classify_with_data, verify_req_private_data, HelloReplyRepr, HelloRepr, IpCmReject,
    IpCmReqRepr, IpCmServerPolicy, IpoibCmPrivateDataRepr, ServiceKind,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    if input.len() < 9 {
        return;
    }
    let sel = input[0];
    let sid = u64::from_be_bytes(input[1..9].try_into().expect("8 bytes"));
    let data = &input[9..];

    let k = classify_with_data(sid, data);
    common::check_describe(&k);
    let _ = k.name();
    match (classify(sid), k) {
        (a, b) if a == b => {}
        (ServiceKind::IwarpEmulation { port: p }, ServiceKind::RdmaCm { port, .. }) => {
            assert_eq!(p, port)
        }
        (a, b) => panic!("classify {a:?} but classify_with_data {b:?}"),
    }

    match sel % 5 {
        0 => {
            if let Ok(r) = IpoibCmPrivateDataRepr::parse(data) {
                common::check_describe(&r);
                let mut b = [0u8; 8];
                r.emit(&mut b).expect("8 bytes");
                assert_eq!(IpoibCmPrivateDataRepr::parse(&b), Ok(r));
                assert_eq!(&b[1..], &data[1..8], "only the reserved octet may change");
            }
        }
        1 => ip_cm_req(data),
        2 => {
            if let Ok(r) = IpCmReject::parse(data) {
                common::check_describe(&r);
                let mut b = vec![0u8; r.buffer_len()];
                r.emit(&mut b).expect("buffer_len is enough");
                assert_eq!(IpCmReject::parse(&b), Ok(r));
            }
        }
        3 => {
            if let Ok(r) = HelloRepr::parse(data) {
                common::check_describe(&r);
                let mut b = vec![0xa5u8; r.buffer_len()];
                r.emit(&mut b).expect("buffer_len is enough");
                assert_eq!(HelloRepr::parse(&b), Ok(r));
            }
        }
        _ => {
            if let Ok(r) = HelloReplyRepr::parse(data) {
                common::check_describe(&r);
                let mut b = vec![0xa5u8; r.buffer_len()];
                r.emit(&mut b).expect("buffer_len is enough");
                assert_eq!(HelloReplyRepr::parse(&b), Ok(r));
            }
        }
    }
});

fn ip_cm_req(data: &[u8]) {
    let parsed = IpCmReqRepr::parse(data);
    if let Ok(r) = &parsed {
        common::check_describe(r);
        let mut b = vec![0xa5u8; r.buffer_len()];
        r.emit(&mut b).expect("buffer_len is enough");
        assert_eq!(IpCmReqRepr::parse(&b).as_ref(), Ok(r));
    }
    let strict = IpCmServerPolicy::default();
    let lenient = IpCmServerPolicy {
        accept_mapped_ipv4: true,
        ..strict
    };
    for policy in [strict, lenient] {
        match verify_req_private_data(data, &policy, &[]) {
            Ok(v) => {
                // Accepted: the header parses to the same thing, at a version the server serves.
                assert_eq!(
                    parsed.as_ref(),
                    Ok(&v),
                    "verify accepted what parse refused"
                );
                assert_eq!(v.major_version, policy.major_version);
                assert!(v.minor_version <= policy.minor_version);
            }
            Err(rej) => {
                common::check_describe(&rej);
                let mut b = vec![0u8; rej.buffer_len()];
                rej.emit(&mut b).expect("buffer_len is enough");
                assert_eq!(IpCmReject::parse(&b), Ok(rej));
            }
        }
    }
    // The lenient server reads IPv4 fields as parse does: a version-0 header that parses is accepted.
    if let Ok(r) = &parsed {
        if r.major_version == 0 && r.minor_version == 0 {
            assert_eq!(
                verify_req_private_data(data, &lenient, &[]).as_ref(),
                Ok(r),
                "parse accepted what the lenient server check refused"
            );
        }
    }
}
