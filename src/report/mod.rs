//! `system1 report`: is System-1 used, and does it pay off? Built from Claude Code's transcripts in
//! two steps: [`collect`] reduces each file to compact facts on the reader's threads; [`Aggregator`]
//! merges them on one thread as files finish (deduplicating API requests on `message.id` +
//! `requestId` across every file, keeping the copy with the most tokens and, at equal tokens, the one
//! that is not a sidechain; prompts and hints on their line `uuid`; spawns on their tool use id); then
//! [`Report::build`] prices and computes the figures. Memory grows with the number of distinct API
//! requests (a hash and a few counters each), never with the bytes read. Only totals come out: no
//! prompt, hint or tool text is kept past the line that carried it.
//!
//! The figures (for users, in detail: docs/report.md):
//! - reach: prompts whose turn got a routing hint, over all prompts;
//! - adherence: spawns in a hinted turn whose tier (resolved model, else the subagent's own model,
//!   else the requested `model`, else the parent's) equals the hinted tier; upgrades and downgrades;
//! - subagent cost by tier: spawns, requests, tokens and cost of the subagent files' requests;
//! - realised savings: for each spawn that followed a hint, its tokens priced at the usual tier mix
//!   (the tiers of spawns without a hint, else of main-thread requests) minus its actual cost;
//! - missed savings: for each spawn upgraded past a hint, its actual cost minus its tokens priced at
//!   the hinted tier;
//! - hint overhead: hint tokens (characters / 4) at the 5-minute cache-write price of the request that
//!   first carried them, plus at the cache-read price on every later main-thread request;
//! - net: realised savings minus the hint overhead.
//!
//! The spawn section ([`spawns`]) reads the routing log instead: record-only against enforced spawns,
//! the rule's tier against the tier that ran, outcomes, and what the model rewrites did and saved.

pub mod breakdown;
pub mod collect;
pub mod engines;
mod figures;
pub mod html;
pub mod prices;
pub mod render;
pub mod spawns;
pub mod statusline;
pub mod svg;
pub mod what_if;

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;
use system1_transcripts::{FileInfo, Stats, Tokens};

use crate::claude_code::{Effort, Provider};
use crate::text;
use crate::tier::Tier;
use collect::{FileFacts, HintRec, SpawnRec};
use figures::{Baseline, Models, Spawns, Usage};
use prices::{Day, Minute, PriceFile, Prices, day_of_minute};
use spawns::{SpawnLog, SpawnSection};

const NO_AGENT: u32 = u32::MAX;

/// One API request after deduplication, packed small: there is one per distinct request in the whole
/// history, so this is what the report's memory grows with (one request's counts fit in 32 bits).
#[derive(Debug, Clone)]
struct Rec {
    model: u32,
    agent: u32,
    /// input, output, 5-minute writes, 1-hour writes, cache reads.
    counts: [u32; 5],
    hint_write: u32,
    hint_read: u32,
    /// When the request was made: its UTC day picks the price in force, its local day the row of
    /// `--by day`.
    minute: Minute,
    /// The session and project whose file it was counted from (an index into the origins).
    origin: u32,
    sidechain: bool,
    /// The effort the request was sent with, where its line says.
    effort: Option<Effort>,
}

fn small(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl Rec {
    fn new(
        model: u32,
        agent: u32,
        t: &Tokens,
        sidechain: bool,
        hints: (u64, u64),
        minute: Minute,
        effort: Option<Effort>,
    ) -> Rec {
        let (hint_write, hint_read) = hints;
        Rec {
            model,
            agent,
            origin: 0,
            counts: [
                small(t.input),
                small(t.output),
                small(t.cache_write_5m),
                small(t.cache_write_1h),
                small(t.cache_read),
            ],
            hint_write: small(hint_write),
            hint_read: small(hint_read),
            minute,
            sidechain,
            effort,
        }
    }

    /// The UTC day whose prices apply.
    fn day(&self) -> Day {
        day_of_minute(self.minute)
    }

    fn tokens(&self) -> Tokens {
        let [input, output, w5, w1, read] = self.counts.map(u64::from);
        Tokens { input, output, cache_write_5m: w5, cache_write_1h: w1, cache_read: read }
    }

    fn total(&self) -> u64 {
        self.counts.iter().map(|&c| u64::from(c)).sum()
    }

    /// The dedup rule: more tokens wins (a finished stream beats its placeholder), then the main
    /// thread, then (for a forked session's copy) the session that comes first.
    fn better_than(&self, other: &Rec, origins: &[Origin]) -> bool {
        let (a, b) = (self.total(), other.total());
        a > b
            || (a == b && !self.sidechain && other.sidechain)
            || (a == b && self.sidechain == other.sidechain && first_origin(origins, self.origin, other.origin))
    }
}

/// Where a line was counted from: one session's files in one project.
#[derive(Debug, Clone)]
pub struct Origin {
    /// The project directory's name (the encoded cwd).
    pub project: String,
    pub session_id: String,
    /// The working directory its lines name, when one does.
    pub cwd: Option<String>,
    /// Whether anything in scope was counted from it (a request or a prompt).
    active: bool,
    /// The provider a model id in its files can only have come from, and that id.
    pub provider: Option<(Provider, String)>,
}

impl Origin {
    /// How the project is shown: the path its lines name, else the directory's name.
    pub fn project_path(&self) -> &str {
        self.cwd.as_deref().unwrap_or(&self.project)
    }
}

/// Whether origin `a` comes before `b`: copies of one line in several files (a forked session
/// copies the history) count once, in the first session by id (then project), whatever order the
/// reader threads finished in.
fn first_origin(origins: &[Origin], a: u32, b: u32) -> bool {
    let (a, b) = (&origins[a as usize], &origins[b as usize]);
    (&a.session_id, &a.project) < (&b.session_id, &b.project)
}

/// The dedup key in memory: the 128-bit id hash folded to 64 bits (a collision among a million
/// requests has odds of about one in 30 million).
fn fold(k: u128) -> u64 {
    (k as u64) ^ ((k >> 64) as u64)
}

#[derive(Debug, Clone, Default)]
struct AgentInfo {
    tool_use_id: Option<String>,
    first_model: Option<String>,
    /// From its `.meta.json`.
    agent_type: Option<String>,
    /// The effort level its Agent call named, from the same.
    effort: Option<Effort>,
}

/// A prompt, seen in one file or more.
#[derive(Debug, Clone, Copy)]
struct PromptSeen {
    /// Whether its turn got a routing hint (in any copy).
    hinted: bool,
    /// At least `MIN_WORDS` words: a prompt the routing hook considers at all.
    long: bool,
    minute: Minute,
    origin: u32,
}

/// Merges per-file facts, deduplicating as it goes.
#[derive(Default)]
pub struct Aggregator {
    models: Vec<String>,
    model_index: HashMap<String, u32>,
    usage: HashMap<u64, Rec>,
    unkeyed: Vec<Rec>,
    duplicates: u64,
    prompts: HashMap<u128, PromptSeen>,
    hints: HashMap<u128, HintRec>,
    spawns: HashMap<String, SpawnRec>,
    agents: Vec<AgentInfo>,
    agent_index: HashMap<String, u32>,
    origins: Vec<Origin>,
    origin_index: HashMap<(String, String), u32>,
}

impl Aggregator {
    pub fn new() -> Self {
        Self::default()
    }

    fn model(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.model_index.get(name) {
            return i;
        }
        let i = self.models.len() as u32;
        self.models.push(name.to_string());
        self.model_index.insert(name.to_string(), i);
        i
    }

    fn origin(&mut self, info: &FileInfo) -> u32 {
        let key = (info.project.clone(), info.session_id.clone());
        if let Some(&i) = self.origin_index.get(&key) {
            return i;
        }
        let i = self.origins.len() as u32;
        self.origins.push(Origin {
            project: info.project.clone(),
            session_id: info.session_id.clone(),
            cwd: None,
            active: false,
            provider: None,
        });
        self.origin_index.insert(key, i);
        i
    }

    /// The sessions with something in scope (a request or a prompt), however many files each has.
    fn sessions(&self) -> u64 {
        self.origins.iter().filter(|o| o.active).map(|o| &o.session_id).collect::<HashSet<_>>().len() as u64
    }

    fn agent(&mut self, id: &str) -> u32 {
        if let Some(&i) = self.agent_index.get(id) {
            return i;
        }
        let i = self.agents.len() as u32;
        self.agents.push(AgentInfo::default());
        self.agent_index.insert(id.to_string(), i);
        i
    }

    pub fn add(&mut self, info: &FileInfo, facts: FileFacts) {
        let local: Vec<u32> = facts.models.iter().map(|m| self.model(m)).collect();
        let origin = self.origin(info);
        let o = &mut self.origins[origin as usize];
        o.cwd = o.cwd.take().or(facts.cwd);
        o.provider = o.provider.take().or(facts.provider);
        o.active |= facts.usage.iter().any(|u| u.tokens.total() > 0) || !facts.prompts.is_empty();
        let agent = match &facts.agent_id {
            Some(id) => {
                let i = self.agent(id);
                let a = &mut self.agents[i as usize];
                a.tool_use_id = a.tool_use_id.take().or(facts.agent_tool_use_id);
                a.first_model = a.first_model.take().or(facts.first_model);
                a.agent_type = a.agent_type.take().or(facts.agent_type);
                a.effort = a.effort.or(facts.agent_effort);
                i
            }
            None => NO_AGENT,
        };
        for u in facts.usage {
            let mut rec = Rec::new(
                local[u.model as usize],
                agent,
                &u.tokens,
                u.sidechain,
                (u.hint_write, u.hint_read),
                u.minute,
                u.effort,
            );
            rec.origin = origin;
            match u.key.map(fold) {
                None => self.unkeyed.push(rec),
                Some(k) => match self.usage.get_mut(&k) {
                    None => {
                        self.usage.insert(k, rec);
                    }
                    Some(old) => {
                        self.duplicates += 1;
                        if rec.better_than(old, &self.origins) {
                            *old = rec;
                        }
                    }
                },
            }
        }
        for p in facts.prompts {
            let seen = PromptSeen { hinted: p.hinted, long: p.long, minute: p.minute, origin };
            match self.prompts.get_mut(&p.key) {
                None => {
                    self.prompts.insert(p.key, seen);
                }
                Some(old) => {
                    let hinted = old.hinted || p.hinted;
                    if first_origin(&self.origins, origin, old.origin) {
                        *old = seen;
                    }
                    old.hinted = hinted;
                }
            }
        }
        for h in facts.hints {
            self.hints.entry(h.key).or_insert(h);
        }
        for mut s in facts.spawns {
            s.origin = origin;
            match self.spawns.get_mut(&s.tool_use_id) {
                None => {
                    self.spawns.insert(s.tool_use_id.clone(), s);
                }
                Some(old) => {
                    if first_origin(&self.origins, origin, old.origin) {
                        (old.origin, old.minute) = (origin, s.minute);
                    }
                    old.hint = old.hint.or(s.hint);
                    old.resolved = old.resolved.take().or(s.resolved);
                    old.agent_id = old.agent_id.take().or(s.agent_id);
                    old.requested = old.requested.take().or(s.requested);
                    old.subagent_type = old.subagent_type.take().or(s.subagent_type);
                    old.brief = old.brief.take().or(s.brief);
                }
            }
        }
    }

    fn records(&self) -> impl Iterator<Item = &Rec> {
        self.usage.values().chain(self.unkeyed.iter())
    }
}

/// Token counts as printed and serialized.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct TokenTotals {
    pub input: u64,
    pub output: u64,
    /// 5-minute plus 1-hour cache writes (what `cache_creation_input_tokens` counts).
    pub cache_creation: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    pub cache_read: u64,
    pub total: u64,
}

impl From<Tokens> for TokenTotals {
    fn from(t: Tokens) -> Self {
        TokenTotals {
            input: t.input,
            output: t.output,
            cache_creation: t.cache_write_5m + t.cache_write_1h,
            cache_write_5m: t.cache_write_5m,
            cache_write_1h: t.cache_write_1h,
            cache_read: t.cache_read,
            total: t.total(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ModelRow {
    pub model: String,
    pub tier: Option<Tier>,
    /// The price entry used, or null when no entry covers this model.
    pub priced_as: Option<String>,
    pub requests: u64,
    pub tokens: TokenTotals,
    /// Null for an unknown model: never silently zero.
    pub cost_usd: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Part {
    pub requests: u64,
    pub tokens: TokenTotals,
    /// Cost of the priced requests only; see `unpriced_requests`.
    pub cost_usd: f64,
    pub unpriced_requests: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    pub all: Part,
    pub main: Part,
    pub subagents: Part,
    /// Copies of an API request seen more than once across files and dropped.
    pub duplicate_copies: u64,
    pub sessions: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Reach {
    pub prompts: u64,
    pub hinted_prompts: u64,
    pub share: Option<f64>,
    /// Prompts of at least `MIN_WORDS` words: the ones the routing hook considers at all.
    pub long_prompts: u64,
    pub hinted_long_prompts: u64,
    pub share_of_long: Option<f64>,
    pub routing_hints: u64,
    pub skill_hints: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Adherence {
    pub spawns: u64,
    pub hinted_spawns: u64,
    pub followed: u64,
    pub upgraded: u64,
    pub downgraded: u64,
    /// Hinted spawns whose hint or model named no tier.
    pub unknown: u64,
    /// Hinted spawns that never ran (no agent result, no subagent transcript): not followed.
    pub not_run: u64,
    /// followed / (followed + upgraded + downgraded).
    pub share: Option<f64>,
    /// Hinted spawns where the orchestrator passed a `model` itself.
    pub with_model_given: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TierRow {
    /// `haiku`, `sonnet`, `opus`, or `unknown`.
    pub tier: String,
    pub spawns: u64,
    pub requests: u64,
    pub tokens: TokenTotals,
    pub cost_usd: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Savings {
    /// What "usual" means here: `unhinted spawns`, `main thread`, or `none` (no savings computed).
    pub baseline: String,
    /// How many spawns (or main-thread requests) the usual mix is drawn from.
    pub baseline_samples: u64,
    /// Share of each tier in the baseline.
    pub mix: BTreeMap<String, f64>,
    /// The model each tier is priced at when repricing.
    pub tier_models: BTreeMap<String, String>,
    pub realised_usd: Option<f64>,
    pub followed_spawns_priced: u64,
    pub missed_usd: f64,
    pub upgraded_spawns_priced: u64,
    pub hint_tokens: u64,
    pub hint_overhead_usd: f64,
    pub net_usd: Option<f64>,
}

impl Savings {
    /// What the usual mix is drawn from, with how many: `2 unhinted spawns`.
    pub fn mix_source(&self) -> String {
        mix_source(&self.baseline, self.baseline_samples)
    }

    /// The mix in tier order, cheapest first: `haiku 25%, sonnet 30%, opus 45%`.
    pub fn mix_text(&self) -> String {
        mix_text(&self.mix)
    }
}

/// What a usual mix is drawn from (`unhinted spawns`, `main thread`, `none`), with how many.
pub fn mix_source(baseline: &str, samples: u64) -> String {
    match baseline {
        "unhinted spawns" => text::count(samples, "unhinted spawn"),
        "main thread" => text::count(samples, "main-thread request"),
        other => other.to_string(),
    }
}

/// A mix in tier order, cheapest first: `haiku 25%, sonnet 30%, opus 45%`.
pub fn mix_text(mix: &BTreeMap<String, f64>) -> String {
    Tier::ALL
        .iter()
        .filter_map(|t| mix.get(t.name()).map(|w| format!("{} {}", t.name(), text::pct(*w, 0))))
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Debug, Clone, Serialize)]
pub struct Calibrate {
    pub suggested: bool,
    pub findings: Vec<String>,
    /// What to tell `/system1:calibrate` to focus on.
    pub instructions: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct PriceNote {
    pub note: String,
    pub source: String,
    pub as_of: String,
    pub caveats: Vec<String>,
    /// Where each entry's figures come from, by the key entries name.
    pub sources: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReadStats {
    pub files: u64,
    pub subagent_files: u64,
    pub bytes: u64,
    pub lines: u64,
    pub parsed_lines: u64,
    pub malformed_lines: u64,
    pub truncated_files: u64,
    pub unreadable_files: u64,
    pub out_of_range_lines: u64,
    pub seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub scope: BTreeMap<String, serde_json::Value>,
    pub read: ReadStats,
    pub prices: PriceNote,
    pub totals: Totals,
    pub models: Vec<ModelRow>,
    pub unknown_models: Vec<String>,
    pub reach: Reach,
    pub adherence: Adherence,
    pub subagents_by_tier: Vec<TierRow>,
    pub savings: Savings,
    /// The spawns of the routing log: record-only against enforced, and what the rewrites did.
    pub spawns: SpawnSection,
    /// `--what-if`: what enforcement would have done to the spawns in scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub what_if: Option<what_if::WhatIf>,
    /// The decisions each engine made, and what the hosted ones cost (from System-1's own records).
    pub engines: engines::Engines,
    pub calibrate: Calibrate,
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    if b == 0 { None } else { Some(a as f64 / b as f64) }
}

impl ReadStats {
    pub fn new(stats: &Stats, seconds: f64) -> ReadStats {
        ReadStats {
            files: stats.files,
            subagent_files: stats.subagent_files,
            bytes: stats.bytes,
            lines: stats.lines,
            parsed_lines: stats.parsed,
            malformed_lines: stats.malformed_lines,
            truncated_files: stats.truncated_files,
            unreadable_files: stats.unreadable_files,
            out_of_range_lines: stats.out_of_range,
            seconds,
        }
    }
}

impl PriceNote {
    fn of(file: &PriceFile) -> PriceNote {
        PriceNote {
            note: file.note.clone(),
            source: file.source.clone(),
            as_of: file.as_of.clone(),
            caveats: file.caveats.clone(),
            sources: file.sources.clone(),
        }
    }
}

impl Report {
    /// Prices the merged facts and computes every figure (see [`figures`]), and the spawn section
    /// from the routing log (see [`spawns`]).
    pub fn build(
        agg: &Aggregator,
        prices: &Prices,
        stats: &Stats,
        seconds: f64,
        scope: BTreeMap<String, serde_json::Value>,
        log: &SpawnLog,
    ) -> Report {
        let models = Models::new(agg, prices);
        let usage = Usage::tally(agg, &models, prices);
        let spawns = Spawns::sort(agg);
        let reach = figures::reach(agg);
        let baseline = Baseline::new(agg, prices, &models, &usage, &spawns);
        let repriced = baseline.reprice(agg, prices);
        let savings = figures::savings(agg, &baseline, &repriced, &models, &usage, &spawns);
        let logged = spawns::section(log, agg, &models, &usage, &baseline, &repriced);
        let calibrate = advise(&reach, &spawns.adherence, &savings, &logged);
        let model_rows = figures::model_rows(agg, &models, &usage);
        let unknown_models = model_rows.iter().filter(|m| m.priced_as.is_none()).map(|m| m.model.clone()).collect();
        Report {
            scope,
            read: ReadStats::new(stats, seconds),
            prices: PriceNote::of(&prices.file),
            totals: Totals {
                all: usage.all(&models).part(),
                main: usage.main(&models).part(),
                subagents: usage.subagents(&models).part(),
                duplicate_copies: agg.duplicates,
                sessions: agg.sessions(),
            },
            models: model_rows,
            unknown_models,
            reach,
            subagents_by_tier: figures::tier_rows(&models, &usage, &spawns),
            adherence: spawns.adherence,
            savings,
            spawns: logged,
            what_if: None,
            engines: engines::Engines::default(),
            calibrate,
        }
    }
}

/// Rewrites of a spawn's model that did not take effect: not a calibration matter (the Claude Code
/// version ignored the hook's rewrite), but worth saying.
fn rewrites_finding(logged: &SpawnSection) -> Option<String> {
    let rw = &logged.rewrites;
    (rw.not_taken > 0).then(|| {
        let checked = text::count(rw.checked, "checked model rewrite");
        format!("{} of {checked} did not take effect (see `system1 doctor`)", rw.not_taken)
    })
}

/// What the figures suggest, and what to ask `/system1:calibrate` to look at.
fn advise(reach: &Reach, adherence: &Adherence, savings: &Savings, logged: &SpawnSection) -> Calibrate {
    let mut findings = Vec::new();
    let mut focus = Vec::new();
    let pct = |x: f64| text::pct(x, 0);
    if reach.prompts == 0 {
        // The routing log may hold rewrites the transcripts in scope do not (another --dir).
        let mut findings = vec!["no prompts in these transcripts".to_string()];
        findings.extend(rewrites_finding(logged));
        return Calibrate {
            suggested: false,
            findings,
            instructions:
                "nothing to calibrate from yet: use Claude Code with System-1 for a while, then run the report again"
                    .to_string(),
        };
    }
    if reach.routing_hints == 0 {
        findings.push("no routing hint appeared in these transcripts".to_string());
        focus.push(format!(
            "first check that routing is on and the engine answers (`{}`); then label the routing log to see \
             why every prompt fell below the confidence threshold",
            text::command("doctor")
        ));
    } else if let Some(share) = reach.share_of_long.filter(|s| *s < 0.3) {
        findings.push(format!("hints reached only {} of the prompts long enough for one", pct(share)));
        focus.push(
            "the engine is rarely confident enough: refit the temperature and check whether `min_confidence` is set too high"
                .to_string(),
        );
    }
    let decided = adherence.followed + adherence.upgraded + adherence.downgraded;
    if let Some(share) = adherence.share.filter(|s| *s < 0.6 && decided >= 5) {
        findings.push(format!("Claude followed {} of hinted spawns", pct(share)));
        focus.push(
            "label the prompts whose hints Claude overrode: if Claude's choice was right, the rule or the engine's features are wrong"
                .to_string(),
        );
    }
    if decided >= 5 && adherence.upgraded * 5 >= decided && adherence.upgraded > adherence.downgraded {
        findings.push(format!("{} of {} hinted spawns were upgraded past the hint", adherence.upgraded, decided));
        focus.push("look hardest at prompts hinted to a cheaper tier than Claude chose (hints too low)".to_string());
    } else if decided >= 5 && adherence.downgraded * 5 >= decided && adherence.downgraded > adherence.upgraded {
        findings.push(format!("{} of {} hinted spawns ran below the hinted tier", adherence.downgraded, decided));
        focus.push("look hardest at prompts hinted to a dearer tier than Claude chose (hints too high)".to_string());
    }
    // Below half a cent the loss prints as $0.00: not a finding.
    if let Some(net) = savings.net_usd.filter(|n| *n <= -0.005) {
        findings.push(format!("the hints cost ${:.2} more than they saved", -net));
        // What would have helped depends on where the loss is: hints to dearer tiers than the
        // usual mix (a raise would only add to it), or hint text that costs more than the few
        // spawns that follow it save (setting the tier instead of hinting it would).
        if savings.realised_usd.is_some_and(|r| r < 0.0) {
            focus.push(format!(
                "the hinted tiers were dearer than the usual mix: label the hinted prompts to see which needed a \
                 cheaper tier than the rule gave (hints too high), and see where the spend went with `{}`",
                text::command("report --by agent")
            ));
        } else {
            focus.push(format!(
                "the hint text cost more than the spawns that followed it saved: see what setting the tier instead \
                 would have saved with `{}` before turning [routing] enforce on",
                text::command("report --what-if fill")
            ));
        }
    }
    findings.extend(rewrites_finding(logged));
    let suggested = !focus.is_empty();
    let instructions = if suggested {
        focus.join("; ")
    } else if !findings.is_empty() {
        // A finding with nothing to calibrate (rewrites Claude Code did not take) is not "nothing".
        "nothing here for calibration to fix (for the rewrites, see `system1 doctor`); an occasional \
         /system1:calibrate run on recent prompts keeps the fit current"
            .to_string()
    } else {
        "nothing stands out; an occasional /system1:calibrate run on recent prompts keeps the fit current".to_string()
    };
    Calibrate { suggested, findings, instructions }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(total_output: u64, sidechain: bool) -> Rec {
        Rec::new(
            0,
            NO_AGENT,
            &Tokens { output: total_output, ..Tokens::default() },
            sidechain,
            (0, 0),
            prices::NO_MINUTE,
            None,
        )
    }

    #[test]
    fn packed_records_give_back_their_tokens() {
        let t = Tokens { input: 1, output: 2, cache_write_5m: 3, cache_write_1h: 4, cache_read: 5_000_000_000 };
        let r = Rec::new(0, NO_AGENT, &t, false, (7, 8), 20_733 * 1440 + 59, None);
        assert_eq!(r.day(), 20_733);
        // 48 bytes: the minute and the origin cost 8 over the day alone, for the --by views.
        assert_eq!(std::mem::size_of::<Rec>(), 48, "one per request in the whole history: keep it small");
        assert_eq!(r.tokens().input, 1);
        assert_eq!(r.tokens().cache_write_1h, 4);
        // Beyond 32 bits saturates rather than wrapping.
        assert_eq!(r.tokens().cache_read, u64::from(u32::MAX));
    }

    #[test]
    fn dedup_keeps_the_fullest_copy_then_the_main_thread_one() {
        let origin = |session: &str| Origin {
            project: "p".into(),
            session_id: session.into(),
            cwd: None,
            active: true,
            provider: None,
        };
        let origins = [origin("b"), origin("a")];
        let o = &origins;
        assert!(rec(50, true).better_than(&rec(3, false), o));
        assert!(!rec(3, false).better_than(&rec(50, true), o));
        assert!(rec(50, false).better_than(&rec(50, true), o));
        assert!(!rec(50, true).better_than(&rec(50, false), o));
        assert!(!rec(50, false).better_than(&rec(50, false), o));
        // A forked session's copy: the session that sorts first keeps it, whichever came first.
        let in_session = |origin: u32| Rec { origin, ..rec(50, false) };
        assert!(in_session(1).better_than(&in_session(0), o));
        assert!(!in_session(0).better_than(&in_session(1), o));
    }

    /// Twenty main files, each spawning a subagent (a file of its own) after a haiku hint, plus an
    /// unhinted sonnet spawn for the usual mix; costs that floating point cannot add exactly.
    fn history() -> Vec<(FileInfo, FileFacts)> {
        const MODELS: [&str; 3] = ["claude-opus-4-8", "claude-haiku-4-5-20251001", "claude-sonnet-4-5-20250929"];
        let info = |session: &str| FileInfo {
            path: std::path::PathBuf::new(),
            project: "p".into(),
            session_id: session.into(),
            agent: None,
            size: 0,
        };
        let usage = |f: u64, n: u64, model: u32| -> Vec<collect::UsageRec> {
            (0..n)
                .map(|i| collect::UsageRec {
                    key: Some(collect::hash(&[&format!("{f}-{model}-{i}")])),
                    model,
                    tokens: Tokens {
                        input: 7 + 13 * i + 3 * f,
                        output: 3 + i,
                        cache_read: 11 * i,
                        ..Tokens::default()
                    },
                    sidechain: false,
                    hint_write: i % 5,
                    hint_read: i % 7,
                    minute: prices::NO_MINUTE,
                    effort: None,
                })
                .collect()
        };
        let spawn = |id: String, hint: Option<Option<Tier>>, model: &str| SpawnRec {
            tool_use_id: id,
            hint,
            resolved: Some(model.into()),
            ..SpawnRec::default()
        };
        let mut files = Vec::new();
        for f in 0..20u64 {
            let mut main = FileFacts {
                session_id: format!("s{f}"),
                models: MODELS.map(String::from).to_vec(),
                spawns: vec![
                    spawn(format!("tu{f}"), Some(Some(Tier::Haiku)), MODELS[1]),
                    spawn(format!("plain{f}"), None, MODELS[2]),
                ],
                ..FileFacts::default()
            };
            main.usage = (0..3).flat_map(|m| usage(f, 30, m)).collect();
            files.push((info(&main.session_id), main));
            let agent = FileFacts {
                session_id: format!("s{f}"),
                agent_id: Some(format!("a{f}")),
                agent_tool_use_id: Some(format!("tu{f}")),
                models: vec![MODELS[1].into()],
                usage: usage(100 + f, 10 + f, 0),
                ..FileFacts::default()
            };
            files.push((info(&agent.session_id), agent));
        }
        files
    }

    #[test]
    fn the_same_history_gives_the_same_report_whatever_order_files_finish_in() {
        let prices = Prices::load(None).unwrap();
        let build = |files: Vec<(FileInfo, FileFacts)>| {
            let mut agg = Aggregator::new();
            for (info, facts) in files {
                agg.add(&info, facts);
            }
            let report = Report::build(&agg, &prices, &Stats::default(), 0.0, BTreeMap::new(), &SpawnLog::default());
            assert!(report.savings.realised_usd.is_some_and(|r| r != 0.0), "the savings are priced");
            serde_json::to_string(&report).unwrap()
        };
        let forward = build(history());
        let backward = build(history().into_iter().rev().collect());
        assert_eq!(forward, backward);
    }

    fn reach(prompts: u64, hinted: u64, hints: u64) -> Reach {
        Reach {
            prompts,
            hinted_prompts: hinted,
            share: ratio(hinted, prompts),
            long_prompts: prompts,
            hinted_long_prompts: hinted,
            share_of_long: ratio(hinted, prompts),
            routing_hints: hints,
            skill_hints: 0,
        }
    }

    fn adherence(followed: u64, upgraded: u64, downgraded: u64) -> Adherence {
        let decided = followed + upgraded + downgraded;
        Adherence {
            spawns: decided,
            hinted_spawns: decided,
            followed,
            upgraded,
            downgraded,
            unknown: 0,
            not_run: 0,
            share: ratio(followed, decided),
            with_model_given: 0,
        }
    }

    fn savings(net: Option<f64>) -> Savings {
        Savings {
            baseline: "unhinted spawns".into(),
            baseline_samples: 0,
            mix: BTreeMap::new(),
            tier_models: BTreeMap::new(),
            realised_usd: net,
            followed_spawns_priced: 0,
            missed_usd: 0.0,
            upgraded_spawns_priced: 0,
            hint_tokens: 0,
            hint_overhead_usd: 0.0,
            net_usd: net,
        }
    }

    #[test]
    fn the_calibrate_offer_follows_the_findings() {
        let quiet = advise(&reach(10, 6, 6), &adherence(8, 1, 1), &savings(Some(1.0)), &SpawnSection::default());
        assert!(!quiet.suggested);
        assert!(quiet.findings.is_empty());
        let empty = advise(&reach(0, 0, 0), &adherence(0, 0, 0), &savings(None), &SpawnSection::default());
        assert!(!empty.suggested);
        assert!(empty.findings[0].contains("no prompts"));

        let never = advise(&reach(10, 0, 0), &adherence(0, 0, 0), &savings(None), &SpawnSection::default());
        assert!(never.suggested);
        assert!(never.instructions.contains(&text::command("doctor")));

        let low = advise(&reach(10, 2, 2), &adherence(1, 0, 0), &savings(Some(1.0)), &SpawnSection::default());
        assert!(low.findings[0].contains("20%"));
        assert!(low.instructions.contains("min_confidence"));

        let ignored = advise(&reach(10, 8, 8), &adherence(2, 6, 0), &savings(Some(-0.5)), &SpawnSection::default());
        assert!(ignored.findings.iter().any(|f| f.contains("followed 25%")));
        assert!(ignored.findings.iter().any(|f| f.contains("6 of 8 hinted spawns were upgraded")));
        assert!(ignored.findings.iter().any(|f| f.contains("$0.50 more than they saved")));
        assert!(ignored.instructions.contains("hints too low"));

        // A loss is a finding with something to do, never followed by "nothing stands out"; a loss
        // that rounds to $0.00 is no finding.
        let dear = advise(&reach(10, 6, 6), &adherence(8, 1, 1), &savings(Some(-0.2)), &SpawnSection::default());
        assert!(dear.findings.iter().any(|f| f.contains("$0.20 more than they saved")), "{:?}", dear.findings);
        assert!(dear.suggested && !dear.instructions.contains("nothing stands out"), "{}", dear.instructions);
        // Hints to dearer tiers than the usual mix: a raise would only add to it, so none is suggested.
        assert!(dear.instructions.contains("hints too high"), "{}", dear.instructions);
        assert!(!dear.instructions.contains("--what-if raise"), "{}", dear.instructions);
        // Savings eaten by the hint text: setting the tier is what would have helped.
        let mut thin = savings(Some(-0.2));
        thin.realised_usd = Some(0.1);
        let thin = advise(&reach(10, 6, 6), &adherence(8, 1, 1), &thin, &SpawnSection::default());
        assert!(thin.instructions.contains("--what-if fill"), "{}", thin.instructions);
        let even = advise(&reach(10, 6, 6), &adherence(8, 1, 1), &savings(Some(-0.004)), &SpawnSection::default());
        assert!(even.findings.is_empty() && !even.suggested, "{:?}", even.findings);

        // Rewrites that did not take effect are said, with or without prompts, and ask no calibration.
        let mut logged = SpawnSection::default();
        logged.rewrites.not_taken = 2;
        logged.rewrites.checked = 5;
        let said = "2 of 5 checked model rewrites did not take effect (see `system1 doctor`)";
        let with = advise(&reach(10, 6, 6), &adherence(8, 1, 1), &savings(Some(1.0)), &logged);
        assert_eq!((with.findings.as_slice(), with.suggested), ([said.to_string()].as_slice(), false));
        // ...and are not followed by "nothing stands out".
        assert!(!with.instructions.contains("nothing stands out"), "{}", with.instructions);
        assert!(with.instructions.starts_with("nothing here for calibration to fix"), "{}", with.instructions);
        logged.rewrites = Default::default();
        logged.rewrites.not_taken = 1;
        logged.rewrites.checked = 1;
        let one = advise(&reach(10, 6, 6), &adherence(8, 1, 1), &savings(Some(1.0)), &logged);
        assert_eq!(one.findings, ["1 of 1 checked model rewrite did not take effect (see `system1 doctor`)"]);
        logged.rewrites.not_taken = 2;
        logged.rewrites.checked = 5;
        let without = advise(&reach(0, 0, 0), &adherence(0, 0, 0), &savings(None), &logged);
        assert_eq!(without.findings.last().map(String::as_str), Some(said));

        let high = advise(&reach(10, 8, 8), &adherence(5, 0, 3), &savings(Some(1.0)), &SpawnSection::default());
        assert!(high.instructions.contains("hints too high"));
    }
}
