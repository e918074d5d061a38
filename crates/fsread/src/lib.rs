//! How system1 opens a file it only reads from a place someone else can write to: [`open_read`],
//! and [`read_file`], [`read_text`] on it. Only a regular file of at most a cap is read, and its
//! name may be a symbolic link only as a [`Links`] policy allows. A FIFO is opened non-blocking and
//! refused, so a reader never waits for a writer; a device such as `/dev/zero` is refused, so it
//! never floods memory; a bigger file is refused unread. The product (src/fsutil.rs), the model
//! runtime (crates/embed) and the transcript reader (crates/transcripts) all open through it; it
//! depends on none of them.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// What a file that is only read may be when its name is a symbolic link.
#[derive(Debug, Clone, Copy)]
pub enum Links<'a> {
    /// Followed wherever it leads (the user's config, which a dotfile manager may link; a model
    /// folder that is a Hugging Face cache snapshot, whose files are links into its blobs).
    Follow,
    /// Refused: one of system1's own files, or Claude Code's, which their writers only ever make
    /// as regular files in place, so a link there was planted.
    Refuse,
    /// Followed only to a place inside this folder (the skills folder a SKILL.md belongs to).
    Within(&'a Path),
}

/// Opens `path` to be read, when it is a regular file of at most `cap` bytes whose name is a link
/// only as `links` allows. Everything else is an error that says what it is, found without
/// blocking and before a byte is read: a FIFO is opened non-blocking and refused, so a reader
/// never waits for a writer that will not come; a device such as `/dev/zero` is refused, so it
/// never floods the reader; a bigger file is refused unread. Returns the file and its length. The
/// length is what the file had when opened: read it through [`Read::take`] of `len + 1` (as
/// [`read_file`] does) when it may grow meanwhile.
pub fn open_read(path: &Path, cap: u64, links: Links<'_>) -> io::Result<(File, u64)> {
    let resolved;
    let mut target = path;
    if let Links::Within(root) = links {
        resolved = std::fs::canonicalize(path)?;
        let root = std::fs::canonicalize(root)?;
        if !resolved.starts_with(&root) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("is a link that leads out of {}, to {}", root.display(), resolved.display()),
            ));
        }
        target = &resolved;
    }
    let mut opts = OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK changes nothing for a regular file; a FIFO then opens at once (and is refused
        // below) instead of waiting for a writer.
        let nofollow = if matches!(links, Links::Follow) { 0 } else { libc::O_NOFOLLOW };
        opts.custom_flags(libc::O_NONBLOCK | nofollow);
    }
    let file = match opts.open(target) {
        Ok(f) => f,
        // ELOOP is what O_NOFOLLOW gives for a link (EMLINK on FreeBSD).
        #[cfg(unix)]
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::EMLINK)) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a symbolic link, which system1 does not follow there (only its own writer puts a file there)",
            ));
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("is not a regular file ({})", kind_of(&meta))));
    }
    if meta.len() > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("is larger than {} ({})", size_text(cap), size_text(meta.len())),
        ));
    }
    Ok((file, meta.len()))
}

/// What a file that is not a regular one is, for an error.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
    }
    if meta.is_dir() { "a folder" } else { "not a file" }
}

/// The bytes of `path`, opened by [`open_read`]: a regular file of at most `cap` bytes. A file that
/// grows after the check is still read no further than the cap.
pub fn read_file(path: &Path, cap: u64, links: Links<'_>) -> io::Result<Vec<u8>> {
    let (file, len) = open_read(path, cap, links)?;
    // The length is a hint for the buffer only: the file came through open_read's cap.
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("is larger than {}", size_text(cap))));
    }
    Ok(bytes)
}

/// The text of `path`, read by [`read_file`]; not UTF-8 is an error.
pub fn read_text(path: &Path, cap: u64, links: Links<'_>) -> io::Result<String> {
    String::from_utf8(read_file(path, cap, links)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "is not UTF-8 text"))
}

/// A size as the errors above say it: in whole MiB or KiB when it is one, else in bytes.
pub fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn open_read_takes_only_a_bounded_regular_file_and_links_where_allowed() {
        let scratch = tempfile::Builder::new().prefix("system1-test-").tempdir().unwrap();
        let dir = scratch.path();
        let inside = dir.join("inside");
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::write(inside.join("f"), "text").unwrap();
        std::fs::write(dir.join("outside"), "secret").unwrap();
        std::os::unix::fs::symlink(inside.join("f"), inside.join("in-link")).unwrap();
        std::os::unix::fs::symlink(dir.join("outside"), inside.join("out-link")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", inside.join("zero")).unwrap();
        let fifo = inside.join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let err = |p: &Path, links| read_text(p, 1024, links).unwrap_err().to_string();

        assert_eq!(read_text(&inside.join("f"), 4, Links::Refuse).unwrap(), "text");
        assert_eq!(
            read_text(&inside.join("f"), 3, Links::Follow).unwrap_err().to_string(),
            "is larger than 3 bytes (4 bytes)"
        );
        assert_eq!(read_text(&inside.join("out-link"), 64, Links::Follow).unwrap(), "secret");
        assert!(err(&inside.join("in-link"), Links::Refuse).contains("symbolic link"));
        assert_eq!(read_text(&inside.join("in-link"), 64, Links::Within(&inside)).unwrap(), "text");
        assert!(err(&inside.join("out-link"), Links::Within(&inside)).contains("leads out of"));
        assert_eq!(err(&inside.join("zero"), Links::Follow), "is not a regular file (a device)");
        assert_eq!(err(Path::new("/dev/zero"), Links::Refuse), "is not a regular file (a device)");
        assert_eq!(err(&fifo, Links::Follow), "is not a regular file (a FIFO)");
        assert_eq!(err(&fifo, Links::Refuse), "is not a regular file (a FIFO)");
        assert_eq!(err(&inside, Links::Follow), "is not a regular file (a folder)");
        assert_eq!(read_text(&dir.join("absent"), 64, Links::Refuse).unwrap_err().kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn the_bytes_are_read_whole_and_only_within_the_cap() {
        let scratch = tempfile::Builder::new().prefix("system1-test-").tempdir().unwrap();
        let small = scratch.path().join("agent-a.meta.json");
        std::fs::write(&small, "{}").unwrap();
        assert_eq!(read_file(&small, 2, Links::Refuse).unwrap(), b"{}");
        assert_eq!(open_read(&small, u64::MAX, Links::Refuse).unwrap().1, 2);
        assert_eq!(read_file(&small, 1, Links::Refuse).unwrap_err().to_string(), "is larger than 1 bytes (2 bytes)");
        std::fs::write(&small, [0xff, 0xfe]).unwrap();
        assert_eq!(read_text(&small, 2, Links::Follow).unwrap_err().to_string(), "is not UTF-8 text");
    }

    #[test]
    fn sizes_are_said_in_the_largest_whole_unit() {
        assert_eq!(size_text(3), "3 bytes");
        assert_eq!(size_text(1500), "1500 bytes");
        assert_eq!(size_text(64 << 10), "64 KiB");
        assert_eq!(size_text(4 << 30), "4096 MiB");
    }
}
