//! File helpers every module shares: replacing a file atomically ([`Staged`],
//! [`write_atomically`]), reading a JSON file that may be absent ([`read_json`]), and reading a
//! file that someone else may have put there ([`read_small_file`]: a regular file of bounded size,
//! never a FIFO or a device that would hang or flood the reader).

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use crate::paths;

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

    /// The temp file's path, for a reader that checks the new version before the commit.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    fn file(&mut self) -> io::Result<&mut File> {
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

/// Replaces `path` with `bytes` through a [`Staged`] file (mode 0o666 less the umask, as
/// `File::create` makes it).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut staged = Staged::create(path, 0o666)?;
    staged.set_contents(bytes)?;
    staged.commit()
}

/// The text of `path` (links followed) when it is a regular file of at most `cap` bytes. Anything
/// else is an error that says what it is, found without blocking: a FIFO is opened non-blocking
/// and refused, so a reader never waits for a writer that will not come, and a device such as
/// `/dev/zero` is refused before a byte is read.
pub fn read_small_file(path: &Path, cap: u64) -> io::Result<String> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let file = opts.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "is not a regular file"));
    }
    if meta.len() > cap {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("is larger than {}", size_text(cap))));
    }
    let mut text = String::new();
    // A file that grows after the check is still read no further than the cap.
    file.take(cap + 1).read_to_string(&mut text)?;
    if text.len() as u64 > cap {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("is larger than {}", size_text(cap))));
    }
    Ok(text)
}

fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
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

/// The JSON document in `path`: `Ok(None)` when there is no such file.
pub fn read_json(path: &Path) -> Result<Option<Value>, ReadError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ReadError::Unreadable(e)),
    };
    serde_json::from_str(&text).map(Some).map_err(ReadError::NotJson)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("system1-fsutil-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
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
        let dir = scratch("write");
        let p = dir.join("sub").join("f.json");
        write_atomically(&p, b"one").unwrap();
        write_atomically(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        assert!(leftovers(p.parent().unwrap()).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_staged_file_is_the_target_only_once_committed() {
        let dir = scratch("staged");
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
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_staged_file_never_writes_through_a_planted_link() {
        let dir = scratch("link");
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
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn read_json_tells_missing_from_broken() {
        let dir = std::env::temp_dir().join(format!("system1-fsutil-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(matches!(read_json(&dir.join("absent.json")), Ok(None)));
        std::fs::write(dir.join("ok.json"), r#"{"a": 1}"#).unwrap();
        assert_eq!(read_json(&dir.join("ok.json")).unwrap().unwrap()["a"], 1);
        std::fs::write(dir.join("bad.json"), "{").unwrap();
        let err = read_json(&dir.join("bad.json")).unwrap_err();
        assert!(matches!(err, ReadError::NotJson(_)) && err.to_string().starts_with("is not JSON: "), "{err}");
        assert!(matches!(read_json(&dir), Err(ReadError::Unreadable(_))), "a directory is not a file");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
