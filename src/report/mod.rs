//! `system1 report`: is System-1 used, and does it pay off? Built from Claude Code's transcripts in
//! two steps: [`collect`] reduces each file to compact facts on the reader's threads; [`Aggregator`]
//! merges them on one thread as files finish (deduplicating API requests on `message.id` +
//! `requestId` across every file, keeping the copy with the most tokens and, at equal tokens, the one
//! that is not a sidechain; prompts and hints on their line `uuid`; spawns on their tool use id); then
//! [`Report::build`] prices and computes the figures. Memory grows with the number of distinct API
//! requests (a hash and a few counters each), never with the bytes read. Only totals come out: no
//! prompt, hint or tool text is kept past the line that carried it.
//!
//! The figures, defined precisely in README "Usage report":
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

pub mod collect;
pub mod prices;
pub mod render;
pub mod svg;

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use crate::tier::Tier;
use crate::transcripts::{FileInfo, Stats, Tokens};
use collect::{FileFacts, HintRec, SpawnRec};
use prices::{Prices, Rates};

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
    sidechain: bool,
}

fn small(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl Rec {
    fn new(model: u32, agent: u32, t: &Tokens, sidechain: bool, hint_write: u64, hint_read: u64) -> Rec {
        Rec {
            model,
            agent,
            counts: [
                small(t.input),
                small(t.output),
                small(t.cache_write_5m),
                small(t.cache_write_1h),
                small(t.cache_read),
            ],
            hint_write: small(hint_write),
            hint_read: small(hint_read),
            sidechain,
        }
    }

    fn tokens(&self) -> Tokens {
        let [input, output, w5, w1, read] = self.counts.map(u64::from);
        Tokens { input, output, cache_write_5m: w5, cache_write_1h: w1, cache_read: read }
    }

    fn total(&self) -> u64 {
        self.counts.iter().map(|&c| u64::from(c)).sum()
    }

    /// The dedup rule: more tokens wins (a finished stream beats its placeholder), then the main thread.
    fn better_than(&self, other: &Rec) -> bool {
        let (a, b) = (self.total(), other.total());
        a > b || (a == b && !self.sidechain && other.sidechain)
    }
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
}

/// Merges per-file facts, deduplicating as it goes.
#[derive(Default)]
pub struct Aggregator {
    models: Vec<String>,
    model_index: HashMap<String, u32>,
    usage: HashMap<u64, Rec>,
    unkeyed: Vec<Rec>,
    duplicates: u64,
    /// Prompt key → (hinted, long).
    prompts: HashMap<u128, (bool, bool)>,
    hints: HashMap<u128, HintRec>,
    spawns: HashMap<String, SpawnRec>,
    agents: Vec<AgentInfo>,
    agent_index: HashMap<String, u32>,
    sessions: HashSet<String>,
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
        let agent = match &facts.agent_id {
            Some(id) => {
                let i = self.agent(id);
                let a = &mut self.agents[i as usize];
                a.tool_use_id = a.tool_use_id.take().or(facts.agent_tool_use_id);
                a.first_model = a.first_model.take().or(facts.first_model);
                i
            }
            None => {
                self.sessions.insert(info.session_id.clone());
                NO_AGENT
            }
        };
        for u in facts.usage {
            let rec = Rec::new(local[u.model as usize], agent, &u.tokens, u.sidechain, u.hint_write, u.hint_read);
            match u.key.map(fold) {
                None => self.unkeyed.push(rec),
                Some(k) => match self.usage.get_mut(&k) {
                    None => {
                        self.usage.insert(k, rec);
                    }
                    Some(old) => {
                        self.duplicates += 1;
                        if rec.better_than(old) {
                            *old = rec;
                        }
                    }
                },
            }
        }
        for p in facts.prompts {
            let e = self.prompts.entry(p.key).or_insert((false, p.long));
            e.0 |= p.hinted;
        }
        for h in facts.hints {
            self.hints.entry(h.key).or_insert(h);
        }
        for s in facts.spawns {
            match self.spawns.get_mut(&s.tool_use_id) {
                None => {
                    self.spawns.insert(s.tool_use_id.clone(), s);
                }
                Some(old) => {
                    old.hint = old.hint.or(s.hint);
                    old.resolved = old.resolved.take().or(s.resolved);
                    old.agent_id = old.agent_id.take().or(s.agent_id);
                    old.requested = old.requested.take().or(s.requested);
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
    /// The mix in tier order, cheapest first: `haiku 25%, sonnet 30%, opus 45%`.
    pub fn mix_text(&self) -> String {
        Tier::ALL
            .iter()
            .filter_map(|t| self.mix.get(t.name()).map(|w| format!("{} {:.0}%", t.name(), w * 100.0)))
            .collect::<Vec<_>>()
            .join(", ")
    }
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
    pub calibrate: Calibrate,
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    if b == 0 { None } else { Some(a as f64 / b as f64) }
}

fn part(requests: u64, tokens: Tokens, cost: f64, unpriced: u64) -> Part {
    Part { requests, tokens: tokens.into(), cost_usd: cost, unpriced_requests: unpriced }
}

impl Report {
    pub fn build(
        agg: &Aggregator,
        prices: &Prices,
        stats: &Stats,
        seconds: f64,
        scope: BTreeMap<String, serde_json::Value>,
    ) -> Report {
        let rates: Vec<Option<(String, Rates)>> =
            agg.models.iter().map(|m| prices.lookup(m).map(|(n, r)| (n.to_string(), r))).collect();
        let tiers: Vec<Option<Tier>> = agg.models.iter().map(|m| Tier::of(m)).collect();

        // Totals per model and per thread.
        let n = agg.models.len();
        let mut per_model = vec![(0u64, Tokens::default()); n];
        let (mut main, mut sub) = ((0u64, Tokens::default(), 0.0f64, 0u64), (0u64, Tokens::default(), 0.0f64, 0u64));
        let mut tier_rows: BTreeMap<Option<Tier>, (u64, u64, Tokens, f64)> = BTreeMap::new();
        let mut agent_usage: HashMap<u32, Vec<(u32, Tokens)>> = HashMap::new();
        let mut overhead = 0.0;
        let mut main_tier_requests = [0u64; Tier::COUNT];
        let mut tier_model_requests: HashMap<u32, u64> = HashMap::new();
        for r in agg.records() {
            let m = r.model as usize;
            let tokens = r.tokens();
            if tokens.total() == 0 {
                continue;
            }
            per_model[m].0 += 1;
            per_model[m].1.add(&tokens);
            let cost = rates[m].as_ref().map(|(_, rt)| rt.cost(&tokens));
            let subagent = r.agent != NO_AGENT || r.sidechain;
            let bucket = if subagent { &mut sub } else { &mut main };
            bucket.0 += 1;
            bucket.1.add(&tokens);
            bucket.2 += cost.unwrap_or(0.0);
            bucket.3 += u64::from(cost.is_none());
            if rates[m].is_some() {
                *tier_model_requests.entry(r.model).or_default() += 1;
            }
            if subagent {
                let row = tier_rows.entry(tiers[m]).or_default();
                row.1 += 1;
                row.2.add(&tokens);
                row.3 += cost.unwrap_or(0.0);
                if r.agent != NO_AGENT {
                    agent_usage.entry(r.agent).or_default().push((r.model, tokens));
                }
            } else {
                if let Some(t) = tiers[m] {
                    main_tier_requests[t.index()] += 1;
                }
                if let Some((_, rt)) = &rates[m] {
                    overhead += (r.hint_write as f64 * rt.cache_write_5m + r.hint_read as f64 * rt.cache_read) / 1e6;
                }
            }
        }

        let mut models: Vec<ModelRow> = (0..n)
            .filter(|&m| per_model[m].1.total() > 0)
            .map(|m| ModelRow {
                model: agg.models[m].clone(),
                tier: tiers[m],
                priced_as: rates[m].as_ref().map(|(name, _)| name.clone()),
                requests: per_model[m].0,
                tokens: per_model[m].1.into(),
                cost_usd: rates[m].as_ref().map(|(_, rt)| rt.cost(&per_model[m].1)),
            })
            .collect();
        models.sort_by(|a, b| b.tokens.total.cmp(&a.tokens.total).then_with(|| a.model.cmp(&b.model)));
        let unknown_models: Vec<String> =
            models.iter().filter(|m| m.priced_as.is_none()).map(|m| m.model.clone()).collect();
        let mut all_tokens = main.1;
        all_tokens.add(&sub.1);

        // Reach.
        let hinted_prompts = agg.prompts.values().filter(|(h, _)| *h).count() as u64;
        let prompts = agg.prompts.len() as u64;
        let long_prompts = agg.prompts.values().filter(|(_, long)| *long).count() as u64;
        let hinted_long_prompts = agg.prompts.values().filter(|(h, long)| *h && *long).count() as u64;
        let routing_hints = agg.hints.values().filter(|h| h.routing).count() as u64;
        let skill_hints = agg.hints.len() as u64 - routing_hints;
        let hint_tokens: u64 = agg.hints.values().map(|h| h.tokens).sum();

        // Spawns: their tier, their agent's usage.
        let by_tool_use: HashMap<&str, u32> = agg
            .agents
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.tool_use_id.as_deref().map(|t| (t, i as u32)))
            .collect();
        let spawn_agent = |s: &SpawnRec| -> Option<u32> {
            s.agent_id
                .as_deref()
                .and_then(|id| agg.agent_index.get(id).copied())
                .or_else(|| by_tool_use.get(s.tool_use_id.as_str()).copied())
        };
        let spawn_tier = |s: &SpawnRec, agent: Option<u32>| -> Option<Tier> {
            s.resolved
                .as_deref()
                .and_then(Tier::of)
                .or_else(|| agent.and_then(|a| agg.agents[a as usize].first_model.as_deref()).and_then(Tier::of))
                .or_else(|| s.requested.as_deref().and_then(Tier::of))
                .or_else(|| s.parent_model.as_deref().and_then(Tier::of))
        };

        let mut adherence = Adherence {
            spawns: agg.spawns.len() as u64,
            hinted_spawns: 0,
            followed: 0,
            upgraded: 0,
            downgraded: 0,
            unknown: 0,
            share: None,
            with_model_given: 0,
        };
        let mut unhinted_mix = [0u64; Tier::COUNT];
        let mut spawns_per_tier: BTreeMap<Option<Tier>, u64> = BTreeMap::new();
        // (agent, tier actually run, hinted tier, followed?)
        let mut followed: Vec<Option<u32>> = Vec::new();
        let mut upgraded: Vec<(Option<u32>, Tier)> = Vec::new();
        for s in agg.spawns.values() {
            let agent = spawn_agent(s);
            let tier = spawn_tier(s, agent);
            *spawns_per_tier.entry(tier).or_default() += 1;
            match s.hint {
                None => {
                    if let Some(t) = tier {
                        unhinted_mix[t.index()] += 1;
                    }
                }
                Some(hint) => {
                    adherence.hinted_spawns += 1;
                    if s.requested.as_deref().is_some_and(|m| m != "inherit") {
                        adherence.with_model_given += 1;
                    }
                    match (hint, tier) {
                        (Some(h), Some(t)) if t == h => {
                            adherence.followed += 1;
                            followed.push(agent);
                        }
                        (Some(h), Some(t)) if t > h => {
                            adherence.upgraded += 1;
                            upgraded.push((agent, h));
                        }
                        (Some(_), Some(_)) => adherence.downgraded += 1,
                        _ => adherence.unknown += 1,
                    }
                }
            }
        }
        adherence.share = ratio(adherence.followed, adherence.followed + adherence.upgraded + adherence.downgraded);

        let mut subagents_by_tier: Vec<TierRow> = Vec::new();
        // Cheapest first, then what no model id names; a tier not always listed (fable), and the
        // unknown row, only when something ran there.
        for tier in Tier::ALL.map(Some).into_iter().chain([None]) {
            let row = tier_rows.get(&tier).cloned().unwrap_or_default();
            let spawns = spawns_per_tier.get(&tier).copied().unwrap_or(0);
            if !tier.is_some_and(Tier::always_listed) && spawns == 0 && row.1 == 0 {
                continue;
            }
            subagents_by_tier.push(TierRow {
                tier: tier.map_or("unknown", Tier::name).to_string(),
                spawns,
                requests: row.1,
                tokens: row.2.into(),
                cost_usd: row.3,
            });
        }

        // The usual tier mix, and the model each tier is repriced at.
        let (baseline, mix_counts) = if unhinted_mix.iter().sum::<u64>() > 0 {
            ("unhinted spawns", unhinted_mix)
        } else if main_tier_requests.iter().sum::<u64>() > 0 {
            ("main thread", main_tier_requests)
        } else {
            ("none", [0; Tier::COUNT])
        };
        let mix_total: u64 = mix_counts.iter().sum();
        let mut tier_models: BTreeMap<String, String> = BTreeMap::new();
        let mut tier_rates: [Option<Rates>; Tier::COUNT] = [None; Tier::COUNT];
        for t in Tier::ALL {
            let most_used = tier_model_requests
                .iter()
                .filter(|(m, _)| tiers[**m as usize] == Some(t))
                .max_by(|a, b| a.1.cmp(b.1).then_with(|| agg.models[*b.0 as usize].cmp(&agg.models[*a.0 as usize])))
                .map(|(m, _)| agg.models[*m as usize].clone());
            let model = most_used.or_else(|| prices.tier_default(t).map(str::to_string));
            if let Some(model) = model
                && let Some((_, rt)) = prices.lookup(&model)
            {
                tier_rates[t.index()] = Some(rt);
                tier_models.insert(t.name().to_string(), model);
            }
        }
        let mix: BTreeMap<String, f64> = Tier::ALL
            .iter()
            .filter(|t| mix_total > 0 && mix_counts[t.index()] > 0)
            .map(|t| (t.name().to_string(), mix_counts[t.index()] as f64 / mix_total as f64))
            .collect();

        // An agent's tokens (all models summed) and actual cost; None when a model is unpriced.
        let agent_cost = |agent: Option<u32>| -> Option<(Tokens, f64)> {
            let mut tokens = Tokens::default();
            let mut cost = 0.0;
            for (m, t) in agent.and_then(|a| agent_usage.get(&a)).map(Vec::as_slice).unwrap_or(&[]) {
                tokens.add(t);
                cost += rates[*m as usize].as_ref()?.1.cost(t);
            }
            Some((tokens, cost))
        };
        let mut realised = 0.0;
        let mut followed_priced = 0;
        let mix_ok =
            mix_total > 0 && Tier::ALL.iter().all(|t| mix_counts[t.index()] == 0 || tier_rates[t.index()].is_some());
        if mix_ok {
            for agent in &followed {
                let Some((tokens, actual)) = agent_cost(*agent) else { continue };
                if tokens.total() == 0 {
                    continue;
                }
                let usual: f64 = Tier::ALL
                    .iter()
                    .filter_map(|t| {
                        let w = mix_counts[t.index()] as f64 / mix_total as f64;
                        tier_rates[t.index()].map(|rt| w * rt.cost(&tokens))
                    })
                    .sum();
                realised += usual - actual;
                followed_priced += 1;
            }
        }
        let mut missed = 0.0;
        let mut upgraded_priced = 0;
        for (agent, hint) in &upgraded {
            let (Some((tokens, actual)), Some(rt)) = (agent_cost(*agent), tier_rates[hint.index()]) else { continue };
            if tokens.total() == 0 {
                continue;
            }
            missed += actual - rt.cost(&tokens);
            upgraded_priced += 1;
        }
        let realised_usd = mix_ok.then_some(realised);
        let savings = Savings {
            baseline: baseline.to_string(),
            mix,
            tier_models,
            realised_usd,
            followed_spawns_priced: followed_priced,
            missed_usd: missed,
            upgraded_spawns_priced: upgraded_priced,
            hint_tokens,
            hint_overhead_usd: overhead,
            net_usd: realised_usd.map(|r| r - overhead),
        };
        let reach = Reach {
            prompts,
            hinted_prompts,
            share: ratio(hinted_prompts, prompts),
            long_prompts,
            hinted_long_prompts,
            share_of_long: ratio(hinted_long_prompts, long_prompts),
            routing_hints,
            skill_hints,
        };
        let calibrate = advise(&reach, &adherence, &savings);

        Report {
            scope,
            read: ReadStats {
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
            },
            prices: PriceNote {
                note: prices.file.note.clone(),
                source: prices.file.source.clone(),
                as_of: prices.file.as_of.clone(),
                caveats: prices.file.caveats.clone(),
            },
            totals: Totals {
                all: part(main.0 + sub.0, all_tokens, main.2 + sub.2, main.3 + sub.3),
                main: part(main.0, main.1, main.2, main.3),
                subagents: part(sub.0, sub.1, sub.2, sub.3),
                duplicate_copies: agg.duplicates,
                sessions: agg.sessions.len() as u64,
            },
            models,
            unknown_models,
            reach,
            adherence,
            subagents_by_tier,
            savings,
            calibrate,
        }
    }
}

/// What the figures suggest, and what to ask `/system1:calibrate` to look at.
fn advise(reach: &Reach, adherence: &Adherence, savings: &Savings) -> Calibrate {
    let mut findings = Vec::new();
    let mut focus = Vec::new();
    let pct = |x: f64| format!("{:.0}%", x * 100.0);
    if reach.prompts == 0 {
        return Calibrate {
            suggested: false,
            findings: vec!["no prompts in these transcripts".to_string()],
            instructions:
                "nothing to calibrate from yet: use Claude Code with System-1 for a while, then run the report again"
                    .to_string(),
        };
    }
    if reach.routing_hints == 0 {
        findings.push("no routing hint appeared in these transcripts".to_string());
        focus.push(
            "first check that routing is on and the engine answers (`system1 doctor`); then label the routing log to see \
             why every prompt fell below the confidence threshold"
                .to_string(),
        );
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
    if let Some(net) = savings.net_usd.filter(|n| *n < 0.0) {
        findings.push(format!("the hints cost ${:.2} more than they saved", -net));
    }
    let suggested = !focus.is_empty();
    let instructions = if suggested {
        focus.join("; ")
    } else {
        "nothing stands out; an occasional /system1:calibrate run on recent prompts keeps the fit current".to_string()
    };
    Calibrate { suggested, findings, instructions }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(total_output: u64, sidechain: bool) -> Rec {
        Rec::new(0, NO_AGENT, &Tokens { output: total_output, ..Tokens::default() }, sidechain, 0, 0)
    }

    #[test]
    fn packed_records_give_back_their_tokens() {
        let t = Tokens { input: 1, output: 2, cache_write_5m: 3, cache_write_1h: 4, cache_read: 5_000_000_000 };
        let r = Rec::new(0, NO_AGENT, &t, false, 7, 8);
        assert_eq!(r.tokens().input, 1);
        assert_eq!(r.tokens().cache_write_1h, 4);
        // Beyond 32 bits saturates rather than wrapping.
        assert_eq!(r.tokens().cache_read, u64::from(u32::MAX));
    }

    #[test]
    fn dedup_keeps_the_fullest_copy_then_the_main_thread_one() {
        assert!(rec(50, true).better_than(&rec(3, false)));
        assert!(!rec(3, false).better_than(&rec(50, true)));
        assert!(rec(50, false).better_than(&rec(50, true)));
        assert!(!rec(50, true).better_than(&rec(50, false)));
        assert!(!rec(50, false).better_than(&rec(50, false)));
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
            share: ratio(followed, decided),
            with_model_given: 0,
        }
    }

    fn savings(net: Option<f64>) -> Savings {
        Savings {
            baseline: "unhinted spawns".into(),
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
        let quiet = advise(&reach(10, 6, 6), &adherence(8, 1, 1), &savings(Some(1.0)));
        assert!(!quiet.suggested);
        assert!(quiet.findings.is_empty());
        let empty = advise(&reach(0, 0, 0), &adherence(0, 0, 0), &savings(None));
        assert!(!empty.suggested);
        assert!(empty.findings[0].contains("no prompts"));

        let never = advise(&reach(10, 0, 0), &adherence(0, 0, 0), &savings(None));
        assert!(never.suggested);
        assert!(never.instructions.contains("system1 doctor"));

        let low = advise(&reach(10, 2, 2), &adherence(1, 0, 0), &savings(Some(1.0)));
        assert!(low.findings[0].contains("20%"));
        assert!(low.instructions.contains("min_confidence"));

        let ignored = advise(&reach(10, 8, 8), &adherence(2, 6, 0), &savings(Some(-0.5)));
        assert!(ignored.findings.iter().any(|f| f.contains("followed 25%")));
        assert!(ignored.findings.iter().any(|f| f.contains("6 of 8 hinted spawns were upgraded")));
        assert!(ignored.findings.iter().any(|f| f.contains("$0.50 more than they saved")));
        assert!(ignored.instructions.contains("hints too low"));

        let high = advise(&reach(10, 8, 8), &adherence(5, 0, 3), &savings(Some(1.0)));
        assert!(high.instructions.contains("hints too high"));
    }
}
