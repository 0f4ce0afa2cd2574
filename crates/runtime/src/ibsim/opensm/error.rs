//! The errors of [`Fabric`](super::Fabric)'s operations, one type per operation. Their messages
//! end with the logs of the processes concerned, so a failed test shows what ibsim and OpenSM
//! said.

use super::IBSIM_START;
use ipoib_wire::smp::PortInfoRepr;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

/// Why [`Fabric::start`](super::Fabric::start) or [`Fabric::start_with`](super::Fabric::start_with) failed. The variants that concern a running
/// process carry the tails of its logs, which the message ends with.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// `IPOIB_REQUIRE_OPENSM` is set but binaries are missing (the list says which).
    #[error("IPOIB_REQUIRE_OPENSM is set but not installed: {0}")]
    Required(String),
    /// A file of the run's directory (or the directory) could not be written.
    #[error("{what}: {source}")]
    File {
        /// The file or directory.
        what: String,
        /// Why.
        source: io::Error,
    },
    /// ibsim or OpenSM could not be started.
    #[error("cannot start {name}: {source}")]
    Spawn {
        /// `ibsim` or `opensm`.
        name: &'static str,
        /// Why.
        source: io::Error,
    },
    /// ibsim or OpenSM exited.
    #[error(transparent)]
    Died(#[from] Died),
    /// ibsim did not take a client within [`IBSIM_START`].
    #[error("ibsim did not take clients within {IBSIM_START:?}: {source}\n{logs}")]
    IbsimTimeout {
        /// The last attempt's error.
        source: io::Error,
        /// ibsim's logs.
        logs: String,
    },
    /// The client that watches the probe node could not attach.
    #[error("probe client on {node}: {source}\n{logs}")]
    Probe {
        /// The probe node.
        node: String,
        /// Why.
        source: io::Error,
        /// ibsim's logs.
        logs: String,
    },
    /// The probe node's PortInfo could not be read.
    #[error("PortInfo of {node}: {source}\n{logs}")]
    ProbePortInfo {
        /// The probe node.
        node: String,
        /// Why.
        source: io::Error,
        /// OpenSM's and ibsim's logs.
        logs: String,
    },
    /// OpenSM did not bring the probe node's port up in time.
    #[error("OpenSM did not bring {node} up within {after:?}: {port:?}\n{logs}")]
    SubnetTimeout {
        /// The probe node.
        node: String,
        /// How long it waited ([`FabricConfig::subnet_up`](super::FabricConfig::subnet_up)).
        after: Duration,
        /// The port as last read.
        port: Box<PortInfoRepr>,
        /// OpenSM's and ibsim's logs.
        logs: String,
    },
}

/// A child process that is gone.
#[derive(Debug, thiserror::Error)]
pub enum ProcessGone {
    /// It exited.
    #[error("{name} exited early ({status})")]
    Exited {
        /// `ibsim` or `opensm`.
        name: &'static str,
        /// How.
        status: ExitStatus,
    },
    /// Its state could not be read.
    #[error("{name}: {source}")]
    Wait {
        /// `ibsim` or `opensm`.
        name: &'static str,
        /// Why.
        source: io::Error,
    },
}

/// ibsim or OpenSM died ([`Fabric::check_alive`](super::Fabric::check_alive)), with the logs.
#[derive(Debug, thiserror::Error)]
#[error("{gone}\n{logs}")]
pub struct Died {
    /// Which process, and how.
    pub gone: ProcessGone,
    /// The logs (OpenSM's and ibsim's, or ibsim's while OpenSM was not started yet).
    pub logs: String,
}

/// [`Fabric::guid2lid`](super::Fabric::guid2lid): OpenSM did not write its `guid2lid` file in time.
#[derive(Debug, thiserror::Error)]
#[error("{} not written within {after:?}", path.display())]
pub struct Guid2LidError {
    /// The file.
    pub path: PathBuf,
    /// How long it waited.
    pub after: Duration,
}

/// Why [`Fabric::wait_ca_ports`](super::Fabric::wait_ca_ports) gave up.
#[derive(Debug, thiserror::Error)]
pub enum WaitPortsError {
    /// ibsim or OpenSM died.
    #[error(transparent)]
    Died(#[from] Died),
    /// The deadline passed first.
    #[error(
        "OpenSM's subnet dump lists {listed} CA ports ({active} Active), not {wanted} Active, \
         before the deadline"
    )]
    Deadline {
        /// CA ports in the last dump.
        listed: usize,
        /// Of those, Active.
        active: usize,
        /// CA ports waited for.
        wanted: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The messages read as the `String` errors they replaced did.
    #[test]
    fn messages() {
        let e = WaitPortsError::Deadline {
            listed: 5,
            active: 3,
            wanted: 8,
        };
        assert_eq!(
            e.to_string(),
            "OpenSM's subnet dump lists 5 CA ports (3 Active), not 8 Active, before the deadline"
        );
        let e = StartError::Required("opensm (Debian package opensm)".into());
        assert_eq!(
            e.to_string(),
            "IPOIB_REQUIRE_OPENSM is set but not installed: opensm (Debian package opensm)"
        );
        let gone = ProcessGone::Wait {
            name: "ibsim",
            source: io::Error::other("gone"),
        };
        let e = StartError::from(Died {
            gone,
            logs: "--- log ---\n".into(),
        });
        assert_eq!(e.to_string(), "ibsim: gone\n--- log ---\n");
        let e = Guid2LidError {
            path: PathBuf::from("/tmp/x/guid2lid"),
            after: Duration::from_secs(2),
        };
        assert_eq!(e.to_string(), "/tmp/x/guid2lid not written within 2s");
    }
}
