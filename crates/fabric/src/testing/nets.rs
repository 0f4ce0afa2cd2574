//! Net files (ibsim/ibnetdiscover format) that several crates' tests share: ibsim's own examples
//! and small topologies for multi-port HCAs and ports behind a channel adapter. The first CA of
//! each runs the subnet manager.

/// ibsim-utils' net-examples/net: Hca2 is cabled on its port 2 only.
pub const NET: &str = "\
Switch\t8 \"Switch1\"
[1]\t\"Hca1\"[1]
[2]\t\"Hca2\"[2]
[3]\t\"Switch2\"[3]
[4]\t\"Switch2\"[4]

Switch 8 \"Switch2\"
[3]\t\"Switch1\"[3]
[4]\t\"Switch1\"[4]

Hca\t2 \"Hca1\"
[1]\t\"Switch1\"[1]

Hca\t2 \"Hca2\"
[2]\t\"Switch1\"[2]
";

/// ibsim-utils' net-examples/net.2sw2path4hca2port: two HCAs, each with both ports on one switch.
pub const NET_2PORT: &str = "\
Switch\t8 \"Switch1\"
[1]\t\"Hca1\"[1]
[2]\t\"Hca1\"[2]
[3]\t\"Switch2\"[3]
[5]\t\"Switch2\"[5]

Switch 8 \"Switch2\"
[1]\t\"Hca2\"[1]
[2]\t\"Hca2\"[2]
[3]\t\"Switch1\"[3]
[5]\t\"Switch1\"[5]

Hca\t2 \"Hca1\"
[1]\t\"Switch1\"[1]
[2]\t\"Switch1\"[2]

Hca\t2 \"Hca2\"
[1]\t\"Switch2\"[1]
[2]\t\"Switch2\"[2]
";

/// A dual-homed host: Dual's port 1 on S1, port 2 on S2, the switches cabled together; B on S1
/// (first CA: it runs the SM), C on S2.
pub const DUAL_HOMED: &str = "\
Switch 4 \"S1\"
[1] \"Dual\"[1]
[2] \"B\"[1]
[3] \"S2\"[3]

Switch 4 \"S2\"
[1] \"Dual\"[2]
[2] \"C\"[1]
[3] \"S1\"[3]

Hca 1 \"B\"
[1] \"S1\"[2]

Hca 2 \"Dual\"
[1] \"S1\"[1]
[2] \"S2\"[1]

Hca 1 \"C\"
[1] \"S2\"[2]
";

/// S1 cabled to H1 port 1 (the SM's) and H2 port 2; H2 port 1 goes to S2, cabled to nothing
/// else: S2 and H2 port 1 are behind H2.
pub const ISO: &str = "\
Switch 4 \"S1\"
[1] \"H1\"[1]
[2] \"H2\"[2]

Switch 4 \"S2\"
[1] \"H2\"[1]

Hca 1 \"H1\"
[1] \"S1\"[1]

Hca 2 \"H2\"
[1] \"S2\"[1]
[2] \"S1\"[2]
";

/// H3 cabled only to H2 port 1, back to back; H2 port 2 on the SM's switch.
pub const B2B: &str = "\
Switch 4 \"S1\"
[1] \"H1\"[1]
[2] \"H2\"[2]

Hca 1 \"H1\"
[1] \"S1\"[1]

Hca 2 \"H2\"
[1] \"H3\"[1]
[2] \"S1\"[2]

Hca 1 \"H3\"
[1] \"H2\"[1]
";

/// Two HCAs back to back, the SM on the first: the SM's own port starts every path.
pub const B2B_SM: &str = "\
Hca 1 \"H1\"
[1] \"H2\"[1]

Hca 1 \"H2\"
[1] \"H1\"[1]
";
