//! The four routing features: yes/no properties of a task's text that the engine is asked about and
//! the rule turns into a tier. Their names are the keys in the config's rules, the routing log, the
//! labels and the calibration file. At the bottom of the module graph: it depends on nothing in the crate.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A routing feature, in the order the features are asked and shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Feature {
    /// The task can be done by only reading, searching or explaining.
    ReadOnly,
    /// The task asks for a design: an approach to choose among several.
    Design,
    /// The task asks to judge existing work.
    Review,
    /// The text says exactly what to do and where.
    Specified,
}

impl Feature {
    pub const ALL: [Feature; 4] = [Feature::ReadOnly, Feature::Design, Feature::Review, Feature::Specified];

    pub fn name(self) -> &'static str {
        match self {
            Feature::ReadOnly => "read_only",
            Feature::Design => "design",
            Feature::Review => "review",
            Feature::Specified => "specified",
        }
    }

    /// The feature with this exact name; `None` for anything else.
    pub fn named(name: &str) -> Option<Feature> {
        Feature::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The names in order, for messages: `read_only, design, review, specified`.
    pub fn names() -> String {
        Feature::ALL.map(Feature::name).join(", ")
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Feature {
    type Err = String;

    fn from_str(s: &str) -> Result<Feature, String> {
        Feature::named(s).ok_or_else(|| format!("unknown feature {s:?}; use {}", Feature::names()))
    }
}

impl Serialize for Feature {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Feature {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Feature, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_in_order() {
        assert_eq!(Feature::names(), "read_only, design, review, specified");
        for f in Feature::ALL {
            assert_eq!(f.name().parse::<Feature>(), Ok(f));
            assert_eq!(serde_json::to_string(&f).unwrap(), format!("\"{f}\""));
        }
        let mut sorted = Feature::ALL;
        sorted.sort();
        assert_eq!(sorted, Feature::ALL, "Ord is the asking order");
        assert_eq!(
            "vibes".parse::<Feature>().unwrap_err(),
            "unknown feature \"vibes\"; use read_only, design, review, specified"
        );
        assert!(serde_json::from_str::<std::collections::BTreeMap<Feature, bool>>(r#"{"ReadOnly": true}"#).is_err());
    }
}
