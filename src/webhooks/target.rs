//! Where a webhook may go (SSRF protection): a `callbackUrl` is checked when a request names
//! it, and every address its host resolves to is checked again when a delivery connects.
//!
//! Owns: `TargetPolicy` (the operator's `webhook_allow_hosts` and the rules), `TargetRefusal`
//! (which rule a URL breaks: a message worded for the client, naming `--webhook-allow-hosts`
//! where the operator could lift the rule, and a word for `details.reason`) and
//! `GuardedResolver`, the DNS resolver the delivery client uses, which drops every address the
//! policy refuses. Pure but for the resolver's lookups; called on listener threads (checks)
//! and the delivery thread.
//!
//! Rules, each its own refusal: at most `CALLBACK_URL_BYTES_MAX` bytes; an absolute URL; no
//! user or password; `https` (`http` only to an allowed host); not a loopback host —
//! `localhost`, a name under `.localhost` (RFC 6761: the loopback, whatever a resolver says)
//! or a loopback address —, not another special-purpose address, not a public address either
//! (a host is named by its DNS name); then the documented shape (`CALLBACK_URL_PATTERN`, also
//! in `docs/openapi.json`): a DNS host name (dotted, its last label starting with a letter),
//! an optional port, then a path and query of URL characters. At delivery every address the
//! name resolves to must be public: in none of the IANA special-purpose registries, IPv4 and
//! IPv6 (`SPECIAL_V4`, `SPECIAL_V6`: loopback, private, link-local — which holds the cloud
//! metadata service, 169.254.169.254 —, shared, documentation, benchmarking, AS112,
//! IPv4-compatible `::/96`, NAT64, 6to4, Teredo and the rest of `2001::/23`, unique local), nor
//! multicast; an IPv4 address mapped into IPv6 is judged as that address, and an IPv6 one must
//! also be global unicast (`2000::/3`).
//! A host the operator allows (`--webhook-allow-hosts`, an exact, case-insensitive host name or
//! address) may be any address and may use `http`: that is how the tests reach a receiver on
//! loopback. `localhost` is the loopback to the list too: listing `127.0.0.1` or `::1` allows
//! `localhost` (which then reaches the listed address only), and listing `localhost` allows
//! both addresses; a delivery to `localhost` never asks a resolver (`LOCALHOST_ADDRS`).
//! Invariant: a name is resolved once per connection and the connection goes to an address
//! that passed the check (the resolver hands the client only those), so a DNS answer that
//! changes between the check and the connection (rebinding) cannot reach a refused address.
//! Deliberately absent: redirects (the client follows none: a 3xx is a failed delivery); the
//! loopback equivalence for names under `.localhost` in the list (each is allowed by its own
//! name, like any other host).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::failure::{NoPublicAddress, NotResolved};
use crate::config::{CALLBACK_URL_BYTES_MAX, WEBHOOK_ALLOW_HOSTS_MAX};

/// Which rule a callback URL breaks (the message goes to the client as is; the reason is
/// `details.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub enum TargetRefusal {
    /// Longer than `CALLBACK_URL_BYTES_MAX` bytes.
    TooLong,
    /// Not an absolute URL with a host.
    NotUrl,
    /// Another scheme than `https` (or `http` to an allowed host), or not written `https://`.
    Scheme,
    /// `http` to a host the operator does not allow.
    NotHttps,
    Credentials,
    /// `localhost`, a name under `.localhost` or a loopback address, not allowed.
    Loopback,
    /// Another special-purpose address (private, link-local, shared, …), not allowed.
    PrivateAddress,
    /// A public address: webhooks name their host by its DNS name.
    Address,
    /// A host that is no DNS name of the documented shape (one label, other characters, a
    /// last label not starting with a letter).
    HostName,
    /// A port outside the documented 1–9999 (or written with a leading zero).
    Port,
    /// A path or query with characters a URL does not hold as they are, or a `#fragment`.
    Path,
}

impl TargetRefusal {
    /// The refusal's message (what `Display` says), as a static string for the API's error.
    /// Each names its rule; those an operator could lift name the flag that does.
    pub fn message(self) -> &'static str {
        match self {
            TargetRefusal::TooLong => "callbackUrl is longer than 2048 bytes",
            TargetRefusal::NotUrl => "callbackUrl is not an absolute URL: expected https://<DNS host name>[:port][/path]",
            TargetRefusal::Scheme => "callbackUrl must start with https:// (webhooks are sent over TLS)",
            TargetRefusal::NotHttps => "callbackUrl must use https: plain http is accepted only for a host the server's operator allows (xray serve --webhook-allow-hosts)",
            TargetRefusal::Credentials => "callbackUrl must not carry a user name or password",
            TargetRefusal::Loopback => "callbackUrl names a loopback host (localhost, 127.0.0.0/8, ::1), which webhooks do not reach unless the server's operator allows it (xray serve --webhook-allow-hosts localhost, or the address); then http is accepted too",
            TargetRefusal::PrivateAddress => "callbackUrl names a private or special-purpose address (private, link-local, shared, reserved, multicast, …), which webhooks do not reach unless the server's operator allows that address (xray serve --webhook-allow-hosts)",
            TargetRefusal::Address => "callbackUrl must name its host by a DNS name, not by an address, unless the server's operator allows that address (xray serve --webhook-allow-hosts)",
            TargetRefusal::HostName => "callbackUrl's host must be a DNS name of two or more labels (letters, digits, hyphens), the last starting with a letter; an internal host name needs the server's operator to allow it (xray serve --webhook-allow-hosts)",
            TargetRefusal::Port => "callbackUrl's port must be a number from 1 to 9999",
            TargetRefusal::Path => "callbackUrl's path and query must be URL characters (letters, digits and -._~!$&'()*+,;=:@%/?; percent-encode the rest), with no #fragment",
        }
    }

    /// The rule as a word: `details.reason` of the API's refusal.
    pub fn reason(self) -> &'static str {
        match self {
            TargetRefusal::TooLong => "too_long",
            TargetRefusal::NotUrl => "not_url",
            TargetRefusal::Scheme => "scheme",
            TargetRefusal::NotHttps => "not_https",
            TargetRefusal::Credentials => "credentials",
            TargetRefusal::Loopback => "loopback",
            TargetRefusal::PrivateAddress => "private_address",
            TargetRefusal::Address => "address",
            TargetRefusal::HostName => "host_name",
            TargetRefusal::Port => "port",
            TargetRefusal::Path => "path",
        }
    }

    /// Every refusal (for tests and the document's list of reasons).
    pub const ALL: [TargetRefusal; 11] = [
        TargetRefusal::TooLong,
        TargetRefusal::NotUrl,
        TargetRefusal::Scheme,
        TargetRefusal::NotHttps,
        TargetRefusal::Credentials,
        TargetRefusal::Loopback,
        TargetRefusal::PrivateAddress,
        TargetRefusal::Address,
        TargetRefusal::HostName,
        TargetRefusal::Port,
        TargetRefusal::Path,
    ];
}

/// The shape of an accepted `callbackUrl` (a host the operator allows aside), as an ECMA-262
/// (and Rust `regex`) pattern: `docs/openapi.json` states it, `is_documented_shape` checks it.
pub const CALLBACK_URL_PATTERN: &str = r"^https://([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(:[1-9][0-9]{0,3})?([/?][A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?$";

/// True when `text` has the shape of `CALLBACK_URL_PATTERN` (checked by hand: the pattern and
/// this function are compared by a test).
pub fn is_documented_shape(text: &str) -> bool {
    shape_refusal(text).is_none()
}

/// The part of `CALLBACK_URL_PATTERN` that `text` breaks first, if any.
fn shape_refusal(text: &str) -> Option<TargetRefusal> {
    let Some(rest) = text.strip_prefix("https://") else { return Some(TargetRefusal::Scheme) };
    // A `#` ends the host or port too, so that a fragment is refused as what it is.
    let host_end = rest.find(['/', '?', ':', '#']).unwrap_or(rest.len());
    let (host, mut rest) = rest.split_at(host_end);
    if !is_dns_name(host) {
        return Some(TargetRefusal::HostName);
    }
    if let Some(after) = rest.strip_prefix(':') {
        let digits = after.find(['/', '?', '#']).unwrap_or(after.len());
        let port = &after[..digits];
        if !(1..=4).contains(&port.len()) || port.starts_with('0') || !port.bytes().all(|b| b.is_ascii_digit()) {
            return Some(TargetRefusal::Port);
        }
        rest = &after[digits..];
    }
    let path_byte = |b: u8| b.is_ascii_alphanumeric() || b"._~!$&'()*+,;=:@%/?-".contains(&b);
    let path_ok = rest.is_empty() || (rest.starts_with(['/', '?']) && rest.bytes().all(path_byte));
    (!path_ok).then_some(TargetRefusal::Path)
}

/// Two or more dot-separated labels of letters, digits and inner hyphens (1–63 bytes each),
/// the last starting with a letter.
fn is_dns_name(host: &str) -> bool {
    let labels: Vec<&str> = host.split('.').collect();
    let label_ok = |l: &str, first_letter: bool| {
        let b = l.as_bytes();
        (1..=63).contains(&b.len())
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
            && (!first_letter || b[0].is_ascii_alphabetic())
    };
    let Some((tld, names)) = labels.split_last() else { return false };
    !names.is_empty() && names.iter().all(|l| label_ok(l, false)) && label_ok(tld, true)
}

/// The name of the loopback (RFC 6761 §6.3), as `normalized_host` writes it.
const LOCALHOST: &str = "localhost";

/// The addresses `localhost` stands for, IPv4 first: what a delivery to `localhost` connects
/// to (those of them the operator allowed), never a resolver's answer.
const LOCALHOST_ADDRS: [IpAddr; 2] = [IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V6(Ipv6Addr::LOCALHOST)];

/// The operator's allowed hosts and the rules above.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetPolicy {
    /// As `normalized_host` writes them (lower case, IPv6 without brackets, addresses in their
    /// canonical text).
    allow_hosts: Vec<String>,
}

impl TargetPolicy {
    /// At most `WEBHOOK_ALLOW_HOSTS_MAX` hosts (the config refuses more).
    pub fn new(allow_hosts: &[String]) -> TargetPolicy {
        let allow_hosts = allow_hosts.iter().take(WEBHOOK_ALLOW_HOSTS_MAX).map(|h| normalized_host(h)).collect();
        TargetPolicy { allow_hosts }
    }

    fn listed(&self, normalized: &str) -> bool {
        self.allow_hosts.iter().any(|h| h == normalized)
    }

    /// True when the operator allowed `host` (any address, `http` too). `localhost` and the
    /// addresses it stands for are one host to the list: either allows the other.
    pub fn allows_host(&self, host: &str) -> bool {
        let host = normalized_host(host);
        if host == LOCALHOST {
            return !self.localhost_addrs().is_empty();
        }
        let stands_for_localhost = LOCALHOST_ADDRS.iter().any(|ip| ip.to_string() == host);
        self.listed(&host) || (stands_for_localhost && self.listed(LOCALHOST))
    }

    /// The loopback addresses a delivery to `localhost` may use: both when the operator listed
    /// `localhost`, else those of them the operator listed.
    fn localhost_addrs(&self) -> Vec<IpAddr> {
        let whole = self.listed(LOCALHOST);
        LOCALHOST_ADDRS.into_iter().filter(|ip| whole || self.listed(&ip.to_string())).collect()
    }

    /// Checks a `callbackUrl`; returns it parsed, or the first rule it breaks.
    pub fn check_url(&self, text: &str) -> Result<reqwest::Url, TargetRefusal> {
        if text.len() > CALLBACK_URL_BYTES_MAX {
            return Err(TargetRefusal::TooLong);
        }
        let url = reqwest::Url::parse(text).map_err(|_| TargetRefusal::NotUrl)?;
        if !matches!(url.scheme(), "https" | "http") {
            return Err(TargetRefusal::Scheme);
        }
        let host = url.host_str().filter(|h| !h.is_empty()).ok_or(TargetRefusal::NotUrl)?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(TargetRefusal::Credentials);
        }
        if self.allows_host(host) {
            return Ok(url);
        }
        // The host's class first: for a loopback or private host, the flag that allows it is
        // what the client needs to hear, not the scheme.
        if let Some(refusal) = host_refusal(&url) {
            return Err(refusal);
        }
        if url.scheme() == "http" {
            return Err(TargetRefusal::NotHttps);
        }
        match shape_refusal(text) {
            Some(refusal) => Err(refusal),
            None => Ok(url),
        }
    }

    /// The addresses of `resolved` a connection to `host` may use: for `localhost`, the
    /// loopback addresses the operator allowed; for another allowed host, any; else the
    /// public ones.
    pub fn usable(&self, host: &str, resolved: impl Iterator<Item = SocketAddr>) -> Vec<SocketAddr> {
        if normalized_host(host) == LOCALHOST {
            let allowed = self.localhost_addrs();
            return resolved.filter(|addr| allowed.contains(&addr.ip())).collect();
        }
        let allowed = self.allows_host(host);
        resolved.filter(|addr| allowed || is_public(addr.ip())).collect()
    }
}

/// Lower case, without IPv6 brackets or a trailing dot; an address in its canonical text
/// (`0:0::1` is `::1`), so the list and a URL's host compare as the same host.
fn normalized_host(host: &str) -> String {
    let bare = host.trim().trim_start_matches('[').trim_end_matches(']').trim_end_matches('.');
    match bare.parse::<IpAddr>() {
        Ok(ip) => ip.to_string(),
        Err(_) => bare.to_ascii_lowercase(),
    }
}

/// The URL's host when it is an IP literal.
fn literal_ip(url: &reqwest::Url) -> Option<IpAddr> {
    match url.host()? {
        url::Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
        url::Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
        url::Host::Domain(_) => None,
    }
}

/// The refusal a host earns by what it is, whatever the URL's shape: loopback (`localhost`,
/// a name under `.localhost`, a loopback address), another special-purpose address, or a
/// public address (named by its address, not its name).
fn host_refusal(url: &reqwest::Url) -> Option<TargetRefusal> {
    match literal_ip(url) {
        Some(ip) if is_loopback(ip) => Some(TargetRefusal::Loopback),
        Some(ip) if !is_public(ip) => Some(TargetRefusal::PrivateAddress),
        Some(_) => Some(TargetRefusal::Address),
        None => url.host_str().filter(|h| is_loopback_name(h)).map(|_| TargetRefusal::Loopback),
    }
}

/// `localhost` and the names under it (RFC 6761 §6.3: they are the loopback).
fn is_loopback_name(host: &str) -> bool {
    let host = normalized_host(host);
    host == LOCALHOST || host.ends_with(".localhost")
}

/// 127.0.0.0/8 and `::1`, an IPv4 one mapped into IPv6 too.
fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// True for an address on the public internet: in none of the IANA special-purpose address
/// registries (IPv4 and IPv6, `SPECIAL_V4` / `SPECIAL_V6`), nor multicast. An IPv4 address
/// mapped into IPv6 (`::ffff:a.b.c.d`, the same host) is judged as that IPv4 address; every
/// other embedding (IPv4-compatible `::/96`, NAT64, 6to4, Teredo) is refused whole.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

/// The IANA IPv4 Special-Purpose Address Registry (every entry, globally reachable or not: a
/// webhook has no business with any of them), plus multicast (224.0.0.0/4).
const SPECIAL_V4: &[(u32, u8)] = &[
    (0x0000_0000, 8),  // 0.0.0.0/8 "this network"
    (0x0A00_0000, 8),  // 10.0.0.0/8 private
    (0x6440_0000, 10), // 100.64.0.0/10 shared address space (carrier-grade NAT)
    (0x7F00_0000, 8),  // 127.0.0.0/8 loopback
    (0xA9FE_0000, 16), // 169.254.0.0/16 link local (cloud metadata: 169.254.169.254)
    (0xAC10_0000, 12), // 172.16.0.0/12 private
    (0xC000_0000, 24), // 192.0.0.0/24 IETF protocol assignments
    (0xC000_0200, 24), // 192.0.2.0/24 documentation (TEST-NET-1)
    (0xC01F_C400, 24), // 192.31.196.0/24 AS112-v4
    (0xC034_C100, 24), // 192.52.193.0/24 AMT
    (0xC058_6300, 24), // 192.88.99.0/24 deprecated 6to4 relay anycast
    (0xC0A8_0000, 16), // 192.168.0.0/16 private
    (0xC0AF_3000, 24), // 192.175.48.0/24 direct delegation AS112 service
    (0xC612_0000, 15), // 198.18.0.0/15 benchmarking
    (0xC633_6400, 24), // 198.51.100.0/24 documentation (TEST-NET-2)
    (0xCB00_7100, 24), // 203.0.113.0/24 documentation (TEST-NET-3)
    (0xE000_0000, 4),  // 224.0.0.0/4 multicast
    (0xF000_0000, 4),  // 240.0.0.0/4 reserved, 255.255.255.255/32 limited broadcast
];

/// The IANA IPv6 Special-Purpose Address Registry (every entry), plus the IPv4-compatible
/// block `::/96` (deprecated, still routed to IPv4 by some stacks), site-local `fec0::/10`
/// (deprecated) and multicast `ff00::/8`.
const SPECIAL_V6: &[(u128, u8)] = &[
    (0, 96),                                         // ::/96 IPv4-compatible (::1 and :: inside)
    (0x0000_0000_0000_0000_0000_ffff_0000_0000, 96), // ::ffff:0:0/96 IPv4-mapped (judged as IPv4 above)
    (0x0064_ff9b_0000_0000_0000_0000_0000_0000, 96), // 64:ff9b::/96 IPv4/IPv6 translation
    (0x0064_ff9b_0001_0000_0000_0000_0000_0000, 48), // 64:ff9b:1::/48 local-use translation
    (0x0100_0000_0000_0000_0000_0000_0000_0000, 64), // 100::/64 discard-only
    (0x0100_0000_0000_0001_0000_0000_0000_0000, 64), // 100:0:0:1::/64 dummy prefix
    (0x2001_0000_0000_0000_0000_0000_0000_0000, 23), // 2001::/23 IETF protocol assignments (Teredo 2001::/32 inside)
    (0x2001_0db8_0000_0000_0000_0000_0000_0000, 32), // 2001:db8::/32 documentation
    (0x2002_0000_0000_0000_0000_0000_0000_0000, 16), // 2002::/16 6to4
    (0x2620_004f_8000_0000_0000_0000_0000_0000, 48), // 2620:4f:8000::/48 direct delegation AS112
    (0x3fff_0000_0000_0000_0000_0000_0000_0000, 20), // 3fff::/20 documentation
    (0x5f00_0000_0000_0000_0000_0000_0000_0000, 16), // 5f00::/16 segment routing (SRv6) SIDs
    (0xfc00_0000_0000_0000_0000_0000_0000_0000, 7),  // fc00::/7 unique local
    (0xfe80_0000_0000_0000_0000_0000_0000_0000, 10), // fe80::/10 link-local
    (0xfec0_0000_0000_0000_0000_0000_0000_0000, 10), // fec0::/10 site-local (deprecated)
    (0xff00_0000_0000_0000_0000_0000_0000_0000, 8),  // ff00::/8 multicast
];

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let bits = u32::from(ip);
    !SPECIAL_V4.iter().any(|&(net, len)| bits >> (32 - u32::from(len)) == net >> (32 - u32::from(len)))
}

/// Only global unicast space (`2000::/3`, the one block IANA allocates to registries) can be
/// public: the rest of the IPv6 space is reserved or unassigned, and a network that routes
/// some of it does so internally.
const GLOBAL_UNICAST_V6: (u128, u8) = (0x2000_0000_0000_0000_0000_0000_0000_0000, 3);

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let bits = u128::from(ip);
    let within = |&(net, len): &(u128, u8)| bits >> (128 - u32::from(len)) == net >> (128 - u32::from(len));
    within(&GLOBAL_UNICAST_V6) && !SPECIAL_V6.iter().any(within)
}

/// The delivery client's DNS resolver: the system's answers (for `localhost`, its loopback
/// addresses without asking), less every address the policy refuses for the host; a name
/// left with none fails to resolve (a failed attempt). The
/// operator's own proxy (`proxy_host`), which may well sit on a private network, is resolved
/// as is: with a proxy, it is the only name the client connects to (targets are checked
/// before the request is handed to it).
pub struct GuardedResolver {
    pub policy: TargetPolicy,
    pub proxy_host: Option<String>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let (policy, proxy_host) = (self.policy.clone(), self.proxy_host.clone());
        Box::pin(async move {
            let host = name.as_str().to_owned();
            // Typed errors, so the attempt's reason is a word (`failure::classify`), never the
            // resolver's own text.
            // `localhost` is the loopback whatever a resolver (or a rebinding DNS) says.
            let resolved: Vec<SocketAddr> = if normalized_host(&host) == LOCALHOST {
                LOCALHOST_ADDRS.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect()
            } else {
                match tokio::net::lookup_host((host.as_str(), 0)).await {
                    Ok(resolved) => resolved.collect(),
                    Err(_) => return Err(Box::new(NotResolved) as _),
                }
            };
            let usable = match proxy_host.as_deref() {
                Some(proxy) if proxy.eq_ignore_ascii_case(&host) => resolved,
                _ => policy.usable(&host, resolved.into_iter()),
            };
            if usable.is_empty() {
                return Err(Box::new(NoPublicAddress) as _);
            }
            Ok(Box::new(usable.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_to_public_hosts_only_and_each_refusal_names_its_rule() {
        let policy = TargetPolicy::default();
        for ok in ["https://hooks.example.com/x?y=1", "https://Hooks.Example.COM:8443/a/b?c=d&e=%20", "https://a.b"] {
            assert!(policy.check_url(ok).is_ok(), "{ok}");
        }
        use TargetRefusal::*;
        let cases = [
            ("http://hooks.example.com/x", NotHttps),
            ("ftp://hooks.example.com/x", Scheme),
            ("mailto:hooks@example.com", Scheme),
            ("HTTPS://hooks.example.com/x", Scheme),
            ("hooks.example.com/x", NotUrl),
            ("not a url", NotUrl),
            ("https://", NotUrl),
            ("https://Xn--0AaaA--aAAAa.a", NotUrl),
            ("https://user:pw@hooks.example.com/", Credentials),
            ("https://8.8.8.8/hook", Address),
            ("http://8.8.8.8/hook", Address),
            ("https://[2606:4700::1111]:8443/h", Address),
            ("https://localhost/hook", Loopback),
            ("https://LocalHost:8443/hook", Loopback),
            ("http://localhost:9000/hook", Loopback),
            ("https://localhost./hook", Loopback),
            ("https://app.localhost/hook", Loopback),
            ("https://127.0.0.1/", Loopback),
            ("http://127.0.0.1:9/", Loopback),
            ("https://127.1/", Loopback),
            ("https://2130706433/", Loopback),
            ("https://0x7f000001/", Loopback),
            ("https://[::1]/", Loopback),
            ("https://[::ffff:127.0.0.1]/", Loopback),
            ("https://10.1.2.3/", PrivateAddress),
            ("http://10.1.2.3/", PrivateAddress),
            ("https://172.16.0.1/", PrivateAddress),
            ("https://192.168.1.1/", PrivateAddress),
            ("https://169.254.169.254/latest/meta-data/", PrivateAddress),
            ("https://100.100.100.200/", PrivateAddress),
            ("https://0.0.0.0/", PrivateAddress),
            ("https://[::ffff:169.254.169.254]/", PrivateAddress),
            ("https://[fd00::1]/", PrivateAddress),
            ("https://[fe80::1]/", PrivateAddress),
            ("https://[64:ff9b::a9fe:a9fe]/", PrivateAddress),
            ("https://[::a9fe:a9fe]/", PrivateAddress),
            ("https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", PrivateAddress),
            ("https://receiver/hook", HostName),
            ("https://hooks.example.1b/", HostName),
            ("https://hooks.exa_mple.com/", HostName),
            ("https://hooks.example.com:0/", Port),
            ("https://hooks.example.com:65535/", Port),
            ("https://hooks.example.com/a b", Path),
            ("https://hooks.example.com#frag", Path),
            ("https://hooks.example.com:8443#frag", Path),
        ];
        for (url, why) in cases {
            assert_eq!(policy.check_url(url).map(|_| ()), Err(why), "{url}");
        }
        let long = format!("https://hooks.example.com/{}", "a".repeat(CALLBACK_URL_BYTES_MAX));
        assert_eq!(policy.check_url(&long).map(|_| ()), Err(TooLong));
    }

    #[test]
    fn each_message_says_its_rule_and_names_the_flag_where_the_operator_can_lift_it() {
        let flag = "--webhook-allow-hosts";
        let liftable = [
            TargetRefusal::NotHttps,
            TargetRefusal::Loopback,
            TargetRefusal::PrivateAddress,
            TargetRefusal::Address,
            TargetRefusal::HostName,
        ];
        for refusal in TargetRefusal::ALL {
            let message = refusal.message();
            assert!(message.starts_with("callbackUrl"), "{message}");
            assert_eq!(message.contains(flag), liftable.contains(&refusal), "{refusal:?}: {message}");
            assert_eq!(refusal.to_string(), message);
        }
        let said = |r: TargetRefusal, words: &[&str]| {
            for w in words {
                assert!(r.message().contains(w), "{r:?} should say {w:?}: {}", r.message());
            }
        };
        said(TargetRefusal::TooLong, &[&CALLBACK_URL_BYTES_MAX.to_string(), "bytes"]);
        said(TargetRefusal::NotUrl, &["not an absolute URL"]);
        said(TargetRefusal::Scheme, &["https://"]);
        said(TargetRefusal::NotHttps, &["must use https", "http"]);
        said(TargetRefusal::Credentials, &["user name or password"]);
        said(
            TargetRefusal::Loopback,
            &["loopback", "localhost", "127.0.0.0/8", "::1", "--webhook-allow-hosts localhost"],
        );
        said(TargetRefusal::PrivateAddress, &["private", "link-local"]);
        said(TargetRefusal::Address, &["DNS name, not by an address"]);
        said(TargetRefusal::HostName, &["DNS name", "two or more labels"]);
        said(TargetRefusal::Port, &["port", "1 to 9999"]);
        said(TargetRefusal::Path, &["path and query", "#fragment"]);
        let reasons: std::collections::BTreeSet<&str> = TargetRefusal::ALL.iter().map(|r| r.reason()).collect();
        assert_eq!(reasons.len(), TargetRefusal::ALL.len(), "one word per rule");
    }

    #[test]
    fn the_hand_check_is_the_documented_pattern() {
        use proptest::prelude::*;
        let pattern = regex::Regex::new(CALLBACK_URL_PATTERN).unwrap();
        let doc: serde_json::Value =
            serde_json::from_str(include_str!("../../docs/openapi.json")).expect("docs/openapi.json");
        let documented = &doc["components"]["schemas"]["CallbackUrl"]["pattern"];
        assert_eq!(documented.as_str(), Some(CALLBACK_URL_PATTERN), "the document states the same pattern");
        for text in [
            "https://a.b",
            "https://a-1.example.com:443/x?y=z",
            "https://a.1b",
            "https://-a.b",
            "https://a..b",
            "https://a.b:65535",
            "https://a.b/%zz",
            "http://a.b",
            "https://a.b?",
            "https://a.b#x",
            "https://a.b:1#x",
            "https://a.b:",
            "https://xn--a.example",
            "https://1.2.3.4",
        ] {
            assert_eq!(is_documented_shape(text), pattern.is_match(text), "{text}");
        }
        let strategy = proptest::string::string_regex("https://[a-z0-9.:/?%-]{0,20}").unwrap();
        proptest!(ProptestConfig::with_cases(2_000), |(text in strategy)| {
            prop_assert_eq!(is_documented_shape(&text), pattern.is_match(&text), "{}", text);
        });
        proptest!(ProptestConfig::with_cases(500), |(text in proptest::string::string_regex(CALLBACK_URL_PATTERN.trim_start_matches('^').trim_end_matches('$')).unwrap())| {
            // An `xn--` label (any case) must also be valid punycode, which no pattern can say: the
            // URL parser refuses an invalid one (documented beside the pattern).
            // A name under `.localhost` is the loopback (refused as such), whatever its shape.
            let lower = text.to_ascii_lowercase();
            prop_assume!(text.len() <= CALLBACK_URL_BYTES_MAX && !lower.contains("xn--") && !lower.contains("localhost"));
            prop_assert!(TargetPolicy::default().check_url(&text).is_ok(), "{}", text);
        });
    }

    #[test]
    fn an_allowed_host_may_be_any_address_over_http_too() {
        let policy =
            TargetPolicy::new(&["127.0.0.1".into(), "Receiver.Local".into(), "[::1]".into(), "10.0.0.7".into()]);
        for ok in [
            "http://127.0.0.1:9000/hook",
            "https://127.0.0.1/",
            "http://receiver.local/h",
            "http://receiver.local./h",
            "http://[::1]:1/",
            "http://[0:0:0:0:0:0:0:1]:1/",
            "http://10.0.0.7/x y",
        ] {
            assert!(policy.check_url(ok).is_ok(), "{ok}");
        }
        assert_eq!(policy.check_url("http://127.0.0.2/").map(|_| ()), Err(TargetRefusal::Loopback));
        assert_eq!(policy.check_url("https://127.0.0.2/").map(|_| ()), Err(TargetRefusal::Loopback));
        assert_eq!(policy.check_url("http://10.0.0.8/").map(|_| ()), Err(TargetRefusal::PrivateAddress));
        assert_eq!(policy.check_url("http://user@127.0.0.1/").map(|_| ()), Err(TargetRefusal::Credentials));
        assert_eq!(policy.check_url("ftp://127.0.0.1/").map(|_| ()), Err(TargetRefusal::Scheme));
        // An address listed in another spelling is the same host.
        assert!(TargetPolicy::new(&["0:0::1".into()]).check_url("http://[::1]/").is_ok());
    }

    #[test]
    fn localhost_is_the_loopback_addresses_it_stands_for() {
        let v4 = |port: u16| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
        let v6 = |port: u16| SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port);
        let elsewhere: SocketAddr = "93.184.215.14:0".parse().unwrap();
        let resolved = || [v4(0), v6(0), elsewhere].into_iter();
        // Whatever allows 127.0.0.1 allows localhost — http included — which then reaches
        // 127.0.0.1 only; and the other way round.
        let v4_only = TargetPolicy::new(&["127.0.0.1".into()]);
        for ok in ["http://localhost:9000/hook", "https://LOCALHOST/hook", "http://localhost./h"] {
            assert!(v4_only.check_url(ok).is_ok(), "{ok}");
        }
        assert_eq!(v4_only.usable("localhost", resolved()), [v4(0)]);
        assert_eq!(v4_only.check_url("http://[::1]/").map(|_| ()), Err(TargetRefusal::Loopback));
        let v6_only = TargetPolicy::new(&["::1".into()]);
        assert!(v6_only.check_url("http://localhost:1/").is_ok());
        assert_eq!(v6_only.usable("localhost", resolved()), [v6(0)]);
        let named = TargetPolicy::new(&["LocalHost".into()]);
        for ok in ["http://localhost:1/", "http://127.0.0.1:1/", "http://[::1]:1/"] {
            assert!(named.check_url(ok).is_ok(), "{ok}");
        }
        assert_eq!(named.usable("localhost", resolved()), [v4(0), v6(0)], "never an address elsewhere");
        assert_eq!(named.check_url("http://127.0.0.2/").map(|_| ()), Err(TargetRefusal::Loopback));
        // Names under .localhost are loopback too, allowed by their own name only.
        assert_eq!(named.check_url("http://app.localhost/").map(|_| ()), Err(TargetRefusal::Loopback));
        assert!(TargetPolicy::new(&["app.localhost".into()]).check_url("http://app.localhost/").is_ok());
        // Not allowed: refused at the check, and no address at delivery.
        let strict = TargetPolicy::default();
        assert_eq!(strict.check_url("https://localhost/").map(|_| ()), Err(TargetRefusal::Loopback));
        assert!(strict.usable("localhost", resolved()).is_empty());
        assert!(!strict.allows_host("localhost") && !strict.allows_host("127.0.0.1"));
        // Another host is not loopback to the list.
        assert!(!TargetPolicy::new(&["hooks.internal".into()]).allows_host("localhost"));
    }

    #[test]
    fn the_resolver_answers_localhost_without_asking_and_only_with_allowed_addresses() {
        use reqwest::dns::Resolve;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let resolve = |allow: &[&str]| {
            let policy = TargetPolicy::new(&allow.iter().map(|h| h.to_string()).collect::<Vec<_>>());
            let resolver = GuardedResolver { policy, proxy_host: None };
            let name: reqwest::dns::Name = "localhost".parse().unwrap();
            runtime.block_on(resolver.resolve(name)).map(|addrs| addrs.map(|a| a.ip().to_string()).collect::<Vec<_>>())
        };
        assert_eq!(resolve(&["127.0.0.1"]).unwrap(), ["127.0.0.1"]);
        assert_eq!(resolve(&["localhost"]).unwrap(), ["127.0.0.1", "::1"]);
        let refused = resolve(&[]).expect_err("no usable address");
        assert!(refused.is::<NoPublicAddress>(), "{refused}");
    }

    #[test]
    fn every_special_purpose_block_is_refused_and_public_space_is_not() {
        let refused = [
            "0.1.2.3",
            "10.9.8.7",
            "100.64.0.1",
            "100.127.255.254",
            "127.0.0.1",
            "169.254.169.254",
            "172.31.0.1",
            "192.0.0.9",
            "192.0.2.1",
            "192.31.196.1",
            "192.52.193.1",
            "192.88.99.1",
            "192.168.0.1",
            "192.175.48.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.1",
            "203.0.113.1",
            "224.0.0.1",
            "239.1.1.1",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::a9fe:a9fe",
            "::7f00:1",
            "::ffff:10.0.0.1",
            "64:ff9b::808:808",
            "64:ff9b:1::1",
            "100::1",
            "100:0:0:1::1",
            "2001::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "2001:2::1",
            "2001:10::1",
            "2001:db8::1",
            "2002:a9fe:a9fe::1",
            "2620:4f:8000::1",
            "3fff::1",
            "5f00::1",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            // Outside global unicast 2000::/3: reserved or unassigned.
            "4000::1",
            "8000::1",
            "1000::1",
            "e000::1",
        ];
        for text in refused {
            assert!(!is_public(text.parse().unwrap()), "{text} is special-purpose");
        }
        let public = [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.215.14",
            "100.63.255.255",
            "100.128.0.1",
            "172.32.0.1",
            "192.0.1.1",
            "198.17.255.255",
            "198.20.0.1",
            "223.255.255.255",
            "::ffff:8.8.8.8",
            "2606:4700::1111",
            "2001:4860:4860::8888",
            "2001:200::1",
            "2620:4f:8001::1",
            "2a00:1450::1",
            "2c0f:fb50::1",
        ];
        for text in public {
            assert!(is_public(text.parse().unwrap()), "{text} is public");
        }
    }

    #[test]
    fn resolved_addresses_are_filtered_unless_the_host_is_allowed() {
        let addrs = || {
            ["127.0.0.1:0", "10.0.0.1:0", "93.184.215.14:0", "[fe80::1]:0", "[2606:4700::1111]:0"]
                .into_iter()
                .map(|a| a.parse::<SocketAddr>().unwrap())
        };
        let policy = TargetPolicy::new(&["trusted.example".into()]);
        let public: Vec<String> = policy.usable("rebind.example", addrs()).iter().map(|a| a.ip().to_string()).collect();
        assert_eq!(public, ["93.184.215.14", "2606:4700::1111"]);
        assert_eq!(policy.usable("TRUSTED.example", addrs()).len(), 5);
    }
}
