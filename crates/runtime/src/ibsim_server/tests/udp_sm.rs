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

/// UDP mode: an SM client that vanished without DISCONNECT (OpenSM killed with SIGKILL) holds
/// the SM role of its CA until a write to it fails, which needs a MAD for it; so the client that
/// asks for the role next gets it at once (as ibsim grants every SET_ISSM), and the SA's
/// requests to the port reach it. Before, SET_ISSM was refused: the restarted OpenSM ran
/// without the SA's requests (docs/IBSIM.md "ibsim (server side)").
#[test]
fn udp_sm_role_goes_to_the_latest_asker() {
    let addr = free_udp_pair();
    let mut cfg = ServerConfig::unix("unused");
    cfg.listen = Listen::Udp { addr };
    let opts = ServeOptions {
        max_sleep: Duration::from_millis(10),
        probe_every: Duration::from_millis(50),
    };
    let srv = Running::start_with(String::new(), cfg, opts);
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
