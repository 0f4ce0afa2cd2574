//! IGMP messages (`ipoib::IgmpRepr::parse`, RFC 1112, RFC 2236, RFC 3376). Input: an IGMP message,
//! whose checksum the target fixes first so that mutations reach the parser. Property: parse ->
//! emit -> parse is the identity, and every group record of a v3 report round-trips on its own.
#![no_main]

use ipoib_wire::ipoib::{GroupRecordRepr, IgmpPacket, IgmpRepr};
use libfuzzer_sys::fuzz_target;
use std::net::Ipv4Addr;

fuzz_target!(|data: &[u8]| {
    let mut msg = data.to_vec();
    if msg.len() >= 8 {
        IgmpPacket::new_unchecked(&mut msg[..]).fill_checksum();
    }
    let Ok(r) = IgmpRepr::parse(&msg) else {
        return;
    };
    if let IgmpRepr::V3Report { records } = r {
        assert_eq!(records.iter().count(), records.len());
        for rec in records.iter() {
            let mut b = vec![0u8; rec.buffer_len()];
            rec.emit(&mut b).expect("a parsed record emits");
            let back = GroupRecordRepr::<Ipv4Addr>::parse(&b).map(|(x, _)| x);
            assert_eq!(back, Ok(rec));
        }
    }
    let mut buf = vec![0u8; r.buffer_len()];
    r.emit(&mut buf).expect("buffer_len is enough");
    assert_eq!(IgmpRepr::parse(&buf), Ok(r));
});
