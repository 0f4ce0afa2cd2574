//! Ctrl-C and termination requests for long runs. The first SIGINT or SIGTERM only records which
//! signal came; the run looks at it between simulation steps, stops, and reports what it found.
//! A second one ends the process at once with status 128 + the signal number (the shell's
//! convention), in case stopping takes too long.
//!
//! The simulation below (`ipoib_fabric`, `ipoib_proto`) knows nothing of signals: the command line
//! drives it step by step and asks [`Interrupt::signal`] in between.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// A termination signal that arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signal(i32);

impl Signal {
    /// SIGINT (Ctrl-C).
    pub const INT: Signal = Signal(signal_hook::consts::SIGINT);
    /// SIGTERM (`kill`).
    pub const TERM: Signal = Signal(signal_hook::consts::SIGTERM);

    /// "SIGINT", "SIGTERM".
    pub fn name(self) -> &'static str {
        if self == Signal::INT {
            "SIGINT"
        } else if self == Signal::TERM {
            "SIGTERM"
        } else if self.0 == signal_hook::consts::SIGHUP {
            "SIGHUP"
        } else {
            "a signal"
        }
    }

    /// The exit status of a program stopped by this signal: 128 + its number (130 for SIGINT).
    pub fn exit_code(self) -> u8 {
        u8::try_from(128 + self.0).unwrap_or(1)
    }
}

/// Watches SIGINT and SIGTERM from [`Interrupt::install`] on.
#[derive(Debug, Clone)]
pub struct Interrupt {
    signal: Arc<AtomicUsize>,
}

impl Interrupt {
    /// Installs the handlers. Where they cannot be installed the run is simply not
    /// interruptible with a report (the signal then ends it as usual); the error says why.
    pub fn install() -> (Interrupt, Option<std::io::Error>) {
        let signal = Arc::new(AtomicUsize::new(0));
        let armed = Arc::new(AtomicBool::new(false));
        let mut error = None;
        for s in [Signal::INT, Signal::TERM] {
            // Order matters: the exit runs first and only when armed, i.e. on the second signal.
            let r = signal_hook::flag::register_conditional_shutdown(
                s.0,
                i32::from(s.exit_code()),
                Arc::clone(&armed),
            )
            .and_then(|_| signal_hook::flag::register(s.0, Arc::clone(&armed)))
            .and_then(|_| {
                let n = usize::try_from(s.0).unwrap_or(0);
                signal_hook::flag::register_usize(s.0, Arc::clone(&signal), n)
            });
            if let Err(e) = r {
                error.get_or_insert(e);
            }
        }
        (Interrupt { signal }, error)
    }

    /// The signal that came, if one did.
    pub fn signal(&self) -> Option<Signal> {
        match self.signal.load(Ordering::SeqCst) {
            0 => None,
            n => Some(Signal(i32::try_from(n).unwrap_or(i32::MAX))),
        }
    }

    /// Between two steps of a bring-up: when a signal came, says "`who`: SIGNAL `when`:
    /// stopped" and gives the run's exit status (0, as a run stopped by a signal later).
    pub fn stopped_while(&self, who: &str, when: &str) -> Option<std::process::ExitCode> {
        let s = self.signal()?;
        note!("{who}: {} {when}: stopped", s.name());
        Some(std::process::ExitCode::SUCCESS)
    }
}

/// The signals that stop a real-time run ([`stop_file`]): SIGINT, SIGTERM, and SIGHUP, which a
/// process started from a terminal gets when the terminal goes (`sudo ipoib lab &` in a shell
/// that exits); its default action would end the process without removing what it made.
pub const STOP_SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];

/// The read end of a socket pair that the [`STOP_SIGNALS`] write to: the stop file of the
/// real-time driver (`ipoib_runtime::realtime::Driver::set_stop`), which wakes at once when a
/// signal comes. A second signal does not end the process: the driver stops at the first.
///
/// With it the signal that came, for the run to look at between the steps of its bring-up,
/// before the driver watches the file: the handlers are installed before any work, so a signal
/// then is kept (in the flag and in the file), not lost, even when the process began with
/// SIGINT ignored (POSIX.1-2017 XCU §2.11, docs/DEPLOYED.md), and the run stops at the next
/// step instead of finishing its bring-up first.
pub fn stop_file() -> std::io::Result<(std::os::unix::net::UnixStream, Interrupt)> {
    let (r, w) = std::os::unix::net::UnixStream::pair()?;
    let signal = Arc::new(AtomicUsize::new(0));
    for s in STOP_SIGNALS {
        // The flag first: whoever sees the byte in the file finds the flag set.
        let n = usize::try_from(s).unwrap_or(0);
        signal_hook::flag::register_usize(s, Arc::clone(&signal), n)?;
        signal_hook::low_level::pipe::register(s, w.try_clone()?)?;
    }
    Ok((r, Interrupt { signal }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;
    use std::time::Duration;

    /// A hangup stops the run through the stop file, as SIGINT and SIGTERM do, instead of
    /// ending the process (its default action) with namespaces, devices and sockets left.
    #[test]
    fn hangup_writes_the_stop_file() {
        let (mut r, signal) = stop_file().unwrap();
        assert_eq!(signal.signal(), None);
        r.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        signal_hook::low_level::raise(signal_hook::consts::SIGHUP).unwrap();
        let mut b = [0u8; 1];
        assert_eq!(r.read(&mut b).unwrap(), 1);
        assert_eq!(signal.signal().map(Signal::name), Some("SIGHUP"));
    }
}
