//! `system1 report --what-if fill|raise|set`: what `[routing] enforce` would have done to the
//! subagent spawns in scope, had it been on. Each spawn's brief (its Agent call's `prompt`, from the
//! transcript) goes through the routing code itself: `enforce::before_engine` (fork, short brief, a
//! `model` that names no tier, fill and a named model), the four features from the configured
//! engine (`features::ask`, through the gateway, calibrated), the user's rule (`apply_rule`), the
//! `min_confidence` bar (`settled`) and `enforce::verdict`.
//!
//! Each spawn that would have been set to another tier than it ran on is repriced there, and only
//! what the rewrite changes changes ([`Repricer`]): the call would have named the tier's alias, so
//! each of its subagent's requests is priced at the model that alias names on the session's
//! provider (Claude Code's model catalog, in the price file), at the price in force on its day,
//! with the same tokens scaled by the two models' cost of the effort the request ran at (the
//! catalog's `effort_cost_index`, relative to `high`). The effort is the request's own (its
//! transcript line, Claude Code 2.1.332 and later), else the one its Agent call named (the
//! subagent's `.meta.json`), else assumed `high`, where the index is 1 on every model, and said so.

//! It is an estimate: a cheaper model might have needed more turns, or failed where the dearer one
//! did not. So the labelled outcomes of spawns that already ran on each tier it would set are shown
//! beside it, where the routing log has some.
//!
//! The engine is asked once per brief: its answers are kept in the install dir
//! ([`paths::what_if_cache`]), keyed by the brief and the engine's config, so a rerun asks nothing
//! it asked before. The rule and `min_confidence` are applied afresh each run.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::collect::hash;
use super::figures::{Baseline, Models, Spawns, Usage};
use super::prices::{Pico, Prices, usd};
use super::spawns::SpawnLog;
use super::{Aggregator, NO_AGENT, Rec};
use crate::claude_code::{self, Effort, Provider};
use crate::config::{Enforce, Loaded};
use crate::feature::Feature;
use crate::gateway::{Budget, Gateway, Purpose, Refusal, new_request_id};
use crate::routing::enforce::{self, Left, Model};
use crate::routing::entry::Outcome;
use crate::routing::features::{Asked, FeatureAnswer};
use crate::routing::{agent, apply_rule, features};
use crate::text::Meter;
use crate::tier::Tier;
use crate::{fsutil, paths};

/// What the section says, first, wherever it is shown.
pub const ESTIMATE: &str = "an estimate: a cheaper model may need more turns, or fail where the one that ran did not";

/// How a spawn is repriced, said beside the estimate.
pub const REPRICED: &str = "each of its requests at the API list price on its day of the model the tier's alias names \
     on its session's provider, with the same tokens at the same effort (scaled by what that effort costs on each model)";

/// After this many briefs in a row with no answer, and none answered before, the engine is not
/// asked again in this run.
const GIVE_UP_AFTER: u32 = 3;

/// Why a spawn would have been left as Claude made it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum WhyLeft {
    /// A reason the hook itself logs (fork, short brief, at the rule's tier, ...).
    Kept(String),
    /// The engine gave no answer (down, timed out, or given up on in this run).
    NoEngineAnswer,
    /// The transcript holds no brief for it.
    NoBrief,
}

impl WhyLeft {
    fn of(left: &Left) -> WhyLeft {
        match left.kept() {
            Some(k) => WhyLeft::Kept(k.as_str().to_string()),
            // The engine failed or gave no tier (record-only and a failed rewrite cannot come here).
            None => WhyLeft::NoEngineAnswer,
        }
    }

    fn name(&self) -> &str {
        match self {
            WhyLeft::Kept(k) => k,
            WhyLeft::NoEngineAnswer => "no_engine_answer",
            WhyLeft::NoBrief => "no_brief",
        }
    }
}

/// The spawns that would have gone from one tier to another.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Move {
    /// The tier it ran on (`unknown` when nothing says).
    pub from: String,
    pub to: String,
    pub spawns: u64,
    /// What the priced ones cost, and would have.
    pub cost_usd: f64,
    pub projected_cost_usd: f64,
    pub not_priced: u64,
}

/// Spawns that ran on a tier, and their labelled outcomes.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TierOutcomes {
    pub tier: String,
    pub labelled: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub success: Option<f64>,
}

/// How the engine was used.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct EngineUse {
    /// Briefs asked now, and answered from the engine's earlier answers (this run's or an earlier
    /// run's: a brief is asked about once).
    pub asked: u64,
    pub cached: u64,
    pub failed: u64,
    /// Why the first failure failed.
    pub failure: Option<String>,
    /// Whether asking stopped early: the engine answered none of the first few.
    pub gave_up: bool,
}

/// What the rewrites would have done to the calls' `model`.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Rewrites {
    pub filled: u64,
    pub raised: u64,
    pub lowered: u64,
}

/// The efforts the repriced requests ran at, and where each was read.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct EffortUse {
    /// Requests whose transcript line records the effort (Claude Code 2.1.332 and later), by level.
    pub recorded: BTreeMap<Effort, u64>,
    /// Requests whose line does not, but whose Agent call named a level (the subagent's
    /// `.meta.json`), by level.
    pub agent_call: BTreeMap<Effort, u64>,
    /// Requests nothing says the effort of (older Claude Code): taken to be at `high`, where the
    /// catalog's index is 1 on every model, so they are repriced with their tokens as they are.
    pub assumed_high: u64,
    /// Requests at another effort than `high` where the catalog gives one of the two models no
    /// index: repriced with their tokens as they are, as at `high`.
    pub not_indexed: u64,
    /// Those models.
    pub not_indexed_models: Vec<String>,
}

/// The sessions of the repriced spawns on one provider, and why they are taken to be on it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProviderUse {
    /// The catalog's name: `first_party`, `bedrock`, `vertex`, ...
    pub provider: Provider,
    pub sessions: u64,
    /// `transcript` (a model id only that provider uses), `settings` (a `CLAUDE_CODE_USE_*`
    /// variable in a Claude Code settings file's `env`) or `default` (nothing says otherwise).
    pub from: &'static str,
    /// The model id or the variable and file that say so (the first seen).
    pub evidence: Option<String>,
    /// The model each tier the spawns were set to is priced at there, by tier.
    pub models: BTreeMap<String, String>,
}

/// Where the prices and the catalog's figures come from, with their dates.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PricesUsed {
    /// The price file's `as_of`.
    pub as_of: String,
    /// Claude Code's model catalog, when the price file carries it (the built-in one does).
    pub catalog: Option<String>,
    pub catalog_as_of: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WhatIf {
    pub mode: String,
    pub estimate: &'static str,
    /// Spawns in scope.
    pub spawns: u64,
    /// Those it would have set to another tier than the one they ran on, lower or higher.
    pub changed: u64,
    pub lowered: u64,
    pub raised: u64,
    /// Set to the tier they ran on anyway (a filled call that got its parent's tier).
    pub unchanged: u64,
    /// The changed ones by what the rewrite would have done to the call's `model`, as the spawn
    /// section counts rewrites: filled (it named none, so it ran on its parent's or its agent
    /// file's tier; every mode sets one, up or down), raised (it named a tier below the rule's),
    /// lowered (above it: only `set`).
    pub rewrites: Rewrites,
    /// Left as Claude made them, by why (the routing log's words: `fork`, `short_brief`,
    /// `at_tier`, `above_rule`, `low_confidence`, ..., and `no_engine_answer`, `no_brief`).
    pub left_alone: BTreeMap<String, u64>,
    /// What the priced spawns cost, and would have; the difference.
    pub cost_usd: f64,
    pub projected_cost_usd: f64,
    pub savings_usd: f64,
    /// Spawns whose subagent is not in the transcripts, or ran on a model with no price.
    pub not_priced: u64,
    pub moves: Vec<Move>,
    /// For each tier it would set spawns to: the labelled outcomes of spawns that already ran there.
    pub outcomes: Vec<TierOutcomes>,
    pub engine: EngineUse,
    /// The effort each repriced request is taken to have run at.
    pub effort: EffortUse,
    /// The providers the repriced spawns' sessions ran on.
    pub providers: Vec<ProviderUse>,
    pub prices: PricesUsed,
}

/// Why a session is taken to have run on its provider.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ProviderWhy {
    /// A model id only that provider uses.
    Transcript(String),
    /// A variable in a settings file's `env`: the variable and the file.
    Settings(&'static str, String),
    Default,
}

impl ProviderWhy {
    fn from(&self) -> &'static str {
        match self {
            ProviderWhy::Transcript(_) => "transcript",
            ProviderWhy::Settings(..) => "settings",
            ProviderWhy::Default => "default",
        }
    }

    fn evidence(&self) -> Option<String> {
        match self {
            ProviderWhy::Transcript(id) => Some(id.clone()),
            ProviderWhy::Settings(var, file) => Some(format!("{var} in {file}")),
            ProviderWhy::Default => None,
        }
    }
}

/// The provider of each session (by origin): a model id in its transcripts that only one provider
/// uses, else the last of Claude Code's settings files for its directory whose `env` selects one
/// (the user's, then the project's, as Claude Code layers them), else first-party.
fn session_providers(agg: &Aggregator, claude_dir: &std::path::Path) -> Vec<(Provider, ProviderWhy)> {
    let mut by_cwd: HashMap<Option<&str>, Option<(Provider, ProviderWhy)>> = HashMap::new();
    agg.origins
        .iter()
        .map(|o| {
            if let Some((p, id)) = &o.provider {
                return (*p, ProviderWhy::Transcript(id.clone()));
            }
            let settings = by_cwd.entry(o.cwd.as_deref()).or_insert_with(|| {
                let projects: Vec<std::path::PathBuf> = o.cwd.iter().map(std::path::PathBuf::from).collect();
                claude_code::settings_files(claude_dir, &projects).into_iter().rev().find_map(|file| {
                    claude_code::provider_in_settings(&file)
                        .map(|(p, var)| (p, ProviderWhy::Settings(var, file.display().to_string())))
                })
            });
            settings.clone().unwrap_or((Provider::FirstParty, ProviderWhy::Default))
        })
        .collect()
}

/// Prices a spawn's requests at another tier, changing only what the rewrite would have changed:
/// the model (the tier's alias on the session's provider), at the same effort, on the same day.
struct Repricer<'a> {
    agg: &'a Aggregator,
    prices: &'a Prices,
    baseline: &'a Baseline,
    providers: Vec<(Provider, ProviderWhy)>,
}

impl<'a> Repricer<'a> {
    /// The model tier `to` would have run on in session `origin`. On Anthropic's API, the model the
    /// tier ran on most in the history (what its alias named in the Claude Code versions that wrote
    /// it), else the catalog's; on another provider, the model the catalog's alias names there.
    fn target(&self, to: Tier, origin: u32) -> Option<&'a str> {
        let provider = self.providers.get(origin as usize).map_or(Provider::FirstParty, |p| p.0);
        let alias = self.prices.catalog.as_ref().and_then(|c| c.alias(to, provider));
        match provider {
            Provider::FirstParty => self.baseline.model(to).or(alias),
            _ => alias.or_else(|| self.baseline.model(to)),
        }
    }

    /// What request `r` would have cost on tier `to`; `None` when that model has no price.
    fn request(&self, r: &Rec, to: Tier, effort: &mut EffortUse) -> Option<Pico> {
        let target = self.target(to, r.origin)?;
        let entry = self.prices.entry(target)?;
        let tokens = r.tokens();
        let at_high = self.prices.price(entry, r.day(), &tokens).cost(&tokens);
        let agent_call = (r.agent != NO_AGENT).then(|| self.agg.agents[r.agent as usize].effort).flatten();
        let level = match (r.effort, agent_call) {
            (Some(e), _) => {
                *effort.recorded.entry(e).or_default() += 1;
                e
            }
            (None, Some(e)) => {
                *effort.agent_call.entry(e).or_default() += 1;
                e
            }
            (None, None) => {
                effort.assumed_high += 1;
                Effort::High
            }
        };
        if level == Effort::High {
            return Some(at_high);
        }
        let ran_on = &self.agg.models[r.model as usize];
        let index = |model: &str| self.prices.catalog.as_ref().and_then(|c| c.effort_index(model, level));
        match (index(ran_on), index(target)) {
            // The same tokens at `high` on either model cost what they cost; at `level` each model
            // spends its own share of that.
            (Some(from), Some(to)) => Some((at_high as f64 * to / from).round() as Pico),
            (from, _) => {
                effort.not_indexed += 1;
                let missing = if from.is_none() { ran_on.as_str() } else { target };
                if !effort.not_indexed_models.iter().any(|m| m == missing) {
                    effort.not_indexed_models.push(missing.to_string());
                }
                Some(at_high)
            }
        }
    }

    /// What each agent of `targets` would have cost on its tier; `None` for one with a request
    /// that would have no price.
    fn agents(&self, targets: &HashMap<u32, Tier>, effort: &mut EffortUse) -> HashMap<u32, Option<Pico>> {
        let mut out: HashMap<u32, Option<Pico>> = targets.keys().map(|a| (*a, Some(0))).collect();
        // In a fixed order, so that the effort tallies (not the sums, which are integers) come out
        // the same on every run.
        let mut records: Vec<&Rec> =
            self.agg.records().filter(|r| targets.contains_key(&r.agent) && r.total() > 0).collect();
        records.sort_by_key(|r| (r.agent, r.minute, r.counts));
        for r in records {
            let cost = self.request(r, targets[&r.agent], effort);
            let sum = out.entry(r.agent).or_insert(Some(0));
            *sum = sum.zip(cost).map(|(a, b)| a + b);
        }
        effort.not_indexed_models.sort();
        out
    }
}

/// Asks the engine the four features of a brief.
pub trait Asker {
    fn features(&mut self, brief: &str) -> Asked;
    /// How the engine was used so far.
    fn used(&self) -> EngineUse;
}

/// One engine answer as kept between runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Kept4 {
    /// Each feature's name, answer (`null`: abstained), calibrated confidence, and whether it was
    /// calibrated.
    answers: Vec<(String, Option<bool>, f64, bool)>,
    provider: Option<String>,
    model: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    format: String,
    version: u64,
    /// By the brief and engine's key (hex).
    answers: HashMap<String, Kept4>,
}

const CACHE_FORMAT: &str = "system1-what-if-answers";
const CACHE_VERSION: u64 = 1;
/// The cache holds a few hundred bytes per brief.
const MAX_CACHE_BYTES: u64 = 64 << 20;

/// The configured engine, through the gateway, with the answers of earlier runs kept.
pub struct EngineAsker {
    gateway: Gateway,
    budget: Duration,
    /// What the answers depend on besides the brief: the engine's config and the calibration.
    engine_key: String,
    cache: CacheFile,
    dirty: bool,
    used: EngineUse,
    answered: u64,
    failed_in_a_row: u32,
    /// Why the last brief asked got no answer: what every brief not asked after giving up gets.
    last_refusal: Option<Refusal>,
    meter: Meter,
    total: u64,
    done: u64,
}

impl EngineAsker {
    /// For `total` briefs; `None` when the config does not make a gateway (the reason).
    pub fn new(loaded: &Loaded, total: u64) -> Result<EngineAsker, String> {
        let gateway = Gateway::new(loaded.clone());
        if !gateway.is_ok() {
            return Err(gateway.config_errors.join("; "));
        }
        let calibration = std::fs::metadata(paths::fitted_calibration())
            .ok()
            .map(|m| (m.len(), m.modified().ok()))
            .map_or_else(String::new, |m| format!("{m:?}"));
        let providers: Vec<String> =
            loaded.chain().iter().map(|p| format!("{p}={:?}", loaded.config.providers.get(p))).collect();
        let engine_key =
            format!("{}|{:?}|{}|{calibration}", crate::gateway::VERSION, loaded.config.gateway, providers.join(";"));
        let cache = fsutil::read_small_file(&paths::what_if_cache(), MAX_CACHE_BYTES)
            .ok()
            .and_then(|t| serde_json::from_str::<CacheFile>(&t).ok())
            .filter(|c| c.format == CACHE_FORMAT && c.version == CACHE_VERSION)
            .unwrap_or_default();
        Ok(EngineAsker {
            gateway,
            budget: Duration::from_millis(loaded.config.routing.budget_ms),
            engine_key,
            cache,
            dirty: false,
            used: EngineUse::default(),
            answered: 0,
            failed_in_a_row: 0,
            last_refusal: None,
            meter: Meter::after(Duration::from_millis(500), Duration::from_millis(200)),
            total,
            done: 0,
        })
    }

    fn key(&self, brief: &str) -> String {
        format!("{:032x}", hash(&[&self.engine_key, brief]))
    }

    /// Keeps the answers for the next run (best effort).
    pub fn save(&mut self) {
        self.meter.clear();
        if !self.dirty {
            return;
        }
        self.cache.format = CACHE_FORMAT.into();
        self.cache.version = CACHE_VERSION;
        if let Ok(bytes) = serde_json::to_vec(&self.cache) {
            let path = paths::what_if_cache();
            let _ = paths::ensure_parent(&path)
                .and_then(|()| fsutil::private_dir(&paths::install_dir()))
                .and_then(|()| fsutil::write_private(&path, &bytes));
        }
    }

    fn progress(&mut self) {
        self.done += 1;
        let (done, total, cached) = (self.done, self.total, self.used.cached);
        self.meter.draw(|| {
            format!("asking the engine about each spawn's brief: {done} of {total} ({cached} answered before)")
        });
    }
}

impl Asker for EngineAsker {
    fn features(&mut self, brief: &str) -> Asked {
        let key = self.key(brief);
        if let Some(k) = self.cache.answers.get(&key) {
            self.used.cached += 1;
            let features = k
                .answers
                .iter()
                .filter_map(|(name, answer, confidence, calibrated)| {
                    Some(FeatureAnswer {
                        feature: Feature::named(name)?,
                        answer: *answer,
                        confidence: *confidence,
                        calibrated: *calibrated,
                    })
                })
                .collect();
            let asked = Asked {
                features: Ok(features),
                tier_head: None,
                provider: k.provider.clone(),
                model: k.model.clone(),
                latency_ms: 0.0,
                sent: Vec::new(),
            };
            self.progress();
            return asked;
        }
        if self.used.gave_up {
            self.progress();
            return Asked {
                features: Err(self.last_refusal.clone().unwrap_or(Refusal::NoEngine)),
                tier_head: None,
                provider: None,
                model: None,
                latency_ms: 0.0,
                sent: Vec::new(),
            };
        }
        let budget = Budget::Until(Instant::now() + self.budget);
        let asked = features::ask(&self.gateway, brief, budget, Purpose::Check, &new_request_id(), false);
        self.used.asked += 1;
        match &asked.features {
            Ok(fs) => {
                self.answered += 1;
                self.failed_in_a_row = 0;
                self.cache.answers.insert(
                    key,
                    Kept4 {
                        answers: fs
                            .iter()
                            .map(|f| (f.feature.name().to_string(), f.answer, f.confidence, f.calibrated))
                            .collect(),
                        provider: asked.provider.clone(),
                        model: asked.model.clone(),
                    },
                );
                self.dirty = true;
            }
            Err(e) => {
                self.used.failed += 1;
                self.used.failure.get_or_insert_with(|| e.to_string());
                self.last_refusal = Some(e.clone());
                self.failed_in_a_row += 1;
                if self.answered == 0 && self.failed_in_a_row >= GIVE_UP_AFTER {
                    self.used.gave_up = true;
                }
            }
        }
        self.progress();
        asked
    }

    fn used(&self) -> EngineUse {
        self.used.clone()
    }
}

/// A spawn the mode would set to another tier: where from, where to, what it cost (`None`: not
/// priced), its subagent run and its session.
struct Changed {
    from: Option<Tier>,
    to: Tier,
    cost: Option<f64>,
    agent: Option<u32>,
    origin: u32,
}

/// Replays `mode` on every spawn of `agg`, pricing each with `prices` (and the provider settings
/// of Claude Code's directory `claude_dir`); outcomes from `log`.
pub fn build(
    agg: &Aggregator,
    prices: &Prices,
    log: &SpawnLog,
    loaded: &Loaded,
    mode: Enforce,
    asker: &mut dyn Asker,
    claude_dir: &std::path::Path,
) -> WhatIf {
    let models = Models::new(agg, prices);
    let usage = Usage::tally(agg, &models, prices);
    let spawns = Spawns::sort(agg);
    let baseline = Baseline::new(agg, prices, &models, &usage, &spawns);
    let repricer = Repricer { agg, prices, baseline: &baseline, providers: session_providers(agg, claude_dir) };
    let cfg = &loaded.config.routing;

    let mut w = WhatIf {
        mode: mode.name().to_string(),
        estimate: ESTIMATE,
        spawns: spawns.all.len() as u64,
        changed: 0,
        lowered: 0,
        raised: 0,
        unchanged: 0,
        rewrites: Rewrites::default(),
        left_alone: BTreeMap::new(),
        cost_usd: 0.0,
        projected_cost_usd: 0.0,
        savings_usd: 0.0,
        not_priced: 0,
        moves: Vec::new(),
        outcomes: Vec::new(),
        engine: EngineUse::default(),
        effort: EffortUse::default(),
        providers: Vec::new(),
        prices: PricesUsed {
            as_of: prices.file.as_of.clone(),
            catalog: prices.catalog.as_ref().map(|c| c.source.clone()),
            catalog_as_of: prices.catalog.as_ref().map(|c| c.as_of.clone()),
        },
    };
    let mut left: BTreeMap<WhyLeft, u64> = BTreeMap::new();
    // The spawns it would set to another tier: where from, where to, what they cost, their agent
    // and session.
    let mut changed: Vec<Changed> = Vec::new();
    for j in &spawns.all {
        let s = j.spawn;
        // What the spawn cost; `None` when not priced.
        let spent = j.agent.and_then(|a| usage.spent(Some(a), &models)).filter(|sp| sp.tokens.total() > 0);
        let model = Model::read(s.requested.clone().map(Value::String).as_ref());
        let verdict = match s.brief.as_deref().filter(|b| !b.trim().is_empty()) {
            None => Err(WhyLeft::NoBrief),
            Some(brief) => {
                let words = crate::routing::gate::words(brief);
                match enforce::before_engine(mode, &model, s.subagent_type.as_deref(), words) {
                    Some(l) => Err(WhyLeft::of(&l)),
                    // The engine is asked only where its answer could change the call.
                    None => {
                        let routed = apply_rule(cfg, asker.features(brief));
                        agent::action(cfg, mode, &model, None, &routed).map_err(|l| WhyLeft::of(&l))
                    }
                }
            }
        };
        let cost = spent.as_ref().map(|sp| usd(sp.cost));
        // Left as it was, or set to the tier it ran on: it costs what it cost.
        let mut stays = || match cost {
            Some(c) => {
                w.cost_usd += c;
                w.projected_cost_usd += c;
            }
            None => w.not_priced += 1,
        };
        let to = match verdict {
            Err(why) => {
                *left.entry(why).or_default() += 1;
                stays();
                continue;
            }
            Ok(t) if j.tier == Some(t) => {
                stays();
                w.unchanged += 1;
                continue;
            }
            Ok(t) => t,
        };
        w.changed += 1;
        match model.tier() {
            None => w.rewrites.filled += 1,
            Some(named) if named < to => w.rewrites.raised += 1,
            Some(_) => w.rewrites.lowered += 1,
        }
        match j.tier {
            Some(t) if t > to => w.lowered += 1,
            _ => w.raised += 1,
        }
        changed.push(Changed { from: j.tier, to, cost, agent: j.agent, origin: s.origin });
    }

    let targets: HashMap<u32, Tier> =
        changed.iter().filter_map(|c| c.agent.filter(|_| c.cost.is_some()).map(|a| (a, c.to))).collect();
    let projected = repricer.agents(&targets, &mut w.effort);
    let mut moves: BTreeMap<(Option<Tier>, Tier), Move> = BTreeMap::new();
    let mut providers: BTreeMap<(Provider, &'static str), (ProviderUse, std::collections::BTreeSet<u32>)> =
        BTreeMap::new();
    let tier_name = |t: Option<Tier>| t.map_or("unknown", Tier::name).to_string();
    for Changed { from, to, cost, agent, origin } in changed {
        let m = moves.entry((from, to)).or_insert_with(|| Move {
            from: tier_name(from),
            to: to.name().to_string(),
            spawns: 0,
            cost_usd: 0.0,
            projected_cost_usd: 0.0,
            not_priced: 0,
        });
        m.spawns += 1;
        let would = agent.and_then(|a| projected.get(&a).copied().flatten()).map(usd);
        match (cost, would) {
            (Some(c), Some(p)) => {
                m.cost_usd += c;
                m.projected_cost_usd += p;
                w.cost_usd += c;
                w.projected_cost_usd += p;
            }
            _ => {
                m.not_priced += 1;
                w.not_priced += 1;
            }
        }
        let (provider, why) =
            repricer.providers.get(origin as usize).cloned().unwrap_or((Provider::FirstParty, ProviderWhy::Default));
        let (u, sessions) = providers.entry((provider, why.from())).or_insert_with(|| {
            (
                ProviderUse {
                    provider,
                    sessions: 0,
                    from: why.from(),
                    evidence: why.evidence(),
                    models: BTreeMap::new(),
                },
                std::collections::BTreeSet::new(),
            )
        });
        sessions.insert(origin);
        if let Some(model) = repricer.target(to, origin) {
            u.models.entry(to.name().to_string()).or_insert_with(|| model.to_string());
        }
    }
    w.providers =
        providers.into_values().map(|(u, sessions)| ProviderUse { sessions: sessions.len() as u64, ..u }).collect();
    w.savings_usd = w.cost_usd - w.projected_cost_usd;
    // Order: the cheapest target first, then where from.
    let order = |t: Option<Tier>| t.map_or(Tier::COUNT, Tier::index);
    let mut list: Vec<((Option<Tier>, Tier), Move)> = moves.into_iter().collect();
    list.sort_by_key(|((from, to), _)| (to.index(), order(*from)));
    let targets: Vec<Tier> = {
        let mut t: Vec<Tier> = list.iter().map(|((_, to), _)| *to).collect();
        t.dedup();
        t
    };
    w.moves = list.into_iter().map(|(_, m)| m).collect();
    w.left_alone = left.into_iter().map(|(why, n)| (why.name().to_string(), n)).collect();
    w.outcomes = outcomes(&spawns, log, &targets);
    w.engine = asker.used();
    w
}

/// The labelled outcomes (the routing log's) of spawns that ran on each of `tiers`: the tier from
/// the transcripts, else the one the labeller recorded.
fn outcomes(spawns: &Spawns<'_>, log: &SpawnLog, tiers: &[Tier]) -> Vec<TierOutcomes> {
    let ran: HashMap<&str, Option<Tier>> = spawns.all.iter().map(|j| (j.spawn.tool_use_id.as_str(), j.tier)).collect();
    let mut counts: BTreeMap<Tier, (u64, u64)> = BTreeMap::new();
    for e in log.entries.iter().filter(|e| e.is_agent()) {
        let Some(outcome) = e.judged.outcome else { continue };
        let tier =
            e.call.tool_use_id.as_deref().and_then(|id| ran.get(id).copied().flatten()).or(e.judged.outcome_tier);
        let Some(tier) = tier else { continue };
        let c = counts.entry(tier).or_default();
        match outcome {
            Outcome::Succeeded => c.0 += 1,
            Outcome::Failed => c.1 += 1,
        }
    }
    tiers
        .iter()
        .map(|t| {
            let (succeeded, failed) = counts.get(t).copied().unwrap_or_default();
            let labelled = succeeded + failed;
            TierOutcomes {
                tier: t.name().to_string(),
                labelled,
                succeeded,
                failed,
                success: (labelled > 0).then(|| succeeded as f64 / labelled as f64),
            }
        })
        .collect()
}
