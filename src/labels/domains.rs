//! Domains of dApps: known phishing sites and the trusted sites they imitate, for the scan's
//! `origin` (the dApp that asked the wallet to sign). Read from the labels file's `[[domain]]`
//! entries, which `xray labels import --format phishing-json` writes from the public
//! phishing-list format of eth-phishing-detect (`{"blacklist": [...], "fuzzylist": [...],
//! "whitelist": [...]}`).
//!
//! Owns: `DomainCategory`, `DomainLabel`, `Domains` (lookups by host, parent domains
//! included, and the look-alike check), `origin_of` (an origin → the host a scan binds and the domain it judges) and the importer.
//! Pure; loaded with the labels, read from every thread.
//!
//! Invariant: bounded — at most `LABEL_DOMAINS_LEN_MAX` domains; the look-alike check compares
//! with at most `TRUSTED_DOMAINS_COMPARED_MAX` trusted domains of at most
//! `TRUSTED_DOMAIN_COMPARED_LEN_MAX` bytes, computing an edit distance only when the lengths
//! are within `LOOKALIKE_EDITS_MAX` of each other.
//! Deliberately absent: fetching lists (the operator downloads them) and IDN homoglyph
//! tables (an internationalized host is compared in its punycode form, as the URL parser
//! gives it).

use std::collections::HashMap;

use serde::Deserialize;

use crate::config::{
    DOMAIN_LEN_MAX, LABEL_DOMAINS_LEN_MAX, TRUSTED_DOMAINS_COMPARED_MAX, TRUSTED_DOMAIN_COMPARED_LEN_MAX,
};

/// Edits (insertions, deletions, substitutions) within which a host imitates a trusted domain.
pub const LOOKALIKE_EDITS_MAX: usize = 2;
/// Trusted domains shorter than this are not compared (any short name is a few edits from
/// another).
const LOOKALIKE_DOMAIN_LEN_MIN: usize = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DomainCategory {
    /// A known phishing or drainer site (and every subdomain of it).
    Phishing,
    /// A known-good site: never flagged, and what look-alikes are compared with.
    Trusted,
    /// Never flagged, but not compared with (a list's exceptions: sites that merely resemble a
    /// trusted one, such as eth-phishing-detect's `whitelist`).
    Allowed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainLabel {
    pub domain: String,
    pub category: DomainCategory,
    pub source: Option<String>,
}

/// What the labels say of a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DomainVerdict<'a> {
    Phishing(&'a DomainLabel),
    Trusted(&'a DomainLabel),
    /// Close to a trusted domain without being it (or one of its subdomains).
    Lookalike {
        imitates: &'a DomainLabel,
    },
    Unknown,
}

#[derive(Debug, Clone, Default)]
pub struct Domains {
    by_domain: HashMap<String, DomainLabel>,
    /// Trusted domains in the order they were first listed (files in order, each in file
    /// order): the first `TRUSTED_DOMAINS_COMPARED_MAX` are compared, the same on every node.
    trusted: Vec<String>,
    trusted_set: std::collections::HashSet<String>,
    /// Every label in insertion order, so that merging is deterministic.
    order: Vec<String>,
}

impl Domains {
    pub fn len(&self) -> usize {
        self.by_domain.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_domain.is_empty()
    }

    /// Adds `label` (a later label of the same domain replaces the earlier).
    pub fn insert(&mut self, label: DomainLabel) -> Result<(), String> {
        let domain = normalize(&label.domain).ok_or_else(|| format!("domain {:?} is not a host name", label.domain))?;
        if label.category == DomainCategory::Trusted && self.trusted_set.insert(domain.clone()) {
            self.trusted.push(domain.clone());
        }
        if !self.by_domain.contains_key(&domain) {
            self.order.push(domain.clone());
        }
        self.by_domain.insert(domain.clone(), DomainLabel { domain, ..label });
        if self.by_domain.len() > LABEL_DOMAINS_LEN_MAX {
            return Err(format!("more than {LABEL_DOMAINS_LEN_MAX} domains"));
        }
        Ok(())
    }

    pub fn merged(&self, other: &Domains) -> Result<Domains, String> {
        let mut out = self.clone();
        for domain in &other.order {
            if let Some(label) = other.by_domain.get(domain) {
                out.insert(label.clone())?;
            }
        }
        Ok(out)
    }

    /// The labels' verdict on `host` (already normalized by `origin_of`): its own label or the
    /// nearest parent domain's; else a look-alike of a trusted domain; else unknown.
    pub fn verdict(&self, host: &str) -> DomainVerdict<'_> {
        let mut at = Some(host);
        while let Some(domain) = at {
            if let Some(label) = self.by_domain.get(domain) {
                return match label.category {
                    DomainCategory::Phishing => DomainVerdict::Phishing(label),
                    DomainCategory::Trusted | DomainCategory::Allowed => DomainVerdict::Trusted(label),
                };
            }
            at = domain.split_once('.').map(|(_, parent)| parent).filter(|p| p.contains('.'));
        }
        for trusted in self.trusted.iter().take(TRUSTED_DOMAINS_COMPARED_MAX) {
            if imitates(host, trusted) {
                // A domain a later file relabelled (as phishing, say) is no longer imitated.
                if let Some(label) = self.by_domain.get(trusted).filter(|l| l.category == DomainCategory::Trusted) {
                    return DomainVerdict::Lookalike { imitates: label };
                }
            }
        }
        DomainVerdict::Unknown
    }
}

/// True when `host` looks like `trusted` without being it: a few edits away, or `trusted`
/// worn as the first labels of another domain (`phantom.app.claim-now.io`).
fn imitates(host: &str, trusted: &str) -> bool {
    if trusted.len() < LOOKALIKE_DOMAIN_LEN_MIN || trusted.len() > TRUSTED_DOMAIN_COMPARED_LEN_MAX || host == trusted {
        return false;
    }
    if host.strip_prefix(trusted).is_some_and(|rest| rest.starts_with('.')) {
        return true;
    }
    // Bounded cost: the distance is at least the difference of the lengths.
    if host.len().abs_diff(trusted.len()) > LOOKALIKE_EDITS_MAX {
        return false;
    }
    let distance = strsim::levenshtein(host, trusted);
    distance > 0 && distance <= LOOKALIKE_EDITS_MAX
}

/// A host name lowercased, without a trailing dot or a leading `www.` (kept when what follows
/// is a single label: `www.com` is a site of its own); `None` when it is not one (empty, one
/// label, too long, or with characters a host cannot hold).
pub fn normalize(text: &str) -> Option<String> {
    let host = text.trim().trim_end_matches('.').to_ascii_lowercase();
    let host = match host.strip_prefix("www.") {
        Some(rest) if rest.contains('.') => rest.to_owned(),
        _ => host,
    };
    let valid = !host.is_empty()
        && host.len() <= DOMAIN_LEN_MAX
        && host.contains('.')
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    valid.then_some(host)
}

/// What a scan's `origin` names: the host it binds to its answer, and the domain it judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The domain as judged (`normalize`d) when it is one, else the host as the URL gives it:
    /// an IP literal (`203.0.113.7`, `[::1]`), `localhost`, an extension's id.
    pub host: String,
    /// The domain judged against the `[[domain]]` labels (`None`: no domain to judge).
    pub domain: Option<String>,
}

/// The `Origin` of a URL (`https://app.example.com/path`) or a bare host name; `Err` when it is
/// neither or names no host.
pub fn origin_of(origin: &str) -> Result<Origin, ()> {
    let with_scheme = if origin.contains("://") { origin.to_owned() } else { format!("https://{origin}") };
    let url = url::Url::parse(&with_scheme).map_err(|_| ())?;
    let domain = match url.host() {
        // A web origin's host is judged, or refused: never signed as the origin of a verdict
        // without having been judged (`localhost` names no site anyone else can serve).
        Some(url::Host::Domain(domain)) if url.scheme() == "http" || url.scheme() == "https" => {
            match normalize(domain) {
                Some(domain) => Some(domain),
                None if domain.eq_ignore_ascii_case("localhost") => None,
                None => return Err(()),
            }
        }
        // An extension's id (an opaque host) or an IP literal: bound, not judged.
        Some(_) => None,
        None => return Err(()),
    };
    let host = match &domain {
        Some(domain) => domain.clone(),
        None => url.host_str().ok_or(())?.to_ascii_lowercase(),
    };
    Ok(Origin { host, domain })
}

/// The eth-phishing-detect list format (the fields this importer reads).
#[derive(Deserialize)]
struct PhishingList {
    #[serde(default)]
    blacklist: Vec<String>,
    #[serde(default)]
    fuzzylist: Vec<String>,
    #[serde(default)]
    whitelist: Vec<String>,
}

/// What an import found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainImport {
    pub labels: Vec<DomainLabel>,
    /// Entries that are not host names (kept out, counted).
    pub skipped: usize,
}

/// Reads a phishing list (eth-phishing-detect's `config.json` format): `blacklist` entries
/// become `phishing`, `fuzzylist` entries (the sites look-alikes imitate) `trusted`, and
/// `whitelist` entries (exceptions: sites that resemble a trusted one) `allowed`.
pub fn read_phishing_list(text: &str, list: &str) -> Result<DomainImport, String> {
    let file: PhishingList = serde_json::from_str(text).map_err(|e| format!("not a phishing list: {e}"))?;
    let mut labels = Vec::new();
    let mut skipped = 0;
    let entries = [
        (file.blacklist, DomainCategory::Phishing),
        (file.fuzzylist, DomainCategory::Trusted),
        (file.whitelist, DomainCategory::Allowed),
    ];
    for (domains, category) in entries {
        for domain in domains {
            match normalize(&domain) {
                Some(domain) => labels.push(DomainLabel { domain, category, source: Some(list.to_owned()) }),
                None => skipped += 1,
            }
            if labels.len() > LABEL_DOMAINS_LEN_MAX {
                return Err(format!("more than {LABEL_DOMAINS_LEN_MAX} domains"));
            }
        }
    }
    Ok(DomainImport { labels, skipped })
}

/// A labels file (format version 1) of `import`'s domains.
pub fn labels_toml(import: &DomainImport) -> String {
    use std::fmt::Write as _;
    let mut out = String::from("# Domains imported by `xray labels import --format phishing-json`.\nversion = 1\n");
    for label in &import.labels {
        let category = match label.category {
            DomainCategory::Phishing => "phishing",
            DomainCategory::Trusted => "trusted",
            DomainCategory::Allowed => "allowed",
        };
        let _ = write!(out, "\n[[domain]]\ndomain = {:?}\ncategory = \"{category}\"\n", label.domain);
        if let Some(source) = &label.source {
            let _ = writeln!(out, "source = {source:?}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domains() -> Domains {
        let mut d = Domains::default();
        for (domain, category) in [
            ("phantom.app", DomainCategory::Trusted),
            ("jup.ag", DomainCategory::Trusted),
            ("x.io", DomainCategory::Trusted),
            ("claim-sol-drop.example", DomainCategory::Phishing),
        ] {
            d.insert(DomainLabel { domain: domain.into(), category, source: None }).unwrap();
        }
        d
    }

    #[test]
    fn hosts_are_read_from_urls_and_bare_names() {
        let origin = |text: &str| origin_of(text).map(|o| (o.host, o.domain));
        let domain = |d: &str| Ok((d.to_owned(), Some(d.to_owned())));
        let host = |h: &str| Ok((h.to_owned(), None));
        assert_eq!(origin("https://WWW.Phantom.App/x?y"), domain("phantom.app"));
        assert_eq!(origin("app.phantom.app"), domain("app.phantom.app"));
        assert_eq!(origin("http://localhost:3000"), host("localhost"));
        assert_eq!(origin("http://127.0.0.1:8080"), host("127.0.0.1"));
        assert_eq!(origin("http://[::1]:8080/"), host("[::1]"));
        assert_eq!(
            origin("chrome-extension://bfnaelmomeimhlpmgjnjophhpkkoljpa/popup.html"),
            host("bfnaelmomeimhlpmgjnjophhpkkoljpa")
        );
        assert_eq!(origin("not a url"), Err(()));
        // Web hosts that are no judgeable domain are refused, not signed unjudged.
        assert_eq!(origin("null"), Err(()), "a sandboxed frame's opaque origin");
        assert_eq!(origin("https://intranet/x"), Err(()));
        assert_eq!(origin("https://x_y.claim-sol-drop.example/"), domain("x_y.claim-sol-drop.example"));
        assert_eq!(origin("data:text/plain,hi"), Err(()));
        // `www.` goes only when a domain is left: `www.com` is a site of its own.
        assert_eq!(origin("https://www.com"), domain("www.com"));
        assert_eq!(origin("www.www.io"), domain("www.io"));
    }

    #[test]
    fn phishing_covers_subdomains_and_lookalikes_are_close_to_a_trusted_domain() {
        let d = domains();
        assert!(matches!(d.verdict("claim-sol-drop.example"), DomainVerdict::Phishing(_)));
        assert!(matches!(d.verdict("app.claim-sol-drop.example"), DomainVerdict::Phishing(_)));
        assert!(matches!(d.verdict("app.phantom.app"), DomainVerdict::Trusted(_)));
        for fake in ["phantorn.app", "phantom.apps", "phanton.app", "phantom.app.claim-now.io"] {
            assert!(matches!(d.verdict(fake), DomainVerdict::Lookalike { .. }), "{fake}");
        }
        assert!(matches!(d.verdict("jap.ag"), DomainVerdict::Lookalike { imitates } if imitates.domain == "jup.ag"));
        // Names under six characters are not compared: every short name is two edits from another.
        assert_eq!(d.verdict("y.io"), DomainVerdict::Unknown);
        assert_eq!(d.verdict("example.org"), DomainVerdict::Unknown);
    }

    #[test]
    fn a_phishing_list_imports_and_loads_back() {
        let text = r#"{"version":2,"tolerance":2,"fuzzylist":["phantom.app"],"whitelist":["phantom.com"],
                       "blacklist":["phantom-claim.xyz","not a domain"]}"#;
        let import = read_phishing_list(text, "eth-phishing-detect 2026-11-20").unwrap();
        assert_eq!((import.labels.len(), import.skipped), (3, 1));
        let labels = crate::labels::Labels::from_toml(&labels_toml(&import)).unwrap();
        assert!(
            matches!(labels.domains().verdict("phantom-claim.xyz"), DomainVerdict::Phishing(l) if l.source.is_some())
        );
        assert!(matches!(labels.domains().verdict("phantom.com"), DomainVerdict::Trusted(_)));
        // An exception is never flagged, and nothing is compared with it.
        assert!(matches!(labels.domains().verdict("phantom.cow"), DomainVerdict::Unknown));
    }

    #[test]
    fn a_merge_keeps_the_order_of_files_and_a_relabelled_domain_is_not_imitated() {
        let mut base = domains();
        let mut extra = Domains::default();
        let label = |domain: &str, category| DomainLabel { domain: domain.into(), category, source: None };
        extra.insert(label("phantom.app", DomainCategory::Phishing)).unwrap();
        for n in 0..50 {
            extra.insert(label(&format!("trusted-{n}.example"), DomainCategory::Trusted)).unwrap();
        }
        base = base.merged(&extra).unwrap();
        assert_eq!(base.trusted[..3], ["phantom.app", "jup.ag", "x.io"]);
        assert_eq!(base.trusted[3], "trusted-0.example", "the extra file's domains follow, in its order");
        assert_eq!(base.verdict("phantorn.app"), DomainVerdict::Unknown, "phantom.app is a phishing site now");
    }
}
