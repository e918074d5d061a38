//! The Claude model tiers, and the reading of a model id into its tier and version. The tiers are
//! one table, [`TABLE`], in order of capability and price: a tier Claude Code adds is one more row
//! (and one more variant). At the bottom of the module graph: it depends on nothing in the crate.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A Claude model tier. The variants are in [`TABLE`]'s order, so `<` means cheaper and less capable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    Haiku,
    Sonnet,
    Opus,
    Fable,
}

/// What System-1 knows about one tier.
pub struct Row {
    pub tier: Tier,
    /// The tier's name everywhere in System-1 (rules, hints, labels, the log), which is also the
    /// alias Claude Code's Agent tool takes as `model`.
    pub name: &'static str,
    /// Other family names that read as this tier in a model id.
    pub also: &'static [&'static str],
    /// Whether tables list the tier even when nothing ran on it (the tiers every Claude Code
    /// version offers); the others appear once something used them.
    pub always_listed: bool,
}

/// Every tier, cheapest and least capable first.
pub const TABLE: [Row; 4] = [
    Row { tier: Tier::Haiku, name: "haiku", also: &[], always_listed: true },
    Row { tier: Tier::Sonnet, name: "sonnet", also: &[], always_listed: true },
    Row { tier: Tier::Opus, name: "opus", also: &[], always_listed: true },
    // Claude Code 2.1.197 offers `fable` as the Agent tool's fourth `model`, above opus. It also
    // knows `mythos` (`claude-mythos-5-1`, `-5-2`) as an alias, but not as an Agent `model`, so it
    // is no tier to route to; it is priced as fable is, so a request that ran on it reads as fable.
    Row { tier: Tier::Fable, name: "fable", also: &["mythos"], always_listed: false },
];

impl Tier {
    /// The key of the tier head's yes/no question for this tier ("is this the tier?"), under which
    /// the local engine's trained head for it is fitted (docs/routing.md#the-tier-head).
    pub fn head_key(self) -> String {
        format!("tier_{}", self.name())
    }

    /// The tier whose head question `key` is.
    pub fn of_head_key(key: &str) -> Option<Tier> {
        key.strip_prefix("tier_").and_then(Tier::named)
    }

    pub const COUNT: usize = TABLE.len();
    pub const ALL: [Tier; Tier::COUNT] = {
        let mut all = [Tier::Haiku; Tier::COUNT];
        let mut i = 0;
        while i < Tier::COUNT {
            all[i] = TABLE[i].tier;
            i += 1;
        }
        all
    };

    fn row(self) -> &'static Row {
        &TABLE[self.index()]
    }

    pub fn name(self) -> &'static str {
        self.row().name
    }

    pub fn always_listed(self) -> bool {
        self.row().always_listed
    }

    /// The position in [`TABLE`] (0 for the cheapest), for arrays indexed by tier.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The tier with this exact name (`opus`); `None` for anything else, model ids included.
    pub fn named(name: &str) -> Option<Tier> {
        TABLE.iter().find(|r| r.name == name).map(|r| r.tier)
    }

    /// The names, cheapest first, for messages: `haiku, sonnet, opus, fable`.
    pub fn names() -> String {
        TABLE.iter().map(|r| r.name).collect::<Vec<_>>().join(", ")
    }

    /// The tier a model id or alias names (`haiku`, `claude-sonnet-4-5`, `claude-opus-4-8[1m]`).
    pub fn of(model: &str) -> Option<Tier> {
        ModelId::parse(model).map(|m| m.tier)
    }

    /// The tier a family word in a model id names (`opus`, `mythos`).
    fn of_family(word: &str) -> Option<Tier> {
        TABLE.iter().find(|r| r.name == word || r.also.contains(&word)).map(|r| r.tier)
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Tier {
    type Err = String;

    fn from_str(s: &str) -> Result<Tier, String> {
        Tier::named(s).ok_or_else(|| format!("unknown tier {s:?}; use one of {}", Tier::names()))
    }
}

impl Serialize for Tier {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Tier {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tier, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// A model id read into its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelId {
    pub tier: Tier,
    /// (major, minor); `None` for a bare alias such as `haiku`.
    pub version: Option<(u32, u32)>,
}

impl ModelId {
    pub fn parse(model: &str) -> Option<ModelId> {
        // `[1m]` (long context) and `@20250805` (Vertex) suffixes say nothing about the price tier.
        let m = model.split(['[', '@']).next().unwrap_or(model).trim().to_ascii_lowercase();
        let mut tier = None;
        let mut numbers = Vec::new();
        for part in m.split(['-', '.', '_']) {
            match Tier::of_family(part) {
                Some(t) => tier = tier.or(Some(t)),
                // One- or two-digit parts are the version; eight-digit ones are release dates.
                None if numbers.len() < 2
                    && !part.is_empty()
                    && part.len() <= 2
                    && part.bytes().all(|b| b.is_ascii_digit()) =>
                {
                    numbers.push(part.parse::<u32>().unwrap_or(0));
                }
                None => {}
            }
        }
        let tier = tier?;
        let version = match numbers.as_slice() {
            [] => None,
            [major] => Some((*major, 0)),
            [major, minor, ..] => Some((*major, *minor)),
        };
        Some(ModelId { tier, version })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_variant_order_cheapest_first() {
        for (i, row) in TABLE.iter().enumerate() {
            assert_eq!(row.tier.index(), i, "{}", row.name);
            assert_eq!(Tier::ALL[i], row.tier);
        }
        assert!(Tier::Haiku < Tier::Sonnet && Tier::Sonnet < Tier::Opus && Tier::Opus < Tier::Fable);
        assert_eq!(Tier::names(), "haiku, sonnet, opus, fable");
        let listed: Vec<&str> = Tier::ALL.iter().filter(|t| t.always_listed()).map(|t| t.name()).collect();
        assert_eq!(listed, ["haiku", "sonnet", "opus"]);
    }

    #[test]
    fn names_parse_and_serialize_as_themselves_and_nothing_else_does() {
        for t in Tier::ALL {
            assert_eq!(t.name().parse::<Tier>(), Ok(t));
            assert_eq!(serde_json::to_string(&t).unwrap(), format!("\"{}\"", t.name()));
            assert_eq!(serde_json::from_str::<Tier>(&format!("\"{t}\"")).unwrap(), t);
        }
        for bad in ["Opus", "mythos", "claude-opus-4-8", "gpt", ""] {
            assert!(bad.parse::<Tier>().is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<Tier>("\"gpt\"").is_err());
        assert_eq!("gpt".parse::<Tier>().unwrap_err(), "unknown tier \"gpt\"; use one of haiku, sonnet, opus, fable");
    }

    #[test]
    fn model_ids_read_into_tier_and_version() {
        let cases = [
            ("claude-opus-4-8", Tier::Opus, Some((4, 8))),
            ("claude-opus-4-8[1m]", Tier::Opus, Some((4, 8))),
            ("claude-opus-4-20250514", Tier::Opus, Some((4, 0))),
            ("claude-opus-4-1-20250805", Tier::Opus, Some((4, 1))),
            ("claude-haiku-4-5-20251001", Tier::Haiku, Some((4, 5))),
            ("claude-3-5-sonnet-20241022", Tier::Sonnet, Some((3, 5))),
            ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", Tier::Sonnet, Some((4, 5))),
            ("claude-opus-4-1@20250805", Tier::Opus, Some((4, 1))),
            ("haiku", Tier::Haiku, None),
            // The ids Claude Code 2.1.197 and 2.1.332 resolve their aliases to, and the ones it knows.
            ("claude-sonnet-5", Tier::Sonnet, Some((5, 0))),
            ("claude-opus-5-5", Tier::Opus, Some((5, 5))),
            ("claude-sonnet-5-5", Tier::Sonnet, Some((5, 5))),
            ("claude-haiku-5-5", Tier::Haiku, Some((5, 5))),
            ("claude-opus-5-5[1m]", Tier::Opus, Some((5, 5))),
            ("claude-sonnet-5-5[1m]", Tier::Sonnet, Some((5, 5))),
            ("claude-sonnet-5-20260630", Tier::Sonnet, Some((5, 0))),
            ("claude-haiku-5-5[1m]", Tier::Haiku, Some((5, 5))),
            ("claude-haiku-5-5-20261007", Tier::Haiku, Some((5, 5))),
            ("claude-fable-5", Tier::Fable, Some((5, 0))),
            ("claude-fable-5-1", Tier::Fable, Some((5, 1))),
            ("claude-fable-5-2", Tier::Fable, Some((5, 2))),
            ("claude-fable-5-2[1m]", Tier::Fable, Some((5, 2))),
            ("claude-mythos-5", Tier::Fable, Some((5, 0))),
            ("claude-mythos-5-2[1m]", Tier::Fable, Some((5, 2))),
            ("fable", Tier::Fable, None),
            ("claude-mythos-5-1", Tier::Fable, Some((5, 1))),
            ("mythos", Tier::Fable, None),
        ];
        for (id, tier, version) in cases {
            assert_eq!(ModelId::parse(id), Some(ModelId { tier, version }), "{id}");
        }
        // `best` is whatever the account's best model is: no id says which tier that was.
        for none in ["<synthetic>", "gpt-5", "best", "inherit", ""] {
            assert_eq!(ModelId::parse(none), None, "{none}");
        }
    }
}
