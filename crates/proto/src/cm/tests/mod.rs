//! CM tests.
