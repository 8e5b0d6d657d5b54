//! Which targets `/api/tools/open-url` may fetch: only public addresses over
//! http(s). Host spellings are parsed the WHATWG way (so `2130706433`,
//! `0x7f.1`, `0177.0.0.1` and `127.1` are all 127.0.0.1), names are resolved
//! and every resolved address must be public; the fetch then connects to the
//! address that was checked, and each redirect is checked again.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use url::{Host, Url};

/// Why a target was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refusal {
    #[error("only http and https URLs can be opened (got {0}:)")]
    Scheme(String),
    #[error("the URL has no host")]
    NoHost,
    #[error("{0} is not a public address")]
    NotPublic(IpAddr),
    #[error("{0} names this machine")]
    Localhost(String),
    #[error("{0} does not resolve")]
    Unresolved(String),
}

/// A target that passed the checks: connect to `addr` for `url`'s host.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The host name to pin (None for an IP literal).
    pub domain: Option<String>,
    pub addr: SocketAddr,
}

/// Checks `url`; `allow` lists test-only exceptions (exact socket addresses).
pub async fn check(url: &Url, allow: &[SocketAddr]) -> Result<Checked, Refusal> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Refusal::Scheme(url.scheme().to_owned()));
    }
    let port = url.port_or_known_default().unwrap_or(80);
    let permitted = |ip: IpAddr| is_public(ip) || allow.contains(&SocketAddr::new(ip, port));
    match url.host() {
        None => Err(Refusal::NoHost),
        Some(Host::Ipv4(ip)) => literal(IpAddr::V4(ip), port, permitted),
        Some(Host::Ipv6(ip)) => literal(IpAddr::V6(ip), port, permitted),
        Some(Host::Domain(name)) => {
            let lower = name.trim_end_matches('.').to_ascii_lowercase();
            if lower == "localhost" || lower.ends_with(".localhost") {
                return Err(Refusal::Localhost(name.to_owned()));
            }
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((name, port))
                .await
                .map_err(|_| Refusal::Unresolved(name.to_owned()))?
                .collect();
            let first = *addrs.first().ok_or_else(|| Refusal::Unresolved(name.to_owned()))?;
            if let Some(bad) = addrs.iter().find(|a| !permitted(a.ip())) {
                return Err(Refusal::NotPublic(bad.ip()));
            }
            Ok(Checked { domain: Some(name.to_owned()), addr: first })
        }
    }
}

fn literal(ip: IpAddr, port: u16, permitted: impl Fn(IpAddr) -> bool) -> Result<Checked, Refusal> {
    if permitted(ip) {
        Ok(Checked { domain: None, addr: SocketAddr::new(ip, port) })
    } else {
        Err(Refusal::NotPublic(ip))
    }
}

/// Whether `ip` is a globally routable unicast address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0                                   // "this network", unspecified
        || a == 10                             // private
        || a == 127                            // loopback
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 169 && b == 254)              // link-local
        || (a == 172 && (16..32).contains(&b)) // private
        || (a == 192 && b == 0 && c == 0)      // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2)      // documentation
        || (a == 192 && b == 88 && c == 99)    // 6to4 relay anycast
        || (a == 192 && b == 168)              // private
        || (a == 198 && (b == 18 || b == 19))  // benchmarking
        || (a == 198 && b == 51 && c == 100)   // documentation
        || (a == 203 && b == 0 && c == 113)    // documentation
        || a >= 224) // multicast, reserved, broadcast
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00           // unique local
        || (s[0] & 0xffc0) == 0xfe80           // link-local
        || (s[0] & 0xffc0) == 0xfec0           // site-local (deprecated)
        || (s[0] == 0x2001 && s[1] == 0x0db8)  // documentation
        || s[0] == 0x2002                      // 6to4: embeds an IPv4 address
        || (s[0] == 0x0064 && s[1] == 0xff9b)  // NAT64: embeds an IPv4 address
        || (s[0] == 0x2001 && s[1] < 0x0200)   // IETF protocol assignments (Teredo, ORCHID...)
        || s[..5] == [0, 0, 0, 0, 0]) // IPv4-mapped, IPv4-compatible and the rest of ::/80
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn verdict(raw: &str) -> Result<Checked, Refusal> {
        check(&Url::parse(raw).expect("parses"), &[]).await
    }

    #[tokio::test]
    async fn refuses_every_spelling_of_loopback_and_private() {
        for raw in [
            "http://127.0.0.1/",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0x7f.0.0.1/",
            "http://0177.0.0.1/",
            "http://017700000001/",
            "http://0/",
            "http://0.0.0.0/",
            "http://[::1]/",
            "http://[::]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[0:0:0:0:0:ffff:a00:1]/",
            "http://10.0.0.1/",
            "http://172.16.5.4/",
            "http://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data",
            "http://100.64.0.1/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[64:ff9b::7f00:1]/",
            "http://[2002:7f00:1::]/",
            "http://localhost/",
            "http://LOCALHOST./",
            "http://app.localhost/",
            "http://224.0.0.1/",
            "http://255.255.255.255/",
            "https://127.0.0.1:8443/",
        ] {
            assert!(verdict(raw).await.is_err(), "{raw} must be refused");
        }
    }

    #[tokio::test]
    async fn refuses_other_schemes() {
        for raw in ["file:///etc/passwd", "ftp://example.com/", "gopher://1.1.1.1/", "data:text/html,hi"] {
            assert!(matches!(verdict(raw).await, Err(Refusal::Scheme(_)) | Err(Refusal::NoHost)), "{raw}");
        }
    }

    #[tokio::test]
    async fn accepts_public_literals_and_the_test_allow_list() {
        assert!(verdict("http://93.184.216.34/").await.is_ok());
        assert!(verdict("http://[2606:4700::1111]/").await.is_ok());
        let url = Url::parse("http://127.0.0.1:9/").unwrap();
        assert!(check(&url, &["127.0.0.1:9".parse().unwrap()]).await.is_ok());
        assert!(check(&url, &["127.0.0.1:10".parse().unwrap()]).await.is_err());
    }
}
