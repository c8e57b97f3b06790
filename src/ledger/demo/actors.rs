//! The named cast of the demo ledger: archetype wallets, counterparties, flagged (malicious)
//! addresses, synthetic programs, demo mints and their token accounts, and the catalog that
//! describes each archetype.
//!
//! Owns: every fixed name and the address derived from it (`Cast`), the archetype catalog
//! (`ARCHETYPES`), the flagged-address and demo-mint tables. Called from the demo ledger's
//! thread (and by the labels tooling through `flagged_addresses`); pure.
//!
//! Invariant: nothing here depends on the seed — every address is derived from its name by
//! `keys::named_wallet` (wallets, programs, mints: on the curve) or as a program-derived
//! address (token accounts, pools, vaults: off the curve), so the README and the labels file
//! can list them once. Deliberately absent: balances, amounts and times (the world's).

use crate::ledger::demo::keys::{self, named_off_curve, named_wallet, BUILTIN};
use crate::ledger::demo::state::AccountExts;
use crate::ledger::model::TokenProgram;
use crate::pubkey::Pubkey;

/// One archetype as `xray demo list` describes it.
pub struct ArchetypeDef {
    pub name: &'static str,
    pub description: &'static str,
    /// Signal kinds the engine raises for it, exactly (tests/integration/engine/golden.rs checks);
    /// `not_eligible:<reason>` for accounts that are not wallets, with the reason the API and
    /// the CLI answer: a local one (contract §3 step 7: off the curve, a known id) before any
    /// the ledger would give.
    pub expected_signals: &'static [&'static str],
}

pub const ARCHETYPES: &[ArchetypeDef] = &[
    ArchetypeDef {
        name: "clean",
        description: "Ordinary wallet: SOL and token transfers with known counterparties, an ATA creation, memos.",
        expected_signals: &[],
    },
    ArchetypeDef {
        name: "open_delegation",
        description: "Unlimited approve to an unknown delegate on one token account, full-balance approve to a flagged delegate on another.",
        expected_signals: &["open_token_delegation"],
    },
    ArchetypeDef {
        name: "owner_change_drained",
        description: "Signed a setAuthority(accountOwner) handing a token account to an attacker, who moved the tokens out; SOL swept to the attacker.",
        expected_signals: &["token_account_owner_changed", "flagged_counterparty_transfer", "wallet_swept"],
    },
    ArchetypeDef {
        name: "assigned_wallet",
        description: "The wallet itself was assigned to a flagged drainer program, which then swept its lamports.",
        expected_signals: &["wallet_assigned"],
    },
    ArchetypeDef {
        name: "foreign_nonce_authority",
        description: "Funded a durable nonce account whose authority is someone else, who advanced it and used it to move the wallet's SOL.",
        expected_signals: &["foreign_nonce_authority"],
    },
    ArchetypeDef {
        name: "outsider_nonce",
        description: "Named as the authority of a durable nonce account that another address created and funded (the pre-signed transaction pattern); the wallet's own history shows nothing of it.",
        expected_signals: &["outsider_nonce_authority"],
    },
    ArchetypeDef {
        name: "foreign_stake_authority",
        description: "Funded and delegated a stake account, then authorized someone else as its staker and withdrawer.",
        expected_signals: &["foreign_stake_authority"],
    },
    ArchetypeDef {
        name: "permanent_delegate_holder",
        description: "Holds Token-2022 tokens of a mint with a permanent delegate, and of a mint with a transfer hook.",
        expected_signals: &[
            "permanent_delegate_mint",
            "transfer_hook_mint",
            "freeze_authority_mint",
            "mintable_supply_mint",
            "unsolicited_token",
        ],
    },
    ArchetypeDef {
        name: "mint_risk_holder",
        description: "Holds Token-2022 tokens of a mint with a 10 % transfer fee and a mint close authority, still mintable by its unknown issuer; of a default-frozen mint the issuer thawed for it; and an unsolicited non-transferable airdrop.",
        expected_signals: &[
            "transfer_fee_mint",
            "close_authority_mint",
            "mintable_supply_mint",
            "default_frozen_mint",
            "freeze_authority_mint",
            "non_transferable_mint",
            "unsolicited_token",
        ],
    },
    ArchetypeDef {
        name: "poisoning_victim",
        description: "Got dust (SOL and a tiny token transfer) from a look-alike of a real counterparty (same first and last 4 characters), then paid the look-alike.",
        expected_signals: &["address_poisoning_received", "sent_to_lookalike"],
    },
    ArchetypeDef {
        name: "drainer_contact",
        description: "Called a flagged drainer program directly and through a router (CPI), and received funds from a flagged address.",
        expected_signals: &["flagged_program_interaction", "flagged_counterparty_transfer"],
    },
    ArchetypeDef {
        name: "sanctioned_contact",
        description: "First funded by an address on a (synthetic, demo) sanctions list, later paid it back; otherwise ordinary.",
        expected_signals: &["sanctioned_counterparty"],
    },
    ArchetypeDef {
        name: "sanctioned_hop",
        description: "First funded by an ordinary-looking address that had itself received funds from a sanctioned (synthetic, demo) address: exposure one hop out.",
        expected_signals: &["sanctioned_funder_exposure"],
    },
    ArchetypeDef {
        name: "funder",
        description: "Common funder of the sybil wallets.",
        expected_signals: &[],
    },
    ArchetypeDef {
        name: "sybil_a",
        description: "Strongly linked to sybil_b: same funder, a direct transfer, a co-signed transaction, shared counterparties and timing.",
        expected_signals: &["rent_locked_empty_accounts"],
    },
    ArchetypeDef {
        name: "sybil_b",
        description: "Strongly linked to sybil_a (see there).",
        expected_signals: &["rent_locked_empty_accounts"],
    },
    ArchetypeDef {
        name: "sybil_c",
        description: "Weakly linked to sybil_d: shared funder only.",
        expected_signals: &[],
    },
    ArchetypeDef {
        name: "sybil_d",
        description: "Weakly linked to sybil_c: shared funder only.",
        expected_signals: &[],
    },
    ArchetypeDef {
        name: "farm_a",
        description: "Farm wallet run like farm_b, funded by another exchange: a relayer pays its fees, it sold its DEMO to a collector, closed the emptied account with the rent to a third address and swept its SOL to the collector.",
        // Its SOL swept to a collector it had not dealt with before, nothing back: from the
        // wallet's side a farm's sweep is a drain's (issue #41: whoever the recipient is).
        expected_signals: &["wallet_swept"],
    },
    ArchetypeDef {
        name: "farm_b",
        description: "Farm wallet linked to farm_a by how both are run (see there): shared fee payer, sweep destination and rent destination, no shared funder.",
        expected_signals: &["wallet_swept"],
    },
    ArchetypeDef {
        name: "busy_trader",
        description: "Thousands of transactions: DEX swaps (v0, lookup table), token transfers, bursts, failed swaps; history deeper than the default depth.",
        expected_signals: &["high_failure_rate", "automated_bursts", "partial_history"],
    },
    ArchetypeDef {
        name: "new_wallet",
        description: "First transaction a few hours ago.",
        expected_signals: &["new_wallet"],
    },
    ArchetypeDef {
        name: "dormant_woke",
        description: "Active long ago, silent for more than a year, active again this week.",
        expected_signals: &["dormant_reactivated"],
    },
    ArchetypeDef {
        name: "token_mint",
        description: "Not a wallet: the DUSD token mint (analysis is refused as ineligible).",
        expected_signals: &["not_eligible:token_mint"],
    },
    ArchetypeDef {
        name: "token_account",
        description: "Not a wallet: clean's DUSD token account, an associated token account: a program-derived address, off the curve, so refused before the ledger is read (which would say token_account).",
        expected_signals: &["not_eligible:off_curve"],
    },
    ArchetypeDef {
        name: "drainer_program",
        description: "Not a wallet: an executable (flagged) drainer program.",
        expected_signals: &["not_eligible:executable"],
    },
    ArchetypeDef {
        name: "program_data_account",
        description: "Not a wallet: a DEX pool state account owned by a program, with data, at a program-derived address: off the curve, so refused before the ledger is read (which would say program_owned).",
        expected_signals: &["not_eligible:off_curve"],
    },
    // The timeline wallets: ordinary until their event, which only a timeline ledger has
    // (`demo+timeline`; see `timeline`). Their expected signals are the plain demo's.
    ArchetypeDef {
        name: "timeline_delegate",
        description: "Ordinary wallet (SOL and DUSD from its funder, payments to a merchant) until 60 s after a demo+timeline ledger starts: then it approves an unlimited delegate, an unknown address, on its DUSD account (open_token_delegation from then on).",
        expected_signals: &[],
    },
    ArchetypeDef {
        name: "timeline_dust",
        description: "Ordinary wallet that pays a friend, until 90 s after a demo+timeline ledger starts: then a look-alike of the friend (same first and last 4 characters) sends it dust, SOL and one DUSD base unit (address_poisoning_received from then on).",
        expected_signals: &[],
    },
    ArchetypeDef {
        name: "timeline_quiet",
        description: "Ordinary wallet (SOL and DUSD from its funder, payments to a merchant) that stays quiet on every timeline: nothing new ever happens to it.",
        expected_signals: &[],
    },
];

/// `(name, label, kind)` of every flagged address; the name derives the address.
pub const FLAGGED: &[(&str, &str, &str)] = &[
    ("flagged:drainer-program-a", "Demo drainer program A", "drainer_program"),
    ("flagged:drainer-program-b", "Demo drainer program B (assign sweeper)", "drainer_program"),
    ("flagged:attacker", "Demo attacker (owner-change drain)", "attacker"),
    ("flagged:phishing-delegate", "Demo phishing delegate", "attacker"),
    ("flagged:drainer-collector", "Demo drainer collector", "attacker"),
    ("flagged:scam-funder", "Demo scam funder", "scam_funder"),
];

const PLAIN: AccountExts = AccountExts { hook: false, fee: false, non_transferable: false };

/// `(name, label, list)` of every sanctioned address: synthetic entries of a demo list (the
/// default labels file carries them with category `sanctioned` and the list as `source`).
pub const SANCTIONED: &[(&str, &str, &str)] =
    &[("sanctioned:demo-mixer", "Demo sanctioned mixer (synthetic SDN entry)", "Demo SDN list (synthetic) 2026-11-01")];

/// Every sanctioned address with its label and list.
pub fn sanctioned_addresses() -> Vec<(Pubkey, &'static str, &'static str)> {
    SANCTIONED.iter().map(|(name, label, list)| (named_wallet(name), *label, *list)).collect()
}

/// `(symbol, decimals, program, the account extensions its mint extensions require)` of the
/// demo mints; the symbol derives the address. The world gives each mint its extensions and
/// checks they require these.
pub const MINTS: &[(&str, u8, TokenProgram, AccountExts)] = &[
    ("DUSD", 6, TokenProgram::Token, PLAIN),
    ("DEMO", 9, TokenProgram::Token, PLAIN),
    ("DBONK", 5, TokenProgram::Token, PLAIN),
    ("PDT", 6, TokenProgram::Token2022, PLAIN),
    ("HOOK", 6, TokenProgram::Token2022, AccountExts { hook: true, ..PLAIN }),
    ("FEE", 6, TokenProgram::Token2022, AccountExts { fee: true, ..PLAIN }),
    ("KYC", 6, TokenProgram::Token2022, PLAIN),
    ("SOUL", 0, TokenProgram::Token2022, AccountExts { non_transferable: true, ..PLAIN }),
];

fn mint_key(symbol: &str) -> Pubkey {
    named_wallet(&format!("mint:{symbol}"))
}

fn wallet(name: &str) -> Pubkey {
    named_wallet(&format!("wallet:{name}"))
}

fn aux(name: &str) -> Pubkey {
    named_wallet(&format!("aux:{name}"))
}

fn flagged(name: &str) -> Pubkey {
    named_wallet(&format!("flagged:{name}"))
}

/// Every flagged address with its label and kind.
pub fn flagged_addresses() -> Vec<(Pubkey, &'static str, &'static str)> {
    FLAGGED.iter().map(|(name, label, kind)| (named_wallet(name), *label, *kind)).collect()
}

/// Every demo mint with its symbol.
pub fn demo_mints() -> Vec<(Pubkey, &'static str)> {
    MINTS.iter().map(|(symbol, ..)| (mint_key(symbol), *symbol)).collect()
}

/// A mint of the cast: address, decimals, program.
#[derive(Debug, Clone, Copy)]
pub struct Mint {
    pub key: Pubkey,
    pub decimals: u8,
    pub program: TokenProgram,
    /// What the mint's token accounts carry besides `immutableOwner` (Token-2022).
    pub exts: AccountExts,
}

impl Mint {
    fn named(symbol: &str) -> Mint {
        let (_, decimals, program, exts) =
            MINTS.iter().find(|(s, ..)| *s == symbol).copied().unwrap_or((symbol, 0, TokenProgram::Token, PLAIN));
        Mint { key: mint_key(symbol), decimals, program, exts }
    }

    /// The associated token account of `owner` for this mint.
    pub fn ata(&self, owner: &Pubkey) -> Pubkey {
        keys::ata(owner, &self.key, self.program)
    }

    /// `n` whole tokens in base units.
    pub fn units(&self, n: u64) -> u64 {
        n.saturating_mul(10u64.pow(u32::from(self.decimals)))
    }
}

/// A synthetic upgradeable program: its id and program-data address.
#[derive(Debug, Clone, Copy)]
pub struct DemoProgram {
    pub id: Pubkey,
    pub program_data: Pubkey,
}

impl DemoProgram {
    fn new(id: Pubkey) -> DemoProgram {
        DemoProgram { id, program_data: keys::find_pda(&[id.as_bytes()], &BUILTIN.bpf_upgradeable_loader) }
    }
}

/// Every named address of the demo, derived once per ledger.
#[derive(Debug, Clone)]
pub struct Cast {
    // Archetype wallets.
    pub clean: Pubkey,
    pub open_delegation: Pubkey,
    pub owner_change_drained: Pubkey,
    pub assigned_wallet: Pubkey,
    pub foreign_nonce_authority: Pubkey,
    pub outsider_nonce: Pubkey,
    pub foreign_stake_authority: Pubkey,
    pub permanent_delegate_holder: Pubkey,
    pub mint_risk_holder: Pubkey,
    pub poisoning_victim: Pubkey,
    pub drainer_contact: Pubkey,
    pub sanctioned_contact: Pubkey,
    pub sanctioned_hop: Pubkey,
    pub funder: Pubkey,
    pub sybil_a: Pubkey,
    pub sybil_b: Pubkey,
    pub sybil_c: Pubkey,
    pub sybil_d: Pubkey,
    pub farm_a: Pubkey,
    pub farm_b: Pubkey,
    pub busy_trader: Pubkey,
    pub new_wallet: Pubkey,
    pub dormant_woke: Pubkey,
    // Timeline archetype wallets (`timeline`).
    pub timeline_delegate: Pubkey,
    pub timeline_dust: Pubkey,
    pub timeline_quiet: Pubkey,
    // Counterparties.
    pub exchanges: [Pubkey; 3],
    pub alice: Pubkey,
    pub bob: Pubkey,
    pub carol: Pubkey,
    pub merchant: Pubkey,
    pub dapp_delegate: Pubkey,
    pub nonce_operator: Pubkey,
    pub nonce_account: Pubkey,
    /// Creates `planted_nonce` naming `outsider_nonce` as its authority.
    pub nonce_planter: Pubkey,
    pub planted_nonce: Pubkey,
    pub stake_taker: Pubkey,
    pub stake_account: Pubkey,
    pub vote_account: Pubkey,
    pub pdt_issuer: Pubkey,
    pub pdt_delegate: Pubkey,
    pub hook_issuer: Pubkey,
    pub fee_issuer: Pubkey,
    pub kyc_issuer: Pubkey,
    pub soul_issuer: Pubkey,
    pub friend: Pubkey,
    /// Funds sanctioned_hop after receiving from the sanctioned mixer.
    pub hop_funder: Pubkey,
    pub lookalike: Pubkey,
    pub sybil_targets: [Pubkey; 2],
    /// The farm's fee payer, sweep collector and rent destination.
    pub fee_relayer: Pubkey,
    pub sweep_collector: Pubkey,
    pub rent_collector: Pubkey,
    pub trader_peers: [Pubkey; 2],
    /// The busy trader's DUSD, DEMO and DBONK accounts (derived once: trades name them often).
    pub trader_atas: [Pubkey; 3],
    /// The trader peers' DUSD accounts.
    pub peer_atas: [Pubkey; 2],
    pub dex_admin: Pubkey,
    /// The timeline wallets' own counterparties (none of them ever meets the rest of the
    /// cast, so the timeline leaves every other history as it is): funder, merchant, the
    /// friend `timeline_dust` pays, its look-alike, and the unknown delegate.
    pub timeline_funder: Pubkey,
    pub timeline_merchant: Pubkey,
    pub timeline_friend: Pubkey,
    pub timeline_lookalike: Pubkey,
    pub timeline_unknown_delegate: Pubkey,
    // Flagged.
    pub drainer_a: DemoProgram,
    pub drainer_b: DemoProgram,
    pub attacker: Pubkey,
    pub phishing_delegate: Pubkey,
    pub drainer_collector: Pubkey,
    pub scam_funder: Pubkey,
    // Sanctioned.
    pub sanctioned_mixer: Pubkey,
    // Synthetic programs.
    pub dex: DemoProgram,
    pub router: DemoProgram,
    pub hook_program: DemoProgram,
    pub airdrop: DemoProgram,
    // Mints.
    pub dusd: Mint,
    pub demo: Mint,
    pub dbonk: Mint,
    pub pdt: Mint,
    pub hook: Mint,
    pub fee: Mint,
    pub kyc: Mint,
    pub soul: Mint,
    // DEX accounts: pools (DEMO/DUSD, DBONK/DUSD), their authority, vaults, lookup table.
    pub pools: [Pubkey; 2],
    pub pool_authority: Pubkey,
    /// `[pool 0 DEMO, pool 0 DUSD, pool 1 DBONK, pool 1 DUSD]`.
    pub vaults: [Pubkey; 4],
    pub lookup_table: Pubkey,
}

impl Cast {
    pub fn new() -> Cast {
        let (dusd, demo, dbonk) = (Mint::named("DUSD"), Mint::named("DEMO"), Mint::named("DBONK"));
        let dex = DemoProgram::new(named_wallet("program:demo-dex"));
        let pool = |a: &Mint, b: &Mint| keys::find_pda(&[b"pool", a.key.as_bytes(), b.key.as_bytes()], &dex.id);
        let pools = [pool(&demo, &dusd), pool(&dbonk, &dusd)];
        let vault = |p: &Pubkey, m: &Mint| keys::find_pda(&[b"vault", p.as_bytes(), m.key.as_bytes()], &dex.id);
        let friend = aux("friend");
        let busy_trader = wallet("busy_trader");
        let trader_peers = [aux("trader-peer-1"), aux("trader-peer-2")];
        let timeline_friend = aux("timeline-friend");
        Cast {
            clean: wallet("clean"),
            open_delegation: wallet("open_delegation"),
            owner_change_drained: wallet("owner_change_drained"),
            assigned_wallet: wallet("assigned_wallet"),
            foreign_nonce_authority: wallet("foreign_nonce_authority"),
            outsider_nonce: wallet("outsider_nonce"),
            foreign_stake_authority: wallet("foreign_stake_authority"),
            permanent_delegate_holder: wallet("permanent_delegate_holder"),
            mint_risk_holder: wallet("mint_risk_holder"),
            poisoning_victim: wallet("poisoning_victim"),
            drainer_contact: wallet("drainer_contact"),
            sanctioned_contact: wallet("sanctioned_contact"),
            sanctioned_hop: wallet("sanctioned_hop"),
            funder: wallet("funder"),
            sybil_a: wallet("sybil_a"),
            sybil_b: wallet("sybil_b"),
            sybil_c: wallet("sybil_c"),
            sybil_d: wallet("sybil_d"),
            farm_a: wallet("farm_a"),
            farm_b: wallet("farm_b"),
            busy_trader,
            new_wallet: wallet("new_wallet"),
            dormant_woke: wallet("dormant_woke"),
            timeline_delegate: wallet("timeline_delegate"),
            timeline_dust: wallet("timeline_dust"),
            timeline_quiet: wallet("timeline_quiet"),
            exchanges: [aux("exchange-1"), aux("exchange-2"), aux("exchange-3")],
            alice: aux("alice"),
            bob: aux("bob"),
            carol: aux("carol"),
            merchant: aux("merchant"),
            dapp_delegate: aux("dapp-delegate"),
            nonce_operator: aux("nonce-operator"),
            nonce_account: aux("nonce-account"),
            nonce_planter: aux("nonce-planter"),
            planted_nonce: aux("planted-nonce"),
            stake_taker: aux("stake-taker"),
            stake_account: aux("stake-account"),
            vote_account: aux("vote-account"),
            pdt_issuer: aux("pdt-issuer"),
            pdt_delegate: aux("pdt-permanent-delegate"),
            hook_issuer: aux("hook-issuer"),
            fee_issuer: aux("fee-issuer"),
            kyc_issuer: aux("kyc-issuer"),
            soul_issuer: aux("soul-issuer"),
            friend,
            hop_funder: aux("hop-funder"),
            // A look-alike always exists for a fixed name (unit-tested); the fallback keeps
            // construction total should the text construction ever fail.
            lookalike: keys::lookalike(&friend, "lookalike:friend").unwrap_or_else(|| aux("lookalike")),
            sybil_targets: [aux("sybil-target-1"), aux("sybil-target-2")],
            fee_relayer: aux("fee-relayer"),
            sweep_collector: aux("sweep-collector"),
            rent_collector: aux("rent-collector"),
            trader_peers,
            trader_atas: [&dusd, &demo, &dbonk].map(|m| m.ata(&busy_trader)),
            peer_atas: trader_peers.map(|p| dusd.ata(&p)),
            dex_admin: aux("dex-admin"),
            timeline_funder: aux("timeline-funder"),
            timeline_merchant: aux("timeline-merchant"),
            timeline_friend,
            timeline_lookalike: keys::lookalike(&timeline_friend, "lookalike:timeline-friend")
                .unwrap_or_else(|| aux("timeline-lookalike")),
            timeline_unknown_delegate: aux("timeline-unknown-delegate"),
            drainer_a: DemoProgram::new(flagged("drainer-program-a")),
            drainer_b: DemoProgram::new(flagged("drainer-program-b")),
            attacker: flagged("attacker"),
            phishing_delegate: flagged("phishing-delegate"),
            drainer_collector: flagged("drainer-collector"),
            scam_funder: flagged("scam-funder"),
            sanctioned_mixer: named_wallet(SANCTIONED[0].0),
            dex,
            router: DemoProgram::new(named_wallet("program:demo-router")),
            hook_program: DemoProgram::new(named_wallet("program:demo-transfer-hook")),
            airdrop: DemoProgram::new(named_wallet("program:demo-airdrop")),
            pdt: Mint::named("PDT"),
            hook: Mint::named("HOOK"),
            fee: Mint::named("FEE"),
            kyc: Mint::named("KYC"),
            soul: Mint::named("SOUL"),
            vaults: [
                vault(&pools[0], &demo),
                vault(&pools[0], &dusd),
                vault(&pools[1], &dbonk),
                vault(&pools[1], &dusd),
            ],
            pools,
            pool_authority: keys::find_pda(&[b"authority"], &dex.id),
            lookup_table: named_off_curve("aux:lookup-table"),
            dusd,
            demo,
            dbonk,
        }
    }

    /// The address of an archetype of `ARCHETYPES` by name.
    pub fn archetype(&self, name: &str) -> Option<Pubkey> {
        Some(match name {
            "clean" => self.clean,
            "open_delegation" => self.open_delegation,
            "owner_change_drained" => self.owner_change_drained,
            "assigned_wallet" => self.assigned_wallet,
            "foreign_nonce_authority" => self.foreign_nonce_authority,
            "outsider_nonce" => self.outsider_nonce,
            "foreign_stake_authority" => self.foreign_stake_authority,
            "permanent_delegate_holder" => self.permanent_delegate_holder,
            "mint_risk_holder" => self.mint_risk_holder,
            "poisoning_victim" => self.poisoning_victim,
            "drainer_contact" => self.drainer_contact,
            "sanctioned_contact" => self.sanctioned_contact,
            "sanctioned_hop" => self.sanctioned_hop,
            "funder" => self.funder,
            "sybil_a" => self.sybil_a,
            "sybil_b" => self.sybil_b,
            "sybil_c" => self.sybil_c,
            "sybil_d" => self.sybil_d,
            "farm_a" => self.farm_a,
            "farm_b" => self.farm_b,
            "busy_trader" => self.busy_trader,
            "new_wallet" => self.new_wallet,
            "dormant_woke" => self.dormant_woke,
            "timeline_delegate" => self.timeline_delegate,
            "timeline_dust" => self.timeline_dust,
            "timeline_quiet" => self.timeline_quiet,
            "token_mint" => self.dusd.key,
            "token_account" => self.dusd.ata(&self.clean),
            "drainer_program" => self.drainer_a.id,
            "program_data_account" => self.pools[0],
            _ => return None,
        })
    }

    /// Named accounts that are neither archetypes nor flagged, with a short kind, for
    /// documentation and for the labels file's known entities.
    pub fn auxiliary(&self) -> Vec<(Pubkey, &'static str, &'static str)> {
        let mut out = vec![
            (self.exchanges[0], "Demo exchange 1 hot wallet", "exchange"),
            (self.exchanges[1], "Demo exchange 2 hot wallet", "exchange"),
            (self.exchanges[2], "Demo exchange 3 hot wallet", "exchange"),
            (self.dex.id, "Demo DEX program", "program"),
            (self.router.id, "Demo router program", "program"),
            (self.hook_program.id, "Demo transfer-hook program", "program"),
            (self.airdrop.id, "Demo airdrop program", "program"),
            (self.pools[0], "Demo DEX pool DEMO/DUSD", "program_account"),
            (self.pools[1], "Demo DEX pool DBONK/DUSD", "program_account"),
            (self.vote_account, "Demo validator vote account", "vote_account"),
        ];
        out.extend([
            (self.alice, "alice", "wallet"),
            (self.bob, "bob", "wallet"),
            (self.carol, "carol", "wallet"),
            (self.merchant, "merchant", "wallet"),
            (self.friend, "friend (poisoning target)", "wallet"),
        ]);
        out
    }
}

impl Default for Cast {
    fn default() -> Self {
        Cast::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_archetype_has_an_address() {
        let cast = Cast::new();
        let mut seen = std::collections::BTreeSet::new();
        for a in ARCHETYPES {
            let key = cast.archetype(a.name).unwrap_or_else(|| panic!("{}", a.name));
            assert!(seen.insert(key), "duplicate address for {}", a.name);
        }
        assert!(cast.archetype("nope").is_none());
    }

    #[test]
    fn curve_placement_follows_account_kind() {
        let cast = Cast::new();
        assert!(cast.clean.is_on_curve() && cast.drainer_a.id.is_on_curve() && cast.dusd.key.is_on_curve());
        assert!(!cast.pools[0].is_on_curve() && !cast.vaults[3].is_on_curve());
        assert!(!cast.dusd.ata(&cast.clean).is_on_curve());
        assert!(!cast.pool_authority.is_on_curve() && !cast.lookup_table.is_on_curve());
    }

    #[test]
    fn lookalike_shares_both_ends_with_friend() {
        let cast = Cast::new();
        let (f, l) = (cast.friend.to_string(), cast.lookalike.to_string());
        assert_ne!(f, l);
        assert_eq!((&f[..4], &f[f.len() - 4..]), (&l[..4], &l[l.len() - 4..]));
    }

    #[test]
    fn timeline_lookalike_shares_both_ends_with_its_friend() {
        let cast = Cast::new();
        let (f, l) = (cast.timeline_friend.to_string(), cast.timeline_lookalike.to_string());
        assert_ne!(f, l);
        assert_eq!((&f[..4], &f[f.len() - 4..]), (&l[..4], &l[l.len() - 4..]));
        assert!(cast.timeline_lookalike.is_on_curve());
    }

    #[test]
    fn flagged_and_mints_are_seed_independent_and_in_the_cast() {
        let cast = Cast::new();
        let flagged: Vec<Pubkey> = flagged_addresses().into_iter().map(|(k, _, _)| k).collect();
        for k in [cast.drainer_a.id, cast.drainer_b.id, cast.attacker, cast.phishing_delegate, cast.scam_funder] {
            assert!(flagged.contains(&k));
        }
        let mints: Vec<Pubkey> = demo_mints().into_iter().map(|(k, _)| k).collect();
        let cast_mints = [cast.dusd, cast.demo, cast.dbonk, cast.pdt, cast.hook, cast.fee, cast.kyc, cast.soul];
        assert_eq!(mints, cast_mints.map(|m| m.key).to_vec());
    }
}
