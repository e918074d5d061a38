//! The one streaming reader of Claude Code transcripts, shared by `system1 report` and
//! `system1 outcomes`.
//!
//! Layout, as Claude Code writes it: `<projects>/<project>/<session>.jsonl` is a session's main
//! transcript; `<projects>/<project>/<session>/subagents/agent-<id>.jsonl` is one subagent's, with
//! `agent-<id>.meta.json` beside it (`agentType`, `description`, `toolUseId`, `spawnDepth`). A
//! subagent's file may also sit in a folder below `subagents/` (a Workflow agent's in
//! `subagents/workflows/<wf>/`), with its `.meta.json` beside it there.
//!
//! How to use it:
//! 1. [`list`] walks the projects dir the [`Scope`] names (the product passes Claude Code's, which
//!    `CLAUDE_CONFIG_DIR` moves) and returns one [`FileInfo`] per transcript, filtered by [`Scope`]
//!    (project; files last written before `since` are left out without being opened). Projects, then
//!    session dirs, are listed on the reader pool, and each subagent's `.meta.json` is read there too
//!    (at most 64 KB of it).
//! 2. [`read`] streams those files on a pool of threads (bounded by `available_parallelism`), one file
//!    per thread at a time, line by line out of one reused buffer per thread (no copy, one read for a
//!    small file), so memory stays flat whatever the history's size. A file is read up to the size it
//!    was listed with (past it only to finish a line cut there). For each file it asks the caller's
//!    factory for a [`FileVisitor`], feeds it the file's lines in order, and hands the visitor's
//!    [`FileVisitor::finish`] output back to the calling thread through `on_file` as files complete
//!    (in completion order, not file order; in batches, so tens of thousands of small files do not
//!    cost a thread hand-over each).
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

mod claude_code;
/// The typed line and its parts (`Block`, `AgentInput`, `AgentResult`, `Attachment`, `Usage`).
pub mod line;

pub use claude_code::{Effort, SPAWN_TOOLS, is_spawn_tool};
pub use line::{Line, Tokens};

use std::fmt;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use system1_fsread::Links;

/// Which transcripts to read.
#[derive(Debug, Clone)]
pub struct Scope {
    /// The projects dir (Claude Code's is `~/.claude/projects`).
    pub dir: PathBuf,
    /// Keep lines at or after this instant (and skip files last written before it).
    pub since: Option<DateTime<Utc>>,
    /// Keep lines strictly before this instant.
    pub until: Option<DateTime<Utc>>,
    /// Keep projects whose directory name contains this (a path is first encoded the way Claude Code
    /// names project dirs: every character but an ASCII letter or digit becomes `-`).
    pub project: Option<String>,
    /// Reader threads; 0 means `available_parallelism`.
    pub threads: usize,
}

impl Scope {
    /// Every transcript under `dir`: no time bounds, every project, one reader per core.
    pub fn new(dir: PathBuf) -> Scope {
        Scope { dir, since: None, until: None, project: None, threads: 0 }
    }

    /// Reader threads: as asked, else one per available core.
    fn reader_threads(&self) -> usize {
        if self.threads > 0 { self.threads } else { std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) }
    }

    /// Whether the project directory `name` (an encoded cwd) is in scope.
    pub fn project_matches(&self, name: &str) -> bool {
        match &self.project {
            None => true,
            Some(p) => {
                let encoded = encode_project(p);
                name == encoded || name.contains(p.as_str()) || (!encoded.is_empty() && name.contains(&encoded))
            }
        }
    }
}

/// The names of every project directory under the scope's projects dir, sorted.
pub fn project_names(scope: &Scope) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(&scope.dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// How Claude Code turns a working directory into a project directory name: every character but
/// an ASCII letter or digit becomes `-` (`/home/u/web_app.v2` is `-home-u-web-app-v2`).
pub fn encode_project(path: &str) -> String {
    // Claude Code replaces per UTF-16 unit: a character outside the BMP becomes two dashes.
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            out.extend(std::iter::repeat_n('-', c.len_utf16()));
        }
    }
    out
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
    /// The parent's Agent tool use that spawned this subagent. Each field is read leniently and
    /// the others are left unparsed, so that an odd one cannot cost the rest.
    #[serde(rename = "toolUseId", deserialize_with = "line::lenient_string")]
    pub tool_use_id: Option<String>,
    /// The subagent type (`general-purpose`, `Explore`, a plugin's own agent).
    #[serde(rename = "agentType", deserialize_with = "line::lenient_string")]
    pub agent_type: Option<String>,
    /// The effort level the Agent call named (`"low"`), when it named one (2.1.332 and later).
    #[serde(deserialize_with = "line::lenient_string")]
    pub effort: Option<String>,
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

/// Why [`list`] found no transcripts at all: its projects dir cannot be read.
#[derive(Debug)]
pub struct ListError {
    pub root: PathBuf,
    pub source: std::io::Error,
}

impl fmt::Display for ListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot read the Claude Code transcripts at {}: {}", self.root.display(), self.source)
    }
}

impl std::error::Error for ListError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Every transcript under the scope's projects dir, largest first (so the pool finishes evenly).
///
/// Listing runs on the reader pool too: real histories hold tens of thousands of subagent files,
/// each with a `.meta.json` to read, and one thread doing that alone would be most of the run.
pub fn list(scope: &Scope) -> Result<Vec<FileInfo>, ListError> {
    let root = &scope.dir;
    let entries = std::fs::read_dir(root).map_err(|source| ListError { root: root.clone(), source })?;
    let since = scope.since.map(SystemTime::from);
    let projects: Vec<(PathBuf, String)> = entries
        .flatten()
        .filter_map(|entry| {
            let dir = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            (dir.is_dir() && scope.project_matches(&name)).then_some((dir, name))
        })
        .collect();
    let threads = scope.reader_threads();
    let mut files = Vec::new();
    let mut sessions = Vec::new();
    for (main, dirs) in parallel(&projects, threads, |(dir, project)| list_project(dir, project, since)) {
        files.extend(main);
        sessions.extend(dirs);
    }
    for agents in parallel(&sessions, threads, |session| list_subagents(session, since)) {
        files.extend(agents);
    }
    files.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.path.cmp(&b.path)));
    Ok(files)
}

/// The main transcripts of one project directory (`<root>/<project>/*.jsonl`), without those last
/// written before `since`.
pub fn project_files(root: &Path, project: &str, since: Option<SystemTime>) -> Vec<FileInfo> {
    list_project(&root.join(project), project, since).0
}

/// The subagent transcripts of one session (`<root>/<project>/<session>/subagents/`, at any depth
/// below it), each with its `.meta.json` read, without those last written before `since`.
pub fn session_subagents(root: &Path, project: &str, session_id: &str, since: Option<SystemTime>) -> Vec<FileInfo> {
    let session = SessionDir {
        dir: root.join(project).join(session_id),
        project: project.to_string(),
        session_id: session_id.to_string(),
    };
    list_subagents(&session, since)
}

/// The main transcript at `path` (`<root>/<project>/<session>.jsonl`) as listed, when it is one.
pub fn main_file(path: &Path) -> Option<FileInfo> {
    let session_id = path.file_name()?.to_str()?.strip_suffix(".jsonl")?.to_string();
    let project = path.parent()?.file_name()?.to_str()?.to_string();
    let md = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
    Some(FileInfo { path: path.to_path_buf(), project, session_id, agent: None, size: md.len() })
}

/// A directory beside the main files that may hold `subagents/`: its path, project and session.
struct SessionDir {
    dir: PathBuf,
    project: String,
    session_id: String,
}

/// One project dir: its main transcripts (`<session>.jsonl`) and its session dirs. Symlinks below
/// the project dir are not followed.
fn list_project(dir: &Path, project: &str, since: Option<SystemTime>) -> (Vec<FileInfo>, Vec<SessionDir>) {
    let (mut main, mut sessions) = (Vec::new(), Vec::new());
    let Ok(entries) = std::fs::read_dir(dir) else { return (main, sessions) };
    for e in entries.flatten() {
        let Ok(kind) = e.file_type() else { continue };
        let name = e.file_name();
        let name = name.to_string_lossy();
        if kind.is_dir() {
            sessions.push(SessionDir { dir: e.path(), project: project.to_string(), session_id: name.to_string() });
            continue;
        }
        let Some(stem) = name.strip_suffix(".jsonl") else { continue };
        if !kind.is_file() {
            continue;
        }
        let Some(size) = listed_size(&e, since) else { continue };
        main.push(FileInfo {
            path: e.path(),
            project: project.to_string(),
            session_id: stem.to_string(),
            agent: None,
            size,
        });
    }
    (main, sessions)
}

/// How deep below `subagents/` a transcript may sit: Claude Code nests Workflow agents two levels
/// down (`subagents/workflows/<wf>/`); the bound only stops a runaway tree.
const MAX_SUBAGENT_DEPTH: usize = 8;

/// One session dir's subagent transcripts, each with its `.meta.json` read: `agent-<id>.jsonl` in
/// `subagents/` and in any folder below it (Claude Code writes a Workflow agent's under
/// `subagents/workflows/<wf>/`).
fn list_subagents(session: &SessionDir, since: Option<SystemTime>) -> Vec<FileInfo> {
    let mut agents = Vec::new();
    walk_subagents(session, &session.dir.join("subagents"), since, 0, &mut agents, &mut |_| {});
    agents
}

/// The folders below a session's `subagents/` (itself included, when it exists), where a new
/// subagent transcript would appear, with the transcripts in them.
pub fn session_subagent_tree(
    root: &Path,
    project: &str,
    session_id: &str,
    since: Option<SystemTime>,
) -> (Vec<FileInfo>, Vec<PathBuf>) {
    let session = SessionDir {
        dir: root.join(project).join(session_id),
        project: project.to_string(),
        session_id: session_id.to_string(),
    };
    let (mut agents, mut dirs) = (Vec::new(), Vec::new());
    walk_subagents(&session, &session.dir.join("subagents"), since, 0, &mut agents, &mut |d| {
        dirs.push(d.to_path_buf())
    });
    (agents, dirs)
}

/// The folders below a session's `subagents/`, itself included when it exists: where a new
/// subagent transcript would appear.
pub fn subagent_dirs(root: &Path, project: &str, session_id: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        out.push(dir.to_path_buf());
        for e in entries.flatten() {
            if depth < MAX_SUBAGENT_DEPTH && e.file_type().is_ok_and(|k| k.is_dir()) {
                walk(&e.path(), depth + 1, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root.join(project).join(session_id).join("subagents"), 0, &mut out);
    out
}

/// The transcripts in `dir` and the folders below it, depth first. Links are not followed: a
/// link to a folder above would loop, and Claude Code writes none.
fn walk_subagents(
    session: &SessionDir,
    dir: &Path,
    since: Option<SystemTime>,
    depth: usize,
    agents: &mut Vec<FileInfo>,
    on_dir: &mut dyn FnMut(&Path),
) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    on_dir(dir);
    for e in entries.flatten() {
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            if depth < MAX_SUBAGENT_DEPTH {
                walk_subagents(session, &e.path(), since, depth + 1, agents, on_dir);
            }
            continue;
        }
        let name = e.file_name();
        let name = name.to_string_lossy();
        let Some(agent_id) = name.strip_suffix(".jsonl").and_then(|s| s.strip_prefix("agent-")) else { continue };
        if !kind.is_file() {
            continue;
        }
        let Some(size) = listed_size(&e, since) else { continue };
        let meta = read_meta(&dir.join(format!("agent-{agent_id}.meta.json")));
        agents.push(FileInfo {
            path: e.path(),
            project: session.project.clone(),
            session_id: session.session_id.clone(),
            agent: Some(AgentFile { agent_id: agent_id.to_string(), meta }),
            size,
        });
    }
}

/// The file's size, or `None` when it cannot be read or was last written before `since`.
fn listed_size(e: &std::fs::DirEntry, since: Option<SystemTime>) -> Option<u64> {
    let md = e.metadata().ok()?;
    if let (Some(since), Ok(mtime)) = (since, md.modified())
        && mtime < since
    {
        return None;
    }
    Some(md.len())
}

/// A `.meta.json` is a few hundred bytes; one larger than this is not Claude Code's and is skipped
/// unread past this bound.
const MAX_META_BYTES: u64 = 64 * 1024;

fn read_meta(path: &Path) -> Option<AgentMeta> {
    // Claude Code writes it as a regular file beside the transcript, as it does the transcripts,
    // whose links are not followed either: a FIFO there would hang the report, a link to a
    // device flood it.
    let bytes = system1_fsread::read_file(path, MAX_META_BYTES, Links::Refuse).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// `f` over `items` on up to `threads` threads, each taking the next item as it finishes one;
/// the results in no particular order.
fn parallel<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
                        out.push(f(item));
                    }
                    out
                })
            })
            .collect();
        let mut all = Vec::with_capacity(items.len());
        for w in workers {
            match w.join() {
                Ok(out) => all.extend(out),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    })
}

/// Files whose outputs a reader thread hands over at once, and the bytes after which it hands over
/// fewer: one hand-over per file cost more than reading a small file.
const BATCH_FILES: usize = 64;
const BATCH_BYTES: u64 = 8 << 20;

/// Streams `files` through visitors made by `make`, on a pool of threads; `on_file` runs on the
/// calling thread as files complete (handed over in small batches). Returns the summed counts.
pub fn read<V, M, F>(files: Vec<FileInfo>, scope: &Scope, make: M, mut on_file: F) -> Stats
where
    V: FileVisitor,
    M: Fn(&FileInfo) -> V + Sync,
    F: FnMut(&FileInfo, V::Output, &Stats),
{
    let threads = scope.reader_threads().clamp(1, files.len().max(1));
    let range = TimeRange::new(scope.since, scope.until);
    let next = AtomicUsize::new(0);
    let mut total = Stats::default();
    std::thread::scope(|s| {
        // Bounded, so finished outputs never pile up faster than the caller folds them in.
        let (tx, rx) = mpsc::sync_channel::<Vec<(usize, V::Output, Stats)>>(threads * 2);
        for _ in 0..threads {
            let tx = tx.clone();
            let (files, make, next, range) = (&files, &make, &next, &range);
            s.spawn(move || {
                let mut buf = vec![0; CHUNK];
                let mut batch = Vec::with_capacity(BATCH_FILES);
                let mut batch_bytes = 0;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(info) = files.get(i) else { break };
                    let mut visitor = make(info);
                    let stats = read_file(info, &mut visitor, range, &mut buf);
                    batch_bytes += stats.bytes;
                    batch.push((i, visitor.finish(&stats), stats));
                    if (batch.len() >= BATCH_FILES || batch_bytes >= BATCH_BYTES)
                        && tx.send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH_FILES))).is_err()
                    {
                        return;
                    }
                    if batch.is_empty() {
                        batch_bytes = 0;
                    }
                    // One huge line must not pin its buffer for the rest of the run.
                    if buf.len() > 16 << 20 {
                        buf = vec![0; CHUNK];
                    }
                }
                if !batch.is_empty() {
                    let _ = tx.send(batch);
                }
            });
        }
        drop(tx);
        for (i, out, stats) in rx.into_iter().flatten() {
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
        // The shape Claude Code writes (`2026-11-30T10:41:30.123Z`), for `contains` to compare
        // its text with.
        let text = |t: DateTime<Utc>| (t, t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
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

/// A reader thread's buffer: lines are split in place and handed to the visitor from it, so a
/// small file costs one read and no copy. It grows to hold the longest line, up to [`MAX_LINE`].
const CHUNK: usize = 256 * 1024;

/// The longest line read (a power-of-two multiple of [`CHUNK`], what the buffer grows to). A longer
/// one is passed over to its newline without being held, and counted as malformed: a 2 GB line
/// with no newline would otherwise cost twice its size in memory.
const MAX_LINE: usize = 64 << 20;

/// Streams one file from byte `from` (the end of a line an earlier read stopped at) through
/// `visitor`, on this thread, with no time range: for a caller that keeps what it read of a file
/// and reads on as the file grows. Returns the counts and where the next read starts: after the
/// last whole line (a last line that is cut off mid-write is read again next time).
pub fn read_from<V: FileVisitor>(info: &FileInfo, from: u64, visitor: &mut V) -> (Stats, u64) {
    let mut buf = vec![0; CHUNK];
    let listed = FileInfo { size: info.size.saturating_sub(from), ..info.clone() };
    let mut stats = Stats::default();
    let done = read_file_from(&listed, from, visitor, &TimeRange::new(None, None), &mut buf, &mut stats);
    (stats, from + done)
}

/// Reads the file up to its listed size, and on to its end only when the data stops mid-line there
/// (a session written to while the report runs): a small file costs one read, not one more to see
/// its end.
fn read_file<V: FileVisitor>(info: &FileInfo, visitor: &mut V, range: &TimeRange, buf: &mut Vec<u8>) -> Stats {
    let mut stats = Stats::default();
    read_file_from(info, 0, visitor, range, buf, &mut stats);
    stats
}

/// [`read_file`] from byte `from`; returns how many bytes of whole lines it read (a last line that
/// does not parse and has no newline is not whole: a writer may be half-way through it).
fn read_file_from<V: FileVisitor>(
    info: &FileInfo,
    from: u64,
    visitor: &mut V,
    range: &TimeRange,
    buf: &mut Vec<u8>,
    stats: &mut Stats,
) -> u64 {
    *stats = Stats { files: 1, subagent_files: u64::from(info.is_subagent()), ..Stats::default() };
    // Listed as a regular file, but it may have been swapped for a FIFO since: opened so that it
    // is refused rather than waited on.
    let Ok((mut file, _)) = system1_fsread::open_read(&info.path, u64::MAX, Links::Refuse) else {
        stats.unreadable_files = 1;
        return 0;
    };
    if from > 0 && std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(from)).is_err() {
        stats.unreadable_files = 1;
        return 0;
    }
    // buf[start..end] holds data not yet handed out; no newline in buf[start..scanned].
    let (mut start, mut end, mut scanned) = (0, 0, 0);
    let mut listed = info.size;
    let mut eof = false;
    // While passing over a line longer than MAX_LINE: how many of its bytes are behind.
    let mut skipping: Option<u64> = None;
    loop {
        if let Some(k) = memchr::memchr(b'\n', &buf[scanned..end]) {
            let stop = scanned + k;
            stats.bytes += (stop + 1 - start) as u64;
            if skipping.take().is_some() {
                stats.lines += 1;
                stats.malformed_lines += 1;
            } else {
                one_line(&buf[start..stop], true, visitor, range, stats);
            }
            start = stop + 1;
            scanned = start;
            continue;
        }
        scanned = end;
        if eof && let Some(behind) = skipping {
            // The file ends inside the over-long line: cut off, like any last line without its end.
            stats.bytes += (end - start) as u64;
            stats.lines += 1;
            stats.malformed_lines += 1;
            stats.truncated_files = 1;
            return stats.bytes - behind - (end - start) as u64;
        }
        if eof {
            if start < end {
                let torn = stats.truncated_files;
                stats.bytes += (end - start) as u64;
                one_line(&buf[start..end], false, visitor, range, stats);
                if stats.truncated_files != torn {
                    return stats.bytes - (end - start) as u64;
                }
            }
            break;
        }
        if skipping.is_some() || end - start >= MAX_LINE {
            // No newline in MAX_LINE bytes: what is held of the line is let go, and the rest of
            // it read only to find its end.
            let held = (end - start) as u64;
            stats.bytes += held;
            skipping = Some(skipping.unwrap_or(0) + held);
            start = end;
            scanned = end;
        }
        // Keep the partial line at the front and read more after it.
        if start > 0 {
            buf.copy_within(start..end, 0);
            (end, scanned, start) = (end - start, scanned - start, 0);
        }
        if end == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let mut want = buf.len() - end;
        if listed > 0 {
            want = want.min(usize::try_from(listed).unwrap_or(usize::MAX));
        } else if start == end && skipping.is_none() {
            // The listed size is read and ends on a line's end.
            eof = true;
            continue;
        }
        match file.read(&mut buf[end..end + want]) {
            Ok(0) => eof = true,
            Ok(n) => {
                end += n;
                listed = listed.saturating_sub(n as u64);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => {
                stats.unreadable_files = 1;
                break;
            }
        }
    }
    stats.bytes
}

/// One line, without its newline: counted, pre-filtered, parsed, range-checked, visited.
fn one_line<V: FileVisitor>(
    line: &[u8],
    ends_with_newline: bool,
    visitor: &mut V,
    range: &TimeRange,
    stats: &mut Stats,
) {
    let raw = trim_ascii_end(line);
    if raw.is_empty() {
        return;
    }
    stats.lines += 1;
    if raw.last() != Some(&b'}') {
        stats.malformed_lines += 1;
        if !ends_with_newline {
            stats.truncated_files = 1;
        }
        return;
    }
    if !visitor.wants(raw) {
        return;
    }
    match line::parse(raw) {
        Ok(parsed) => {
            stats.parsed += 1;
            if !range.is_unbounded() && !range.contains(parsed.timestamp.as_deref()) {
                stats.out_of_range += 1;
                return;
            }
            visitor.line(&parsed, raw);
        }
        Err(_) => {
            stats.malformed_lines += 1;
            if !ends_with_newline {
                stats.truncated_files = 1;
            }
        }
    }
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
    fn project_filter_accepts_names_and_paths() {
        let scope = Scope { project: Some("/home/u/w1".into()), ..Scope::new(PathBuf::new()) };
        assert!(scope.project_matches("-home-u-w1"));
        assert!(!scope.project_matches("-home-u-w2"));
        let scope = Scope { project: Some("w1".into()), ..Scope::new(PathBuf::new()) };
        assert!(scope.project_matches("-home-u-w1"));
        assert_eq!(encode_project("/home/u/my.repo"), "-home-u-my-repo");
        // Claude Code maps every character but an ASCII letter or digit, not only separators.
        assert_eq!(encode_project("/home/user/code/web_app.v2"), "-home-user-code-web-app-v2");
        assert_eq!(encode_project("C:\\src\\my repo+é"), "C--src-my-repo--");
        assert_eq!(encode_project("/a/\u{1F600}"), "-a---");
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

    /// A scratch folder, which goes when the first value is dropped.
    fn scratch() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::Builder::new().prefix("system1-test-").tempdir().unwrap();
        let path = dir.path().to_path_buf();
        (dir, path)
    }

    #[test]
    fn read_walks_the_layout_counts_bad_lines_and_filters_by_time() {
        let (_scratch, root) = scratch();
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

        let scope = Scope { project: Some("w1".into()), ..Scope::new(root.clone()) };
        let files = list(&scope).unwrap();
        assert_eq!(files.len(), 2);
        let agent = files.iter().find(|f| f.is_subagent()).unwrap();
        assert_eq!(agent.session_id, "s1");
        let meta = agent.agent.as_ref().unwrap().meta.as_ref().unwrap();
        assert_eq!(meta.tool_use_id.as_deref(), Some("toolu_1"));
        assert_eq!(meta.agent_type.as_deref(), Some("Explore"));
        // An odd field costs only itself.
        let odd: AgentMeta = serde_json::from_str(r#"{"agentType":7,"toolUseId":"toolu_2"}"#).unwrap();
        assert_eq!((odd.agent_type, odd.tool_use_id.as_deref()), (None, Some("toolu_2")));

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
    }

    #[test]
    fn a_missing_projects_dir_is_a_clear_error() {
        let scope = Scope::new(PathBuf::from("/nonexistent/system1/projects"));
        let err = list(&scope).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/system1/projects"));
    }

    /// Sums what a report sums: input tokens and the lines seen, per file.
    struct Sum {
        agent_tool_use: Option<String>,
        input: u64,
        lines: u64,
    }

    impl FileVisitor for Sum {
        type Output = (Option<String>, u64, u64);
        fn line(&mut self, line: &Line<'_>, _raw: &[u8]) {
            self.lines += 1;
            self.input += line.message.as_ref().and_then(|m| m.usage).map_or(0, |u| u.tokens().input);
        }
        fn finish(self, _stats: &Stats) -> Self::Output {
            (self.agent_tool_use, self.input, self.lines)
        }
    }

    fn sum_for(f: &FileInfo) -> Sum {
        let agent_tool_use = f.agent.as_ref().and_then(|a| a.meta.as_ref()).and_then(|m| m.tool_use_id.clone());
        Sum { agent_tool_use, input: 0, lines: 0 }
    }

    fn usage_line(input: u64) -> String {
        format!("{{\"type\":\"assistant\",\"message\":{{\"usage\":{{\"input_tokens\":{input}}}}}}}\n")
    }

    #[test]
    fn many_small_files_give_the_same_totals_on_one_thread_and_many() {
        // The shape of real histories: many sessions, most with a few small subagent files, each
        // with its .meta.json (a few without: older Claude Code versions wrote none). More files
        // than one reader thread hands over at once, so the batches are exercised too.
        let (_scratch, root) = scratch();
        let (mut files, mut metas, mut expected_input) = (0u64, 0u64, 0u64);
        for p in 0..3 {
            for s in 0..40 {
                let proj = root.join(format!("-home-u-p{p}"));
                let session = format!("s{p}-{s}");
                std::fs::create_dir_all(&proj).unwrap();
                let main_input = 1 + p * 100 + s;
                std::fs::write(proj.join(format!("{session}.jsonl")), usage_line(main_input)).unwrap();
                expected_input += main_input;
                files += 1;
                let sub = proj.join(&session).join("subagents");
                std::fs::create_dir_all(&sub).unwrap();
                for a in 0..(s % 5) {
                    let input = 1000 * (a + 1) + s;
                    std::fs::write(sub.join(format!("agent-a{s}x{a}.jsonl")), usage_line(input).repeat(2)).unwrap();
                    expected_input += 2 * input;
                    files += 1;
                    if a != 3 {
                        let meta =
                            format!(r#"{{"agentType":"Explore","toolUseId":"toolu_{p}_{s}_{a}","spawnDepth":1}}"#);
                        std::fs::write(sub.join(format!("agent-a{s}x{a}.meta.json")), meta).unwrap();
                        metas += 1;
                    }
                }
                // Not transcripts: left out of the listing.
                std::fs::write(sub.join("notes.jsonl.bak"), "x").unwrap();
            }
        }
        assert!(files > 3 * BATCH_FILES as u64);
        let mut seen = Vec::new();
        for threads in [1, 2, 5] {
            let scope = Scope { threads, ..Scope::new(root.clone()) };
            let listed = list(&scope).unwrap();
            assert_eq!(listed.len() as u64, files);
            assert!(listed.windows(2).all(|w| w[0].size >= w[1].size), "largest first");
            let (mut input, mut lines, mut with_meta) = (0, 0, 0);
            let mut tool_uses = Vec::new();
            let total = read(listed, &scope, sum_for, |_, (tool_use, i, l), _| {
                input += i;
                lines += l;
                if let Some(t) = tool_use {
                    with_meta += 1;
                    tool_uses.push(t);
                }
            });
            tool_uses.sort();
            assert_eq!(input, expected_input, "{threads} threads");
            assert_eq!(with_meta, metas, "{threads} threads");
            assert_eq!(total.files, files);
            assert_eq!(total.lines, lines);
            assert_eq!(total.malformed_lines, 0);
            seen.push((total, tool_uses));
        }
        assert!(seen.windows(2).all(|w| w[0] == w[1]), "every thread count reads alike");
    }

    fn one_file(root: &Path) -> Vec<FileInfo> {
        list(&Scope::new(root.to_path_buf())).unwrap()
    }

    fn read_one(files: Vec<FileInfo>) -> (u64, Stats) {
        let mut input = 0;
        let stats = read(files, &Scope::new(PathBuf::new()), sum_for, |_, (_, i, _), _| input += i);
        (input, stats)
    }

    #[test]
    fn a_line_longer_than_the_read_buffer_is_read_whole() {
        let (_scratch, root) = scratch();
        std::fs::create_dir_all(root.join("-p")).unwrap();
        let pad = "x".repeat(3 * CHUNK + 17);
        let long =
            format!("{{\"type\":\"assistant\",\"pad\":\"{pad}\",\"message\":{{\"usage\":{{\"input_tokens\":5}}}}}}\n");
        std::fs::write(root.join("-p/s.jsonl"), format!("{}{long}{}", usage_line(1), usage_line(2))).unwrap();
        let (input, stats) = read_one(one_file(&root));
        assert_eq!(input, 8);
        assert_eq!((stats.lines, stats.malformed_lines), (3, 0));
        assert_eq!(stats.bytes, std::fs::metadata(root.join("-p/s.jsonl")).unwrap().len());
    }

    #[test]
    fn a_file_written_to_after_listing_is_read_as_listed_or_to_its_next_line_end() {
        use std::io::Write;
        let (_scratch, root) = scratch();
        std::fs::create_dir_all(root.join("-p")).unwrap();
        let path = root.join("-p/s.jsonl");
        let append = |s: &str| std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(s.as_bytes());

        // Listed on a line's end: what was appended since is left out.
        std::fs::write(&path, usage_line(1)).unwrap();
        let files = one_file(&root);
        append(&usage_line(10)).unwrap();
        let (input, stats) = read_one(files);
        assert_eq!((input, stats.lines, stats.truncated_files), (1, 1, 0));

        // Listed mid-line (the writer was half-way through it): read on, so the finished line
        // counts and the file is not taken for a torn one.
        let half = usage_line(100);
        std::fs::write(&path, format!("{}{}", usage_line(1), &half[..20])).unwrap();
        let files = one_file(&root);
        append(&half[20..]).unwrap();
        let (input, stats) = read_one(files);
        assert_eq!((input, stats.lines, stats.truncated_files, stats.malformed_lines), (101, 2, 0, 0));

        // A file that shrank since (rewritten) is read as it is now.
        std::fs::write(&path, usage_line(1).repeat(3)).unwrap();
        let files = one_file(&root);
        std::fs::write(&path, usage_line(7)).unwrap();
        assert_eq!(read_one(files).0, 7);
    }

    #[test]
    fn an_oversized_meta_file_is_not_read() {
        let (_scratch, root) = scratch();
        let sub = root.join("-p/s/subagents");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join("agent-a.jsonl"), usage_line(1)).unwrap();
        std::fs::write(sub.join("agent-b.jsonl"), usage_line(1)).unwrap();
        std::fs::write(sub.join("agent-a.meta.json"), r#"{"toolUseId":"toolu_a"}"#).unwrap();
        let pad = " ".repeat(MAX_META_BYTES as usize);
        std::fs::write(sub.join("agent-b.meta.json"), format!(r#"{{"toolUseId":"toolu_b"{pad}}}"#)).unwrap();
        let files = one_file(&root);
        let meta = |id: &str| {
            let f = files.iter().find(|f| f.agent.as_ref().is_some_and(|a| a.agent_id == id)).unwrap();
            f.agent.as_ref().unwrap().meta.as_ref().and_then(|m| m.tool_use_id.clone())
        };
        assert_eq!(meta("a").as_deref(), Some("toolu_a"));
        assert_eq!(meta("b"), None);
    }
}
