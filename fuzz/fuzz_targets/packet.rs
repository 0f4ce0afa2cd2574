#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ipoib_wire::Gid::ZERO;
    let _ = data;
});
