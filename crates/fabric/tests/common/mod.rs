//! Helpers shared by several scenario test files (each file compiles its own copy, and each uses
//! only part of it).

#![allow(dead_code)]

pub mod connected;
pub mod topos;
