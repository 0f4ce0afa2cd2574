//! After a sleep, [`serve`] runs the subnet to the wall clock's present before it hands over
//! the MADs that woke it, so that they enter the subnet when they came (their packets in a
//! capture, the timers they start), not where the last turn left the subnet's clock.

use super::*;
use ipoib_fabric::hw::capture::Capture;
use ipoib_wire::pcap::CaptureReader;
use std::time::Instant as Wall;

#[test]
fn a_mad_after_a_sleep_enters_the_subnet_at_the_present() {
    let base = unique_base();
    let cfg = ServerConfig::unix(&base);
    let (started_tx, started) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let s = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        let topo = Topology::single_switch(3).unwrap();
        let mut opts = SubnetOptions::new(topo, 7);
        // Nothing on the hosts' timers after the SM's sweep: the server sleeps its whole
        // `max_sleep` while no client speaks.
        opts.auto_join = false;
        let mut net = Subnet::build(opts).unwrap();
        net.sim_mut()
            .run_until(Instant::ZERO + Duration::from_secs(5));
        net.sim_mut().set_capture(Capture::new());
        let mut server = IbsimServer::bind(cfg).unwrap();
        let origin = net.sim().now();
        started_tx.send(Wall::now()).unwrap();
        let opts = ServeOptions {
            max_sleep: Duration::from_secs(2),
            probe_every: Duration::from_secs(60),
        };
        serve(
            &mut server,
            &mut net,
            &mut |_, _| s.load(Ordering::Relaxed),
            opts,
        )
        .unwrap();
        let capture = net.sim_mut().take_capture().unwrap().into_bytes();
        (origin, capture)
    });
    let start = started.recv().unwrap();
    let c = IbsimClient::connect_to(&Endpoint::unix(&base), Some("h1"), 0, false).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let sent = start.elapsed();
    let resp = c.request(1, 1, &cpi_get(0x42), LONG).unwrap();
    assert_eq!(
        MadHeaderRepr::parse_bytes(&resp).unwrap().method,
        Method::GetResp
    );
    stop.store(true, Ordering::Relaxed);
    let (origin, capture) = thread.join().unwrap();
    // The request's first packet: the first SA packet (MgmtClass 0x03, IBA 1 §13.4.2, after
    // the LRH, BTH and DETH: no GRH on the subnet) the capture holds.
    let packets = CaptureReader::read_all(&capture[..]).unwrap();
    let at = packets
        .iter()
        .find(|p| p.data.get(29) == Some(&0x03))
        .and_then(|p| p.ts_ns)
        .unwrap_or_else(|| panic!("no SA packet in the capture's {}", packets.len()));
    let entered = Duration::from_nanos(at.saturating_sub(origin.as_nanos()));
    assert!(
        entered + Duration::from_millis(5) >= sent,
        "the request entered the subnet {entered:?} after the start, sent {sent:?} after it"
    );
}
