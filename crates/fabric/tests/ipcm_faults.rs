//! The RDMA IP CM service under faults (Annex A11 over IBA 1 chapter 12): with 10% loss,
//! duplication and reordering on every link, a thousand connections between random hosts and
//! ports of an 8-host subnet each end in a clear event (up, or rejected, unreachable, or an
//! address or route error), the connections that came up carry a message and release, and every
//! QP made is destroyed once its TimeWait is over.

use ipoib_fabric::hw::link::Fault;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::ipcm::{self, AcceptPolicy};
use ipoib_fabric::testing::ipcm::{ipcm_net, IpCmNet};
use ipoib_fabric::testing::{seeds, v4, SeedGuard};
use ipoib_proto::ipcm::{IpCmEvent, IpConnId};
use ipoib_proto::rng::Rng;
use ipoib_wire::cm::RejReason;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

const HOSTS: usize = 8;
const TCP: u8 = 6;
/// Ports every host listens on.
const PORTS: [u16; 4] = [5000, 5001, 5002, 7174];
/// A port nobody listens on.
const CLOSED: u16 = 5999;

/// Every host's events so far, by (host, connection), drained from the bounded logs.
#[derive(Default)]
struct Seen(BTreeMap<(usize, IpConnId), Vec<IpCmEvent>>);

impl Seen {
    fn drain(&mut self, n: &mut IpCmNet) {
        for i in 0..HOSTS {
            for (_, e) in n.with_app(i, |a, _| a.take_events()) {
                if let Some(c) = e.conn() {
                    self.0.entry((i, c)).or_default().push(e);
                }
            }
        }
    }

    fn of(&self, i: usize, c: IpConnId) -> &[IpCmEvent] {
        self.0.get(&(i, c)).map_or(&[], |v| v)
    }
}

/// The event that ends a client's attempt: up, or why not.
fn outcome(ev: &[IpCmEvent]) -> Option<&IpCmEvent> {
    ev.iter().find(|e| {
        matches!(
            e,
            IpCmEvent::Established { .. }
                | IpCmEvent::Rejected { .. }
                | IpCmEvent::Unreachable { .. }
                | IpCmEvent::AddressError { .. }
                | IpCmEvent::RouteError { .. }
                | IpCmEvent::ConnectError { .. }
        )
    })
}

fn lossy(n: &mut IpCmNet) {
    let faults = vec![
        Fault::Drop(0.10),
        Fault::Duplicate(0.10),
        Fault::Reorder {
            p: 0.10,
            delay: Duration::from_micros(3),
        },
    ];
    for l in n.net.built().links.clone() {
        n.net.sim_mut().set_faults(l, None, faults.clone());
    }
}

fn run(s: u64, conns: usize) -> (usize, usize) {
    let _g = SeedGuard(s);
    let mut n = ipcm_net(Topology::single_switch(HOSTS).unwrap(), s, false, |_, c| {
        c.accept = AcceptPolicy::Auto(Vec::new());
        c.recv_depth = 4;
        c.log_keep = 1 << 16;
        // An application's own resolution timeouts (rping passes 2 s to rdma_resolve_addr
        // and rdma_resolve_route): long enough here for the SA client's retries (1 s each)
        // and ARP's to get through the loss.
        c.service.resolve_timeout = Duration::from_secs(8);
        c.service.route_timeout = Duration::from_secs(8);
    });
    for i in 0..HOSTS {
        for p in PORTS {
            n.with_app(i, |a, _| {
                a.listen(TCP, IpAddr::V4(Ipv4Addr::UNSPECIFIED), p)
            })
            .unwrap();
        }
    }
    lossy(&mut n);
    let mut rng = Rng::new(s ^ 0x1c);
    // (client, connection, server, port)
    let mut attempts = Vec::new();
    for k in 0..conns {
        let c = rng.below(HOSTS as u64) as usize;
        let sv = (c + 1 + rng.below(HOSTS as u64 - 1) as usize) % HOSTS;
        let port = if k % 10 == 9 {
            CLOSED
        } else {
            PORTS[rng.below(PORTS.len() as u64) as usize]
        };
        let dst = SocketAddr::new(v4(&n.net, sv), port);
        let conn = n
            .with_app(c, |a, now| {
                a.connect(now, TCP, dst, None, &(k as u32).to_be_bytes())
            })
            .unwrap();
        attempts.push((c, conn, sv, port));
        if k % 50 == 49 {
            n.run_for(Duration::from_millis(1));
        }
    }
    let mut seen = Seen::default();
    let limit = n.net.sim().now() + Duration::from_secs(120);
    loop {
        n.run_for(Duration::from_millis(200));
        seen.drain(&mut n);
        let open = attempts
            .iter()
            .filter(|(c, conn, ..)| outcome(seen.of(*c, *conn)).is_none())
            .count();
        if open == 0 {
            break;
        }
        assert!(
            n.net.sim().now() < limit,
            "seed {s}: {open} attempts without an outcome"
        );
    }
    let mut up = Vec::new();
    let mut failed = 0;
    for &(c, conn, sv, port) in &attempts {
        match outcome(seen.of(c, conn)).unwrap() {
            IpCmEvent::Established { .. } => {
                assert_ne!(
                    port, CLOSED,
                    "seed {s}: a connection to a closed port came up"
                );
                up.push((c, conn, sv));
            }
            IpCmEvent::Rejected { reason, .. } => {
                // CA11-8: no listener on the service ID.
                assert_eq!(*reason, RejReason::InvalidServiceId, "seed {s}");
                assert_eq!(port, CLOSED, "seed {s}: an open port rejected");
                failed += 1;
            }
            _ => failed += 1,
        }
    }
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for &(c, conn, _, port) in &attempts {
        let e = outcome(seen.of(c, conn)).unwrap();
        let name = format!("{e:?}");
        let name = name.split(' ').next().unwrap_or("").to_string();
        *kinds
            .entry(format!("{name} port {}", port == CLOSED))
            .or_default() += 1;
    }
    eprintln!("seed {s}: {kinds:?}");
    let closed = attempts.iter().filter(|a| a.3 == CLOSED).count();
    assert!(
        up.len() * 10 >= (conns - closed) * 9,
        "seed {s}: only {} of {} connections to open ports came up",
        up.len(),
        conns - closed
    );
    // The server side of each connection that came up: the request with the client's private
    // data, matched by the connection's index.
    let mut server_conn = BTreeMap::new();
    for ((i, conn), ev) in &seen.0 {
        for e in ev {
            if let IpCmEvent::ConnectRequest { private_data, .. } = e {
                let k = u32::from_be_bytes(private_data[..4].try_into().unwrap());
                server_conn.insert(k as usize, (*i, *conn));
            }
        }
    }
    // One message over each connection that came up, then a release from either side.
    for &(c, conn, _) in &up {
        n.with_host(c, |h, hd| ipcm::send(h, hd, conn, 1, b"hi".to_vec()))
            .unwrap();
    }
    let delivered = n.run_until(Duration::from_secs(60), |v| {
        up.iter().all(|&(c, conn, _)| {
            v.app(c)
                .completions()
                .any(|(_, x, wc)| *x == Some(conn) && wc.wr_id == 1)
        })
    });
    assert!(delivered, "seed {s}: every SEND completed");
    for (k, &(c, conn, _)) in up.iter().enumerate() {
        let from_server = k % 2 == 1;
        let key = attempts
            .iter()
            .position(|a| a.1 == conn && a.0 == c)
            .unwrap();
        match (from_server, server_conn.get(&key)) {
            (true, Some(&(sv, sconn))) => n.with_app(sv, |a, _| a.disconnect(sconn)).unwrap(),
            _ => n.with_app(c, |a, _| a.disconnect(conn)).unwrap(),
        }
    }
    let limit = n.net.sim().now() + Duration::from_secs(120);
    loop {
        n.run_for(Duration::from_millis(500));
        seen.drain(&mut n);
        let left = up
            .iter()
            .filter(|&&(c, conn, _)| {
                !seen
                    .of(c, conn)
                    .iter()
                    .any(|e| matches!(e, IpCmEvent::Disconnected { .. }))
            })
            .count();
        if left == 0 {
            break;
        }
        assert!(
            n.net.sim().now() < limit,
            "seed {s}: {left} connections not released"
        );
    }
    // TimeWait is over everywhere: no record, no QP.
    n.run_for(Duration::from_secs(60));
    for i in 0..HOSTS {
        let a = n.app(i);
        let k = a.counters();
        assert_eq!(a.service().connections(), 0, "seed {s} host {i}");
        assert_eq!(a.qp_count(), 0, "seed {s} host {i}: {k:?}");
        assert_eq!(k.qps_created, k.qps_destroyed, "seed {s} host {i}: {k:?}");
        assert_eq!(n.rc_qps(i), 0, "seed {s} host {i}: RC QPs left on the HCA");
    }
    let dropped: u64 = n
        .net
        .sim()
        .links()
        .iter()
        .flat_map(|l| &l.dirs)
        .map(|d| d.stats.dropped)
        .sum();
    assert!(dropped > 0, "seed {s}: the faults were applied");
    (up.len(), failed)
}

#[test]
fn a_thousand_connections_under_loss_duplication_and_reordering() {
    let all = seeds([61, 62]);
    let per = 1000 / all.len();
    let (mut up, mut failed) = (0, 0);
    for s in all {
        let (u, f) = run(s, per);
        up += u;
        failed += f;
    }
    eprintln!("connections up {up}, failed with an event {failed}");
}
