//! A URL's host as the connect path takes it: an IP address however it
//! is spelled (`ip`), which `stream::Connector` connects to as parsed
//! here, and whether the host is this machine (`is_local`), which OAuth
//! judges with the same function. One parser for both, so that no
//! spelling is judged one thing and reached as another. A name is
//! resolved once for a connection (`addresses`), and its addresses are
//! judged (`is_local_ip`) and connected to: the same ones, so that a name
//! that resolves elsewhere a second time (DNS rebinding) is never judged
//! at one address and reached at another.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

/// The IP address `host` spells, if it is one: an IPv6 literal (with or
/// without its brackets), or an IPv4 address in any form the system's
/// resolver takes as numeric (`inet_aton`: one to four parts, each
/// decimal, octal after a `0` or hex after `0x`, the last filling the
/// bytes left; `127.1`, `2130706433`, `0x7f.0.0.1`, `017700000001`),
/// which `getaddrinfo` would otherwise give the connection without a
/// word.
pub(crate) fn ip(host: &str) -> Option<IpAddr> {
    let bare = (host.strip_prefix('[').and_then(|h| h.strip_suffix(']'))).unwrap_or(host);
    if let Ok(v6) = bare.parse::<Ipv6Addr>() {
        return Some(IpAddr::V6(v6));
    }
    ipv4(host).map(IpAddr::V4)
}

/// `inet_aton`'s IPv4 forms (see [`ip`]).
fn ipv4(host: &str) -> Option<Ipv4Addr> {
    let parts = host.split('.').map(part).collect::<Option<Vec<u64>>>()?;
    let (last, first) = parts.split_last()?;
    if first.len() > 3 || first.iter().any(|&p| p > 0xff) {
        return None;
    }
    let room = 8 * (4 - first.len() as u32);
    if room < 64 && *last >= 1 << room {
        return None;
    }
    let high = first
        .iter()
        .enumerate()
        .fold(0u64, |acc, (i, &p)| acc | p << (24 - 8 * i));
    u32::try_from(high | last).ok().map(Ipv4Addr::from)
}

/// One part of an `inet_aton` address: `0x` hex (`0x` alone is 0, as
/// older C libraries read it), `0` octal, else decimal; at most 32 bits.
fn part(text: &str) -> Option<u64> {
    let (digits, radix) = if let Some(hex) = text.strip_prefix("0x").or(text.strip_prefix("0X")) {
        (hex, 16)
    } else if text.len() > 1 && text.starts_with('0') {
        (&text[1..], 8)
    } else {
        (text, 10)
    };
    if digits.is_empty() {
        // `0x` alone is 0; an empty part is no address.
        return (radix == 16).then_some(0);
    }
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix)
        .ok()
        .filter(|&v| v <= u64::from(u32::MAX))
}

/// The addresses `host` (as a URL writes it: an IPv6 literal in its
/// brackets or not) and `port` reach: the address an address literal
/// spells as [`ip`] reads it, else those the system's resolver gives.
pub(crate) fn addresses(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    if let Some(ip) = ip(host) {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    Ok((host, port).to_socket_addrs()?.collect())
}

/// Whether `host` (a name, or an address as [`ip`] reads it) is this
/// machine by its spelling alone: a `localhost` name (RFC 6761 section
/// 6.3, `*.localhost` too, a final `.` or not), or an address
/// [`is_local_ip`] judges local. (What a name resolves to is judged by
/// [`is_local_ip`] on [`addresses`].)
pub(crate) fn is_local(host: &str) -> bool {
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    ip(host).is_some_and(is_local_ip)
}

/// Whether `ip` is this machine: a loopback address, the unspecified one
/// (`0.0.0.0` and `::` reach this machine on Linux) or `0.0.0.0/8`, or
/// one of those as an IPv4-mapped or -compatible IPv6 address.
pub(crate) fn is_local_ip(ip: IpAddr) -> bool {
    let local_v4 = |v4: Ipv4Addr| v4.is_loopback() || v4.octets()[0] == 0;
    match ip {
        IpAddr::V4(v4) => local_v4(v4),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.is_unspecified() || v6.to_ipv4().is_some_and(local_v4)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_is_read_in_every_form_the_resolver_takes() {
        let v4 = |h: &str| match ip(h) {
            Some(IpAddr::V4(v4)) => Some(v4.to_string()),
            _ => None,
        };
        for (host, read) in [
            ("127.0.0.1", "127.0.0.1"),
            ("127.1", "127.0.0.1"),
            ("127.0.1", "127.0.0.1"),
            ("2130706433", "127.0.0.1"),
            ("0x7f.0.0.1", "127.0.0.1"),
            ("0x7F.1", "127.0.0.1"),
            ("0177.0.0.01", "127.0.0.1"),
            ("017700000001", "127.0.0.1"),
            ("0x7f000001", "127.0.0.1"),
            ("0", "0.0.0.0"),
            ("10.1.65535", "10.1.255.255"),
        ] {
            assert_eq!(v4(host).as_deref(), Some(read), "{host}");
            // As the system's resolver reads it (numeric: no lookup).
            let resolved = std::net::ToSocketAddrs::to_socket_addrs(&format!("{host}:80"))
                .map(|mut a| a.next().map(|a| a.ip().to_string()));
            assert_eq!(resolved.ok().flatten().as_deref(), Some(read), "{host}");
        }
        for host in [
            "",
            "1.2.3.4.5",
            "256.1",
            "1.256.1",
            "08",
            "1..2",
            ".1",
            "1.",
            "4294967296",
            "0x1g",
            "example.com",
            "1.2.3.256",
            "10.1.65536",
        ] {
            assert_eq!(v4(host), None, "{host}");
        }
        assert_eq!(ip("[::1]"), Some(IpAddr::V6(Ipv6Addr::LOCALHOST)));
        assert_eq!(ip("::1"), Some(IpAddr::V6(Ipv6Addr::LOCALHOST)));
    }

    #[test]
    fn this_machine_is_known_by_every_spelling() {
        for host in [
            "localhost",
            "LOCALHOST.",
            "a.localhost",
            "127.0.0.1",
            "127.1",
            "2130706433",
            "0x7f.0.0.1",
            "0.0.0.0",
            "0",
            "[::1]",
            "[0:0:0:0:0:0:0:1]",
            "[::]",
            "[::ffff:127.0.0.1]",
            "[::ffff:7f00:1]",
        ] {
            assert!(is_local(host), "{host}");
        }
        for host in [
            "example.com",
            "localhost.example.com",
            "10.0.0.1",
            "1.2.3.4",
            "[2001:db8::1]",
            "[::ffff:10.0.0.1]",
        ] {
            assert!(!is_local(host), "{host}");
        }
    }
}
