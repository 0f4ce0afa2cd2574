//! `ipoib attach`: one host on a UDP socket connected to the fabric ([`AttachProcess`]), with the
//! control socket `ipoib show` reads (`crate::control`, `<run dir>/attach-<dev>.sock`).

use super::{fresh_seed, read_batch, IoCounters, WallClock, BUF_LEN, MAX_WAIT, SLACK};
use crate::control::{attach_socket, AnswerError, BindError, ControlServer, Request, View};
use crate::show::{Answer, CounterSection, HostShow};
use ipoib_fabric::node::host::Host;
use ipoib_fabric::node::ipoib::{IpoibApp, IpoibHandle};
use ipoib_fabric::node::remote::{HostLinkConfig, HostLinkEvent, InstallFn, RemoteHost};
use ipoib_fabric::Instant;
use ipoib_proto::ipoib::{ConnectedConfig, Interface, InterfaceConfig, Ipv4Config};
use ipoib_wire::udp_fabric::AttachAccept;
use ipoib_wire::{Guid, PKey};
use std::cell::Cell;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::rc::Rc;
use std::time::Duration;

/// What `ipoib attach` runs.
#[derive(Debug, Clone)]
pub struct AttachOptions {
    /// The fabric.
    pub fabric: SocketAddr,
    /// IPv4 address and prefix length.
    pub ipv4: Option<(Ipv4Addr, u8)>,
    /// IPv6 addresses (besides the link-local one from the port GUID).
    pub ipv6: Vec<(Ipv6Addr, u8)>,
    /// IPv6 on.
    pub ipv6_on: bool,
    /// Connected mode (RFC 4755).
    pub connected: bool,
    /// The partition.
    pub pkey: PKey,
    /// The protocol's timers.
    pub link: HostLinkConfig,
    /// Seed of the host's random choices and its first QPN ([`fresh_seed`] by default).
    pub seed: u64,
    /// The IP layer is the operating system's ([`IpoibApp::install_external`]: packets come in
    /// through [`AttachProcess::from_os`] and leave through [`AttachProcess::drain_to_os`]);
    /// otherwise the emulation's own.
    pub external: bool,
}

impl AttachOptions {
    /// Defaults for `fabric`: no address, IPv6 link-local on, datagram mode, the default
    /// partition, a fresh seed.
    pub fn new(fabric: SocketAddr) -> AttachOptions {
        AttachOptions {
            fabric,
            ipv4: None,
            ipv6: Vec::new(),
            ipv6_on: true,
            connected: false,
            pkey: PKey::DEFAULT,
            link: HostLinkConfig::default(),
            seed: fresh_seed(),
            external: false,
        }
    }

    /// The interface configuration of these options.
    pub fn interface_config(&self) -> InterfaceConfig {
        let mut cfg = InterfaceConfig::new(Guid(0), 0);
        cfg.pkey = self.pkey;
        cfg.ipv4 = self.ipv4.map(|(addr, prefix_len)| Ipv4Config {
            addr,
            prefix_len,
            gateway: None,
        });
        cfg.ipv6 = self.ipv6_on || !self.ipv6.is_empty();
        cfg.ipv6_static = self.ipv6.clone();
        if self.connected {
            cfg.connected = Some(ConnectedConfig::rc());
        }
        cfg
    }
}

/// `ipoib attach`: one host on a UDP socket connected to the fabric. Its IP layer is, for now,
/// the built-in one of [`IpoibApp::install`] (it answers ARP, ND and pings); the TUN device for
/// the operating system's IP comes with the external-IP interface.
pub struct AttachProcess {
    host: RemoteHost,
    ipoib: Rc<Cell<Option<IpoibHandle>>>,
    socket: UdpSocket,
    clock: WallClock,
    counters: IoCounters,
    buf: Vec<u8>,
    /// The control socket and the name the host goes by there (the device).
    control: Option<(ControlServer, String)>,
}

impl std::fmt::Debug for AttachProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttachProcess")
            .field("host", &self.host)
            .field("counters", &self.counters)
            .finish()
    }
}

impl AttachProcess {
    /// A host that starts attaching to `opts.fabric` at once.
    pub fn connect(opts: &AttachOptions) -> io::Result<AttachProcess> {
        let any: SocketAddr = if opts.fabric.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let socket = UdpSocket::bind(any)?;
        super::grow_buffers(&socket);
        socket.connect(opts.fabric)?;
        let ipoib = Rc::new(Cell::new(None));
        let slot = ipoib.clone();
        let cfg = opts.interface_config();
        let external = opts.external;
        let install: InstallFn = Box::new(move |h: &mut Host, _a: &AttachAccept, rng| {
            let app = if external {
                IpoibApp::install_external(h, cfg.clone(), rng)
            } else {
                IpoibApp::install(h, cfg.clone(), rng)
            };
            slot.set(app.ok());
        });
        let clock = WallClock::start();
        // The first QPN from the seed: 0x100.. below the top of the 24-bit space.
        let first_qpn = 0x100 + (opts.seed % 0x00ff_0000) as u32;
        let host = RemoteHost::new(clock.now(), opts.link, opts.seed, Some(first_qpn), install);
        Ok(AttachProcess {
            host,
            ipoib,
            socket,
            clock,
            counters: IoCounters::default(),
            buf: vec![0; BUF_LEN],
            control: None,
        })
    }

    /// Serves `ipoib show --dev DEV` on `<run dir>/attach-<dev>.sock` (the run directory is made
    /// when missing), answered between turns.
    pub fn serve_control(&mut self, dev: &str) -> Result<(), BindError> {
        let path = attach_socket(dev);
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        self.control = Some((ControlServer::bind(&path)?, dev.to_string()));
        Ok(())
    }

    /// The control socket's path, when served.
    pub fn control_path(&self) -> Option<&std::path::Path> {
        self.control.as_ref().map(|(c, _)| c.path())
    }

    /// The IPoIB interface agent, once the host is built.
    pub fn interface(&self) -> Option<&Interface> {
        let h = self.ipoib.get()?;
        self.host.host()?.agent::<Interface>(h.agent)
    }

    /// The answer to a control request (the host is named by its device).
    fn answer(&self, dev: &str, req: &Request) -> Result<Answer, AnswerError> {
        if let Some(name) = req.host.as_ref().filter(|n| *n != dev) {
            return Err(AnswerError::NoSuchHost(name.clone()));
        }
        let iface = self
            .interface()
            .ok_or_else(|| AnswerError::Unavailable("not attached yet".into()))?;
        let host = HostShow::collect(dev, req.view, iface, self.app());
        let mut sections = Vec::new();
        if req.view == View::Counters {
            let l = self.host.link().counters();
            let mut s = CounterSection::new("attach");
            s.push("datagrams", l.datagrams)
                .push("malformed", l.malformed)
                .push("stale", l.stale)
                .push("attach_requests", l.attach_requests)
                .push("keepalives", l.keepalives)
                .push("lost", l.lost)
                .push("unattached", l.unattached)
                .push("queue_full", l.queue_full)
                .push("builds", self.host.builds());
            sections.push(s);
            let mut s = CounterSection::new("udp");
            s.push("received", self.counters.received)
                .push("sent", self.counters.sent)
                .push("send_errors", self.counters.send_errors);
            sections.push(s);
        }
        Ok(Answer {
            hosts: vec![host],
            sections,
        })
    }

    fn serve(&mut self) {
        let Some((mut server, dev)) = self.control.take() else {
            return;
        };
        let this = &*self;
        server.poll(&mut |req: &Request| this.answer(&dev, req));
        self.control = Some((server, dev));
    }

    /// The host agent.
    pub fn host(&self) -> &RemoteHost {
        &self.host
    }

    /// The IPoIB adapter, once the host is built.
    pub fn app(&self) -> Option<&IpoibApp> {
        let h = self.ipoib.get()?;
        self.host.host()?.app::<IpoibApp>(h.app)
    }

    /// Counters of the socket.
    pub fn counters(&self) -> IoCounters {
        self.counters
    }

    /// The next status change of the attachment.
    pub fn poll_status(&mut self) -> Option<HostLinkEvent> {
        self.host.poll_status()
    }

    /// Runs `f` on the IPoIB adapter now (a ping, a join), then lets the host act.
    pub fn with_app<R>(&mut self, f: impl FnOnce(&mut IpoibApp, Instant) -> R) -> Option<R> {
        let h = self.ipoib.get()?;
        let now = self.clock.now();
        let r = self
            .host
            .with_host(now, |host, now| {
                host.app_mut::<IpoibApp>(h.app).map(|a| f(a, now))
            })
            .flatten();
        self.send();
        r
    }

    /// One turn (module docs), waiting at most `max_wait`.
    pub fn turn(&mut self, max_wait: Duration) -> io::Result<()> {
        let wait = self
            .host
            .poll_timeout()
            .map_or(max_wait, |t| self.clock.until(t).min(max_wait));
        let (host, clock, fabric) = (&mut self.host, self.clock, self.socket.peer_addr()?);
        let n = read_batch(&self.socket, &mut self.buf, wait, |from, d| {
            if from == fabric {
                host.handle_datagram(clock.now(), d);
            }
        })?;
        self.counters.received += n as u64;
        self.host.handle_timeout(self.clock.now() + SLACK);
        self.send();
        self.serve();
        Ok(())
    }

    /// Turns until `stop()` holds.
    pub fn run(&mut self, stop: impl Fn() -> bool) -> io::Result<()> {
        while !stop() {
            self.turn(MAX_WAIT)?;
        }
        Ok(())
    }

    /// Leaves the fabric: Detach, sent at once.
    pub fn detach(&mut self) {
        self.host.detach(self.clock.now());
        self.send();
    }

    /// One IP packet the operating system sent on the link (external IP layer; ignored
    /// otherwise, and before the host is built).
    pub fn from_os(&mut self, packet: &[u8]) {
        self.with_app(|a, now| a.from_os(now, packet));
    }

    /// Hands every IP packet waiting for the operating system to `out`.
    pub fn drain_to_os(&mut self, mut out: impl FnMut(&[u8])) {
        self.with_app(|a, _| {
            while let Some(p) = a.to_os() {
                out(&p);
            }
        });
    }

    /// Leaves the multicast groups the operating system listened to, lets the leaves go out for
    /// at most `grace` (turns of the loop), then detaches: what `ipoib attach` does on SIGINT
    /// and SIGTERM.
    pub fn shutdown(&mut self, grace: Duration) -> io::Result<()> {
        let left = self
            .with_app(|a, _| {
                let n = a.os_groups().len();
                a.forget_os_groups();
                n
            })
            .unwrap_or(0);
        if left > 0 && self.host.link().is_attached() {
            let end = std::time::Instant::now() + grace;
            while std::time::Instant::now() < end {
                self.turn(Duration::from_millis(10))?;
            }
        }
        self.detach();
        Ok(())
    }

    fn send(&mut self) {
        while let Some(d) = self.host.poll_transmit() {
            match self.socket.send(&d) {
                Ok(_) => self.counters.sent += 1,
                Err(_) => self.counters.send_errors += 1,
            }
        }
    }
}
