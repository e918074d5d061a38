//! `system1 study`: every chosen engine answers every item of the chosen labelled sets, and the
//! figures a user picks an engine by are printed side by side (for users: docs/calibration.md).
//!
//! Read-only: each engine is asked once per item with calibration off, and the "on" figures apply
//! the fit in force to those same answers, so nothing is asked twice and nothing is written but the
//! `--svg` file, at the end, atomically (an interrupted run leaves nothing behind).
//!
//! The local engine's heads were fitted on the seed sets (and, once `calibrate fit --apply` ran,
//! on the labelled log): on a set that holds those items, its answers are replaced by held-out
//! ones (`crossval`), and the output says so. Its embedding also gives a direct tier head, fitted on
//! the seed set and the labelled log as the heads are (held out the same way on those items),
//! shown beside the rule.

pub mod figures;
pub mod sets;
#[cfg(test)]
pub mod shipped;
mod text;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use self::figures::{InForce, Latency, Overall, QuestionData, QuestionFigures, TierData, TierFigures, TierItem, YesNo};
use self::sets::{Items, Set};
use super::crossval::{self, TierAnswer};
use super::data;
use super::seeds::DESTRUCTIVE_QUESTION;
use super::{rule_choice, rule_fit, tier_first};
use crate::calibration::Calibration;
use crate::error::{Context, Error, Result};
use crate::feature::Feature;
use crate::gateway::{Answer, Budget, Gateway, Purpose};
use crate::providers::local::{self, model::Model};
use crate::routing::{features, log};
use crate::tier::Tier;
use crate::{fsutil, paths};

/// What `system1 study` was asked.
pub struct Options {
    /// The engines to study; None: every configured engine that answers its health probe.
    pub providers: Option<Vec<String>>,
    /// `routing`, `destructive`, `log` or a file path; empty: the two seed sets.
    pub sets: Vec<String>,
    pub json: bool,
    pub svg: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
pub struct SetInfo {
    pub name: String,
    pub source: String,
    pub items: usize,
}

#[derive(Debug, Serialize)]
pub struct LeftOut {
    pub provider: String,
    pub why: String,
}

/// One engine on one set.
#[derive(Debug, Serialize)]
pub struct SetResult {
    pub set: String,
    pub items: usize,
    /// Items the engine failed on (no answer at all), and the first reason.
    pub failed: usize,
    pub first_failure: Option<String>,
    pub latency: Latency,
    /// Set when the answers measured are held-out ones, saying how.
    pub cross_validated: Option<String>,
    pub questions: Vec<QuestionFigures>,
    pub tiers: Option<TierFigures>,
}

#[derive(Debug, Serialize)]
pub struct EngineResult {
    pub provider: String,
    pub model: String,
    pub sets: Vec<SetResult>,
    pub overall: Overall,
}

#[derive(Debug, Serialize)]
pub struct StudyResult {
    pub sets: Vec<SetInfo>,
    pub engines: Vec<EngineResult>,
    pub left_out: Vec<LeftOut>,
}

/// `system1 study`.
pub fn run(opts: Options) -> Result<i32> {
    let entries = log::read_all().context(|| format!("cannot read {}", paths::routing_log().display()))?;
    let log_items = data::log_items(&entries.entries);
    let names: Vec<String> = if opts.sets.is_empty() {
        vec!["routing".into(), "destructive".into()]
    } else {
        opts.sets.iter().flat_map(|s| s.split(',')).map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
    };
    let mut chosen = Vec::new();
    for name in &names {
        chosen
            .push(sets::load(name, || Ok(log_items.clone())).map_err(|e| Error::usage(format!("--set {name}: {e}")))?);
    }

    let (engines, mut left_out) = pick_engines(opts.providers.as_deref())?;
    let local_heads = local::local_heads_file().exists();
    let known = sets::head_training_texts(local_heads, &log_items).map_err(Error::failure)?;
    let tier_train = tier_training(&log_items).map_err(Error::failure)?;
    let calibration = Calibration::load(&paths::fitted_calibration());
    let mut results = Vec::new();
    for (name, gateway) in engines {
        match study_engine(&name, gateway, &chosen, &calibration, &known, &tier_train) {
            Ok(r) => results.push(r),
            Err(why) => left_out.push(LeftOut { provider: name, why }),
        }
    }
    if results.is_empty() {
        let why = left_out.iter().map(|l| format!("{}: {}", l.provider, l.why)).collect::<Vec<_>>().join("; ");
        return Err(Error::failure(format!("no engine to study ({why})")).with_hint(
            "start one (`system1 engine start`), or install the local one: `system1 engine install local`",
        ));
    }
    let study = StudyResult {
        sets: chosen
            .iter()
            .map(|s| SetInfo { name: s.name.clone(), source: s.source.clone(), items: s.len() })
            .collect(),
        engines: results,
        left_out,
    };
    if opts.json {
        outln!("{}", serde_json::to_string_pretty(&study).map_err(|e| Error::failure(e.to_string()))?)?;
    } else {
        out!("{}", text::render(&study))?;
    }
    if let Some(path) = &opts.svg {
        fsutil::write_atomically(path, text::svg(&study).as_bytes())
            .context(|| format!("cannot write {}", path.display()))?;
        if !opts.json {
            outln!("Pictures: {}", path.display())?;
        }
    }
    Ok(0)
}

/// The engines to study by name, each on a gateway of its own.
type Engines = Vec<(String, Gateway)>;

/// The engines to ask, each on a gateway of its own with calibration off, and those left out.
fn pick_engines(named: Option<&[String]>) -> Result<(Engines, Vec<LeftOut>)> {
    let loaded = crate::config::load();
    let names: Vec<String> = match named {
        Some(n) => {
            let mut seen = HashSet::new();
            n.iter()
                .flat_map(|s| s.split(','))
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty() && seen.insert(s.clone()))
                .collect()
        }
        // The mock is a stand-in that answers whatever it is told: studied only when named.
        None => loaded.configured_providers().into_iter().filter(|n| n != "mock").collect(),
    };
    if names.is_empty() {
        return Err(Error::usage("no engine to study: none is configured besides the mock; name one with --providers"));
    }
    let mut engines = Vec::new();
    let mut left_out = Vec::new();
    for name in names {
        // An unknown name or a broken config is the user's to fix: an error, not a left-out engine.
        let mut gateway = super::gateway_for(Some(&name))?;
        gateway.calibration = Calibration::default();
        let probe = match gateway.primary() {
            Some(p) => p.health(gateway.timeout),
            None => continue,
        };
        if probe.ok() {
            engines.push((name, gateway));
        } else {
            let why = probe.detail().unwrap_or("its health probe failed");
            left_out.push(LeftOut { provider: name, why: format!("not answering its health probe: {why}") });
        }
    }
    Ok((engines, left_out))
}

/// One item's answers: None when the engine failed on it, else one per question (None: abstained).
struct Collected {
    answers: Vec<Option<Vec<Option<YesNo>>>>,
    latency_ms: Vec<f64>,
    failures: Vec<String>,
}

fn collect(gateway: &Gateway, engine: &str, set: &Set) -> Collected {
    let mut out = Collected { answers: Vec::new(), latency_ms: Vec::new(), failures: Vec::new() };
    let mut tick = super::progress(format!("{engine}: {}", set.name));
    let n = set.len();
    match &set.items {
        Items::Routing(items) => {
            for (i, item) in items.iter().enumerate() {
                tick(i, n);
                let rid = format!("study-{i}");
                let asked = features::ask(gateway, &item.text, Budget::Chain, Purpose::Check, &rid, false);
                match asked.features {
                    Ok(fs) => {
                        out.latency_ms.push(asked.latency_ms);
                        out.answers.push(Some(
                            fs.iter().map(|f| f.answer.map(|yes| YesNo { yes, confidence: f.confidence })).collect(),
                        ));
                    }
                    Err(e) => {
                        out.failures.push(e.to_string());
                        out.answers.push(None);
                    }
                }
            }
        }
        Items::Destructive(commands) => {
            for (i, c) in commands.iter().enumerate() {
                tick(i, n);
                let started = Instant::now();
                let o = gateway.ask(&data::destructive_ask(&c.command), &format!("study-d{i}"));
                let ms = crate::gateway::millis(started.elapsed());
                match o.map(|mut a| a.answers.pop()) {
                    Ok(Some(answer)) => {
                        out.latency_ms.push(ms);
                        let a = match answer {
                            Answer::Decided { decision, confidence, .. } => {
                                Some(YesNo { yes: decision == "yes", confidence })
                            }
                            Answer::Abstained { .. } | Answer::Passed { .. } => None,
                        };
                        out.answers.push(Some(vec![a]));
                    }
                    Ok(None) => out.answers.push(None),
                    Err(refusal) => {
                        out.failures.push(refusal.to_string());
                        out.answers.push(None);
                    }
                }
            }
        }
    }
    out
}

/// The questions of a set, by calibration key, with each item's label.
fn questions(set: &Set) -> Vec<(String, Vec<Option<bool>>)> {
    match &set.items {
        Items::Routing(items) => Feature::ALL
            .iter()
            .map(|f| (f.name().to_string(), items.iter().map(|i| i.labels.get(f).copied()).collect()))
            .collect(),
        Items::Destructive(c) => {
            vec![(DESTRUCTIVE_QUESTION.to_string(), c.iter().map(|c| Some(c.destructive)).collect())]
        }
    }
}

/// The text the local engine reads for each item, as its request has it.
fn engine_texts(set: &Set) -> Vec<String> {
    match &set.items {
        Items::Routing(items) => items.iter().map(|i| local::state_text(&features::request(&i.text))).collect(),
        Items::Destructive(c) => c.iter().map(|c| local::state_text(&data::destructive_request(&c.command))).collect(),
    }
}

/// The local engine's model, loaded once for the embeddings the held-out answers need.
struct Embedder {
    name: String,
    model: Model,
    /// The tier head's training texts embedded so far: every routing set fits on them.
    known: std::cell::RefCell<HashMap<String, Vec<f32>>>,
}

impl Embedder {
    /// `text` embedded, once per study.
    fn embed_once(&self, text: &str) -> Vec<f32> {
        if let Some(x) = self.known.borrow().get(text) {
            return x.clone();
        }
        let x = self.model.embed(text);
        self.known.borrow_mut().insert(text.to_string(), x.clone());
        x
    }

    fn embed_all(&self, texts: &[String], what: String) -> Vec<Vec<f32>> {
        let mut tick = super::progress(what);
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                tick(i, texts.len());
                self.model.embed(t)
            })
            .collect()
    }
}

/// Held-out answers for the questions the local engine answered with a head, in place. A question
/// that cannot be held out (its labels here are all one answer) is left unmeasured rather than
/// measured on answers the heads were fitted on; the notes say which and why.
fn cross_validate(emb: &Embedder, xs: &[Vec<f32>], set: &Set, got: &mut Collected) -> Vec<String> {
    let mut notes = Vec::new();
    for (q, (key, labels)) in questions(set).iter().enumerate() {
        let answered = |i: usize| got.answers[i].as_ref().is_some_and(|a| a[q].is_some());
        let idx: Vec<usize> = (0..labels.len()).filter(|&i| labels[i].is_some() && answered(i)).collect();
        if idx.is_empty() {
            continue;
        }
        let ex: Vec<Vec<f32>> = idx.iter().map(|&i| xs[i].clone()).collect();
        let ys: Vec<bool> = idx.iter().filter_map(|&i| labels[i]).collect();
        let held_out = crossval::held_out(&emb.name, key, &ex, &ys).map(|(_, p)| p);
        for (k, &i) in idx.iter().enumerate() {
            if let Some(a) = got.answers[i].as_mut() {
                a[q] = held_out.as_ref().ok().map(|p| YesNo::from_p_yes(p[k]));
            }
        }
        if let Err(e) = held_out {
            notes.push(format!("{} not measured ({e})", text::short(key)));
        }
    }
    notes
}

fn study_engine(
    name: &str,
    gateway: Gateway,
    chosen: &[Set],
    calibration: &Calibration,
    known: &HashSet<String>,
    tier_train: &[(String, Tier)],
) -> std::result::Result<EngineResult, String> {
    let provider = gateway.primary().map(|p| p.name().to_string()).unwrap_or_else(|| name.to_string());
    let model = gateway.primary().map(|p| p.model()).unwrap_or_default();
    let routing_cfg = gateway.loaded.config.routing.clone();
    let decide_threshold = gateway.loaded.config.gateway.min_confidence;
    let has_heads = provider == "local";
    let mut embedder: Option<Embedder> = None;
    let mut set_results = Vec::new();
    let mut pooled: Vec<(bool, YesNo, Option<f64>)> = Vec::new();
    let mut all_latency = Vec::new();
    for set in chosen {
        let mut got = collect(&gateway, name, set);
        let in_force = |key: &str| {
            calibration
                .find_with_origin(&provider, &model, key, 2)
                .map(|(origin, f)| InForce { temperature: f.temperature, origin })
        };
        let mut cross_validated = None;
        let mut xs = Vec::new();
        if has_heads {
            if embedder.is_none() {
                let (name, model) = super::heads::configured_model()?;
                embedder = Some(Embedder { name, model, known: Default::default() });
            }
            if let Some(emb) = &embedder {
                xs = emb.embed_all(&engine_texts(set), format!("{name}: embedding {} for held-out answers", set.name));
                let k = set.known_items(known);
                if k > 0 {
                    let notes = cross_validate(emb, &xs, set, &mut got);
                    let whose = if k == set.len() {
                        "the engine's heads were fitted on this set".to_string()
                    } else {
                        format!("the engine's heads were fitted on {k} of these {} items", set.len())
                    };
                    let notes: String = notes.iter().map(|n| format!("; {n}")).collect();
                    cross_validated = Some(format!("{}: {whose}{notes}", crossval::HOW));
                }
            }
        }
        let threshold = match set.items {
            Items::Routing(_) => routing_cfg.min_confidence,
            Items::Destructive(_) => decide_threshold,
        };
        let mut qs = Vec::new();
        for (q, (key, labels)) in questions(set).into_iter().enumerate() {
            let fit = in_force(&key);
            let items: Vec<(bool, Option<YesNo>)> = labels
                .iter()
                .enumerate()
                .filter_map(|(i, l)| l.map(|l| (l, got.answers[i].as_ref().and_then(|a| a[q]))))
                .collect();
            pooled.extend(items.iter().filter_map(|(l, a)| a.map(|a| (*l, a, fit.map(|f| f.temperature)))));
            qs.push(figures::question(&QuestionData { question: key, threshold, fit, items }));
        }
        let tiers = match &set.items {
            Items::Routing(items) if items.iter().any(|i| i.tier.is_some()) => {
                let head = match &embedder {
                    Some(emb) => tier_head(emb, &xs, items, tier_train),
                    None => vec![None; items.len()],
                };
                let fits = Feature::ALL.iter().map(|f| (*f, in_force(f.name()).map(|x| x.temperature))).collect();
                let tier_items = items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, item)| {
                        let engine = got.answers[i].as_ref().and_then(|a| {
                            Feature::ALL
                                .iter()
                                .zip(a)
                                .map(|(f, a)| a.map(|a| (*f, a)))
                                .collect::<Option<BTreeMap<_, _>>>()
                        });
                        Some(TierItem { tier: item.tier?, labels: item.labels.clone(), engine, head: head[i] })
                    })
                    .collect();
                let tier_data = TierData {
                    rules: routing_cfg.rules.clone(),
                    default_tier: routing_cfg.default_tier,
                    threshold: routing_cfg.min_confidence,
                    fits,
                    items: tier_items,
                    has_head: has_heads,
                };
                let mut tf = figures::tiers(&tier_data);
                if let Some(emb) = &embedder {
                    (tf.head_first, tf.rule_choice) = head_first(
                        emb,
                        &xs,
                        items,
                        &got,
                        &tier_data,
                        tier_train,
                        routing_cfg.tier_head_min_confidence,
                    )?;
                }
                Some(tf)
            }
            _ => None,
        };
        all_latency.extend(got.latency_ms.iter().copied());
        set_results.push(SetResult {
            set: set.name.clone(),
            items: set.len(),
            failed: got.failures.len(),
            first_failure: got.failures.first().cloned(),
            latency: figures::latency(&got.latency_ms),
            cross_validated,
            questions: qs,
            tiers,
        });
    }
    Ok(EngineResult { provider, model, sets: set_results, overall: figures::overall(&pooled, &all_latency) })
}

/// The labelled tiers a direct tier head learns from, each prompt as the engine reads it: the seed
/// set's, and those of the labelled log.
fn tier_training(log_items: &[data::RoutingItem]) -> std::result::Result<Vec<(String, Tier)>, String> {
    let seeds = data::seed_items()?;
    Ok(seeds
        .iter()
        .chain(log_items)
        .filter_map(|i| Some((local::state_text(&features::request(&i.text)), i.tier?)))
        .collect())
}

/// The direct tier head's answer for each item with a labelled tier (None for the others): the
/// head is fitted on `train` (see [`tier_training`]), and an item that is one of its examples gets
/// its held-out answer.
fn tier_head(
    emb: &Embedder,
    xs: &[Vec<f32>],
    items: &[data::RoutingItem],
    train: &[(String, Tier)],
) -> Vec<Option<TierAnswer>> {
    let idx: Vec<usize> = (0..items.len()).filter(|&i| items[i].tier.is_some()).collect();
    let texts: Vec<String> = idx.iter().map(|&i| local::state_text(&features::request(&items[i].text))).collect();
    let in_set: HashMap<&str, usize> = texts.iter().enumerate().map(|(k, t)| (t.as_str(), idx[k])).collect();
    let mut train_xs = Vec::with_capacity(train.len());
    let mut position: HashMap<&str, usize> = HashMap::new();
    let mut tick = super::progress(format!("{}: embedding the tier head's examples", emb.name));
    for (n, (text, _)) in train.iter().enumerate() {
        tick(n, train.len());
        position.insert(text.as_str(), n);
        train_xs.push(match in_set.get(text.as_str()) {
            Some(&i) => xs[i].clone(),
            None => emb.embed_once(text),
        });
    }
    let train_tiers: Vec<Tier> = train.iter().map(|(_, t)| *t).collect();
    let ask: Vec<Vec<f32>> = idx.iter().map(|&i| xs[i].clone()).collect();
    let in_train: Vec<Option<usize>> = texts.iter().map(|t| position.get(t.as_str()).copied()).collect();
    let mut out = vec![None; items.len()];
    // Fewer than two tiers labelled: no head to fit, so none to show.
    let Ok(answers) = crossval::tier_answers(&emb.name, &train_xs, &train_tiers, &ask, &in_train) else { return out };
    for (k, &i) in idx.iter().enumerate() {
        out[i] = Some(answers[k]);
    }
    out
}

/// The tier head as the rule's first step on `items`, by nested cross-validation
/// ([`tier_first::measure_on`]), and on the same folds the rule chosen among candidates
/// ([`rule_choice::measure`]). The labelled tiers of `train` that are not among `items` (the labelled log's,
/// on the seed set) are fitted on in every fold and never scored.
fn head_first(
    emb: &Embedder,
    xs: &[Vec<f32>],
    items: &[data::RoutingItem],
    got: &Collected,
    d: &TierData,
    train: &[(String, Tier)],
    head_from: f64,
) -> std::result::Result<(Option<tier_first::Measured>, Option<rule_choice::Measured>), String> {
    let mut scored = Vec::new();
    let mut texts: HashSet<String> = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let Some(tier) = item.tier else { continue };
        let Some(answers) = got.answers[i].as_ref() else { continue };
        let Some(answers) = Feature::ALL
            .iter()
            .zip(answers)
            .map(|(f, a)| a.map(|a| (*f, (a.yes, a.calibrated(d.fits.get(f).copied().flatten()).confidence))))
            .collect::<Option<BTreeMap<_, _>>>()
        else {
            continue;
        };
        texts.insert(local::state_text(&features::request(&item.text)));
        scored.push(tier_first::Item { x: xs[i].clone(), example: rule_fit::Example { answers, tier } });
    }
    let extra: Vec<(Vec<f32>, Tier)> =
        train.iter().filter(|(t, _)| !texts.contains(t)).map(|(t, tier)| (emb.embed_once(t), *tier)).collect();
    if scored.len() < tier_first::FOLDS {
        return Ok((None, None));
    }
    let folds = tier_first::folds(&emb.name, &scored, &extra, &tier_first::dealt(scored.len(), 0))?;
    let head = tier_first::measure_on(&scored, &folds, &d.rules, d.default_tier, d.threshold, head_from)?;
    let setting = rule_choice::Setting { rules: &d.rules, default_tier: d.default_tier, threshold: d.threshold };
    Ok((Some(head), Some(rule_choice::measure(&scored, &folds, &setting, &rule_choice::CANDIDATES))))
}
