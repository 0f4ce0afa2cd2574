//! What the root tests of TUN devices in network namespaces share (tests/netns_tun.rs,
//! tests/netns_offload.rs): whether they can run here, and the guard that deletes their
//! namespaces however a test ends.

use ipoib_runtime::netns;

/// True when the test can make namespaces and TUN devices (root, `/dev/net/tun`); otherwise
/// says that it skips.
pub fn can_run() -> bool {
    if !nix::unistd::geteuid().is_root() || !std::path::Path::new("/dev/net/tun").exists() {
        eprintln!("skipped: needs root and /dev/net/tun");
        return false;
    }
    true
}

/// Deletes the namespaces (and ends what runs in them) however the test ends.
pub struct Guard(pub Vec<String>);

impl Drop for Guard {
    fn drop(&mut self) {
        for n in &self.0 {
            for p in netns::pids(n) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(p),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            let _ = netns::delete(n);
        }
    }
}
