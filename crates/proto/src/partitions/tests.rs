use super::*;
use ipoib_wire::{Mtu, PKey, QKey, Rate};
use proptest::prelude::*;

fn ca(guid: u64) -> PortId {
    PortId {
        guid: Guid(guid),
        kind: PortKind::Ca,
        is_sm: false,
    }
}

/// The examples of opensm(8) "PARTITION CONFIGURATION", as shipped in Debian's opensm 3.3 man page
/// (all but the `defmember=limited :` line, which OpenSM's own parser rejects; see below).
const MAN_EXAMPLES: &str = "\
 Default=0x7fff : ALL, SELF=full ;
 Default=0x7fff : ALL, ALL_SWITCHES=full, SELF=full ;

 NewPartition , ipoib : 0x123456=full, 0x3456789034=limi, 0x2134af2306 ;

 YetAnotherOne = 0x300 : SELF=full ;
 YetAnotherOne = 0x300 : ALL=limited ;

 ShareIO = 0x80 , defmember=full : 0x123451, 0x123452;
 # 0x123453, 0x123454 will be limited
 ShareIO = 0x80 : 0x123453, 0x123454, 0x123455=full;
 ShareIO = 0x80 , defmember=full : 0x123459, 0x12345a;
 ShareIO = 0x80 , defmember=full : 0x12345b, 0x12345c=limited, 0x12345d;

 # multicast groups added to default
 Default=0x7fff,ipoib:
        mgid=ff12:401b::0707,sl=1 # random IPv4 group
        mgid=ff12:601b::16    # MLDv2-capable routers
        mgid=ff12:401b::16    # IGMP
        mgid=ff12:601b::2     # All routers
        mgid=ff12::1,sl=1,Q_Key=0xDEADBEEF,rate=3,mtu=2 # random group
        ALL=full;
";

// opensm(8) examples; OpenSM osm_prtn_config.c
#[test]
fn opensm_manual_examples_parse() {
    let c = parse(MAN_EXAMPLES).unwrap();
    let d = c.partition(PKey(0x7fff)).unwrap();
    assert_eq!(d.name, "Default");
    assert!(d.ipoib);
    assert_eq!(d.groups.len(), 5);
    assert_eq!(d.groups[0].flags.sl, 1);
    assert_eq!(d.groups[4].flags.qkey, QKey(0xdead_beef));
    assert_eq!(d.groups[4].flags.mtu, Mtu::Mtu512);
    // NewPartition got an automatic P_Key and the "limi" abbreviation means limited.
    let np = c
        .partitions
        .iter()
        .find(|p| p.name == "NewPartition")
        .unwrap();
    assert!(np.ipoib);
    assert_eq!(
        np.members,
        vec![
            (MemberSpec::Guid(Guid(0x123456)), Membership::Full),
            (MemberSpec::Guid(Guid(0x3456789034)), Membership::Limited),
            (MemberSpec::Guid(Guid(0x2134af2306)), Membership::Limited),
        ]
    );
    // Repeated P_Keys merge, first name kept.
    let y = c.partition(PKey(0x300)).unwrap();
    assert_eq!(y.name, "YetAnotherOne");
    assert_eq!(y.members.len(), 2);
    let s = c.partition(PKey(0x80)).unwrap();
    assert_eq!(s.members.len(), 10);
    let m = |g: u64| s.membership_of(&ca(g));
    assert_eq!(m(0x123451), Some(Membership::Full));
    assert_eq!(m(0x123453), Some(Membership::Limited));
    assert_eq!(m(0x123455), Some(Membership::Full));
    assert_eq!(m(0x12345c), Some(Membership::Limited));
    assert_eq!(m(0x12345d), Some(Membership::Full));
    assert_eq!(m(0x999999), None);
    // The IP group with a zero P_Key gets the partition's; ff12::1 (not IP) keeps its bytes.
    let groups = c.precreated_groups();
    assert!(groups.iter().any(|g| g.mgid
        == "ff12:401b:ffff::707".parse::<Ipv6Addr>().unwrap().into()
        && g.sl == 1
        && g.qkey == QKey::IPOIB_BROADCAST));
    let rnd = groups
        .iter()
        .find(|g| g.mgid == "ff12::1".parse::<Ipv6Addr>().unwrap().into())
        .unwrap();
    assert_eq!(
        (rnd.qkey, rnd.mtu, rnd.rate),
        (QKey(0xdead_beef), Mtu::Mtu512, Rate::Gbps10)
    );
}

use std::net::Ipv6Addr;

// OpenSM osm_prtn_config.c parse_part_conf: "defmember=limited" in the port list is taken as a
// PortGUID named "defmember" and rejected with "bad PortGUID", so this manual line does not
// parse in OpenSM either.
#[test]
fn manual_line_opensm_rejects_is_rejected_with_position() {
    let e = parse("ShareIO = 0x80 : defmember=limited : 0x123456, 0x123457, 0x123458=full;\n")
        .unwrap_err();
    assert_eq!((e.line, e.column), (1, 18));
    assert!(e.message.contains("bad PortGUID"), "{e}");
}

// opensm(8): default partition when no file / no Default rule; docs/DEPLOYED.md broadcast group
#[test]
fn default_configuration_and_broadcast_group() {
    let c = PartitionConfig::default_config();
    assert_eq!(c.pkey_table(&ca(0x42)), vec![PKey(0xffff)]);
    let g = c.precreated_groups();
    assert_eq!(g.len(), 1);
    assert_eq!(
        g[0].mgid,
        Gid::from("ff12:401b:ffff::ffff:ffff".parse::<Ipv6Addr>().unwrap())
    );
    assert_eq!(
        (g[0].qkey, g[0].mtu, g[0].rate, g[0].sl, g[0].scope, g[0].pkey),
        (QKey(0x0b1b), Mtu::Mtu2048, Rate::Gbps10, 0, 2, PKey(0xffff))
    );
    // A file without a Default rule: ALL=limited, SELF=full.
    let c = parse("P1=0x10,ipoib,mtu=5,rate=7,scope=5 : 0x42=full ;").unwrap();
    assert_eq!(c.pkey_table(&ca(0x42)), vec![PKey(0x7fff), PKey(0x8010)]);
    assert_eq!(c.pkey_table(&ca(0x43)), vec![PKey(0x7fff)]);
    let sm = PortId {
        guid: Guid(1),
        kind: PortKind::Ca,
        is_sm: true,
    };
    assert_eq!(c.pkey_table(&sm), vec![PKey(0xffff)]);
    let g = c.precreated_groups();
    assert_eq!(g.len(), 1);
    assert_eq!(
        g[0].mgid,
        Gid::from("ff15:401b:8010::ffff:ffff".parse::<Ipv6Addr>().unwrap())
    );
    assert_eq!(
        (g[0].mtu, g[0].rate, g[0].scope),
        (Mtu::Mtu4096, Rate::Gbps40, 5)
    );
}

// opensm(8): "Multiple scope settings are permitted ... will result in multiple MC groups"
#[test]
fn several_scopes_make_several_groups_and_indx0_goes_first() {
    let c =
        parse("A=0x11,ipoib,scope=2,scope=5,indx0 : ALL=full ;\nDefault=0x7fff:ALL=full;").unwrap();
    let g = c.precreated_groups();
    let mgids: Vec<String> = g.iter().map(|g| g.mgid.to_string()).collect();
    assert_eq!(
        mgids,
        ["ff12:401b:8011::ffff:ffff", "ff15:401b:8011::ffff:ffff"]
    );
    assert_eq!(c.pkey_table(&ca(7)), vec![PKey(0x8011), PKey(0xffff)]);
}

// OpenSM partition_create: without QoS the partition SL is forced to 0
#[test]
fn partition_sl_needs_qos() {
    let c = parse("A=0x11,ipoib,sl=3 : ALL ;").unwrap();
    assert_eq!(c.partition(PKey(0x11)).unwrap().flags.sl, 0);
    assert!(c.warnings.iter().any(|w| w.message.contains("QoS")));
    let c = parse_with("A=0x11,ipoib,sl=3 : ALL ;", ParseOptions { qos: true }).unwrap();
    assert_eq!(c.partition(PKey(0x11)).unwrap().flags.sl, 3);
    assert_eq!(c.precreated_groups()[0].sl, 3);
}

// OpenSM osm_prtn_config.c PARSE ERROR cases
#[test]
fn errors_name_line_and_column() {
    let e = parse("# comment\n  Foo\n").unwrap_err();
    assert_eq!((e.line, e.column), (2, 3));
    assert!(e.message.contains("no partition definition"));
    let e = parse("A=0xzz : ALL ;").unwrap_err();
    assert_eq!((e.line, e.column), (1, 3));
    let e = parse("A=1 : ALL,\n   0x12q ;").unwrap_err();
    assert_eq!((e.line, e.column), (2, 4));
    let e = parse("A=1 : mgid=fe80::1 ;").unwrap_err();
    assert!(e.message.contains("not multicast"));
    let e = parse("A=1,=5 : ALL;").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1, column 6: bad partition flags (value '5' without a flag name)"
    );
}

// OpenSM osm_prtn_config.c: an empty header flag (a trailing comma) is read as `mtu` without a
// value, "PARSE WARN: ... flag 'mtu' requires valid value - skipped", and the definition stands
// (measured on OpenSM 3.3.23, docs/OPENSM-PARTITIONS.md). We refused the file.
#[test]
fn an_empty_header_flag_is_skipped_with_a_warning() {
    let c = parse(
        "Default=0x7fff, ipoib, : ALL=full ;
P=0x10,, ipoib : ALL=full ;
",
    )
    .unwrap();
    let w: Vec<String> = c.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        w,
        [
            "line 1, column 23: empty partition flag - skipped",
            "line 2, column 8: empty partition flag - skipped",
        ]
    );
    assert!(c.partition(PKey(0x7fff)).unwrap().ipoib);
    assert!(c.partition(PKey(0x10)).unwrap().ipoib);
    assert_eq!(c.pkey_table(&ca(0x42)), [0xffff, 0x8010].map(PKey));
    assert_eq!(c.precreated_groups().len(), 2);
}

// OpenSM: unknown flags and rejected values are PARSE WARN, not errors
#[test]
fn warnings_for_what_opensm_skips() {
    let c = parse("A=1,bogus,mtu : ALL=maybe ; B=2 : ALL").unwrap();
    let msgs: Vec<&str> = c.warnings.iter().map(|w| w.message.as_str()).collect();
    assert_eq!(msgs.len(), 4, "{msgs:?}");
    assert!(msgs[0].contains("bogus"));
    assert!(msgs[1].contains("'mtu'"));
    assert!(msgs[2].contains("maybe"));
    assert!(msgs[3].contains("not terminated"));
    assert_eq!(c.partition(PKey(1)).unwrap().flags.mtu, DEFAULT_MTU);
    assert_eq!(c.partition(PKey(2)).unwrap().members.len(), 1);
    // An IP group with the wrong P_Key is skipped with a warning (OpenSM ip_mgroup_pkey_ok).
    let c = parse("A=0x5,ipoib : ALL,\n mgid=ff12:401b:8006::1\n ;").unwrap();
    assert!(c.partition(PKey(5)).unwrap().groups.is_empty());
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
}

#[test]
fn one_line_with_several_definitions() {
    let c = parse("A=1:ALL;B=2:SELF=full;C=3:NONE;").unwrap();
    assert_eq!(c.partitions.len(), 4);
    assert!(c.partition(PKey(3)).unwrap().members.is_empty());
    assert_eq!(
        c.partition(PKey(2)).unwrap().members,
        vec![(MemberSpec::SelfPort, Membership::Full)]
    );
}

proptest! {
    #[test]
    fn parse_never_panics(s in "\\PC{0,200}") {
        let _ = parse(&s);
    }

    #[test]
    fn parse_never_panics_on_near_valid_text(
        parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "A", "=", "0x7fff", ",", ":", ";", "ipoib", "mtu=4", "scope=", "\n", " ", "#x\n",
                "ALL", "=full", "SELF", "mgid=ff12:401b::1", "mgid=", "0x", "é", "defmember=",
                "ALL_CAS", "=limi", "Q_Key=0xffffffffff",
            ]),
            0..40,
        )
    ) {
        let text: String = parts.concat();
        if let Ok(c) = parse(&text) {
            // Distinct P_Keys and a default partition, whatever the text.
            let mut keys: Vec<PKey> = c.partitions.iter().map(|p| p.pkey).collect();
            let n = keys.len();
            keys.sort_unstable();
            keys.dedup();
            prop_assert_eq!(keys.len(), n);
            prop_assert!(c.partition(PKey::DEFAULT).is_some());
        }
    }
}

// OpenSM 3.3.23 osm_prtn_make_partitions: a partitions.conf without a definition is "in error" and
// the default configuration (every port full, IPoIB broadcast group) is used instead
// (docs/OPENSM-NOTES.md "partitions.conf").
#[test]
fn empty_or_comment_only_file_means_opensm_default_with_a_warning() {
    for text in ["", "\n\n", "# only a comment\n   # another\n"] {
        let c = parse(text).unwrap();
        assert_eq!(c.partitions, PartitionConfig::default_config().partitions);
        assert_eq!(c.precreated_groups().len(), 1, "the broadcast group");
        assert_eq!(c.warnings.len(), 1);
        assert_eq!(c.warnings[0].line, 0);
        assert!(
            c.warnings[0].to_string().contains("default configuration"),
            "{}",
            c.warnings[0]
        );
    }
}

// OpenSM 3.3.23 takes `mtu=99`/`rate=77` without a word, then creates no group or the largest the
// ports allow (docs/OPENSM-NOTES.md "partitions.conf"): refused here, with line and column.
#[test]
fn mtu_and_rate_out_of_range_are_errors() {
    for (text, col, what) in [
        (
            "Default=0x7fff, ipoib, mtu=99 : ALL=full ;",
            28,
            "mtu=99: not an MTU code",
        ),
        ("Default=0x7fff, ipoib, mtu=6 : ALL=full ;", 28, "mtu=6"),
        ("Default=0x7fff, ipoib, mtu=0 : ALL=full ;", 28, "mtu=0"),
        (
            "A=1, ipoib,\trate=77 : ALL ;",
            18,
            "rate=77: not a rate code",
        ),
        ("A=1, rate=1 : ALL ;", 11, "rate=1"),
        ("A=1, rate=big : ALL ;", 11, "rate=big"),
    ] {
        let e = parse(text).unwrap_err();
        assert_eq!((e.line, e.column), (1, col), "{text}: {e}");
        assert!(e.message.contains(what), "{text}: {e}");
    }
    let e = parse("A=1, ipoib : ALL,\n  mgid=ff12::1, mtu=7 ;").unwrap_err();
    assert_eq!((e.line, e.column), (2, 21), "{e}");
    // Valid values, and a flag without a value (OpenSM: PARSE WARN, skipped).
    let c = parse("A=1, ipoib, mtu=5, rate=22 : ALL ;").unwrap();
    assert_eq!(
        (
            c.partition(PKey(1)).unwrap().flags.mtu,
            c.partition(PKey(1)).unwrap().flags.rate
        ),
        (Mtu::Mtu4096, Rate::Gbps600)
    );
    assert!(c.warnings.is_empty());
    let c = parse("A=1, rate : ALL ;").unwrap();
    assert_eq!(c.warnings.len(), 1);
    assert!(c.warnings[0]
        .message
        .contains("'rate' requires valid value"));
}

// OpenSM parse_group_flag, partition_add_port: PARSE WARN for sl/scope out of range and an
// unknown membership, each skipped (measured on ibsim, docs/OPENSM-NOTES.md).
#[test]
fn sl_scope_and_membership_out_of_range_are_warnings_with_positions() {
    let c = parse("Default=0x7fff, ipoib, rate=3, sl=99, scope=99 : ALL=sideways ;").unwrap();
    let w: Vec<String> = c.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        w,
        [
            "line 1, column 35: flag 'sl' requires valid value - skipped",
            "line 1, column 45: flag 'scope' requires valid value - skipped",
            "line 1, column 54: unrecognized port flag 'sideways'. Assume 'limited'",
        ]
    );
    let d = c.partition(PKey(0x7fff)).unwrap();
    assert!(d.flags.scopes.is_empty());
    assert_eq!(d.membership_of(&ca(5)), Some(Membership::Limited));
}

// opensm(8): repeated P_Keys merge under the first name; OpenSM osm_prtn_make_new: a name
// repeated with another P_Key is another partition, and a name without a P_Key adds to the
// partition of that name. The first two are warnings here.
#[test]
fn duplicate_pkeys_and_names_are_warned_about() {
    let c = parse("A=0x10, ipoib : ALL=full ;\n  B=0x10 : 0x42=full ;\nA=0x20 : ALL ;\n").unwrap();
    let w: Vec<String> = c.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].starts_with("line 2, column 3: P_Key 0x0010 of 'B' is already partition 'A' (line 1)"),
        "{w:?}"
    );
    assert!(
        w[1].starts_with("line 3, column 1: partition name 'A' is already P_Key 0x0010 (line 1)"),
        "{w:?}"
    );
    assert_eq!(c.partition(PKey(0x10)).unwrap().name, "A");
    assert_eq!(c.partition(PKey(0x10)).unwrap().members.len(), 2);
    assert_eq!(c.partition(PKey(0x20)).unwrap().name, "A");
    // The manual's idiom (one name, one P_Key, several lines) is no warning; a name alone adds
    // to the partition of that name.
    let c = parse("S=0x80 : 0x1 ;\nS=0x80 : 0x2 ;\nS : 0x3 ;\nDefault : ALL=full ;\n").unwrap();
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(c.partition(PKey(0x80)).unwrap().members.len(), 3);
    assert_eq!(c.partitions.len(), 2, "{:?}", c.partitions);
    assert_eq!(
        c.partition(PKey(0x7fff)).unwrap().membership_of(&ca(9)),
        Some(Membership::Full)
    );
}

// OpenSM osm_prtn.c osm_prtn_add_port: a port named again in a partition is overwritten ("already
// in partition ... Will overwrite"), so the last specifier naming it decides, limited or full, in
// one definition or across merged ones (measured on OpenSM 3.3.23, docs/OPENSM-PARTITIONS.md).
#[test]
fn the_last_specifier_naming_a_port_decides_its_membership() {
    let c = parse(
        "Default=0x7fff : ALL=full ;\n\
         P1=0x10 : ALL=full, 0x42=limited ;\n\
         P2=0x20 : 0x42=limited, ALL=full ;\n\
         P3=0x30 : ALL=full ;\n\
         P3=0x30 : 0x42=limited ;\n\
         P4=0x40 : 0x42=both, ALL_CAS ;\n",
    )
    .unwrap();
    assert_eq!(
        c.pkey_table(&ca(0x42)),
        [0xffff, 0x0010, 0x8020, 0x0030, 0x0040].map(PKey)
    );
    assert_eq!(
        c.pkey_table(&ca(0x43)),
        [0xffff, 0x8010, 0x8020, 0x8030, 0x0040].map(PKey)
    );
}

// OpenSM osm_prtn.c osm_prtn_make_default: with a file, every port is a limited member of the
// default partition before the file is read, so a Default rule that names some ports leaves the
// others limited members (measured on OpenSM 3.3.23: `Default=0x7fff : SELF=full ;` gave the
// other hosts 0x7fff, docs/OPENSM-PARTITIONS.md).
#[test]
fn a_default_rule_adds_to_every_port_being_a_limited_member() {
    let c = parse("Default=0x7fff, ipoib : SELF=full ;\nP1=0x10, ipoib : ALL=full ;\n").unwrap();
    assert_eq!(c.pkey_table(&ca(0x42)), [0x7fff, 0x8010].map(PKey));
    let sm = PortId {
        guid: Guid(1),
        kind: PortKind::Ca,
        is_sm: true,
    };
    assert_eq!(c.pkey_table(&sm), [0xffff, 0x8010].map(PKey));
    let c = parse("Default=0x7fff : 0x42=full ;\n").unwrap();
    assert_eq!(c.pkey_table(&ca(0x42)), [0xffff].map(PKey));
    assert_eq!(c.pkey_table(&ca(0x43)), [0x7fff].map(PKey));
}

// OpenSM osm_prtn_config.c parse_part_conf: an mgid line right after the header's ':' makes
// OpenSM 3.3.23 fail the file with a PARSE ERROR and fall back to its default configuration
// (measured: `G=0x50 : mgid=ff12:401b::1 ;`, also with the ';' on the next line; after a port
// specifier, `G=0x50, ipoib : ALL=full, mgid=... ;`, or on a line of its own it works,
// docs/OPENSM-PARTITIONS.md). We read it as meant, with a warning naming the place.
#[test]
fn an_mgid_line_right_after_the_header_is_warned_about() {
    let c = parse("G=0x50, ipoib : ALL=full ;\nG=0x50 :  mgid=ff12:401b::1 ;\n").unwrap();
    let w: Vec<String> = c.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("line 2, column 11: an mgid line right after the header's ':'"),
        "{w:?}"
    );
    assert_eq!(c.partition(PKey(0x50)).unwrap().groups.len(), 1);
    for ok in [
        "G=0x50, ipoib : ALL=full, mgid=ff12:401b::1 ;\n",
        "G=0x50, ipoib : ALL=full,\n  mgid=ff12:401b::1 ;\n",
        "Default=0x7fff,ipoib:\n mgid=ff12:401b::1\n ALL=full;\n",
    ] {
        let c = parse(ok).unwrap();
        assert!(c.warnings.is_empty(), "{ok:?}: {:?}", c.warnings);
    }
}

// opensm(8) `scope=`: "default is 2 (link local) ... This overwrites the scope nibble of the
// specified mgid"; OpenSM osm_prtn.c osm_prtn_add_mcgroup. Measured on OpenSM 3.3.23:
// `mgid=ff15::abcd` without `scope=` made the group ff12::abcd (docs/OPENSM-PARTITIONS.md); we
// made ff15::abcd.
#[test]
fn an_mgid_without_scope_gets_the_default_scope_nibble() {
    let c = parse(
        "Default=0x7fff, ipoib : ALL=full,\n  mgid=ff15::abcd\n  mgid=ff15::abce,scope=5\n ;\n",
    )
    .unwrap();
    let mgids: Vec<String> = c
        .precreated_groups()
        .iter()
        .map(|g| format!("{} {}", Ipv6Addr::from(g.mgid.0), g.scope))
        .collect();
    assert_eq!(
        mgids,
        [
            "ff12:401b:ffff::ffff:ffff 2",
            "ff12::abcd 2",
            "ff15::abce 5"
        ]
    );
}
