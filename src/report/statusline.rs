//! `system1 statusline`: Claude Code's `statusLine` command. Claude Code runs it with a JSON object
//! on stdin each time the status line updates (as 2.1.332 sends it: `session_id`,
//! `transcript_path`, `model.display_name`, `cost.total_cost_usd`, `context_window.used_percentage`,
//! `rate_limits.five_hour.used_percentage`, ...), and shows the one line it prints: the model, this
//! session's cost, today's cost, what routing saved today, the tier hinted for the session's last
//! prompt (or why none), the prompt cache's state from Claude Code's `prompt_cache` block, the
//! context and rate limits used, and whether System-1 is paused or its engine down. Costs are the report's: each request at the API
//! list price in force on its day, deduplicated across files; "today" is what `system1 report
//! --days 1` counts.
//!
//! It runs often, so it reads almost nothing. A cache in the install dir ([`paths::statusline_cache`])
//! keeps, for each transcript that matters (written today, or of a session the status line was
//! shown for), what the report's collector made of it, keyed by path, size and mtime, and the
//! figures built from them. A run stats those files and the directories new ones would appear in;
//! when nothing moved it prints the cached figures. A file that grew is read on from where the last
//! read stopped (the collector's state is kept with its facts), and the figures are built again
//! from the cached facts. Every few minutes the whole projects dir is walked again, for a session
//! resumed where no status line watches it. The engine is probed at most once a minute.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use system1_transcripts::{self as transcripts, AgentFile, AgentMeta, FileInfo, Scope, Stats};

use super::collect::{Collector, FileFacts, Resume};
use super::prices::{Minute, Prices};
use super::spawns::SpawnLog;
use super::{Aggregator, Report};
use crate::zone::Zone;
use crate::{fsutil, paths};

const FORMAT: &str = "system1-statusline-cache";
const VERSION: u64 = 2;
/// How often the whole projects dir is walked again, in seconds.
const WALK_EVERY: i64 = 300;
/// How often the engine is probed, in seconds, and how long a probe may take.
const PROBE_EVERY: i64 = 60;
const PROBE_TIMEOUT: Duration = Duration::from_millis(300);
/// The cache's index is small; its facts grow with the day's requests.
const MAX_STATE_BYTES: u64 = 16 << 20;
const MAX_FACTS_BYTES: u64 = 512 << 20;

/// What the status line uses of Claude Code's input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Input {
    /// `model.display_name`, else `model.id`.
    pub model: Option<String>,
    pub session_id: Option<String>,
    pub transcript: Option<PathBuf>,
    /// Claude Code's own count of this session's cost (`cost.total_cost_usd`).
    pub session_cost: Option<f64>,
    /// `context_window.used_percentage`.
    pub context_used: Option<f64>,
    /// `rate_limits.five_hour.used_percentage` and `seven_day`'s.
    pub five_hour: Option<f64>,
    pub seven_day: Option<f64>,
    /// Claude Code's `prompt_cache` block (2.1.280 on), when it sends one.
    pub prompt_cache: Option<PromptCache>,
}

/// What the line shows of Claude Code's `prompt_cache` block.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptCache {
    /// `warm`: whether the session's prompt cache is alive now.
    pub warm: Option<bool>,
    /// `hit_ratio`, as a fraction (a value above 1 is read as a percentage).
    pub hit_ratio: Option<f64>,
    /// `expected_rebuilds`: how many times Claude Code expects to write the cache again.
    pub expected_rebuilds: Option<f64>,
}

impl PromptCache {
    fn read(v: &Value) -> Option<PromptCache> {
        let block = v.pointer("/prompt_cache").filter(|b| b.is_object())?;
        let number = |k: &str| block.get(k).and_then(Value::as_f64).filter(|x| x.is_finite() && *x >= 0.0);
        let c = PromptCache {
            warm: block.get("warm").and_then(Value::as_bool),
            hit_ratio: number("hit_ratio").map(|r| if r > 1.0 { r / 100.0 } else { r }),
            expected_rebuilds: number("expected_rebuilds"),
        };
        (c != PromptCache::default()).then_some(c)
    }

    /// `cache warm, 92% hit, 2 rebuilds due`.
    fn text(&self) -> String {
        let mut parts = vec![match self.warm {
            Some(true) => "cache warm".to_string(),
            Some(false) => "cache cold".to_string(),
            None => "cache".to_string(),
        }];
        if let Some(r) = self.hit_ratio {
            parts.push(format!("{:.0}% hit", (r * 100.0).clamp(0.0, 100.0)));
        }
        if let Some(n) = self.expected_rebuilds.map(|n| n.round() as u64).filter(|n| *n > 0) {
            parts.push(format!("{n} {} due", if n == 1 { "rebuild" } else { "rebuilds" }));
        }
        parts.join(", ")
    }
}

impl Input {
    /// The fields read leniently: one of another type is taken as absent. `None` when the object
    /// names neither a model nor a session, which is no status line input.
    pub fn from_payload(v: &Value) -> Option<Input> {
        let text = |p: &str| v.pointer(p).and_then(Value::as_str).filter(|s| !s.is_empty()).map(String::from);
        let number = |p: &str| v.pointer(p).and_then(Value::as_f64).filter(|x| x.is_finite());
        let input = Input {
            // Claude Code's text, printed on the user's terminal: escaped and capped like all text from outside.
            model: text("/model/display_name").or_else(|| text("/model/id")).map(|m| crate::text::printable(&m, 60)),
            session_id: text("/session_id"),
            transcript: text("/transcript_path").map(PathBuf::from),
            session_cost: number("/cost/total_cost_usd"),
            context_used: number("/context_window/used_percentage"),
            five_hour: number("/rate_limits/five_hour/used_percentage"),
            seven_day: number("/rate_limits/seven_day/used_percentage"),
            prompt_cache: PromptCache::read(v),
        };
        (input.model.is_some() || input.session_id.is_some() || input.transcript.is_some()).then_some(input)
    }
}

/// System-1's own state, as the line shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Health {
    Ok,
    Paused,
    /// The config does not read: System-1 stands aside until it is fixed.
    ConfigError,
    EngineDown,
}

/// The figures the line shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// This session's cost from its transcripts; `None` when they could not be read.
    pub session_usd: Option<f64>,
    pub today_usd: f64,
    /// Realised savings of today's spawns that followed a hint, plus what today's rewrites saved;
    /// `None` when there is nothing to measure them against.
    pub saved_usd: Option<f64>,
    /// Whether anything routing did today has a figure (a followed hint, a rewrite).
    pub routed_today: bool,
    /// This session's last prompt, as its transcript has it.
    #[serde(default)]
    pub last_prompt: Option<LastPrompt>,
}

/// A session's last prompt: whether its turn got a routing hint, the tier it named, and whether it
/// was long enough for the routing hook to consider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LastPrompt {
    pub hinted: bool,
    pub tier: Option<crate::tier::Tier>,
    pub long: bool,
}

/// What of routing the config turns on, as the line shows it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Routing {
    /// `[routing] enabled`.
    pub enabled: bool,
    /// `[routing] hint`.
    pub hint: bool,
}

/// The line: `Opus 4.8 · session $1.23 · today $14.50 · saved $2.10 · hint haiku · cache warm, 92%
/// hit · ctx 42% · 5h 23%`, then the System-1 state when it is not fine.
pub fn render(input: &Input, f: &Figures, routing: Routing, health: Health) -> String {
    let show_saved = routing.enabled;
    let usd = |x: f64| if x < 0.0 { format!("-${:.2}", -x) } else { format!("${x:.2}") };
    let pct = |x: f64| format!("{:.0}%", x.clamp(0.0, 100.0));
    let mut parts: Vec<String> = Vec::new();
    parts.extend(input.model.clone());
    if let Some(s) = f.session_usd.or(input.session_cost) {
        parts.push(format!("session {}", usd(s)));
    }
    parts.push(format!("today {}", usd(f.today_usd)));
    if show_saved || f.routed_today {
        parts.push(format!("saved {}", f.saved_usd.map_or_else(|| "n/a".to_string(), usd)));
    }
    if routing.enabled
        && let Some(p) = f.last_prompt
        && let Some(hint) = hint_text(p, routing, health)
    {
        parts.push(hint);
    }
    if let Some(c) = &input.prompt_cache {
        parts.push(c.text());
    }
    if let Some(c) = input.context_used {
        parts.push(format!("ctx {}", pct(c)));
    }
    if let Some(h) = input.five_hour {
        parts.push(format!("5h {}", pct(h)));
    }
    if let Some(d) = input.seven_day {
        parts.push(format!("7d {}", pct(d)));
    }
    match health {
        Health::Ok => {}
        Health::Paused => parts.push("System-1 paused".into()),
        Health::ConfigError => parts.push("System-1 config error".into()),
        Health::EngineDown => parts.push("System-1 engine down".into()),
    }
    parts.join(" · ")
}

/// The tier hinted for the last prompt, or why it got none: `hint haiku`, `no hint: short prompt`.
/// Nothing when System-1's state (paused, config error, engine down) already says why.
fn hint_text(p: LastPrompt, routing: Routing, health: Health) -> Option<String> {
    if p.hinted {
        return p.tier.map(|t| format!("hint {t}"));
    }
    if health != Health::Ok {
        return None;
    }
    let why = if !routing.hint {
        "hints off"
    } else if !p.long {
        "short prompt"
    } else {
        // The engine's answer was under [routing] min_confidence, or came too late for the hook.
        "not sure enough"
    };
    Some(format!("no hint: {why}"))
}

/// A file the cache holds, and how it was when read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Held {
    path: PathBuf,
    project: String,
    session_id: String,
    /// For a subagent file, its agent id.
    agent_id: Option<String>,
    size: u64,
    mtime_ns: u128,
}

impl Held {
    fn info(&self) -> FileInfo {
        FileInfo {
            path: self.path.clone(),
            project: self.project.clone(),
            session_id: self.session_id.clone(),
            agent: self.agent_id.clone().map(|agent_id| AgentFile { agent_id, meta: None }),
            size: self.size,
        }
    }
}

/// A directory a new transcript would appear in, and its mtime when last listed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Watched {
    path: PathBuf,
    mtime_ns: u128,
}

/// The engine's state when last probed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Probed {
    at: i64,
    down: bool,
}

/// The cache's index: what it holds, and the figures built from it. Small: every run reads it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct State {
    format: String,
    version: u64,
    projects: PathBuf,
    zone: String,
    /// The local day the figures are for.
    day: i64,
    walked_at: i64,
    /// The facts file these figures were built from.
    facts_id: u64,
    dirs: Vec<Watched>,
    files: Vec<Held>,
    /// Sessions held whole (every file of theirs, whatever its day), whose cost is kept.
    sessions: Vec<String>,
    session_usd: BTreeMap<String, f64>,
    /// Each session held whole's last prompt.
    #[serde(default)]
    session_last: BTreeMap<String, LastPrompt>,
    today: Figures,
    probe: Option<Probed>,
}

/// What the report's collector made of one file, and where to read on.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Read {
    offset: u64,
    resume: Resume,
}

/// The cache's facts: per file, and today's routing log entries.
#[derive(Debug, Default, Serialize, Deserialize)]
struct FactsFile {
    id: u64,
    files: HashMap<PathBuf, Read>,
    /// The routing log as last read: its size and mtime, and today's agent and spawn entries
    /// (prompt text left out).
    log: Option<(u64, u128, SpawnLog)>,
}

fn mtime_ns(md: &std::fs::Metadata) -> u128 {
    md.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos())
}

fn stat(path: &Path) -> Option<(u64, u128)> {
    std::fs::metadata(path).ok().map(|md| (md.len(), mtime_ns(&md)))
}

fn held(info: &FileInfo) -> Option<Held> {
    let (size, mtime_ns) = stat(&info.path)?;
    Some(Held {
        path: info.path.clone(),
        project: info.project.clone(),
        session_id: info.session_id.clone(),
        agent_id: info.agent.as_ref().map(|a| a.agent_id.clone()),
        size,
        mtime_ns,
    })
}

/// Where the status line's cache lives and what it reads.
pub struct Cache {
    pub dir: PathBuf,
    pub projects: PathBuf,
    pub routing_log: PathBuf,
}

impl Cache {
    pub fn new() -> Cache {
        Cache {
            dir: paths::statusline_cache(),
            projects: paths::claude_projects_dir(),
            routing_log: paths::routing_log(),
        }
    }

    fn state_path(&self) -> PathBuf {
        self.dir.join("state.json")
    }

    fn facts_path(&self) -> PathBuf {
        self.dir.join("facts.json")
    }

    fn load_state(&self, zone: &Zone) -> Option<State> {
        let text = fsutil::read_small_file(&self.state_path(), MAX_STATE_BYTES).ok()?;
        let s: State = serde_json::from_str(&text).ok()?;
        (s.format == FORMAT && s.version == VERSION && s.projects == self.projects && s.zone == zone.name())
            .then_some(s)
    }

    fn load_facts(&self, id: u64) -> FactsFile {
        fsutil::read_small_file(&self.facts_path(), MAX_FACTS_BYTES)
            .ok()
            .and_then(|t| serde_json::from_str::<FactsFile>(&t).ok())
            .filter(|f| f.id == id)
            .unwrap_or_default()
    }

    fn save_state(&self, state: &State) {
        if let Ok(s) = serde_json::to_vec(state) {
            let _ = fsutil::private_dir(&self.dir).and_then(|()| fsutil::write_private(&self.state_path(), &s));
        }
    }

    /// Writes the facts, then the index that names them: a reader never sees an index whose
    /// facts are not written yet. Best effort: a cache that cannot be written is rebuilt next time.
    fn save(&self, state: &State, facts: &FactsFile) {
        if fsutil::private_dir(&self.dir).is_err() {
            return;
        }
        let (Ok(f), Ok(s)) = (serde_json::to_vec(facts), serde_json::to_vec(state)) else { return };
        if fsutil::write_private(&self.facts_path(), &f).is_ok() {
            let _ = fsutil::write_private(&self.state_path(), &s);
        }
    }

    /// Today's figures and this session's cost, from the cache where nothing moved, else from the
    /// files that did; and whether the engine is down, when `probe` is given (it asks the engine,
    /// within the time it is given): from a probe at most [`PROBE_EVERY`] seconds old, else a new
    /// one. `now` is in unix seconds.
    pub fn run(
        &self,
        input: &Input,
        zone: &Zone,
        now: i64,
        probe: Option<&dyn Fn(Duration) -> bool>,
    ) -> (Figures, bool) {
        let day = zone.day_of(now);
        let since = zone.start_of(day);
        let current = input.transcript.as_deref().and_then(transcripts::main_file);
        let old = self.load_state(zone);
        let mut state = match &old {
            Some(s) if s.day == day && now - s.walked_at < WALK_EVERY => s.clone(),
            _ => self.walk(zone, day, since, now, old.as_ref()),
        };
        let mut moved = old.as_ref().is_none_or(|o| o.walked_at != state.walked_at);
        moved |= self.look_for_new_files(&mut state, since);
        if let Some(c) = &current
            && !state.sessions.contains(&c.session_id)
        {
            self.hold_session(&mut state, c);
            moved = true;
        }
        let changed: Vec<usize> = state
            .files
            .iter()
            .enumerate()
            .filter(|(_, h)| stat(&h.path) != Some((h.size, h.mtime_ns)))
            .map(|(i, _)| i)
            .collect();
        let log_now = stat(&self.routing_log);
        let mut probed = false;
        let down = match probe {
            None => false,
            Some(_) if state.probe.as_ref().is_some_and(|p| now - p.at < PROBE_EVERY) => {
                state.probe.as_ref().is_some_and(|p| p.down)
            }
            Some(ask) => {
                let down = !ask(PROBE_TIMEOUT);
                state.probe = Some(Probed { at: now, down });
                probed = true;
                down
            }
        };
        let figures = |state: &State| {
            let mut f = state.today.clone();
            f.session_usd = current.as_ref().and_then(|c| state.session_usd.get(&c.session_id).copied());
            f.last_prompt = current.as_ref().and_then(|c| state.session_last.get(&c.session_id).copied());
            f
        };
        if !moved && changed.is_empty() {
            if probed {
                self.save_state(&state);
            }
            return (figures(&state), down);
        }
        let mut facts = self.load_facts(state.facts_id);
        let keep: HashSet<&Path> = state.files.iter().map(|h| h.path.as_path()).collect();
        facts.files.retain(|p, _| keep.contains(p.as_path()));
        for h in state.files.iter_mut() {
            let stale = !facts.files.contains_key(&h.path) || stat(&h.path) != Some((h.size, h.mtime_ns));
            if !stale {
                continue;
            }
            // A transcript only grows: one that grew is read on; one the same size or smaller was
            // rewritten, and is read again whole.
            let prior = facts.files.remove(&h.path);
            let now_held = held(&h.info());
            let grew = now_held.as_ref().is_some_and(|n| n.size > h.size);
            if let Some(n) = now_held {
                *h = n;
            }
            facts.files.insert(h.path.clone(), read_on(&h.info(), prior.filter(|_| grew)));
        }
        let log_moved = self.read_log(&mut facts, log_now, since);
        if log_moved || !changed.is_empty() || old.as_ref().is_none_or(|o| o.files != state.files || o.day != day) {
            self.build(&mut state, &facts, since);
        }
        facts.id = facts_id(now, &state);
        state.facts_id = facts.id;
        self.save(&state, &facts);
        (figures(&state), down)
    }

    /// Lists every transcript written since `since`, keeps the sessions held whole that still
    /// have one, and watches the directories new files would appear in.
    fn walk(&self, zone: &Zone, day: i64, since: i64, now: i64, old: Option<&State>) -> State {
        let scope = Scope { since: chrono::DateTime::from_timestamp(since, 0), ..Scope::new(self.projects.clone()) };
        let mut state = State {
            format: FORMAT.into(),
            version: VERSION,
            projects: self.projects.clone(),
            zone: zone.name().to_string(),
            day,
            walked_at: now,
            facts_id: old.map_or(0, |o| o.facts_id),
            dirs: Vec::new(),
            files: transcripts::list(&scope).unwrap_or_default().iter().filter_map(held).collect(),
            sessions: Vec::new(),
            session_usd: BTreeMap::new(),
            session_last: BTreeMap::new(),
            today: Figures::default(),
            probe: old.and_then(|o| o.probe.clone()),
        };
        let active: HashSet<String> = state.files.iter().map(|h| h.session_id.clone()).collect();
        for s in old.map(|o| o.sessions.as_slice()).unwrap_or_default() {
            if !active.contains(s) {
                continue;
            }
            let Some(main) = state.files.iter().find(|h| &h.session_id == s && h.agent_id.is_none()).map(Held::info)
            else {
                continue;
            };
            self.hold_session(&mut state, &main);
        }
        self.watch(&mut state, &self.projects.clone());
        for p in transcripts::project_names(&Scope::new(self.projects.clone())) {
            self.watch(&mut state, &self.projects.join(p));
        }
        let sessions: HashSet<(String, String)> =
            state.files.iter().map(|h| (h.project.clone(), h.session_id.clone())).collect();
        for (project, session) in sessions {
            self.watch_session(&mut state, &project, &session);
        }
        state
    }

    /// Watches `dir` from now on; whether it is new to the watch list (and exists).
    fn watch(&self, state: &mut State, dir: &Path) -> bool {
        if state.dirs.iter().any(|w| w.path == dir) {
            return false;
        }
        let Some((_, mtime_ns)) = stat(dir) else { return false };
        state.dirs.push(Watched { path: dir.to_path_buf(), mtime_ns });
        true
    }

    /// A session's dir, its subagents dir and the folders below that (a Workflow agent's file sits
    /// two levels down), where its new subagent files appear; those new to the watch list.
    fn watch_session(&self, state: &mut State, project: &str, session: &str) -> Vec<PathBuf> {
        let dir = self.projects.join(project).join(session);
        let sub = dir.join("subagents");
        let mut dirs = vec![dir, sub];
        dirs.extend(transcripts::subagent_dirs(&self.projects, project, session));
        dirs.into_iter().filter(|d| self.watch(state, d)).collect()
    }

    /// Holds every file of the session whose main transcript `main` is, whatever its day.
    fn hold_session(&self, state: &mut State, main: &FileInfo) {
        let mut files = vec![main.clone()];
        files.extend(transcripts::session_subagents(&self.projects, &main.project, &main.session_id, None));
        for f in files {
            if !state.files.iter().any(|h| h.path == f.path)
                && let Some(h) = held(&f)
            {
                state.files.push(h);
            }
        }
        self.watch_session(state, &main.project, &main.session_id);
        state.sessions.push(main.session_id.clone());
    }

    /// Lists again each watched directory whose mtime moved, and each directory found new on the
    /// way, and holds the new transcripts in them (any written today; any of a session held
    /// whole). Whether anything was new.
    fn look_for_new_files(&self, state: &mut State, since: i64) -> bool {
        let since_time = Some(UNIX_EPOCH + Duration::from_secs(since.max(0) as u64));
        let mut queue: Vec<PathBuf> = state
            .dirs
            .iter_mut()
            .filter_map(|w| {
                let (_, now) = stat(&w.path)?;
                (now != w.mtime_ns).then(|| {
                    w.mtime_ns = now;
                    w.path.clone()
                })
            })
            .collect();
        let mut found = false;
        while let Some(dir) = queue.pop() {
            let rel: Vec<String> = dir
                .strip_prefix(&self.projects)
                .map(|r| r.iter().map(|c| c.to_string_lossy().to_string()).collect())
                .unwrap_or_default();
            let new: Vec<FileInfo> = match rel.as_slice() {
                [] => {
                    let all = Scope::new(self.projects.clone());
                    for p in transcripts::project_names(&all) {
                        let dir = self.projects.join(p);
                        if self.watch(state, &dir) {
                            queue.push(dir);
                        }
                    }
                    Vec::new()
                }
                [project] => {
                    let files = transcripts::project_files(&self.projects, project, since_time);
                    for f in &files {
                        queue.extend(self.watch_session(state, project, &f.session_id));
                    }
                    files
                }
                [project, session] => {
                    queue.extend(self.watch_session(state, project, session));
                    Vec::new()
                }
                [project, session, ..] => {
                    let whole = state.sessions.contains(session);
                    let (files, dirs) = transcripts::session_subagent_tree(
                        &self.projects,
                        project,
                        session,
                        if whole { None } else { since_time },
                    );
                    // A folder made since (a new workflow's) is watched from now on; its files
                    // are in `files` already.
                    for d in dirs {
                        self.watch(state, &d);
                    }
                    files
                }
            };
            for f in new {
                if !state.files.iter().any(|h| h.path == f.path)
                    && let Some(h) = held(&f)
                {
                    state.files.push(h);
                    found = true;
                }
            }
        }
        found
    }

    /// Today's routing log entries (agent and spawn), read again only when the log moved; whether
    /// it did.
    fn read_log(&self, facts: &mut FactsFile, now: Option<(u64, u128)>, since: i64) -> bool {
        let Some((size, mtime)) = now else {
            return facts.log.take().is_some();
        };
        if let Some((s, m, _)) = &facts.log
            && (*s, *m) == (size, mtime)
        {
            return false;
        }
        let scope = Scope { since: chrono::DateTime::from_timestamp(since, 0), ..Scope::new(self.projects.clone()) };
        let mut log = SpawnLog::read(&self.routing_log, &scope);
        let today: HashSet<String> =
            log.entries.iter().filter(|e| e.is_agent()).filter_map(|e| e.call.tool_use_id.clone()).collect();
        log.entries.retain(|e| e.is_agent() || e.call.tool_use_id.as_ref().is_some_and(|t| today.contains(t)));
        for e in &mut log.entries {
            e.prompt = None;
        }
        facts.log = Some((size, mtime, log));
        true
    }

    /// Today's figures from every held file's facts (their requests, prompts and spawns of today),
    /// and each session held whole's cost from all of its files.
    fn build(&self, state: &mut State, facts: &FactsFile, since: i64) {
        let Ok(prices) = Prices::load(None) else { return };
        let from = Minute::try_from(since.max(0) / 60).unwrap_or(0);
        let mut today = Aggregator::new();
        let mut sessions: HashMap<&str, Aggregator> = HashMap::new();
        let mut last = BTreeMap::new();
        for h in &state.files {
            let Some(read) = facts.files.get(&h.path) else { continue };
            let info = h.info();
            today.add(&info, since_minute(&read.resume.facts, from));
            if state.sessions.contains(&h.session_id) {
                sessions.entry(h.session_id.as_str()).or_default().add(&info, read.resume.facts.clone());
                if h.agent_id.is_none()
                    && let Some(p) = read.resume.facts.prompts.last()
                {
                    last.insert(h.session_id.clone(), LastPrompt { hinted: p.hinted, tier: p.tier, long: p.long });
                }
            }
        }
        let empty = SpawnLog::default();
        let log = facts.log.as_ref().map_or(&empty, |(_, _, l)| l);
        let r = Report::build(&today, &prices, &Stats::default(), 0.0, BTreeMap::new(), log);
        let enforced = &r.spawns.enforced_savings;
        state.today = Figures {
            session_usd: None,
            today_usd: r.totals.all.cost_usd,
            saved_usd: match (r.savings.realised_usd, enforced.spawns_priced) {
                (Some(v), _) => Some(v + enforced.usd),
                (None, 0) => None,
                (None, _) => Some(enforced.usd),
            },
            routed_today: r.savings.followed_spawns_priced + enforced.spawns_priced > 0,
            last_prompt: None,
        };
        state.session_last = last;
        state.session_usd = sessions
            .into_iter()
            .map(|(id, agg)| {
                let r = Report::build(&agg, &prices, &Stats::default(), 0.0, BTreeMap::new(), &empty);
                (id.to_string(), r.totals.all.cost_usd)
            })
            .collect();
    }
}

impl Default for Cache {
    fn default() -> Self {
        Cache::new()
    }
}

/// An id for a facts file: a reader can tell it from the one an older index names.
fn facts_id(now: i64, state: &State) -> u64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    (now as u64).wrapping_mul(1_000_003) ^ u64::from(nanos) ^ (state.files.len() as u64) << 48
}

/// Reads `info` on from where `prior` stopped, or from the start when there is none (or the file is
/// shorter than what was read of it).
fn read_on(info: &FileInfo, prior: Option<Read>) -> Read {
    let (offset, resume) = match prior {
        Some(p) if p.offset <= info.size => (p.offset, p.resume),
        _ => (0, Resume::default()),
    };
    let mut info = info.clone();
    if let Some(agent) = info.agent.as_mut()
        && offset == 0
    {
        // A new read of a subagent file takes its .meta.json again.
        let meta_path = info.path.with_file_name(format!("agent-{}.meta.json", agent.agent_id));
        agent.meta = fsutil::read_text(&meta_path, 64 * 1024, fsutil::Links::Refuse)
            .ok()
            .and_then(|t| serde_json::from_str::<AgentMeta>(&t).ok());
    }
    let mut collector = if offset == 0 { Collector::new(&info) } else { Collector::resume(&info, resume) };
    let (_, next) = transcripts::read_from(&info, offset, &mut collector);
    Read { offset: next, resume: collector.into_resume() }
}

/// A file's facts from minute `from` on.
fn since_minute(f: &FileFacts, from: Minute) -> FileFacts {
    let mut out = f.clone();
    out.usage.retain(|u| u.minute >= from);
    out.prompts.retain(|p| p.minute >= from);
    out.spawns.retain(|s| s.minute >= from);
    out
}
