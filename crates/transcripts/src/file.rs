//! How the reader opens a transcript or a `.meta.json`: Claude Code writes both as regular files in
//! place, so a symbolic link there was planted and is refused, and only a regular file of at most a
//! cap is read. A FIFO is opened non-blocking and refused, so a report never waits for a writer; a
//! device such as `/dev/zero` is refused, so it never floods the reader. The product opens its own
//! files the same way, with more choices about links (src/fsutil.rs, `open_read`); this is the one
//! case the reader needs, so that it depends on nothing of the product.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// `path` opened for reading when it is a regular file of at most `cap` bytes and not a link, and
/// its length.
pub(crate) fn open_regular(path: &Path, cap: u64) -> io::Result<(File, u64)> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK changes nothing for a regular file; a FIFO then opens at once (and is refused
        // below) instead of waiting for a writer. O_NOFOLLOW refuses a link (ELOOP).
        opts.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW);
    }
    let file = opts.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "is not a regular file"));
    }
    if meta.len() > cap {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("is larger than {cap} bytes")));
    }
    Ok((file, meta.len()))
}

/// The bytes of `path`, opened by [`open_regular`]; a file that grows after the check is read no
/// further than the cap.
pub(crate) fn read_regular(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let (file, len) = open_regular(path, cap)?;
    // The length is a hint for the buffer only: the file came through the cap.
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("is larger than {cap} bytes")));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_regular_file_in_place_within_its_cap_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("agent-a.meta.json");
        std::fs::write(&small, "{}").unwrap();
        assert_eq!(read_regular(&small, 2).unwrap(), b"{}");
        assert!(read_regular(&small, 1).unwrap_err().to_string().contains("is larger than 1 bytes"));
        assert!(read_regular(dir.path(), 1 << 20).is_err(), "a folder");
        #[cfg(unix)]
        {
            let link = dir.path().join("link.jsonl");
            std::os::unix::fs::symlink(&small, &link).unwrap();
            assert!(read_regular(&link, 2).is_err(), "a link is not followed");
            assert!(read_regular(Path::new("/dev/zero"), 1 << 20).is_err(), "a device");
            // A FIFO is refused at once, not waited on for a writer.
            let fifo = dir.path().join("fifo.jsonl");
            assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
            assert!(read_regular(&fifo, 1 << 20).unwrap_err().to_string().contains("not a regular file"));
        }
    }
}
