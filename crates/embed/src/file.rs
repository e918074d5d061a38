//! How the runtime opens a model folder's files: links followed (a Hugging Face cache snapshot is
//! a folder of links into its blobs), but only a regular file of at most a cap is read. A FIFO is
//! opened non-blocking and refused, so a load never waits for a writer; a device such as
//! `/dev/zero` is refused, so it never floods memory; a bigger file is refused unread. The product
//! opens its own files the same way, with more choices about links (src/fsutil.rs, `open_read`);
//! this is the one case the runtime needs, so that it depends on nothing of the product.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// `path` opened for reading when it is a regular file of at most `cap` bytes, and its length.
pub(crate) fn open_regular(path: &Path, cap: u64) -> io::Result<(File, u64)> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK changes nothing for a regular file; a FIFO then opens at once (and is refused
        // below) instead of waiting for a writer.
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let file = opts.open(path)?;
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

/// The text of `path`, opened by [`open_regular`]; a file that grows after the check is read no
/// further than the cap, and not UTF-8 is an error.
pub(crate) fn read_text(path: &Path, cap: u64) -> io::Result<String> {
    let (file, len) = open_regular(path, cap)?;
    // The length is a hint for the buffer only: the file came through the cap.
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("is larger than {}", size_text(cap))));
    }
    String::from_utf8(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "is not UTF-8 text"))
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

fn size_text(bytes: u64) -> String {
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

    #[test]
    fn only_a_regular_file_within_its_cap_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("config.json");
        std::fs::write(&small, "{}").unwrap();
        assert_eq!(read_text(&small, 2).unwrap(), "{}");
        let err = read_text(&small, 1).unwrap_err().to_string();
        assert!(err.contains("is larger than 1 bytes (2 bytes)"), "{err}");
        let err = read_text(dir.path(), 1 << 20).unwrap_err().to_string();
        assert!(err.contains("is not a regular file (a folder)"), "{err}");
        #[cfg(unix)]
        {
            let link = dir.path().join("link.json");
            std::os::unix::fs::symlink(&small, &link).unwrap();
            assert_eq!(read_text(&link, 2).unwrap(), "{}", "links are followed");
            let err = read_text(Path::new("/dev/zero"), 1 << 20).unwrap_err().to_string();
            assert!(err.contains("is not a regular file (a device)"), "{err}");
        }
    }
}
