//! The lab's hosts: names, namespaces, addresses, the interface configuration each gets, the
//! `/etc/hosts` of every namespace, and the table printed once IPoIB is up.
//!
//! Host `i` (0-based; host 0 also runs the subnet manager) is `h{i+1}` in namespace
//! `ipoib-h{i+1}`, with `10.0.0.{i+1}/24` and `fd00::{i+1}/64` (hex) on its `ib0`. Its
//! interface runs on its first IPoIB partition: the first partition of the partitions file (in
//! file order) that has an IPoIB broadcast group and the host's port among its members; without
//! a file, the default partition 0x7fff (P_Key 0xffff). Linux would make further partitions
//! child interfaces (`ib0.8001`); the lab does not.

use super::state::HostEntry;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::sm::PartitionMembers;
use ipoib_fabric::node::subnet::{broadcast_groups, partition_specs, Subnet};
use ipoib_proto::ipoib::{ConnectedConfig, InterfaceConfig, LogLevel};
use ipoib_proto::partitions::PartitionConfig;
use ipoib_wire::PKey;
use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

/// Most hosts: one /24 of IPv4 addresses.
pub const MAX_HOSTS: usize = 254;
/// IPv4 prefix length of the lab's link.
pub const IPV4_PREFIX: u8 = 24;
/// IPv6 prefix length of the lab's link.
pub const IPV6_PREFIX: u8 = 64;

/// `h1`, `h2`, ...
pub fn name(i: usize) -> String {
    format!("h{}", i + 1)
}

/// `ipoib-h1`, ...
pub fn namespace(i: usize) -> String {
    format!("ipoib-{}", name(i))
}

/// `10.0.0.{i+1}`.
pub fn ipv4(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, (i + 1).min(255) as u8)
}

/// `fd00::{i+1}`.
pub fn ipv6(i: usize) -> Ipv6Addr {
    Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, (i + 1) as u16)
}

/// The state file's entry of host `i` of `net`, with its partition as its port's P_Key table
/// holds it now, as the hosts table reads it: what the SM wrote (ours, or OpenSM by
/// SubnSet(P_KeyTable), IBA 1 §14.2.5.7), not what our SM would plan, which OpenSM's
/// partitions need not follow.
pub fn entry(net: &Subnet, i: usize) -> HostEntry {
    let table = net.host_port(i).map_or(&[][..], |p| &p.pkeys[..]);
    let (pkey, member) = membership(interface_pkey(i), table);
    HostEntry {
        name: name(i),
        namespace: namespace(i),
        ipv4: ipv4(i).to_string(),
        ipv6: ipv6(i).to_string(),
        pkey,
        member: member.into(),
    }
}

/// [`entry`] of every host of `net`.
pub fn entries(net: &Subnet) -> Vec<HostEntry> {
    (0..net.host_count()).map(|i| entry(net, i)).collect()
}

/// Per host, the P_Key of its first IPoIB partition, when a partitions file was given (the
/// configuration hook of the subnet is a plain function: it reads them from here).
static PKEYS: OnceLock<Vec<PKey>> = OnceLock::new();

/// The P_Key host `i`'s interface runs on (module docs).
fn interface_pkey(i: usize) -> PKey {
    PKEYS
        .get()
        .and_then(|v| v.get(i))
        .copied()
        .unwrap_or(PKey::DEFAULT)
}

/// Host `i`'s interface in datagram mode (module docs); its addresses are those of
/// [`ipoib_fabric::node::subnet::IpoibOptions::external`], which [`ipv4`] and [`ipv6`] repeat.
pub fn datagram(i: usize, c: &mut InterfaceConfig) {
    c.log_level = LogLevel::Warn;
    if let Some(&k) = PKEYS.get().and_then(|v| v.get(i)) {
        c.pkey = k;
    }
}

/// Host `i`'s interface in connected mode (RFC 4755).
pub fn connected(i: usize, c: &mut InterfaceConfig) {
    datagram(i, c);
    c.connected = Some(ConnectedConfig::rc());
}

/// Sets every host's partition from `cfg` (module docs); hosts in no IPoIB partition keep the
/// default and will not come up, which the caller reports. Returns the hosts in none.
pub fn set_partitions(topo: &Topology, cfg: &PartitionConfig) -> Vec<usize> {
    let Some(sm_port) = topo.first_ca_port() else {
        return Vec::new();
    };
    let specs = partition_specs(cfg, topo, sm_port);
    let groups = broadcast_groups(cfg);
    let mut keys = Vec::new();
    let mut none = Vec::new();
    for (i, e) in topo.host_ports().enumerate() {
        let guid = topo.nodes()[e.node].port_guid(e.port);
        let first = groups.iter().map(|&(k, _)| k).find(|&k| {
            specs.iter().any(|s| {
                s.pkey.same_partition(k)
                    && match &s.members {
                        PartitionMembers::All(_) => true,
                        PartitionMembers::Ports(v) => v.iter().any(|(g, _)| *g == guid),
                    }
            })
        });
        if first.is_none() {
            none.push(i);
        }
        keys.push(first.unwrap_or(PKey::DEFAULT));
    }
    let _ = PKEYS.set(keys);
    none
}

/// The `/etc/hosts` of every namespace: localhost and every lab host by name with both its
/// addresses (which family a program picks is its resolver's choice, RFC 6724 in glibc: give
/// `ping -4 h2` or `ping -6 h2` to choose).
pub fn hosts_file(n: usize) -> String {
    let mut s = String::from(
        "# Written by `ipoib lab`; removed with the lab.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    );
    for i in 0..n {
        let _ = writeln!(s, "{}\t{}", ipv4(i), name(i));
    }
    for i in 0..n {
        let _ = writeln!(s, "{}\t{}", ipv6(i), name(i));
    }
    s
}

/// True when host `i` is usable: carrier (the broadcast join, draft-ietf-ipoib-ip-over-
/// infiniband-06 §5) and its IPv6 address past DAD (RFC 4862 §5.4).
pub fn ready(net: &Subnet, i: usize) -> bool {
    net.interface(i).is_some_and(|f| {
        f.carrier()
            && f.ipv6_addresses()
                .iter()
                .all(|a| a.state == ipoib_proto::ipoib::AddrState::Preferred)
    })
}

/// Host `i`'s partition as its port holds it: the entry of its P_Key table for the partition
/// its interface runs on, and whether the port is a full or a limited member (bit 15, IBA 1
/// §10.9); `none` when the table has no entry for it (the interface then waits without
/// carrier).
fn partition_cells(net: &Subnet, i: usize) -> (String, &'static str) {
    let Some(want) = net.interface(i).map(|f| f.config().pkey) else {
        return ("-".into(), "-");
    };
    membership(want, net.host_port(i).map_or(&[], |p| &p.pkeys[..]))
}

/// The entry of P_Key table `table` for `want`'s partition (the exact key first, as
/// [`ipoib_fabric::hw::hca::Port::find_pkey_index`] picks it) and the membership it gives:
/// `full`, `limited`, or `none` (with `want`) when the table has no entry for the partition.
fn membership(want: PKey, table: &[PKey]) -> (String, &'static str) {
    let entry = table
        .iter()
        .find(|&&e| e == want)
        .or_else(|| table.iter().find(|e| e.same_partition(want)));
    match entry {
        Some(k) if k.is_full() => (format!("{:#06x}", k.0), "full"),
        Some(k) => (format!("{:#06x}", k.0), "limited"),
        None => (format!("{:#06x}", want.0), "none"),
    }
}

/// The table of hosts.
pub fn table(net: &Subnet) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<4} {:<10} {:>5} {:<24} {:>8} {:>5} {:<6} {:<7} {:<15} {:<12} link-layer address",
        "host", "namespace", "LID", "GID", "QPN", "MTU", "P_Key", "member", "IPv4", "IPv6"
    );
    for i in 0..net.host_count() {
        let iface = net.interface(i);
        let (pkey, member) = partition_cells(net, i);
        let _ = writeln!(
            s,
            "{:<4} {:<10} {:>5} {:<24} {:>8} {:>5} {:<6} {:<7} {:<15} {:<12} {}",
            name(i),
            namespace(i),
            net.lid(i),
            net.gid(i).to_string(),
            iface.map_or("-".to_string(), |f| format!("{:#08x}", f.config().qpn)),
            iface.map_or(0, |f| f.mtu()),
            pkey,
            member,
            format!("{}/{IPV4_PREFIX}", ipv4(i)),
            format!("{}/{IPV6_PREFIX}", ipv6(i)),
            iface.map_or("-".to_string(), |f| f.hw_addr().to_string()),
        );
    }
    s
}

/// A drop reason in the words of `ipoib show counters` (`drop_no_mcast_group`: "no mcast group").
fn drop_words(r: ipoib_proto::ipoib::DropReason) -> String {
    let name = ipoib_runtime::show::drop_name(r);
    name.strip_prefix("drop_").unwrap_or(name).replace('_', " ")
}

/// One line per host of what crossed its interface, for standard error when the lab stops:
/// packets between the OS and the interface and everything dropped on the way (queues, the
/// interface's reasons, the adapter's verbs errors, writes the TUN device refused).
pub fn summary(net: &Subnet, tun_write_errors: &[u64]) -> String {
    let mut s = String::new();
    for i in 0..net.host_count() {
        let (Some(app), Some(iface)) = (net.ipoib_app(i), net.interface(i)) else {
            continue;
        };
        let os = app.os_counters();
        let a = app.counters();
        let mut drops: Vec<String> = iface
            .counters()
            .drops
            .iter()
            .map(|(r, n)| format!("{} {n}", drop_words(*r)))
            .collect();
        for (what, n) in [
            ("from-OS queue full", os.from_os_dropped),
            ("to-OS queue full", os.to_os_dropped),
            ("malformed from OS", os.malformed),
            ("send errors", a.send_errors + a.tx_not_ready),
            (
                "TUN writes refused",
                tun_write_errors.get(i).copied().unwrap_or(0),
            ),
        ] {
            if n > 0 {
                drops.push(format!("{what} {n}"));
            }
        }
        let _ = writeln!(
            s,
            "{}: {} packets from the OS, {} to the OS; dropped: {}",
            name(i),
            os.from_os,
            os.to_os,
            if drops.is_empty() {
                "none".to_string()
            } else {
                drops.join(", ")
            }
        );
    }
    s
}

/// The first line of the stop summary: how long the lab ran, and what the real-time driver did
/// (`crates/runtime/src/realtime.rs`): `turns` rounds of reading packets from the OS, running the
/// subnet and writing its packets back, `sleeps` of which ended waiting for the next packet or
/// timer (an idle lab waits most of the time).
pub fn stop_line(secs: f64, turns: u64, sleeps: u64) -> String {
    format!(
        "ipoib lab: stopped after {secs:.1} s. The emulation moved packets and ran the subnet's \
         timers in {turns} rounds; in {sleeps} of them it then waited for the next packet or timer."
    )
}

/// The line that says what to try once `n` hosts are up: a command that works on this lab (a
/// one-host lab has no `h2` to ping).
pub fn try_line(n: usize) -> String {
    let cmd = if n >= 2 {
        format!("ipoib lab exec {} -- ping {}", name(0), name(1))
    } else {
        format!("ipoib lab exec {} -- ip addr", name(0))
    };
    format!(
        "Run `{cmd}` (or `ip netns exec {} ...`); Ctrl-C or `ipoib lab down` ends the lab.",
        namespace(0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-host lab suggested `ping h2`, a host it has not.
    #[test]
    fn the_suggested_command_names_hosts_the_lab_has() {
        assert_eq!(
            try_line(3),
            "Run `ipoib lab exec h1 -- ping h2` (or `ip netns exec ipoib-h1 ...`); Ctrl-C or \
             `ipoib lab down` ends the lab."
        );
        assert!(try_line(1).starts_with("Run `ipoib lab exec h1 -- ip addr`"));
        assert!(!try_line(1).contains("h2"));
    }

    /// The stop summary said "(1327 turns, 416 slept)": the driver's words, not the user's.
    #[test]
    fn the_stop_line_says_what_its_numbers_are() {
        let l = stop_line(12.34, 1327, 416);
        assert_eq!(
            l,
            "ipoib lab: stopped after 12.3 s. The emulation moved packets and ran the subnet's \
             timers in 1327 rounds; in 416 of them it then waited for the next packet or timer."
        );
        assert!(!l.contains("turns") && !l.contains("slept"), "{l}");
    }

    /// h2 asks for a partition its port is not in, h3 runs on one where it is a limited member.
    fn other_partitions(i: usize, c: &mut InterfaceConfig) {
        match i {
            1 => c.pkey = PKey(0x8003),
            2 => c.pkey = PKey(0x8002),
            _ => {}
        }
    }

    /// The table had no P_Key: with a partitions file a user could not see which host is in
    /// which partition, and as what member.
    #[test]
    fn the_table_gives_each_host_its_partition_and_membership() {
        use ipoib_fabric::node::subnet::{IpoibOptions, SubnetOptions};
        let topo = Topology::single_switch(3).unwrap();
        let cfg = ipoib_proto::partitions::parse(
            "Default=0x7fff, ipoib : ALL=full ;\nLim=0x0002, ipoib : ALL=limited ;\n",
        )
        .unwrap();
        let mut opts = SubnetOptions::new(topo, 1);
        opts.partitions = Some(cfg);
        opts.ipoib = Some(IpoibOptions {
            configure: Some(other_partitions),
            ..IpoibOptions::external()
        });
        let mut net = Subnet::build(opts).unwrap();
        // h2 never joins (its P_Key is not in its port's table): only the SM's work matters.
        let _ =
            net.run_until_joined(ipoib_fabric::Instant::ZERO + std::time::Duration::from_secs(2));
        let t = table(&net);
        let rows: Vec<Vec<&str>> = t.lines().map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(rows[0][6..8], ["P_Key", "member"], "{t}");
        assert_eq!(rows[1][6..8], ["0xffff", "full"], "{t}");
        assert_eq!(rows[2][6..8], ["0x8003", "none"], "{t}");
        assert_eq!(rows[3][6..8], ["0x0002", "limited"], "{t}");
        // The state file's entries as the ports hold the tables (the interface P_Keys of the
        // configure hook are the lab's own, the default here).
        let e = entry(&net, 1);
        assert_eq!((&*e.pkey, &*e.member), ("0xffff", "full"));
    }

    /// lab.json gave the P_Keys our SM would plan, not those the ports hold: under `--sm
    /// opensm` OpenSM writes the tables, and the hosts table showed those. A SubnSet(P_KeyTable)
    /// (IBA 1 §14.2.5.7) that leaves h2 a limited member of the default partition shows in its
    /// entry and in the JSON; the others keep theirs.
    #[test]
    fn the_state_file_gives_the_p_keys_the_ports_hold() {
        use super::super::state::LabState;
        use ipoib_fabric::node::subnet::SubnetOptions;
        use ipoib_fabric::Instant;
        use ipoib_proto::mad_agent::MadAddr;
        use ipoib_wire::mad::{attr::smp as attr, Method};
        use ipoib_wire::smp::{PKeyTableRepr, SmpAttribute, SmpMadRepr};
        use std::time::Duration;
        let topo = Topology::single_switch(3).unwrap();
        let mut net = Subnet::build(SubnetOptions::new(topo, 1)).unwrap();
        assert!(net.run_until_joined(Instant::ZERO + Duration::from_secs(60)));
        let before = entries(&net);
        assert_eq!((&*before[1].pkey, &*before[1].member), ("0xffff", "full"));
        // From the SM's host, as an SM writes it (M_Key 0: ours sets none).
        let mut t = PKeyTableRepr::default();
        t.pkeys[0] = PKey(0x7fff);
        let mut set = SmpMadRepr::lid_routed_get(0x1234, attr::P_KEY_TABLE, 0);
        set.header.method = Method::Set;
        set.attribute = SmpAttribute::PKeyTable(t);
        let to = MadAddr {
            qpn: 0,
            ..MadAddr::gsi(net.lid(1))
        };
        let sent = net.with_host(0, |h, _| {
            let u = h.umad_attach();
            h.umad_send(u, to, &set.to_bytes())
        });
        assert_eq!(sent, Some(Ok(())));
        let end = net.sim().now() + Duration::from_secs(1);
        let written = |n: &Subnet| n.host_port(1).is_some_and(|p| p.pkeys == [PKey(0x7fff)]);
        assert!(net.run_until_with(end, written), "the Set reached h2's SMA");
        let now = entries(&net);
        assert_eq!((&*now[1].pkey, &*now[1].member), ("0x7fff", "limited"));
        assert_eq!((&now[0], &now[2]), (&before[0], &before[2]));
        let lab = LabState {
            pid: 1,
            start_time: 0,
            mode: "datagram".into(),
            hosts: now,
            opensm: None,
        };
        let j = lab.to_json();
        assert_eq!(j["hosts"][1]["pkey"], "0x7fff", "{j}");
        assert_eq!(j["hosts"][1]["member"], "limited", "{j}");
        assert_eq!(j["hosts"][0]["pkey"], "0xffff", "{j}");
    }

    #[test]
    fn membership_reads_the_table_entry_of_the_partition() {
        let t = [PKey(0xffff), PKey(0x0002), PKey(0x8010)];
        assert_eq!(membership(PKey(0xffff), &t), ("0xffff".into(), "full"));
        assert_eq!(membership(PKey(0x8002), &t), ("0x0002".into(), "limited"));
        assert_eq!(membership(PKey(0x0010), &t), ("0x8010".into(), "full"));
        assert_eq!(membership(PKey(0x8003), &t), ("0x8003".into(), "none"));
        assert_eq!(membership(PKey(0xffff), &[]), ("0xffff".into(), "none"));
    }

    #[test]
    fn names_and_addresses_follow_the_host_index() {
        assert_eq!((name(0), namespace(0)), ("h1".into(), "ipoib-h1".into()));
        // The names `ipoib show` gives the hosts of a subnet.
        assert_eq!(name(6), ipoib_runtime::show::lab_host_name(6));
        assert_eq!(ipv4(2), Ipv4Addr::new(10, 0, 0, 3));
        assert_eq!(ipv6(9).to_string(), "fd00::a");
        // The addresses the fabric gives the interfaces (the OS must use the same ones).
        let o = ipoib_fabric::node::subnet::IpoibOptions::external();
        let (v4, v4len) = o.ipv4.unwrap();
        let (v6, v6len) = o.ipv6_network.unwrap();
        assert_eq!((v4len, v6len), (IPV4_PREFIX, IPV6_PREFIX));
        for i in [0, 1, 9, 253] {
            assert_eq!(ipoib_fabric::node::subnet::host_ipv4(v4, i), ipv4(i));
            assert_eq!(ipoib_fabric::node::subnet::host_ipv6(v6, i), ipv6(i));
        }
        // The stop summary names drops as `ipoib show counters` does, not by Rust's names.
        let d = drop_words(ipoib_proto::ipoib::DropReason::NoMcastGroup);
        assert_eq!(d, "no mcast group");
        let f = hosts_file(2);
        assert!(f.contains("10.0.0.2\th2\n") && f.contains("fd00::2\th2\n"));
    }
}
