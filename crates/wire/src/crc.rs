//! ICRC and VCRC (IBA 1 §7.8). Filled in by the transport work.
