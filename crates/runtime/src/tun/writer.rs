//! The thread that writes one device's packets for the OS ([`super::TunEndpoint::with_writer_thread`]).

use super::{Tun, TunCounters, WRITE_BATCHES};
use crate::gro;
use ipoib_proto::ipoib::IpBuf;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// Stack of a writer thread.
const WRITER_STACK: usize = 128 << 10;

/// The thread that writes one device's packets for the OS (module docs): a write(2) into a TUN
/// device runs the kernel's receive path for the packet (IP, TCP, waking the receiving
/// process) in the writer's system call, the largest single cost of a packet through the lab
/// (measured with perf(1)), so it runs next to the emulation rather than inside its turns. The
/// emulation stays on its own thread and sees the same inputs: only when the OS gets its
/// packets changes.
pub(super) struct Writer {
    pub(super) batches: Option<SyncSender<Vec<IpBuf>>>,
    /// Written batches coming back (their packets are freed on the emulation's thread), so a
    /// turn allocates no batch.
    pub(super) empties: Receiver<Vec<IpBuf>>,
    /// Batches handed over and not yet written: while it is zero, the thread has written every
    /// earlier packet, and a write on the emulation's thread keeps the order.
    pub(super) pending: Arc<AtomicUsize>,
    /// When the last batch was handed over.
    pub(super) last_handoff: Option<Instant>,
    pub(super) thread: Option<JoinHandle<()>>,
}

impl Writer {
    pub(super) fn spawn(tun: Arc<Tun>, counters: Arc<TunCounters>) -> io::Result<Writer> {
        let (tx, rx) = sync_channel::<Vec<IpBuf>>(WRITE_BATCHES);
        let (back, empties) = channel();
        let pending = Arc::new(AtomicUsize::new(0));
        let done = Arc::clone(&pending);
        let thread = std::thread::Builder::new()
            .name(format!("write-{}", tun.name()))
            // It only calls write(2): a small stack, so a lab of many hosts reserves little.
            .stack_size(WRITER_STACK)
            .spawn(move || {
                while let Ok(batch) = rx.recv() {
                    write_batch(&tun, &batch, &counters);
                    done.fetch_sub(1, Ordering::Release);
                    // The emulation's side may be gone: then the batch is just dropped.
                    let _ = back.send(batch);
                }
            })?;
        Ok(Writer {
            batches: Some(tx),
            empties,
            pending,
            last_handoff: None,
            thread: Some(thread),
        })
    }
}

impl Drop for Writer {
    /// Closes the channel and waits for the thread, so the device is gone (its last file
    /// closed) when the endpoint is.
    fn drop(&mut self) {
        self.batches = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Writes every packet of `batch` to the device and counts. On a device with offload, each
/// run of in-order TCP segments of one connection goes as one GSO packet ([`crate::gro`]),
/// counted as the packets it carries.
pub(super) fn write_batch(tun: &Tun, batch: &[IpBuf], counters: &TunCounters) {
    let (mut n, mut bytes, mut errors, mut coalesced) = (0u64, 0u64, 0u64, 0u64);
    let mut i = 0;
    while i < batch.len() {
        let run = if tun.offload() {
            gro::run_len(&batch[i..]).max(1)
        } else {
            1
        };
        let packets = &batch[i..i + run];
        i += run;
        let sent = if run == 1 {
            tun.send(&packets[0])
        } else {
            tun.send_with_hdr(&gro::coalesce(packets))
        };
        match sent {
            Ok(_) => {
                // A refused run was no coalesced write: its packets count in `errors` only.
                coalesced += u64::from(run > 1);
                n += run as u64;
                bytes += packets.iter().map(|p| p.len() as u64).sum::<u64>();
            }
            // The device is down, its queue full, or the packet is no IP packet: dropped, as a
            // NIC drops what its host cannot take.
            Err(_) => errors += run as u64,
        }
    }
    counters.to_os.fetch_add(n, Ordering::Relaxed);
    counters.to_os_bytes.fetch_add(bytes, Ordering::Relaxed);
    counters.write_errors.fetch_add(errors, Ordering::Relaxed);
    counters.to_os_gso.fetch_add(coalesced, Ordering::Relaxed);
}
