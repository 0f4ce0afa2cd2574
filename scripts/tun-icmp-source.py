#!/usr/bin/env python3
"""Does a Linux host take an ICMP "fragmentation needed" / ICMPv6 "packet too big" written into a TUN
device, depending on the reply's source address? (docs/DEPLOYED.md "Linux IPoIB".)

Run as root in a private network namespace, which this script leaves behind with nothing changed:

    unshare -n python3 scripts/tun-icmp-source.py

For each family and each candidate source (the host's own address, as Linux's in-kernel reply has;
the invoking packet's destination), a connected UDP socket with path MTU discovery on sends 1400
bytes out of the TUN device; the script reads that packet, writes the ICMP error back with the
candidate source, and prints the socket's path MTU: lowered if the host took the error. IPv4 with
the own address is tried again with accept_local=1.
"""
import ipaddress
import os
import select
import socket
import struct
import subprocess
import fcntl

TUNSETIFF, IFF_TUN, IFF_NO_PI = 0x400454CA, 0x0001, 0x1000
IP_MTU_DISCOVER, IP_PMTUDISC_DO, IP_MTU = 10, 2, 14
IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO, IPV6_MTU = 23, 2, 24
OWN4, OWN6 = "10.9.0.1", "2001:db8::1"


def sh(cmd):
    subprocess.run(cmd, shell=True, check=True)


def checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum((b[i] << 8) | b[i + 1] for i in range(0, len(b), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def read_big(fd, version):
    while True:
        if not select.select([fd], [], [], 2)[0]:
            raise SystemExit("no packet came out of the TUN device")
        p = os.read(fd, 65536)
        if p[0] >> 4 == version and len(p) > 1000:
            return p


def try_v4(fd, peer, src, mtu=1000):
    """Sends to `peer` (a fresh one each time, so that no learnt path MTU hides the answer)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
    s.connect((peer, 9))
    s.send(b"x" * 1400)
    p = read_big(fd, 4)
    quote = p[: (p[0] & 15) * 4 + 8]
    icmp = bytearray(struct.pack("!BBHHH", 3, 4, 0, 0, mtu) + quote)
    icmp[2:4] = struct.pack("!H", checksum(bytes(icmp)))
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0xC0, 20 + len(icmp), 0, 0x4000, 64, 1, 0,
                               socket.inet_aton(src), socket.inet_aton(OWN4)))
    ip[10:12] = struct.pack("!H", checksum(bytes(ip)))
    os.write(fd, bytes(ip + icmp))
    select.select([], [], [], 0.3)
    return s.getsockopt(socket.IPPROTO_IP, IP_MTU)


def try_v6(fd, peer, src, mtu=1280):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO)
    s.connect((peer, 9))
    s.send(b"x" * 1400)
    p = read_big(fd, 6)
    a, d = ipaddress.IPv6Address(src).packed, ipaddress.IPv6Address(OWN6).packed
    icmp = bytearray(struct.pack("!BBHI", 2, 0, 0, mtu) + p[:1232])
    pseudo = a + d + struct.pack("!I", len(icmp)) + b"\0\0\0\x3a"
    icmp[2:4] = struct.pack("!H", checksum(pseudo + bytes(icmp)))
    os.write(fd, struct.pack("!IHBB", 6 << 28, len(icmp), 58, 64) + a + d + bytes(icmp))
    select.select([], [], [], 0.3)
    return s.getsockopt(socket.IPPROTO_IPV6, IPV6_MTU)


def main():
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", b"t0", IFF_TUN | IFF_NO_PI))
    sh(f"ip link set lo up; ip link set t0 up; ip addr add {OWN4}/24 dev t0;"
       f" ip -6 addr add {OWN6}/64 dev t0 nodad")
    print(f"uname -r: {os.uname().release}")
    # (destination of the invoking packet, source of the reply): own address, then the destination.
    for peer, src in (("10.9.0.2", OWN4), ("10.9.0.3", "10.9.0.3")):
        print(f"IPv4 fragmentation needed (mtu 1000) from {src}: path MTU {try_v4(fd, peer, src)}")
    for peer, src in (("2001:db8::2", OWN6), ("2001:db8::3", "2001:db8::3")):
        print(f"IPv6 packet too big (mtu 1280) from {src}: path MTU {try_v6(fd, peer, src)}")
    sh("sysctl -qw net.ipv4.conf.t0.accept_local=1")
    mtu = try_v4(fd, "10.9.0.4", OWN4)
    print(f"IPv4 fragmentation needed from {OWN4} with accept_local=1: path MTU {mtu}")


if __name__ == "__main__":
    main()
