//! `ipoib attach`: one host on a UDP socket connected to the fabric ([`AttachProcess`]), on the
//! real-time driver with up to three endpoints: the socket, the TUN device through which the
//! operating system's IP stack uses the interface ([`AttachProcess::add_tun`]; the interface
//! is then installed with the OS's IP layer, [`IpoibApp::install_external`]), and the control
//! socket `ipoib show` reads (`crate::control`, `<run dir>/attach-<dev>.sock`).

use super::{fresh_seed, os_key, DatagramPeer, IoCounters, UdpEndpoint, MAX_WAIT};
use crate::capture_file::CaptureFile;
use crate::control::{attach_socket, AnswerError, BindError, ControlServer, Request, View};
use crate::realtime::control::{AnswerFn, ControlEndpoint};
use crate::realtime::{Config, Driver, Emulation, Wake};
use crate::show::{tun_section, Answer, CounterSection, HostShow};
use crate::tun::{OsPort, Tun, TunCounters, TunEndpoint, READ_BUFFER};
use ipoib_fabric::node::host::Host;
use ipoib_fabric::node::ipoib::{IpoibApp, IpoibHandle};
use ipoib_fabric::node::remote::{HostLinkConfig, HostLinkEvent, InstallFn, Outgoing, RemoteHost};
use ipoib_fabric::Instant;
use ipoib_proto::ipoib::{ConnectedConfig, Interface, InterfaceConfig, IpBuf, Ipv4Config};
use ipoib_wire::udp_fabric::AttachAccept;
use ipoib_wire::{Guid, PKey};
use std::cell::Cell;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant as Wall};

/// The TUN device's MTU in datagram mode: 2048-byte IB MTU less the 4-byte IPoIB header
/// (draft-ietf-ipoib-ip-over-infiniband-06 §7; Linux's default).
pub const DATAGRAM_MTU: u32 = 2044;
/// The TUN device's MTU in connected mode (RFC 4755 §3.3, Linux's `IPOIB_CM_MTU`).
pub const CONNECTED_MTU: u32 = 65_520;

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
    /// The key of the host's attach nonces (`RemoteHost::new`); `None`: drawn from the
    /// operating system's random source by [`AttachProcess::connect`] (from `seed` by
    /// [`AttachEmu::new`]): whoever knows it can answer the host's requests without seeing
    /// them (docs/UDP-FABRIC.md "Limits").
    pub nonce_key: Option<[u64; 2]>,
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
            nonce_key: None,
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

/// The host agent as the driver's emulation: one [`RemoteHost`] and its IPoIB interface.
pub struct AttachEmu {
    host: RemoteHost,
    ipoib: Rc<Cell<Option<IpoibHandle>>>,
    io: IoCounters,
    /// The counters of the TUN device, once one carries the OS's packets.
    tun: Option<Arc<TunCounters>>,
    /// Packets from the OS dropped: no IPoIB adapter to take them (the host not built yet, or
    /// its adapter not installed).
    no_adapter: u64,
}

impl std::fmt::Debug for AttachEmu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttachEmu")
            .field("host", &self.host)
            .field("io", &self.io)
            .field("tun", &self.tun)
            .field("no_adapter", &self.no_adapter)
            .finish()
    }
}

impl AttachEmu {
    /// The host agent of `opts`, attaching from virtual time zero, without a socket: what
    /// [`AttachProcess::connect`] runs on its driver (`opts.fabric` is not used here). A caller
    /// that carries its datagrams itself (`examples/udppath.rs`) drives it through
    /// [`Emulation`] and [`DatagramPeer`], and its OS side through [`AttachOsPort`].
    pub fn new(opts: &AttachOptions) -> AttachEmu {
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
        // The first QPN from the seed: 0x100.. below the top of the 24-bit space.
        let first_qpn = 0x100 + (opts.seed % 0x00ff_0000) as u32;
        let host = RemoteHost::new(
            Instant::ZERO,
            opts.link,
            opts.seed,
            Some(first_qpn),
            opts.nonce_key,
            install,
        );
        AttachEmu {
            host,
            ipoib,
            io: IoCounters::default(),
            tun: None,
            no_adapter: 0,
        }
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

    /// The IPoIB interface agent, once the host is built.
    pub fn interface(&self) -> Option<&Interface> {
        let h = self.ipoib.get()?;
        self.host.host()?.agent::<Interface>(h.agent)
    }

    /// Runs `f` on the IPoIB adapter at the present, then lets the host act.
    pub fn with_app<R>(&mut self, f: impl FnOnce(&mut IpoibApp, Instant) -> R) -> Option<R> {
        let h = self.ipoib.get()?;
        let now = self.host.now();
        self.host
            .with_host(now, |host, now| {
                host.app_mut::<IpoibApp>(h.app).map(|a| f(a, now))
            })
            .flatten()
    }

    /// Shows `counters` as the host's TUN device's (section `tun` of the counters view,
    /// [`tun_section`]): [`AttachProcess::add_tun`] gives its endpoint's.
    pub fn set_tun_counters(&mut self, counters: Arc<TunCounters>) {
        self.tun = Some(counters);
    }

    /// The answer to a control request (the host is named by its device): the interface's
    /// views; in the counters view also its device's section `tun` (once it has one), and the
    /// process's `attach` and `udp`.
    pub fn answer(&self, dev: &str, req: &Request) -> Result<Answer, AnswerError> {
        if let Some(name) = req.host.as_ref().filter(|n| *n != dev) {
            // Its one host named, as a lab and a fabric list theirs (it said only `no host
            // "h1"`).
            return Err(AnswerError::no_such_host(name, &[dev]));
        }
        let iface = self
            .interface()
            .ok_or_else(|| AnswerError::Unavailable("not attached yet".into()))?;
        let mut host = HostShow::collect(dev, req.view, iface, self.app());
        let mut sections = Vec::new();
        if req.view == View::Counters {
            host.counters.extend(self.tun.as_deref().map(tun_section));
            let l = self.host.link().counters();
            let mut s = CounterSection::new("attach");
            s.push("datagrams", l.datagrams)
                .push("malformed", l.malformed)
                .push("stale", l.stale)
                .push("attach_requests", l.attach_requests)
                .push("challenges", l.challenges)
                .push("bad_version", l.bad_version)
                .push("bad_nonce", l.bad_nonce)
                .push("keepalives", l.keepalives)
                .push("lost", l.lost)
                .push("unattached", l.unattached)
                .push("queue_full", l.queue_full)
                .push("port_configs", l.port_configs)
                .push("client_reregisters", l.client_reregisters)
                .push("duplicates", l.duplicates)
                .push("out_of_order", l.out_of_order)
                .push("control_acks", l.control_acks)
                .push("builds", self.host.builds())
                .push("no_adapter", self.no_adapter);
            sections.push(s);
            let mut s = CounterSection::new("udp");
            s.push("received", self.io.received)
                .push("sent", self.io.sent)
                .push("send_errors", self.io.send_errors)
                .push("net_errors", self.io.net_errors);
            sections.push(s);
        }
        Ok(Answer {
            hosts: vec![host],
            sections,
        })
    }
}

impl Emulation for AttachEmu {
    fn now(&self) -> Instant {
        self.host.now()
    }
    fn next_event_at(&self) -> Option<Instant> {
        self.host.poll_timeout()
    }
    fn run_until(&mut self, t: Instant) {
        self.host.handle_timeout(t);
    }
}

impl DatagramPeer for AttachEmu {
    fn on_datagram(&mut self, _from: SocketAddr, data: &[u8]) {
        // The socket is connected: only the fabric's datagrams arrive. A packet waits on the
        // host's cable for the driver's run of the turn (`Emulation::run_until`), which takes
        // all the turn's packets in one run of the host.
        let now = self.host.now();
        self.host.queue_datagram(now, data);
    }
    fn next_datagram(&mut self) -> Option<(Option<SocketAddr>, Outgoing)> {
        self.host.poll_transmit_parts().map(|d| (None, d))
    }
    fn io_counters(&mut self) -> &mut IoCounters {
        &mut self.io
    }
    fn recycle(&mut self, body: Vec<u8>) {
        self.host.recycle(body);
    }
}

/// The interface's OS side: what the TUN endpoint reads goes in, what it writes comes out (a
/// harness without a device, `examples/udppath.rs`, stands in for the endpoint).
#[derive(Debug, Clone, Copy, Default)]
pub struct AttachOsPort;

impl OsPort<AttachEmu> for AttachOsPort {
    fn packet_from_os(&mut self, emu: &mut AttachEmu, packet: &[u8]) {
        // Queued in the adapter; the host acts on the whole batch at its end.
        let (ipoib, now) = (emu.ipoib.get(), emu.host.now());
        match ipoib.and_then(|h| {
            emu.host
                .host_mut()
                .and_then(|host| host.app_mut::<IpoibApp>(h.app))
        }) {
            Some(a) => a.from_os(now, packet),
            None => emu.no_adapter += 1,
        }
    }
    fn frame_from_os(&mut self, emu: &mut AttachEmu, frame: Vec<u8>) -> Option<Vec<u8>> {
        // The buffer becomes the frame the interface sends, with no copy, as in the lab
        // (`crate::ipoib_port`); a completed message's buffer comes back for the next read.
        let Some(h) = emu.ipoib.get().filter(|_| emu.app().is_some()) else {
            emu.no_adapter += 1;
            return Some(frame);
        };
        emu.host
            .with_host_tx(|host, now, tx| {
                if let Some(a) = host.app_mut::<IpoibApp>(h.app) {
                    a.from_os_frame(now, frame);
                }
                tx.spare_large(READ_BUFFER)
            })
            .flatten()
    }
    fn segment_buffer(&mut self, emu: &mut AttachEmu) -> Option<Vec<u8>> {
        // A spent packet's allocation (a sent datagram's body, a sent frame's,
        // `Simulator::recycle`): the segment is sent from it, and it comes back once sent.
        Some(emu.host.spare())
    }
    fn end_of_batch(&mut self, emu: &mut AttachEmu) {
        let now = emu.host.now();
        emu.host.with_host(now, |_, _| ());
    }
    fn packets_to_os(&mut self, emu: &mut AttachEmu, out: &mut dyn FnMut(IpBuf)) {
        let Some(h) = emu.ipoib.get() else {
            return;
        };
        if let Some(a) = emu
            .host
            .host_mut()
            .and_then(|host| host.app_mut::<IpoibApp>(h.app))
        {
            while let Some(p) = a.to_os_buf() {
                out(p);
            }
        }
    }
    fn recycle_to_os(&mut self, emu: &mut AttachEmu, packet: IpBuf) {
        // Kept by the host for its next packets (`Simulator::recycle`): a datagram's copy, a
        // datagram's data received (`Hca::receive_frame`), a packet built.
        emu.host.recycle(packet.into_allocation());
    }
}

/// `ipoib attach`: one host whose fabric is reached over UDP. See the module docs.
#[derive(Debug)]
pub struct AttachProcess {
    driver: Driver<AttachEmu>,
    control: Option<std::path::PathBuf>,
    capture: Option<CaptureFile>,
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
        let mut opts = opts.clone();
        if opts.nonce_key.is_none() {
            opts.nonce_key = Some(os_key()?);
        }
        let emu = AttachEmu::new(&opts);
        let mut driver = Driver::new(emu, Config::default())?;
        driver.add(Box::new(UdpEndpoint::new(socket)?))?;
        Ok(AttachProcess {
            driver,
            control: None,
            capture: None,
        })
    }

    /// Records every packet on the host's cable, both ways, into `path` (ERF records,
    /// time-stamped by the wall clock), written as it grows, until the file would pass `limit`
    /// bytes; kept across reattaches (`RemoteHost::set_capture`).
    pub fn capture_to(&mut self, path: &str, limit: Option<u64>) -> io::Result<()> {
        let epoch = crate::capture_file::epoch_of(&self.driver.clock());
        let host = &mut self.driver.emulation_mut().host;
        self.capture = Some(CaptureFile::start(path, limit, host, epoch)?);
        Ok(())
    }

    /// The capture file of [`AttachProcess::capture_to`]: what it holds, whether the limit or
    /// a write error stopped it.
    pub fn capture(&self) -> Option<&CaptureFile> {
        self.capture.as_ref()
    }

    /// One turn of the driver, then what the capture took in it written out.
    fn step(&mut self, deadline: Wall) -> io::Result<Wake> {
        // Also when the turn failed: what it recorded before is written.
        let w = self.driver.turn(deadline);
        if let Some(file) = &mut self.capture {
            file.drain(&mut self.driver.emulation_mut().host);
        }
        w
    }

    /// Carries the OS's IP packets through `tun` (made with [`Tun::create`] in this or another
    /// network namespace; the options must have asked for the external IP layer). Packets for
    /// the OS are written by the endpoint's own thread ([`TunEndpoint::with_writer_thread`]).
    /// The device is an answering endpoint ([`Driver::add_answering`]): what the kernel answers
    /// inside a write (a ping's echo reply) leaves in the same turn, with the RC
    /// acknowledgement of the request, not in a turn and datagram of its own after it.
    pub fn add_tun(&mut self, tun: Tun) -> io::Result<()> {
        let ep = TunEndpoint::with_writer_thread(tun, AttachOsPort)?;
        let counters = ep.counters();
        self.driver.add_answering(Box::new(ep))?;
        self.driver.emulation_mut().set_tun_counters(counters);
        Ok(())
    }

    /// Serves `ipoib show [--netns NS] --dev DEV` on [`attach_socket`]`(netns, dev)` (its
    /// directory is made when missing).
    pub fn serve_control(&mut self, netns: Option<&str>, dev: &str) -> Result<(), BindError> {
        let path = attach_socket(netns, dev);
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let server = ControlServer::bind(&path)?;
        self.control = Some(server.path().to_path_buf());
        let dev = dev.to_string();
        let answer: AnswerFn<AttachEmu> = Box::new(move |emu, req| emu.answer(&dev, req));
        let ep = ControlEndpoint::new(server, answer);
        self.driver.add(Box::new(ep)).map_err(|e| BindError::Io {
            path: path.clone(),
            source: e,
        })?;
        Ok(())
    }

    /// The control socket's path, when served.
    pub fn control_path(&self) -> Option<&std::path::Path> {
        self.control.as_deref()
    }

    /// Stops the driver when `fd` becomes readable (the read end of a socket pair that SIGINT
    /// and SIGTERM write to).
    pub fn set_stop(&mut self, fd: OwnedFd) -> io::Result<()> {
        self.driver.set_stop(fd)
    }

    /// Polls the socket (and the other files) without blocking for `window` after each turn
    /// that moved something before sleeping ([`crate::realtime::Config::busy_poll`]; zero: off).
    pub fn set_busy_poll(&mut self, window: Duration) {
        self.driver.set_busy_poll(window);
    }

    /// Prints each turn's timings on standard error ([`crate::realtime::Driver::set_trace`]).
    pub fn set_trace(&mut self, on: bool) {
        self.driver.set_trace(on);
    }

    /// The emulation.
    pub fn emu(&self) -> &AttachEmu {
        self.driver.emulation()
    }

    /// The emulation, to change.
    pub fn emu_mut(&mut self) -> &mut AttachEmu {
        self.driver.emulation_mut()
    }

    /// The host agent.
    pub fn host(&self) -> &RemoteHost {
        &self.driver.emulation().host
    }

    /// The IPoIB adapter, once the host is built.
    pub fn app(&self) -> Option<&IpoibApp> {
        self.driver.emulation().app()
    }

    /// The IPoIB interface agent, once the host is built.
    pub fn interface(&self) -> Option<&Interface> {
        self.driver.emulation().interface()
    }

    /// Counters of the socket.
    pub fn counters(&self) -> IoCounters {
        self.driver.emulation().io
    }

    /// The next status change of the attachment.
    pub fn poll_status(&mut self) -> Option<HostLinkEvent> {
        self.driver.emulation_mut().host.poll_status()
    }

    /// Runs `f` on the IPoIB adapter now (a ping, a join), then lets the host act; what it sends
    /// leaves at the next turn.
    pub fn with_app<R>(&mut self, f: impl FnOnce(&mut IpoibApp, Instant) -> R) -> Option<R> {
        self.driver.emulation_mut().with_app(f)
    }

    /// One turn of the driver, sleeping at most `max_wait`; true when the stop file fired.
    pub fn turn(&mut self, max_wait: Duration) -> io::Result<bool> {
        Ok(self.step(Wall::now() + max_wait)? == Wake::Stop)
    }

    /// Turns until the stop file fires or `stop()` holds.
    pub fn run(&mut self, stop: impl Fn() -> bool) -> io::Result<()> {
        while !stop() {
            if self.turn(MAX_WAIT)? {
                break;
            }
        }
        Ok(())
    }

    /// Leaves the fabric: Detach, sent at once.
    pub fn detach(&mut self) -> io::Result<()> {
        let emu = self.driver.emulation_mut();
        let now = emu.host.now();
        emu.host.detach(now);
        // The turn's flush sends it; nothing else is due.
        self.step(Wall::now())?;
        Ok(())
    }

    /// One IP packet the operating system sent on the link (external IP layer; ignored
    /// otherwise, and before the host is built).
    pub fn from_os(&mut self, packet: &[u8]) {
        self.with_app(|a, now| a.from_os(now, packet));
    }

    /// Hands every IP packet waiting for the operating system to `out`.
    pub fn drain_to_os(&mut self, mut out: impl FnMut(&[u8])) {
        self.with_app(|a, _| {
            while let Some(p) = a.to_os_buf() {
                out(&p);
            }
        });
    }

    /// Leaves the multicast groups the operating system listened to, lets the leaves go out for
    /// at most `grace`, then detaches: what `ipoib attach` does on SIGINT and SIGTERM.
    pub fn shutdown(&mut self, grace: Duration) -> io::Result<()> {
        let left = self
            .with_app(|a, _| {
                let n = a.os_groups().len();
                a.forget_os_groups();
                n
            })
            .unwrap_or(0);
        if left > 0 && self.host().link().is_attached() {
            let end = Wall::now() + grace;
            while Wall::now() < end {
                // After a stop the driver no longer sleeps: pace the turns.
                if self.step(end)? == Wake::Stop {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        }
        self.detach()
    }

    /// The addresses the TUN device gets for these options.
    pub fn tun_addresses(opts: &AttachOptions) -> Vec<(IpAddr, u8)> {
        opts.ipv4
            .map(|(a, l)| (IpAddr::V4(a), l))
            .into_iter()
            .chain(opts.ipv6.iter().map(|&(a, l)| (IpAddr::V6(a), l)))
            .collect()
    }
}
