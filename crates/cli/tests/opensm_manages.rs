//! The real OpenSM manages our fabric: `ipoib ibsim-server --sm none` serves a subnet with no SM of
//! ours (ports up to Init), `ibsim-run opensm` attaches to host h0 and configures every port, LFT
//! and MFT through our SMAs by SMPs (docs/OPENSM-NOTES.md "OpenSM managing our fabric"); our hosts'
//! IPoIB interfaces find OpenSM's SA through the SM LID it wrote and join its broadcast group, and
//! ping each other over IPv4 and IPv6 through the tables OpenSM programmed. Checked with
//! infiniband-diags under `ibsim-run`: `ibnetdiscover` sees exactly our topology (the same nodes,
//! GUIDs, descriptions and cables), `saquery` lists our hosts as full members of the broadcast
//! group, `perfquery` reads a host's PMA. Skipped, with a message, where ibsim-run, opensm,
//! ibnetdiscover or saquery is not installed. The processes are those of `osm/mod.rs`, stopped on
//! every exit path.

mod osm;

use ipoib_fabric::hw::topology::Topology;
use osm::*;
use std::net::Ipv6Addr;

const HOSTS: usize = 3;

#[test]
fn opensm_manages_our_fabric() {
    if !all_installed(&["ibsim-run", "opensm", "ibnetdiscover", "saquery"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let parts = partitions(dir.path());
    let hosts = HOSTS.to_string();
    let topology = ["--topology", "single-switch", "--hosts", &hosts];
    let mut server = Server::start(dir.path(), "osm-test", &topology, &parts);
    // No SM of ours: nobody has a LID yet.
    for i in 0..HOSTS {
        assert_eq!(
            server.lines[i],
            format!("host h{i} lid 0 port 1"),
            "{:?}",
            server.lines
        );
    }

    let osm = OpenSm::start(dir.path(), &server, "h0", &parts);
    let up = osm.wait_count("SUBNET UP", 1, 30);
    assert!(
        up,
        "OpenSM did not reach SUBNET UP:\n{}",
        osm.explain(&server)
    );
    let errors = osm.errors();
    assert!(errors.is_empty(), "OpenSM errors: {errors:#?}");

    // Our hosts ping each other over IPv4 and IPv6 (every ordered pair, both families), through
    // the LFTs and the broadcast group's MFT OpenSM wrote.
    let round = server.all_pings_answered(HOSTS, 60);
    let count = |family: &str| {
        round
            .iter()
            .filter(|l| l.starts_with("ping h") && l.contains(family) && l.ends_with(": reply"))
            .count()
    };
    assert_eq!(count(" 10.0.0."), HOSTS * (HOSTS - 1), "{round:#?}");
    assert_eq!(count(" fe80::"), HOSTS * (HOSTS - 1), "{round:#?}");

    // ibnetdiscover (from h1) sees our topology: the same nodes by GUID, kind, port count and
    // description, the same cables between the same ports, nothing more.
    let topo = Topology::single_switch(HOSTS).unwrap();
    let out = diag(dir.path(), &server.sock, "h1", &["ibnetdiscover"]);
    assert_eq!(
        Fabric::from_ibnetdiscover(&out),
        Fabric::of_topology(&topo, &[]),
        "{out}"
    );

    // saquery (from h2, trusted: SM_Key 1, OpenSM's default): the members of the broadcast
    // group are our hosts' ports, each a full member (JoinState 0x1).
    let out = diag(
        dir.path(),
        &server.sock,
        "h2",
        &[
            "saquery",
            "--smkey",
            "1",
            "MCMR",
            "--mgid",
            "ff12:401b:ffff::ffff:ffff",
        ],
    );
    let mut got = values(&out, "PortGid");
    got.sort();
    let mut want: Vec<String> = topo
        .cas()
        .map(|n| {
            let g = topo.nodes()[n].port_guid(1).0;
            Ipv6Addr::from((0xfe80u128 << 112) | u128::from(g)).to_string()
        })
        .collect();
    want.sort();
    assert_eq!(got, want, "{out}");
    assert_eq!(values(&out, "JoinState"), vec!["0x1"; HOSTS], "{out}");
    assert_eq!(values(&out, "pkey"), vec!["0xffff"; HOSTS], "{out}");

    // perfquery (from h1, its own port by the LID OpenSM gave it): the PMA's ClassPortInfo, then
    // the extended counters, which count at least the pings above.
    if installed("perfquery") {
        let out = diag(dir.path(), &server.sock, "h1", &["perfquery", "-x"]);
        assert!(
            out.starts_with("# Port extended counters: Lid ") && out.contains("(CapMask: 0x200"),
            "{out}"
        );
        // `PortXmitPkts:....................61`
        let pkts: Vec<u64> = out
            .lines()
            .filter_map(|l| l.strip_prefix("PortXmitPkts:"))
            .filter_map(|v| v.trim_start_matches('.').trim().parse().ok())
            .collect();
        assert!(matches!(pkts[..], [n] if n >= 4), "{out}");
    }
}
