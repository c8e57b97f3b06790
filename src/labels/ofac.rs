//! The OFAC SDN list's Solana addresses (issue #16): read from the list's public formats — the
//! legacy CSV (`sdn.csv`, whose `Remarks` column holds `Digital Currency Address - SOL <addr>;`
//! entries) and the legacy XML (`sdn.xml`, an `<id>` with `<idType>Digital Currency Address -
//! SOL</idType>` per address) — and written as labels of category `sanctioned`, with the list's
//! name and date kept as provenance.
//!
//! Owns: `SdnAddress`, the two readers and `labels_toml`. Pure; the CLI (`xray labels import`)
//! calls it on the main thread.
//!
//! Invariant: an address is kept only when it is base58 of exactly 32 bytes (OFAC's field is
//! free text); one that is not is counted in `Import::skipped`, never silently dropped.
//! Invariant: bounded — at most `LABELS_LEN_MAX` addresses; the caller bounds the file's size.
//! Invariant: linear — each address is checked against those kept in one hash lookup, so the
//! largest list allowed (`LABELS_LEN_MAX`) imports in seconds; the output keeps list order.
//! Deliberately absent: fetching the list (no network here: the operator downloads it) and the
//! other chains' addresses.

use std::collections::{BTreeMap, HashSet};

use quick_xml::events::Event;

use crate::config::LABELS_LEN_MAX;
use crate::pubkey::Pubkey;

/// The `idType` (XML) and the remark prefix (CSV) of a Solana address.
pub const SOL_ID_TYPE: &str = "Digital Currency Address - SOL";

/// One Solana address of the SDN list and whom it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SdnAddress {
    pub address: Pubkey,
    /// The SDN's name as listed.
    pub name: String,
    /// The sanctions programs of the entry (`CYBER2`, `DPRK3`, …).
    pub programs: Vec<String>,
    /// The entry's number on the list (`ent_num` / `uid`).
    pub entry: String,
}

/// What a reader found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Import {
    /// Solana addresses, each once (the first entry naming it wins), in list order.
    pub addresses: Vec<SdnAddress>,
    /// SOL entries whose address is not base58 of 32 bytes.
    pub skipped: usize,
    /// The addresses of `addresses`, for the check each new one makes: a hash lookup, where a
    /// search of the list made an import of n addresses take n²/2 comparisons.
    seen: HashSet<Pubkey>,
}

impl Import {
    fn add(&mut self, text: &str, name: &str, programs: &[String], entry: &str) -> Result<(), String> {
        let Ok(address) = Pubkey::parse(text.trim()) else {
            self.skipped += 1;
            return Ok(());
        };
        if self.seen.contains(&address) {
            return Ok(());
        }
        if self.addresses.len() >= LABELS_LEN_MAX {
            return Err(format!("more than {LABELS_LEN_MAX} Solana addresses"));
        }
        self.seen.insert(address);
        let (name, programs, entry) = (name.trim().to_owned(), programs.to_vec(), entry.trim().to_owned());
        self.addresses.push(SdnAddress { address, name, programs, entry });
        Ok(())
    }
}

/// Reads `sdn.csv`: no header; columns `ent_num, SDN_Name, SDN_Type, Program, Title, Call_Sign,
/// Vess_type, Tonnage, GRT, Vess_flag, Vess_owner, Remarks` (`-0-` is an empty field).
pub fn read_sdn_csv(text: &str) -> Result<Import, String> {
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes());
    let mut import = Import::default();
    for (line, record) in reader.records().enumerate() {
        let record = record.map_err(|e| format!("sdn.csv record {}: {e}", line + 1))?;
        let field = |i: usize| record.get(i).map(str::trim).filter(|f| *f != "-0-").unwrap_or("");
        let remarks = field(11);
        if !remarks.contains(SOL_ID_TYPE) {
            continue;
        }
        let programs: Vec<String> =
            field(3).split(&[' ', ']', '['][..]).filter(|p| !p.is_empty()).map(str::to_owned).collect();
        for remark in remarks.split(';') {
            if let Some(address) = sol_remark(remark) {
                import.add(address, field(1), &programs, field(0))?;
            }
        }
    }
    Ok(import)
}

/// The address of one `Remarks` item naming a Solana address: `Digital Currency Address - SOL
/// <addr>` for an entry's first address, `alt. Digital Currency Address - SOL <addr>` for each
/// further one (as the real list writes them); the remarks' closing `.` is not part of it.
fn sol_remark(remark: &str) -> Option<&str> {
    let remark = remark.trim();
    let remark = remark.strip_prefix(ALT_PREFIX).map_or(remark, str::trim_start);
    let address = remark.strip_prefix(SOL_ID_TYPE)?.trim();
    Some(address.strip_suffix('.').unwrap_or(address))
}

/// How `sdn.csv` marks an entry's second and later addresses of one kind.
const ALT_PREFIX: &str = "alt.";

/// Reads `sdn.xml`: `<sdnEntry>` elements with `<uid>`, `<lastName>` (and `<firstName>`),
/// `<programList><program>` and `<idList><id><idType>/<idNumber>`.
pub fn read_sdn_xml(text: &str) -> Result<Import, String> {
    let mut reader = quick_xml::Reader::from_str(text);
    reader.config_mut().trim_text(true);
    let mut import = Import::default();
    let mut path: Vec<String> = Vec::new();
    let mut entry: BTreeMap<&'static str, String> = BTreeMap::new();
    let (mut programs, mut ids): (Vec<String>, Vec<(String, String)>) = (Vec::new(), Vec::new());
    let mut id = (String::new(), String::new());
    loop {
        match reader.read_event().map_err(|e| format!("sdn.xml at byte {}: {e}", reader.buffer_position()))? {
            Event::Start(e) => path.push(String::from_utf8_lossy(e.local_name().as_ref()).into_owned()),
            Event::End(_) => match path.pop().as_deref() {
                Some("id") => ids.push(std::mem::take(&mut id)),
                Some("sdnEntry") => {
                    let name = match (entry.get("firstName"), entry.get("lastName")) {
                        (Some(first), Some(last)) => format!("{first} {last}"),
                        (_, Some(last)) => last.clone(),
                        (first, None) => first.cloned().unwrap_or_default(),
                    };
                    let uid = entry.get("uid").cloned().unwrap_or_default();
                    for (kind, number) in ids.drain(..) {
                        if kind.trim() == SOL_ID_TYPE {
                            import.add(&number, &name, &programs, &uid)?;
                        }
                    }
                    entry.clear();
                    programs.clear();
                }
                _ => {}
            },
            Event::Text(t) => {
                let text = t.unescape().map_err(|e| format!("sdn.xml text: {e}"))?.into_owned();
                let parent = path.get(path.len().wrapping_sub(2)).map(String::as_str);
                match (parent, path.last().map(String::as_str)) {
                    (Some("sdnEntry"), Some(field @ ("uid" | "firstName" | "lastName"))) => {
                        let key = match field {
                            "uid" => "uid",
                            "firstName" => "firstName",
                            _ => "lastName",
                        };
                        entry.insert(key, text);
                    }
                    (Some("programList"), Some("program")) => programs.push(text),
                    (Some("id"), Some("idType")) => id.0 = text,
                    (Some("id"), Some("idNumber")) => id.1 = text,
                    _ => {}
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(import)
}

/// A labels file (docs/labels.md) listing every address as `sanctioned`, named after its SDN,
/// tagged `ofac` and with its programs, `source` = `list` (e.g. "OFAC SDN 2026-11-20").
pub fn labels_toml(import: &Import, list: &str) -> String {
    let mut out = String::from("version = 1\n");
    for a in &import.addresses {
        let tags: Vec<&str> = std::iter::once("ofac").chain(a.programs.iter().map(String::as_str)).collect();
        let name = format!("{} (SDN entry {})", a.name, a.entry);
        out.push_str(&super::label_entry(&a.address, &name, "sanctioned", &tags, list));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADDR_1: &str = "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z";
    const ADDR_2: &str = "958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ";

    #[test]
    fn csv_remarks_yield_the_sol_addresses_of_each_entry() {
        let csv = format!(
            "36,\"AEROCARIBBEAN AIRLINES\",-0- ,\"CUBA\",-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- \n\
             1001,\"EXAMPLE, GROUP\",-0- ,\"CYBER2] [DPRK3\",-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,\
             \"Digital Currency Address - XBT 1BoatSLRHtKNngkdXEeobR76b53LETtpyT; Digital Currency Address - SOL {ADDR_1}; \
             Digital Currency Address - SOL not-a-key; Digital Currency Address - SOL {ADDR_2}; Secondary sanctions risk.\"\n\
             1002,\"OTHER\",-0- ,\"CYBER2\",-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,\"Digital Currency Address - SOL {ADDR_1};\"\n"
        );
        let import = read_sdn_csv(&csv).unwrap();
        let found: Vec<(String, &str, Vec<String>, &str)> = import
            .addresses
            .iter()
            .map(|a| (a.address.to_base58(), a.name.as_str(), a.programs.clone(), a.entry.as_str()))
            .collect();
        let programs = vec!["CYBER2".to_owned(), "DPRK3".to_owned()];
        assert_eq!(
            found,
            [
                (ADDR_1.to_owned(), "EXAMPLE, GROUP", programs.clone(), "1001"),
                (ADDR_2.to_owned(), "EXAMPLE, GROUP", programs, "1001")
            ],
            "the first entry naming an address wins"
        );
        assert_eq!(import.skipped, 1);
    }

    /// Rows as the real `sdn.csv` writes them: an entry's further addresses of one kind are
    /// `alt. Digital Currency Address - SOL …`, and the remarks end with a full stop.
    #[test]
    fn csv_alt_addresses_and_a_closing_full_stop_are_read() {
        const ADDR_3: &str = "vaGm75gV244Ayqa2rvHDDXMqnYHNq6ShQFFGdXp3crg";
        let csv = format!(
            "46731,\"GARANTEX EUROPE OU\",-0- ,\"CYBER2] [RUSSIA-EO14024\",-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,\
             \"Digital Currency Address - ETH 0x6252d8fad22ddc1c4e9a5e1a20fa4ba8e8f6a4c2; alt. Digital Currency \
             Address - ETH 0x7c8e5f3d1a2b4c6d8e0f1a2b3c4d5e6f7a8b9c0d; Digital Currency Address - SOL {ADDR_1}; \
             alt. Digital Currency Address - SOL {ADDR_2}; alt. Digital Currency Address - SOL not-a-key; \
             Organization Established Date 2019; alt. Digital Currency Address - SOL {ADDR_3}.\"\n"
        );
        let import = read_sdn_csv(&csv).unwrap();
        let found: Vec<String> = import.addresses.iter().map(|a| a.address.to_base58()).collect();
        assert_eq!(found, [ADDR_1, ADDR_2, ADDR_3], "every SOL address of the entry, alt. ones included");
        assert_eq!(import.skipped, 1, "the malformed alt. one is counted, not dropped silently");
        assert!(import.addresses.iter().all(|a| a.entry == "46731" && a.name == "GARANTEX EUROPE OU"));
    }

    #[test]
    fn xml_ids_of_type_sol_yield_addresses() {
        let xml = format!(
            r#"<?xml version="1.0" standalone="yes"?>
<sdnList xmlns="http://tempuri.org/sdnList.xsd">
  <publshInformation><Publish_Date>11/20/2026</Publish_Date><Record_Count>2</Record_Count></publshInformation>
  <sdnEntry>
    <uid>7001</uid><firstName>Jane</firstName><lastName>DOE &amp; CO</lastName><sdnType>Individual</sdnType>
    <programList><program>CYBER2</program></programList>
    <idList>
      <id><uid>1</uid><idType>Digital Currency Address - ETH</idType><idNumber>0x0000000000000000000000000000000000000000</idNumber></id>
      <id><uid>2</uid><idType>Digital Currency Address - SOL</idType><idNumber>{ADDR_2}</idNumber></id>
    </idList>
  </sdnEntry>
  <sdnEntry><uid>7002</uid><lastName>NO CRYPTO</lastName><sdnType>Entity</sdnType></sdnEntry>
</sdnList>"#
        );
        let import = read_sdn_xml(&xml).unwrap();
        assert_eq!(import.addresses.len(), 1);
        let a = &import.addresses[0];
        assert_eq!(
            (a.address.to_base58().as_str(), a.name.as_str(), a.entry.as_str()),
            (ADDR_2, "Jane DOE & CO", "7001")
        );
        assert_eq!(a.programs, ["CYBER2"]);
        assert!(
            read_sdn_xml("<sdnList><sdnEntry>").is_err()
                || read_sdn_xml("<sdnList><sdnEntry>").unwrap().addresses.is_empty()
        );
    }

    /// 32 distinct-looking bytes for `i`, the same on every run (splitmix64: the first eight
    /// bytes alone are a bijection of `i`, so the addresses are distinct).
    fn generated_address(i: u64) -> Pubkey {
        let mix = |mut z: u64| {
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let mut bytes = [0u8; 32];
        for (word, chunk) in bytes.chunks_exact_mut(8).enumerate() {
            chunk.copy_from_slice(&mix(i.wrapping_add((word as u64) << 60)).to_le_bytes());
        }
        Pubkey::new(bytes)
    }

    /// Issue #28: the duplicate check searched the list (n²/2 comparisons: hours for the
    /// largest list allowed); a million addresses now import in seconds, in list order.
    #[test]
    fn a_million_addresses_import_in_seconds() {
        const ADDRESSES: u64 = LABELS_LEN_MAX as u64;
        const PER_ENTRY: u64 = 4;
        let mut csv = String::with_capacity(100 * 1024 * 1024);
        let (mut duplicates, mut invalid) = (0usize, 0usize);
        for entry in 0..ADDRESSES / PER_ENTRY {
            let mut remarks = String::new();
            for i in entry * PER_ENTRY..(entry + 1) * PER_ENTRY {
                remarks.push_str(&format!("{SOL_ID_TYPE} {}; ", generated_address(i).to_base58()));
            }
            // Every tenth entry also names an address of an earlier entry, and one that is no key.
            if entry % 10 == 9 {
                remarks.push_str(&format!(
                    "{SOL_ID_TYPE} {}; {SOL_ID_TYPE} 0xnot-base58;",
                    generated_address(entry).to_base58()
                ));
                (duplicates, invalid) = (duplicates + 1, invalid + 1);
            }
            csv.push_str(&format!(
                "{entry},\"ENTRY {entry}\",-0- ,\"CYBER2\",-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,\"{remarks}\"\n"
            ));
        }
        assert!(duplicates > 20_000, "the list repeats addresses");
        let started = std::time::Instant::now();
        let import = read_sdn_csv(&csv).expect("read");
        let labels = labels_toml(&import, "OFAC SDN 2026-11-20");
        let elapsed = started.elapsed();
        assert_eq!((import.addresses.len(), import.skipped), (LABELS_LEN_MAX, invalid));
        assert!(
            import.addresses.iter().enumerate().all(|(i, a)| a.address == generated_address(i as u64)),
            "list order"
        );
        assert_eq!(import.addresses[7].entry, "1", "the first entry naming an address wins");
        assert!(labels.len() > 100 * LABELS_LEN_MAX);
        assert!(elapsed < std::time::Duration::from_secs(10), "a million addresses took {elapsed:?}");
    }

    #[test]
    fn the_labels_file_loads_with_category_and_provenance() {
        let csv = format!("1001,\"EXAMPLE \"\"Q\"\" GROUP\",-0- ,\"CYBER2\",-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,\"Digital Currency Address - SOL {ADDR_1};\"\n");
        let text = labels_toml(&read_sdn_csv(&csv).unwrap(), "OFAC SDN 2026-11-20");
        let labels = crate::labels::Labels::from_toml(&text).expect("a valid labels file");
        let label = labels.get(&Pubkey::parse(ADDR_1).unwrap()).expect("labelled");
        assert_eq!(label.category, crate::labels::Category::Sanctioned);
        assert_eq!(label.name, "EXAMPLE \"Q\" GROUP (SDN entry 1001)");
        assert_eq!(label.tags, ["ofac", "CYBER2"]);
        assert_eq!(label.source.as_deref(), Some("OFAC SDN 2026-11-20"));
    }
}
