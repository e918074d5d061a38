//! File helpers every module shares: replacing a file atomically ([`Staged`],
//! [`write_atomically`], [`write_private`], and [`write_through`] for a file that may be a link),
//! reading a JSON file that may be absent ([`read_json`]), system1's versioned files
//! ([`Versioned`]: read with their format and version checked, written privately), opening a file
//! that is only read ([`open_read`], and [`read_file`], [`read_text`] on it: a regular file of
//! bounded size, a link only where one may be, never a FIFO or a device that would hang or flood
//! the reader; re-exported from crates/fsread), and system1's own private files ([`open_private`], [`private_dir`], and [`WriteLock`] for their writers).
//!
//! Private files (the routing log with its prompts, the pause file, the decision tallies, the
//! calibration) are 0600 and their folders 0700, whatever the umask, and they are opened only in
//! place: a link planted under their name, a file another user owns or one with a second name
//! (a hard link) is refused with an error that says which, never written through. On a shared
//! machine that is what keeps one user's prompts from another.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use crate::paths;

// The guarded open of a file only read is its own crate (crates/fsread), which the model runtime
// and the transcript reader share; the product's modules reach it here, as before.
use system1_fsread::size_text;
pub use system1_fsread::{Links, open_read, read_file, read_text};

/// A new version of a file, written to a temp file beside it and renamed over it by
/// [`Staged::commit`], so that a reader, or a crash, sees the old file or the new one and never
/// half of one. Dropped before the commit, the temp file is removed.
pub struct Staged {
    /// `None` once committed.
    file: Option<File>,
    tmp: PathBuf,
    target: PathBuf,
}

impl Staged {
    /// Creates the temp file `.<name>.<pid>-<n>.tmp` in `target`'s directory (creating the
    /// directory if needed), with `mode` on Unix (less the umask). The temp file is always a new
    /// one, never an existing file or a link planted under its name.
    pub fn create(target: &Path, mode: u32) -> io::Result<Staged> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        paths::ensure_parent(target)?;
        remove_stale_temps(target);
        let name = target.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_else(|| "file".into());
        let mut opts = OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(mode);
        }
        #[cfg(not(unix))]
        let _ = mode;
        let mut tries = 0;
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let tmp = target.with_file_name(format!(".{name}.{}-{n}.tmp", std::process::id()));
            match opts.open(&tmp) {
                Ok(file) => return Ok(Staged { file: Some(file), tmp, target: target.to_path_buf() }),
                // A leftover of a dead process that had our pid: take the next name.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 100 => tries += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// Sets the new version's mode exactly: the umask does not apply (Unix only).
    pub fn set_mode(&mut self, mode: u32) -> io::Result<()> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            self.file()?.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        #[cfg(not(unix))]
        let _ = mode;
        Ok(())
    }

    /// Gives the new version this owner and group (Unix only), as the file it replaces had.
    #[cfg(unix)]
    fn set_owner(&mut self, uid: u32, gid: u32) -> io::Result<()> {
        std::os::unix::fs::fchown(self.file()?, Some(uid), Some(gid))
    }

    /// The temp file's path, for a reader that checks the new version before the commit.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// The new version, to write it piece by piece (a file too big to hold).
    pub fn file(&mut self) -> io::Result<&mut File> {
        self.file.as_mut().ok_or_else(|| io::Error::other("the staged file is already committed"))
    }

    /// Replaces what was written so far with `bytes`.
    pub fn set_contents(&mut self, bytes: &[u8]) -> io::Result<()> {
        let f = self.file()?;
        f.set_len(0)?;
        f.rewind()?;
        f.write_all(bytes)
    }

    /// Copies `source`'s bytes into the new version.
    pub fn copy_from(&mut self, source: &Path) -> io::Result<u64> {
        let mut from = File::open(source)?;
        io::copy(&mut from, self.file()?)
    }

    /// Flushes the new version to disk and renames it over the target; then flushes the directory
    /// entry (best effort: not every platform can open a directory).
    pub fn commit(mut self) -> io::Result<()> {
        let file = self.file.take().ok_or_else(|| io::Error::other("the staged file is already committed"))?;
        let synced = file.sync_all();
        // Closed before the rename, which Windows refuses on an open file.
        drop(file);
        let renamed = synced.and_then(|()| std::fs::rename(&self.tmp, &self.target));
        if renamed.is_err() {
            let _ = std::fs::remove_file(&self.tmp);
        }
        renamed?;
        #[cfg(unix)]
        if let Some(dir) = self.target.parent()
            && let Ok(d) = File::open(if dir.as_os_str().is_empty() { Path::new(".") } else { dir })
        {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// A temp file older than this is a leftover even when a process with its pid runs (pids are
/// reused); a live rewrite writes its file as it goes.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes what killed writers left of `target`'s new versions: the [`Staged`] temp files
/// (`.<name>.<pid>-<n>.tmp`, each a whole copy of the file: the routing log's hold the user's
/// prompts) of processes that are gone, or that are older than an hour. Only regular files of
/// ours; this process's own are left alone. Returns how many were removed.
pub fn remove_stale_temps(target: &Path) -> usize {
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else { return 0 };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let prefix = format!(".{}.", name.to_string_lossy());
    let Ok(read) = std::fs::read_dir(dir) else { return 0 };
    let mut removed = 0;
    for item in read.flatten() {
        let file_name = item.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix.as_str()))
            .and_then(|n| n.strip_suffix(".tmp"))
            .and_then(|n| n.split_once('-'))
            .filter(|(pid, n)| n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty() && !pid.is_empty())
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(meta) = item.path().symlink_metadata() else { continue };
        if !meta.is_file() || !owned_by_us(&meta) {
            continue;
        }
        let old = meta.modified().ok().and_then(|m| m.elapsed().ok()).is_some_and(|age| age > STALE_AFTER);
        if (old || !process_alive(pid)) && std::fs::remove_file(item.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(unix)]
fn owned_by_us(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    meta.uid() == euid()
}

#[cfg(not(unix))]
fn owned_by_us(_meta: &std::fs::Metadata) -> bool {
    true
}

/// Whether a process with this pid runs (one of another user counts: it may be writing).
#[cfg(unix)]
#[allow(unsafe_code, reason = "kill(2) with signal 0 is the one way to ask")]
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: signal 0 sends nothing; kill only checks that the process exists and may be signalled.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Without a way to ask, every process counts as running: only age removes a leftover.
#[cfg(not(unix))]
fn process_alive(_pid: u32) -> bool {
    true
}

/// Replaces `path` with `bytes` through a [`Staged`] file (mode 0o666 less the umask, as
/// `File::create` makes it).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut staged = Staged::create(path, 0o666)?;
    staged.set_contents(bytes)?;
    staged.commit()
}

/// The mode of system1's private files, whatever the umask.
pub const PRIVATE_MODE: u32 = 0o600;

/// Replaces `path`, one of system1's private files, with `bytes`: mode 0600 whatever the umask.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut staged = Staged::create(path, PRIVATE_MODE)?;
    staged.set_mode(PRIVATE_MODE)?;
    staged.set_contents(bytes)?;
    staged.commit()
}

/// Replaces the file `path` names with `bytes`, atomically: when `path` is a link (a dotfile
/// manager's), the file it points to is replaced and the link stays; the file keeps its mode, and
/// its owner where this process may set it. A new file is private (0600).
pub fn write_through(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let real = real_file(path)?;
    let old = std::fs::metadata(&real).ok();
    #[cfg(unix)]
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        old.as_ref().map(|m| m.permissions().mode() & 0o7777).unwrap_or(PRIVATE_MODE)
    };
    #[cfg(not(unix))]
    let mode = PRIVATE_MODE;
    let mut staged = Staged::create(&real, mode)?;
    staged.set_mode(mode)?;
    #[cfg(unix)]
    if let Some(m) = &old {
        use std::os::unix::fs::MetadataExt;
        if m.uid() != euid() || m.gid() != staged.file()?.metadata()?.gid() {
            // Best effort: only a privileged process may give a file away.
            let _ = staged.set_owner(m.uid(), m.gid());
        }
    }
    staged.set_contents(bytes)?;
    staged.commit()
}

/// The file `path` names, links resolved; for a link to a file not there yet, where it points.
fn real_file(path: &Path) -> io::Result<PathBuf> {
    match std::fs::canonicalize(path) {
        Ok(p) => Ok(p),
        Err(e) if e.kind() == io::ErrorKind::NotFound => match std::fs::read_link(path) {
            Ok(target) => Ok(path.parent().map(|d| d.join(&target)).unwrap_or(target)),
            Err(_) => Ok(path.to_path_buf()),
        },
        Err(e) => Err(e),
    }
}

/// This process's effective user id.
#[cfg(unix)]
#[allow(unsafe_code, reason = "geteuid(2) is the one way to ask")]
pub fn euid() -> u32 {
    // SAFETY: geteuid takes no arguments, touches no memory of ours and cannot fail.
    unsafe { libc::geteuid() }
}

fn refused(kind: io::ErrorKind, why: String) -> io::Error {
    io::Error::new(kind, why)
}

/// Opens one of system1's private files with `opts` (which say read, write, append, create), in
/// place: a link at `path` is refused (opened with `O_NOFOLLOW`), and so is anything that is not a
/// regular file (a FIFO is opened non-blocking, so it is refused rather than waited on), a file
/// another user owns, or one with a second name. A file created here is 0600; an existing one of
/// ours with a wider mode is narrowed to 0600.
pub fn open_private(path: &Path, opts: &mut OpenOptions) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
        opts.mode(PRIVATE_MODE).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        let file = match opts.open(path) {
            Ok(f) => f,
            // ELOOP is what O_NOFOLLOW gives for a link (EMLINK on FreeBSD).
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::EMLINK)) => {
                return Err(refused(
                    io::ErrorKind::InvalidInput,
                    "is a symbolic link, which system1 never writes through (remove it; system1 writes a file of its own there)".into(),
                ));
            }
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                return Err(refused(io::ErrorKind::InvalidInput, "is a FIFO or a socket, not a regular file".into()));
            }
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(refused(io::ErrorKind::InvalidInput, "is not a regular file".into()));
        }
        if meta.uid() != euid() {
            return Err(refused(
                io::ErrorKind::PermissionDenied,
                format!(
                    "belongs to another user (uid {}), so system1 will not write its data into it (remove it)",
                    meta.uid()
                ),
            ));
        }
        if meta.nlink() > 1 {
            return Err(refused(
                io::ErrorKind::InvalidInput,
                "has another name (a hard link), so writing it would write another file too (remove it)".into(),
            ));
        }
        if meta.mode() & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(PRIVATE_MODE))?;
        }
        Ok(file)
    }
    #[cfg(not(unix))]
    {
        opts.open(path)
    }
}

/// The exclusive lock of a private file's writers, on `<file>.lock` beside it (a private folder
/// and lock file, opened only in place); released when dropped, and by the OS if the process dies.
pub struct WriteLock(File);

impl WriteLock {
    pub fn take(file: &Path) -> io::Result<WriteLock> {
        if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
            private_dir(dir)?;
        }
        let mut name = file.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        name.push(".lock");
        let lock =
            open_private(&file.with_file_name(name), OpenOptions::new().create(true).truncate(false).write(true))?;
        lock.lock()?;
        Ok(WriteLock(lock))
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// Makes `dir`, a folder of system1's private files, ready to hold them: created 0700 if missing
/// ([`paths::create_dirs`]); refused when another user owns it; no longer writable by group or
/// others when it was (an install dir made by an earlier version under a permissive umask).
pub fn private_dir(dir: &Path) -> io::Result<()> {
    paths::create_dirs(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let meta = std::fs::metadata(dir)?;
        if meta.uid() != euid() {
            return Err(refused(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} belongs to another user (uid {}); system1 keeps its files only in a folder of yours",
                    dir.display(),
                    meta.uid()
                ),
            ));
        }
        let mode = meta.mode() & 0o7777;
        if mode & 0o022 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode & !0o022))?;
        }
    }
    Ok(())
}

/// The text of `path` (links followed) when it is a regular file of at most `cap` bytes:
/// [`read_text`] with [`Links::Follow`].
pub fn read_small_file(path: &Path, cap: u64) -> io::Result<String> {
    read_text(path, cap, Links::Follow)
}

/// Why a JSON file that exists could not be used.
#[derive(Debug)]
pub enum ReadError {
    Unreadable(io::Error),
    NotJson(serde_json::Error),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Unreadable(e) => write!(f, "cannot be read: {e}"),
            ReadError::NotJson(e) => write!(f, "is not JSON: {e}"),
        }
    }
}

/// The largest JSON file [`read_json`] reads: Claude Code's `.claude.json` keeps every project's
/// history and grows to tens of MB; more than this is not one of the files it reads.
pub const MAX_JSON_BYTES: u64 = 256 << 20;

/// The JSON document in `path` (links followed, at most [`MAX_JSON_BYTES`]): `Ok(None)` when there
/// is no such file.
pub fn read_json(path: &Path) -> Result<Option<Value>, ReadError> {
    let text = match read_text(path, MAX_JSON_BYTES, Links::Follow) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ReadError::Unreadable(e)),
    };
    serde_json::from_str(&text).map(Some).map_err(ReadError::NotJson)
}

/// One of system1's versioned JSON files (the calibration fits, the local engine's heads): an object
/// that names its `format` and `version`, which this build reads only when both are its own. It is
/// read whole from a regular file of at most [`Versioned::MAX_BYTES`] in place (one of system1's
/// own, so a link there was planted), and written back private and atomic in its layout
/// ([`Versioned::to_text`]), never larger than its reader takes.
pub trait Versioned: Sized + serde::Serialize + serde::de::DeserializeOwned {
    /// The `format` the file names.
    const FORMAT: &'static str;
    /// The `version` this build reads and writes.
    const VERSION: u64;
    /// What it is, for the error on one that does not parse: "a calibration file".
    const WHAT: &'static str;
    /// The largest file read.
    const MAX_BYTES: u64;
    /// The format and version this one names.
    fn names(&self) -> (&str, u64);
    /// Its own rules, past the format and the version.
    fn check(&self) -> Result<(), String>;
    /// The file's text as written: pretty JSON with a final newline, unless a kind lays it out
    /// otherwise.
    fn to_text(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self).map(|t| t + "\n")
    }
}

/// Parses `text` as a `T`: JSON of its shape, its format and version, its own rules.
pub fn parse_versioned<T: Versioned>(text: &str) -> Result<T, String> {
    let file: T = serde_json::from_str(text).map_err(|e| format!("not {}: {e}", T::WHAT))?;
    let (format, version) = file.names();
    check_format(format, version, T::FORMAT, T::VERSION)?;
    file.check()?;
    Ok(file)
}

/// Why a versioned file that exists could not be used.
#[derive(Debug)]
pub enum VersionedError {
    /// It could not be read (not a regular file, too big, a link, not UTF-8, ...).
    Unreadable(io::Error),
    /// It was read and is not one this build takes.
    Invalid(String),
}

impl fmt::Display for VersionedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VersionedError::Unreadable(e) => write!(f, "{e}"),
            VersionedError::Invalid(why) => f.write_str(why),
        }
    }
}

/// The `T` in `path`: `Ok(None)` when there is no such file.
pub fn read_versioned<T: Versioned>(path: &Path) -> Result<Option<T>, VersionedError> {
    match read_text(path, T::MAX_BYTES, Links::Refuse) {
        Ok(text) => parse_versioned(&text).map(Some).map_err(VersionedError::Invalid),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(VersionedError::Unreadable(e)),
    }
}

/// Replaces `path` with `file`, privately and atomically. A file larger than
/// [`Versioned::MAX_BYTES`] is not written (its reader would refuse it): the old one stays as it was.
pub fn write_versioned<T: Versioned>(path: &Path, file: &T) -> io::Result<()> {
    let text = file.to_text().map_err(io::Error::other)?;
    if text.len() as u64 > T::MAX_BYTES {
        return Err(io::Error::other(format!(
            "it would be {:.2} MiB, over the {} {} may be; nothing was written, the old file is as it was",
            text.len() as f64 / f64::from(1u32 << 20),
            size_text(T::MAX_BYTES),
            T::WHAT
        )));
    }
    write_private(path, text.as_bytes())
}

/// Checks the `format` and `version` a versioned file names against the ones this build reads; the
/// error says which is off.
fn check_format(format: &str, version: u64, expected_format: &str, expected_version: u64) -> Result<(), String> {
    if format != expected_format {
        return Err(format!("format is {format:?}, expected {expected_format:?}"));
    }
    if version != expected_version {
        return Err(format!("version {version} is not supported (this build reads version {expected_version})"));
    }
    Ok(())
}

/// A scratch folder for a unit test, in the system's temp folder: made empty, and removed with
/// everything in it when dropped (tempfile's `TempDir`, which names it so no two tests share one).
#[cfg(test)]
pub fn scratch_dir() -> tempfile::TempDir {
    #[allow(clippy::expect_used)]
    tempfile::Builder::new().prefix("system1-test-").tempdir().expect("a scratch folder in the temp folder")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch folder, which goes when the first value is dropped.
    fn scratch() -> (tempfile::TempDir, PathBuf) {
        let dir = scratch_dir();
        let path = dir.path().to_path_buf();
        (dir, path)
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn an_atomic_write_replaces_the_file_and_leaves_no_temp_file() {
        let (_scratch, dir) = scratch();
        let p = dir.join("sub").join("f.json");
        write_atomically(&p, b"one").unwrap();
        write_atomically(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        assert!(leftovers(p.parent().unwrap()).is_empty());
    }

    #[test]
    fn a_staged_file_is_the_target_only_once_committed() {
        let (_scratch, dir) = scratch();
        let p = dir.join("config.toml");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&p, "old").unwrap();
        let mut staged = Staged::create(&p, 0o600).unwrap();
        staged.set_contents(b"a longer first draft").unwrap();
        staged.set_contents(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(staged.path()).unwrap(), "new", "the draft is replaced whole");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        drop(staged);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        assert!(leftovers(&dir).is_empty(), "dropped uncommitted, the temp file goes");
        let mut staged = Staged::create(&p, 0o600).unwrap();
        staged.set_contents(b"new").unwrap();
        staged.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o077, 0, "the mode is kept");
        }
        assert!(leftovers(&dir).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn a_staged_file_never_writes_through_a_planted_link() {
        let (_scratch, dir) = scratch();
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        // Plant links under the next few temp names this process would take.
        let target = dir.join("f");
        let probe = Staged::create(&target, 0o600).unwrap();
        let taken: String = probe.path().file_name().unwrap().to_string_lossy().to_string();
        drop(probe);
        let n: u64 = taken.rsplit('-').next().unwrap().trim_end_matches(".tmp").parse().unwrap();
        for k in 1..4 {
            let name = format!(".f.{}-{}.tmp", std::process::id(), n + k);
            std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
        }
        write_atomically(&target, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    }

    #[test]
    fn read_json_tells_missing_from_broken() {
        let _tmp = crate::fsutil::scratch_dir();
        let dir = _tmp.path().to_path_buf();
        std::fs::create_dir_all(&dir).unwrap();
        assert!(matches!(read_json(&dir.join("absent.json")), Ok(None)));
        std::fs::write(dir.join("ok.json"), r#"{"a": 1}"#).unwrap();
        assert_eq!(read_json(&dir.join("ok.json")).unwrap().unwrap()["a"], 1);
        std::fs::write(dir.join("bad.json"), "{").unwrap();
        let err = read_json(&dir.join("bad.json")).unwrap_err();
        assert!(matches!(err, ReadError::NotJson(_)) && err.to_string().starts_with("is not JSON: "), "{err}");
        assert!(matches!(read_json(&dir), Err(ReadError::Unreadable(_))), "a directory is not a file");
    }

    #[test]
    fn check_format_names_what_is_off() {
        assert_eq!(check_format("system1-x", 1, "system1-x", 1), Ok(()));
        assert_eq!(check_format("other", 1, "system1-x", 1), Err(r#"format is "other", expected "system1-x""#.into()));
        assert_eq!(
            check_format("system1-x", 2, "system1-x", 1),
            Err("version 2 is not supported (this build reads version 1)".into())
        );
    }

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Counted {
        format: String,
        version: u64,
        count: u64,
    }

    impl Versioned for Counted {
        const FORMAT: &'static str = "system1-counted";
        const VERSION: u64 = 1;
        const WHAT: &'static str = "a counted file";
        const MAX_BYTES: u64 = 1 << 10;
        fn names(&self) -> (&str, u64) {
            (&self.format, self.version)
        }
        fn check(&self) -> Result<(), String> {
            if self.count == 0 { Err("count is 0".into()) } else { Ok(()) }
        }
    }

    #[test]
    fn a_versioned_file_is_taken_only_when_its_format_version_and_rules_hold() {
        let (_scratch, dir) = scratch();
        let path = dir.join("counted.json");
        assert!(matches!(read_versioned::<Counted>(&path), Ok(None)), "absent");
        let good = Counted { format: "system1-counted".into(), version: 1, count: 3 };
        write_versioned(&path, &good).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), serde_json::to_string_pretty(&good).unwrap() + "\n");
        assert_eq!(read_versioned::<Counted>(&path).unwrap(), Some(good));
        for (text, why) in [
            ("{broken", "not a counted file: "),
            (r#"{"format": "other", "version": 1, "count": 3}"#, "format is \"other\""),
            (r#"{"format": "system1-counted", "version": 2, "count": 3}"#, "version 2 is not supported"),
            (r#"{"format": "system1-counted", "version": 1, "count": 0}"#, "count is 0"),
        ] {
            std::fs::write(&path, text).unwrap();
            match read_versioned::<Counted>(&path) {
                Err(VersionedError::Invalid(e)) => assert!(e.starts_with(why), "{text}: {e}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        std::fs::write(&path, " ".repeat(2048)).unwrap();
        assert!(matches!(read_versioned::<Counted>(&path), Err(VersionedError::Unreadable(_))), "too big");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
