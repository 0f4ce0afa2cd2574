//! CM messages (`cm::CmMessage::parse`). Input: the MAD attribute ID (2 bytes, big-endian) then the
//! 232-byte body. Property: parse -> emit -> parse (with the message's own attribute ID) is the
//! identity, and the attribute ID is the one parsed with; the description is well formed.
#![no_main]
mod common;

use ipoib_wire::cm::{CmMessage, BODY_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [a, b, body @ ..] = data else {
        return;
    };
    let attr = u16::from_be_bytes([*a, *b]);
    let Ok(m) = CmMessage::parse(attr, body) else {
        return;
    };
    assert_eq!(m.attribute_id(), attr);
    common::check_describe(&m);
    let _ = (m.local_comm_id(), m.remote_comm_id(), m.name());
    assert!(m.private_data().len() <= BODY_LEN);
    let mut buf = [0xa5u8; BODY_LEN];
    m.emit(&mut buf).expect("232 bytes are enough");
    assert_eq!(CmMessage::parse(attr, &buf), Ok(m));
    // Every field the repr holds came from the body: emitting into a differently filled buffer
    // gives the same bytes (reserved fields are written, not left as they were).
    let mut buf2 = [0u8; BODY_LEN];
    m.emit(&mut buf2).expect("232 bytes are enough");
    assert_eq!(buf, buf2, "emit left bytes of the buffer unwritten");
    if let CmMessage::Rej(r) = &m {
        let _ = r.ari();
    }
});
