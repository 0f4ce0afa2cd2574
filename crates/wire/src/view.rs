//! `fixed_view!`, the boilerplate of a fixed-length zero-copy view.
//!
//! Most views in this crate (after smoltcp, docs/ARCHITECTURE.md) begin with the same five items: the
//! struct wrapping a buffer, `new_unchecked`, `new_checked`, `check_len` and `into_inner`. For a
//! format whose only length rule is "at least N bytes", `fixed_view!` writes them; the file then
//! adds its getters and setters in its own `impl` blocks, as it would by hand.
//!
//! ```ignore
//! fixed_view! {
//!     /// A zero-copy view of a PathRecord.
//!     #[derive(Debug, Clone)]
//!     pub struct PathRecord;
//!     /// `Err(Truncated)` if shorter than 64 bytes.
//!     fn check_len(min = field::LEN);
//!     // Optional: a public `LEN` equal to `min`, with this doc.
//!     /// Size on the wire.
//!     pub const LEN;
//!     // Optional: a private `fn b(&self) -> &[u8]`.
//!     fn b;
//! }
//! ```
//!
//! generates, for any `T: AsRef<[u8]>`:
//! - `pub struct PathRecord<T: AsRef<[u8]>> { buffer: T }` with the given doc and attributes (the
//!   derives are the caller's, so each view keeps exactly the traits it had);
//! - `pub const fn new_unchecked(buffer: T) -> Self`;
//! - `pub fn new_checked(buffer: T) -> Result<Self>`: `new_unchecked`, then `check_len`;
//! - `pub fn check_len(&self) -> Result<()>`: `Err(Error::Truncated)` if the buffer is shorter than
//!   `min`, else `Ok(())`; longer buffers are accepted and the bytes past `min` left alone. Its doc
//!   comment is the one given before `fn check_len`, so it can state the length and cite the spec;
//! - `pub fn into_inner(self) -> T`;
//! - with `pub const LEN;`, `pub const LEN: usize = min` (with the given doc);
//! - with `fn b;` (any name), a private `fn b(&self) -> &[u8]`, short for `self.buffer.as_ref()`.
//!
//! The `buffer` field stays private to the defining module, so getters and setters are written
//! next to the macro call exactly as in a hand-written view.
//!
//! When not to use it: a view whose `check_len` does anything beyond comparing the length with one
//! constant (a length read from the buffer, an upper bound, `Err(Malformed)` for a bad field, as
//! `Ipv4Packet`, `NdOption`, `IpCmReq` or `RejAri` do), or whose struct holds more than the buffer
//! (`pcap::RecordHeader` carries its byte order), keeps its hand-written boilerplate: the macro has
//! no hooks for extra checks on purpose, so that a reader who sees `fixed_view!` knows that
//! `check_len` is the length test and nothing else.

/// Generates the struct, `new_unchecked`, `new_checked`, `check_len`, `into_inner`, and optionally
/// `LEN` and a private byte accessor, of a view whose only length rule is "at least `min` bytes".
/// See the documentation of this module (`view.rs`) for the syntax and what it expands to.
macro_rules! fixed_view {
    (
        $(#[$meta:meta])*
        pub struct $name:ident;
        $(#[$check_doc:meta])*
        fn check_len(min = $len:expr);
        $( $(#[$len_doc:meta])+ pub const LEN; )?
        $( fn $b:ident; )?
    ) => {
        $(#[$meta])*
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            $(
                $(#[$len_doc])+
                pub const LEN: usize = $len;
            )?

            /// Wraps a buffer without checking its length; getters may then panic.
            pub const fn new_unchecked(buffer: T) -> Self {
                Self { buffer }
            }

            /// Wraps a buffer after [`Self::check_len`].
            pub fn new_checked(buffer: T) -> $crate::Result<Self> {
                let v = Self::new_unchecked(buffer);
                v.check_len()?;
                Ok(v)
            }

            $(#[$check_doc])*
            pub fn check_len(&self) -> $crate::Result<()> {
                if self.buffer.as_ref().len() < $len {
                    Err($crate::Error::Truncated)
                } else {
                    Ok(())
                }
            }

            /// The wrapped buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }

            $(
                fn $b(&self) -> &[u8] {
                    self.buffer.as_ref()
                }
            )?
        }
    };
}
