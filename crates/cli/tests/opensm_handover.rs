//! Two real OpenSMs on our fabric hand mastership over as on a real subnet (IBA 1 §14.4.1;
//! docs/OPENSM-NOTES.md "Our SM against OpenSM"): the first, on h0, masters the subnet; a second
//! of greater priority started on h1 enters Standby and tells the master by trap 144, which the
//! master represses and answers with a sweep and a HANDOVER; the second, now master, sweeps the
//! subnet and reaches SUBNET UP, and our hosts work through its SA; pings between hosts that
//! know each other are answered across the handover (a ClientReregister is a light flush, no
//! outage of a known neighbour's unicast). Before, the TrapRepress never
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
    // Every host pings every other under the first master (the round `--ping-all` starts once
    // the hosts are up): from then on each knows the others' addresses and paths.
    server.all_pings_answered(HOSTS, 60);
    let second = OpenSm::start_args(&b, &server.sock, "h1", &parts, "opensm", &["-p", "15"]);
    // A round between hosts that know each other, asked for as the second OpenSM starts. It
    // begins a second later (the round's settling time): after the handover on a quiet machine
    // (which takes some 20 ms in a lab), during it or during the new master's first sweep and
    // ClientReregister on a loaded one. None of its pings needs the SA, which OpenSM leaves
    // unanswered while it is not master or is in its first sweep: unicast to a known neighbour
    // keeps its path through the light flush (docs/IPOIB-JOINS.md "Unicast through a light
    // flush", where a continuous ping across the handover is measured), so every pair answers
    // within the round's 10 s however long the handover takes. A round of pairs that never
    // spoke needs ARP, ND and PathRecords, i.e. the SA, and proves nothing while it lasts.
    server.send("pingall");
    let across = server.all_pings_answered(HOSTS, 60);
    let took_over = second.wait_count("Entering MASTER state", 1, 30)
        && second.wait_count("SUBNET UP", 1, 30)
        && first.wait_count("Entering STANDBY state", 1, 30);
    assert!(
        took_over,
        "no handover:\nsecond {}\nfirst {}\nround {across:#?}",
        second.explain(&server),
        first.log()
    );
    let errors = second.errors();
    assert!(errors.is_empty(), "the second OpenSM's errors: {errors:#?}");
    // The hosts registered again at the new master's SA (its ClientReregister) and ping each
    // other over IPv4 and IPv6: a round started once the second OpenSM is master.
    server.send("pingall");
    server.all_pings_answered(HOSTS, 60);
}
