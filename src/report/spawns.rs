//! The report's spawn section, from the routing log rather than the transcripts: each spawn the
//! agent hook logged (joined with what the PostToolUse hook recorded it ran on), record-only and
//! enforced apart. For each group: the rule's tier against the tier that ran, how often they agree,
//! and the outcomes where labelled; for the rewrites: how many, which way, how many did not take
//! effect, and what they saved, priced from the transcripts' tokens as realised savings are.
//!
//! The tier a spawn ran on is the spawn entry's (`resolvedModel`), else the one `system1 outcomes`
//! found, else the transcripts' reading of the same tool use (see `figures::spawn_tier`).

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::Serialize;
use system1_transcripts::{Scope, encode_project};

use super::figures::{self, Baseline, Models, Repriced, Usage};
use super::prices::usd;
use super::{Aggregator, ratio};
use crate::config::Enforce;
use crate::routing::entry::{Entry, Kept, Outcome, Source};
use crate::routing::log;
use crate::routing::rule::Chosen;
use crate::routing::spawn_log::{self, Logged};
use crate::tier::Tier;

/// What the report read of the routing log: its agent entries in the report's scope, and the
/// spawn entries that complete them.
#[derive(Debug, Default, Serialize, serde::Deserialize)]
pub struct SpawnLog {
    pub path: String,
    pub entries: Vec<Entry>,
    /// Lines that are no entry (torn, hand-edited).
    pub skipped: u64,
    /// Why the log could not be read, when it could not (a missing log is an empty one).
    pub error: Option<String>,
}

impl SpawnLog {
    /// Reads `path` and keeps the agent and prompt entries inside `scope`'s time range and project
    /// (matched against the entry's `cwd`, else its `repo`, as a transcript's project directory
    /// is), and every spawn entry (they only count beside their agent entry).
    pub fn read(path: &Path, scope: &Scope) -> SpawnLog {
        let mut out = SpawnLog { path: path.display().to_string(), ..SpawnLog::default() };
        match log::read_all_at(path) {
            Ok(read) => {
                out.skipped = read.skipped as u64;
                // A spawn entry counts only beside its agent entry: kept whatever its time.
                out.entries = read
                    .entries
                    .into_iter()
                    .filter(|e| e.source == Some(Source::Spawn) || in_scope(e, scope))
                    .collect();
            }
            Err(e) => out.error = Some(e.to_string()),
        }
        out
    }
}

fn in_scope(e: &Entry, scope: &Scope) -> bool {
    if scope.since.is_some() || scope.until.is_some() {
        let Some(time) = e.time.as_deref().and_then(|t| DateTime::parse_from_rfc3339(t).ok()) else {
            return false;
        };
        let time = time.with_timezone(&Utc);
        if scope.since.is_some_and(|s| time < s) || scope.until.is_some_and(|u| time >= u) {
            return false;
        }
    }
    match (&scope.project, e.cwd.as_deref().or(e.repo.as_deref())) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(_), Some(dir)) => scope.project_matches(&encode_project(dir)),
    }
}

/// Spawns that ran with one rule tier on one tier (`unknown` when nothing says what ran).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cell {
    pub rule_tier: String,
    pub ran_tier: String,
    pub spawns: u64,
}

/// One group of spawns: the rule's tier against the tier that ran, and the outcomes.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Group {
    pub spawns: u64,
    /// Spawns whose rule tier and ran tier are both known.
    pub compared: u64,
    /// Of those, the ones that ran on the rule's tier.
    pub on_rule_tier: u64,
    pub above_rule_tier: u64,
    pub below_rule_tier: u64,
    /// on_rule_tier / compared.
    pub agreement: Option<f64>,
    /// Spawns with an outcome (`system1 outcomes --apply`, or a labeller).
    pub labelled: u64,
    pub succeeded: u64,
    pub failed: u64,
    /// succeeded / labelled.
    pub success: Option<f64>,
    /// Rule tier (rows) against ran tier, cheapest first, then unknown; only cells with spawns.
    pub rule_vs_ran: Vec<Cell>,
}

/// What the rewrites of enforcing hooks came to.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Rewrites {
    pub made: u64,
    /// The call named no model.
    pub filled: u64,
    /// The call named a model below the rule's tier.
    pub raised: u64,
    /// The call named a model above the rule's tier (`set`).
    pub lowered: u64,
    /// Rewrites whose tier that ran is known.
    pub checked: u64,
    pub took_effect: u64,
    pub not_taken: u64,
    /// not_taken / checked.
    pub not_taken_share: Option<f64>,
}

/// Enforced savings: for each rewrite that took effect, its tokens priced at the tier the call
/// would have run on (the tier its own `model` named, else the usual tier mix of the realised
/// savings), minus what it cost. Raises cost money, so this can be negative.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct EnforcedSavings {
    pub usd: f64,
    pub spawns_priced: u64,
    pub filled_usd: f64,
    pub raised_usd: f64,
    pub lowered_usd: f64,
    /// Rewrites that took effect but could not be priced (no subagent file in the transcripts, an
    /// unpriced model, or no usual mix for a filled call).
    pub not_priced: u64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct SpawnSection {
    /// The routing log read.
    pub log: String,
    pub read_error: Option<String>,
    pub skipped_lines: u64,
    /// Agent entries in the report's scope.
    pub spawns: u64,
    /// Logged with `[routing] enforce = "off"` (or before enforcement existed).
    pub record_only: Group,
    /// Logged under fill, raise or set, rewritten or not.
    pub enforced: Group,
    /// The enforced spawns whose `model` the hook set.
    pub rewritten: Group,
    pub rewrites: Rewrites,
    pub enforced_savings: EnforcedSavings,
    /// Each rule of the routing log's entries in scope: what it decided and what that came to.
    pub rules: Vec<RuleRow>,
    /// Enforced spawns the hook left alone because Claude Code's `CLAUDE_CODE_SUBAGENT_MODEL` was
    /// set: that variable decided their model, so they are no rewrites, failed or not.
    pub subagent_model_env: u64,
    /// Enforced spawns the hook left alone because `CLAUDE_CODE_SUBAGENT_NO_SMALL_MODELS` was set
    /// and the rule's tier was one the session refuses subagents: no rewrites either.
    pub no_small_models_env: u64,
}

/// One rule (by its number in the list when the entry was logged, or the default) over the routing
/// log's prompt and agent entries in scope: how many it decided, how often its tier was the
/// labelled one, and the subagent spend of the spawns it decided.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RuleRow {
    pub rule: String,
    /// The tier it gave (the latest entry's, should the rule list have changed).
    pub tier: Option<Tier>,
    pub prompts: u64,
    /// Prompts whose hint was given.
    pub hinted: u64,
    pub spawns: u64,
    /// Spawns whose `model` the hook set to its tier.
    pub rewritten: u64,
    /// Prompts and spawns with a labelled tier, and of those the ones on the rule's tier.
    pub labelled: u64,
    pub agreeing: u64,
    pub agreement: Option<f64>,
    /// What the subagents of the spawns it decided cost, from the transcripts (spawns whose
    /// subagent is not in them add nothing).
    pub spend_usd: f64,
}

/// The per-rule rows: the prompts of the log read, and the spawns already joined and priced.
fn rule_rows(entries: &[Entry], spawns: &[Spawn], spend: &[f64]) -> Vec<RuleRow> {
    let mut rows: BTreeMap<(u8, usize), RuleRow> = BTreeMap::new();
    fn row<'r>(rows: &'r mut BTreeMap<(u8, usize), RuleRow>, e: &Entry) -> Option<&'r mut RuleRow> {
        let (k, name) = match e.routing.rule? {
            Chosen::Rule(n) => ((0u8, n), format!("rule {n}")),
            Chosen::Default => ((1u8, 0), "default".to_string()),
            Chosen::Head => ((2u8, 0), "tier head".to_string()),
        };
        let r = rows.entry(k).or_insert_with(|| RuleRow { rule: name, ..RuleRow::default() });
        r.tier = rule_tier(e).or(r.tier);
        if let (Some(label), Some(tier)) = (e.labelling.label_tier, rule_tier(e)) {
            r.labelled += 1;
            r.agreeing += u64::from(label == tier);
        }
        Some(r)
    }
    for e in entries.iter().filter(|e| e.source == Some(Source::Prompt)) {
        if let Some(r) = row(&mut rows, e) {
            r.prompts += 1;
            r.hinted += u64::from(e.decided.hinted == Some(true));
        }
    }
    for (s, usd) in spawns.iter().zip(spend) {
        if let Some(r) = row(&mut rows, s.logged.agent) {
            r.spawns += 1;
            r.rewritten += u64::from(s.logged.set_tier().is_some());
            r.spend_usd += usd;
        }
    }
    rows.into_values().map(|r| RuleRow { agreement: ratio(r.agreeing, r.labelled), ..r }).collect()
}

/// The tier an agent entry's rule gave.
fn rule_tier(e: &Entry) -> Option<Tier> {
    e.routing.rule_tier.or_else(|| e.decided.decision.as_deref().and_then(Tier::named))
}

/// Which way a rewrite went.
#[derive(Clone, Copy, PartialEq)]
enum Way {
    Filled,
    Raised,
    Lowered,
}

fn way(before: Option<Tier>, after: Tier) -> Way {
    match before {
        None => Way::Filled,
        Some(b) if b < after => Way::Raised,
        // A rewrite to the tier the call already named is no rewrite the hook makes.
        Some(_) => Way::Lowered,
    }
}

/// A logged spawn, with what the transcripts add.
struct Spawn<'a> {
    logged: Logged<'a>,
    ran: Option<Tier>,
    /// The subagent run in the aggregator, when the transcripts hold it.
    agent: Option<u32>,
}

impl Spawn<'_> {
    fn took_effect(&self) -> Option<bool> {
        let set = self.logged.set_tier()?;
        self.logged.ran.and_then(|r| r.ran.took_effect).or_else(|| self.ran.map(|t| t == set))
    }
}

#[derive(Default)]
struct GroupTally {
    g: Group,
    cells: BTreeMap<(Option<Tier>, Option<Tier>), u64>,
}

impl GroupTally {
    fn add(&mut self, s: &Spawn) {
        let g = &mut self.g;
        g.spawns += 1;
        let rule = rule_tier(s.logged.agent);
        if let (Some(r), Some(t)) = (rule, s.ran) {
            g.compared += 1;
            match t.cmp(&r) {
                std::cmp::Ordering::Equal => g.on_rule_tier += 1,
                std::cmp::Ordering::Greater => g.above_rule_tier += 1,
                std::cmp::Ordering::Less => g.below_rule_tier += 1,
            }
        }
        match s.logged.agent.judged.outcome {
            Some(Outcome::Succeeded) => g.succeeded += 1,
            Some(Outcome::Failed) => g.failed += 1,
            None => {}
        }
        *self.cells.entry((rule, s.ran)).or_default() += 1;
    }

    fn finish(self) -> Group {
        let mut g = self.g;
        g.labelled = g.succeeded + g.failed;
        g.agreement = ratio(g.on_rule_tier, g.compared);
        g.success = ratio(g.succeeded, g.labelled);
        // `None` sorts first in a BTreeMap key; unknown goes last in the table.
        let name = |t: Option<Tier>| t.map_or("unknown", Tier::name).to_string();
        let order = |t: Option<Tier>| t.map_or(Tier::COUNT, Tier::index);
        let mut cells: Vec<_> = self.cells.into_iter().collect();
        cells.sort_by_key(|((rule, ran), _)| (order(*rule), order(*ran)));
        g.rule_vs_ran = cells
            .into_iter()
            .map(|((rule, ran), spawns)| Cell { rule_tier: name(rule), ran_tier: name(ran), spawns })
            .collect();
        g
    }
}

/// The spawn section of the routing log `log`, priced with the transcripts' tokens.
pub(super) fn section(
    log: &SpawnLog,
    agg: &Aggregator,
    models: &Models,
    usage: &Usage,
    baseline: &Baseline,
    repriced: &Repriced,
) -> SpawnSection {
    let by_tool_use = figures::agents_by_tool_use(agg);
    let spawns: Vec<Spawn> = spawn_log::join(&log.entries)
        .into_iter()
        .map(|logged| {
            let seen = logged.agent.call.tool_use_id.as_deref().and_then(|id| agg.spawns.get(id));
            let agent = seen
                .and_then(|s| figures::spawn_agent(agg, &by_tool_use, s))
                .or_else(|| logged.agent.call.tool_use_id.as_deref().and_then(|id| by_tool_use.get(id).copied()));
            let from_transcripts = seen.and_then(|s| figures::spawn_tier(agg, s, agent));
            Spawn { ran: logged.ran_tier().or(from_transcripts), logged, agent }
        })
        .collect();

    let (mut record_only, mut enforced, mut rewritten) =
        (GroupTally::default(), GroupTally::default(), GroupTally::default());
    let mut rw = Rewrites::default();
    let mut saved = EnforcedSavings::default();
    let mut subagent_model_env = 0;
    let mut no_small_models_env = 0;
    for s in &spawns {
        let mode = s.logged.agent.enforcement.enforce.unwrap_or(Enforce::Off);
        if mode == Enforce::Off {
            record_only.add(s);
            continue;
        }
        enforced.add(s);
        if s.logged.agent.enforcement.kept == Some(Kept::SubagentModel) {
            subagent_model_env += 1;
        }
        if s.logged.agent.enforcement.kept == Some(Kept::NoSmallModels) {
            no_small_models_env += 1;
        }
        let Some(set) = s.logged.set_tier() else { continue };
        rewritten.add(s);
        rw.made += 1;
        let before = s.logged.agent.enforcement.tier_before;
        let way = way(before, set);
        match way {
            Way::Filled => rw.filled += 1,
            Way::Raised => rw.raised += 1,
            Way::Lowered => rw.lowered += 1,
        }
        match s.took_effect() {
            Some(true) => rw.took_effect += 1,
            Some(false) => {
                rw.not_taken += 1;
                continue;
            }
            None => continue,
        }
        // What it cost against what it would have cost on the tier it would have run on.
        // Each request at the other tier's price on its day, as the realised savings reprice them.
        let spent = s.agent.and_then(|a| usage.spent(Some(a), models)).filter(|sp| sp.tokens.total() > 0);
        let at_tier = s.agent.and_then(|a| repriced.get(&a));
        let would = spent.as_ref().zip(at_tier).and_then(|(_, costs)| match before {
            Some(t) => baseline.entries[t.index()].map(|_| usd(costs[t.index()])),
            None => baseline.priced().then(|| baseline.usual_cost(costs)),
        });
        match (spent, would) {
            (Some(sp), Some(would)) => {
                let gain = would - usd(sp.cost);
                saved.usd += gain;
                saved.spawns_priced += 1;
                match way {
                    Way::Filled => saved.filled_usd += gain,
                    Way::Raised => saved.raised_usd += gain,
                    Way::Lowered => saved.lowered_usd += gain,
                }
            }
            _ => saved.not_priced += 1,
        }
    }
    let spend: Vec<f64> = spawns
        .iter()
        .map(|s| s.agent.and_then(|a| usage.spent(Some(a), models)).map_or(0.0, |sp| usd(sp.cost)))
        .collect();
    let rules = rule_rows(&log.entries, &spawns, &spend);
    rw.checked = rw.took_effect + rw.not_taken;
    rw.not_taken_share = ratio(rw.not_taken, rw.checked);
    SpawnSection {
        log: log.path.clone(),
        read_error: log.error.clone(),
        skipped_lines: log.skipped,
        spawns: spawns.len() as u64,
        record_only: record_only.finish(),
        enforced: enforced.finish(),
        rewritten: rewritten.finish(),
        rewrites: rw,
        enforced_savings: saved,
        rules,
        subagent_model_env,
        no_small_models_env,
    }
}

/// `rule→ran n` for each cell, for the table and the chart.
pub fn cells_text(cells: &[Cell]) -> String {
    cells.iter().map(|c| format!("{}→{} {}", c.rule_tier, c.ran_tier, c.spawns)).collect::<Vec<_>>().join(", ")
}
