//! The figures of [`Report`](super::Report), one function each, computed from the merged facts of
//! an [`Aggregator`]: one pass over the deduplicated requests ([`Usage`]), one over the spawns
//! ([`Spawns`]), then the savings against the usual tier mix ([`Baseline`]).
//!
//! The same transcripts give the same report to the last digit: the passes over the requests only
//! add integers (tokens, and each request's cost at the price in force on its day as exact
//! picodollars), which is exact in any order, and every sum of dollars after that runs in a fixed
//! order (models by name, spawns by tool use id), whatever order the reader threads finished in and
//! the hash maps hold them in.

use std::collections::{BTreeMap, HashMap};

use system1_transcripts::Tokens;

use super::{Adherence, Aggregator, ModelRow, NO_AGENT, Part, Reach, Rec, Savings, TierRow, ratio};
use crate::report::collect::SpawnRec;
use crate::report::prices::{EntryId, Pico, Prices, usd};
use crate::tier::Tier;

/// One count per tier, in `Tier::ALL` order.
pub(super) type PerTier<T> = [T; Tier::COUNT];

/// The name tier rows use for a model of no known tier.
pub(super) const UNKNOWN_TIER: &str = "unknown";

/// A model of the history (by its index in the aggregator): its tier and its price entry.
pub(super) struct Model {
    tier: Option<Tier>,
    /// The price entry used, when one covers the model.
    priced_as: Option<String>,
    entry: Option<EntryId>,
}

/// The history's models, and the order every sum over them runs in: by name, so that the same
/// transcripts give the same figures to the last digit however the reader threads finished.
pub(super) struct Models {
    list: Vec<Model>,
    by_name: Vec<usize>,
}

impl Models {
    pub(super) fn new(agg: &Aggregator, prices: &Prices) -> Models {
        let list = agg
            .models
            .iter()
            .map(|m| {
                let entry = prices.entry(m);
                Model { tier: Tier::of(m), priced_as: entry.map(|e| prices.name(e).to_string()), entry }
            })
            .collect();
        let mut by_name: Vec<usize> = (0..agg.models.len()).collect();
        by_name.sort_by(|a, b| agg.models[*a].cmp(&agg.models[*b]));
        Models { list, by_name }
    }

    /// Model indices in name order.
    fn in_order(&self) -> impl DoubleEndedIterator<Item = usize> + '_ {
        self.by_name.iter().copied()
    }

    /// The tier of the model with this index.
    pub(super) fn tier(&self, model: u32) -> Option<Tier> {
        self.list[model as usize].tier
    }

    /// Whether a price entry covers the model with this index.
    pub(super) fn priced(&self, model: u32) -> bool {
        self.list[model as usize].entry.is_some()
    }
}

/// The requests of one model: integer sums, exact in whatever order the requests come.
#[derive(Debug, Clone, Copy, Default)]
struct Count {
    requests: u64,
    tokens: Tokens,
    /// What the requests cost, each at its own price (zero for an unpriced model).
    cost: Pico,
    /// What the hint tokens these requests wrote to the prompt cache, and read back from it, cost.
    hint_cost: Pico,
}

/// What one request costs, and its hint tokens in the cache, at the price in force on its day.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Priced {
    pub(super) cost: Pico,
    hint_cost: Pico,
}

impl Priced {
    pub(super) fn of(r: &Rec, tokens: &Tokens, models: &Models, prices: &Prices) -> Priced {
        match models.list[r.model as usize].entry {
            None => Priced::default(),
            Some(e) => {
                let price = prices.price(e, r.day(), tokens);
                Priced {
                    cost: price.cost(tokens),
                    hint_cost: price.cache_cost(u64::from(r.hint_write), u64::from(r.hint_read)),
                }
            }
        }
    }
}

/// Requests by model index, in the order models first came (a history has a few models, and an
/// agent one or two). Costs are computed from it at the end, a model at a time.
#[derive(Debug, Clone, Default)]
struct ByModel(Vec<(u32, Count)>);

impl ByModel {
    fn add(&mut self, r: &Rec, tokens: &Tokens, priced: Priced) {
        let at = match self.0.iter().position(|(m, _)| *m == r.model) {
            Some(at) => at,
            None => {
                self.0.push((r.model, Count::default()));
                self.0.len() - 1
            }
        };
        let c = &mut self.0[at].1;
        c.requests += 1;
        c.tokens.add(tokens);
        c.cost += priced.cost;
        c.hint_cost += priced.hint_cost;
    }

    fn get(&self, model: usize) -> Count {
        self.0.iter().find(|(m, _)| *m as usize == model).map(|(_, c)| *c).unwrap_or_default()
    }

    /// The requests of the models `keep` accepts, priced a model at a time in name order.
    fn tally(&self, models: &Models, keep: impl Fn(&Model) -> bool) -> Tally {
        let mut t = Tally::default();
        for m in models.in_order() {
            let (model, c) = (&models.list[m], self.get(m));
            if c.requests == 0 || !keep(model) {
                continue;
            }
            t.requests += c.requests;
            t.tokens.add(&c.tokens);
            match model.entry {
                Some(_) => t.cost += c.cost,
                None => t.unpriced += c.requests,
            }
        }
        t
    }
}

/// Requests, their tokens, and the cost of the priced ones among them.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Tally {
    requests: u64,
    tokens: Tokens,
    /// Cost of the priced requests only.
    cost: Pico,
    unpriced: u64,
}

impl Tally {
    pub(super) fn part(&self) -> Part {
        Part {
            requests: self.requests,
            tokens: self.tokens.into(),
            cost_usd: usd(self.cost),
            unpriced_requests: self.unpriced,
        }
    }
}

/// What an agent's requests came to.
pub(super) struct Spent {
    pub(super) tokens: Tokens,
    pub(super) cost: Pico,
}

/// What one pass over the deduplicated requests gathers (requests without tokens are skipped).
pub(super) struct Usage {
    all: ByModel,
    main: ByModel,
    subagents: ByModel,
    /// Each subagent's own requests.
    by_agent: HashMap<u32, ByModel>,
}

impl Usage {
    pub(super) fn tally(agg: &Aggregator, models: &Models, prices: &Prices) -> Usage {
        let mut u = Usage {
            all: ByModel::default(),
            main: ByModel::default(),
            subagents: ByModel::default(),
            by_agent: HashMap::new(),
        };
        for r in agg.records() {
            let tokens = r.tokens();
            if tokens.total() == 0 {
                continue;
            }
            let priced = Priced::of(r, &tokens, models, prices);
            u.all.add(r, &tokens, priced);
            if r.agent != NO_AGENT || r.sidechain {
                u.subagents.add(r, &tokens, priced);
                if r.agent != NO_AGENT {
                    u.by_agent.entry(r.agent).or_default().add(r, &tokens, priced);
                }
            } else {
                u.main.add(r, &tokens, priced);
            }
        }
        u
    }

    pub(super) fn main(&self, models: &Models) -> Tally {
        self.main.tally(models, |_| true)
    }

    pub(super) fn subagents(&self, models: &Models) -> Tally {
        self.subagents.tally(models, |_| true)
    }

    pub(super) fn all(&self, models: &Models) -> Tally {
        self.all.tally(models, |_| true)
    }

    /// Main-thread requests by tier: the usual mix when no spawn went without a hint.
    fn main_by_tier(&self, models: &Models) -> PerTier<u64> {
        let mut counts = [0; Tier::COUNT];
        for m in models.in_order() {
            if let Some(t) = models.list[m].tier {
                counts[t.index()] += self.main.get(m).requests;
            }
        }
        counts
    }

    /// The hint tokens of main-thread requests at their cache-write (first request) and
    /// cache-read (every later one) prices.
    fn hint_overhead(&self, models: &Models) -> f64 {
        usd(models.in_order().map(|m| self.main.get(m).hint_cost).sum())
    }

    /// An agent's tokens (all models summed) and actual cost; `None` when one of its models is
    /// unpriced. No agent (a spawn whose run was not found) spent nothing.
    pub(super) fn spent(&self, agent: Option<u32>, models: &Models) -> Option<Spent> {
        let Some(requests) = agent.and_then(|a| self.by_agent.get(&a)) else {
            return Some(Spent { tokens: Tokens::default(), cost: 0 });
        };
        let t = requests.tally(models, |_| true);
        (t.unpriced == 0).then_some(Spent { tokens: t.tokens, cost: t.cost })
    }
}

/// Every model that has tokens, most tokens first (then by name).
pub(super) fn model_rows(agg: &Aggregator, models: &Models, usage: &Usage) -> Vec<ModelRow> {
    let mut rows: Vec<ModelRow> = models
        .in_order()
        .map(|m| (m, &models.list[m], usage.all.get(m)))
        .filter(|(_, _, c)| c.tokens.total() > 0)
        .map(|(m, model, c)| ModelRow {
            model: agg.models[m].clone(),
            tier: model.tier,
            priced_as: model.priced_as.clone(),
            requests: c.requests,
            tokens: c.tokens.into(),
            cost_usd: model.entry.map(|_| usd(c.cost)),
        })
        .collect();
    rows.sort_by(|a, b| b.tokens.total.cmp(&a.tokens.total).then_with(|| a.model.cmp(&b.model)));
    rows
}

/// Reach: prompts whose turn got a routing hint, over all prompts (and over the long ones).
pub(super) fn reach(agg: &Aggregator) -> Reach {
    let prompts = agg.prompts.len() as u64;
    let hinted_prompts = agg.prompts.values().filter(|p| p.hinted).count() as u64;
    let long_prompts = agg.prompts.values().filter(|p| p.long).count() as u64;
    let hinted_long_prompts = agg.prompts.values().filter(|p| p.hinted && p.long).count() as u64;
    let routing_hints = agg.hints.values().filter(|h| h.routing).count() as u64;
    Reach {
        prompts,
        hinted_prompts,
        share: ratio(hinted_prompts, prompts),
        long_prompts,
        hinted_long_prompts,
        share_of_long: ratio(hinted_long_prompts, long_prompts),
        routing_hints,
        skill_hints: agg.hints.len() as u64 - routing_hints,
    }
}

/// What a spawn did with its turn's hint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Fate {
    /// No routing hint in its turn.
    Unhinted,
    /// Ran on the hinted tier.
    Followed,
    /// Ran above the hinted tier (the hint's).
    Upgraded(Tier),
    Downgraded,
    /// The hint or the tier that ran could not be told.
    Unknown,
    /// Nothing says it ran: no agent result with its model or agent id, no subagent transcript
    /// (refused, denied, or cut off). It followed nothing.
    NotRun,
}

/// One spawn, with the subagent run it started, the tier it ran on, and its fate.
pub(super) struct Judged<'a> {
    pub(super) spawn: &'a SpawnRec,
    pub(super) agent: Option<u32>,
    pub(super) tier: Option<Tier>,
    pub(super) fate: Fate,
}

/// What one pass over the spawns gathers: adherence, and which spawns the savings price.
pub(super) struct Spawns<'a> {
    pub(super) adherence: Adherence,
    /// Spawns by the tier they ran on (`None` when none could be told).
    by_tier: BTreeMap<Option<Tier>, u64>,
    /// Spawns without a hint, by tier: the usual mix when there are any.
    unhinted_by_tier: PerTier<u64>,
    /// Every spawn, in tool use id order: the order every sum over them runs in.
    pub(super) all: Vec<Judged<'a>>,
}

impl<'a> Spawns<'a> {
    pub(super) fn sort(agg: &'a Aggregator) -> Spawns<'a> {
        let by_tool_use = agents_by_tool_use(agg);
        let mut out = Spawns {
            adherence: Adherence {
                spawns: agg.spawns.len() as u64,
                hinted_spawns: 0,
                followed: 0,
                upgraded: 0,
                downgraded: 0,
                unknown: 0,
                not_run: 0,
                share: None,
                with_model_given: 0,
            },
            by_tier: BTreeMap::new(),
            unhinted_by_tier: [0; Tier::COUNT],
            all: Vec::with_capacity(agg.spawns.len()),
        };
        // In tool use id order, so that the savings add up in the same order on every run.
        let mut all: Vec<&SpawnRec> = agg.spawns.values().collect();
        all.sort_by(|a, b| a.tool_use_id.cmp(&b.tool_use_id));
        let a = &mut out.adherence;
        for s in all {
            let agent = spawn_agent(agg, &by_tool_use, s);
            let tier = spawn_tier(agg, s, agent);
            *out.by_tier.entry(tier).or_default() += 1;
            let ran = s.resolved.is_some() || s.agent_id.is_some() || agent.is_some();
            let fate = match (s.hint, tier) {
                (None, _) => Fate::Unhinted,
                (Some(_), _) if !ran => Fate::NotRun,
                (Some(Some(h)), Some(t)) if t == h => Fate::Followed,
                (Some(Some(h)), Some(t)) if t > h => Fate::Upgraded(h),
                (Some(Some(_)), Some(_)) => Fate::Downgraded,
                (Some(_), _) => Fate::Unknown,
            };
            match fate {
                Fate::Unhinted => {
                    // A spawn that never ran is no part of the usual mix.
                    if let Some(t) = tier.filter(|_| ran) {
                        out.unhinted_by_tier[t.index()] += 1;
                    }
                }
                Fate::Followed => a.followed += 1,
                Fate::Upgraded(_) => a.upgraded += 1,
                Fate::Downgraded => a.downgraded += 1,
                Fate::Unknown => a.unknown += 1,
                Fate::NotRun => a.not_run += 1,
            }
            if fate != Fate::Unhinted {
                a.hinted_spawns += 1;
                if s.requested.as_deref().is_some_and(|m| m != "inherit") {
                    a.with_model_given += 1;
                }
            }
            out.all.push(Judged { spawn: s, agent, tier, fate });
        }
        a.share = ratio(a.followed, a.followed + a.upgraded + a.downgraded);
        out
    }
}

/// Each subagent run by the tool use id that started it (from its `.meta.json`).
pub(super) fn agents_by_tool_use(agg: &Aggregator) -> HashMap<&str, u32> {
    agg.agents.iter().enumerate().filter_map(|(i, a)| a.tool_use_id.as_deref().map(|t| (t, i as u32))).collect()
}

/// The subagent run a spawn started: by the agent id its result named, else by its tool use id.
pub(super) fn spawn_agent(agg: &Aggregator, by_tool_use: &HashMap<&str, u32>, s: &SpawnRec) -> Option<u32> {
    s.agent_id
        .as_deref()
        .and_then(|id| agg.agent_index.get(id).copied())
        .or_else(|| by_tool_use.get(s.tool_use_id.as_str()).copied())
}

/// The tier a spawn ran on: the resolved model, else the subagent's own first model, else the
/// requested `model`, else the parent's.
pub(super) fn spawn_tier(agg: &Aggregator, s: &SpawnRec, agent: Option<u32>) -> Option<Tier> {
    s.resolved
        .as_deref()
        .and_then(Tier::of)
        .or_else(|| agent.and_then(|a| agg.agents[a as usize].first_model.as_deref()).and_then(Tier::of))
        .or_else(|| s.requested.as_deref().and_then(Tier::of))
        .or_else(|| s.parent_model.as_deref().and_then(Tier::of))
}

/// Subagent cost by tier, cheapest first, then what no model id names; a tier not always listed
/// (fable), and the unknown row, only when something ran there.
pub(super) fn tier_rows(models: &Models, usage: &Usage, spawns: &Spawns<'_>) -> Vec<TierRow> {
    Tier::ALL
        .map(Some)
        .into_iter()
        .chain([None])
        .filter_map(|tier| {
            let tally = usage.subagents.tally(models, |m| m.tier == tier);
            let spawns = spawns.by_tier.get(&tier).copied().unwrap_or(0);
            if !tier.is_some_and(Tier::always_listed) && spawns == 0 && tally.requests == 0 {
                return None;
            }
            Some(TierRow {
                tier: tier.map_or(UNKNOWN_TIER, Tier::name).to_string(),
                spawns,
                requests: tally.requests,
                tokens: tally.tokens.into(),
                cost_usd: usd(tally.cost),
            })
        })
        .collect()
}

/// What each subagent run's requests would have cost on each tier, by its index in the aggregator.
pub(super) type Repriced = HashMap<u32, PerTier<Pico>>;

/// The usual tier mix a followed hint is measured against, and the price entry each tier is
/// repriced at.
pub(super) struct Baseline {
    /// `unhinted spawns`, `main thread`, or `none`.
    name: &'static str,
    counts: PerTier<u64>,
    total: u64,
    pub(super) entries: PerTier<Option<EntryId>>,
    /// The model each tier is priced at, by tier name.
    models: BTreeMap<String, String>,
}

impl Baseline {
    /// The tiers of spawns without a hint, else of main-thread requests. Each tier is repriced at
    /// its most used priced model (ties to the first name), else at the price file's default.
    pub(super) fn new(
        agg: &Aggregator,
        prices: &Prices,
        models: &Models,
        usage: &Usage,
        spawns: &Spawns<'_>,
    ) -> Baseline {
        let main_by_tier = usage.main_by_tier(models);
        let (name, counts) = if spawns.unhinted_by_tier.iter().sum::<u64>() > 0 {
            ("unhinted spawns", spawns.unhinted_by_tier)
        } else if main_by_tier.iter().sum::<u64>() > 0 {
            ("main thread", main_by_tier)
        } else {
            ("none", [0; Tier::COUNT])
        };
        let mut b = Baseline {
            name,
            counts,
            total: counts.iter().sum(),
            entries: [None; Tier::COUNT],
            models: BTreeMap::new(),
        };
        for t in Tier::ALL {
            // Models in name order, and `max_by_key` keeps the last maximum: reversed, the first name.
            let most_used = models
                .in_order()
                .rev()
                .map(|m| (m, &models.list[m], usage.all.get(m).requests))
                .filter(|(_, model, requests)| model.tier == Some(t) && model.entry.is_some() && *requests > 0)
                .max_by_key(|(_, _, requests)| *requests)
                .map(|(m, _, _)| agg.models[m].clone());
            let model = most_used.or_else(|| prices.tier_default(t).map(str::to_string));
            if let Some(model) = model
                && let Some(e) = prices.entry(&model)
            {
                b.entries[t.index()] = Some(e);
                b.models.insert(t.name().to_string(), model);
            }
        }
        b
    }

    /// The model tier `t` is repriced at, when one has a price.
    pub(super) fn model(&self, t: Tier) -> Option<&str> {
        self.models.get(t.name()).map(String::as_str)
    }

    /// What the mix is drawn from: `unhinted spawns`, `main thread`, or `none`.
    pub(super) fn name(&self) -> &'static str {
        self.name
    }

    /// How many spawns (or main-thread requests) it is drawn from.
    pub(super) fn samples(&self) -> u64 {
        self.total
    }

    fn share(&self, t: Tier) -> f64 {
        self.counts[t.index()] as f64 / self.total as f64
    }

    pub(super) fn mix(&self) -> BTreeMap<String, f64> {
        Tier::ALL
            .iter()
            .filter(|t| self.total > 0 && self.counts[t.index()] > 0)
            .map(|t| (t.name().to_string(), self.share(*t)))
            .collect()
    }

    /// Whether every tier of the mix has a price, so that what the usual mix costs is known.
    pub(super) fn priced(&self) -> bool {
        self.total > 0 && Tier::ALL.iter().all(|t| self.counts[t.index()] == 0 || self.entries[t.index()].is_some())
    }

    /// What an agent's requests would have cost on each tier: each request at that tier's price in
    /// force on its day, in its band. One more pass over the requests, subagents' only.
    pub(super) fn reprice(&self, agg: &Aggregator, prices: &Prices) -> Repriced {
        let mut out = Repriced::new();
        for r in agg.records().filter(|r| r.agent != NO_AGENT) {
            let tokens = r.tokens();
            if tokens.total() == 0 {
                continue;
            }
            let costs = out.entry(r.agent).or_default();
            for t in Tier::ALL {
                if let Some(e) = self.entries[t.index()] {
                    costs[t.index()] += prices.price(e, r.day(), &tokens).cost(&tokens);
                }
            }
        }
        out
    }

    /// What an agent's requests would have cost at the usual mix.
    pub(super) fn usual_cost(&self, repriced: &PerTier<Pico>) -> f64 {
        Tier::ALL.iter().filter(|t| self.counts[t.index()] > 0).map(|t| self.share(*t) * usd(repriced[t.index()])).sum()
    }
}

/// What each spawn that followed its hint saved against the usual mix (its index in
/// `spawns.all`, and the dollars), in that order; none when the usual mix has no price. A spawn
/// whose run is unpriced, or spent nothing, is left out.
pub(super) fn realised_each(
    baseline: &Baseline,
    repriced: &Repriced,
    models: &Models,
    usage: &Usage,
    spawns: &Spawns<'_>,
) -> Vec<(usize, f64)> {
    let none: PerTier<Pico> = [0; Tier::COUNT];
    if !baseline.priced() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, j) in spawns.all.iter().enumerate().filter(|(_, j)| j.fate == Fate::Followed) {
        let Some(spent) = usage.spent(j.agent, models) else { continue };
        if spent.tokens.total() == 0 {
            continue;
        }
        let at_mix = baseline.usual_cost(j.agent.and_then(|a| repriced.get(&a)).unwrap_or(&none));
        out.push((i, at_mix - usd(spent.cost)));
    }
    out
}

/// What each spawn upgraded past its hint cost over the hinted tier (its index in `spawns.all`, and
/// the dollars), in that order. A spawn whose run is unpriced, spent nothing, or whose hinted tier
/// has no price is left out.
pub(super) fn missed_each(
    baseline: &Baseline,
    repriced: &Repriced,
    models: &Models,
    usage: &Usage,
    spawns: &Spawns<'_>,
) -> Vec<(usize, f64)> {
    let mut out = Vec::new();
    for (i, j) in spawns.all.iter().enumerate() {
        let Fate::Upgraded(hint) = j.fate else { continue };
        let (Some(spent), Some(_)) = (usage.spent(j.agent, models), baseline.entries[hint.index()]) else { continue };
        if spent.tokens.total() == 0 {
            continue;
        }
        let at_hint = j.agent.and_then(|a| repriced.get(&a)).map_or(0, |c| c[hint.index()]);
        out.push((i, usd(spent.cost) - usd(at_hint)));
    }
    out
}

/// Realised savings of followed hints, missed savings of upgrades past a hint, the hints' own
/// overhead, and the net.
pub(super) fn savings(
    agg: &Aggregator,
    baseline: &Baseline,
    repriced: &Repriced,
    models: &Models,
    usage: &Usage,
    spawns: &Spawns<'_>,
) -> Savings {
    let hint_overhead = usage.hint_overhead(models);
    let priced = baseline.priced();
    let each = realised_each(baseline, repriced, models, usage, spawns);
    let mut realised = 0.0;
    for (_, saved) in &each {
        realised += saved;
    }
    let mut missed = 0.0;
    let lost = missed_each(baseline, repriced, models, usage, spawns);
    for (_, l) in &lost {
        missed += l;
    }
    let upgraded_priced = lost.len() as u64;
    let realised_usd = priced.then_some(realised);
    Savings {
        baseline: baseline.name.to_string(),
        baseline_samples: baseline.total,
        mix: baseline.mix(),
        tier_models: baseline.models.clone(),
        realised_usd,
        followed_spawns_priced: each.len() as u64,
        missed_usd: missed,
        upgraded_spawns_priced: upgraded_priced,
        hint_tokens: agg.hints.values().map(|h| h.tokens).sum(),
        hint_overhead_usd: hint_overhead,
        net_usd: realised_usd.map(|r| r - hint_overhead),
    }
}
