//! IPoIB encapsulation, link-layer addresses, ARP, ND options, multicast GID mapping.
