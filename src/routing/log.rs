//! The routing log (`routing.jsonl`): one JSON object per line, written by short-lived hook
//! processes that may run at the same moment, and rewritten in place by labelling and outcomes.
//!
//! Every writer takes an exclusive `File::lock` on the sibling `routing.jsonl.lock` first. The lock
//! lives on a separate file so that a rewrite, which replaces `routing.jsonl` by rename, never
//! leaves an appender holding a lock on a file that is no longer the log. An append opens the log
//! only once it holds the lock (so it always writes to the current file) and writes its whole lines
//! in a single `write_all`, after ending a torn last line if it finds one. A rewrite holds the lock across read, temp file, fsync and rename, so
//! no append can slip in between and be lost.
//!
//! The log holds prompts, so its folder is private and its files are opened only in place
//! (`fsutil::open_private`): a link or another user's file planted under its name is refused.

use std::fs::OpenOptions;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub use super::entry::Entry;
use crate::fsutil::{self, Staged, open_private};
use crate::paths;

/// What `read_all` found: the lines that are entries, and how many other lines there were.
#[derive(Debug, Default)]
pub struct Entries {
    pub entries: Vec<Entry>,
    pub skipped: usize,
}

/// Appends one entry to `paths::routing_log()`.
pub fn append(entry: &Entry) -> io::Result<()> {
    append_at(&paths::routing_log(), entry)
}

/// Appends `entries` to `paths::routing_log()` under one lock and one open (a prompt writes up to
/// two); nothing is touched when there are none.
pub fn append_all(entries: &[Entry]) -> io::Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    append_all_at(&paths::routing_log(), entries)
}

/// Reads every entry of `paths::routing_log()`; a missing log is empty.
pub fn read_all() -> io::Result<Entries> {
    read_all_at(&paths::routing_log())
}

/// Calls `f` with every entry of `paths::routing_log()` in order, one line at a time (see
/// [`for_each_line`]); a missing log has none.
pub fn for_each_entry(mut f: impl FnMut(Entry)) -> io::Result<()> {
    for_each_line(&paths::routing_log(), |line| {
        if let Some(e) = line.and_then(parse) {
            f(e)
        }
    })
}

/// Rewrites `paths::routing_log()` through `f` while holding the lock (see `rewrite_at`).
pub fn rewrite<R>(f: impl FnOnce(&mut Vec<Entry>) -> R) -> io::Result<R> {
    rewrite_at(&paths::routing_log(), f)
}

/// Changes the entry with `id` in `paths::routing_log()` through `f`, under the lock (see
/// [`update_at`]).
pub fn update(id: &str, f: impl FnOnce(&mut Entry) -> Result<(), String>) -> io::Result<Result<(), String>> {
    update_at(&paths::routing_log(), id, f)
}

/// A new entry id, unique across processes and calls: time in microseconds, process id and a
/// per-process counter, in hex (e.g. `18c5f2a9b3e10-3f2a-0`).
pub fn new_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let micros = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros()).unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{micros:x}-{:x}-{n:x}", std::process::id())
}

/// The `[routing] log_dirs` entry that `cwd` is, or is inside, if any: the log's opt-in per repo.
/// `~` is expanded; both sides are resolved through symlinks when they exist, and normalised
/// lexically when they do not. Relative entries are ignored (there is nothing to anchor them to).
pub fn opted_in(cwd: &Path, log_dirs: &[String]) -> Option<PathBuf> {
    if log_dirs.is_empty() || !cwd.is_absolute() {
        return None;
    }
    let cwd = resolve(cwd);
    log_dirs.iter().map(|d| paths::expand_tilde(d.trim())).filter(|d| d.is_absolute()).map(|d| resolve(&d)).find(
        |dir| cwd.starts_with(dir), // whole components: /src/ab is not inside /src/a
    )
}

/// The repo a directory belongs to: its nearest ancestor holding `.git`, else `fallback`.
pub fn repo_of(dir: &Path, fallback: &Path) -> PathBuf {
    let dir = resolve(dir);
    dir.ancestors().find(|a| a.join(".git").exists()).map(Path::to_path_buf).unwrap_or_else(|| fallback.to_path_buf())
}

fn resolve(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| normalise(p))
}

/// Removes `.` and resolves `..` without touching the file system.
fn normalise(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

pub fn append_at(log: &Path, entry: &Entry) -> io::Result<()> {
    append_all_at(log, std::slice::from_ref(entry))
}

fn append_all_at(log: &Path, entries: &[Entry]) -> io::Result<()> {
    let mut lines = String::new();
    for entry in entries {
        lines.push_str(&serde_json::to_string(entry).map_err(io::Error::other)?);
        lines.push('\n');
    }
    // The log holds prompt text: its writers take the private lock beside it.
    let _lock = fsutil::WriteLock::take(log)?;
    let mut file = open_private(log, OpenOptions::new().create(true).read(true).append(true))?;
    // A last line left without its newline (a writer killed mid-write, a hand edit) would swallow
    // this one: end it first, so that only the broken line is lost.
    if file.metadata()?.len() > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::End(-1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            lines.insert(0, '\n');
        }
    }
    file.write_all(lines.as_bytes())
}

pub fn read_all_at(log: &Path) -> io::Result<Entries> {
    let mut out = Entries::default();
    for line in read_lines(log)? {
        match parse(&line) {
            Some(v) => out.entries.push(v),
            None => out.skipped += usize::from(!line.trim().is_empty()),
        }
    }
    Ok(out)
}

/// Rewrites the log: `f` gets every entry and may change, drop or add entries. Lines that are no
/// entry are kept verbatim after the entries (they may be someone's data in a shape this version
/// does not know). Holds the lock throughout, writes a temp file in the same
/// directory, fsyncs it and renames it over the log, so a crash leaves either the old or the new log.
pub fn rewrite_at<R>(log: &Path, f: impl FnOnce(&mut Vec<Entry>) -> R) -> io::Result<R> {
    let _lock = fsutil::WriteLock::take(log)?;
    let mut entries = Vec::new();
    let mut kept = Vec::new();
    for line in read_lines(log)? {
        match parse(&line) {
            Some(v) => entries.push(v),
            None if line.trim().is_empty() => {}
            None => kept.push(line),
        }
    }
    let result = f(&mut entries);
    let mut text = String::new();
    for e in &entries {
        text.push_str(&serde_json::to_string(e).map_err(io::Error::other)?);
        text.push('\n');
    }
    for line in &kept {
        text.push_str(line);
        text.push('\n');
    }
    // Private like the log itself: it holds the user's prompts.
    let mut staged = Staged::create(log, fsutil::PRIVATE_MODE)?;
    staged.set_mode(fsutil::PRIVATE_MODE)?;
    staged.set_contents(text.as_bytes())?;
    staged.commit()?;
    Ok(result)
}

/// The longest line [`update_at`] holds to look at. The hooks write no entry near it (a prompt is
/// at most 16 MiB of hook input); a longer line is copied through in pieces, never held whole.
const MAX_HELD_LINE: usize = 64 << 20;

/// Changes the first entry whose id is `id` through `f`, streaming: the log is read a line at a
/// time and copied to a temp file beside it, the changed entry written in its place and every
/// other line (unknown keys, lines that are no entry, a last line without its newline) byte for
/// byte, then the temp file is fsynced and renamed over the log. The writers' lock is held
/// throughout, so no line appended meanwhile is lost, and a crash leaves the old log or the new
/// one. Memory stays at a line, however big the log. Only lines holding `id` as a JSON string are
/// parsed. `Ok(Err(..))` when there is no such entry or `f` refuses it; the log is then untouched.
pub fn update_at(
    log: &Path,
    id: &str,
    f: impl FnOnce(&mut Entry) -> Result<(), String>,
) -> io::Result<Result<(), String>> {
    let _lock = fsutil::WriteLock::take(log)?;
    let missing = || Ok(Err(format!("no entry with id {id:?} in the routing log")));
    let file = match open_private(log, OpenOptions::new().read(true)) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return missing(),
        Err(e) => return Err(e),
    };
    let quoted = serde_json::to_string(id).map_err(io::Error::other)?;
    let finder = memchr::memmem::Finder::new(quoted.as_bytes());
    // Private like the log itself: it holds the user's prompts.
    let mut staged = Staged::create(log, fsutil::PRIVATE_MODE)?;
    staged.set_mode(fsutil::PRIVATE_MODE)?;
    let mut out = io::BufWriter::with_capacity(1 << 20, staged.file()?);
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut f = Some(f);
    // The line being read, while it is short enough to hold; `passing` once it was not.
    let mut line = Vec::new();
    let mut passing = false;
    let mut end_of_line =
        |line: &[u8], out: &mut io::BufWriter<&mut std::fs::File>| -> io::Result<Result<(), String>> {
            let mut found = None;
            if f.is_some() && finder.find(line).is_some() {
                found = serde_json::from_slice::<Entry>(line).ok().filter(|e| e.id.as_deref() == Some(id));
            }
            let Some((mut e, change)) = found.and_then(|e| f.take().map(|change| (e, change))) else {
                return out.write_all(line).map(Ok);
            };
            if let Err(why) = change(&mut e) {
                return Ok(Err(why));
            }
            out.write_all(&serde_json::to_vec(&e).map_err(io::Error::other)?)?;
            if line.ends_with(b"\n") {
                out.write_all(b"\n")?;
            }
            Ok(Ok(()))
        };
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let (piece, ends) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let n = piece.len();
        if !passing && line.len() + n > MAX_HELD_LINE {
            out.write_all(&line)?;
            line = Vec::new();
            passing = true;
        }
        if passing {
            out.write_all(piece)?;
        } else {
            // Grown by doubling as a Vec does, but never past the cap: what is held stays under it.
            if line.capacity() < line.len() + n {
                let grown = (2 * line.capacity()).max(line.len() + n).min(MAX_HELD_LINE);
                line.reserve_exact(grown - line.len());
            }
            line.extend_from_slice(piece);
        }
        reader.consume(n);
        if ends {
            if !passing && let Err(why) = end_of_line(&line, &mut out)? {
                return Ok(Err(why));
            }
            line.clear();
            passing = false;
        }
    }
    if !passing
        && !line.is_empty()
        && let Err(why) = end_of_line(&line, &mut out)?
    {
        return Ok(Err(why));
    }
    if f.is_some() {
        return missing();
    }
    out.flush()?;
    drop(out);
    staged.commit()?;
    Ok(Ok(()))
}

fn parse(line: &str) -> Option<Entry> {
    serde_json::from_str(line).ok()
}

/// The last agent entry of `paths::routing_log()` for the spawn `tool_use_id` (of `session_id`,
/// when given); `None` when there is none or the log cannot be read.
///
/// Runs in the PostToolUse hook, so like the session-start count it reads without the writers'
/// lock, and parses only the lines that hold the id as the writers write it.
pub fn find_agent(tool_use_id: &str, session_id: Option<&str>) -> Option<Entry> {
    find_agent_at(&paths::routing_log(), tool_use_id, session_id)
}

pub fn find_agent_at(log: &Path, tool_use_id: &str, session_id: Option<&str>) -> Option<Entry> {
    let bytes = read_tail(log, AGENT_TAIL_BYTES)?;
    let needle = format!("\"tool_use_id\":{}", serde_json::to_string(tool_use_id).ok()?);
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    bytes
        .split(|b| *b == b'\n')
        .rev()
        .filter(|line| finder.find(line).is_some())
        .filter_map(|line| serde_json::from_slice::<Entry>(line).ok())
        .find(|e| {
            e.is_agent()
                && e.call.tool_use_id.as_deref() == Some(tool_use_id)
                && (session_id.is_none() || e.session_id.as_deref() == session_id)
        })
}

/// How far back from the log's end the PostToolUse hook looks for a spawn's entry: it was written
/// when the spawn began, and a subagent's run adds a few entries at most, so the last 8 MiB (some
/// thousands of entries) hold it; a bigger log costs no more than that to search.
const AGENT_TAIL_BYTES: u64 = 8 << 20;

/// The last `cap` bytes of the log, from the first line that starts in them (a line cut by the
/// cap is left out); `None` when it cannot be read.
fn read_tail(log: &Path, cap: u64) -> Option<Vec<u8>> {
    // The log's own writers make it a regular file in place: a FIFO or a link planted there (to
    // `/dev/zero`, say) is refused, not waited on or read without end.
    let (mut file, len) = fsutil::open_read(log, u64::MAX, fsutil::Links::Refuse).ok()?;
    // One byte before the tail too: whether it ends a line says if the tail starts with a whole one.
    let from = len.saturating_sub(cap).saturating_sub(1);
    file.seek(SeekFrom::Start(from)).ok()?;
    let mut bytes = Vec::with_capacity(usize::try_from(len - from).ok()?);
    // Only as far as the length seen at open: a writer appending meanwhile adds nothing to read.
    file.take(len - from).read_to_end(&mut bytes).ok()?;
    if from > 0 {
        let cut = memchr::memchr(b'\n', &bytes).map_or(bytes.len(), |i| i + 1);
        bytes.drain(..cut);
    }
    Some(bytes)
}

/// How many entries of `paths::routing_log()` wait for labels ([`Entry::needs_labels`]). A log that
/// cannot be read counts 0.
///
/// Runs at every session start, so it reads the log without the writers' lock (a line being
/// appended at that moment is incomplete and skipped) and parses as little as it can.
pub fn count_waiting_for_labels() -> usize {
    let mut n = 0;
    match for_each_line(&paths::routing_log(), |line| n += usize::from(line.is_some_and(waits_for_labels))) {
        Ok(()) => n,
        Err(_) => 0,
    }
}

/// [`Entry::needs_labels`] of one log line, settling most lines without parsing them. The writers
/// emit compact JSON, where `"source":"` and `"labels":` can only be keys (inside a string value the
/// quotes are escaped), and `source` comes before any nested object. So a line whose first
/// `"source":"` has no `{` before it (the key is the entry's own) is settled by that search when
/// it is neither a prompt nor an agent entry, and when it is one with no `"labels":` key at all,
/// which leaves its features unlabelled. Every other line is parsed, for the fields that matter only.
fn waits_for_labels(line: &str) -> bool {
    const SOURCE: &str = r#""source":""#;
    const LABELS: &str = r#""labels":"#;
    let compact = line.trim_end();
    if compact.starts_with('{')
        && compact.ends_with('}')
        && let Some(at) = compact.find(SOURCE)
        && !compact[1..at].contains('{')
    {
        let value = &compact[at + SOURCE.len()..];
        if !value.starts_with("prompt\"") && !value.starts_with("agent\"") {
            return false;
        }
        if !compact.contains(LABELS) {
            return true;
        }
    }
    super::entry::line_needs_labels(line)
}

/// The log's lines; a missing log has none. Lines that are not UTF-8 are kept lossily (they count as bad).
/// Calls `f` with each line of `log`, without its newline, reading it in pieces: a line longer than
/// [`MAX_HELD_LINE`] is passed over without being held (`f` gets `None` for it), so that the
/// session-start hook and `calibrate pending` hold one line at a time, never the log. A missing log
/// has no lines.
fn for_each_line(log: &Path, mut f: impl FnMut(Option<&str>)) -> io::Result<()> {
    let file = match open_private(log, OpenOptions::new().read(true)) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let (used, ended) = {
            let buf = reader.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            let end = memchr::memchr(b'\n', buf);
            let piece = &buf[..end.unwrap_or(buf.len())];
            if !too_long && line.len() + piece.len() > MAX_HELD_LINE {
                too_long = true;
                line = Vec::new();
            }
            if !too_long {
                line.extend_from_slice(piece);
            }
            (end.map_or(buf.len(), |i| i + 1), end.is_some())
        };
        reader.consume(used);
        if ended {
            f((!too_long).then(|| String::from_utf8_lossy(&line)).as_deref());
            line.clear();
            too_long = false;
        }
    }
    if too_long || !line.is_empty() {
        f((!too_long).then(|| String::from_utf8_lossy(&line)).as_deref());
    }
    Ok(())
}

fn read_lines(log: &Path) -> io::Result<Vec<String>> {
    let file = match open_private(log, OpenOptions::new().read(true)) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut lines = Vec::new();
    let mut reader = BufReader::new(file);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        }
        lines.push(String::from_utf8_lossy(&buf).into_owned());
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// An entry with `id` and the extra fields of `more` (a JSON object).
    fn entry(id: &str, more: Value) -> Entry {
        let Value::Object(other) = more else { panic!("an object") };
        Entry { id: Some(id.into()), other, ..Entry::default() }
    }

    fn ids(e: &Entries) -> Vec<&str> {
        e.entries.iter().map(|e| e.id.as_deref().unwrap_or("")).collect()
    }

    /// A routing log's path in a scratch folder (its `logs` folder made), which goes when the
    /// first value is dropped.
    fn scratch() -> (tempfile::TempDir, PathBuf) {
        let dir = crate::fsutil::scratch_dir();
        let path = dir.path().join("logs").join("routing.jsonl");
        (dir, path)
    }

    #[test]
    fn opt_in_by_directory() {
        let (_scratch, log) = scratch();
        let root = log.parent().unwrap().parent().unwrap().to_path_buf();
        let repo = root.join("repo");
        std::fs::create_dir_all(repo.join("sub/deeper")).unwrap();
        std::fs::create_dir_all(root.join("repo-other")).unwrap();
        let dirs = vec![repo.display().to_string()];
        assert_eq!(opted_in(&repo, &dirs), Some(std::fs::canonicalize(&repo).unwrap()));
        assert!(opted_in(&repo.join("sub/deeper"), &dirs).is_some());
        assert!(opted_in(&repo.join("sub/../sub/./deeper"), &dirs).is_some());
        assert!(opted_in(&root.join("repo-other"), &dirs).is_none());
        assert!(opted_in(&root, &dirs).is_none());
        assert!(opted_in(&repo, &[]).is_none());
        assert!(opted_in(&repo, &["repo".to_string()]).is_none(), "relative entries are ignored");
        let trailing = vec![format!("{}/sub/", repo.display())];
        assert!(opted_in(&repo.join("sub"), &trailing).is_some());
    }

    #[test]
    fn ids_are_unique() {
        let ids: std::collections::HashSet<String> = (0..1000).map(|_| new_id()).collect();
        assert_eq!(ids.len(), 1000);
    }

    #[test]
    fn append_creates_private_file_and_reads_back() {
        let (_scratch, log) = scratch();
        let b = Entry { prompt: Some("line\nbreak".into()), ..entry("b", json!({})) };
        append_at(&log, &entry("a", json!({"n": 1}))).unwrap();
        append_at(&log, &b).unwrap();
        let got = read_all_at(&log).unwrap();
        assert_eq!(got.skipped, 0);
        assert_eq!(got.entries, vec![entry("a", json!({"n": 1})), b]);
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "{\"id\":\"a\",\"n\":1}\n{\"id\":\"b\",\"prompt\":\"line\\nbreak\"}\n"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
    }

    #[test]
    fn entries_appended_together_come_back_as_their_own_lines() {
        let (_scratch, log) = scratch();
        append_at(&log, &entry("1", json!({}))).unwrap();
        append_all_at(&log, &[entry("2", json!({})), entry("3", json!({"n": 3}))]).unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "{\"id\":\"1\"}\n{\"id\":\"2\"}\n{\"id\":\"3\",\"n\":3}\n");
    }

    #[test]
    fn append_after_a_torn_last_line_keeps_the_new_entry_whole() {
        let (_scratch, log) = scratch();
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        std::fs::write(&log, "{\"id\":\"1\"}\n{\"id\":\"2\",\"prom").unwrap();
        append_at(&log, &entry("3", json!({}))).unwrap();
        let got = read_all_at(&log).unwrap();
        assert_eq!(ids(&got), ["1", "3"]);
        assert_eq!(got.skipped, 1, "only the torn line is lost");
    }

    #[test]
    fn read_all_counts_bad_lines_and_missing_log_is_empty() {
        let (_scratch, log) = scratch();
        assert_eq!(read_all_at(&log).unwrap().entries.len(), 0);
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        std::fs::write(&log, "{\"id\":\"1\"}\nnot json\n[1,2]\n\n{\"id\":\"2\"}\n{\"rule_tier\":\"gpt\"}\n{\"trunc")
            .unwrap();
        let got = read_all_at(&log).unwrap();
        assert_eq!(ids(&got), ["1", "2"]);
        assert_eq!(got.skipped, 4, "not JSON, not an object, a known key of the wrong type, torn");
    }

    #[test]
    fn rewrite_changes_entries_and_keeps_bad_lines_verbatim() {
        let (_scratch, log) = scratch();
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        std::fs::write(&log, "{\"id\":\"1\",\"x\":[1]}\nnot json  \n{\"id\":\"2\"}\n{\"id\":3}\n").unwrap();
        let n = rewrite_at(&log, |entries| {
            entries[1].labelling.label_tier = Some(crate::tier::Tier::Opus);
            entries.len()
        })
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "{\"id\":\"1\",\"x\":[1]}\n{\"id\":\"2\",\"label_tier\":\"opus\"}\nnot json  \n{\"id\":3}\n"
        );
        let leftovers: Vec<_> = std::fs::read_dir(log.parent().unwrap())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn update_changes_one_entry_and_keeps_every_other_byte() {
        let (_scratch, log) = scratch();
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        // Spacing no writer uses, a line that is no entry, one whose id is a number, the id quoted
        // inside another entry's prompt, a later entry with the same id, and a last line without
        // its newline: all but the one entry come back as they were.
        let before = "{\"id\":\"1\", \"x\":[1]}\nnot json  \r\n{\"prompt\":\"see \\\"2\\\"\"}\n{ \"id\" : \"2\", \"zz\": {\"k\": 1} }\n{\"id\":3}\n\n{\"id\":\"2\"}\n{\"id\":\"4\"}";
        std::fs::write(&log, before).unwrap();
        let r = update_at(&log, "2", |e| {
            e.labelling.label_tier = Some(crate::tier::Tier::Opus);
            Ok(())
        })
        .unwrap();
        assert_eq!(r, Ok(()));
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            before.replace(
                "{ \"id\" : \"2\", \"zz\": {\"k\": 1} }",
                "{\"id\":\"2\",\"label_tier\":\"opus\",\"zz\":{\"k\":1}}"
            )
        );
        // The last line, without its newline, is changed in place and still has none.
        update_at(&log, "4", |e| {
            e.labelling.label_tier = Some(crate::tier::Tier::Haiku);
            Ok(())
        })
        .unwrap()
        .unwrap();
        assert!(std::fs::read_to_string(&log).unwrap().ends_with("\n{\"id\":\"4\",\"label_tier\":\"haiku\"}"));
        // No entry, or a refused change: the log is left as it was.
        let now = std::fs::read(&log).unwrap();
        assert_eq!(update_at(&log, "9", |_| Ok(())).unwrap(), Err("no entry with id \"9\" in the routing log".into()));
        assert_eq!(update_at(&log, "1", |_| Err("no".into())).unwrap(), Err("no".into()));
        assert_eq!(std::fs::read(&log).unwrap(), now);
        let leftovers: Vec<_> = std::fs::read_dir(log.parent().unwrap())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
        assert!(update_at(&scratch().1, "1", |_| Ok(())).unwrap().is_err(), "a missing log has no entry");
    }

    #[test]
    fn a_routing_entry_waits_for_labels_until_it_has_them_all() {
        let all = r#""labels":{"read_only":true,"design":false,"review":false,"specified":true}"#;
        assert!(waits_for_labels(r#"{"id":"1","source":"prompt","prompt":"x"}"#));
        assert!(waits_for_labels(r#"{"id":"1","source":"prompt","labels":{"read_only":true}}"#), "three to go");
        assert!(!waits_for_labels(&format!(r#"{{"id":"1","source":"prompt",{all}}}"#)));
        assert!(waits_for_labels(r#"{"id":"1","source":"prompt","labels":null}"#), "null labels are none");
        assert!(waits_for_labels(r#"{"id":"1","source":"prompt","labels":{}}"#), "empty labels are none");
        // A spawn waits for its outcome too, and for a person when the automatic one is doubtful.
        assert!(waits_for_labels(r#"{"id":"1","source":"agent","prompt":"x"}"#));
        assert!(waits_for_labels(&format!(r#"{{"id":"1","source":"agent",{all}}}"#)));
        assert!(!waits_for_labels(&format!(
            r#"{{"source":"agent",{all},"outcome":"failed","outcome_source":"auto"}}"#
        )));
        assert!(waits_for_labels(&format!(
            r#"{{"source":"agent",{all},"outcome":"failed","outcome_source":"auto","outcome_doubtful":"re-spawn"}}"#
        )));
        assert!(!waits_for_labels(r#"{"id":"1","source":"skill"}"#));
        assert!(!waits_for_labels(r#"{"id":"1","source":"probe"}"#));
    }

    #[test]
    fn lines_in_other_shapes_are_parsed() {
        assert!(waits_for_labels(r#"{ "source" : "prompt", "prompt": "x" }"#));
        assert!(waits_for_labels(r#"{ "source" : "prompt", "labels" : { "design": false } }"#));
        assert!(!waits_for_labels(
            r#"{ "source" : "prompt", "labels" : { "design": false, "read_only": true, "review": true, "specified": false } }"#
        ));
        assert!(!waits_for_labels(r#"{"source":"prompt""#), "an incomplete line is skipped");
        assert!(!waits_for_labels("not json"));
        assert!(!waits_for_labels(r#"["source","prompt"]"#));
        // A prompt quoting the key is escaped in the string, so it cannot fool the search.
        let tricky = r#"{"source":"skill","prompt":"say \"source\":\"prompt\" please"}"#;
        assert!(!waits_for_labels(tricky));
        // A labels key quoted inside a prompt's text does not hide a pending entry.
        let quoted = r#"{"source":"prompt","prompt":"add \"labels\": to it"}"#;
        assert!(waits_for_labels(quoted));
        // A nested "source" before the entry's own is not taken for it.
        let nested = r#"{"extra":{"source":"skill"},"source":"prompt"}"#;
        assert!(waits_for_labels(nested));
    }

    #[test]
    fn the_fast_path_agrees_with_needs_labels() {
        // Every line, settled by the pre-filter or by reading a few fields, says what the whole entry says.
        let lines = [
            r#"{"id":"1","time":"t","source":"prompt","prompt":"x","features":{"design":{"answer":true,"confidence":0.7}}}"#,
            r#"{"id":"2","time":"t","source":"agent","prompt":"x","chosen":"haiku"}"#,
            r#"{"id":"3","time":"t","source":"skill","prompt":"x","decision":"pdf"}"#,
            r#"{"id":"4","time":"t","source":"prompt","prompt":"x","labels":{"read_only":true}}"#,
        ];
        let all = r#""labels":{"read_only":true,"design":false,"review":false,"specified":true}"#;
        let parsed = [
            format!(r#"{{"source":"prompt",{all}}}"#),
            format!(r#"{{"source":"agent",{all},"outcome":"failed","outcome_source":"auto"}}"#),
            format!(r#"{{"source":"agent",{all},"outcome":"failed","outcome_source":"auto","outcome_doubtful":"x"}}"#),
            format!(r#"{{"source":"agent",{all},"outcome":"failed","outcome_source":"user","outcome_doubtful":"x"}}"#),
            r#"{ "source" : "agent", "labels" : { "design": true }, "label_tier": "opus" }"#.to_string(),
            r#"{"source":"prompt","labels":{"read_only":true,"design":"unsure","review":true,"specified":true}}"#
                .to_string(),
        ];
        for line in lines.iter().map(|l| l.to_string()).chain(parsed) {
            let entry: Entry = serde_json::from_str(&line).unwrap();
            assert_eq!(waits_for_labels(&line), entry.needs_labels(), "{line}");
        }
    }

    /// Child side of the concurrency tests: a real separate process (this test binary, re-run with
    /// a filter) appending to the log named in the environment.
    #[test]
    fn child_appender() {
        let Ok(log) = std::env::var("SYSTEM1_TEST_LOG_CHILD") else { return };
        let who = std::env::var("SYSTEM1_TEST_LOG_WHO").unwrap();
        let lines: usize = std::env::var("SYSTEM1_TEST_LOG_LINES").unwrap().parse().unwrap();
        for i in 0..lines {
            // A long prompt makes a line bigger than a pipe buffer, so an unlocked writer would tear it.
            let e = Entry { prompt: Some("x".repeat(8000)), ..entry(&new_id(), json!({"who": who, "i": i})) };
            append_at(Path::new(&log), &e).unwrap();
        }
    }

    fn spawn_appenders(log: &Path, n: usize, lines: usize) -> Vec<std::process::Child> {
        let exe = std::env::current_exe().unwrap();
        (0..n)
            .map(|k| {
                std::process::Command::new(&exe)
                    .args(["--exact", "routing::log::tests::child_appender", "--test-threads=1", "--quiet"])
                    .env("SYSTEM1_TEST_LOG_CHILD", log)
                    .env("SYSTEM1_TEST_LOG_WHO", k.to_string())
                    .env("SYSTEM1_TEST_LOG_LINES", lines.to_string())
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn rewrites_concurrent_with_appends_lose_nothing() {
        let (_scratch, log) = scratch();
        let mut children = spawn_appenders(&log, 8, 20);
        let mut rewrites = 0;
        let mut all_done = false;
        while !all_done {
            rewrite_at(&log, |entries| {
                for e in entries.iter_mut() {
                    e.other.insert("seen".into(), json!(true));
                }
            })
            .unwrap();
            // And the streaming update of one entry, which copies the whole log too.
            let first = read_all_at(&log).unwrap().entries.first().and_then(|e| e.id.clone());
            if let Some(id) = first {
                let n = rewrites;
                update_at(&log, &id, |e| {
                    e.other.insert("seen".into(), json!(n));
                    Ok(())
                })
                .unwrap()
                .unwrap();
            }
            rewrites += 1;
            all_done = children.iter_mut().all(|c| c.try_wait().unwrap().is_some());
        }
        for mut c in children {
            assert!(c.wait().unwrap().success());
        }
        let got = read_all_at(&log).unwrap();
        assert_eq!(got.skipped, 0);
        assert_eq!(got.entries.len(), 8 * 20, "after {rewrites} rewrites");
        let ids: std::collections::HashSet<_> = ids(&got).into_iter().collect();
        assert_eq!(ids.len(), 8 * 20);
    }

    #[test]
    fn fifty_processes_append_fifty_whole_lines() {
        let (_scratch, log) = scratch();
        for mut c in spawn_appenders(&log, 50, 1) {
            assert!(c.wait().unwrap().success());
        }
        let got = read_all_at(&log).unwrap();
        assert_eq!(got.skipped, 0);
        assert_eq!(got.entries.len(), 50);
        let who: std::collections::HashSet<_> = got.entries.iter().map(|e| e.other["who"].as_str().unwrap()).collect();
        assert_eq!(who.len(), 50);
    }

    #[test]
    fn find_agent_takes_the_last_agent_entry_of_the_spawn() {
        let (_scratch, log) = scratch();
        let line = |v: Value| append_at(&log, &serde_json::from_value(v).unwrap()).unwrap();
        line(json!({"id": "1", "source": "agent", "session_id": "s1", "tool_use_id": "toolu_a", "chosen": "opus"}));
        line(json!({"id": "2", "source": "prompt", "session_id": "s1", "tool_use_id": "toolu_a"}));
        line(json!({"id": "3", "source": "agent", "session_id": "s2", "tool_use_id": "toolu_a"}));
        line(json!({"id": "4", "source": "agent", "session_id": "s1", "tool_use_id": "toolu_ab"}));
        std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .unwrap()
            .write_all(b"{\"tool_use_id\":\"toolu_a\", torn")
            .unwrap();
        let found = |id: &str, session: Option<&str>| find_agent_at(&log, id, session).and_then(|e| e.id);
        assert_eq!(found("toolu_a", Some("s1")).as_deref(), Some("1"), "not the prompt entry, not another session's");
        assert_eq!(found("toolu_a", None).as_deref(), Some("3"), "the last one");
        assert_eq!(found("toolu_ab", Some("s1")).as_deref(), Some("4"));
        assert_eq!(found("toolu_b", None), None);
        assert_eq!(find_agent_at(&log.with_file_name("absent.jsonl"), "toolu_a", None).map(|e| e.id), None);
    }
}
