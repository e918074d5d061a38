//! The Claude model tiers System-1 routes between, and the reading of a model id into its tier and
//! version. At the bottom of the module graph: it depends on nothing in the crate.

use serde::Serialize;

/// The three Claude tiers System-1 routes between, cheapest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Haiku,
    Sonnet,
    Opus,
}

impl Tier {
    pub const ALL: [Tier; 3] = [Tier::Haiku, Tier::Sonnet, Tier::Opus];

    pub fn name(self) -> &'static str {
        match self {
            Tier::Haiku => "haiku",
            Tier::Sonnet => "sonnet",
            Tier::Opus => "opus",
        }
    }

    /// The tier a model id or alias names (`haiku`, `claude-sonnet-4-5`, `claude-opus-4-8[1m]`).
    pub fn of(model: &str) -> Option<Tier> {
        ModelId::parse(model).map(|m| m.tier)
    }

    pub fn index(self) -> usize {
        self as usize
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
            match part {
                "haiku" => tier = tier.or(Some(Tier::Haiku)),
                "sonnet" => tier = tier.or(Some(Tier::Sonnet)),
                "opus" => tier = tier.or(Some(Tier::Opus)),
                // One- or two-digit parts are the version; eight-digit ones are release dates.
                p if numbers.len() < 2 && !p.is_empty() && p.len() <= 2 && p.bytes().all(|b| b.is_ascii_digit()) => {
                    numbers.push(p.parse::<u32>().unwrap_or(0));
                }
                _ => {}
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
        ];
        for (id, tier, version) in cases {
            assert_eq!(ModelId::parse(id), Some(ModelId { tier, version }), "{id}");
        }
        assert_eq!(ModelId::parse("<synthetic>"), None);
        assert_eq!(ModelId::parse("gpt-5"), None);
    }
}
