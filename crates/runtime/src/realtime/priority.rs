//! The driver's thread at a real-time priority: `SCHED_FIFO` (sched(7)), so that a packet the
//! operating system hands to the emulation is taken at once, as Linux IPoIB takes it in the
//! sending process's system call and its softirqs, which no task delays.
//!
//! Under the default policy a woken thread may wait for the CPU it was woken on until the task
//! there is preempted, at the latest at a scheduler tick (docs/DEPLOYED.md "Wake-ups on a
//! virtual machine ... and by the scheduler"): in `ipoib lab` the emulation thread was seen
//! waiting 2-5 ms after `ping` had queued its packet, behind another process on the ping's CPU
//! while the other CPU was idle, in one round trip in fifty to a hundred on a loaded machine
//! (docs/benchmarks/lab-connected.md). A `SCHED_FIFO` thread preempts every thread of the
//! default policy when it wakes. The kernel bounds what real-time threads take of each CPU
//! (`/proc/sys/kernel/sched_rt_runtime_us`, 95 % by default), and the driver sleeps whenever it
//! has nothing due, so the thread does not hold a CPU for good.
//!
//! The policy is set by util-linux's chrt(1) on the calling thread's id (the crate has no system
//! call wrapper for sched_setscheduler(2) and uses no `unsafe`), with `SCHED_RESET_ON_FORK`:
//! threads and processes the thread makes later get the default policy (a TUN endpoint's writer
//! thread, whose write(2) runs the receiving TCP and wakes its reader: at a real-time priority
//! it took the CPU from them, and `iperf3` fell by a quarter).

use std::io;
use std::process::Command;

/// Puts the calling thread (only it, not what it makes later) under `SCHED_FIFO` at `priority`
/// (1 to 99) with chrt(1).
/// Fails when chrt is missing or refuses (no `CAP_SYS_NICE`, a priority out of range), with
/// its message.
pub fn set_fifo(priority: u8) -> io::Result<()> {
    let tid = nix::unistd::gettid();
    let out = Command::new("chrt")
        .args(["--fifo", "--reset-on-fork", "--pid"])
        .args([priority.to_string(), tid.to_string()])
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("chrt: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "chrt --fifo {priority}: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

/// The scheduling policy of thread `tid` of this process (sched(7): 0 `SCHED_OTHER`, 1
/// `SCHED_FIFO`, ...), field 41 of its `/proc/self/task/TID/stat` (proc(5)).
pub fn policy_of(tid: i32) -> io::Result<u32> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"))?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| io::Error::other("stat: no command name"))?;
    rest.split_whitespace()
        .nth(41 - 3)
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| io::Error::other("stat: no policy field"))
}

#[cfg(test)]
mod tests {
    use super::*;

    // The default policy, read from /proc, before anything is changed.
    #[test]
    fn a_new_thread_has_the_default_policy() {
        let tid = nix::unistd::gettid().as_raw();
        assert_eq!(policy_of(tid).unwrap(), 0);
    }

    // As root with chrt installed: the thread that asked is SCHED_FIFO; the others, and a thread
    // it makes after, are not.
    #[test]
    fn set_fifo_changes_the_calling_thread_only() {
        if !nix::unistd::geteuid().is_root()
            || Command::new("chrt").arg("--version").output().is_err()
        {
            eprintln!("skipped: needs root and chrt");
            return;
        }
        let me = nix::unistd::gettid().as_raw();
        let (tid, policy, child) = std::thread::spawn(|| {
            set_fifo(1).unwrap();
            let tid = nix::unistd::gettid().as_raw();
            let child = std::thread::spawn(|| policy_of(nix::unistd::gettid().as_raw()).unwrap());
            (tid, policy_of(tid).unwrap(), child.join().unwrap())
        })
        .join()
        .unwrap();
        assert_ne!(tid, me);
        assert_eq!(policy, 1);
        assert_eq!(child, 0, "SCHED_RESET_ON_FORK");
        assert_eq!(policy_of(me).unwrap(), 0);
        assert!(set_fifo(0).is_err(), "priority 0 is no SCHED_FIFO priority");
    }
}
