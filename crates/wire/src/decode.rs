//! Layer-by-layer decoding of whole packets for `ipoib decode`.
