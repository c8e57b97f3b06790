//! The findings of a scan's `origin` (the dApp that asked for the signature): a listed
//! phishing site, a look-alike of a trusted dApp (`labels::domains` says which and how), or a
//! web origin served from a public IP address instead of a domain name.
//!
//! Owns: `finding` (an `Origin` → at most one finding) and which addresses are a developer's
//! own machine or network (`is_local`). Pure; called on listener threads.
//!
//! Invariant: the finding names the host as bound (ASCII, punycode for Unicode labels, the
//! same text as the report's `origin`); a Unicode host is shown decoded beside it, so the user
//! can match it with what the address bar or the wallet showed.
//! Invariant: loopback, private (10/8, 172.16/12, 192.168/16), link-local, unique-local and
//! unspecified addresses give no finding: a dApp there is one the user (a developer) runs.
//! Deliberately absent: reverse DNS or any lookup of the address (pure, no I/O); extension
//! ids are bound, never judged.

use std::net::IpAddr;

use super::findings::Finding;
use crate::engine::report::{Facts, IntoFact, Severity};
use crate::labels::domains::{self, DomainVerdict, Origin, Resemblance};
use crate::labels::Labels;

/// The origin's finding, if it has one.
pub fn finding(origin: &Origin, labels: &Labels) -> Option<Finding> {
    match (&origin.domain, origin.ip) {
        (Some(domain), _) => domain_finding(domain, labels),
        (None, Some(ip)) if !is_local(ip) => Some(ip_finding(&origin.host)),
        _ => None,
    }
}

/// Addresses of the user's own machine or network, where developers serve the dApp they build.
pub fn is_local(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local() || v4.is_unspecified(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.is_unique_local() || v6.is_unicast_link_local() || v6.is_unspecified(),
    }
}

fn ip_finding(host: &str) -> Finding {
    Finding {
        kind: "ip_origin",
        severity: Severity::Medium,
        title: format!("Asked for by {host}, an IP address instead of a site's name"),
        detail: format!(
            "The dApp asking for this signature is served from the bare address {host}. Real dApps are served \
             from domain names; an address names no one and is what a throwaway phishing server uses. Sign only \
             if you opened this page yourself and know who runs it."
        ),
        instruction: None,
        facts: Facts::from([("origin", host.into_fact())]),
        fix_instructions: Vec::new(),
    }
}

/// A listed phishing site, or a look-alike of a trusted one.
fn domain_finding(host: &str, labels: &Labels) -> Option<Finding> {
    let mut facts = Facts::from([("origin", host.into_fact())]);
    let shown = domains::unicode_of(host);
    let named = if shown == host { host.to_owned() } else { format!("{host} (shown as {shown})") };
    if shown != host {
        facts.insert("unicode", shown.to_string().into_fact());
    }
    let (kind, severity, title, detail) = match labels.domains().verdict(host) {
        DomainVerdict::Phishing(label) => {
            facts.insert("listedAs", label.domain.as_str().into_fact());
            let source = label.source.as_deref().map(|s| format!(" ({s})")).unwrap_or_default();
            (
                "phishing_origin",
                Severity::Critical,
                format!("Asked for by {host}, a known phishing site"),
                format!("The dApp asking for this signature, {named}, is on a phishing list{source}: do not sign."),
            )
        }
        DomainVerdict::Lookalike { imitates, by, mixed_scripts } => {
            facts.insert("imitates", imitates.domain.as_str().into_fact());
            facts.insert("resemblance", by.as_str().into_fact());
            if mixed_scripts {
                facts.insert("scripts", "mixed".into_fact());
            }
            (
                "lookalike_origin",
                Severity::High,
                format!("Asked for by {host}, which imitates {}", imitates.domain),
                lookalike_detail(&named, &imitates.domain, by, mixed_scripts),
            )
        }
        DomainVerdict::Trusted(_) | DomainVerdict::Unknown => return None,
    };
    Some(Finding { kind, severity, title, detail, instruction: None, facts, fix_instructions: Vec::new() })
}

fn lookalike_detail(named: &str, imitates: &str, by: Resemblance, mixed_scripts: bool) -> String {
    let how = match by {
        Resemblance::Confusable => format!("is written with characters that look like those of {imitates}"),
        Resemblance::Worn => format!("wears {imitates} inside another domain"),
        Resemblance::Name => format!("uses the name of {imitates} on another domain"),
        Resemblance::Edits => format!("is within two characters of {imitates}"),
    };
    let scripts = if mixed_scripts {
        " Its name mixes letters of different scripts (such as Latin and Cyrillic), which no real site's name needs."
    } else {
        ""
    };
    format!(
        "The dApp asking for this signature, {named}, is not {imitates} but {how} — the mark of a phishing copy.{scripts} \
         Open the real site yourself."
    )
}
