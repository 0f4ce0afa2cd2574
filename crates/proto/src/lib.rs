//! Protocol agents with no IO, no threads and no clock: SA client and server, CM, the IPoIB interface,
//! the IP CM service and iWarp emulation. Time comes in as a parameter, randomness from a seeded RNG.
//!
//! Empty until the agents land (issues "Emulated fabric" and "IPoIB over UD"); the layer exists now so
//! that the dependency direction (wire <- proto <- fabric <- runtime <- cli) is fixed from the start.
