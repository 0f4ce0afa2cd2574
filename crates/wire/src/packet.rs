//! Whole InfiniBand packets: header chain parsing and a builder that fills ICRC and VCRC.
