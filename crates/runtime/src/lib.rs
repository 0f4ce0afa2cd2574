//! The real-time side: clock, threads, UDP links between processes, TUN devices, and the client for
//! external management planes (ibsim/OpenSM).

pub mod ibsim;
