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
//! public — never loopback, private (RFC 1918, IPv6 unique local), link-local (which holds the
//! cloud metadata service, 169.254.169.254), carrier-grade NAT, unspecified, multicast,
//! broadcast, documentation or benchmarking ranges, nor an IPv4 address mapped or translated
//! into IPv6. A host the operator allows (`--webhook-allow-hosts`, an exact, case-insensitive
//! host name or address) may be any address and may use `http`: that is how the tests reach a
//! receiver on loopback.
//! Invariant: a name is resolved once per connection and the connection goes to an address
//! that passed the check (the resolver hands the client only those), so a DNS answer that
//! changes between the check and the connection (rebinding) cannot reach a refused address.
//! Deliberately absent: redirects (the client follows none: a 3xx is a failed delivery).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

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

/// True for an address on the public internet (see the module's rules).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // carrier-grade NAT, 100.64.0.0/10
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments, 192.0.0.0/24
        || (a == 198 && (18..20).contains(&b)) // benchmarking, 198.18.0.0/15
        || a >= 240) // reserved, 240.0.0.0/4
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00 // unique local, fc00::/7
        || (first & 0xffc0) == 0xfe80 // link-local, fe80::/10
        || (first & 0xffc0) == 0xfec0 // site-local (deprecated), fec0::/10
        || first == 0x2001 && ip.segments()[1] == 0x0db8 // documentation, 2001:db8::/32
        || first == 0x0064 && ip.segments()[1] == 0xff9b // IPv4/IPv6 translation, 64:ff9b::/96
        || first == 0x2002) // 6to4, which embeds an IPv4 address
}

/// The delivery client's DNS resolver: the system's answers, less every address the policy
/// refuses for the host; a name left with none fails to resolve (a failed attempt).
pub struct GuardedResolver {
    pub policy: TargetPolicy,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let resolved = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let usable = policy.usable(&host, resolved);
            if usable.is_empty() {
                let refused = format!("{host} resolves to no public address");
                return Err(Box::new(std::io::Error::new(std::io::ErrorKind::PermissionDenied, refused)) as _);
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
