//! Whole SA MADs (`sa::SaMadRepr::parse`). Property: parse -> emit -> parse is the identity (the
//! attribute, or the raw table of a GetTableResp, included); every record of a table parses or
//! fails without panicking, and a record that parses round-trips too. The description is well formed.
#![no_main]
mod common;

use ipoib_wire::mad::MAD_LEN;
use ipoib_wire::sa::{SaAttribute, SaMadRepr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(m) = SaMadRepr::parse(data) else {
        return;
    };
    common::check_describe(&m);
    assert_eq!(m.buffer_len(), MAD_LEN);
    let bytes = m.to_bytes();
    let again = SaMadRepr::parse(&bytes).expect("an emitted SA MAD parses");
    assert_eq!(again, m);
    let n = m.records().record_count();
    let id = m.header.attribute_id;
    let (mut seen, mut failed) = (0, false);
    for r in m.records() {
        seen += 1;
        match r {
            Ok(rec) => {
                common::check_describe(&rec);
                let mut b = vec![0u8; rec.buffer_len()];
                rec.emit(&mut b);
                assert_eq!(SaAttribute::parse(id, &b), Ok(rec));
            }
            Err(_) => failed = true,
        }
    }
    assert!(
        failed || seen == n,
        "record_count {n}, iterator gave {seen}"
    );
});
