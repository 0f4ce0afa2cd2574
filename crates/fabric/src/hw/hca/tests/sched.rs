//! Which RC/UC engines the HCA polls (module `sched`): only those that took an input that left
//! them with work (`ConnectedEngine::has_work`) since they were last drained, and for timers only
//! the due ones; its next timeout is the earliest engine timer. A stand-in engine logs the calls
//! it gets.

use super::*;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// Calls engines received, as (QPN, what).
type Log = Rc<RefCell<Vec<(Qpn, &'static str)>>>;

/// An engine with no output whose timer is set by a send: `wr_id` microseconds from zero.
struct Probe {
    qpn: Qpn,
    log: Log,
    timer: Option<Instant>,
}

impl ConnectedEngine for Probe {
    fn modify(
        &mut self,
        _now: Instant,
        _to: QpState,
        _attr: Option<&crate::hw::verbs::ConnectedAttr>,
    ) -> Result<(), VerbsError> {
        Ok(())
    }
    fn state(&self) -> QpState {
        QpState::Rts
    }
    fn post_send(&mut self, _now: Instant, wr: SendWr) -> Result<(), VerbsError> {
        self.timer = Some(us(wr.wr_id));
        Ok(())
    }
    fn post_recv(&mut self, _wr: RecvWr) -> Result<(), VerbsError> {
        Ok(())
    }
    fn handle_packet(
        &mut self,
        _now: Instant,
        _from: PacketSource,
        _pkt: TransportPacket,
        _mem: &mut dyn RdmaMemory,
    ) {
    }
    fn poll_transmit(&mut self, _now: Instant) -> Option<TransportPacket> {
        self.log.borrow_mut().push((self.qpn, "transmit"));
        None
    }
    fn poll_completion(&mut self) -> Option<Completion> {
        None
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.timer
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.log.borrow_mut().push((self.qpn, "timeout"));
        if self.timer.is_some_and(|t| t <= now) {
            self.timer = None;
        }
    }
}

fn us(n: u64) -> Instant {
    Instant::ZERO + Duration::from_micros(n)
}

fn send_wr(wr_id: u64) -> SendWr {
    SendWr {
        wr_id,
        op: SendOp::Send,
        data: Vec::new(),
        local: None,
        ud: None,
        signaled: true,
        solicited: false,
    }
}

#[test]
fn only_engines_with_input_or_a_due_timer_are_polled() {
    let log: Log = Rc::default();
    let l = log.clone();
    let mut h = Hca::new(Guid(GUID_A), 1).with_engine(Box::new(move |_, qpn| {
        Box::new(Probe {
            qpn,
            log: l.clone(),
            timer: None,
        })
    }));
    let cq = h.create_cq();
    let init = QpInit {
        qp_type: QpType::Rc,
        port: 1,
        send_cq: cq,
        recv_cq: cq,
        privileged: false,
        sq_sig_all: true,
    };
    let q: Vec<Qpn> = (0..3).map(|_| h.create_qp(init).unwrap()).collect();
    let mut tx = Tx::default();
    h.flush(us(0), &mut tx);
    let take = |log: &Log| std::mem::take(&mut *log.borrow_mut());
    assert_eq!(take(&log).len(), 3, "new engines are polled once");
    assert_eq!(Device::poll_timeout(&h), None);

    h.post_send(q[1], send_wr(5)).unwrap();
    h.flush(us(0), &mut tx);
    assert_eq!(take(&log), vec![(q[1], "transmit")]);
    assert_eq!(Device::poll_timeout(&h), Some(us(5)));

    h.post_send(q[2], send_wr(3)).unwrap();
    assert_eq!(
        Device::poll_timeout(&h),
        Some(us(0)),
        "a post asks for a flush now"
    );
    h.flush(us(0), &mut tx);
    assert_eq!(take(&log), vec![(q[2], "transmit")]);
    assert_eq!(Device::poll_timeout(&h), Some(us(3)));

    h.flush(us(1), &mut tx);
    assert!(take(&log).is_empty(), "nothing to do, nobody polled");

    Device::handle_timeout(&mut h, us(4), &mut tx);
    assert_eq!(take(&log), vec![(q[2], "timeout"), (q[2], "transmit")]);
    assert_eq!(Device::poll_timeout(&h), Some(us(5)));

    // Both due: handled and driven in QPN order.
    h.post_send(q[0], send_wr(5)).unwrap();
    h.flush(us(4), &mut tx);
    take(&log);
    Device::handle_timeout(&mut h, us(5), &mut tx);
    let want = vec![
        (q[0], "timeout"),
        (q[1], "timeout"),
        (q[0], "transmit"),
        (q[1], "transmit"),
    ];
    assert_eq!(take(&log), want);
    assert_eq!(Device::poll_timeout(&h), None);

    // A destroyed QP's timer goes with it.
    h.post_send(q[1], send_wr(9)).unwrap();
    h.destroy_qp(q[1]).unwrap();
    h.flush(us(5), &mut tx);
    assert!(take(&log).is_empty());
    assert_eq!(Device::poll_timeout(&h), None);
}
