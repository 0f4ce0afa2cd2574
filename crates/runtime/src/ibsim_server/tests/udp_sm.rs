//! The SM role in UDP mode, where a vanished client cannot be found by connecting to it again.

use super::*;
use std::net::UdpSocket;

/// A UDP client by hand (umad2sim's `sim_client.c` with `IBSIM_SERVER_NAME` set): its data
/// port is its tag. Dropping it closes its sockets without DISCONNECT, as a SIGKILL would.
struct UdpRaw {
    ctl: UdpSocket,
    data: UdpSocket,
    id: u32,
}

impl UdpRaw {
    fn connect(server: std::net::SocketAddr, node: &str) -> UdpRaw {
        let ctl = UdpSocket::bind("127.0.0.1:0").unwrap();
        let data = UdpSocket::bind("127.0.0.1:0").unwrap();
        ctl.connect(server).unwrap();
        ctl.set_read_timeout(Some(LONG)).unwrap();
        data.set_read_timeout(Some(LONG)).unwrap();
        let info = ClientInfo {
            id: u32::from(data.local_addr().unwrap().port()),
            qp: 0,
            issm: 0,
            node_id: node.to_string(),
        };
        let ans = UdpRaw::exchange(&ctl, SimCtl::new(0, CtlType::Connect, &info.to_bytes()));
        assert_eq!(ans.ctl_type, CtlType::Connect, "connected");
        let id = ClientInfo::parse(&ans.data).unwrap().id;
        let mut out = server;
        out.set_port(server.port() + 1 + id as u16);
        data.connect(out).unwrap();
        UdpRaw { ctl, data, id }
    }

    fn exchange(ctl: &UdpSocket, req: SimCtl) -> SimCtl {
        ctl.send(&req.to_bytes()).unwrap();
        let mut b = [0u8; 128];
        let n = ctl.recv(&mut b).unwrap();
        SimCtl::parse(&b[..n]).unwrap()
    }

    fn ctl(&self, t: CtlType, payload: &[u8]) -> SimCtl {
        UdpRaw::exchange(&self.ctl, SimCtl::new(self.id, t, payload))
    }
}

/// A server in UDP mode on a free port pair, probing often.
fn udp_server() -> (std::net::SocketAddr, Running) {
    let addr = free_udp_pair();
    let mut cfg = ServerConfig::unix("unused");
    cfg.listen = Listen::Udp { addr };
    let opts = ServeOptions {
        max_sleep: Duration::from_millis(10),
        probe_every: Duration::from_millis(50),
    };
    (addr, Running::start_with(String::new(), cfg, opts))
}

/// UDP mode: an SM client that vanished without DISCONNECT (OpenSM killed with SIGKILL) holds
/// the SM role of its CA until a write to it fails, which needs a MAD for it; so the client that
/// asks for the role next gets it at once (as ibsim grants every SET_ISSM), and the SA's
/// requests to the port reach it. Before, SET_ISSM was refused: the restarted OpenSM ran
/// without the SA's requests (docs/IBSIM.md "ibsim (server side)").
#[test]
fn udp_sm_role_goes_to_the_latest_asker() {
    let (addr, srv) = udp_server();
    let on = 1i32.to_ne_bytes();
    let old = UdpRaw::connect(addr, "h1");
    assert_eq!(old.ctl(CtlType::SetIssm, &on).ctl_type, CtlType::SetIssm);
    drop(old);
    let new = UdpRaw::connect(addr, "h1");
    assert_eq!(
        new.ctl(CtlType::SetIssm, &on).ctl_type,
        CtlType::SetIssm,
        "the SM role, while the vanished SM still holds it"
    );
    // An SA request to h1's port reaches the new SM client.
    let ep = Endpoint::Udp { server: addr };
    sa_request_reaches_sm(&ep, 0x0778, |b| new.data.recv(b));
    drop(new);
    let (counters, _) = srv.stop();
    assert_eq!(counters.sm_handovers, 1, "the role taken from the old SM");
    assert_eq!(counters.refused, 0);
}

/// UDP mode: the latest asker takes the SM role from a live SM too (`SIM_SET_ISSM=1 ibsim-run
/// ibping -S` on OpenSM's CA, docs/IBSIM.md); once it gives the role up (SET_ISSM 0: its
/// `issm` device closed) or leaves (DISCONNECT), the client it took the role from, still
/// attached, has it again, and the SA's requests reach it. Before, nobody had the role after
/// that: OpenSM, which asks for it only once, ran on without the SA's requests for good (under
/// ibsim, whose requests go to the SM client of the lowest slot, it never lost them).
#[test]
fn udp_sm_role_comes_back_when_the_latest_asker_gives_it_up() {
    let (addr, srv) = udp_server();
    let (on, off) = (1i32.to_ne_bytes(), 0i32.to_ne_bytes());
    let ep = Endpoint::Udp { server: addr };
    let sm = UdpRaw::connect(addr, "h1");
    assert_eq!(sm.ctl(CtlType::SetIssm, &on).ctl_type, CtlType::SetIssm);
    // One that gives the role up, then one that leaves with it.
    let closes = UdpRaw::connect(addr, "h1");
    assert_eq!(closes.ctl(CtlType::SetIssm, &on).ctl_type, CtlType::SetIssm);
    sa_request_reaches_sm(&ep, 0x0779, |b| closes.data.recv(b));
    assert_eq!(
        closes.ctl(CtlType::SetIssm, &off).ctl_type,
        CtlType::SetIssm
    );
    sa_request_reaches_sm(&ep, 0x077a, |b| sm.data.recv(b));
    let leaves = UdpRaw::connect(addr, "h1");
    assert_eq!(leaves.ctl(CtlType::SetIssm, &on).ctl_type, CtlType::SetIssm);
    assert_eq!(
        leaves.ctl(CtlType::Disconnect, &[]).ctl_type,
        CtlType::Disconnect
    );
    sa_request_reaches_sm(&ep, 0x077b, |b| sm.data.recv(b));
    drop((sm, closes, leaves));
    let (counters, _) = srv.stop();
    assert_eq!(counters.sm_handovers, 2);
}

/// UDP mode: two SM clients that took the role from each other in turn; the one holding it
/// leaves and the other has it again, and once that one gives it up nobody has it (it is not
/// given back to the client that gave it up).
#[test]
fn udp_sm_role_taken_back_and_forth() {
    let (addr, srv) = udp_server();
    let (on, off) = (1i32.to_ne_bytes(), 0i32.to_ne_bytes());
    let ep = Endpoint::Udp { server: addr };
    let a = UdpRaw::connect(addr, "h1");
    let b = UdpRaw::connect(addr, "h1");
    for c in [&a, &b, &a] {
        assert_eq!(c.ctl(CtlType::SetIssm, &on).ctl_type, CtlType::SetIssm);
    }
    assert_eq!(
        a.ctl(CtlType::Disconnect, &[]).ctl_type,
        CtlType::Disconnect
    );
    sa_request_reaches_sm(&ep, 0x077c, |buf| b.data.recv(buf));
    assert_eq!(b.ctl(CtlType::SetIssm, &off).ctl_type, CtlType::SetIssm);
    // Nobody holds the role: a third client gets it without a handover.
    let c = UdpRaw::connect(addr, "h1");
    assert_eq!(c.ctl(CtlType::SetIssm, &on).ctl_type, CtlType::SetIssm);
    sa_request_reaches_sm(&ep, 0x077d, |buf| c.data.recv(buf));
    drop((a, b, c));
    let (counters, _) = srv.stop();
    assert_eq!(counters.sm_handovers, 2, "b from a, a from b; none for c");
}

/// UDP mode: an SM client that gave the role up itself (SET_ISSM 0) after it was taken from it
/// does not get it back when the one that took it gives it up.
#[test]
fn udp_sm_role_not_given_back_to_one_that_gave_it_up() {
    let (addr, srv) = udp_server();
    let (on, off) = (1i32.to_ne_bytes(), 0i32.to_ne_bytes());
    let ep = Endpoint::Udp { server: addr };
    let a = UdpRaw::connect(addr, "h1");
    let b = UdpRaw::connect(addr, "h1");
    for (c, v) in [(&a, on), (&b, on), (&a, off), (&b, off)] {
        assert_eq!(c.ctl(CtlType::SetIssm, &v).ctl_type, CtlType::SetIssm);
    }
    // Nobody holds the role: a third client gets it without a handover.
    let c = UdpRaw::connect(addr, "h1");
    assert_eq!(c.ctl(CtlType::SetIssm, &on).ctl_type, CtlType::SetIssm);
    sa_request_reaches_sm(&ep, 0x077e, |buf| c.data.recv(buf));
    drop((a, b, c));
    let (counters, _) = srv.stop();
    assert_eq!(counters.sm_handovers, 1, "b from a only");
}
