//! The `--topology` and `--hosts` arguments shared by `ipoib sim` and `ipoib demo`.

use ipoib_fabric::hw::topology::Topology;

/// `topology` is `fat-tree`, `single-switch` or an ibnetdiscover/ibsim net file; `hosts` is the number
/// of hosts of a generated topology (`default_hosts` when not given; an error when neither is), and
/// must match the file's channel adapters when both are given.
pub fn load(
    topology: &str,
    hosts: Option<usize>,
    default_hosts: Option<usize>,
) -> Result<Topology, String> {
    let generated = || match hosts.or(default_hosts) {
        None => Err("--hosts N is needed with a generated topology".to_string()),
        Some(0) => Err("--hosts must be at least 1".to_string()),
        Some(n) => Ok(n),
    };
    match topology {
        "fat-tree" => Topology::fat_tree(generated()?).map_err(|e| e.to_string()),
        "single-switch" => Topology::single_switch(generated()?).map_err(|e| e.to_string()),
        file => {
            if !std::path::Path::new(file).exists() {
                return Err(format!(
                    "--topology {file}: no such file; give fat-tree, single-switch or an \
                     ibnetdiscover/ibsim net file"
                ));
            }
            let t = Topology::load_net(file).map_err(|e| {
                if e.file.is_some() {
                    e.to_string()
                } else {
                    format!("{file}: {e}")
                }
            })?;
            let cas = t.cas().count();
            match hosts {
                Some(n) if n != cas => Err(format!(
                    "--hosts {n}, but {file} has {cas} channel adapters"
                )),
                _ if cas == 0 => Err(format!(
                    "{file}: no channel adapters (is it an ibnetdiscover/ibsim net file?)"
                )),
                _ => Ok(t),
            }
        }
    }
}
