//! What an owner tells of the server's refusals: `ipoib ibsim-server` prints
//! [`IbsimServer::told_refusals`], and an [`IbsimEndpoint`] built [`IbsimEndpoint::telling`]
//! hands the same lines on after each turn (`ipoib lab --sm opensm`, `ipoib fabric --ibsim`).

use super::*;
use crate::realtime::Endpoint as _;
use std::cell::RefCell;
use std::rc::Rc;

/// A one-switch subnet of three hosts and an endpoint on `base` telling its lines into the list.
fn telling_endpoint(base: &str) -> (Subnet, IbsimEndpoint, Rc<RefCell<Vec<String>>>) {
    let topo = Topology::single_switch(3).unwrap();
    let net = Subnet::build(SubnetOptions::new(topo, 7)).unwrap();
    let server = IbsimServer::bind(ServerConfig::unix(base)).unwrap();
    let lines = Rc::new(RefCell::new(Vec::<String>::new()));
    let sink = Rc::clone(&lines);
    let ep = IbsimEndpoint::new(server, Duration::from_secs(3600))
        .telling(Box::new(move |l| sink.borrow_mut().push(l.to_string())));
    (net, ep, lines)
}

/// One turn of the endpoint: what the clients sent read, the answers written.
fn turn(ep: &mut IbsimEndpoint, net: &mut Subnet) {
    ep.on_readable(net, 64).unwrap();
    ep.flush(net).unwrap();
}

/// Sends a CONNECT for `node` (as an SM when `issm`) from a socket of its own, without waiting
/// for the answer (the server runs in this thread).
fn connect_to_node(base: &str, node: &str, issm: bool) -> UnixDatagram {
    connect_as_client(base, node, issm, false).0
}

/// As umad2sim's client does: with `input`, its input socket bound first (returned, to keep it
/// open), then a CONNECT for `node` from its control socket, without waiting for the answer;
/// the control socket and the client's tag (its id in the CONNECT).
fn connect_as_client(
    base: &str,
    node: &str,
    issm: bool,
    input: bool,
) -> (UnixDatagram, Option<UnixDatagram>, u32) {
    let tag = 800_000 + NEXT.fetch_add(1, Ordering::Relaxed);
    let addr = |name: String| sock::abstract_addr(&name).unwrap();
    let input = input.then(|| UnixDatagram::bind_addr(&addr(format!("{base}:in{tag}"))).unwrap());
    let ctl = UnixDatagram::bind_addr(&addr(format!("{base}:ctl{tag}"))).unwrap();
    ctl.connect_addr(&addr(format!("{base}:ctl"))).unwrap();
    let info = ClientInfo {
        id: tag,
        qp: 0,
        issm: u32::from(issm),
        node_id: node.to_string(),
    };
    ctl.send(&SimCtl::new(0, CtlType::Connect, &info.to_bytes()).to_bytes())
        .unwrap();
    (ctl, input, tag)
}

/// An endpoint told of each refusal after the turn that refused it, the reason in the line, then
/// once that later refusals are only counted; without `telling`, nothing is told (before, the
/// lab and the fabric said nothing of a refused client).
#[test]
fn an_endpoint_tells_its_refusals() {
    let base = unique_base();
    let (mut net, mut ep, lines) = telling_endpoint(&base);
    let first = connect_to_node(&base, "nope", false);
    turn(&mut ep, &mut net);
    let mut b = [0u8; 128];
    let n = first.recv(&mut b).unwrap();
    assert_eq!(SimCtl::parse(&b[..n]).unwrap().ctl_type, CtlType::Error);
    {
        let told = lines.borrow();
        assert_eq!(told.len(), 1, "{told:?}");
        assert!(told[0].starts_with("refused client "), "{told:?}");
        assert!(
            told[0].ends_with(" (node \"nope\"): no such node"),
            "{told:?}"
        );
    }
    // An SM client on h0, where our SM runs.
    let sm = connect_to_node(&base, "h0", true);
    turn(&mut ep, &mut net);
    assert!(
        lines.borrow()[1].ends_with(": an SM runs on that node already"),
        "{:?}",
        lines.borrow()
    );
    // Past TOLD_REFUSALS, one line says the rest are only counted, and nothing more is told.
    // One CONNECT a turn: the control socket's queue is short (max_dgram_qlen), and a blocking
    // send to a full one waits for the reader, this thread.
    let more: Vec<UnixDatagram> = (0..TOLD_REFUSALS + 3)
        .map(|_| {
            let c = connect_to_node(&base, "nope", false);
            turn(&mut ep, &mut net);
            c
        })
        .collect();
    let told = lines.borrow();
    assert_eq!(ep.server().counters().refused, TOLD_REFUSALS + 5);
    assert_eq!(told.len() as u64, TOLD_REFUSALS + 1, "{told:?}");
    assert_eq!(
        told.last().unwrap(),
        &format!(
            "more than {TOLD_REFUSALS} refused (clients, SM roles); further ones only counted"
        )
    );
    drop((first, sm, more));
}

/// A refused SET_ISSM 1 is told as a refused CONNECT is, and counted: umad2sim ignores the
/// answer to it (`umad2sim.c` opens the `issm` device whatever `sim_client_set_sm` returns), so
/// OpenSM refused the role runs on as an SM that never gets the SA's requests, and says nothing
/// (docs/IBSIM.md). Here OpenSM's line as `ipoib fabric --ibsim` prints it, on the SM's CA where
/// our SM runs (`--sm none` forgotten). Before, the refusal was neither told nor counted.
#[test]
fn a_refused_sm_role_is_told() {
    let base = unique_base();
    let (mut net, mut ep, lines) = telling_endpoint(&base);
    let answer = |ctl: &UnixDatagram| {
        let mut b = [0u8; 128];
        let n = ctl.recv(&mut b).unwrap();
        SimCtl::parse(&b[..n]).unwrap()
    };
    // umad2sim's client: its input socket first, then CONNECT with issm 0.
    let (ctl, _input, tag) = connect_as_client(&base, "h0", false, true);
    turn(&mut ep, &mut net);
    let a = answer(&ctl);
    assert_eq!(a.ctl_type, CtlType::Connect);
    let id = ClientInfo::parse(&a.data).unwrap().id;
    assert!(lines.borrow().is_empty(), "{:?}", lines.borrow());
    // The `issm` device opened: SET_ISSM 1, refused (our SM runs on h0).
    let on = 1i32.to_ne_bytes();
    ctl.send(&SimCtl::new(id, CtlType::SetIssm, &on).to_bytes())
        .unwrap();
    turn(&mut ep, &mut net);
    assert_eq!(answer(&ctl).ctl_type, CtlType::Error);
    assert_eq!(
        *lines.borrow(),
        [format!(
            "refused the SM role to client {tag} (node \"h0\"): an SM runs on that node already"
        )]
    );
    let c = ep.server().counters();
    assert_eq!((c.refused, c.sm_role_refused), (0, 1));
}

/// A CONNECT naming a node of the topology that is no host of this server (a switch; in `ipoib
/// fabric --ibsim`, a CA whose host runs in an `ipoib attach` process) is told as such, not as
/// "no such node": the README's `SIM_HOST=h1` for `ipoib ibsim-server` names a node the fabric
/// has too. Before, both read "no such node".
#[test]
fn a_node_that_is_no_host_here_is_told_as_such() {
    let base = unique_base();
    let (mut net, mut ep, lines) = telling_endpoint(&base);
    let clients: Vec<UnixDatagram> = ["sw0", "nope"]
        .into_iter()
        .map(|node| {
            let c = connect_to_node(&base, node, false);
            turn(&mut ep, &mut net);
            c
        })
        .collect();
    let told = lines.borrow();
    assert_eq!(told.len(), 2, "{told:?}");
    assert!(
        told[0].ends_with(
            " (node \"sw0\"): not a CA this server attaches clients to (a switch, or a CA whose \
             host runs in an `ipoib attach` process)"
        ),
        "{told:?}"
    );
    assert!(
        told[1].ends_with(" (node \"nope\"): no such node"),
        "{told:?}"
    );
    drop(clients);
}
