//! SM
