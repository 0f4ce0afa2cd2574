//! [`IbsimClient`]: one attachment to an ibsim node, over abstract Unix datagram sockets (the
//! default) or UDP (`IBSIM_SERVER_NAME`/`IBSIM_SERVER_PORT`), as umad2sim's `sim_client.c` does it.
//!
//! Invariants: every blocking call is bounded by a timeout (no call waits forever on a dead
//! server); a connected client sends DISCONNECT when dropped, freeing its slot (ibsim has 10).

use std::io::{self, ErrorKind};
use std::net::{IpAddr, Ipv4Addr, SocketAddr as InetAddr, ToSocketAddrs, UdpSocket};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixDatagram};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::msg::{
    ClientInfo, CtlType, SimCtl, SimRequest, SimRequestHead, DEFAULT_BASENAME, DEFAULT_SERVER_PORT,
    MAD_LEN, SIM_CTL_LEN, SIM_REQUEST_LEN, STATUS_UNDELIVERED,
};
use ipoib_wire::smp::{NodeInfoRepr, PortInfoRepr};

/// How long a control exchange may take before the server counts as gone.
pub const CTL_TIMEOUT: Duration = Duration::from_secs(3);

/// Where the ibsim server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// Abstract Unix datagram sockets named `<basename>:ctl`, `<basename>:out<n>`; the client
    /// binds `<basename>:ctl<tag>` and `<basename>:in<tag>`. Each name ends in one NUL byte
    /// (docs/IBSIM.md).
    Unix {
        /// `IBSIM_SOCKNAME`, default `sim`.
        basename: String,
    },
    /// UDP: control at `server`, client slot `n` at port `server.port() + n + 1`.
    Udp {
        /// `IBSIM_SERVER_NAME`:`IBSIM_SERVER_PORT`.
        server: InetAddr,
    },
}

impl Endpoint {
    /// What umad2sim would use: UDP when `IBSIM_SERVER_NAME` is set and not empty (port from
    /// `IBSIM_SERVER_PORT`, default 8003), otherwise Unix with `IBSIM_SOCKNAME` (default `sim`).
    pub fn from_env() -> io::Result<Endpoint> {
        match std::env::var("IBSIM_SERVER_NAME") {
            Ok(host) if !host.is_empty() => {
                let port = match std::env::var("IBSIM_SERVER_PORT") {
                    Ok(p) => p.parse::<u16>().map_err(|_| {
                        io::Error::new(ErrorKind::InvalidInput, "IBSIM_SERVER_PORT is not a port")
                    })?,
                    Err(_) => DEFAULT_SERVER_PORT,
                };
                let server = (host.as_str(), port)
                    .to_socket_addrs()?
                    .find(InetAddr::is_ipv4)
                    .ok_or_else(|| {
                        io::Error::new(ErrorKind::NotFound, "IBSIM_SERVER_NAME has no IPv4 address")
                    })?;
                Ok(Endpoint::Udp { server })
            }
            _ => Ok(Endpoint::Unix {
                basename: std::env::var("IBSIM_SOCKNAME")
                    .unwrap_or_else(|_| DEFAULT_BASENAME.to_string()),
            }),
        }
    }

    /// The Unix endpoint with this basename.
    pub fn unix(basename: &str) -> Endpoint {
        Endpoint::Unix {
            basename: basename.to_string(),
        }
    }
}

/// A datagram socket of either family, connected to one peer.
#[derive(Debug)]
enum Sock {
    Unix(UnixDatagram),
    Udp(UdpSocket),
}

impl Sock {
    fn send(&self, b: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Unix(s) => s.send(b),
            Sock::Udp(s) => s.send(b),
        }
    }

    fn recv(&self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Unix(s) => s.recv(b),
            Sock::Udp(s) => s.recv(b),
        }
    }

    fn set_read_timeout(&self, t: Duration) -> io::Result<()> {
        // A zero duration is an error for set_read_timeout; the caller never waits less than 1 ms.
        let t = t.max(Duration::from_millis(1));
        match self {
            Sock::Unix(s) => s.set_read_timeout(Some(t)),
            Sock::Udp(s) => s.set_read_timeout(Some(t)),
        }
    }
}

/// One client of ibsim, attached to one node's port.
#[derive(Debug)]
pub struct IbsimClient {
    ctl: Sock,
    data: Sock,
    client_id: u32,
    node_id: String,
    qp: u32,
    connected: bool,
}

static NEXT_TAG: AtomicU32 = AtomicU32::new(0);

impl IbsimClient {
    /// Attaches to `node_id` (an ibsim node id such as `"Hca2"`, or `None` for ibsim's default
    /// port) through the server [`Endpoint::from_env`] names. `qp`: the QP this client answers for
    /// (requests to a DQP above 1 reach the client with that QP); `issm`: receive unsolicited
    /// QP0/QP1 requests as the node's SM. Fails with `ConnectionRefused` when the server is not
    /// running or refuses (unknown node, all 10 slots taken, an SM already on the node).
    pub fn connect(node_id: Option<&str>, qp: u32, issm: bool) -> io::Result<IbsimClient> {
        IbsimClient::connect_to(&Endpoint::from_env()?, node_id, qp, issm)
    }

    /// [`IbsimClient::connect`] to an explicit endpoint.
    pub fn connect_to(
        endpoint: &Endpoint,
        node_id: Option<&str>,
        qp: u32,
        issm: bool,
    ) -> io::Result<IbsimClient> {
        let (ctl, data, tag) = match endpoint {
            Endpoint::Unix { basename } => bind_unix(basename)?,
            Endpoint::Udp { server } => bind_udp(*server)?,
        };
        let mut client = IbsimClient {
            ctl,
            data,
            client_id: 0,
            node_id: String::new(),
            qp,
            connected: false,
        };
        let info = ClientInfo {
            id: tag,
            qp,
            issm: u32::from(issm),
            node_id: node_id.unwrap_or("").to_string(),
        };
        let answer = client.ctl_exchange(CtlType::Connect, &info.to_bytes())?;
        let answer = ClientInfo::parse(&answer).ok_or_else(|| bad_answer("CONNECT"))?;
        client.client_id = answer.id;
        client.node_id = answer.node_id;
        client.connected = true;
        match (&client.data, endpoint) {
            (Sock::Unix(s), Endpoint::Unix { basename }) => {
                s.connect_addr(&abstract_addr(&format!("{basename}:out{}", answer.id))?)?
            }
            (Sock::Udp(s), Endpoint::Udp { server }) => {
                let port = u32::from(server.port()) + answer.id + 1;
                let port = u16::try_from(port)
                    .map_err(|_| io::Error::new(ErrorKind::InvalidInput, "server port too high"))?;
                s.connect(InetAddr::new(server.ip(), port))?
            }
            _ => {
                return Err(io::Error::new(
                    ErrorKind::InvalidInput,
                    "socket family does not match the endpoint",
                ))
            }
        }
        Ok(client)
    }

    /// The slot the server gave this client (0..10 with ibsim; any with our server,
    /// `crate::ibsim_server`).
    pub fn client_id(&self) -> u32 {
        self.client_id
    }

    /// The node this client is attached to, as ibsim names it.
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    /// The QP given at connect.
    pub fn qp(&self) -> u32 {
        self.qp
    }

    /// PortInfo of the attached port (`SIM_CTL_GET_PORTINFO` with port 0).
    pub fn port_info(&self) -> io::Result<PortInfoRepr> {
        let b = self.ctl_exchange(CtlType::GetPortInfo, &[0u8; 64])?;
        PortInfoRepr::parse(&b).map_err(|_| bad_answer("GET_PORTINFO"))
    }

    /// NodeInfo of the attached node (`SIM_CTL_GET_NODEINFO`).
    pub fn node_info(&self) -> io::Result<NodeInfoRepr> {
        let b = self.ctl_exchange(CtlType::GetNodeInfo, &[0u8; 64])?;
        NodeInfoRepr::parse(&b).map_err(|_| bad_answer("GET_NODEINFO"))
    }

    /// Sends one 256-byte MAD to `dlid`/`dqp` from this client's port and QP. SLID 0 lets ibsim
    /// fill in the port's LID; with the permissive DLID (a directed-route SMP) the SLID is
    /// permissive too, as libumad2sim sends it (docs/IBSIM.md "ibsim (server side)"): ibsim
    /// routes the answer of a directed-route SMP with SLID 0 by LID 0 and hands it back
    /// undelivered. ibsim rewrites the top 16 bits of a request's TransactionID to the
    /// client id so that it can route the response back (ibsim `sim_mad.c` `update_trid`); match
    /// responses on the low 48 bits.
    pub fn send_mad(&self, dlid: u16, dqp: u32, mad: &[u8; MAD_LEN]) -> io::Result<()> {
        let req = SimRequest {
            head: SimRequestHead {
                dlid,
                slid: if dlid == 0xffff { 0xffff } else { 0 },
                dqp,
                sqp: self.qp,
                status: 0,
                length: MAD_LEN as u64,
            },
            mad: *mad,
        };
        let n = self.data.send(&req.to_bytes())?;
        if n != SIM_REQUEST_LEN {
            return Err(io::Error::new(ErrorKind::WriteZero, "short send to ibsim"));
        }
        Ok(())
    }

    /// The next MAD for this client, waiting at most `timeout`: `Ok(None)` when none came.
    /// Datagrams that are not a `sim_request` are skipped.
    pub fn recv(&self, timeout: Duration) -> io::Result<Option<SimRequest>> {
        let deadline = Instant::now() + timeout;
        let mut buf = [0u8; 512];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.data.set_read_timeout(left)?;
            let n = match self.data.recv(&mut buf) {
                Ok(n) => n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Ok(None)
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let Some(r) = SimRequest::parse(&buf[..n]) else {
                continue;
            };
            return Ok(Some(r));
        }
    }

    /// The next MAD as `(slid, sqp, mad)`, waiting at most `timeout`. A MAD of ours that ibsim
    /// hands back undelivered (no route, nobody to take it) is an `Other` error.
    pub fn recv_mad(&self, timeout: Duration) -> io::Result<Option<(u16, u32, Vec<u8>)>> {
        match self.recv(timeout)? {
            None => Ok(None),
            Some(m) if m.head.status != 0 => Err(undelivered(m.head.status)),
            Some(m) => Ok(Some((m.head.slid, m.head.sqp, m.mad.to_vec()))),
        }
    }

    /// Sends a request MAD and waits at most `timeout` for its response: the first MAD with the
    /// response bit whose TransactionID matches in the low 48 bits. Other MADs are skipped.
    /// `TimedOut` when none came; `Other` when ibsim hands the request back undelivered.
    pub fn request(
        &self,
        dlid: u16,
        dqp: u32,
        mad: &[u8; MAD_LEN],
        timeout: Duration,
    ) -> io::Result<Vec<u8>> {
        let tid = tid48(mad);
        self.send_mad(dlid, dqp, mad)?;
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(m) = self.recv(left)? else {
                return Err(io::Error::new(
                    ErrorKind::TimedOut,
                    format!("no response to TID {tid:#x} from LID {dlid} within {timeout:?}"),
                ));
            };
            if tid48(&m.mad) != tid {
                continue;
            }
            if m.head.status != 0 {
                return Err(undelivered(m.head.status));
            }
            if m.mad[3] & 0x80 != 0 {
                return Ok(m.mad.to_vec());
            }
        }
    }

    fn ctl_exchange(&self, t: CtlType, payload: &[u8]) -> io::Result<[u8; 64]> {
        let req = SimCtl::new(self.client_id, t, payload);
        self.ctl.set_read_timeout(CTL_TIMEOUT)?;
        self.ctl.send(&req.to_bytes())?;
        let mut buf = [0u8; SIM_CTL_LEN + 1];
        loop {
            let n = match self.ctl.recv(&mut buf) {
                Ok(n) => n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(io::Error::new(
                        ErrorKind::TimedOut,
                        format!("ibsim did not answer {t:?} within {CTL_TIMEOUT:?}"),
                    ))
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let Some(ans) = SimCtl::parse(&buf[..n]) else {
                continue;
            };
            if ans.ctl_type == CtlType::Error {
                return Err(io::Error::new(
                    ErrorKind::ConnectionRefused,
                    format!(
                        "ibsim refused {t:?} (unknown node, no free client slot, or an SM \
                         already on the node; see ibsim's output)"
                    ),
                ));
            }
            return Ok(ans.data);
        }
    }
}

impl Drop for IbsimClient {
    fn drop(&mut self) {
        if self.connected {
            // Best effort: a dead server cannot free the slot anyway.
            let _ = self.ctl_exchange(CtlType::Disconnect, &[]);
        }
    }
}

fn tid48(mad: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&mad[8..16]);
    u64::from_be_bytes(b) & 0x0000_ffff_ffff_ffff
}

fn undelivered(status: u32) -> io::Error {
    let why = if status == STATUS_UNDELIVERED {
        "no route to the DLID or nobody there to take it".to_string()
    } else {
        format!("status {status}")
    };
    io::Error::other(format!("ibsim handed the MAD back undelivered: {why}"))
}

fn bad_answer(what: &str) -> io::Error {
    io::Error::new(
        ErrorKind::InvalidData,
        format!("malformed ibsim answer to {what}"),
    )
}

/// An abstract socket address whose name is `name` plus one NUL byte, as ibsim's `make_name`
/// builds it (the length covers the trailing NUL).
fn abstract_addr(name: &str) -> io::Result<UnixAddr> {
    let mut bytes = name.as_bytes().to_vec();
    bytes.push(0);
    UnixAddr::from_abstract_name(bytes)
}

/// Binds `<base>:ctl<tag>` and `<base>:in<tag>` (both before CONNECT: the server connects to the
/// input socket while handling CONNECT and exits if it cannot) and connects the control socket
/// to `<base>:ctl`. The tag is unique in this process; a name taken by another process is skipped.
fn bind_unix(basename: &str) -> io::Result<(Sock, Sock, u32)> {
    let pid = std::process::id();
    for _ in 0..64 {
        // ibsim prints the tag with %d: keep it positive.
        let n = NEXT_TAG.fetch_add(1, Ordering::Relaxed);
        let tag = (pid.wrapping_mul(1000).wrapping_add(n % 1000)) & 0x7fff_ffff;
        let ctl = match UnixDatagram::bind_addr(&abstract_addr(&format!("{basename}:ctl{tag}"))?) {
            Ok(s) => s,
            Err(e) if e.kind() == ErrorKind::AddrInUse => continue,
            Err(e) => return Err(e),
        };
        let data = match UnixDatagram::bind_addr(&abstract_addr(&format!("{basename}:in{tag}"))?) {
            Ok(s) => s,
            Err(e) if e.kind() == ErrorKind::AddrInUse => continue,
            Err(e) => return Err(e),
        };
        ctl.connect_addr(&abstract_addr(&format!("{basename}:ctl"))?)?;
        return Ok((Sock::Unix(ctl), Sock::Unix(data), tag));
    }
    Err(io::Error::new(
        ErrorKind::AddrInUse,
        "no free ibsim client socket name",
    ))
}

/// UDP: the tag is the input socket's port, where the server sends this client's MADs.
fn bind_udp(server: InetAddr) -> io::Result<(Sock, Sock, u32)> {
    let any = InetAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);
    let ctl = UdpSocket::bind(any)?;
    ctl.connect(server)?;
    let data = UdpSocket::bind(any)?;
    let tag = u32::from(data.local_addr()?.port());
    Ok((Sock::Udp(ctl), Sock::Udp(data), tag))
}
