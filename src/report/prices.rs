//! API list prices (`scripts/prices.json`, embedded in the binary; `--prices FILE` overrides it). An
//! entry covers a family (the tier) and a range of versions, read from model ids by
//! `crate::tier::ModelId`: `claude-opus-4-8`, `claude-opus-4-5-20251101` and
//! `us.anthropic.claude-opus-4-5-v1:0` are all "opus 4.x, 4.5 or later". A model no entry covers is
//! reported as unknown, never free.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Context, Error, Result};
use crate::tier::{ModelId, Tier};
use crate::transcripts::Tokens;

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
    /// The model each tier is priced at when the history has no request of that tier.
    #[serde(default)]
    pub tiers: std::collections::BTreeMap<String, String>,
    pub models: Vec<Entry>,
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
    pub input: f64,
    pub output: f64,
    pub cache_write_5m: f64,
    pub cache_write_1h: f64,
    pub cache_read: f64,
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
    pub fn cost(&self, t: &Tokens) -> f64 {
        (t.input as f64 * self.input
            + t.output as f64 * self.output
            + t.cache_write_5m as f64 * self.cache_write_5m
            + t.cache_write_1h as f64 * self.cache_write_1h
            + t.cache_read as f64 * self.cache_read)
            / 1_000_000.0
    }
}

pub struct Prices {
    pub file: PriceFile,
    /// Parallel to `file.models`.
    ranges: Vec<Range>,
}

/// One entry's tier and version bounds, read once.
struct Range {
    tier: Tier,
    from: (u32, u32),
    before: Option<(u32, u32)>,
    rates: Rates,
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

impl Prices {
    /// The embedded prices, or `path`'s.
    pub fn load(path: Option<&Path>) -> Result<Prices> {
        match path {
            None => Prices::parse(EMBEDDED, "the built-in prices.json"),
            Some(p) => {
                let text = std::fs::read_to_string(p).context(|| format!("cannot read {}", p.display()))?;
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
            let rates = Rates {
                input: e.input,
                output: e.output,
                cache_write_5m: e.cache_write_5m,
                cache_write_1h: e.cache_write_1h,
                cache_read: e.cache_read,
            };
            ranges.push(Range { tier, from, before, rates });
        }
        Ok(Prices { file, ranges })
    }

    /// The entry for a model id: its name and rates. `None` when no entry covers it.
    pub fn lookup(&self, model: &str) -> Option<(&str, Rates)> {
        let id = ModelId::parse(model)?;
        let v = id.version?;
        self.ranges
            .iter()
            .zip(&self.file.models)
            .find(|(r, _)| r.tier == id.tier && v >= r.from && r.before.is_none_or(|b| v < b))
            .map(|(r, e)| (e.name.as_str(), r.rates))
    }

    /// The model a tier is priced at by default (`tiers` in the file).
    pub fn tier_default(&self, tier: Tier) -> Option<&str> {
        self.file.tiers.get(tier.name()).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_prices_cover_current_models_and_leave_others_unknown() {
        let p = Prices::load(None).unwrap();
        assert_eq!(p.lookup("claude-opus-4-8").unwrap().1.input, 5.0);
        assert_eq!(p.lookup("claude-opus-4-1-20250805").unwrap().1.input, 15.0);
        assert_eq!(p.lookup("claude-opus-4-20250514").unwrap().1.output, 75.0);
        assert_eq!(p.lookup("claude-sonnet-4-5-20250929").unwrap().1.cache_write_1h, 6.0);
        assert_eq!(p.lookup("claude-haiku-4-5-20251001").unwrap().1.cache_read, 0.1);
        assert_eq!(p.lookup("claude-3-5-haiku-20241022").unwrap().1.input, 0.8);
        assert!(p.lookup("claude-opus-5").is_none());
        assert!(p.lookup("haiku").is_none());
        assert!(p.lookup("<synthetic>").is_none());
        // The built-in prices cover the tiers every Claude Code offers; fable has no price yet.
        for tier in Tier::ALL.into_iter().filter(|t| t.always_listed()) {
            let model = p.tier_default(tier).unwrap();
            assert!(p.lookup(model).is_some(), "{model}");
        }
        assert!(p.file.note.contains("subscription"));
    }

    #[test]
    fn cost_prices_each_kind_of_token_separately() {
        let r = Rates { input: 5.0, output: 25.0, cache_write_5m: 6.25, cache_write_1h: 10.0, cache_read: 0.5 };
        let t = Tokens {
            input: 1_000_000,
            output: 100_000,
            cache_write_5m: 200_000,
            cache_write_1h: 100_000,
            cache_read: 2_000_000,
        };
        // 5 + 2.5 + 1.25 + 1 + 1
        assert!((r.cost(&t) - 10.75).abs() < 1e-9);
    }

    #[test]
    fn a_bad_price_file_is_a_clear_error() {
        let err = Prices::parse(r#"{"models":[{"name":"x","family":"gpt","from":"4"}]}"#, "test").err().unwrap();
        assert!(err.to_string().contains("test"));
        let err = Prices::parse(
            r#"{"models":[{"name":"x","family":"opus","from":"four","input":1,"output":1,"cache_write_5m":1,"cache_write_1h":1,"cache_read":1}]}"#,
            "test",
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("`from`"));
    }
}
