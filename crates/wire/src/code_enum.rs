//! The `code_enum!` macro: one declaration for every field whose value is a code point, such as a
//! management class, a REJ reason or an EtherType.
//!
//! The macro is exported, so crates above wire declare their code enums with it too.

/// Declares a code enum: one variant per code point the specification names and one variant that keeps
/// any other value as received, so that a parse/emit round trip is lossless (the smoltcp
/// `Unknown(u16)` pattern). The macro writes the enum, `From<uN> for Enum`, `From<Enum> for uN`,
/// and, when every variant carries a name, `name()` and the `KNOWN` table:
///
/// ```
/// ipoib_wire::code_enum! {
///     /// The documentation of the enum; more attributes may follow (`#[derive(PartialOrd)]`).
///     pub enum Colour(u8 & 0x0f) {
///         /// Each variant: attributes, `Variant = value => "name",`.
///         Red = 1 => "red",
///         /// The last variant keeps every other value, written `Variant(_) => "name"`.
///         Unknown(_) => "Unknown",
///     }
/// }
/// assert_eq!(Colour::from(0x11), Colour::Red);
/// assert_eq!(u8::from(Colour::Unknown(7)), 7);
/// assert_eq!(Colour::from(2).name(), "Unknown");
/// assert_eq!(Colour::KNOWN, [(1, Colour::Red, "red")]);
/// ```
///
/// - `(u8 & 0x0f)`: a field narrower than its integer. `From<u8>` looks only at the masked bits,
///   and the catch-all variant emits its value masked. Without `& mask` every value is kept whole.
/// - The names are optional, all or none: without `=> "name"` the macro writes only the enum and
///   the two conversions.
/// - The derived traits are `Debug, Clone, Copy, PartialEq, Eq, Hash`; `Debug` prints the
///   variant's identifier (`Red`, `Unknown(7)`). The catch-all variant comes last, which is what a
///   derived `PartialOrd`/`Ord` sees.
#[macro_export]
macro_rules! code_enum {
    // Internal: takes the variants one at a time into `[...]`, so that the catch-all variant, which
    // starts like any other, is told apart by what follows its name.
    (@munch $head:tt [$($acc:tt)*]
        $(#[$vm:meta])* $var:ident = $val:literal $(=> $s:literal)?, $($rest:tt)*
    ) => {
        $crate::code_enum! { @munch $head [$($acc)* { $(#[$vm])* $var = $val $(=> $s)? }] $($rest)* }
    };
    (@munch $head:tt [$($acc:tt)*]
        $(#[$um:meta])* $unk:ident(_) $(=> $us:literal)? $(,)?
    ) => {
        $crate::code_enum! { @emit $head [$($acc)*] { $(#[$um])* $unk $(=> $us)? } }
    };
    // Internal: named code points, so `name()` and `KNOWN` as well.
    (@emit { $(#[$m:meta])* $vis:vis enum $name:ident($ty:ident $(& $mask:literal)?) }
        [$( { $(#[$vm:meta])* $var:ident = $val:literal => $s:literal } )*]
        { $(#[$um:meta])* $unk:ident => $us:literal }
    ) => {
        $crate::code_enum! {
            @emit { $(#[$m])* $vis enum $name($ty $(& $mask)?) }
            [$( { $(#[$vm])* $var = $val } )*]
            { $(#[$um])* $unk }
        }

        impl $name {
            /// Every named code point as (value, variant, name), in declaration order.
            pub const KNOWN: [($ty, $name, &'static str); $crate::code_enum!(@count $($var)*)] =
                [$( ($val, $name::$var, $s) ),*];

            /// The code point's name (the catch-all variant's name for a value without one).
            pub fn name(self) -> &'static str {
                match self {
                    $( $name::$var => $s, )*
                    $name::$unk(_) => $us,
                }
            }
        }
    };
    // Internal: the enum and both conversions.
    (@emit { $(#[$m:meta])* $vis:vis enum $name:ident($ty:ident $(& $mask:literal)?) }
        [$( { $(#[$vm:meta])* $var:ident = $val:literal } )*]
        { $(#[$um:meta])* $unk:ident }
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vm])* $var, )*
            $(#[$um])*
            $unk($ty),
        }

        impl ::core::convert::From<$ty> for $name {
            fn from(v: $ty) -> $name {
                match v $(& $mask)? {
                    $( $val => $name::$var, )*
                    other => $name::$unk(other),
                }
            }
        }

        impl ::core::convert::From<$name> for $ty {
            fn from(v: $name) -> $ty {
                match v {
                    $( $name::$var => $val, )*
                    $name::$unk(other) => other $(& $mask)?,
                }
            }
        }
    };
    // Internal: the number of identifiers given, as a constant expression.
    (@count $($t:ident)*) => {
        <[()]>::len(&[$($crate::code_enum!(@unit $t)),*])
    };
    (@unit $t:ident) => {
        ()
    };
    // The declaration.
    (
        $(#[$m:meta])*
        $vis:vis enum $name:ident($ty:ident $(& $mask:literal)?) { $($body:tt)* }
    ) => {
        $crate::code_enum! { @munch { $(#[$m])* $vis enum $name($ty $(& $mask)?) } [] $($body)* }
    };
}

#[cfg(test)]
mod tests {
    crate::code_enum! {
        /// Masked, named.
        pub enum Masked(u8 & 0x1f) {
            /// 1.
            One = 1 => "one",
            /// 0x1f.
            Top = 0x1f => "top",
            /// Other values.
            Reserved(_) => "Reserved",
        }
    }

    crate::code_enum! {
        /// Whole, unnamed.
        enum Whole(u32) {
            /// 197.
            A = 197,
            /// Other values.
            Unknown(_),
        }
    }

    #[test]
    fn masked_values_round_trip_in_their_bits() {
        assert_eq!(Masked::from(0x21), Masked::One);
        assert_eq!(Masked::from(0xff), Masked::Top);
        assert_eq!(Masked::from(0x25), Masked::Reserved(5));
        assert_eq!(u8::from(Masked::Reserved(0xe5)), 5);
        for v in 0..=0x1fu8 {
            assert_eq!(u8::from(Masked::from(v)), v);
        }
        assert_eq!(Masked::Reserved(9).name(), "Reserved");
        assert_eq!(Masked::Top.name(), "top");
        assert_eq!(
            Masked::KNOWN,
            [(1, Masked::One, "one"), (0x1f, Masked::Top, "top")]
        );
        assert_eq!(format!("{:?}", Masked::Reserved(3)), "Reserved(3)");
    }

    #[test]
    fn unmasked_values_are_kept_whole() {
        assert_eq!(Whole::from(197), Whole::A);
        assert_eq!(Whole::from(0x1_0000), Whole::Unknown(0x1_0000));
        assert_eq!(u32::from(Whole::Unknown(u32::MAX)), u32::MAX);
        assert_eq!(u32::from(Whole::A), 197);
    }
}
