//! `system1 report --by day|week|month|session|project|model|agent`: the report's deduplicated
//! requests, prompts and spawns (the same [`Aggregator`] the report builds from), one row per key.
//!
//! Each row has its tokens by kind, its cost (each request at the price in force on its day), its
//! requests and sessions, and the System-1 figures that belong to it: prompts and the hinted ones
//! (not in the model and agent views: a prompt has no model), spawns and what they did with their
//! hint, and the realised savings of the spawns that followed one. A request, prompt or spawn falls
//! in the row of:
//! - `day`, `week`, `month`: its local date in the chosen time zone (weeks start on Monday);
//! - `session`, `project`: the session and project it was counted from (a forked session's copied
//!   history once, in the first session by id, as in the report);
//! - `model`: a request its model; a spawn the model its subagent ran on;
//! - `agent`: the subagent type (`.meta.json`'s `agentType`, else the Agent call's `subagent_type`)
//!   and the tier of the model; the main thread's requests are a type of their own.
//!
//! The rows add up to the total, which is the report's own: the same requests, cost and realised
//! savings (each spawn's savings measured against the usual mix of the whole scope).

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;
use system1_transcripts::Tokens;

use super::figures::{self, Baseline, Fate, Models, Priced, Spawns, Usage};
use super::prices::{Minute, NO_MINUTE, Pico, Prices, usd};
use super::{Aggregator, NO_AGENT, ReadStats, Rec};
use crate::tier::Tier;
use crate::zone::{self, Zone};

/// What one row stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum View {
    Day,
    Week,
    Month,
    Session,
    Project,
    Model,
    Agent,
}

impl View {
    pub fn name(self) -> &'static str {
        match self {
            View::Day => "day",
            View::Week => "week",
            View::Month => "month",
            View::Session => "session",
            View::Project => "project",
            View::Model => "model",
            View::Agent => "agent",
        }
    }

    /// Whether prompts have a row here (a prompt has no model and no subagent type).
    pub fn has_prompts(self) -> bool {
        !matches!(self, View::Model | View::Agent)
    }
}

/// The figures of one row, and of the total.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Figures {
    pub requests: u64,
    pub input: u64,
    pub output: u64,
    /// 5-minute plus 1-hour cache writes.
    pub cache_creation: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    pub cache_read: u64,
    pub total_tokens: u64,
    /// Cost of the priced requests only; see `unpriced_requests`.
    pub cost_usd: f64,
    pub unpriced_requests: u64,
    /// Sessions with a request or a prompt in the row.
    pub sessions: u64,
    /// Null in the model and agent views.
    pub prompts: Option<u64>,
    pub hinted_prompts: Option<u64>,
    pub spawns: u64,
    /// Spawns in a turn with a routing hint.
    pub hinted_spawns: u64,
    /// Of those, ran on the hinted tier, above it, below it.
    pub followed: u64,
    pub upgraded: u64,
    pub downgraded: u64,
    /// What the spawns that followed a hint saved against the usual mix; null when the usual mix
    /// has no price.
    pub realised_usd: Option<f64>,
    /// What the spawns upgraded past a hint cost over the hinted tier.
    pub missed_usd: f64,
    /// The cost by the tier of each request's model (`unknown` where none reads), for the chart
    /// over time; the tiers with none are left out.
    pub cost_by_tier: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub key: String,
    /// The agent view's tier, and the model view's (`unknown` where no tier reads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    /// The session view's project path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The session and project views' last request or prompt (RFC 3339, UTC, to the minute).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_activity: Option<String>,
    #[serde(flatten)]
    pub figures: Figures,
}

/// The usual tier mix the realised savings are measured against.
#[derive(Debug, Clone, Serialize)]
pub struct Mix {
    pub baseline: String,
    pub baseline_samples: u64,
    pub mix: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Breakdown {
    pub by: View,
    /// The time zone dates are in.
    pub timezone: String,
    pub scope: BTreeMap<String, serde_json::Value>,
    pub read: ReadStats,
    pub rows: Vec<Row>,
    pub total: Figures,
    pub usual_mix: Mix,
    pub unknown_models: Vec<String>,
    pub prices_as_of: String,
}

/// A row's identity while counting: small and cheap to hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Key {
    /// A day, or the Monday of a week, counted from 1970-01-01; a month as `year * 12 + month - 1`.
    Period(i64),
    /// No timestamp to place it by.
    Undated,
    Session(u32),
    Project(u32),
    Model(u32),
    /// The subagent type (an index into the type names) and the tier.
    Agent(u32, Option<Tier>),
}

/// What a row gathers while counting.
#[derive(Default)]
struct Acc {
    requests: u64,
    tokens: Tokens,
    cost: Pico,
    unpriced: u64,
    sessions: HashSet<u32>,
    prompts: u64,
    hinted_prompts: u64,
    spawns: u64,
    hinted_spawns: u64,
    followed: u64,
    upgraded: u64,
    downgraded: u64,
    realised: f64,
    missed: f64,
    /// Cost by tier, `Tier::ALL` order, then what no tier reads.
    by_tier: [Pico; Tier::COUNT + 1],
    last: Minute,
}

impl Acc {
    fn seen(&mut self, session: u32, minute: Minute) {
        self.sessions.insert(session);
        self.last = self.last.max(minute);
    }

    fn figures(&self, prompts: bool, priced: bool) -> Figures {
        let t = &self.tokens;
        Figures {
            requests: self.requests,
            input: t.input,
            output: t.output,
            cache_creation: t.cache_write_5m + t.cache_write_1h,
            cache_write_5m: t.cache_write_5m,
            cache_write_1h: t.cache_write_1h,
            cache_read: t.cache_read,
            total_tokens: t.total(),
            cost_usd: usd(self.cost),
            unpriced_requests: self.unpriced,
            sessions: self.sessions.len() as u64,
            prompts: prompts.then_some(self.prompts),
            hinted_prompts: prompts.then_some(self.hinted_prompts),
            spawns: self.spawns,
            hinted_spawns: self.hinted_spawns,
            followed: self.followed,
            upgraded: self.upgraded,
            downgraded: self.downgraded,
            realised_usd: priced.then_some(self.realised),
            missed_usd: self.missed,
            cost_by_tier: Tier::ALL
                .iter()
                .map(|t| t.name())
                .chain([figures::UNKNOWN_TIER])
                .zip(self.by_tier)
                .filter(|(_, c)| *c > 0)
                .map(|(name, c)| (name.to_string(), usd(c)))
                .collect(),
        }
    }
}

/// Names the keys: sessions, projects and subagent types each once.
struct Names<'a> {
    agg: &'a Aggregator,
    view: View,
    zone: &'a Zone,
    /// Each origin's session and project, as indices into the lists below.
    session_of: Vec<u32>,
    project_of: Vec<u32>,
    sessions: Vec<&'a str>,
    projects: Vec<(&'a str, &'a str)>,
    /// Each subagent run's type, as an index into `types`.
    type_of: Vec<u32>,
    types: Vec<String>,
}

/// The type names of requests no subagent file holds.
const MAIN_THREAD: &str = "(main thread)";
const UNKNOWN_TYPE: &str = "(unknown type)";

impl<'a> Names<'a> {
    fn new(agg: &'a Aggregator, view: View, zone: &'a Zone, spawns: &Spawns<'_>) -> Names<'a> {
        let mut sessions: Vec<&str> = Vec::new();
        let mut projects: Vec<(&str, &str)> = Vec::new();
        let (mut session_ids, mut project_ids) = (HashMap::new(), HashMap::new());
        let (mut session_of, mut project_of) = (Vec::new(), Vec::new());
        for o in &agg.origins {
            let s = *session_ids.entry(o.session_id.as_str()).or_insert_with(|| {
                sessions.push(&o.session_id);
                sessions.len() as u32 - 1
            });
            let p = *project_ids.entry(o.project.as_str()).or_insert_with(|| {
                projects.push((&o.project, o.project_path()));
                projects.len() as u32 - 1
            });
            session_of.push(s);
            project_of.push(p);
        }
        // A run's type: its .meta.json's, else the type its spawn asked for.
        let mut asked: HashMap<u32, &str> = HashMap::new();
        for j in &spawns.all {
            if let (Some(a), Some(t)) = (j.agent, j.spawn.subagent_type.as_deref()) {
                asked.entry(a).or_insert(t);
            }
        }
        let mut types = vec![MAIN_THREAD.to_string(), UNKNOWN_TYPE.to_string()];
        let mut type_ids: HashMap<String, u32> = HashMap::new();
        let mut type_of = Vec::with_capacity(agg.agents.len());
        for (i, a) in agg.agents.iter().enumerate() {
            let name = a.agent_type.as_deref().or_else(|| asked.get(&(i as u32)).copied());
            let id = match name {
                None => 1,
                Some(n) => *type_ids.entry(n.to_string()).or_insert_with(|| {
                    types.push(n.to_string());
                    types.len() as u32 - 1
                }),
            };
            type_of.push(id);
        }
        Names { agg, view, zone, session_of, project_of, sessions, projects, type_of, types }
    }

    fn period(&self, minute: Minute) -> Key {
        if minute == NO_MINUTE {
            return Key::Undated;
        }
        let day = self.zone.day_of(i64::from(minute) * 60);
        match self.view {
            View::Week => Key::Period(zone::week_of(day)),
            View::Month => {
                let d = zone::date(day);
                Key::Period(i64::from(chrono::Datelike::year(&d)) * 12 + i64::from(chrono::Datelike::month0(&d)))
            }
            _ => Key::Period(day),
        }
    }

    /// The row of a request.
    fn of_request(&self, r: &Rec, models: &Models) -> Key {
        match self.view {
            View::Day | View::Week | View::Month => self.period(r.minute),
            View::Session => Key::Session(self.session_of[r.origin as usize]),
            View::Project => Key::Project(self.project_of[r.origin as usize]),
            View::Model => Key::Model(r.model),
            View::Agent => {
                let kind = match r.agent {
                    NO_AGENT if r.sidechain => 1,
                    NO_AGENT => 0,
                    a => self.type_of[a as usize],
                };
                Key::Agent(kind, models.tier(r.model))
            }
        }
    }

    /// The row of a prompt or a spawn made at `minute` in `origin`; `None` in the model and agent
    /// views, which place a spawn by what it ran on.
    fn of_event(&self, minute: Minute, origin: u32) -> Option<Key> {
        match self.view {
            View::Day | View::Week | View::Month => Some(self.period(minute)),
            View::Session => Some(Key::Session(self.session_of[origin as usize])),
            View::Project => Some(Key::Project(self.project_of[origin as usize])),
            View::Model | View::Agent => None,
        }
    }

    /// The row of a spawn: where it was made, or in the model and agent views what it ran on.
    fn of_spawn(&self, j: &figures::Judged<'_>) -> Option<Key> {
        let s = j.spawn;
        match self.view {
            View::Model => {
                let ran = j
                    .agent
                    .and_then(|a| self.agg.agents[a as usize].first_model.as_deref())
                    .or_else(|| s.resolved.as_deref().map(|m| m.split_once('[').map_or(m, |(base, _)| base)))?;
                self.agg.model_index.get(ran).map(|&m| Key::Model(m))
            }
            View::Agent => {
                let kind = match j.agent {
                    Some(a) => self.type_of[a as usize],
                    None => {
                        s.subagent_type.as_deref().and_then(|t| self.types.iter().position(|n| n == t)).unwrap_or(1)
                            as u32
                    }
                };
                Some(Key::Agent(kind, j.tier))
            }
            _ => self.of_event(s.minute, s.origin),
        }
    }

    fn row(&self, key: Key, acc: &Acc, prompts: bool, priced: bool) -> Row {
        let minute_text = |m: Minute| {
            (m != NO_MINUTE).then(|| {
                chrono::DateTime::from_timestamp(i64::from(m) * 60, 0)
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
                    .unwrap_or_default()
            })
        };
        let tier_name = |t: Option<Tier>| Some(t.map_or("unknown", Tier::name).to_string());
        let mut row = Row {
            key: String::new(),
            tier: None,
            project: None,
            last_activity: None,
            figures: acc.figures(prompts, priced),
        };
        match key {
            Key::Undated => row.key = "(no date)".into(),
            Key::Period(p) => {
                row.key = match self.view {
                    View::Month => format!("{:04}-{:02}", p.div_euclid(12), p.rem_euclid(12) + 1),
                    _ => zone::date(p).format("%Y-%m-%d").to_string(),
                }
            }
            Key::Session(s) => {
                row.key = self.sessions[s as usize].to_string();
                let origin = self.session_of.iter().position(|&x| x == s);
                row.project = origin.map(|o| self.agg.origins[o].project_path().to_string());
                row.last_activity = minute_text(acc.last);
            }
            Key::Project(p) => {
                row.key = self.projects[p as usize].1.to_string();
                row.last_activity = minute_text(acc.last);
            }
            Key::Model(m) => {
                row.key = self.agg.models[m as usize].clone();
                row.tier = tier_name(Tier::of(&row.key));
            }
            Key::Agent(kind, tier) => {
                row.key = self.types[kind as usize].clone();
                row.tier = tier_name(tier);
            }
        }
        row
    }
}

/// One row per key of `view`, and the total, for the report's `scope` and what it `read`.
pub fn build(
    agg: &Aggregator,
    prices: &Prices,
    view: View,
    zone: &Zone,
    scope: BTreeMap<String, serde_json::Value>,
    read: ReadStats,
) -> Breakdown {
    let models = Models::new(agg, prices);
    let usage = Usage::tally(agg, &models, prices);
    let spawns = Spawns::sort(agg);
    let baseline = Baseline::new(agg, prices, &models, &usage, &spawns);
    let repriced = baseline.reprice(agg, prices);
    let realised = figures::realised_each(&baseline, &repriced, &models, &usage, &spawns);
    let missed = figures::missed_each(&baseline, &repriced, &models, &usage, &spawns);
    let names = Names::new(agg, view, zone, &spawns);

    let mut rows: HashMap<Key, Acc> = HashMap::new();
    let mut total = Acc::default();
    for r in agg.records() {
        let tokens = r.tokens();
        if tokens.total() == 0 {
            continue;
        }
        let cost = Priced::of(r, &tokens, &models, prices).cost;
        let session = names.session_of[r.origin as usize];
        for acc in [rows.entry(names.of_request(r, &models)).or_default(), &mut total] {
            acc.requests += 1;
            acc.tokens.add(&tokens);
            acc.cost += cost;
            acc.by_tier[models.tier(r.model).map_or(Tier::COUNT, Tier::index)] += cost;
            acc.unpriced += u64::from(!models.priced(r.model));
            acc.seen(session, r.minute);
        }
    }
    for p in agg.prompts.values() {
        let session = names.session_of[p.origin as usize];
        let key = names.of_event(p.minute, p.origin);
        for acc in key.map(|k| rows.entry(k).or_default()).into_iter().chain([&mut total]) {
            acc.prompts += 1;
            acc.hinted_prompts += u64::from(p.hinted);
            acc.seen(session, p.minute);
        }
    }
    for j in &spawns.all {
        let key = names.of_spawn(j);
        for acc in key.map(|k| rows.entry(k).or_default()).into_iter().chain([&mut total]) {
            acc.spawns += 1;
            match j.fate {
                Fate::Unhinted => {}
                Fate::Followed => acc.followed += 1,
                Fate::Upgraded(_) => acc.upgraded += 1,
                Fate::Downgraded => acc.downgraded += 1,
                Fate::Unknown | Fate::NotRun => {}
            }
            acc.hinted_spawns += u64::from(j.fate != Fate::Unhinted);
        }
    }
    // In the spawns' order, as the report adds them.
    for (i, saved) in &realised {
        if let Some(k) = names.of_spawn(&spawns.all[*i]) {
            rows.entry(k).or_default().realised += saved;
        }
        total.realised += saved;
    }
    for (i, lost) in &missed {
        if let Some(k) = names.of_spawn(&spawns.all[*i]) {
            rows.entry(k).or_default().missed += lost;
        }
        total.missed += lost;
    }

    let priced = baseline.priced();
    let prompts = view.has_prompts();
    let mut keyed: Vec<(Key, Acc)> = rows.into_iter().collect();
    // Dates in order; sessions by their last activity, the latest last (beside the total); the
    // rest dearest first. Ties by name, never by the order the keys were first seen in.
    keyed.sort_by_key(|(k, _)| *k);
    let mut out: Vec<(Minute, Pico, Row)> =
        keyed.iter().map(|(k, a)| (a.last, a.cost, names.row(*k, a, prompts, priced))).collect();
    match view {
        View::Day | View::Week | View::Month => {}
        View::Session => out.sort_by(|a, b| (a.0, &a.2.key).cmp(&(b.0, &b.2.key))),
        View::Project | View::Model | View::Agent => out.sort_by(|a, b| {
            (b.1, b.2.figures.requests)
                .cmp(&(a.1, a.2.figures.requests))
                .then_with(|| (&a.2.key, &a.2.tier).cmp(&(&b.2.key, &b.2.tier)))
        }),
    }
    let out: Vec<Row> = out.into_iter().map(|(_, _, row)| row).collect();
    let usual_mix =
        Mix { baseline: baseline.name().to_string(), baseline_samples: baseline.samples(), mix: baseline.mix() };
    let unknown_models = figures::model_rows(agg, &models, &usage)
        .into_iter()
        .filter(|m| m.priced_as.is_none())
        .map(|m| m.model)
        .collect();
    Breakdown {
        by: view,
        timezone: zone.name().to_string(),
        scope,
        read,
        rows: out,
        total: total.figures(prompts, priced),
        usual_mix,
        unknown_models,
        prices_as_of: prices.file.as_of.clone(),
    }
}
