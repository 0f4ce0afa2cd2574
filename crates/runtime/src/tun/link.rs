//! A TUN device's link as Linux IPoIB keeps its `ib0`: [`LinkControl`] (MTU, up/down, carrier
//! and addresses over rtnetlink, and the changes others made) and [`LinkMirror`] (the device
//! following its emulated interface, docs/LINUX-DEVICE.md).

use crate::netlink::{LinkChanges, LinkWatch, NetlinkError, Rtnl};
use std::net::{IpAddr, Ipv6Addr};

/// MTU and up/down of one device, from any thread: an rtnetlink socket opened in the device's
/// namespace ([`LinkControl::open`] on a thread in it, e.g. in the setup closure of
/// [`crate::netns::NetNs::create`]), and a [`LinkWatch`] of the changes made to it by others
/// (`ip link set ib0 down`, `... mtu 4000` in the namespace).
#[derive(Debug)]
pub struct LinkControl {
    rtnl: Rtnl,
    watch: LinkWatch,
    index: u32,
}

impl LinkControl {
    /// Control of the device with `index` in the calling thread's namespace.
    pub fn open(index: u32) -> Result<LinkControl, NetlinkError> {
        Ok(LinkControl {
            rtnl: Rtnl::open()?,
            watch: LinkWatch::open()?,
            index,
        })
    }

    /// What happened to the device since the last call (or since it was opened).
    pub fn changes(&mut self) -> Result<LinkChanges, NetlinkError> {
        self.watch.take(self.index)
    }

    /// Sets the MTU only.
    pub fn set_mtu(&mut self, mtu: u32) -> Result<(), NetlinkError> {
        self.rtnl.set_mtu(self.index, mtu)
    }

    /// Sets the MTU (when given) and brings the device up or down.
    pub fn set(&mut self, mtu: Option<u32>, up: bool) -> Result<(), NetlinkError> {
        self.rtnl.set_link(self.index, mtu, up)
    }

    /// Sets the device's carrier (an up device without carrier shows `NO-CARRIER` and sends
    /// nothing; its addresses stay).
    pub fn set_carrier(&mut self, on: bool) -> Result<(), NetlinkError> {
        self.rtnl.set_carrier(self.index, on)
    }

    /// Adds an address (IPv6 ones without DAD).
    pub fn add_address(&mut self, addr: IpAddr, prefix_len: u8) -> Result<(), NetlinkError> {
        self.rtnl.add_address(self.index, addr, prefix_len)
    }

    /// Removes an address.
    pub fn del_address(&mut self, addr: IpAddr, prefix_len: u8) -> Result<(), NetlinkError> {
        self.rtnl.del_address(self.index, addr, prefix_len)
    }
}

/// The IPv6 link-local address (fe80::/10, RFC 4291 §2.5.6) among `addrs`, e.g. an emulated
/// interface's made from its port GUID.
pub fn link_local(addrs: impl IntoIterator<Item = Ipv6Addr>) -> Option<Ipv6Addr> {
    addrs
        .into_iter()
        .find(|a| a.segments()[0] & 0xffc0 == 0xfe80)
}

/// Prefix length of an IPv6 link-local address (RFC 4291 §2.5.6).
pub const LINK_LOCAL_PREFIX: u8 = 64;

/// In words, as a note of the lab or an attach process.
impl std::fmt::Display for Restored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Restored::LinkLocal(ll) => write!(
                f,
                "up again with its link-local address {ll} (as Linux IPoIB makes it from the \
                 port GUID); its other IPv6 addresses went with the down, as on Linux"
            ),
            Restored::Mtu { asked, set } => write!(
                f,
                "mtu {asked} is above the interface's {set}: set back to {set} (Linux IPoIB \
                 takes no more: the broadcast group's IB MTU less 4 in datagram mode, 65520 in \
                 connected mode)"
            ),
            Restored::Followed { from, to } => write!(
                f,
                "mtu {from} -> {to}: the interface's MTU changed with its broadcast group's \
                 (the smaller of it and an MTU given by hand, as Linux IPoIB sets it at every \
                 broadcast join)"
            ),
        }
    }
}

/// Makes a TUN device follow its emulated interface, as Linux IPoIB's `ib0` follows its port: down
/// until the first carrier, then up with the interface's MTU; a later loss of carrier is the
/// device's (`NO-CARRIER`, Linux IPoIB's `netif_carrier_off`) and so is its return, without
/// taking the device down (which would flush its IPv6 addresses); the device carries the
/// interface's IPv6 link-local address, replaced when the interface gets another (a host given
/// another identity). [`check`](LinkMirror::check) puts back what Linux IPoIB would keep when
/// the device is changed by hand in its namespace: the link-local address after a down and up,
/// and an MTU no larger than the interface's; and it keeps the device's MTU at the smaller of the
/// interface's (which a broadcast group joined again with other parameters changes) and the MTU
/// last given by hand, as Linux IPoIB does at every broadcast join (docs/LINUX-DEVICE.md).
#[derive(Debug)]
pub struct LinkMirror {
    ctl: LinkControl,
    up: bool,
    carrier: bool,
    link_local: Option<Ipv6Addr>,
    /// The device was taken down by hand since it was brought up: the link-local address is to
    /// be added again once it is up.
    link_local_lost: bool,
    /// The device is up, by the last notice seen.
    dev_up: bool,
    /// The MTU last given to the device by hand (Linux IPoIB's `admin_mtu`), if any.
    admin_mtu: Option<u32>,
    /// The MTU this mirror last gave the device: a notice with another was a change by hand.
    set_mtu: Option<u32>,
    /// The device's MTU, by the last notice seen or set.
    dev_mtu: Option<u32>,
}

/// What [`LinkMirror::check`] put back or changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restored {
    /// The device came up again and got back the interface's IPv6 link-local address, which
    /// its down removed.
    LinkLocal(Ipv6Addr),
    /// The device was given an MTU above the interface's (`asked`) and is back at the
    /// interface's (`set`).
    Mtu {
        /// The MTU given by hand.
        asked: u32,
        /// The interface's MTU, the device's again.
        set: u32,
    },
    /// The interface's MTU changed (its broadcast group joined again with another MTU, after
    /// a ClientReregister or an SM's change) and the device's followed (`from` -> `to`): `to` is
    /// the smaller of the interface's MTU and the one last given by hand.
    Followed {
        /// The device's MTU before.
        from: u32,
        /// The device's MTU now.
        to: u32,
    },
}

impl LinkMirror {
    /// Mirrors onto the device of `ctl`, which is down and holds `link_local` if given.
    pub fn new(ctl: LinkControl, link_local: Option<Ipv6Addr>) -> LinkMirror {
        LinkMirror {
            ctl,
            up: false,
            carrier: false,
            link_local,
            link_local_lost: false,
            dev_up: false,
            admin_mtu: None,
            set_mtu: None,
            dev_mtu: None,
        }
    }

    /// Reads what was done to the device since the last call and puts back what Linux IPoIB
    /// keeps, for an interface whose MTU is now `mtu` (docs/LINUX-DEVICE.md):
    /// - taken down (with `net.ipv6.conf.<dev>.keep_addr_on_down` 0, the default, its IPv6
    ///   addresses go) and up again: Linux makes an InfiniBand device's link-local address again
    ///   from its GUID when it comes up (`addrconf_dev_config`), a TUN device gets none of its
    ///   own (`addr_gen_mode` 1): the interface's is added again. Other addresses stay gone, as
    ///   on Linux;
    /// - given an MTU above the interface's: Linux IPoIB refuses it, or keeps the device at the
    ///   broadcast group's MTU less 4 in datagram mode, and refuses more than 65520 in
    ///   connected mode (`ipoib_change_mtu`); a TUN device takes up to 65535, so the device is
    ///   set back to `mtu`. A smaller MTU is left as given, as Linux does; any while `mtu` is 0
    ///   (the interface has lost its carrier, and with it its MTU);
    /// - and, with carrier, the device's MTU becomes the smaller of `mtu` and the MTU last given
    ///   by hand when it is not: the interface's MTU changed with its broadcast group's (joined
    ///   again after a ClientReregister or an SM's change), and Linux IPoIB sets
    ///   `min(mcast_mtu, admin_mtu)` at every broadcast join in datagram mode
    ///   (`ipoib_mcast_carrier_on_task`); in connected mode the interface's MTU does not change.
    ///
    /// Nothing before the device was first brought up ([`follow`](LinkMirror::follow)).
    pub fn check(&mut self, mtu: u32) -> Result<Vec<Restored>, NetlinkError> {
        let seen = self.ctl.changes()?;
        let mut done = Vec::new();
        if !self.up {
            return Ok(done);
        }
        self.link_local_lost |= seen.was_down;
        // Without a notice of its state (lost ones) it is taken to be up, as it was left.
        self.dev_up = seen.up.unwrap_or(self.dev_up || seen.was_down);
        if self.link_local_lost && self.dev_up {
            self.link_local_lost = false;
            if let Some(ll) = self.link_local {
                // Still there (a down the kernel kept it through, or notices lost) is as good.
                match self.ctl.add_address(IpAddr::V6(ll), LINK_LOCAL_PREFIX) {
                    Ok(()) => done.push(Restored::LinkLocal(ll)),
                    Err(NetlinkError::Refused { source, .. })
                        if source.raw_os_error() == Some(nix::errno::Errno::EEXIST as i32) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        // An interface without carrier has no MTU (0, as `IpoibInterface::mtu` says): nothing
        // to hold the device to until it is back, when `follow` sets its MTU. (Held to 0, `ipoib
        // attach` printed "ip link set dev #N mtu 0: Invalid argument" whenever the fabric went.)
        if let Some(m) = seen.mtu {
            self.dev_mtu = Some(m);
            if Some(m) != self.set_mtu {
                self.admin_mtu = Some(m);
            }
        }
        let by_hand = seen.mtu.filter(|&m| Some(m) != self.set_mtu);
        if let Some(asked) = by_hand.filter(|&m| mtu > 0 && m > mtu) {
            self.put_mtu(mtu)?;
            done.push(Restored::Mtu { asked, set: mtu });
        }
        if self.carrier && mtu > 0 {
            let to = self.wanted_mtu(mtu);
            if let Some(from) = self.dev_mtu.filter(|&d| d != to) {
                self.put_mtu(to)?;
                done.push(Restored::Followed { from, to });
            }
        }
        Ok(done)
    }

    /// The MTU the device should have for an interface whose MTU is `mtu` (not 0): Linux
    /// IPoIB's `min(mcast_mtu, admin_mtu)`.
    fn wanted_mtu(&self, mtu: u32) -> u32 {
        self.admin_mtu.map_or(mtu, |a| a.min(mtu))
    }

    fn put_mtu(&mut self, mtu: u32) -> Result<(), NetlinkError> {
        self.ctl.set_mtu(mtu)?;
        self.set_mtu = Some(mtu);
        self.dev_mtu = Some(mtu);
        Ok(())
    }

    /// True once the device was brought up.
    pub fn is_up(&self) -> bool {
        self.up
    }

    /// The interface now has `carrier`, `mtu`, and `link_local` (when known): changes what
    /// changed. Returns true when the carrier changed.
    pub fn follow(
        &mut self,
        carrier: bool,
        mtu: u32,
        link_local: Option<Ipv6Addr>,
    ) -> Result<bool, NetlinkError> {
        // The carrier first: an address the kernel refuses (one given by hand too) must not
        // keep the device down.
        let changed = self.follow_carrier(carrier, mtu);
        let addressed = self.follow_link_local(link_local);
        let changed = changed?;
        addressed?;
        Ok(changed)
    }

    fn follow_carrier(&mut self, carrier: bool, mtu: u32) -> Result<bool, NetlinkError> {
        if carrier == self.carrier {
            return Ok(false);
        }
        let mtu = self.wanted_mtu(mtu);
        if !self.up {
            // Down until the first carrier; a TUN device has carrier once its file is open.
            self.ctl.set(Some(mtu), true)?;
            self.up = true;
            self.dev_up = true;
            (self.set_mtu, self.dev_mtu) = (Some(mtu), Some(mtu));
        } else if carrier {
            self.ctl.set(Some(mtu), true)?;
            (self.set_mtu, self.dev_mtu) = (Some(mtu), Some(mtu));
            self.ctl.set_carrier(true)?;
        } else {
            self.ctl.set_carrier(false)?;
        }
        self.carrier = carrier;
        Ok(true)
    }

    fn follow_link_local(&mut self, link_local: Option<Ipv6Addr>) -> Result<(), NetlinkError> {
        let Some(ll) = link_local.filter(|ll| self.link_local != Some(*ll)) else {
            return Ok(());
        };
        if let Some(old) = self.link_local.take() {
            // Gone already (removed by hand) is as good.
            let _ = self.ctl.del_address(IpAddr::V6(old), LINK_LOCAL_PREFIX);
        }
        // Tried once: a refused address is not asked for again on every change.
        self.link_local = Some(ll);
        self.ctl.add_address(IpAddr::V6(ll), LINK_LOCAL_PREFIX)
    }
}
