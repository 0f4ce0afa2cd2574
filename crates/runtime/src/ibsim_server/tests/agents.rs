//! Several umad2sim agents of one client, and several clients of one host, with requests
//! outstanding at once: each response reaches the agent and the client whose request it answers
//! (docs/IBSIM.md "ibsim (server side)": libumad2sim puts its agent's number in bits 32..47 of a
//! request's TID and hands a response to the agent those bits name; ibsim routes it to the client
//! its top 16 bits name).

use super::*;

/// Reads `n` datagrams of `c`'s, the TIDs of their MADs in order.
fn read_tids(c: &Raw, n: usize) -> Vec<u64> {
    (0..n)
        .map(|_| {
            let mut b = [0u8; SIM_REQUEST_LEN];
            let len = c.data.recv(&mut b).unwrap();
            let r = SimRequest::parse(&b[..len]).unwrap();
            MadHeaderRepr::parse_bytes(&r.mad).unwrap().transaction_id
        })
        .collect()
}

/// Two umad2sim agents (numbers 0 and 1 in bits 32..47) of one client send requests with the same
/// low 32 bits, both outstanding at once, and another client of the same host sends the same
/// TID: each response comes back with its own request's TID (the client id in the top 16 bits,
/// as ibsim's `update_trid` puts it), so each reaches its own agent, and nothing of one client's
/// reaches the other. Before, the server's one agent per client kept the high bits by the low
/// 32: both of the first client's requests left with one TID, and both responses came back
/// with agent 1's number.
#[test]
fn two_agents_of_a_client_with_the_same_low_bits_each_get_their_response() {
    let srv = Running::start();
    let c = Raw::connect(&srv.base, "h1").unwrap();
    let d = Raw::connect(&srv.base, "h1").unwrap();
    let (a0, a1) = (0x0000_0000_0000_0abc_u64, 0x0000_0001_0000_0abc_u64);
    {
        // Parked, the server reads all three in one turn: all outstanding at once.
        let _paused = srv.pause();
        for r in [cpi_request(a0), cpi_request(a1)] {
            c.data.send(&r.to_bytes()).unwrap();
        }
        d.data.send(&cpi_request(a0).to_bytes()).unwrap();
    }
    let mut got = read_tids(&c, 2);
    got.sort_unstable();
    let slot = |r: &Raw| u64::from(r.id) << 48;
    assert_eq!(got, vec![slot(&c) | a0, slot(&c) | a1]);
    assert_eq!(read_tids(&d, 1), vec![slot(&d) | a0]);
    d.data
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut b = [0u8; SIM_REQUEST_LEN];
    assert!(
        d.data.recv(&mut b).is_err(),
        "nothing more for the other client"
    );
    let (counters, _) = srv.stop();
    assert_eq!((counters.mads_in, counters.mads_out), (3, 3));
}
