//! Where a webhook may go (SSRF protection): a `callbackUrl` is checked when a request names
//! it, and every address its host resolves to is checked again when a delivery connects.
//!
//! Owns: `TargetPolicy` (the operator's `webhook_allow_hosts` and the rules), `TargetRefusal`
//! (why a URL is refused, worded for the client) and `GuardedResolver`, the DNS resolver the
//! delivery client uses, which drops every address the policy refuses. Pure but for the
//! resolver's lookups; called on listener threads (checks) and the delivery thread.
//!
//! Rules: at most `CALLBACK_URL_BYTES_MAX` bytes, of the documented shape (`CALLBACK_URL_PATTERN`,
//! also in `docs/openapi.json`): `https`, a DNS host name (dotted, its last label starting
//! with a letter — never an address), an optional port, then a path and query of URL
//! characters; no user or password. At delivery every address the name resolves to must be
//! public: in none of the IANA special-purpose registries, IPv4 and IPv6 (`SPECIAL_V4`,
//! `SPECIAL_V6`: loopback, private, link-local — which holds the cloud metadata service,
//! 169.254.169.254 —, shared, documentation, benchmarking, AS112, IPv4-compatible `::/96`,
//! NAT64, 6to4, Teredo and the rest of `2001::/23`, unique local), nor multicast; an IPv4
//! address mapped into IPv6 is judged as that address, and an IPv6 one must also be global
//! unicast (`2000::/3`). A host the operator allows
//! (`--webhook-allow-hosts`, an exact, case-insensitive host name or address) may be any
//! address and may use `http`: that is how the tests reach a receiver on loopback.
//! Invariant: a name is resolved once per connection and the connection goes to an address
//! that passed the check (the resolver hands the client only those), so a DNS answer that
//! changes between the check and the connection (rebinding) cannot reach a refused address.
//! Deliberately absent: redirects (the client follows none: a 3xx is a failed delivery).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::failure::{NoPublicAddress, NotResolved};
use crate::config::{CALLBACK_URL_BYTES_MAX, WEBHOOK_ALLOW_HOSTS_MAX};

/// Why a callback URL is refused (the message goes to the client as is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub enum TargetRefusal {
    Malformed,
    NotHttps,
    Credentials,
    NotPublic,
}

impl TargetRefusal {
    /// The refusal's message (what `Display` says), as a static string for the API's error.
    pub fn message(self) -> &'static str {
        match self {
            TargetRefusal::Malformed => "callbackUrl must be https://<DNS host name>[:port][/path], at most 2048 bytes",
            TargetRefusal::NotHttps => "callbackUrl must use https",
            TargetRefusal::Credentials => "callbackUrl must not carry a user name or password",
            TargetRefusal::NotPublic => "callbackUrl must name its host by a DNS name, not by an address",
        }
    }
}

/// The shape of an accepted `callbackUrl` (a host the operator allows aside), as an ECMA-262
/// (and Rust `regex`) pattern: `docs/openapi.json` states it, `is_documented_shape` checks it.
pub const CALLBACK_URL_PATTERN: &str = r"^https://([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(:[1-9][0-9]{0,3})?([/?][A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?$";

/// True when `text` has the shape of `CALLBACK_URL_PATTERN` (checked by hand: the pattern and
/// this function are compared by a test).
pub fn is_documented_shape(text: &str) -> bool {
    let Some(rest) = text.strip_prefix("https://") else { return false };
    let host_end = rest.find(['/', '?', ':']).unwrap_or(rest.len());
    let (host, mut rest) = rest.split_at(host_end);
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
    if names.is_empty() || !names.iter().all(|l| label_ok(l, false)) || !label_ok(tld, true) {
        return false;
    }
    if let Some(after) = rest.strip_prefix(':') {
        let digits = after.find(['/', '?']).unwrap_or(after.len());
        let port = &after[..digits];
        if !(1..=4).contains(&port.len()) || port.starts_with('0') || !port.bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
        rest = &after[digits..];
    }
    let path_byte = |b: u8| b.is_ascii_alphanumeric() || b"._~!$&'()*+,;=:@%/?-".contains(&b);
    rest.is_empty() || (rest.starts_with(['/', '?']) && rest.bytes().all(path_byte))
}

/// The operator's allowed hosts and the rules above.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetPolicy {
    /// Lower-cased host names or addresses (as written in a URL, IPv6 without brackets).
    allow_hosts: Vec<String>,
}

impl TargetPolicy {
    /// At most `WEBHOOK_ALLOW_HOSTS_MAX` hosts (the config refuses more).
    pub fn new(allow_hosts: &[String]) -> TargetPolicy {
        let allow_hosts = allow_hosts.iter().take(WEBHOOK_ALLOW_HOSTS_MAX).map(|h| normalized_host(h)).collect();
        TargetPolicy { allow_hosts }
    }

    /// True when the operator allowed `host` (any address, `http` too).
    pub fn allows_host(&self, host: &str) -> bool {
        let host = normalized_host(host);
        self.allow_hosts.contains(&host)
    }

    /// Checks a `callbackUrl`; returns it parsed.
    pub fn check_url(&self, text: &str) -> Result<reqwest::Url, TargetRefusal> {
        if text.len() > CALLBACK_URL_BYTES_MAX {
            return Err(TargetRefusal::Malformed);
        }
        let url = reqwest::Url::parse(text).map_err(|_| TargetRefusal::Malformed)?;
        let host = url.host_str().filter(|h| !h.is_empty()).ok_or(TargetRefusal::Malformed)?.to_owned();
        if !url.username().is_empty() || url.password().is_some() {
            return Err(TargetRefusal::Credentials);
        }
        if self.allows_host(&host) {
            return match url.scheme() {
                "https" | "http" => Ok(url),
                _ => Err(TargetRefusal::Malformed),
            };
        }
        match url.scheme() {
            "https" => {}
            "http" => return Err(TargetRefusal::NotHttps),
            _ => return Err(TargetRefusal::Malformed),
        }
        if literal_ip(&url).is_some() {
            return Err(TargetRefusal::NotPublic);
        }
        if !is_documented_shape(text) {
            return Err(TargetRefusal::Malformed);
        }
        Ok(url)
    }

    /// The addresses of `resolved` a connection to `host` may use.
    pub fn usable(&self, host: &str, resolved: impl Iterator<Item = SocketAddr>) -> Vec<SocketAddr> {
        let allowed = self.allows_host(host);
        resolved.filter(|addr| allowed || is_public(addr.ip())).collect()
    }
}

fn normalized_host(host: &str) -> String {
    host.trim().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase()
}

/// The URL's host when it is an IP literal.
fn literal_ip(url: &reqwest::Url) -> Option<IpAddr> {
    match url.host()? {
        url::Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
        url::Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
        url::Host::Domain(_) => None,
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

/// The delivery client's DNS resolver: the system's answers, less every address the policy
/// refuses for the host; a name left with none fails to resolve (a failed attempt). The
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
            let resolved = match tokio::net::lookup_host((host.as_str(), 0)).await {
                Ok(resolved) => resolved,
                Err(_) => return Err(Box::new(NotResolved) as _),
            };
            let usable = match proxy_host.as_deref() {
                Some(proxy) if proxy.eq_ignore_ascii_case(&host) => resolved.collect(),
                _ => policy.usable(&host, resolved),
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
    fn https_to_public_hosts_only() {
        let policy = TargetPolicy::default();
        for ok in ["https://hooks.example.com/x?y=1", "https://Hooks.Example.COM:8443/a/b?c=d&e=%20", "https://a.b"] {
            assert!(policy.check_url(ok).is_ok(), "{ok}");
        }
        let cases = [
            ("http://hooks.example.com/x", TargetRefusal::NotHttps),
            ("ftp://hooks.example.com/x", TargetRefusal::Malformed),
            ("hooks.example.com/x", TargetRefusal::Malformed),
            ("https://", TargetRefusal::Malformed),
            ("https://user:pw@hooks.example.com/", TargetRefusal::Credentials),
            ("https://8.8.8.8/hook", TargetRefusal::NotPublic),
            ("https://[2606:4700::1111]:8443/h", TargetRefusal::NotPublic),
            ("https://localhost/hook", TargetRefusal::Malformed),
            ("https://hooks.example.com/a b", TargetRefusal::Malformed),
            ("https://hooks.example.com#frag", TargetRefusal::Malformed),
            ("https://hooks.example.com:0/", TargetRefusal::Malformed),
            ("https://127.0.0.1/", TargetRefusal::NotPublic),
            ("https://127.1/", TargetRefusal::NotPublic),
            ("https://2130706433/", TargetRefusal::NotPublic),
            ("https://0x7f000001/", TargetRefusal::NotPublic),
            ("https://10.1.2.3/", TargetRefusal::NotPublic),
            ("https://172.16.0.1/", TargetRefusal::NotPublic),
            ("https://192.168.1.1/", TargetRefusal::NotPublic),
            ("https://169.254.169.254/latest/meta-data/", TargetRefusal::NotPublic),
            ("https://100.100.100.200/", TargetRefusal::NotPublic),
            ("https://0.0.0.0/", TargetRefusal::NotPublic),
            ("https://[::1]/", TargetRefusal::NotPublic),
            ("https://[::ffff:127.0.0.1]/", TargetRefusal::NotPublic),
            ("https://[::ffff:169.254.169.254]/", TargetRefusal::NotPublic),
            ("https://[fd00::1]/", TargetRefusal::NotPublic),
            ("https://[fe80::1]/", TargetRefusal::NotPublic),
            ("https://[64:ff9b::a9fe:a9fe]/", TargetRefusal::NotPublic),
            ("https://[::a9fe:a9fe]/", TargetRefusal::NotPublic),
            ("https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", TargetRefusal::NotPublic),
            ("https://Xn--0AaaA--aAAAa.a", TargetRefusal::Malformed),
        ];
        for (url, why) in cases {
            assert_eq!(policy.check_url(url).map(|_| ()), Err(why), "{url}");
        }
        let long = format!("https://hooks.example.com/{}", "a".repeat(CALLBACK_URL_BYTES_MAX));
        assert_eq!(policy.check_url(&long).map(|_| ()), Err(TargetRefusal::Malformed));
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
            prop_assume!(text.len() <= CALLBACK_URL_BYTES_MAX && !text.to_ascii_lowercase().contains("xn--"));
            prop_assert!(TargetPolicy::default().check_url(&text).is_ok(), "{}", text);
        });
    }

    #[test]
    fn an_allowed_host_may_be_any_address_over_http_too() {
        let policy = TargetPolicy::new(&["127.0.0.1".into(), "Receiver.Local".into(), "[::1]".into()]);
        for ok in ["http://127.0.0.1:9000/hook", "https://127.0.0.1/", "http://receiver.local/h", "http://[::1]:1/"] {
            assert!(policy.check_url(ok).is_ok(), "{ok}");
        }
        assert_eq!(policy.check_url("http://127.0.0.2/").map(|_| ()), Err(TargetRefusal::NotHttps));
        assert_eq!(policy.check_url("https://127.0.0.2/").map(|_| ()), Err(TargetRefusal::NotPublic));
        assert_eq!(policy.check_url("http://user@127.0.0.1/").map(|_| ()), Err(TargetRefusal::Credentials));
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
