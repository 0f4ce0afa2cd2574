//! The common MAD header (`mad::MadHeaderRepr::parse_bytes`). Property: parse -> emit -> parse is
//! the identity, and emit reproduces every byte of the 24 but the reserved field (bytes 18-19),
//! which it zeroes. Unknown classes, methods and statuses survive. The bytes after the header are
//! also read as an RMPP header and as each class-independent attribute (ClassPortInfo, Notice,
//! InformInfo), each with the same round-trip property.
#![no_main]
mod common;

use ipoib_wire::mad::{
    ClassPortInfoRepr, InformInfoRepr, MadHeaderRepr, NoticeRepr, RmppRepr, MAD_HEADER_LEN,
    RMPP_HEADER_LEN,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(h) = MadHeaderRepr::parse_bytes(data) else {
        assert!(data.len() < MAD_HEADER_LEN);
        return;
    };
    common::check_describe(&h);
    let mut buf = [0xa5u8; MAD_HEADER_LEN];
    h.emit(&mut buf);
    assert_eq!(MadHeaderRepr::parse_bytes(&buf), Ok(h));
    assert_eq!(&buf[..18], &data[..18]);
    assert_eq!(&buf[18..20], &[0, 0]);
    assert_eq!(&buf[20..24], &data[20..24]);
    let body = &data[MAD_HEADER_LEN..];
    // The RMPP header that follows in RMPP-capable classes.
    if let Ok(r) = RmppRepr::parse_bytes(body) {
        common::check_describe(&r);
        let mut b = [0u8; RMPP_HEADER_LEN];
        r.emit(&mut b);
        assert_eq!(RmppRepr::parse_bytes(&b), Ok(r));
    }
    if let Ok(r) = ClassPortInfoRepr::parse(body) {
        common::check_describe(&r);
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b);
        assert_eq!(ClassPortInfoRepr::parse(&b), Ok(r));
    }
    if let Ok(r) = NoticeRepr::parse(body) {
        common::check_describe(&r);
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b);
        assert_eq!(NoticeRepr::parse(&b), Ok(r));
    }
    if let Ok(r) = InformInfoRepr::parse(body) {
        common::check_describe(&r);
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b);
        assert_eq!(InformInfoRepr::parse(&b), Ok(r));
    }
});
