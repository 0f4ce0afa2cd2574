//! Two real OpenSMs on our fabric hand mastership over as on a real subnet (IBA 1 §14.4.1;
//! docs/OPENSM-NOTES.md "Our SM against OpenSM"): the first, on h0, masters the subnet; a second
//! of greater priority started on h1 enters Standby and tells the master by trap 144, which the
//! master represses and answers with a sweep and a HANDOVER; the second, now master, sweeps the
//! subnet and reaches SUBNET UP, and our hosts work through its SA. Before, the TrapRepress never
//! reached the second OpenSM (the HCA's SMA took it, the ibsim server changed its TID), its trap
//! stayed outstanding (under ibsim-run no MAD layer times a send out), and as master it never
//! ended a sweep. Skipped, with a message, where ibsim-run or opensm is not installed.

mod osm;

use osm::*;

const HOSTS: usize = 3;

#[test]
fn a_greater_opensm_started_later_takes_over_by_handover() {
    if !all_installed(&["ibsim-run", "opensm"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let parts = partitions(dir.path());
    let hosts = HOSTS.to_string();
    let topology = ["--topology", "single-switch", "--hosts", &hosts];
    let mut server = Server::start(dir.path(), "osm-handover", &topology, &parts);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let first = OpenSm::start_on(&a, &server.sock, "h0", &parts, "opensm");
    assert!(
        first.wait_count("SUBNET UP", 1, 30),
        "the first OpenSM did not reach SUBNET UP:\n{}",
        first.explain(&server)
    );
    let second = OpenSm::start_args(&b, &server.sock, "h1", &parts, "opensm", &["-p", "15"]);
    let took_over = second.wait_count("Entering MASTER state", 1, 30)
        && second.wait_count("SUBNET UP", 1, 30)
        && first.wait_count("Entering STANDBY state", 1, 30);
    assert!(
        took_over,
        "no handover:\nsecond {}\nfirst {}",
        second.explain(&server),
        first.log()
    );
    let errors = second.errors();
    assert!(errors.is_empty(), "the second OpenSM's errors: {errors:#?}");
    // The hosts registered again at the new master's SA (its ClientReregister) and ping each
    // other over IPv4 and IPv6: a round started once the second OpenSM is master. The first
    // round, started a second after the hosts came up under the first OpenSM, may overlap the
    // handover, or end before it began: its result proves neither.
    let (first, round) = server.ping_round(60);
    assert!(first.is_some(), "no first ping round: {round:#?}");
    server.send("pingall");
    server.all_pings_answered(HOSTS, 60);
}
