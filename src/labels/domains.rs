//! Domains of dApps: known phishing sites and the trusted sites they imitate, for the scan's
//! `origin` (the dApp that asked the wallet to sign). Read from the labels file's `[[domain]]`
//! entries, which `xray labels import --format phishing-json` writes from the public
//! phishing-list format of eth-phishing-detect (`{"blacklist": [...], "fuzzylist": [...],
//! "whitelist": [...]}`).
//!
//! Owns: `DomainCategory`, `DomainLabel`, `Domains` (lookups by host, parent domains
//! included, and the look-alike check), `Resemblance` (how a look-alike imitates), `origin_of`
//! (an origin → the host a scan binds, the domain it judges or the IP literal it names),
//! `unicode_of` and the importer. Pure; loaded with the labels, read from every thread.
//!
//! A host is kept, bound and looked up in its ASCII form (internationalized labels as `xn--`
//! punycode, which `url` and `normalize` write): one spelling per host, so a signed answer
//! names the same bytes whichever form the wallet sent. It is decoded to Unicode (`idna`) only
//! to be compared: each label's confusable skeleton (Unicode TS #39, `unicode-security`,
//! lowercased: host names have no case) against the trusted domains' skeletons, computed once
//! when a trusted domain is listed.
//!
//! A look-alike (`Resemblance`), checked only when neither the host nor a parent domain is
//! listed — so a trusted domain's own subdomains and `allowed` exceptions are never one:
//! - `Confusable`: a run of the host's labels ending at its end has a trusted domain's
//!   skeleton (`phаntom.app` with a Cyrillic `а`, `rnagiceden.io`, `app.phаntom.app`);
//! - `Worn`: any other run of its labels does (`phantom.app.claim-now.io`);
//! - `Name`: a label other than the last, or a hyphen-separated part of one, is a trusted
//!   domain's name (its label before the last, of at least `LOOKALIKE_NAME_LEN_MIN`
//!   characters) or its labels joined (`phantom.io`, `phantom-app.com`, `app-phantom.xyz`,
//!   `phantomapp.io`, `phantom.vercel.app`);
//! - `Edits`: the skeletons are within `LOOKALIKE_EDITS_MAX` edits (`phantorn.app`).
//!
//! Invariant: bounded — at most `LABEL_DOMAINS_LEN_MAX` domains; the first
//! `TRUSTED_DOMAINS_COMPARED_MAX` trusted domains of at most `TRUSTED_DOMAIN_COMPARED_LEN_MAX`
//! bytes are compared. Per request: one skeleton of the host (at most `DOMAIN_LEN_MAX` bytes
//! in), hash lookups of its label runs no longer than the longest trusted skeleton and of
//! each label and hyphen part, then at most `TRUSTED_DOMAINS_COMPARED_MAX` edit distances of
//! at most 64 × 66 cells, computed only when the lengths are within `LOOKALIKE_EDITS_MAX`:
//! nothing grows with the list beyond the trusted domains compared.
//! Deliberately absent: fetching lists (the operator downloads them); a public-suffix list
//! (a domain's name is its label before the last: `phantom.co.uk`'s is `co`, never compared,
//! being short); names found inside a longer label (`phantomjs.org` is not Phantom's); a
//! finding for a mixed-script host that imitates no trusted domain (the look-alike's detail
//! says when its host mixes scripts).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use serde::Deserialize;
use unicode_security::MixedScript as _;

use crate::config::{
    DOMAIN_LEN_MAX, LABEL_DOMAINS_LEN_MAX, TRUSTED_DOMAINS_COMPARED_MAX, TRUSTED_DOMAIN_COMPARED_LEN_MAX,
};

/// Edits (insertions, deletions, substitutions) within which a host imitates a trusted domain.
pub const LOOKALIKE_EDITS_MAX: usize = 2;
/// Trusted domains shorter than this (bytes) are compared only by skeleton, never by edits or
/// joined labels: any short name is a few edits from another.
const LOOKALIKE_DOMAIN_LEN_MIN: usize = 6;
/// A trusted domain's name (its label before the last) shorter than this (characters) is not
/// looked for in other domains: `jup`, `orca` or `drift` are words of many unrelated sites.
const LOOKALIKE_NAME_LEN_MIN: usize = 6;

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

/// How a look-alike imitates a trusted domain (see the module header), strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resemblance {
    Confusable,
    Worn,
    Name,
    Edits,
}

impl Resemblance {
    pub fn as_str(self) -> &'static str {
        match self {
            Resemblance::Confusable => "confusable",
            Resemblance::Worn => "worn",
            Resemblance::Name => "name",
            Resemblance::Edits => "edits",
        }
    }
}

/// What the labels say of a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DomainVerdict<'a> {
    Phishing(&'a DomainLabel),
    Trusted(&'a DomainLabel),
    /// Close to a trusted domain without being it (or one of its subdomains).
    Lookalike {
        imitates: &'a DomainLabel,
        by: Resemblance,
        /// A label of the host mixes scripts (Latin with Cyrillic, say: TS #39 single-script
        /// test), which no real site's name needs.
        mixed_scripts: bool,
    },
    Unknown,
}

/// A trusted domain as the look-alike check compares it.
#[derive(Debug, Clone)]
struct Compared {
    domain: String,
    /// Its skeleton, and that skeleton's length in characters.
    skeleton: String,
    skeleton_chars: usize,
}

#[derive(Debug, Clone, Default)]
pub struct Domains {
    by_domain: HashMap<String, DomainLabel>,
    /// Trusted domains in the order they were first listed (files in order, each in file
    /// order): the first `TRUSTED_DOMAINS_COMPARED_MAX` are compared, the same on every node.
    trusted: Vec<String>,
    trusted_set: HashSet<String>,
    /// The compared ones (those of the first `TRUSTED_DOMAINS_COMPARED_MAX` no longer than
    /// `TRUSTED_DOMAIN_COMPARED_LEN_MAX`), with their keys below, built when listed.
    compared: Vec<Compared>,
    /// Skeleton of a compared domain → its index in `compared` (the first listed wins).
    by_skeleton: HashMap<String, usize>,
    /// Skeletons of a compared domain's name and of its labels joined (`phantom-app`,
    /// `phantomapp`) → its index in `compared` (the first listed wins).
    by_word: HashMap<String, usize>,
    /// The longest skeleton in `by_skeleton` (bytes): no longer run of a host is looked up.
    skeleton_len_max: usize,
    /// Every label in insertion order, so that merging is deterministic.
    order: Vec<String>,
}

/// A host as the look-alike check reads it: each label's skeleton.
struct Shape {
    labels: Vec<String>,
    whole: String,
    mixed_scripts: bool,
}

impl Shape {
    fn of(host: &str) -> Shape {
        let unicode = unicode_of(host);
        let mixed_scripts = unicode.split('.').any(|label| !label.is_single_script());
        let labels: Vec<String> = unicode.split('.').map(skeleton).collect();
        Shape { whole: labels.join("."), labels, mixed_scripts }
    }
}

impl Domains {
    /// Feeds every domain label (sorted) and the trusted domains in their compared order.
    pub(super) fn digest_into(&self, hasher: &mut sha2::Sha256) {
        use sha2::Digest;
        let mut labels: Vec<&DomainLabel> = self.by_domain.values().collect();
        labels.sort_unstable_by(|a, b| a.domain.cmp(&b.domain));
        for label in labels {
            hasher.update(format!("{}\u{0}{:?}\u{0}", label.domain, label.category).as_bytes());
        }
        hasher.update(b"\x01trusted\x01");
        for domain in &self.trusted {
            hasher.update(domain.as_bytes());
            hasher.update([0]);
        }
    }

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
            if self.trusted.len() <= TRUSTED_DOMAINS_COMPARED_MAX && domain.len() <= TRUSTED_DOMAIN_COMPARED_LEN_MAX {
                self.compare_with(&domain);
            }
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

    /// Computes a newly trusted domain's keys once, so that a request only looks them up.
    fn compare_with(&mut self, domain: &str) {
        let index = self.compared.len();
        let shape = Shape::of(domain);
        self.by_skeleton.entry(shape.whole.clone()).or_insert(index);
        self.skeleton_len_max = self.skeleton_len_max.max(shape.whole.len());
        if domain.len() >= LOOKALIKE_DOMAIN_LEN_MIN {
            for joined in [shape.labels.join("-"), shape.labels.concat()] {
                self.by_word.entry(joined).or_insert(index);
            }
        }
        let name = &shape.labels[shape.labels.len().saturating_sub(2)];
        if name.chars().count() >= LOOKALIKE_NAME_LEN_MIN {
            self.by_word.entry(name.clone()).or_insert(index);
        }
        let skeleton_chars = shape.whole.chars().count();
        self.compared.push(Compared { domain: domain.to_owned(), skeleton: shape.whole, skeleton_chars });
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
        if let Some(label) = self.listed(host) {
            return match label.category {
                DomainCategory::Phishing => DomainVerdict::Phishing(label),
                DomainCategory::Trusted | DomainCategory::Allowed => DomainVerdict::Trusted(label),
            };
        }
        let shape = Shape::of(host);
        let lookalike = self.resemblances(&shape).find_map(|(index, by)| {
            // A domain a later file relabelled (as phishing, say) is no longer imitated.
            let label = self.by_domain.get(&self.compared[index].domain)?;
            (label.category == DomainCategory::Trusted).then_some((label, by))
        });
        match lookalike {
            Some((imitates, by)) => DomainVerdict::Lookalike { imitates, by, mixed_scripts: shape.mixed_scripts },
            None => DomainVerdict::Unknown,
        }
    }

    /// The label of `host` or of its nearest parent domain (of two labels or more).
    fn listed(&self, host: &str) -> Option<&DomainLabel> {
        let mut at = Some(host);
        while let Some(domain) = at {
            if let Some(label) = self.by_domain.get(domain) {
                return Some(label);
            }
            at = domain.split_once('.').map(|(_, parent)| parent).filter(|p| p.contains('.'));
        }
        None
    }

    /// The compared domains `shape` resembles, strongest resemblance first.
    fn resemblances<'s>(&'s self, shape: &'s Shape) -> impl Iterator<Item = (usize, Resemblance)> + 's {
        self.skeleton_runs(shape).chain(self.words(shape)).chain(self.edits(shape))
    }

    /// Runs of two labels or more whose skeleton is a trusted domain's: ending at the host's
    /// end, a homograph (or its subdomain); elsewhere, the domain worn inside another.
    fn skeleton_runs<'s>(&'s self, shape: &'s Shape) -> impl Iterator<Item = (usize, Resemblance)> + 's {
        let n = shape.labels.len();
        (0..n).flat_map(move |start| {
            let mut run = shape.labels[start].clone();
            (start + 1..n)
                .map_while(move |end| {
                    run.push('.');
                    run.push_str(&shape.labels[end]);
                    let by = if end + 1 == n { Resemblance::Confusable } else { Resemblance::Worn };
                    (run.len() <= self.skeleton_len_max).then(|| self.by_skeleton.get(&run).map(|&i| (i, by)))
                })
                .flatten()
        })
    }

    /// Labels but the last, and their hyphen-separated parts, that are a trusted name.
    fn words<'s>(&'s self, shape: &'s Shape) -> impl Iterator<Item = (usize, Resemblance)> + 's {
        let labels = &shape.labels[..shape.labels.len().saturating_sub(1)];
        let words = labels.iter().flat_map(|label| std::iter::once(label.as_str()).chain(label.split('-')));
        words.filter_map(|word| self.by_word.get(word).map(|&i| (i, Resemblance::Name)))
    }

    /// Trusted domains of six bytes or more whose skeleton is a few edits from the host's.
    fn edits<'s>(&'s self, shape: &'s Shape) -> impl Iterator<Item = (usize, Resemblance)> + 's {
        let chars = shape.whole.chars().count();
        self.compared.iter().enumerate().filter_map(move |(index, trusted)| {
            // Bounded cost: the distance is at least the difference of the lengths.
            let near = trusted.domain.len() >= LOOKALIKE_DOMAIN_LEN_MIN
                && chars.abs_diff(trusted.skeleton_chars) <= LOOKALIKE_EDITS_MAX
                && (1..=LOOKALIKE_EDITS_MAX).contains(&strsim::levenshtein(&shape.whole, &trusted.skeleton));
            near.then_some((index, Resemblance::Edits))
        })
    }
}

/// A label's confusable skeleton (TS #39: NFD, default-ignorables dropped, each character
/// replaced by its prototype, NFD), lowercased: `0` and `O` are one in a host name.
fn skeleton(label: &str) -> String {
    unicode_security::skeleton(label).flat_map(char::to_lowercase).collect()
}

/// The Unicode form of an ASCII host: its `xn--` labels decoded; the host itself when it has
/// none, or when one does not decode (shown as written, as browsers do).
pub fn unicode_of(host: &str) -> Cow<'_, str> {
    if !host.split('.').any(|label| label.starts_with("xn--")) {
        return Cow::Borrowed(host);
    }
    match idna::domain_to_unicode(host) {
        (unicode, Ok(())) => Cow::Owned(unicode),
        (_, Err(_)) => Cow::Borrowed(host),
    }
}

/// A host name in its ASCII form (Unicode labels punycoded, IDNA's mapping applied),
/// lowercased, without a trailing dot or a leading `www.` (kept when what follows is a single
/// label: `www.com` is a site of its own); `None` when it is not one (empty, one label, too
/// long, or with characters a host cannot hold).
pub fn normalize(text: &str) -> Option<String> {
    let text = text.trim();
    let host = if text.is_ascii() { text.to_ascii_lowercase() } else { idna::domain_to_ascii(text).ok()? };
    let host = host.trim_end_matches('.');
    let host = match host.strip_prefix("www.") {
        Some(rest) if rest.contains('.') => rest,
        _ => host,
    };
    let valid = !host.is_empty()
        && host.len() <= DOMAIN_LEN_MAX
        && host.contains('.')
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    valid.then(|| host.to_owned())
}

/// What a scan's `origin` names: the host it binds to its answer, and what it judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The domain as judged (`normalize`d: ASCII, punycode for Unicode labels) when it is one,
    /// else the host as the URL gives it: an IP literal (`203.0.113.7`, `[::1]`), `localhost`,
    /// an extension's id.
    pub host: String,
    /// The domain judged against the `[[domain]]` labels (`None`: no domain to judge).
    pub domain: Option<String>,
    /// The address of a web origin written as an IP literal (`https://203.0.113.7`).
    pub ip: Option<IpAddr>,
}

/// Text that is no origin a scan can judge or bind (`origin_of`'s refusal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotAnOrigin;

/// The `Origin` of a URL (`https://app.example.com/path`) or a bare host name; `Err` when it is
/// neither or names no host. A Unicode host is punycoded here (by the URL parser).
pub fn origin_of(origin: &str) -> Result<Origin, NotAnOrigin> {
    let with_scheme = if origin.contains("://") { origin.to_owned() } else { format!("https://{origin}") };
    let url = url::Url::parse(&with_scheme).map_err(|_| NotAnOrigin)?;
    let web = url.scheme() == "http" || url.scheme() == "https";
    let (domain, ip) = match url.host() {
        // A web origin's host is judged, or refused: never signed as the origin of a verdict
        // without having been judged (`localhost` names no site anyone else can serve).
        Some(url::Host::Domain(domain)) if web => match normalize(domain) {
            Some(domain) => (Some(domain), None),
            None if domain.eq_ignore_ascii_case("localhost") => (None, None),
            None => return Err(NotAnOrigin),
        },
        Some(url::Host::Ipv4(address)) if web => (None, Some(IpAddr::V4(address))),
        Some(url::Host::Ipv6(address)) if web => (None, Some(IpAddr::V6(address))),
        // An extension's id (an opaque host): bound, not judged.
        Some(_) => (None, None),
        None => return Err(NotAnOrigin),
    };
    let host = match &domain {
        Some(domain) => domain.clone(),
        None => url.host_str().ok_or(NotAnOrigin)?.to_ascii_lowercase(),
    };
    Ok(Origin { host, domain, ip })
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
        // IP literals of web origins are bound with their address, and judged as addresses.
        let ip = |text: &str| origin_of(text).map(|o| (o.host, o.domain, o.ip.map(|a| a.to_string())));
        assert_eq!(ip("http://127.0.0.1:8080"), Ok(("127.0.0.1".into(), None, Some("127.0.0.1".into()))));
        assert_eq!(ip("http://[::1]:8080/"), Ok(("[::1]".into(), None, Some("::1".into()))));
        assert_eq!(ip("203.0.113.7"), Ok(("203.0.113.7".into(), None, Some("203.0.113.7".into()))));
        assert_eq!(ip("http://[2001:DB8::1]"), Ok(("[2001:db8::1]".into(), None, Some("2001:db8::1".into()))));
        assert_eq!(
            origin("chrome-extension://bfnaelmomeimhlpmgjnjophhpkkoljpa/popup.html"),
            host("bfnaelmomeimhlpmgjnjophhpkkoljpa")
        );
        assert_eq!(origin_of("chrome-extension://bfnaelmomeimhlpmgjnjophhpkkoljpa").map(|o| o.ip), Ok(None));
        assert_eq!(origin("not a url"), Err(NotAnOrigin));
        // Web hosts that are no judgeable domain are refused, not signed unjudged.
        assert_eq!(origin("null"), Err(NotAnOrigin), "a sandboxed frame's opaque origin");
        assert_eq!(origin("https://intranet/x"), Err(NotAnOrigin));
        assert_eq!(origin("https://x_y.claim-sol-drop.example/"), domain("x_y.claim-sol-drop.example"));
        assert_eq!(origin("data:text/plain,hi"), Err(NotAnOrigin));
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
        assert!(
            matches!(d.verdict("jap.ag"), DomainVerdict::Lookalike { imitates, .. } if imitates.domain == "jup.ag")
        );
        // Names under six characters are not compared: every short name is two edits from another.
        assert_eq!(d.verdict("y.io"), DomainVerdict::Unknown);
        assert_eq!(d.verdict("example.org"), DomainVerdict::Unknown);
    }

    /// The builtin labels' domains: the real trusted names.
    fn builtin() -> std::sync::Arc<crate::labels::Labels> {
        crate::labels::Labels::builtin()
    }

    fn lookalike_of(domains: &Domains, host: &str) -> Option<(String, Resemblance, bool)> {
        match domains.verdict(host) {
            DomainVerdict::Lookalike { imitates, by, mixed_scripts } => {
                Some((imitates.domain.clone(), by, mixed_scripts))
            }
            _ => None,
        }
    }

    #[test]
    fn a_unicode_host_is_bound_in_punycode_and_judged_in_unicode() {
        // `phаntom.app` with a Cyrillic `а` (U+0430), sent as Unicode or as punycode.
        let homograph = "ph\u{430}ntom.app";
        let sent = origin_of(&format!("https://{homograph}/connect")).unwrap();
        let punycode = idna::domain_to_ascii(homograph).unwrap();
        assert!(punycode.starts_with("xn--"), "{punycode}");
        assert_eq!((sent.host.as_str(), sent.domain.as_deref()), (punycode.as_str(), Some(punycode.as_str())));
        assert_eq!(origin_of(&format!("https://{punycode}")), Ok(sent.clone()), "one spelling, one binding");
        assert_eq!(unicode_of(&sent.host), homograph);
        assert_eq!(normalize(&format!("WWW.{homograph}.")), Some(punycode.clone()), "labels files may list Unicode");
        let labels = builtin();
        let judged = lookalike_of(labels.domains(), &punycode);
        assert_eq!(judged, Some(("phantom.app".into(), Resemblance::Confusable, true)));
        // A subdomain of the homograph, and ASCII that only looks the same (`rn` for `m`).
        for host in [format!("app.{punycode}"), "rnagiceden.io".into(), "phant0m.app".into()] {
            assert_eq!(
                lookalike_of(labels.domains(), &host).map(|(_, by, _)| by),
                Some(Resemblance::Confusable),
                "{host}"
            );
        }
        // A whole-script homograph (every letter Cyrillic) is single-script, and still confusable.
        let cyrillic = idna::domain_to_ascii("\u{440}\u{430}\u{443}.example").unwrap();
        let mut d = Domains::default();
        d.insert(DomainLabel { domain: "pay.example".into(), category: DomainCategory::Trusted, source: None })
            .unwrap();
        assert_eq!(lookalike_of(&d, &cyrillic), Some(("pay.example".into(), Resemblance::Confusable, false)));
        // Unicode that resembles nothing trusted is unknown (a Japanese site, single-script).
        let japanese = normalize("\u{4f8b}\u{3048}.jp").unwrap();
        assert_eq!(labels.domains().verdict(&japanese), DomainVerdict::Unknown);
    }

    #[test]
    fn hyphen_and_tld_variants_of_a_trusted_name_are_lookalikes() {
        let labels = builtin();
        let d = labels.domains();
        for (host, imitates) in [
            ("phantom-app.com", "phantom.app"),
            ("phantomapp.io", "phantom.app"),
            ("app-phantom.xyz", "phantom.app"),
            ("phantom.io", "phantom.app"),
            ("app.phantom.io", "phantom.app"),
            ("phantom-wallet.vercel.app", "phantom.app"),
            ("raydium.finance", "raydium.io"),
            ("claim-raydium.net", "raydium.io"),
            ("magiceden-mint.xyz", "magiceden.io"),
            ("solflare.app", "solflare.com"),
            ("jup-ag.com", "jup.ag"),
            ("pumpfun.io", "pump.fun"),
        ] {
            assert_eq!(
                lookalike_of(d, host).map(|(domain, by, _)| (domain, by)),
                Some((imitates.into(), Resemblance::Name)),
                "{host}"
            );
        }
        assert_eq!(lookalike_of(d, "phantom.app.evil.io").map(|(_, by, _)| by), Some(Resemblance::Worn));
        assert_eq!(lookalike_of(d, "phantorn.app").map(|(_, by, _)| by), Some(Resemblance::Confusable));
        assert_eq!(lookalike_of(d, "phantoms.app").map(|(_, by, _)| by), Some(Resemblance::Edits));
    }

    #[test]
    fn trusted_sites_their_subdomains_exceptions_and_unrelated_sites_are_not_lookalikes() {
        let labels = builtin();
        let d = labels.domains();
        for host in ["phantom.app", "app.phantom.app", "solana.com", "explorer.solana.com", "raydium.io", "jup.ag"] {
            assert!(matches!(d.verdict(host), DomainVerdict::Trusted(_)), "{host}");
        }
        // Phantom's own newer domain, the Solana Foundation's and Backpack's exchange are listed
        // (the name rule would otherwise call them look-alikes of phantom.app, solana.com, backpack.app).
        for host in ["phantom.com", "solana.org", "backpack.exchange"] {
            assert!(matches!(d.verdict(host), DomainVerdict::Trusted(_)), "{host}");
        }
        for host in [
            "example.org",
            "github.com",
            "google.com",
            "phantomjs.org",
            "solanabeach.io",
            "tensorflow.org",
            "raydiumfan.example",
            "jupiter.example",
            "drift.com",
            "pump.io",
            "app.uniswap.org",
            "metamask.io",
            "opensea.io",
        ] {
            assert_eq!(d.verdict(host), DomainVerdict::Unknown, "{host}");
        }
        // An exception stays one: allowed, never flagged, whatever it resembles.
        let mut extra = Domains::default();
        extra
            .insert(DomainLabel { domain: "phantom-app.com".into(), category: DomainCategory::Allowed, source: None })
            .unwrap();
        let merged = d.merged(&extra).unwrap();
        assert!(matches!(merged.verdict("phantom-app.com"), DomainVerdict::Trusted(_)));
        assert!(matches!(merged.verdict("phantom-app.net"), DomainVerdict::Lookalike { .. }));
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
        // (`phantam.com` is one edit from the exception phantom.com, four from phantom.app.)
        assert!(matches!(labels.domains().verdict("phantam.com"), DomainVerdict::Unknown));
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
