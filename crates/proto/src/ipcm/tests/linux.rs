//! Byte compatibility with Linux rdma_cm: the REQ our client sends carries the private data
//! Linux's `cma_format_hdr` writes into its zeroed buffer (docs/DEPLOYED.md "Linux rdma_cm":
//! `struct cma_hdr`, `CMA_VERSION` 0x00, the IP version in bits 7:4 of byte 1, the source port,
//! `union cma_ip_addr` with IPv4 after 12 zero bytes), padded by the CM to the REQ's 92 bytes
//! (`IB_CM_REQ_PRIVATE_DATA_SIZE`), under the service ID `(RDMA_PS_TCP << 16) + port`. The
//! expected bytes are written out by hand here, not made by our emitter.

use super::*;

/// What Linux sends for a TCP-port-space connection from 192.168.1.10 port 49152 to
/// 192.168.1.20 port 4791 with consumer data `de ad be ef`.
const LINUX_V4: [u8; 92] = {
    let mut b = [0u8; 92];
    b[0] = 0x00; // cma_version = CMA_VERSION
    b[1] = 0x40; // ip_version: 4 << 4
    b[2] = 0xc0; // port = htons(49152)
    b[3] = 0x00;
    // src_addr.ip4: pad[3] zero (bytes 4-15), addr in bytes 16-19.
    b[16] = 192;
    b[17] = 168;
    b[18] = 1;
    b[19] = 10;
    // dst_addr.ip4: bytes 20-31 zero, addr in bytes 32-35.
    b[32] = 192;
    b[33] = 168;
    b[34] = 1;
    b[35] = 20;
    // The consumer's private data follows the 36-byte header.
    b[36] = 0xde;
    b[37] = 0xad;
    b[38] = 0xbe;
    b[39] = 0xef;
    b
};

/// The same from 2001:db8::a port 49152 to 2001:db8::14 port 4791.
const LINUX_V6: [u8; 92] = {
    let mut b = [0u8; 92];
    b[1] = 0x60; // ip_version: 6 << 4
    b[2] = 0xc0;
    // src_addr.ip6 = 2001:0db8:0000:...:000a
    b[4] = 0x20;
    b[5] = 0x01;
    b[6] = 0x0d;
    b[7] = 0xb8;
    b[19] = 0x0a;
    // dst_addr.ip6 = 2001:0db8:0000:...:0014
    b[20] = 0x20;
    b[21] = 0x01;
    b[22] = 0x0d;
    b[23] = 0xb8;
    b[35] = 0x14;
    b[36] = 0xde;
    b[37] = 0xad;
    b[38] = 0xbe;
    b[39] = 0xef;
    b
};

/// `(RDMA_PS_TCP << 16) + 4791`: 0x0106 << 16 = 0x01060000, 4791 = 0x12b7.
const LINUX_TCP_4791: u64 = 0x0000_0000_0106_12b7;

// Annex A11 CA11-1, CA11-5, CA11-6 as Linux rdma_cm reads them: the REQ on the wire is the one
// a Linux client would send for the same addresses and ports.
#[test]
fn req_private_data_equals_linux_cma_format_hdr() {
    let v4 = (
        IpAddr::from(Ipv4Addr::new(192, 168, 1, 10)),
        IpAddr::from(Ipv4Addr::new(192, 168, 1, 20)),
        LINUX_V4,
    );
    let v6 = (
        IpAddr::from(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0xa)),
        IpAddr::from(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x14)),
        LINUX_V6,
    );
    for (src, dst, linux) in [v4, v6] {
        let mut w = World::new(60);
        w.a.ipcm.set_local_addrs(vec![src]);
        w.a.neighbours.insert(dst, gid(B_LID));
        w.b.ipcm.set_local_addrs(vec![dst]);
        w.listen_b(TCP, dst, 4791);
        let now = w.now;
        w.a.ipcm
            .connect(
                now,
                TCP,
                SocketAddr::new(dst, 4791),
                Some(49152),
                &[0xde, 0xad, 0xbe, 0xef],
            )
            .unwrap();
        w.drive(Duration::from_secs(5));
        let req = &w.reqs()[0];
        assert_eq!(req.private_data, linux, "{src} -> {dst}");
        assert_eq!(req.service_id, LINUX_TCP_4791);
        // The emitter alone, before the CM's padding.
        let pd =
            req_private_data(SocketAddr::new(src, 49152), dst, &[0xde, 0xad, 0xbe, 0xef]).unwrap();
        assert_eq!(pd[..], linux[..40]);
        // And our server takes Linux's bytes.
        assert!(w.rejs().is_empty());
    }
    assert_eq!(
        req_private_data(
            SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 1),
            Ipv6Addr::LOCALHOST.into(),
            b""
        ),
        None,
        "one family for both addresses"
    );
    assert_eq!(
        req_private_data(SocketAddr::new(A_V4.into(), 1), B_V4.into(), &[0; 57]),
        None
    );
}
