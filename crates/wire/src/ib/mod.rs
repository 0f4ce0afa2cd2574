//! InfiniBand transport headers: LRH, GRH, BTH, DETH, RETH, AETH, ImmDt.
