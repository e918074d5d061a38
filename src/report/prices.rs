//! API list prices (`scripts/prices.json`, embedded in the binary; `--prices FILE` overrides it). An
//! entry covers a family (the tier) and a range of versions, read from model ids by
//! `crate::tier::ModelId`: `claude-opus-4-8`, `claude-opus-4-5-20251101` and
//! `us.anthropic.claude-opus-4-5-v1:0` are all "opus 4.5 to 5". A model no entry covers is reported
//! as unknown, never free.
//!
//! An entry's prices are effective-dated: each holds from its `since` date (UTC) until the next
//! one's, and a request is priced at the price in force on the day of its timestamp. A price may have
//! a band for long prompts (`long_prompt`), which prices every token of a request whose whole prompt
//! (input, cache reads and cache writes) is over its threshold. Costs are exact integers of
//! picodollars (a millionth of a millionth of a dollar), so that sums come out the same in any
//! order; rates are rounded to a millionth of a dollar per million tokens.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use system1_transcripts::Tokens;

use crate::claude_code::{Effort, Provider};
use crate::error::{Context, Error, Result};
use crate::tier::{ModelId, Tier};

pub const EMBEDDED: &str = include_str!("../../scripts/prices.json");

#[derive(Debug, Clone, Deserialize)]
pub struct PriceFile {
    #[serde(default)]
    pub note: String,
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub as_of: String,
    #[serde(default)]
    pub caveats: Vec<String>,
    /// Where the figures come from, by the key entries name in their `source`.
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
    /// The model each tier is priced at when the history has no request of that tier.
    #[serde(default)]
    pub tiers: BTreeMap<String, String>,
    /// What Claude Code's own model catalog adds: effort costs and each provider's aliases.
    #[serde(default)]
    pub catalog: Option<CatalogIn>,
    pub models: Vec<Entry>,
}

/// The parts of Claude Code's model catalog the what-if uses, as the price file writes them.
#[derive(Debug, Clone, Deserialize)]
pub struct CatalogIn {
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub as_of: String,
    #[serde(default)]
    pub models: Vec<CatalogModelIn>,
    /// By alias (a tier's name).
    #[serde(default)]
    pub aliases: BTreeMap<String, AliasIn>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CatalogModelIn {
    pub id: String,
    /// By effort level: its cost relative to `high` on this model.
    pub effort_cost_index: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct AliasIn {
    pub default: String,
    /// By provider (the catalog's keys: `bedrock`, `vertex`, ...).
    #[serde(default)]
    pub per_provider: BTreeMap<String, String>,
}

/// Claude Code's model catalog, read once: each effort level's cost relative to `high` per model,
/// and the model each alias names on each provider.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub source: String,
    pub as_of: String,
    /// (tier, version) and the index of each effort level, in `Effort::ALL` order.
    effort: Vec<(Tier, (u32, u32), [f64; Effort::ALL.len()])>,
    /// By tier: the default model and the providers' own.
    aliases: BTreeMap<Tier, (String, BTreeMap<Provider, String>)>,
}

impl Catalog {
    fn parse(c: &CatalogIn, what: &str) -> Result<Catalog> {
        let mut effort = Vec::new();
        for m in &c.models {
            let id = ModelId::parse(&m.id)
                .and_then(|id| Some((id.tier, id.version?)))
                .ok_or_else(|| Error::config(format!("{what}: catalog model `{}` is not a model id", m.id)))?;
            let mut index = [0.0; Effort::ALL.len()];
            for e in Effort::ALL {
                let v = m.effort_cost_index.get(e.name()).copied().ok_or_else(|| {
                    Error::config(format!("{what}: catalog model `{}` has no effort_cost_index.{}", m.id, e.name()))
                })?;
                if !(v.is_finite() && v > 0.0) {
                    return Err(Error::config(format!("{what}: catalog model `{}` has an effort cost of {v}", m.id)));
                }
                index[e.index()] = v;
            }
            if m.effort_cost_index.keys().any(|k| Effort::named(k).is_none()) || index[Effort::High.index()] != 1.0 {
                return Err(Error::config(format!(
                    "{what}: catalog model `{}`: effort_cost_index takes low, medium, high (1), xhigh and max",
                    m.id
                )));
            }
            effort.push((id.0, id.1, index));
        }
        let mut aliases = BTreeMap::new();
        for (name, a) in &c.aliases {
            let tier = Tier::named(name).ok_or_else(|| {
                Error::config(format!("{what}: catalog alias `{name}`; expected one of {}", Tier::names()))
            })?;
            let mut per = BTreeMap::new();
            for (p, model) in &a.per_provider {
                let provider = Provider::named(p)
                    .ok_or_else(|| Error::config(format!("{what}: catalog alias `{name}` names provider `{p}`")))?;
                per.insert(provider, model.clone());
            }
            aliases.insert(tier, (a.default.clone(), per));
        }
        Ok(Catalog { source: c.source.clone(), as_of: c.as_of.clone(), effort, aliases })
    }

    /// What effort level `e` costs on `model` relative to `high`; `None` when the catalog gives the
    /// model no index.
    pub fn effort_index(&self, model: &str, e: Effort) -> Option<f64> {
        let id = ModelId::parse(model)?;
        let v = id.version?;
        self.effort.iter().find(|(t, version, _)| *t == id.tier && *version == v).map(|(_, _, index)| index[e.index()])
    }

    /// The model the alias of `tier` names on `provider`.
    pub fn alias(&self, tier: Tier, provider: Provider) -> Option<&str> {
        let (default, per) = self.aliases.get(&tier)?;
        Some(per.get(&provider).unwrap_or(default))
    }
}

/// The five rates of a price, as the file writes them (USD per million tokens).
#[derive(Debug, Clone, Deserialize)]
pub struct RatesIn {
    pub input: f64,
    pub output: f64,
    pub cache_write_5m: f64,
    pub cache_write_1h: f64,
    pub cache_read: f64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Entry {
    pub name: String,
    pub family: String,
    /// Inclusive lower version bound, `"4.5"`.
    pub from: String,
    /// Exclusive upper bound; absent means no bound.
    #[serde(default)]
    pub before: Option<String>,
    /// The key in `sources` of where its figures come from.
    #[serde(default)]
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "provenance for readers of the file; a test holds each entry to one")
    )]
    pub source: Option<String>,
    /// The entry's prices, oldest first. Absent in the older format, where the entry carries one
    /// price's five rates itself.
    #[serde(default)]
    pub prices: Option<Vec<DatedIn>>,
    #[serde(default)]
    pub input: Option<f64>,
    #[serde(default)]
    pub output: Option<f64>,
    #[serde(default)]
    pub cache_write_5m: Option<f64>,
    #[serde(default)]
    pub cache_write_1h: Option<f64>,
    #[serde(default)]
    pub cache_read: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DatedIn {
    /// `"2026-10-07"`: in force from that day (UTC). The first price may have none.
    #[serde(default)]
    pub since: Option<String>,
    /// The key in `sources` of where a later price comes from, when not the entry's.
    #[serde(default)]
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "provenance for readers of the file; a test holds each entry to one")
    )]
    pub source: Option<String>,
    #[serde(flatten)]
    pub rates: RatesIn,
    #[serde(default)]
    pub long_prompt: Option<BandIn>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct BandIn {
    /// Prompts of more than this many tokens (input + cache reads + cache writes) are in the band.
    pub over: u64,
    #[serde(flatten)]
    pub rates: RatesIn,
}

/// Per-million-token prices of one model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rates {
    pub input: f64,
    pub output: f64,
    pub cache_write_5m: f64,
    pub cache_write_1h: f64,
    pub cache_read: f64,
}

impl Rates {
    fn of(r: &RatesIn) -> Rates {
        Rates {
            input: r.input,
            output: r.output,
            cache_write_5m: r.cache_write_5m,
            cache_write_1h: r.cache_write_1h,
            cache_read: r.cache_read,
        }
    }
}

/// A cost in picodollars (10^-12 USD): a rate in dollars per million tokens is this many
/// picodollars per token, times a million.
pub type Pico = u128;

/// Picodollars as dollars.
pub fn usd(pico: Pico) -> f64 {
    pico as f64 / 1e12
}

/// One price: its rates, and the same as picodollars per token for exact sums.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub rates: Rates,
    /// input, output, 5-minute writes, 1-hour writes, cache reads.
    per_token: [u64; 5],
}

impl Price {
    fn new(rates: Rates, what: &str) -> Result<Price> {
        let all = [rates.input, rates.output, rates.cache_write_5m, rates.cache_write_1h, rates.cache_read];
        let mut per_token = [0u64; 5];
        for (p, rate) in per_token.iter_mut().zip(all) {
            if !(rate.is_finite() && (0.0..1e6).contains(&rate)) {
                return Err(Error::config(format!("{what} has a rate of {rate}: not a price per million tokens")));
            }
            *p = (rate * 1e6).round() as u64;
        }
        Ok(Price { rates, per_token })
    }

    /// What `t` costs at this price, in picodollars.
    pub fn cost(&self, t: &Tokens) -> Pico {
        let n = [t.input, t.output, t.cache_write_5m, t.cache_write_1h, t.cache_read];
        n.iter().zip(self.per_token).map(|(&n, p)| u128::from(n) * u128::from(p)).sum()
    }

    /// What `hint_write` tokens written to the 5-minute cache and `hint_read` read back cost.
    pub fn cache_cost(&self, hint_write: u64, hint_read: u64) -> Pico {
        u128::from(hint_write) * u128::from(self.per_token[2]) + u128::from(hint_read) * u128::from(self.per_token[4])
    }
}

/// A day, counted from 1970-01-01 (UTC); [`NO_DAY`] when a line carries no readable timestamp.
pub type Day = u16;
pub const NO_DAY: Day = 0;

/// The day of `2026-10-07` (the first ten characters of a timestamp), or `None`.
pub fn day_of_date(date: &str) -> Option<Day> {
    let b = date.as_bytes();
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |s: &str| s.parse::<i64>().ok();
    let (y, m, d) = (num(date.get(0..4)?)?, num(date.get(5..7)?)?, num(date.get(8..10)?)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    // Days from civil (proleptic Gregorian), after H. Hinnant's algorithm.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Day::try_from(days).ok().filter(|&d| d != NO_DAY)
}

/// A moment to the minute, counted from 1970-01-01 00:00 UTC; [`NO_MINUTE`] when a line carries no
/// readable timestamp. Fine enough for any time zone's midnight, and small beside a request.
pub type Minute = u32;
pub const NO_MINUTE: Minute = 0;

/// The minute of a transcript line's RFC 3339 timestamp, [`NO_MINUTE`] when it has none or it does
/// not read. Claude Code writes UTC (`2026-11-10T12:34:56.789Z`), read straight off the text.
pub fn minute_of_timestamp(timestamp: Option<&str>) -> Minute {
    let Some(ts) = timestamp else { return NO_MINUTE };
    let b = ts.as_bytes();
    if (ts.ends_with('Z') || ts.ends_with("+00:00")) && b.len() >= 16 && b[10] == b'T' && b[13] == b':' {
        let num = |r: std::ops::Range<usize>| ts.get(r).and_then(|s| s.parse::<u32>().ok());
        if let (Some(day), Some(h), Some(m)) = (day_of_date(ts), num(11..13), num(14..16))
            && h < 24
            && m < 60
        {
            return u32::from(day) * 1440 + h * 60 + m;
        }
        return NO_MINUTE;
    }
    chrono::DateTime::parse_from_rfc3339(ts)
        .ok()
        .and_then(|t| u32::try_from(t.timestamp().div_euclid(60)).ok())
        .filter(|m| *m >= 1440)
        .unwrap_or(NO_MINUTE)
}

/// The UTC day of a minute ([`NO_DAY`] for [`NO_MINUTE`]).
pub fn day_of_minute(minute: Minute) -> Day {
    Day::try_from(minute / 1440).unwrap_or(NO_DAY)
}

/// One price of an entry and the day it holds from.
#[derive(Debug, Clone)]
struct Dated {
    /// [`NO_DAY`] for the first price: from the start.
    since: Day,
    standard: Price,
    long_prompt: Option<(u64, Price)>,
}

/// An entry of the price file, read once.
#[derive(Debug, Clone)]
struct Range {
    tier: Tier,
    from: (u32, u32),
    before: Option<(u32, u32)>,
    /// Oldest first.
    schedule: Vec<Dated>,
}

/// The price entry a model falls under (an index into the file's `models`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryId(usize);

pub struct Prices {
    pub file: PriceFile,
    /// Parallel to `file.models`.
    ranges: Vec<Range>,
    /// `None` for a price file without one (an older `--prices` file).
    pub catalog: Option<Catalog>,
}

fn version(s: &str) -> Option<(u32, u32)> {
    let mut parts = s.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = match parts.next() {
        Some(p) => p.parse().ok()?,
        None => 0,
    };
    Some((major, minor))
}

/// An entry's prices: its `prices`, or in the older format its own five rates.
fn schedule(e: &Entry, what: &str) -> Result<Vec<Dated>> {
    let name = &e.name;
    let dated = match &e.prices {
        Some(prices) => prices.clone(),
        None => {
            let (Some(input), Some(output), Some(cache_write_5m), Some(cache_write_1h), Some(cache_read)) =
                (e.input, e.output, e.cache_write_5m, e.cache_write_1h, e.cache_read)
            else {
                return Err(Error::config(format!(
                    "{what}: `{name}` has neither `prices` nor all five rates (input, output, cache_write_5m, cache_write_1h, cache_read)"
                )));
            };
            vec![DatedIn {
                since: None,
                source: None,
                rates: RatesIn { input, output, cache_write_5m, cache_write_1h, cache_read },
                long_prompt: None,
            }]
        }
    };
    if dated.is_empty() {
        return Err(Error::config(format!("{what}: `{name}` has no prices")));
    }
    let mut out: Vec<Dated> = Vec::new();
    for (i, d) in dated.iter().enumerate() {
        let since = match (&d.since, i) {
            (None, 0) => NO_DAY,
            (None, _) => {
                return Err(Error::config(format!("{what}: `{name}` price {} has no `since` date", i + 1)));
            }
            (Some(s), _) => day_of_date(s).filter(|_| s.len() == 10).ok_or_else(|| {
                Error::config(format!("{what}: `{name}` price {} has `since` {s:?}; expected YYYY-MM-DD", i + 1))
            })?,
        };
        if out.last().is_some_and(|prev| since <= prev.since) {
            return Err(Error::config(format!("{what}: `{name}`'s prices are not in date order")));
        }
        let label = format!("{what}: `{name}` price {}", i + 1);
        let long_prompt = match &d.long_prompt {
            None => None,
            Some(b) => Some((b.over, Price::new(Rates::of(&b.rates), &format!("{label}'s long_prompt"))?)),
        };
        out.push(Dated { since, standard: Price::new(Rates::of(&d.rates), &label)?, long_prompt });
    }
    Ok(out)
}

/// A price file is a few kilobytes; one larger than this is not one.
const MAX_PRICES_BYTES: u64 = 16 << 20;

impl Prices {
    /// The embedded prices, or `path`'s.
    pub fn load(path: Option<&Path>) -> Result<Prices> {
        match path {
            None => Prices::parse(EMBEDDED, "the built-in prices.json"),
            Some(p) => {
                // A regular file of at most 16 MiB: a FIFO or a device named here must not hang or fill the report.
                let text = crate::fsutil::read_text(p, MAX_PRICES_BYTES, crate::fsutil::Links::Follow)
                    .context(|| format!("cannot read {}", p.display()))?;
                Prices::parse(&text, &p.display().to_string())
            }
        }
    }

    pub fn parse(text: &str, what: &str) -> Result<Prices> {
        let file: PriceFile = serde_json::from_str(text).context(|| format!("{what} is not a valid price file"))?;
        let mut ranges = Vec::new();
        for e in &file.models {
            let tier = Tier::of(&e.family).ok_or_else(|| {
                Error::config(format!(
                    "{what}: `{}` has family `{}`; expected one of {}",
                    e.name,
                    e.family,
                    Tier::names()
                ))
            })?;
            let from = version(&e.from)
                .ok_or_else(|| Error::config(format!("{what}: `{}` has a bad `from` version", e.name)))?;
            let before = match &e.before {
                None => None,
                Some(b) => Some(
                    version(b)
                        .ok_or_else(|| Error::config(format!("{what}: `{}` has a bad `before` version", e.name)))?,
                ),
            };
            ranges.push(Range { tier, from, before, schedule: schedule(e, what)? });
        }
        let catalog = file.catalog.as_ref().map(|c| Catalog::parse(c, what)).transpose()?;
        Ok(Prices { file, ranges, catalog })
    }

    /// The entry a model id falls under; `None` when no entry covers it.
    pub fn entry(&self, model: &str) -> Option<EntryId> {
        let id = ModelId::parse(model)?;
        let v = id.version?;
        self.ranges.iter().position(|r| r.tier == id.tier && v >= r.from && r.before.is_none_or(|b| v < b)).map(EntryId)
    }

    pub fn name(&self, e: EntryId) -> &str {
        &self.file.models[e.0].name
    }

    /// The price of a request under entry `e`: the one in force on `day` (the newest for
    /// [`NO_DAY`]), in its long-prompt band when the request's whole prompt is over the band's
    /// threshold.
    pub fn price(&self, e: EntryId, day: Day, tokens: &Tokens) -> &Price {
        let schedule = &self.ranges[e.0].schedule;
        let at = match day {
            NO_DAY => schedule.len() - 1,
            _ => schedule.iter().rposition(|d| d.since <= day).unwrap_or(0),
        };
        let dated = &schedule[at];
        let prompt = tokens.input + tokens.cache_read + tokens.cache_write_5m + tokens.cache_write_1h;
        match &dated.long_prompt {
            Some((over, long)) if prompt > *over => long,
            _ => &dated.standard,
        }
    }

    /// The entry name and the newest standard rates for a model id. `None` when no entry covers it.
    #[cfg(test)]
    pub fn lookup(&self, model: &str) -> Option<(&str, Rates)> {
        let e = self.entry(model)?;
        Some((self.name(e), self.price(e, NO_DAY, &Tokens::default()).rates))
    }

    /// The model a tier is priced at by default (`tiers` in the file).
    pub fn tier_default(&self, tier: Tier) -> Option<&str> {
        self.file.tiers.get(tier.name()).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(input: u64, output: u64, w5: u64, w1: u64, read: u64) -> Tokens {
        Tokens { input, output, cache_write_5m: w5, cache_write_1h: w1, cache_read: read }
    }

    #[test]
    fn embedded_prices_cover_current_models_and_leave_others_unknown() {
        let p = Prices::load(None).unwrap();
        assert_eq!(p.lookup("claude-opus-4-8").unwrap().1.input, 5.0);
        assert_eq!(p.lookup("claude-opus-4-1-20250805").unwrap().1.input, 15.0);
        assert_eq!(p.lookup("claude-opus-4-20250514").unwrap().1.output, 75.0);
        assert_eq!(p.lookup("claude-sonnet-4-5-20250929").unwrap().1.cache_write_1h, 6.0);
        assert_eq!(p.lookup("claude-haiku-4-5-20251001").unwrap().1.cache_read, 0.1);
        assert_eq!(p.lookup("claude-3-5-haiku-20241022").unwrap().1.input, 0.8);
        // The Claude 5 ids the two Claude Code versions use and know.
        for (model, input, output) in [
            ("claude-sonnet-5", 2.0, 10.0),
            ("claude-opus-5", 5.0, 25.0),
            ("claude-opus-5-5", 4.0, 20.0),
            ("claude-sonnet-5-5[1m]", 2.0, 10.0),
            ("claude-haiku-5-5", 0.1, 0.5),
            ("claude-fable-5", 10.0, 50.0),
            ("claude-fable-5-1", 10.0, 50.0),
            ("claude-mythos-5-1", 10.0, 50.0),
            ("claude-fable-5-2", 8.0, 40.0),
            ("claude-mythos-5-2", 8.0, 40.0),
        ] {
            let rates = p.lookup(model).unwrap_or_else(|| panic!("{model} is not priced")).1;
            assert_eq!((rates.input, rates.output), (input, output), "{model}");
        }
        // Versions no page lists stay unknown rather than guessed.
        for unknown in
            ["claude-opus-5-6", "claude-sonnet-5-2", "claude-haiku-5", "claude-fable-5-3", "haiku", "<synthetic>"]
        {
            assert!(p.lookup(unknown).is_none(), "{unknown}");
        }
        for tier in Tier::ALL {
            let model = p.tier_default(tier).unwrap();
            assert!(p.lookup(model).is_some(), "{model}");
        }
        assert!(p.file.note.contains("subscription"));
    }

    #[test]
    fn every_entry_and_dated_price_names_a_source_the_file_describes() {
        let p = Prices::load(None).unwrap();
        let described = |key: &Option<String>| key.as_ref().is_some_and(|k| p.file.sources.contains_key(k));
        for e in &p.file.models {
            assert!(described(&e.source), "{}: source {:?}", e.name, e.source);
            for (i, d) in e.prices.iter().flatten().enumerate().skip(1) {
                assert!(described(&d.source), "{} price {}: source {:?}", e.name, i + 1, d.source);
            }
        }
    }

    #[test]
    fn a_price_holds_from_its_date_and_the_newest_prices_an_undated_line() {
        let p = Prices::load(None).unwrap();
        let e = p.entry("claude-sonnet-5-5").unwrap();
        let t = tokens(0, 0, 0, 0, 1_000_000);
        let day = |d: &str| day_of_date(d).unwrap();
        assert_eq!(p.price(e, day("2026-10-06"), &t).rates.cache_read, 0.2);
        assert_eq!(p.price(e, day("2026-10-07"), &t).rates.cache_read, 0.1);
        assert_eq!(p.price(e, day("2025-01-01"), &t).rates.cache_read, 0.2, "before every date: the first price");
        assert_eq!(p.price(e, NO_DAY, &t).rates.cache_read, 0.1);
        // A line's UTC day: 23:30 at -02:00 is already the next day.
        let day_of = |ts| day_of_minute(minute_of_timestamp(ts));
        assert_eq!(day_of(Some("2026-10-06T23:59:59.999Z")), day("2026-10-06"));
        assert_eq!(day_of(Some("2026-10-06T23:30:00-02:00")), day("2026-10-07"));
        assert_eq!(day_of(Some("yesterday")), NO_DAY);
        assert_eq!(day_of(None), NO_DAY);
        // To the minute, UTC or with an offset.
        assert_eq!(minute_of_timestamp(Some("1970-01-02T01:02:59.999Z")), 1440 + 62);
        assert_eq!(minute_of_timestamp(Some("1970-01-02T03:02:00+02:00")), 1440 + 62);
        assert_eq!(minute_of_timestamp(Some("2026-10-06T24:00:00.000Z")), NO_MINUTE);
        assert_eq!(day_of_date("1970-01-02"), Some(1));
        assert_eq!(day_of_date("2026-12-01"), Some(20_788));
        assert_eq!(day_of_date("2026-13-01"), None);
    }

    #[test]
    fn haiku_5_5_prices_a_whole_request_by_its_whole_prompt() {
        let p = Prices::load(None).unwrap();
        let e = p.entry("claude-haiku-5-5").unwrap();
        // 100,000 tokens of prompt (input, reads and both writes) is still the short band...
        let at_limit = tokens(40_000, 1_000, 10_000, 10_000, 40_000);
        assert_eq!(p.price(e, NO_DAY, &at_limit).rates.input, 0.1);
        // 0.04×0.1 + 0.001×0.5 + 0.01×0.125 + 0.01×0.2 + 0.04×0.01 = 0.00815 dollars.
        assert_eq!(p.price(e, NO_DAY, &at_limit).cost(&at_limit), 8_150_000_000);
        // ...one more and every token, output included, is at the long band's rates.
        let over = tokens(40_001, 1_000, 10_000, 10_000, 40_000);
        // 0.040001×0.5 + 0.001×2.5 + 0.01×0.625 + 0.01×1.0 + 0.04×0.05 = 0.0407505 dollars.
        assert_eq!(p.price(e, NO_DAY, &over).cost(&over), 40_750_500_000);
        // Output alone does not count toward the prompt.
        assert_eq!(p.price(e, NO_DAY, &tokens(10, 500_000, 0, 0, 0)).rates.output, 0.5);
    }

    #[test]
    fn cost_prices_each_kind_of_token_separately() {
        let r = Rates { input: 5.0, output: 25.0, cache_write_5m: 6.25, cache_write_1h: 10.0, cache_read: 0.5 };
        let t = tokens(1_000_000, 100_000, 200_000, 100_000, 2_000_000);
        // 5 + 2.5 + 1.25 + 1 + 1
        assert_eq!(Price::new(r, "test").unwrap().cost(&t), 10_750_000_000_000);
        assert_eq!(usd(10_750_000_000_000), 10.75);
    }

    #[test]
    fn the_catalog_gives_effort_costs_and_each_providers_aliases() {
        let p = Prices::load(None).unwrap();
        let c = p.catalog.as_ref().unwrap();
        assert_eq!(c.effort_index("claude-haiku-5-5", Effort::Low), Some(0.38));
        assert_eq!(c.effort_index("claude-sonnet-5-5[1m]", Effort::Max), Some(5.5));
        assert_eq!(c.effort_index("claude-opus-5-5", Effort::High), Some(1.0));
        assert_eq!(c.effort_index("claude-mythos-5-1", Effort::Low), Some(0.75), "priced and indexed as fable 5.1");
        assert_eq!(c.effort_index("claude-haiku-4-5-20251001", Effort::Low), None);
        assert_eq!(c.effort_index("claude-fable-5-2", Effort::Low), None);
        assert_eq!(c.alias(Tier::Sonnet, Provider::FirstParty), Some("claude-sonnet-5-5"));
        assert_eq!(c.alias(Tier::Sonnet, Provider::Bedrock), Some("claude-sonnet-4-5"));
        assert_eq!(c.alias(Tier::Opus, Provider::Gateway), Some("claude-opus-4-7"));
        assert_eq!(c.alias(Tier::Haiku, Provider::Vertex), Some("claude-haiku-4-5"));
        assert_eq!(c.alias(Tier::Sonnet, Provider::AnthropicGoogleCloud), Some("claude-sonnet-5-5"));
        // Every model an alias names has a price, and the first-party ones are the tiers' defaults.
        for tier in Tier::ALL {
            for provider in [Provider::FirstParty].into_iter().chain(Provider::SWITCHES.map(|(p, _)| p)) {
                let model = c.alias(tier, provider).unwrap();
                assert!(p.entry(model).is_some(), "{tier} on {provider:?}: {model}");
            }
            assert_eq!(c.alias(tier, Provider::FirstParty), p.tier_default(tier));
        }
        let bad = |catalog: &str| {
            let text = format!(r#"{{"catalog":{catalog},"models":[]}}"#);
            Prices::parse(&text, "test").err().map(|e| e.to_string()).unwrap_or_default()
        };
        assert!(
            bad(r#"{"models":[{"id":"claude-opus-5-5","effort_cost_index":{"low":0.5,"high":1}}]}"#)
                .contains("no effort_cost_index.medium")
        );
        assert!(bad(r#"{"aliases":{"gpt":{"default":"x"}}}"#).contains("catalog alias `gpt`"));
        assert!(
            bad(r#"{"aliases":{"opus":{"default":"x","per_provider":{"azure":"y"}}}}"#).contains("provider `azure`")
        );
    }

    #[test]
    fn a_bad_price_file_is_a_clear_error() {
        let err = |text: &str| Prices::parse(text, "test").err().map(|e| e.to_string()).unwrap_or_default();
        let rates = r#""input":1,"output":1,"cache_write_5m":1,"cache_write_1h":1,"cache_read":1"#;
        assert!(err(r#"{"models":[{"name":"x","family":"gpt","from":"4"}]}"#).contains("test"));
        assert!(
            err(&format!(r#"{{"models":[{{"name":"x","family":"opus","from":"four",{rates}}}]}}"#)).contains("`from`")
        );
        assert!(err(r#"{"models":[{"name":"x","family":"opus","from":"4","input":1}]}"#).contains("all five rates"));
        let dated = |first: &str, second: &str| {
            format!(
                r#"{{"models":[{{"name":"x","family":"opus","from":"4","prices":[{{{first}{rates}}},{{{second}{rates}}}]}}]}}"#
            )
        };
        assert!(err(&dated("", "")).contains("no `since`"));
        assert!(err(&dated("", r#""since":"10/07/2026","#)).contains("YYYY-MM-DD"));
        assert!(err(&dated(r#""since":"2026-10-07","#, r#""since":"2026-10-01","#)).contains("date order"));
        let negative = r#"{"models":[{"name":"x","family":"opus","from":"4","input":-1,"output":1,"cache_write_5m":1,"cache_write_1h":1,"cache_read":1}]}"#;
        assert!(err(negative).contains("rate of -1"));
        // The older format, one price on the entry itself, still reads.
        let old = format!(r#"{{"models":[{{"name":"x","family":"opus","from":"4",{rates}}}]}}"#);
        assert_eq!(Prices::parse(&old, "test").unwrap().lookup("claude-opus-4-8").unwrap().1.input, 1.0);
    }
}
