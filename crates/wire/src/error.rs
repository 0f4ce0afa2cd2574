use core::fmt;

/// The error of every byte-format operation: small and `Copy`, as smoltcp's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// The buffer is shorter than the format requires.
    Truncated,
    /// A field holds a value the format forbids (a length that does not add up, a reserved code).
    Malformed,
    /// A CRC does not match the bytes it covers.
    Checksum,
    /// The bytes are well formed but of a kind this code does not handle (e.g. an unknown version).
    Unsupported,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::Truncated => "truncated packet",
            Error::Malformed => "malformed packet",
            Error::Checksum => "checksum mismatch",
            Error::Unsupported => "unsupported packet",
        })
    }
}

impl std::error::Error for Error {}

/// The result type of every byte-format operation.
pub type Result<T> = core::result::Result<T, Error>;
