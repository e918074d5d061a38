//! The one streaming reader of Claude Code transcripts, shared by `system1 report` and
//! `system1 outcomes`.
//!
//! Layout, as Claude Code writes it: `<projects>/<project>/<session>.jsonl` is a session's main
//! transcript; `<projects>/<project>/<session>/subagents/agent-<id>.jsonl` is one subagent's, with
//! `agent-<id>.meta.json` beside it (`agentType`, `description`, `toolUseId`, `spawnDepth`).
//!
//! How to use it:
//! 1. [`list`] walks the projects dir (by default [`crate::paths::claude_projects_dir`], which honours
//!    `CLAUDE_CONFIG_DIR`) and returns one [`FileInfo`] per transcript, filtered by [`Scope`]
//!    (project; files last written before `since` are left out without being opened).
//! 2. [`read`] streams those files on a pool of threads (bounded by `available_parallelism`), one file
//!    per thread at a time, line by line through a reused buffer, so memory stays flat whatever the
//!    history's size. For each file it asks the caller's factory for a [`FileVisitor`], feeds it the
//!    file's lines in order, and hands the visitor's [`FileVisitor::finish`] output back to the calling
//!    thread through `on_file` as files complete (in completion order, not file order).
//! 3. Per line: a line that does not even end in `}` is counted malformed (a torn write) without being
//!    looked at; then [`FileVisitor::wants`] sees the raw bytes and may refuse it (cheap substring tests
//!    with [`Needle`], before any JSON parsing: most of a history is tool output nobody here needs);
//!    then the line is parsed into the typed [`Line`] (borrowing from the buffer); a line that fails to
//!    parse is counted malformed and skipped; a line whose `timestamp` falls outside `since..until` is
//!    skipped; the rest go to [`FileVisitor::line`] with the raw bytes too, for a consumer that needs a
//!    field [`Line`] does not name (`serde_json::from_slice::<Value>(raw)`).
//! 4. A file whose last line has no newline and does not parse was cut off mid-write: it counts as
//!    truncated. Unreadable files are counted too. Nothing here is ever fatal except a missing
//!    projects directory, which [`list`] reports.
//!
//! The same session may appear in several files (`--fork-session` copies the history with only
//! `sessionId` changed), and one API reply is written once per content block: deduplicating is the
//! consumer's job, keyed on `message.id` + `requestId` for usage and `uuid` for other lines.

/// The typed line and its parts (`Block`, `AgentInput`, `AgentResult`, `Attachment`, `Usage`).
pub mod line;

pub use line::{Line, Tokens};

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::SystemTime;

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use serde::Deserialize;

use crate::error::{Error, Result};

/// Which transcripts to read.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// The projects dir (`~/.claude/projects` unless given).
    pub dir: Option<PathBuf>,
    /// Keep lines at or after this instant (and skip files last written before it).
    pub since: Option<DateTime<Utc>>,
    /// Keep lines strictly before this instant.
    pub until: Option<DateTime<Utc>>,
    /// Keep projects whose directory name contains this (a path is first encoded the way Claude Code
    /// names project dirs: every `/`, `\`, `:` and `.` becomes `-`).
    pub project: Option<String>,
    /// Reader threads; 0 means `available_parallelism`.
    pub threads: usize,
}

impl Scope {
    pub fn projects_dir(&self) -> PathBuf {
        self.dir.clone().unwrap_or_else(crate::paths::claude_projects_dir)
    }

    fn project_matches(&self, name: &str) -> bool {
        match &self.project {
            None => true,
            Some(p) => {
                let encoded = encode_project(p);
                name == encoded || name.contains(p.as_str()) || (!encoded.is_empty() && name.contains(&encoded))
            }
        }
    }
}

/// A `--since`/`--until` value: a date means its midnight UTC (`end_of_day` moves it to the next
/// midnight, so that `--until` takes the day whole); anything else must be an RFC 3339 time.
pub fn parse_when(s: &str, flag: &str, end_of_day: bool) -> Result<DateTime<Utc>> {
    if let Ok(d) = NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d") {
        let d = if end_of_day { d.succ_opt().unwrap_or(d) } else { d };
        return Ok(d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc());
    }
    DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| Error::usage(format!("{flag} {s:?}: expected a date (2026-11-01) or an RFC 3339 time")))
}

/// How Claude Code turns a working directory into a project directory name.
pub fn encode_project(path: &str) -> String {
    path.chars().map(|c| if matches!(c, '/' | '\\' | ':' | '.') { '-' } else { c }).collect()
}

/// One transcript file.
#[derive(Debug, Clone)]
pub struct FileInfo {
    pub path: PathBuf,
    /// The project directory's name (the encoded cwd).
    pub project: String,
    /// The session the file belongs to (a subagent file: its parent session).
    pub session_id: String,
    /// Present for subagent files.
    pub agent: Option<AgentFile>,
    pub size: u64,
}

impl FileInfo {
    pub fn is_subagent(&self) -> bool {
        self.agent.is_some()
    }
}

#[derive(Debug, Clone)]
pub struct AgentFile {
    /// From the file name `agent-<id>.jsonl`.
    pub agent_id: String,
    /// The `.meta.json` beside it, when present and readable.
    pub meta: Option<AgentMeta>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AgentMeta {
    /// The parent's Agent tool use that spawned this subagent (the only field read: the others
    /// are left unparsed, so that an odd one cannot cost this one).
    #[serde(rename = "toolUseId")]
    pub tool_use_id: Option<String>,
}

/// Counts for a whole read (and, per file, in [`FileVisitor::finish`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub files: u64,
    pub subagent_files: u64,
    pub bytes: u64,
    pub lines: u64,
    /// Lines parsed as JSON (the rest were refused by `wants` before parsing, or malformed).
    pub parsed: u64,
    pub malformed_lines: u64,
    pub truncated_files: u64,
    pub unreadable_files: u64,
    /// Parsed lines left out by `since`/`until`.
    pub out_of_range: u64,
}

impl Stats {
    pub fn add(&mut self, o: &Stats) {
        self.files += o.files;
        self.subagent_files += o.subagent_files;
        self.bytes += o.bytes;
        self.lines += o.lines;
        self.parsed += o.parsed;
        self.malformed_lines += o.malformed_lines;
        self.truncated_files += o.truncated_files;
        self.unreadable_files += o.unreadable_files;
        self.out_of_range += o.out_of_range;
    }
}

/// What a consumer does with one file's lines.
pub trait FileVisitor: Send {
    type Output: Send;
    /// Called on the raw line before parsing; `false` skips it. Only refuse lines that cannot matter.
    fn wants(&mut self, _raw: &[u8]) -> bool {
        true
    }
    /// Called for each wanted, parsed, in-range line, in file order.
    fn line(&mut self, line: &Line<'_>, raw: &[u8]);
    /// Called once after the last line (also for unreadable or truncated files).
    fn finish(self, stats: &Stats) -> Self::Output;
}

/// A precompiled substring test for [`FileVisitor::wants`]. A needle such as `"resolvedModel"` with
/// its quotes can only match a key or a whole string value, because quotes inside JSON strings are
/// escaped: that makes these tests safe pre-filters.
pub struct Needle(memchr::memmem::Finder<'static>);

impl Needle {
    pub fn new(s: &'static str) -> Self {
        Needle(memchr::memmem::Finder::new(s.as_bytes()))
    }
    pub fn is_in(&self, haystack: &[u8]) -> bool {
        self.0.find(haystack).is_some()
    }
}

/// Every transcript under the scope's projects dir, largest first (so the pool finishes evenly).
pub fn list(scope: &Scope) -> Result<Vec<FileInfo>> {
    let root = scope.projects_dir();
    let entries = std::fs::read_dir(&root).map_err(|e| {
        Error::failure(format!("cannot read the Claude Code transcripts at {}: {e}", root.display()))
            .with_hint("pass --dir, or set CLAUDE_CONFIG_DIR to the Claude Code directory")
    })?;
    let since = scope.since.map(SystemTime::from);
    let mut files = Vec::new();
    for entry in entries.flatten() {
        let project_dir = entry.path();
        if !project_dir.is_dir() {
            continue;
        }
        let project = entry.file_name().to_string_lossy().to_string();
        if !scope.project_matches(&project) {
            continue;
        }
        // Main files sit at depth 1, subagent files at depth 3 (<session>/subagents/agent-*.jsonl).
        for e in walkdir::WalkDir::new(&project_dir).min_depth(1).max_depth(3).into_iter().flatten() {
            if !e.file_type().is_file() {
                continue;
            }
            let name = e.file_name().to_string_lossy();
            let Some(stem) = name.strip_suffix(".jsonl") else { continue };
            let Ok(md) = e.metadata() else { continue };
            if let (Some(since), Ok(mtime)) = (since, md.modified())
                && mtime < since
            {
                continue;
            }
            let info = match e.depth() {
                1 => FileInfo {
                    path: e.path().to_path_buf(),
                    project: project.clone(),
                    session_id: stem.to_string(),
                    agent: None,
                    size: md.len(),
                },
                3 => {
                    let Some(agent_id) = stem.strip_prefix("agent-") else { continue };
                    let parent = e.path().parent();
                    if parent.and_then(|p| p.file_name()).is_none_or(|n| n != "subagents") {
                        continue;
                    }
                    let session_id = parent
                        .and_then(|p| p.parent())
                        .and_then(|p| p.file_name())
                        .map(|n| n.to_string_lossy().to_string())
                        .unwrap_or_default();
                    let meta = read_meta(&e.path().with_file_name(format!("agent-{agent_id}.meta.json")));
                    FileInfo {
                        path: e.path().to_path_buf(),
                        project: project.clone(),
                        session_id,
                        agent: Some(AgentFile { agent_id: agent_id.to_string(), meta }),
                        size: md.len(),
                    }
                }
                _ => continue,
            };
            files.push(info);
        }
    }
    files.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.path.cmp(&b.path)));
    Ok(files)
}

fn read_meta(path: &Path) -> Option<AgentMeta> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Streams `files` through visitors made by `make`, on a pool of threads; `on_file` runs on the
/// calling thread as each file completes. Returns the summed counts.
pub fn read<V, M, F>(files: Vec<FileInfo>, scope: &Scope, make: M, mut on_file: F) -> Stats
where
    V: FileVisitor,
    M: Fn(&FileInfo) -> V + Sync,
    F: FnMut(&FileInfo, V::Output, &Stats),
{
    let threads = if scope.threads > 0 {
        scope.threads
    } else {
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    }
    .clamp(1, files.len().max(1));
    let range = TimeRange::new(scope.since, scope.until);
    let next = AtomicUsize::new(0);
    let mut total = Stats::default();
    std::thread::scope(|s| {
        // Bounded, so finished outputs never pile up faster than the caller folds them in.
        let (tx, rx) = mpsc::sync_channel::<(usize, V::Output, Stats)>(threads * 2);
        for _ in 0..threads {
            let tx = tx.clone();
            let (files, make, next, range) = (&files, &make, &next, &range);
            s.spawn(move || {
                let mut buf = Vec::with_capacity(64 * 1024);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(info) = files.get(i) else { break };
                    let mut visitor = make(info);
                    let stats = read_file(info, &mut visitor, range, &mut buf);
                    let out = visitor.finish(&stats);
                    if tx.send((i, out, stats)).is_err() {
                        break;
                    }
                    // One huge line must not pin its buffer for the rest of the run.
                    if buf.capacity() > 16 << 20 {
                        buf = Vec::with_capacity(64 * 1024);
                    }
                }
            });
        }
        drop(tx);
        for (i, out, stats) in rx {
            total.add(&stats);
            on_file(&files[i], out, &stats);
        }
    });
    total
}

/// `since <= t < until`, comparing the ISO-8601 text directly when it has Claude Code's own shape
/// (`2026-11-30T10:41:30.123Z`), and parsing it otherwise.
struct TimeRange {
    since: Option<(DateTime<Utc>, String)>,
    until: Option<(DateTime<Utc>, String)>,
}

impl TimeRange {
    fn new(since: Option<DateTime<Utc>>, until: Option<DateTime<Utc>>) -> Self {
        let text = |t: DateTime<Utc>| (t, t.to_rfc3339_opts(SecondsFormat::Millis, true));
        TimeRange { since: since.map(text), until: until.map(text) }
    }

    fn is_unbounded(&self) -> bool {
        self.since.is_none() && self.until.is_none()
    }

    /// Lines without a timestamp are kept: they carry no time to judge by.
    fn contains(&self, ts: Option<&str>) -> bool {
        let Some(ts) = ts else { return true };
        let canonical = ts.len() == 24 && ts.as_bytes()[10] == b'T' && ts.ends_with('Z');
        let parsed =
            if canonical { None } else { DateTime::parse_from_rfc3339(ts).ok().map(|t| t.with_timezone(&Utc)) };
        if !canonical && parsed.is_none() {
            return true;
        }
        if let Some((t, text)) = &self.since {
            let before = match parsed {
                Some(p) => p < *t,
                None => ts < text.as_str(),
            };
            if before {
                return false;
            }
        }
        if let Some((t, text)) = &self.until {
            let after = match parsed {
                Some(p) => p >= *t,
                None => ts >= text.as_str(),
            };
            if after {
                return false;
            }
        }
        true
    }
}

fn read_file<V: FileVisitor>(info: &FileInfo, visitor: &mut V, range: &TimeRange, buf: &mut Vec<u8>) -> Stats {
    let mut stats = Stats { files: 1, subagent_files: u64::from(info.is_subagent()), ..Stats::default() };
    let Ok(file) = File::open(&info.path) else {
        stats.unreadable_files = 1;
        return stats;
    };
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    loop {
        buf.clear();
        let n = match reader.read_until(b'\n', buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(_) => {
                stats.unreadable_files = 1;
                break;
            }
        };
        stats.bytes += n as u64;
        let ends_with_newline = buf.last() == Some(&b'\n');
        let raw = trim_ascii_end(buf);
        if raw.is_empty() {
            continue;
        }
        stats.lines += 1;
        if raw.last() != Some(&b'}') {
            stats.malformed_lines += 1;
            if !ends_with_newline {
                stats.truncated_files = 1;
            }
            continue;
        }
        if !visitor.wants(raw) {
            continue;
        }
        stats.parsed += 1;
        match line::parse(raw) {
            Ok(parsed) => {
                if !range.is_unbounded() && !range.contains(parsed.timestamp.as_deref()) {
                    stats.out_of_range += 1;
                    continue;
                }
                visitor.line(&parsed, raw);
            }
            Err(_) => {
                stats.parsed -= 1;
                stats.malformed_lines += 1;
                if !ends_with_newline {
                    stats.truncated_files = 1;
                }
            }
        }
    }
    stats
}

fn trim_ascii_end(b: &[u8]) -> &[u8] {
    let mut end = b.len();
    while end > 0 && b[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    &b[..end]
}

#[cfg(test)]
mod tests {
    use super::line::Usage;
    use super::*;

    #[test]
    fn time_range_compares_canonical_and_offset_timestamps() {
        let since = DateTime::parse_from_rfc3339("2026-01-02T00:00:00Z").unwrap().with_timezone(&Utc);
        let until = DateTime::parse_from_rfc3339("2026-01-03T00:00:00Z").unwrap().with_timezone(&Utc);
        let r = TimeRange::new(Some(since), Some(until));
        assert!(!r.contains(Some("2026-01-01T23:59:59.999Z")));
        assert!(r.contains(Some("2026-01-02T00:00:00.000Z")));
        assert!(r.contains(Some("2026-01-02T12:00:00.000Z")));
        assert!(!r.contains(Some("2026-01-03T00:00:00.000Z")));
        // An offset form is parsed: 01:00+02:00 is 23:00Z the day before.
        assert!(!r.contains(Some("2026-01-02T01:00:00+02:00")));
        assert!(r.contains(Some("2026-01-02T03:00:00+02:00")));
        assert!(r.contains(None));
    }

    #[test]
    fn when_is_a_date_or_a_time() {
        let at = |s, end| parse_when(s, "--since", end).map(|t| t.to_rfc3339());
        assert_eq!(at("2026-10-01", false).unwrap(), "2026-10-01T00:00:00+00:00");
        assert_eq!(at("2026-10-01", true).unwrap(), "2026-10-02T00:00:00+00:00");
        assert_eq!(at("2026-10-01T12:00:00+02:00", false).unwrap(), "2026-10-01T10:00:00+00:00");
        assert!(at("last week", false).unwrap_err().to_string().contains("--since"));
    }

    #[test]
    fn project_filter_accepts_names_and_paths() {
        let scope = Scope { project: Some("/home/u/w1".into()), ..Scope::default() };
        assert!(scope.project_matches("-home-u-w1"));
        assert!(!scope.project_matches("-home-u-w2"));
        let scope = Scope { project: Some("w1".into()), ..Scope::default() };
        assert!(scope.project_matches("-home-u-w1"));
        assert_eq!(encode_project("/home/u/my.repo"), "-home-u-my-repo");
    }

    #[test]
    fn usage_splits_cache_writes_by_ttl_and_falls_back_to_5m() {
        let u: Usage = serde_json::from_str(
            r#"{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":300,"cache_read_input_tokens":7,
                "cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":200}}"#,
        )
        .unwrap();
        assert_eq!(
            u.tokens(),
            Tokens { input: 10, output: 5, cache_write_5m: 100, cache_write_1h: 200, cache_read: 7 }
        );
        let old: Usage = serde_json::from_str(r#"{"input_tokens":1,"cache_creation_input_tokens":40}"#).unwrap();
        assert_eq!(old.tokens().cache_write_5m, 40);
        assert_eq!(old.tokens().cache_write_1h, 0);
    }

    #[test]
    fn line_parses_blocks_lazily_and_classifies_prompts() {
        let raw = br#"{"type":"assistant","requestId":"r1","message":{"id":"m1","model":"claude-opus-4-8","content":[{"type":"text","text":"hi\nthere"},{"type":"tool_use","id":"t1","name":"Agent","input":{"model":"haiku","subagent_type":"Explore","prompt":"x","extra":{"a":[1,2]}}}],"usage":{"input_tokens":3}}}"#;
        let l = line::parse(raw).unwrap();
        assert!(l.is("assistant"));
        let blocks = l.blocks();
        assert_eq!(blocks[0].text().as_deref(), Some("hi\nthere"));
        assert!(blocks[1].is_agent_spawn());
        let input = blocks[1].agent_input();
        assert_eq!(input.model.as_deref(), Some("haiku"));
        assert_eq!(input.subagent_type.as_deref(), Some("Explore"));

        let prompt = line::parse(br#"{"type":"user","message":{"role":"user","content":"fix \"it\""}}"#).unwrap();
        assert!(prompt.is_user_prompt());
        let tool = line::parse(
            br#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#,
        )
        .unwrap();
        assert!(!tool.is_user_prompt());
        let meta = line::parse(br#"{"type":"user","isMeta":true,"message":{"content":"Caveat"}}"#).unwrap();
        assert!(!meta.is_user_prompt());
        let notif = line::parse(br#"{"type":"user","message":{"content":"<task-notification>x</task-notification>"}}"#)
            .unwrap();
        assert!(!notif.is_user_prompt());
        let image = line::parse(
            br#"{"type":"user","message":{"content":[{"type":"text","text":"see"},{"type":"image","source":{}}]}}"#,
        )
        .unwrap();
        assert!(image.is_user_prompt());
    }

    #[test]
    fn odd_field_types_do_not_make_a_line_unreadable() {
        let raw = br#"{"type":"user","toolUseResult":"Error: boom","message":{"content":[{"type":"tool_result","tool_use_id":"t","is_error":true,"content":[{"type":"text","text":"boom"}]}]}}"#;
        let l = line::parse(raw).unwrap();
        assert!(l.agent_result().is_none());
        assert_eq!(l.blocks()[0].text().as_deref(), Some("boom"));
        let agent = br#"{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Agent","id":"t","input":{"model":7}}]}}"#;
        assert_eq!(line::parse(agent).unwrap().blocks()[0].agent_input().model, None);
    }

    struct Collect {
        session: String,
        subagent: bool,
        kinds: Vec<String>,
        needle: Needle,
    }

    impl FileVisitor for Collect {
        type Output = (String, bool, Vec<String>, Stats);
        fn wants(&mut self, raw: &[u8]) -> bool {
            !self.needle.is_in(raw)
        }
        fn line(&mut self, line: &Line<'_>, _raw: &[u8]) {
            self.kinds.push(line.kind.as_deref().unwrap_or("?").to_string());
        }
        fn finish(self, stats: &Stats) -> Self::Output {
            (self.session, self.subagent, self.kinds, stats.clone())
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("s1-transcripts-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn read_walks_the_layout_counts_bad_lines_and_filters_by_time() {
        let root = scratch("layout");
        let proj = root.join("-home-u-w1");
        std::fs::create_dir_all(proj.join("s1/subagents")).unwrap();
        std::fs::write(
            proj.join("s1.jsonl"),
            concat!(
                "{\"type\":\"user\",\"timestamp\":\"2026-01-01T00:00:00.000Z\"}\n",
                "{\"type\":\"queue-operation\",\"skipme\":1}\n",
                "not json at all\n",
                "{\"type\": broken}\n",
                "\n",
                "{\"type\":\"assistant\",\"timestamp\":\"2026-03-01T00:00:00.000Z\"}\n",
            ),
        )
        .unwrap();
        std::fs::write(
            proj.join("s1/subagents/agent-a1.jsonl"),
            "{\"type\":\"assistant\",\"isSidechain\":true}\n{\"type\":\"assis",
        )
        .unwrap();
        std::fs::write(
            proj.join("s1/subagents/agent-a1.meta.json"),
            r#"{"agentType":"Explore","toolUseId":"toolu_1","spawnDepth":1}"#,
        )
        .unwrap();
        std::fs::write(proj.join("s1/subagents/notes.txt"), "ignored").unwrap();
        std::fs::create_dir_all(root.join("-other")).unwrap();
        std::fs::write(root.join("-other/s2.jsonl"), "{\"type\":\"user\"}\n").unwrap();

        let scope = Scope { dir: Some(root.clone()), project: Some("w1".into()), ..Scope::default() };
        let files = list(&scope).unwrap();
        assert_eq!(files.len(), 2);
        let agent = files.iter().find(|f| f.is_subagent()).unwrap();
        assert_eq!(agent.session_id, "s1");
        let meta = agent.agent.as_ref().unwrap().meta.as_ref().unwrap();
        assert_eq!(meta.tool_use_id.as_deref(), Some("toolu_1"));

        let make = |f: &FileInfo| Collect {
            session: f.session_id.clone(),
            subagent: f.is_subagent(),
            kinds: Vec::new(),
            needle: Needle::new("\"skipme\""),
        };
        let mut outs = Vec::new();
        let total = read(files.clone(), &scope, make, |_, out, _| outs.push(out));
        outs.sort_by_key(|o| o.1);
        assert_eq!(outs[0].2, vec!["user", "assistant"]);
        assert_eq!(outs[1].2, vec!["assistant"]);
        assert_eq!(outs[0].3.malformed_lines, 2);
        assert_eq!(outs[0].3.truncated_files, 0);
        assert_eq!(outs[1].3.truncated_files, 1);
        assert_eq!(total.files, 2);
        assert_eq!(total.subagent_files, 1);
        assert_eq!(total.malformed_lines, 3);
        assert_eq!(total.lines, 7);

        let since = DateTime::parse_from_rfc3339("2026-02-01T00:00:00Z").unwrap().with_timezone(&Utc);
        let ranged = Scope { since: Some(since), ..scope.clone() };
        let mut outs = Vec::new();
        let total = read(files, &ranged, make, |_, out, _| outs.push(out));
        let main = outs.iter().find(|o| !o.1).unwrap();
        assert_eq!(main.2, vec!["assistant"]);
        assert_eq!(total.out_of_range, 1);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_missing_projects_dir_is_a_clear_error() {
        let scope = Scope { dir: Some(PathBuf::from("/nonexistent/system1/projects")), ..Scope::default() };
        let err = list(&scope).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/system1/projects"));
    }
}
