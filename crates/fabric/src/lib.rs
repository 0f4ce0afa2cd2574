//! The emulated InfiniBand hardware and subnet: HCAs, QPs, switches, subnet manager, topologies and a
//! deterministic discrete-event simulator. Empty until the "Emulated fabric" issue lands.
