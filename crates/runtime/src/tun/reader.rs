//! The thread that reads one TUN device for the emulation's thread
//! ([`super::TunEndpoint::with_threads`]): a read(2) from a TUN device copies the packet out of
//! the kernel, and the copy into a buffer of its own (a frame with room for the IPoIB
//! encapsulation header, `ipoib_proto::ipoib::ip_frame`) follows it; both run here, next to the
//! emulation, which then only takes finished frames (measured with perf(1): the reads were a
//! tenth of the emulation thread's time in connected mode).
//!
//! The thread waits in its own epoll (mio) on the device and a waker; it reads until the device
//! would block (or [`READ_BATCH`] packets), hands the batch over on a bounded channel, and then
//! writes one byte to a socket the emulation's driver watches (the endpoint's file), so the
//! driver wakes. The emulation's side drains that socket before it takes batches, so a batch
//! handed over after its last look always comes with a byte it has not read: no wake-up is lost.
//! When the emulation's side is slow the channel fills and the thread waits; the device's queue
//! (`txqueuelen`) then holds what the OS sends, as it does without the thread.
//!
//! Invariants: the packets reach the emulation in the order the device gave them; nothing is
//! dropped here; dropping the reader stops and joins the thread.

use super::{Tun, FRAME_HEADROOM, MAX_PACKET};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};
use std::collections::VecDeque;
use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Most packets the thread reads before handing them over.
pub const READ_BATCH: usize = 64;

/// Batches handed over and not yet taken, at most (then the thread waits).
pub const READ_BATCHES: usize = 16;

/// Stack of a reader thread (it holds one packet buffer on the heap).
const READER_STACK: usize = 128 << 10;

const DEVICE: Token = Token(0);
const STOP: Token = Token(1);

/// The emulation's side of a reader thread.
pub(super) struct Reader {
    batches: Option<Receiver<Vec<Vec<u8>>>>,
    /// Frames of a batch not yet handed to the emulation (its budget ran out).
    pending: VecDeque<Vec<u8>>,
    /// Readable when the thread handed over a batch: the file the driver watches.
    wake: UnixStream,
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    thread: Option<JoinHandle<()>>,
}

impl Reader {
    /// Starts the thread on `tun` (non-blocking, as [`Tun::create`] leaves it).
    pub fn spawn(tun: Arc<Tun>) -> io::Result<Reader> {
        let (wake, signal) = UnixStream::pair()?;
        wake.set_nonblocking(true)?;
        signal.set_nonblocking(true)?;
        let mut poll = Poll::new()?;
        let fd = tun.as_raw_fd();
        poll.registry()
            .register(&mut SourceFd(&fd), DEVICE, Interest::READABLE)?;
        let waker = Arc::new(Waker::new(poll.registry(), STOP)?);
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = sync_channel::<Vec<Vec<u8>>>(READ_BATCHES);
        let stopped = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(format!("read-{}", tun.name()))
            .stack_size(READER_STACK)
            .spawn(move || {
                let mut buf = vec![0u8; MAX_PACKET].into_boxed_slice();
                let mut events = Events::with_capacity(4);
                let mut signal = signal;
                while !stopped.load(Ordering::Acquire) {
                    let mut batch = Vec::new();
                    loop {
                        match tun.recv(&mut buf) {
                            Ok(len) => {
                                batch.push(ipoib_proto::ipoib::ip_frame(&buf[..len]));
                                if batch.len() == READ_BATCH {
                                    break;
                                }
                            }
                            Err(e) if e.kind() == ErrorKind::Interrupted => {}
                            // Would block, or the device is gone (the endpoint is being
                            // dropped): wait for the next edge or the stop.
                            Err(_) => break,
                        }
                    }
                    let full = batch.len() == READ_BATCH;
                    if !batch.is_empty() {
                        if tx.send(batch).is_err() {
                            return;
                        }
                        // Full socket: a byte is waiting already, the driver will look.
                        let _ = signal.write(&[1]);
                    }
                    if full {
                        continue;
                    }
                    match poll.poll(&mut events, None) {
                        Ok(()) => {}
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(_) => return,
                    }
                }
            })?;
        Ok(Reader {
            batches: Some(rx),
            pending: VecDeque::new(),
            wake,
            stop,
            waker,
            thread: Some(thread),
        })
    }

    /// The file the driver watches.
    pub fn raw_fd(&self) -> RawFd {
        self.wake.as_raw_fd()
    }

    /// Calls `take` with at most `budget` frames, oldest first; returns how many and their
    /// bytes (packet bytes, headroom not counted). Fewer than `budget` only once everything the
    /// thread handed over was taken. An error when the thread ended (it only does when the
    /// device failed or it panicked).
    pub fn take(
        &mut self,
        budget: usize,
        mut take: impl FnMut(Vec<u8>),
    ) -> io::Result<(usize, u64)> {
        // Drain the wake-ups first (module docs).
        let mut sink = [0u8; 256];
        loop {
            match (&self.wake).read(&mut sink) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let (mut n, mut bytes) = (0, 0u64);
        while n < budget {
            if let Some(f) = self.pending.pop_front() {
                n += 1;
                bytes += f.len().saturating_sub(FRAME_HEADROOM) as u64;
                take(f);
                continue;
            }
            let Some(rx) = self.batches.as_ref() else {
                break;
            };
            match rx.try_recv() {
                Ok(b) => self.pending.extend(b),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    return Err(io::Error::other("TUN reader thread ended"));
                }
            }
        }
        Ok((n, bytes))
    }
}

impl Drop for Reader {
    /// Stops the thread (also when it waits for room on the channel) and waits for it.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.waker.wake();
        self.batches = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
