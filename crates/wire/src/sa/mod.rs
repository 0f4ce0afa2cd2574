//! Subnet administration: SA MAD header and attributes (IBA 1 §15.2).
