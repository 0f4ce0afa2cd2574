//! `ipoib lab exec` and `ipoib lab down`.

use super::state;
use super::{fail, require_root};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, ExitCode};
use std::time::Duration;

/// How long `lab down` waits for the lab to end after SIGTERM, and after SIGKILL.
const TERM_WAIT: Duration = Duration::from_secs(10);
const KILL_WAIT: Duration = Duration::from_secs(2);

#[derive(clap::Args, Debug)]
pub struct ExecArgs {
    /// The host: `h1`, `h2`, ... (or its namespace, `ipoib-h1`).
    host: String,
    /// The command and its arguments, after `--`.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    command: Vec<String>,
}

/// The running lab's state, or why there is none.
fn running_lab() -> Result<state::LabState, String> {
    match state::read()? {
        Some(s) if s.is_alive() => Ok(s),
        Some(s) => Err(format!(
            "the lab of pid {} is gone; `ipoib lab down` removes what is left of it",
            s.pid
        )),
        None => Err("no lab is running; start one with `ipoib lab --hosts N`".into()),
    }
}

/// Runs the command in the host's namespace as `ip netns exec` would
/// ([`ipoib_runtime::netns::enter_for_exec`]) and becomes it (exec(2)): the exit status is the
/// command's.
pub fn exec(a: &ExecArgs) -> ExitCode {
    if let Some(c) = require_root("ipoib lab exec", "it enters a host's network namespace") {
        return c;
    }
    let lab = match running_lab() {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    let Some(host) = lab.host(&a.host) else {
        let names: Vec<&str> = lab.hosts.iter().map(|h| h.name.as_str()).collect();
        return fail(format!(
            "no host {} in the lab (hosts: {})",
            a.host,
            names.join(", ")
        ));
    };
    if let Err(e) = ipoib_runtime::netns::enter_for_exec(&host.namespace) {
        return fail(e);
    }
    let (cmd, args) = a.command.split_first().expect("clap requires a command");
    let e = Command::new(cmd).args(args).exec();
    note!("ipoib lab exec: {cmd}: {e}");
    // The shell's statuses: 126 found but not runnable, 127 not found.
    ExitCode::from(if e.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    })
}

/// Stops the running lab (SIGTERM; SIGKILL if it has not ended after [`TERM_WAIT`]) and
/// removes whatever is left of it.
pub fn down() -> ExitCode {
    if let Some(c) = require_root(
        "ipoib lab down",
        "it stops the lab and removes its network namespaces",
    ) {
        return c;
    }
    let lab = match state::read() {
        Ok(Some(l)) => l,
        Ok(None) => {
            println!("ipoib lab down: no lab");
            return ExitCode::SUCCESS;
        }
        Err(e) => return fail(e),
    };
    let alive = lab.is_alive();
    let names: Vec<String> = lab.hosts.iter().map(|h| h.namespace.clone()).collect();
    // A running lab removes its own namespaces on SIGTERM: count them before, so that those it
    // removed are not taken for namespaces deleted by hand.
    let present = names
        .iter()
        .filter(|n| ipoib_runtime::netns::exists(n))
        .count();
    if alive {
        let pid = Pid::from_raw(lab.pid);
        let _ = kill(pid, Signal::SIGTERM);
        if !state::wait_gone(lab.pid, lab.start_time, TERM_WAIT) {
            note!(
                "ipoib lab down: pid {} still runs {} s after SIGTERM: SIGKILL",
                lab.pid,
                TERM_WAIT.as_secs()
            );
            let _ = kill(pid, Signal::SIGKILL);
            if !state::wait_gone(lab.pid, lab.start_time, KILL_WAIT) {
                return fail(format!("pid {} does not end", lab.pid));
            }
        }
    }
    // A lab that died leaves its OpenSM (--sm opensm) running.
    state::end_opensm(&lab);
    let c = state::clean(&names);
    if !c.problems.is_empty() {
        return fail(c.problems.join("; "));
    }
    let (removed, missing) = tally(names.len(), present, &c);
    println!("{}", down_line(alive, lab.pid, removed, missing));
    ExitCode::SUCCESS
}

/// Of a lab's `total` namespaces, `present` there before `lab down` stopped the lab, and what
/// [`state::clean`] then found (`c`): how many went with this stop (removed by the lab on its way
/// out or by the clean-up) and how many were gone before it (`ip netns del` by hand).
fn tally(total: usize, present: usize, c: &state::Cleaned) -> (usize, usize) {
    let left = total.saturating_sub(c.removed + c.missing);
    (present.saturating_sub(left), total.saturating_sub(present))
}

/// What `lab down` did: stopped the running lab of `pid`, or, when it had ended already (killed,
/// crashed), cleaned up after it; it removed `removed` network namespaces, and `missing` more
/// had been deleted before (`ip netns del`).
fn down_line(alive: bool, pid: i32, removed: usize, missing: usize) -> String {
    let gone = already_gone(missing);
    if alive {
        format!(
            "ipoib lab down: stopped the lab (pid {pid}) and removed its {removed} network \
             namespaces{gone}."
        )
    } else {
        format!(
            "ipoib lab down: the lab (pid {pid}) had already ended (killed or crashed); removed \
             the {removed} network namespaces it left behind{gone}."
        )
    }
}

/// `; N were already gone` for namespaces of a lab deleted before its cleanup; empty for none.
pub(super) fn already_gone(missing: usize) -> String {
    match missing {
        0 => String::new(),
        1 => "; 1 was already gone".to_string(),
        n => format!("; {n} were already gone"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After a crash it said "found gone the lab of pid N".
    #[test]
    fn lab_down_says_whether_the_lab_still_ran() {
        assert_eq!(
            down_line(true, 42, 3, 0),
            "ipoib lab down: stopped the lab (pid 42) and removed its 3 network namespaces."
        );
        let l = down_line(false, 42, 2, 0);
        assert_eq!(
            l,
            "ipoib lab down: the lab (pid 42) had already ended (killed or crashed); removed the \
             2 network namespaces it left behind."
        );
        assert!(!l.contains("found gone"), "{l}");
    }

    /// A running lab removes its namespaces itself on SIGTERM, before the clean-up looks: `lab
    /// down` said "removed its 0 network namespaces; 3 were already gone" after every ordinary
    /// stop.
    #[test]
    fn namespaces_the_stopped_lab_removed_count_as_removed() {
        let all_gone = state::Cleaned {
            removed: 0,
            missing: 3,
            problems: Vec::new(),
        };
        assert_eq!(tally(3, 3, &all_gone), (3, 0));
        // One deleted by hand before, the other two by the lab.
        assert_eq!(tally(3, 2, &all_gone), (2, 1));
        // A lab killed outright: the clean-up removed two, one was deleted by hand.
        let cleaned = state::Cleaned {
            removed: 2,
            missing: 1,
            problems: Vec::new(),
        };
        assert_eq!(tally(3, 2, &cleaned), (2, 1));
        // One the clean-up could not remove.
        let stuck = state::Cleaned {
            removed: 1,
            missing: 1,
            problems: vec!["EBUSY".to_string()],
        };
        assert_eq!(tally(3, 3, &stuck), (2, 0));
    }

    /// A namespace deleted by hand (`ip netns del`) before `lab down` was counted as removed.
    #[test]
    fn lab_down_counts_only_what_it_removed() {
        assert_eq!(
            down_line(true, 42, 2, 1),
            "ipoib lab down: stopped the lab (pid 42) and removed its 2 network namespaces; 1 \
             was already gone."
        );
        assert_eq!(
            down_line(false, 42, 0, 3),
            "ipoib lab down: the lab (pid 42) had already ended (killed or crashed); removed the \
             0 network namespaces it left behind; 3 were already gone."
        );
    }
}
