//! The accessor macro every CM message view is built from.
//!
//! IBA 1 §12.6 gives each message as a table of `Byte[Bit]` offsets and widths, bit 0 being the
//! most significant bit of the byte. Each view below is declared the same way: one line per field
//! with its kind and position, from which `cm_view!` generates the struct, `new_unchecked`,
//! `new_checked`, `check_len` and `into_inner` (through the crate's `fixed_view!`), the getters and
//! the setters. Bit fields are given as a byte offset and a mask in that byte (`0xF8` = the top
//! five bits), which reads the same as the spec's tables.

/// The Rust type a field kind reads as.
macro_rules! cm_ty {
    (u8) => {
        u8
    };
    (u16) => {
        u16
    };
    (u24) => {
        u32
    };
    (u32) => {
        u32
    };
    (u64) => {
        u64
    };
    (flow) => {
        u32
    };
    (bits) => {
        u8
    };
    (flag) => {
        bool
    };
    (guid) => {
        $crate::types::Guid
    };
    (gid) => {
        $crate::types::Gid
    };
    (bytes) => {
        &[u8]
    };
}

/// Reads a field of the given kind from `$b`.
macro_rules! cm_get {
    (u8, $b:expr, $off:expr) => {
        $b[$off]
    };
    (u16, $b:expr, $off:expr) => {
        $crate::types::be16($b, $off)
    };
    (u24, $b:expr, $off:expr) => {
        $crate::types::be24($b, $off)
    };
    (u32, $b:expr, $off:expr) => {
        $crate::types::be32($b, $off)
    };
    (u64, $b:expr, $off:expr) => {
        $crate::types::be64($b, $off)
    };
    // A 20-bit flow label in the top bits of a big-endian 32-bit word.
    (flow, $b:expr, $off:expr) => {
        $crate::types::be32($b, $off) >> 12
    };
    (bits, $b:expr, $off:expr, $mask:expr) => {
        ($b[$off] & $mask) >> ($mask as u8).trailing_zeros()
    };
    (flag, $b:expr, $off:expr, $mask:expr) => {
        $b[$off] & $mask != 0
    };
    (guid, $b:expr, $off:expr) => {
        $crate::types::Guid::from_bytes(&$b[$off..])
    };
    (gid, $b:expr, $off:expr) => {
        $crate::types::Gid::from_bytes(&$b[$off..])
    };
    (bytes, $b:expr, $off:expr, $len:expr) => {
        &$b[$off..$off + $len]
    };
}

/// Writes a field of the given kind into `$b`; values wider than the field are truncated to it.
macro_rules! cm_set {
    (u8, $b:expr, $v:expr, $off:expr) => {
        $b[$off] = $v
    };
    (u16, $b:expr, $v:expr, $off:expr) => {
        $crate::types::put16($b, $off, $v)
    };
    (u24, $b:expr, $v:expr, $off:expr) => {
        $crate::types::put24($b, $off, $v & 0x00ff_ffff)
    };
    (u32, $b:expr, $v:expr, $off:expr) => {
        $crate::types::put32($b, $off, $v)
    };
    (u64, $b:expr, $v:expr, $off:expr) => {
        $crate::types::put64($b, $off, $v)
    };
    (flow, $b:expr, $v:expr, $off:expr) => {{
        let low = $crate::types::be32($b, $off) & 0x0fff;
        $crate::types::put32($b, $off, (($v & 0x000f_ffff) << 12) | low)
    }};
    (bits, $b:expr, $v:expr, $off:expr, $mask:expr) => {{
        let shift = ($mask as u8).trailing_zeros();
        $b[$off] = ($b[$off] & !$mask) | (($v << shift) & $mask)
    }};
    (flag, $b:expr, $v:expr, $off:expr, $mask:expr) => {
        $b[$off] = if $v {
            $b[$off] | $mask
        } else {
            $b[$off] & !$mask
        }
    };
    (guid, $b:expr, $v:expr, $off:expr) => {
        $crate::types::put64($b, $off, $v.0)
    };
    (gid, $b:expr, $v:expr, $off:expr) => {
        $b[$off..$off + 16].copy_from_slice(&$v.0)
    };
    // Copies what fits and zero-fills the rest of the field.
    (bytes, $b:expr, $v:expr, $off:expr, $len:expr) => {{
        let dst = &mut $b[$off..$off + $len];
        let n = $v.len().min($len);
        dst[..n].copy_from_slice(&$v[..n]);
        dst[n..].fill(0);
    }};
}

/// Declares a zero-copy view over a 232-byte CM message body with one getter and one setter per field.
macro_rules! cm_view {
    (
        $(#[$vm:meta])*
        pub struct $view:ident;
        $( $(#[$m:meta])* $get:ident, $set:ident : $kind:ident [$($arg:expr),*]; )*
    ) => {
        fixed_view! {
            $(#[$vm])*
            #[derive(Debug, Clone, PartialEq, Eq)]
            pub struct $view;
            /// Fails with `Truncated` unless the buffer holds the whole 232-byte MAD data area
            /// (IBA 1 §13.4.2); after that no getter panics. Bytes past 232 are ignored.
            fn check_len(min = $crate::cm::BODY_LEN);
        }

        impl<T: AsRef<[u8]>> $view<T> {
            $(
                $(#[$m])*
                #[inline]
                pub fn $get(&self) -> cm_ty!($kind) {
                    let b = self.buffer.as_ref();
                    cm_get!($kind, b, $($arg),*)
                }
            )*
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $view<T> {
            /// Zeroes the whole 232-byte body, reserved fields included.
            pub fn clear(&mut self) {
                self.buffer.as_mut()[..$crate::cm::BODY_LEN].fill(0);
            }

            $(
                #[doc = concat!("Sets the field read by [`Self::", stringify!($get), "`].")]
                #[inline]
                pub fn $set(&mut self, v: cm_ty!($kind)) {
                    let b = self.buffer.as_mut();
                    cm_set!($kind, b, v, $($arg),*)
                }
            )*
        }
    };
}

/// The property tests every message shares: parse never panics, and emit/parse round-trips.
///
/// Every valid representation is the parse of some 232-byte body (each field can take every value
/// its width allows), so representations are generated by parsing random bodies. Beyond the round
/// trip, `emit(parse(b))` must equal `b` with the reserved bits cleared, the reserved mask being
/// what `emit(parse([0xff; 232]))` leaves set: parse and emit lose no field bit and mix no fields.
#[cfg(test)]
macro_rules! cm_props {
    ($repr:ident, $msg:ident) => {
        mod props {
            use proptest::prelude::*;
            use $crate::cm::*;

            proptest! {
                #[test]
                fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
                    let _ = $repr::parse(&$msg::new_unchecked(&data[..]));
                }

                #[test]
                fn emit_parse_round_trip(body in proptest::collection::vec(any::<u8>(), BODY_LEN)) {
                    let repr = $repr::parse(&$msg::new_unchecked(&body[..])).unwrap();
                    let mut out = [0u8; BODY_LEN];
                    repr.emit(&mut $msg::new_unchecked(&mut out[..]));
                    prop_assert_eq!($repr::parse(&$msg::new_unchecked(&out[..])).unwrap(), repr);

                    let ones = [0xffu8; BODY_LEN];
                    let mut mask = [0u8; BODY_LEN];
                    $repr::parse(&$msg::new_unchecked(&ones[..]))
                        .unwrap()
                        .emit(&mut $msg::new_unchecked(&mut mask[..]));
                    for i in 0..BODY_LEN {
                        prop_assert_eq!(out[i], body[i] & mask[i], "byte {}", i);
                    }
                }
            }

            #[test]
            fn short_body_is_truncated() {
                let b = [0u8; BODY_LEN - 1];
                assert_eq!(
                    $msg::new_checked(&b[..]).err(),
                    Some($crate::Error::Truncated)
                );
                assert_eq!(
                    $repr::parse(&$msg::new_unchecked(&b[..])).err(),
                    Some($crate::Error::Truncated)
                );
            }
        }
    };
}
