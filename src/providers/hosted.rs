//! The hosted decision services System-1 speaks to, each with the host of its API and its
//! published price: the one table `engine probe` offers them from, `system1_capabilities` and
//! `doctor` show them by, and the report prices their decisions by (docs/engines.md#gemini-and-openrouter).

use serde::Serialize;

/// A hosted decision service.
#[derive(Debug, Serialize)]
pub struct Service {
    /// The provider that speaks to it.
    pub provider: &'static str,
    /// The host of its API: an engine whose endpoint is on it is this service.
    pub host: &'static str,
    pub service: &'static str,
    /// Whose servers the prompts go to.
    pub vendor: &'static str,
    /// USD per million input tokens (output is not charged), as the vendor publishes it; `None`
    /// where it depends on the model chosen.
    pub usd_per_million_input: Option<f64>,
    pub price_source: &'static str,
}

/// Every hosted service System-1 knows, in the order `engine probe` offers them.
pub const SERVICES: [Service; 3] = [
    Service {
        provider: "gemini",
        host: "generativelanguage.googleapis.com",
        service: "Google's Gemini Decisions API (gemini-decision-1)",
        vendor: "Google",
        usd_per_million_input: Some(0.10),
        price_source: "Google's figure at launch, 2026-11-11",
    },
    Service {
        provider: "decisions",
        host: "api.openai.com",
        service: "OpenAI's Decisions API (gpt-6-luna; endpoint = \"https://api.openai.com/v1\")",
        vendor: "OpenAI",
        usd_per_million_input: Some(0.10),
        price_source: "OpenAI's figure for the public beta, 2026-10-06",
    },
    Service {
        provider: "openrouter",
        host: "openrouter.ai",
        service: "OpenRouter's decisions route (several vendors' decision models behind one key)",
        vendor: "OpenRouter and the model's vendor",
        usd_per_million_input: None,
        price_source: "OpenRouter prices each model on its own page",
    },
];

/// The service whose API is on `host` (a URL's host, any case).
pub fn at_host(host: &str) -> Option<&'static Service> {
    SERVICES.iter().find(|s| s.host.eq_ignore_ascii_case(host.trim_end_matches('.')))
}

impl Service {
    /// What `input_tokens` cost at the published price; `None` where it is not published.
    pub fn usd(&self, input_tokens: u64) -> Option<f64> {
        self.usd_per_million_input.map(|p| input_tokens as f64 * p / 1e6)
    }
}

/// Where an engine runs, when not on this machine: its prompts and contexts leave the machine.
/// Serialized (in `system1_capabilities`) as its host and, for a known service, the service, its
/// vendor and its published price.
#[derive(Debug, Clone, PartialEq)]
pub struct Remote {
    /// The host its requests go to.
    pub host: String,
    /// The hosted service there, when it is one of [`SERVICES`]; `None` for another machine (a
    /// team's own server), whose price System-1 does not know.
    pub service: Option<&'static Service>,
}

impl PartialEq for Service {
    fn eq(&self, other: &Self) -> bool {
        self.host == other.host
    }
}

impl Serialize for Remote {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("host", &self.host)?;
        if let Some(s) = self.service {
            map.serialize_entry("service", s.service)?;
            map.serialize_entry("vendor", s.vendor)?;
            if let Some(p) = s.usd_per_million_input {
                map.serialize_entry("usd_per_million_input_tokens", &p)?;
            }
            map.serialize_entry("price_source", s.price_source)?;
        }
        map.end()
    }
}

impl Remote {
    pub fn at(host: &str) -> Self {
        Remote { host: host.to_string(), service: at_host(host) }
    }

    /// For people: where it runs and what that means.
    pub fn line(&self) -> String {
        let price = match self.service {
            Some(s) => match s.usd_per_million_input {
                Some(p) => format!("; {}, ${p:.2} per million input tokens ({})", s.vendor, s.price_source),
                None => format!("; {} ({})", s.vendor, s.price_source),
            },
            None => String::new(),
        };
        format!("hosted at {}: the prompts and contexts it decides on leave this machine{price}", self.host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_is_found_by_its_host_and_priced_per_input_token() {
        assert_eq!(at_host("API.openai.com").map(|s| s.provider), Some("decisions"));
        assert_eq!(at_host("generativelanguage.googleapis.com.").map(|s| s.provider), Some("gemini"));
        assert!(at_host("gpu.example.com").is_none(), "a team's own server has no published price");
        let gemini = at_host("generativelanguage.googleapis.com").expect("gemini");
        assert_eq!(gemini.usd(2_000_000), Some(0.2));
        assert_eq!(at_host("openrouter.ai").and_then(|s| s.usd(1000)), None, "priced per model");
        let line = Remote::at("api.openai.com").line();
        assert!(line.contains("leave this machine") && line.contains("$0.10 per million input tokens"), "{line}");
        assert!(!Remote::at("gpu.example.com").line().contains('$'));
    }
}
