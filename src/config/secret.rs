//! An engine's API key read from a file only its owner can read (`api_key_file`), for the MCP
//! clients that do not pass the environment on to the servers they start, so that a key need live
//! neither in the environment nor in the config file (for users: docs/configuration.md#secrets).
//!
//! The file must be a regular file, not a symbolic link, owned by the user running system1 and
//! closed to group and others (mode 0600 or 0400); otherwise the key is not read and the config
//! has an error saying why and how to fix it. On Windows, where access is an ACL rather than a
//! mode, only the link and file checks apply.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// More than any API key; a bigger file is not a key.
const MAX_KEY_BYTES: u64 = 4096;

/// The key in `path`, trimmed; or why it cannot be used, naming the path.
pub fn read_key_file(path: &Path) -> Result<String, String> {
    let shown = path.display();
    let file = open_checked(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_KEY_BYTES + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_KEY_BYTES {
        return Err(format!("{shown} is larger than {MAX_KEY_BYTES} bytes; put only the key in it"));
    }
    let text = String::from_utf8(bytes).map_err(|_| format!("{shown} is not text; put only the key in it"))?;
    let key = text.trim();
    if key.is_empty() {
        return Err(format!("{shown} is empty; put the key in it"));
    }
    if key.chars().any(char::is_whitespace) {
        return Err(format!("{shown} holds more than one word; put only the key in it"));
    }
    Ok(key.to_string())
}

/// What in `key` no HTTP header can carry, as "a control character (U+0007) at character 4":
/// the first character that is not printable ASCII (a pasted newline, an escape, a curly quote),
/// never the key itself. None for a key a client can send.
pub fn unsendable(key: &str) -> Option<String> {
    let (at, c) = key.trim().chars().enumerate().find(|(_, c)| !c.is_ascii_graphic())?;
    let what = if c.is_control() {
        format!("a control character (U+{:04X})", c as u32)
    } else if c.is_whitespace() {
        "a space".to_string()
    } else {
        format!("a non-ASCII character (U+{:04X})", c as u32)
    };
    Some(format!("{what} at character {}", at + 1))
}

/// Opens the file after refusing a link in its place, then checks what was actually opened.
fn open_checked(path: &Path) -> Result<File, String> {
    let shown = path.display();
    let link = std::fs::symlink_metadata(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if link.file_type().is_symlink() {
        return Err(format!("{shown} is a symbolic link; name the key file itself, not a link to it"));
    }
    let file = open_no_follow(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{shown} is not a regular file"));
    }
    check_owner_and_mode(path, &meta)?;
    Ok(file)
}

#[cfg(unix)]
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // A link planted between the check above and this open is refused here, not followed; a FIFO
    // is opened without waiting for a writer (and then refused as not a regular file), since the
    // hooks load the config on every prompt.
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

#[cfg(unix)]
fn check_owner_and_mode(path: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let shown = path.display();
    let me = crate::fsutil::euid();
    if meta.uid() != me {
        return Err(format!(
            "{shown} belongs to another user (uid {}, you are {me}); the key file must be yours",
            meta.uid()
        ));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "{shown} can be read or changed by other users (mode {mode:04o}); make it yours alone: chmod 600 {shown}"
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_owner_and_mode(_path: &Path, _meta: &std::fs::Metadata) -> Result<(), String> {
    Ok(())
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    /// A scratch folder, which goes when the first value is dropped.
    fn scratch() -> (tempfile::TempDir, PathBuf) {
        let dir = crate::fsutil::scratch_dir();
        let path = dir.path().to_path_buf();
        (dir, path)
    }

    fn key_file(dir: &Path, text: &str, mode: u32) -> PathBuf {
        let path = dir.join("laya.key");
        std::fs::write(&path, text).expect("write key");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        path
    }

    #[test]
    fn a_file_only_you_can_read_gives_its_key() {
        let (_scratch, dir) = scratch();
        assert_eq!(read_key_file(&key_file(&dir, "sk-abc123\n", 0o600)), Ok("sk-abc123".to_string()));
        assert_eq!(read_key_file(&key_file(&dir, "  sk-abc123  ", 0o400)), Ok("sk-abc123".to_string()));
    }

    #[test]
    fn a_file_others_can_read_or_change_is_refused_with_the_fix() {
        let (_scratch, dir) = scratch();
        for mode in [0o644, 0o640, 0o604, 0o620, 0o602] {
            let path = key_file(&dir, "sk-abc123", mode);
            let err = read_key_file(&path).expect_err("refused");
            assert_eq!(
                err,
                format!(
                    "{} can be read or changed by other users (mode {mode:04o}); make it yours alone: chmod 600 {}",
                    path.display(),
                    path.display()
                )
            );
        }
    }

    #[test]
    fn a_link_is_refused_even_to_a_good_file() {
        let (_scratch, dir) = scratch();
        let target = key_file(&dir, "sk-abc123", 0o600);
        let link = dir.join("link.key");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let err = read_key_file(&link).expect_err("refused");
        assert!(err.ends_with("is a symbolic link; name the key file itself, not a link to it"), "{err}");
        // The O_NOFOLLOW open refuses it by itself, should a link appear after the check.
        assert!(open_no_follow(&link).is_err());
    }

    #[test]
    fn what_is_not_one_key_is_refused() {
        let (_scratch, dir) = scratch();
        let missing = dir.join("absent.key");
        assert!(read_key_file(&missing).expect_err("missing").starts_with("cannot read "));
        assert!(read_key_file(&dir).expect_err("a dir").ends_with("is not a regular file"));
        // A FIFO with no writer: refused at once, not waited on.
        let fifo = dir.join("fifo.key");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
        assert!(made.success());
        assert!(read_key_file(&fifo).expect_err("a FIFO").ends_with("is not a regular file"));
        assert!(
            read_key_file(&key_file(&dir, " \n", 0o600)).expect_err("empty").ends_with("is empty; put the key in it")
        );
        let two = read_key_file(&key_file(&dir, "sk-1\nsk-2\n", 0o600)).expect_err("two lines");
        assert!(two.ends_with("holds more than one word; put only the key in it"), "{two}");
        let big = read_key_file(&key_file(&dir, &"k".repeat(5000), 0o600)).expect_err("big");
        assert!(big.ends_with("is larger than 4096 bytes; put only the key in it"), "{big}");
        let path = dir.join("bin.key");
        std::fs::write(&path, [0xff, 0xfe]).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert!(read_key_file(&path).expect_err("binary").ends_with("is not text; put only the key in it"));
    }

    #[test]
    fn a_file_of_another_user_is_refused() {
        // Only root can give a file away; elsewhere the check is shown by the uid comparison alone.
        let (_scratch, dir) = scratch();
        let path = key_file(&dir, "sk-abc123", 0o600);
        if crate::fsutil::euid() == 0 {
            std::os::unix::fs::chown(&path, Some(4242), None).expect("chown");
            let err = read_key_file(&path).expect_err("refused");
            assert!(
                err.ends_with("belongs to another user (uid 4242, you are 0); the key file must be yours"),
                "{err}"
            );
        } else {
            assert_eq!(
                std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&path).expect("meta")),
                crate::fsutil::euid()
            );
        }
    }
}
