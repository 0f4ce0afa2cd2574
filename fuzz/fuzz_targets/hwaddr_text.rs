//! The text form of IPoIB link-layer addresses (`ipoib::HwAddr` `FromStr` and `Display`). Input:
//! any string. Property: a string that parses prints back to a string that parses to the same
//! address; the printed form is canonical (printing it again gives the same text, 59 characters).
//! The input's first 20 bytes, read as a wire address, print to text that parses back too.
#![no_main]

use ipoib_wire::ipoib::{HwAddr, HWADDR_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(a) = s.parse::<HwAddr>() {
            let t = a.to_string();
            assert_eq!(t.len(), 3 * HWADDR_LEN - 1);
            assert_eq!(t.parse::<HwAddr>(), Ok(a), "{s:?} printed as {t:?}");
            assert_eq!(t.parse::<HwAddr>().map(|b| b.to_string()), Ok(t.clone()));
            assert_eq!(HwAddr::parse(&a.to_bytes()), Ok(a));
        }
    }
    if let Ok(a) = HwAddr::parse(data) {
        assert_eq!(a.to_string().parse::<HwAddr>(), Ok(a));
        assert_eq!(&a.to_bytes()[..], &data[..HWADDR_LEN]);
        let mut b = [0u8; HWADDR_LEN];
        a.emit(&mut b).expect("20 bytes");
        assert_eq!(HwAddr::from_bytes(&b), a);
    }
});
