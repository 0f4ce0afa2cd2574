//! The `--topology` and `--hosts` arguments shared by `ipoib sim` and `ipoib demo`.

use ipoib_fabric::hw::topology::Topology;

/// `topology` is `fat-tree`, `single-switch` or an ibnetdiscover/ibsim net file; `hosts` is the number
/// of hosts of a generated topology (`default_hosts` when not given; an error when neither is), and
/// must match the file's hosts when both are given. A file's hosts are its channel adapters with a
/// cabled port ([`Topology::host_ports`]), whichever port that is; a CA without any cable is no
/// host, and the message says so when the counts differ.
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
            // A pipe or a device is read as one text, bounded ([`crate::text_file`]); its
            // `include` lines have no directory to follow, as `Topology::parse_net` says.
            let loaded = match crate::text_file::is_small_regular_file("--topology", file)? {
                true => Topology::load_net(file),
                false => Topology::parse_net(&crate::text_file::read("--topology", file)?),
            };
            let t = loaded.map_err(|e| {
                if e.file.is_some() {
                    e.to_string()
                } else {
                    format!("{file}: {e}")
                }
            })?;
            check_hosts(&t, file, hosts)?;
            Ok(t)
        }
    }
}

/// Names, abbreviated after 6.
fn names(list: &[&str]) -> String {
    if list.len() <= 6 {
        return list.join(", ");
    }
    format!("{}, ... ({} in all)", list[..5].join(", "), list.len())
}

/// `--hosts`, when given with a net file, must be the number of the file's hosts.
fn check_hosts(t: &Topology, file: &str, hosts: Option<usize>) -> Result<(), String> {
    let host_nodes: Vec<usize> = t.host_ports().map(|e| e.node).collect();
    let name = |n: usize| t.nodes()[n].name.as_str();
    let uncabled: Vec<&str> = t
        .cas()
        .filter(|&n| t.cabled_ports(n).next().is_none())
        .map(name)
        .collect();
    let cas = t.cas().count();
    if host_nodes.is_empty() {
        return Err(if cas == 0 {
            format!("{file}: no channel adapters (is it an ibnetdiscover/ibsim net file?)")
        } else {
            format!("{file}: no channel adapter has a cabled port, so there is no host to run")
        });
    }
    match hosts {
        Some(n) if n != host_nodes.len() => {
            let listed: Vec<&str> = host_nodes.iter().map(|&n| name(n)).collect();
            let mut m = format!(
                "--hosts {n}, but {file} has {} host{} (channel adapters with a cabled port: {}); \
                 a net file runs all of them: leave --hosts out, or give --hosts {}",
                listed.len(),
                if listed.len() == 1 { "" } else { "s" },
                names(&listed),
                listed.len()
            );
            if !uncabled.is_empty() {
                m += &format!("; not hosts, no port cabled: {}", names(&uncabled));
            }
            Err(m)
        }
        _ => Ok(()),
    }
}
