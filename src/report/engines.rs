//! The report's engine section: the decisions each engine made, and what the hosted ones cost.
//!
//! Counted from what System-1 records of each decision, not from the transcripts: the routing
//! log's prompt, agent and skill records (the hooks' decisions) and the daily decision tally
//! (`system1_decide`, `system1 decide` and `system1 serve`'s routes), each naming the engine that answered and, for an engine
//! hosted elsewhere, the input tokens sent to it (`state::Sent`). A hosted engine is priced at its
//! service's published price (`providers::hosted::SERVICES`) by the host the tokens went to; one
//! whose price is not published (OpenRouter's, priced per model; a team's own server) is counted,
//! not priced.

use chrono::{DateTime, Utc};
use serde::Serialize;
use system1_transcripts::Scope;

use super::spawns::SpawnLog;
use crate::providers::hosted;
use crate::routing::entry::Source;
use crate::state::{self, Sent, Tallied};

/// The decisions of every engine in scope.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Engines {
    /// One row per engine that answered or was sent a decision, most decisions first.
    pub engines: Vec<EngineRow>,
    /// What the hosted engines with a published price cost, in USD.
    pub hosted_usd: f64,
    /// Input tokens sent to hosted engines whose price is not published, so left out of `hosted_usd`.
    pub unpriced_tokens: u64,
    /// Whether the tally of `system1_decide`, `system1 decide` and `system1 serve` was counted: not with
    /// `--project`, as it does not say where a decision came from.
    pub tools_counted: bool,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct EngineRow {
    pub provider: String,
    /// Decisions it answered for the hooks (a prompt's features, a spawn's brief, a skill pick).
    pub hooks: u64,
    /// Decisions it answered for `system1_decide`, `system1 decide` and `system1 serve` (one a request).
    pub tools: u64,
    /// hooks + tools.
    pub decisions: u64,
    /// For an engine hosted elsewhere: what was sent to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosted: Option<HostedUse>,
}

/// What decisions sent to one hosted engine, and what that cost.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct HostedUse {
    /// The hosts the requests went to.
    pub hosts: Vec<String>,
    /// Decisions that sent it a request (an engine that passed a question on or failed was sent it too).
    pub decisions_sent: u64,
    /// Estimated input tokens (one per four characters sent).
    pub input_tokens: u64,
    /// The published price, USD per million input tokens, when every host has one.
    pub usd_per_million_input_tokens: Option<f64>,
    pub price_source: Option<String>,
    /// What the priced part cost; `None` when nothing sent to it has a published price.
    pub usd: Option<f64>,
}

impl Engines {
    /// The engines of the routing log's records in scope (`log`) and, without a project in
    /// `scope`, of the decision tallies of the days in scope.
    pub fn read(log: &SpawnLog, scope: &Scope) -> Engines {
        let mut e = Engines { tools_counted: scope.project.is_none(), ..Engines::default() };
        let decisions =
            log.entries.iter().filter(|e| matches!(e.source, Some(Source::Prompt | Source::Agent | Source::Skill)));
        for entry in decisions {
            e.add(entry.decided.provider.as_deref(), &entry.decided.sent, false);
        }
        if e.tools_counted {
            for t in tallies(scope) {
                e.add(t.provider.as_deref(), &t.sent, true);
            }
        }
        e.engines.sort_by(|a, b| b.decisions.cmp(&a.decisions).then_with(|| a.provider.cmp(&b.provider)));
        e
    }

    fn row(&mut self, provider: &str) -> &mut EngineRow {
        let i = match self.engines.iter().position(|r| r.provider == provider) {
            Some(i) => i,
            None => {
                self.engines.push(EngineRow { provider: provider.to_string(), ..EngineRow::default() });
                self.engines.len() - 1
            }
        };
        &mut self.engines[i]
    }

    /// One decision: answered by `provider` (none when no engine answered), `sent` what went off
    /// the machine.
    fn add(&mut self, provider: Option<&str>, sent: &[Sent], tool: bool) {
        if let Some(p) = provider {
            let row = self.row(p);
            if tool {
                row.tools += 1
            } else {
                row.hooks += 1
            }
            row.decisions += 1;
        }
        for s in sent {
            let service = hosted::at_host(&s.host);
            let cost = service.and_then(|svc| svc.usd(s.input_tokens));
            match cost {
                Some(usd) => self.hosted_usd += usd,
                None => self.unpriced_tokens += s.input_tokens,
            }
            let h = self.row(&s.provider).hosted.get_or_insert_with(HostedUse::default);
            if !h.hosts.contains(&s.host) {
                h.hosts.push(s.host.clone());
                let price = |svc: Option<&hosted::Service>| svc.and_then(|s| s.usd_per_million_input);
                let first = h.hosts.len() == 1;
                h.usd_per_million_input_tokens =
                    if first || h.usd_per_million_input_tokens == price(service) { price(service) } else { None };
                h.price_source = h.usd_per_million_input_tokens.and(service).map(|s| s.price_source.to_string());
            }
            h.decisions_sent += 1;
            h.input_tokens += s.input_tokens;
            if let Some(usd) = cost {
                *h.usd.get_or_insert(0.0) += usd;
            }
        }
    }
}

/// The tally lines inside `scope`'s time range (a line without a readable time only when the
/// scope has no range).
fn tallies(scope: &Scope) -> Vec<Tallied> {
    let day = |t: Option<DateTime<Utc>>| t.map(|t| t.format("%Y-%m-%d").to_string());
    let (first, last) = (day(scope.since), day(scope.until));
    let ranged = scope.since.is_some() || scope.until.is_some();
    let mut out = Vec::new();
    for d in state::tallied_days() {
        // A tally is a UTC day: the days that can hold a line in range, then each line's time.
        if first.as_ref().is_some_and(|f| d < *f) || last.as_ref().is_some_and(|l| d > *l) {
            continue;
        }
        out.extend(state::tallied(&d).into_iter().filter(|t| {
            let time = t.time.as_deref().and_then(|s| DateTime::parse_from_rfc3339(s).ok()).map(|t| t.to_utc());
            match time {
                None => !ranged,
                Some(t) => scope.since.is_none_or(|s| t >= s) && scope.until.is_none_or(|u| t < u),
            }
        }));
    }
    out
}

/// The section as text lines for the report's table; none when no decision was recorded.
pub fn lines(e: &Engines) -> Vec<String> {
    if e.engines.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!(
        "{:<24}{:>8}{:>8}{:>10}{:>14}{:>11}",
        "Decisions by engine", "hooks", "tools", "hosted", "input tokens", "cost"
    )];
    for r in &e.engines {
        let (sent, tokens, cost) = match &r.hosted {
            Some(h) => (
                h.decisions_sent.to_string(),
                h.input_tokens.to_string(),
                h.usd.map(|u| format!("${u:.4}")).unwrap_or_else(|| "unpriced".into()),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let name = crate::text::printable(&r.provider, 22);
        out.push(format!("  {name:<22}{:>8}{:>8}{sent:>10}{tokens:>14}{cost:>11}", r.hooks, r.tools));
    }
    for r in &e.engines {
        let Some(h) = &r.hosted else { continue };
        let price = match (h.usd_per_million_input_tokens, &h.price_source) {
            (Some(p), Some(src)) => format!("${p:.2} per million input tokens ({src})"),
            _ => "no published price (priced per model, or a server of your own)".to_string(),
        };
        out.push(format!(
            "  {} is hosted at {}: its decisions' prompts and contexts left this machine; {price}",
            crate::text::printable(&r.provider, 40),
            crate::text::printable(&h.hosts.join(", "), 200)
        ));
    }
    if e.engines.iter().any(|r| r.hosted.is_some()) {
        let unpriced = match e.unpriced_tokens {
            0 => String::new(),
            n => format!(", plus {n} input tokens with no published price"),
        };
        out.push(format!(
            "  hosted engines cost ${:.4} at their published prices (input tokens estimated at 4 characters each){unpriced}",
            e.hosted_usd
        ));
    }
    if !e.tools_counted {
        out.push(
            "  (system1_decide and `system1 decide` are not counted with --project: their tally has no project)".into(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(provider: &str, host: &str, input_tokens: u64) -> Sent {
        Sent { provider: provider.into(), host: host.into(), input_tokens }
    }

    #[test]
    fn each_engine_counts_its_decisions_and_a_hosted_one_its_tokens_at_its_host_price() {
        let mut e = Engines::default();
        e.add(Some("local"), &[], false);
        e.add(Some("local"), &[], true);
        // Local passed one question on to gemini, which answered the rest: gemini made the decision.
        e.add(Some("gemini"), &[sent("gemini", "generativelanguage.googleapis.com", 2_000_000)], true);
        // Sent to openrouter, which failed; local had answered.
        e.add(Some("local"), &[sent("openrouter", "openrouter.ai", 500)], false);
        let local = &e.engines[0];
        assert_eq!((local.hooks, local.tools, local.decisions, local.hosted.is_none()), (2, 1, 3, true));
        let gemini = e.engines.iter().find(|r| r.provider == "gemini").expect("gemini");
        let h = gemini.hosted.as_ref().expect("hosted");
        assert_eq!((gemini.decisions, h.decisions_sent, h.input_tokens), (1, 1, 2_000_000));
        assert_eq!((h.usd, h.usd_per_million_input_tokens), (Some(0.2), Some(0.1)));
        let or = e.engines.iter().find(|r| r.provider == "openrouter").expect("openrouter");
        assert_eq!((or.decisions, or.hosted.as_ref().and_then(|h| h.usd)), (0, None));
        assert!((e.hosted_usd - 0.2).abs() < 1e-12 && e.unpriced_tokens == 500, "{e:?}");
    }
}
