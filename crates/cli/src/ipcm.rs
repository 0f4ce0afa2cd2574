//! `ipoib ipcm`: the RDMA IP CM service (IBTA Annex A11) from the command line.
//!
//! `ipoib ipcm check` shows what our IP CM server ([`ipoib_proto::ipcm`]) would answer to a CM
//! REQ with a given service ID and private data: the Table 1 fields, then the verdict of
//! [`verify_req_private_data`] against the given local addresses (versions first, Annex A11
//! CA11-11), with the REJ and its Table 4 ARI when it refuses. The REQ is read as the CM delivers
//! it: its 92-byte private data field, so input of 36 (the Annex A11 header) to 92 bytes is padded
//! with zeros; shorter input is not an Annex A11 REQ and exits 2.

use ipoib_proto::ipcm::RejectAri;
use ipoib_wire::cm::RejReason;
use ipoib_wire::describe::{Describer, Value};
use ipoib_wire::private_data::ip_cm::{
    IpCmReq, HEADER_LEN, REJ_REASON_CONSUMER_REJECT, REQ_PRIVATE_DATA_LEN,
};
use ipoib_wire::private_data::service_id::ip_cm_protocol_port;
use ipoib_wire::private_data::{
    verify_req_private_data, IpCmAriCode, IpCmReqRepr, IpCmServerPolicy, IpPair, RejectionLayer,
};
use ipoib_wire::render::{Json, Text};
use std::io::Write as _;
use std::net::IpAddr;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Print the verdict our IP CM server would give a REQ: accept, or REJ 28 with its ARI.
    ///
    /// The server runs the Annex A11 checks in order: major version (ARI code 0x01), minor
    /// version (0x02), IP version (0x03), the IPv4 padding of the source (0x04) and destination
    /// (0x05), a source that is not a unicast address (0x00, Unspecified), and the destination
    /// against the local addresses (0x06). It serves major version
    /// 0, minor version 0, IPv4 and IPv6; a listener on the service's port bound to the
    /// destination or a wildcard address is assumed. Exit status: 0 for either verdict; 2 when the
    /// input is not a REQ of the service (bad hex, private data shorter than the 36-byte header
    /// or longer than the REQ's 92 bytes, a service ID outside the Annex A11 range).
    Check(CheckArgs),
}

#[derive(clap::Args, Debug)]
struct CheckArgs {
    /// The REQ's service ID, hexadecimal with `0x` or decimal: 0x0000000001PPpppp for IP protocol
    /// PP and port pppp (Annex A11 Table 2).
    #[arg(long, value_parser = parse_u64)]
    service_id: u64,
    /// The REQ's private data in hexadecimal (spaces, colons and dashes ignored): the 36-byte
    /// header, then up to 56 bytes of consumer data.
    #[arg(long)]
    private_data: String,
    /// A local IP address of the server (repeat for each).
    #[arg(long = "local-ip", required = true)]
    local_ip: Vec<IpAddr>,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
}

fn parse_u64(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(&h.replace('_', ""), 16),
        None => s.replace('_', "").parse(),
    };
    r.map_err(|e| format!("not a 64-bit number: {e}"))
}

/// Hex digits into bytes; spaces, colons and dashes are separators, `0x` may lead.
fn parse_hex(s: &str) -> Result<Vec<u8>, String> {
    let s = s.trim();
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    let digits: Vec<u8> = s
        .bytes()
        .filter(|b| !matches!(b, b' ' | b'\t' | b':' | b'-'))
        .collect();
    if let Some(bad) = digits.iter().find(|b| !b.is_ascii_hexdigit()) {
        return Err(format!("{:?} is not a hexadecimal digit", char::from(*bad)));
    }
    if digits.len() % 2 == 1 {
        return Err(format!(
            "odd number of hexadecimal digits ({})",
            digits.len()
        ));
    }
    let nibble = |b: u8| char::from(b).to_digit(16).unwrap_or(0) as u8;
    Ok(digits
        .chunks(2)
        .map(|p| (nibble(p[0]) << 4) | nibble(p[1]))
        .collect())
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    note!("ipoib ipcm check: {msg}");
    ExitCode::from(2)
}

pub fn run(args: &Args) -> ExitCode {
    match &args.command {
        Sub::Check(a) => check(a),
    }
}

/// The name of IP protocol `p` where it is a common one.
fn protocol_name(p: u8) -> &'static str {
    match p {
        6 => "TCP",
        17 => "UDP",
        33 => "DCCP",
        63 => "any local network (Linux RDMA_PS_IB)",
        132 => "SCTP",
        _ => "other",
    }
}

/// Annex A11 Table 5's description of each code.
fn code_meaning(code: IpCmAriCode) -> &'static str {
    match code {
        IpCmAriCode::Unspecified => "Unspecified reason for RDMA IP CM Service rejection.",
        IpCmAriCode::MajorVersion => {
            "Major version of RDMA IP CM Service REQ Message is not supported by the remote CM."
        }
        IpCmAriCode::MinorVersion => {
            "Minor version of RDMA IP CM Service REQ Message is not supported by the remote CM."
        }
        IpCmAriCode::Ipv => {
            "IP version of RDMA IP CM Service REQ Message is not supported by the remote CM."
        }
        IpCmAriCode::SourceIpAddress => {
            "The format of the Source IP Address is inconsistent with the IP version in the RDMA IP CM Service REQ Message."
        }
        IpCmAriCode::DestinationIpAddress => {
            "The format of the Destination IP Address is inconsistent with the IP version in the RDMA IP CM Service REQ Message."
        }
        IpCmAriCode::UnknownIpAddress => {
            "The Destination IP Address does not match the server IP Address."
        }
        IpCmAriCode::Unknown(_) => "A code Annex A11 Table 5 does not define.",
    }
}

fn check(a: &CheckArgs) -> ExitCode {
    let Some((protocol, port)) = ip_cm_protocol_port(a.service_id) else {
        return fail(format_args!(
            "service ID {:#018x} is outside the Annex A11 range 0x0000000001xxxxxx: its REQ \
             private data is not an IP CM header (Annex A11 CA11-7)",
            a.service_id
        ));
    };
    let data = match parse_hex(&a.private_data) {
        Ok(d) => d,
        Err(e) => return fail(format_args!("--private-data: {e}")),
    };
    if data.len() < HEADER_LEN {
        return fail(format_args!(
            "--private-data: {} bytes, shorter than the {HEADER_LEN}-byte IP CM header \
             (Annex A11 Table 1)",
            data.len()
        ));
    }
    if data.len() > REQ_PRIVATE_DATA_LEN {
        return fail(format_args!(
            "--private-data: {} bytes, longer than a REQ's {REQ_PRIVATE_DATA_LEN}-byte private \
             data (IBA 1 §12.6 Table 106)",
            data.len()
        ));
    }
    // The REQ's field as the server's CM hands it over: zero-padded to 92 bytes.
    let mut field = [0u8; REQ_PRIVATE_DATA_LEN];
    field[..data.len()].copy_from_slice(&data);
    let policy = IpCmServerPolicy::default();
    let verdict = verify_req_private_data(&field, &policy, &a.local_ip);

    let mut out = String::new();
    if a.json {
        let mut j = Json::default();
        describe(&mut j, a.service_id, protocol, port, &field, &verdict);
        out = j.finish();
        out.push('\n');
    } else {
        let mut t = Text::default();
        describe(&mut t, a.service_id, protocol, port, &field, &verdict);
        out.push_str(&t.out);
    }
    let _ = std::io::stdout().write_all(out.as_bytes());
    ExitCode::SUCCESS
}

fn describe(
    d: &mut dyn Describer,
    service_id: u64,
    protocol: u8,
    port: u16,
    field: &[u8; REQ_PRIVATE_DATA_LEN],
    verdict: &Result<IpCmReqRepr<'_>, ipoib_wire::private_data::IpCmReject>,
) {
    d.field("service_id", Value::Hex(service_id, 16));
    d.field(
        "protocol",
        Value::Named(protocol.into(), protocol_name(protocol)),
    );
    d.field("port", Value::Uint(port.into()));
    // The field holds 92 bytes: the view's getters cannot fail.
    let h = IpCmReq::new_unchecked(&field[..]);
    d.field("major_version", Value::Uint(h.major_version().into()));
    d.field("minor_version", Value::Uint(h.minor_version().into()));
    d.field("ip_version", Value::Uint(h.ip_version().into()));
    d.field("reserved", Value::Uint(h.reserved().into()));
    d.field("source_port", Value::Uint(h.source_port().into()));
    match IpCmReqRepr::parse(field).map(|r| r.addrs) {
        Ok(IpPair::V4 { src, dst }) => {
            d.field("source_ip", Value::Ipv4(src));
            d.field("destination_ip", Value::Ipv4(dst));
        }
        Ok(IpPair::V6 { src, dst }) => {
            d.field("source_ip", Value::Ipv6(src));
            d.field("destination_ip", Value::Ipv6(dst));
        }
        Err(_) => {
            d.field("source_ip_field", Value::Bytes(h.source_ip_field()));
            d.field(
                "destination_ip_field",
                Value::Bytes(h.destination_ip_field()),
            );
        }
    }
    d.field(
        "consumer_private_data",
        Value::Bytes(h.consumer_private_data()),
    );
    match verdict {
        Ok(r) => {
            d.field("verdict", Value::Str("accept"));
            let dst = match r.addrs {
                IpPair::V4 { dst, .. } => IpAddr::V4(dst),
                IpPair::V6 { dst, .. } => IpAddr::V6(dst),
            };
            let meaning = format!(
                "the REQ passes the Annex A11 checks; a listener on protocol {protocol} port \
                 {port} bound to {dst} or a wildcard address is offered the connection at minor \
                 version {} (CA11-3); with no listener on the service ID the CM answers REJ 8 \
                 (CA11-8)",
                r.minor_version
            );
            d.field("meaning", Value::Str(&meaning));
        }
        Err(rej) => {
            d.field("verdict", Value::Str("reject"));
            d.field(
                "reason",
                Value::Named(
                    REJ_REASON_CONSUMER_REJECT.into(),
                    RejReason::from(REJ_REASON_CONSUMER_REJECT).name(),
                ),
            );
            let mut ari = vec![0u8; rej.buffer_len()];
            // The buffer is buffer_len() bytes.
            let _ = rej.emit(&mut ari);
            // Read back as a client would (the layer and code it reports).
            let decoded = RejectAri::decode(RejReason::ConsumerDefined, &ari);
            let layer = decoded.layer().unwrap_or(RejectionLayer::IpCmService);
            d.enter("ari");
            d.field("layer", Value::Named(u8::from(layer).into(), layer.name()));
            d.field(
                "code",
                Value::Named(u8::from(rej.code).into(), rej.code.name()),
            );
            d.field("meaning", Value::Str(code_meaning(rej.code)));
            d.field("suggested", Value::Bytes(rej.suggested.as_bytes()));
            d.field("bytes", Value::Bytes(&ari));
            d.leave();
            let meaning = format!(
                "the server answers REJ 28 (Consumer Reject) with the Annex A11 ARI, layer 0x00, \
                 code {:#04x} (oA11-1, CA11-9, CA11-10): {}",
                u8::from(rej.code),
                code_meaning(rej.code)
            );
            d.field("meaning", Value::Str(&meaning));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_forms() {
        assert_eq!(parse_hex("00 40:c0-00"), Ok(vec![0, 0x40, 0xc0, 0]));
        assert_eq!(parse_hex("0x0a0B"), Ok(vec![0x0a, 0x0b]));
        assert!(parse_hex("abc").unwrap_err().contains("odd"));
        assert!(parse_hex("zz").unwrap_err().contains("'z'"));
        assert_eq!(parse_u64("0x0000000001060cbc"), Ok(0x0106_0cbc));
        assert_eq!(parse_u64("17173692"), Ok(17173692));
        assert!(parse_u64("0xg").is_err());
    }
}
