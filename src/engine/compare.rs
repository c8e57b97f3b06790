//! The comparison engine: are two wallets linked, and how strongly?
//!
//! Owns: link detection between two wallet views (direct transfers, shared first funder,
//! co-signing, a third party paying both wallets' fees, a shared sweep destination, a shared
//! destination for closed accounts' rent, overlap of counterparties / programs / mints with
//! hubs removed, temporal overlap), the similarity score and the relationship tier. Pure;
//! called on compute threads.
//!
//! Invariants: hubs never link wallets — labelled programs, sysvars, mints and entities, and
//! off-curve addresses (token accounts, PDAs) are removed before any overlap is measured; every
//! link cites evidence that exists; the result does not depend on which wallet is A
//! (links are computed symmetrically and evidence is cited A-side first).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::engine::evidence::EvidenceBook;
use crate::engine::flows::{self, Asset, Direction, Transfer};
use crate::engine::policy::{Policy, PolicyRef};
use crate::engine::report::{Evidence, Score};
use crate::labels::Labels;
use crate::ledger::instruction::{Instruction, InstructionKind};
use crate::ledger::model::{Transaction, WalletView};
use crate::pubkey::Pubkey;

/// Evidence items one link cites at most.
pub const LINK_EVIDENCE_MAX: usize = 6;
/// Seconds per day, for the activity-day overlap.
const DAY_S: i64 = 86_400;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Relationship {
    LikelySameOwner,
    Linked,
    WeaklyLinked,
    Unrelated,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    pub kind: &'static str,
    pub strength: f64,
    pub detail: String,
    pub evidence_ids: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletSummary {
    pub address: String,
    /// The account's fresh analysis this side's score was taken from; `null` when there was
    /// none and the comparison analyzed the wallet itself (always present, for typed clients).
    pub analysis_id: Option<String>,
    pub score: Score,
}

/// `data.comparison`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    pub wallet_a: WalletSummary,
    pub wallet_b: WalletSummary,
    pub similarity: f64,
    pub relationship: Relationship,
    pub links: Vec<Link>,
    pub evidence: Vec<Evidence>,
    pub engine_versions: BTreeMap<&'static str, &'static str>,
    /// The account's policy that made it (issue #31).
    pub policy: PolicyRef,
}

/// One side of a comparison: the view, the score of its X-Ray and (when the server has one)
/// the id of the analysis that score comes from. Linking reads the view only (its
/// transactions and token accounts), so a side whose score comes from a stored analysis needs
/// no more of the wallet than that (`ledger::view::Detail::Links`).
pub struct Side<'a> {
    pub view: &'a WalletView,
    pub score: &'a Score,
    pub analysis_id: Option<String>,
}

/// Link weights in the similarity: `1 − Π(1 − weight × strength)`.
fn link_weight(kind: &str) -> f64 {
    match kind {
        "co_signer" => 0.9,
        "direct_transfer" => 0.6,
        "shared_funder" => 0.6,
        "shared_fee_payer" => 0.7,
        "shared_sweep_destination" => 0.6,
        "shared_rent_destination" => 0.5,
        "shared_counterparties" => 0.5,
        "shared_mints" => 0.3,
        "temporal_overlap" => 0.3,
        "shared_programs" => 0.2,
        _ => 0.0,
    }
}

struct Pair<'a> {
    a: &'a WalletView,
    b: &'a WalletView,
    flows_a: Vec<Transfer<'a>>,
    flows_b: Vec<Transfer<'a>>,
    labels: &'a Labels,
    book: EvidenceBook,
    links: Vec<Link>,
}

pub fn compare(a: Side<'_>, b: Side<'_>, labels: &Labels) -> Comparison {
    compare_with(a, b, labels, Policy::default_policy().reference())
}

/// Compares two wallets for an account under `policy` (`labels` are the account's, and each
/// side's score was made under the same policy).
pub fn compare_with(a: Side<'_>, b: Side<'_>, labels: &Labels, policy: &PolicyRef) -> Comparison {
    let mut pair = Pair {
        a: a.view,
        b: b.view,
        flows_a: flows::transfers(a.view),
        flows_b: flows::transfers(b.view),
        labels,
        book: EvidenceBook::default(),
        links: Vec::new(),
    };
    pair.direct_transfers();
    pair.shared_funder();
    pair.co_signing();
    pair.shared_fee_payer();
    pair.shared_sweep_destination();
    pair.shared_rent_destination();
    pair.shared_counterparties();
    pair.shared_programs();
    pair.shared_mints();
    pair.temporal_overlap();
    let similarity = similarity(&pair.links);
    let relationship = relationship(&pair.links, similarity);
    Comparison {
        wallet_a: WalletSummary {
            address: a.view.address.to_string(),
            analysis_id: a.analysis_id,
            score: a.score.clone(),
        },
        wallet_b: WalletSummary {
            address: b.view.address.to_string(),
            analysis_id: b.analysis_id,
            score: b.score.clone(),
        },
        similarity,
        relationship,
        links: pair.links,
        evidence: pair.book.into_items(),
        engine_versions: BTreeMap::from([("compare", super::COMPARE_VERSION), ("xray", super::XRAY_VERSION)]),
        policy: policy.clone(),
    }
}

/// Where one wallet meets a third address: a transaction, or one instruction of it.
#[derive(Clone, Copy)]
struct Hit<'a> {
    tx: &'a Transaction,
    ix: Option<&'a Instruction>,
}

/// Third addresses one wallet meets in one way, each with its first (newest) hit.
type Hits<'a> = BTreeMap<Pubkey, Hit<'a>>;

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn similarity(links: &[Link]) -> f64 {
    let apart: f64 = links.iter().map(|l| 1.0 - link_weight(l.kind) * l.strength).product();
    round2(1.0 - apart)
}

fn relationship(links: &[Link], similarity: f64) -> Relationship {
    let has = |kind: &str| links.iter().any(|l| l.kind == kind && l.strength >= 0.5);
    if has("co_signer") || (has("shared_funder") && has("direct_transfer")) || similarity >= 0.8 {
        Relationship::LikelySameOwner
    } else if similarity >= 0.5 {
        Relationship::Linked
    } else if similarity >= 0.2 {
        Relationship::WeaklyLinked
    } else {
        Relationship::Unrelated
    }
}

fn jaccard(a: &BTreeSet<Pubkey>, b: &BTreeSet<Pubkey>) -> (f64, Vec<Pubkey>) {
    let shared: Vec<Pubkey> = a.intersection(b).copied().collect();
    let union = a.union(b).count();
    if union == 0 {
        return (0.0, shared);
    }
    (shared.len() as f64 / union as f64, shared)
}

impl<'a> Pair<'a> {
    fn push(&mut self, kind: &'static str, strength: f64, detail: String, evidence_ids: Vec<String>) {
        if evidence_ids.is_empty() || strength <= 0.0 {
            return;
        }
        let mut evidence_ids = evidence_ids;
        evidence_ids.truncate(LINK_EVIDENCE_MAX);
        self.links.push(Link { kind, strength: round2(strength.min(1.0)), detail, evidence_ids });
    }

    fn cite(&mut self, t: &Transfer<'_>, summary: String) -> String {
        self.book.instruction(t.tx, t.ix, || summary)
    }

    /// Not a hub: a wallet-like address no label explains.
    fn personal(&self, k: &Pubkey) -> bool {
        !self.labels.is_hub(k) && k.is_on_curve()
    }

    fn direct_transfers(&mut self) {
        let (a, b) = (self.a.address, self.b.address);
        let a_side: Vec<Transfer<'a>> = self.flows_a.iter().filter(|t| t.counterparty == b).copied().collect();
        let b_side: Vec<Transfer<'a>> = self
            .flows_b
            .iter()
            .filter(|t| t.counterparty == a && !a_side.iter().any(|x| x.tx.signature == t.tx.signature))
            .copied()
            .collect();
        let all: Vec<Transfer<'a>> = a_side.into_iter().chain(b_side).collect();
        if all.is_empty() {
            return;
        }
        let real = all.iter().filter(|t| !t.is_dust()).count();
        let evidence = all
            .iter()
            .take(LINK_EVIDENCE_MAX)
            .map(|t| self.cite(t, format!("{} between the wallets", t.amount_text())))
            .collect();
        let strength = if real > 0 { 1.0 } else { 0.3 };
        self.push(
            "direct_transfer",
            strength,
            format!("{} transfer(s) between the wallets ({real} above dust).", all.len()),
            evidence,
        );
    }

    fn shared_funder(&mut self) {
        let (Some(fa), Some(fb)) =
            (flows::first_funder(self.a, &self.flows_a), flows::first_funder(self.b, &self.flows_b))
        else {
            return;
        };
        if fa.counterparty != fb.counterparty || !self.personal(&fa.counterparty) {
            return;
        }
        let funder = fa.counterparty;
        let evidence = vec![
            self.cite(&fa, "first funding of wallet A".into()),
            self.cite(&fb, "first funding of wallet B".into()),
        ];
        self.push("shared_funder", 0.9, format!("Both wallets were first funded by {funder}."), evidence);
    }

    fn co_signing(&mut self) {
        let (a, b) = (self.a.address, self.b.address);
        let both: Vec<_> = self.a.transactions.iter().filter(|t| t.is_signer(&a) && t.is_signer(&b)).collect();
        if both.is_empty() {
            return;
        }
        let evidence = both
            .iter()
            .take(LINK_EVIDENCE_MAX)
            .map(|t| self.book.transaction(t, || "signed by both wallets".into()))
            .collect();
        self.push("co_signer", 1.0, format!("{} transaction(s) signed by both wallets.", both.len()), evidence);
    }

    /// A wallet-like third address (neither wallet, no hub) the link may name.
    fn third(&self, k: &Pubkey) -> bool {
        *k != self.a.address && *k != self.b.address && self.personal(k)
    }

    fn cite_hit(&mut self, hit: Hit<'_>, summary: String) -> String {
        match hit.ix {
            Some(ix) => self.book.instruction(hit.tx, ix, || summary),
            None => self.book.transaction(hit.tx, || summary),
        }
    }

    /// Links through the third addresses both wallets meet in the same way (`hits` per side,
    /// each already filtered by `third`); `what` names the way in evidence ("fees paid by"),
    /// `detail` says it of the addresses (`"<first> and <n> more"`).
    fn shared_third(
        &mut self,
        kind: &'static str,
        strength: f64,
        hits: [Hits<'_>; 2],
        what: &str,
        detail: fn(&str) -> String,
    ) {
        let [ha, hb] = hits;
        let shared: Vec<Pubkey> = ha.keys().filter(|k| hb.contains_key(k)).copied().collect();
        let Some(first) = shared.first() else { return };
        let mut evidence = Vec::new();
        for k in shared.iter().take(LINK_EVIDENCE_MAX / 2) {
            for (side, hits) in [("A", &ha), ("B", &hb)] {
                if let Some(hit) = hits.get(k) {
                    evidence.push(self.cite_hit(*hit, format!("{what} {k} (wallet {side})")));
                }
            }
        }
        let more = if shared.len() > 1 { format!(" and {} more", shared.len() - 1) } else { String::new() };
        self.push(kind, strength, detail(&format!("{first}{more}")), evidence);
    }

    /// A third address paid the fees of transactions each wallet signed.
    fn shared_fee_payer(&mut self) {
        let paid = |v: &'a WalletView| -> Hits<'a> {
            let mut hits = Hits::new();
            for tx in v.transactions.iter().filter(|t| t.is_signer(&v.address) && self.third(&t.fee_payer)) {
                hits.entry(tx.fee_payer).or_insert(Hit { tx, ix: None });
            }
            hits
        };
        let hits = [paid(self.a), paid(self.b)];
        let detail = |who: &str| format!("{who} paid the fees of transactions both wallets signed.");
        self.shared_third("shared_fee_payer", 0.8, hits, "fees paid by", detail);
    }

    /// Both wallets' last outflow, or largest outflow of an asset, went to one address.
    fn shared_sweep_destination(&mut self) {
        let sweeps = |flows: &[Transfer<'a>]| -> Hits<'a> {
            let out: Vec<&Transfer<'a>> =
                flows.iter().filter(|t| t.direction == Direction::Out && !t.is_dust()).collect();
            let mut largest: BTreeMap<Asset, &Transfer<'a>> = BTreeMap::new();
            for t in &out {
                let best = largest.entry(t.asset).or_insert(t);
                if t.amount > best.amount {
                    *best = t;
                }
            }
            // Flows are newest first: the first outflow is the last one made.
            let picked = out.first().copied().into_iter().chain(largest.into_values());
            let mut hits = Hits::new();
            for t in picked.filter(|t| self.third(&t.counterparty)) {
                hits.entry(t.counterparty).or_insert(Hit { tx: t.tx, ix: Some(t.ix) });
            }
            hits
        };
        let hits = [sweeps(&self.flows_a), sweeps(&self.flows_b)];
        let detail = |who: &str| format!("Both wallets' last or largest outflows went to {who}.");
        self.shared_third("shared_sweep_destination", 0.7, hits, "last or largest outflow to", detail);
    }

    /// Token accounts each wallet closed returned their rent to one third address.
    fn shared_rent_destination(&mut self) {
        let rent = |v: &'a WalletView| -> Hits<'a> {
            let mut hits = Hits::new();
            for tx in v.transactions.iter().filter(|t| !t.failed()) {
                for ix in &tx.instructions {
                    if let InstructionKind::TokenCloseAccount { destination, owner, .. } = &ix.kind {
                        if *owner == v.address && self.third(destination) {
                            hits.entry(*destination).or_insert(Hit { tx, ix: Some(ix) });
                        }
                    }
                }
            }
            hits
        };
        let hits = [rent(self.a), rent(self.b)];
        let detail = |who: &str| format!("Both wallets closed token accounts with the rent returned to {who}.");
        self.shared_third("shared_rent_destination", 0.7, hits, "closed account's rent returned to", detail);
    }

    fn shared_counterparties(&mut self) {
        let (a, b) = (self.a.address, self.b.address);
        let set = |flows: &[Transfer<'_>]| -> BTreeSet<Pubkey> {
            flows.iter().map(|t| t.counterparty).filter(|k| *k != a && *k != b && self.personal(k)).collect()
        };
        let (sa, sb) = (set(&self.flows_a), set(&self.flows_b));
        let (strength, shared) = jaccard(&sa, &sb);
        if shared.is_empty() {
            return;
        }
        let examples: Vec<Transfer<'a>> = self
            .flows_a
            .iter()
            .chain(self.flows_b.iter())
            .filter(|t| shared.contains(&t.counterparty))
            .take(LINK_EVIDENCE_MAX)
            .copied()
            .collect();
        let evidence = examples
            .iter()
            .map(|t| self.cite(t, format!("transfer with shared counterparty {}", t.counterparty)))
            .collect();
        self.push(
            "shared_counterparties",
            strength,
            format!("{} counterparties in common (Jaccard {:.2}).", shared.len(), strength),
            evidence,
        );
    }

    fn shared_programs(&mut self) {
        let programs = |v: &'a WalletView| -> BTreeSet<Pubkey> {
            v.transactions
                .iter()
                .filter(|t| t.is_signer(&v.address))
                .flat_map(|t| &t.instructions)
                .map(|i| i.program_id)
                .filter(|p| !self.labels.is_hub(p))
                .collect()
        };
        let (pa, pb) = (programs(self.a), programs(self.b));
        let (strength, shared) = jaccard(&pa, &pb);
        if shared.is_empty() {
            return;
        }
        let mut evidence = Vec::new();
        for v in [self.a, self.b] {
            let hit = v
                .transactions
                .iter()
                .filter(|t| t.is_signer(&v.address))
                .find_map(|t| t.instructions.iter().find(|i| shared.contains(&i.program_id)).map(|i| (t, i)));
            if let Some((t, i)) = hit {
                evidence.push(self.book.instruction(t, i, || "invocation of a program both wallets use".into()));
            }
        }
        self.push(
            "shared_programs",
            strength,
            format!("{} unlabelled programs used by both (Jaccard {:.2}).", shared.len(), strength),
            evidence,
        );
    }

    fn shared_mints(&mut self) {
        let mints = |v: &WalletView| -> BTreeSet<Pubkey> {
            v.token_accounts.iter().map(|t| t.mint).filter(|m| !self.labels.is_hub(m)).collect()
        };
        let (ma, mb) = (mints(self.a), mints(self.b));
        let (strength, shared) = jaccard(&ma, &mb);
        if shared.is_empty() {
            return;
        }
        let mut evidence = Vec::new();
        for v in [self.a, self.b] {
            if let Some(t) = v.token_accounts.iter().find(|t| shared.contains(&t.mint)) {
                let slot = v.coverage.as_of_slot;
                evidence
                    .push(self.book.account(&t.address, slot, || format!("token account of shared mint {}", t.mint)));
            }
        }
        self.push(
            "shared_mints",
            strength,
            format!("{} unlabelled mints held by both (Jaccard {:.2}).", shared.len(), strength),
            evidence,
        );
    }

    fn temporal_overlap(&mut self) {
        let days = |v: &WalletView| -> BTreeSet<i64> {
            v.transactions
                .iter()
                .filter(|t| t.is_signer(&v.address))
                .filter_map(|t| t.block_time)
                .map(|s| s.div_euclid(DAY_S))
                .collect()
        };
        let (da, db) = (days(self.a), days(self.b));
        let shared: BTreeSet<i64> = da.intersection(&db).copied().collect();
        let union = da.union(&db).count();
        if shared.len() < 2 || union == 0 {
            return; // one shared day is coincidence
        }
        let strength = shared.len() as f64 / union as f64;
        let mut evidence = Vec::new();
        for v in [self.a, self.b] {
            let hit = v.transactions.iter().find(|t| {
                t.is_signer(&v.address) && t.block_time.is_some_and(|s| shared.contains(&s.div_euclid(DAY_S)))
            });
            if let Some(t) = hit {
                evidence.push(self.book.transaction(t, || "activity on a day both wallets were active".into()));
            }
        }
        self.push(
            "temporal_overlap",
            strength,
            format!("Active on {} of the same days (Jaccard {:.2}).", shared.len(), strength),
            evidence,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(kind: &'static str, strength: f64) -> Link {
        Link { kind, strength, detail: String::new(), evidence_ids: vec!["ev_1".into()] }
    }

    #[test]
    fn tiers_follow_links() {
        assert_eq!(relationship(&[], similarity(&[])), Relationship::Unrelated);
        let cosign = [link("co_signer", 1.0)];
        assert_eq!(relationship(&cosign, similarity(&cosign)), Relationship::LikelySameOwner);
        let funder_and_transfer = [link("shared_funder", 0.9), link("direct_transfer", 1.0)];
        assert_eq!(relationship(&funder_and_transfer, similarity(&funder_and_transfer)), Relationship::LikelySameOwner);
        let funder = [link("shared_funder", 0.9)];
        assert_eq!(relationship(&funder, similarity(&funder)), Relationship::Linked);
        let programs = [link("shared_programs", 0.5)];
        assert_eq!(relationship(&programs, similarity(&programs)), Relationship::Unrelated);
    }

    #[test]
    fn similarity_grows_with_links() {
        let one = [link("shared_mints", 0.5)];
        let two = [link("shared_mints", 0.5), link("temporal_overlap", 0.5)];
        assert!(similarity(&two) > similarity(&one));
        assert!(similarity(&two) <= 1.0);
    }
}
