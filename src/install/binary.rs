//! Putting the running binary in place. The copy is staged beside its destination and renamed over
//! it, so an MCP client or hook that starts `system1` mid-install finds either the old binary or the
//! new one, never half a file.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Context, Result};
use crate::fsutil::Staged;
use crate::paths;

pub enum Copied {
    /// The binary was copied to this path.
    Installed(PathBuf),
    /// The running binary already is the installed one.
    AlreadyInPlace(PathBuf),
}

/// Copies the running executable to `paths::installed_binary()`.
pub fn install_self() -> Result<Copied> {
    let source = std::env::current_exe().context(|| "cannot find the running binary".to_string())?;
    let target = paths::installed_binary();
    if paths::same_file(&source, &target) {
        return Ok(Copied::AlreadyInPlace(target));
    }
    let dir = paths::bin_dir();
    paths::create_dirs(&dir).context(|| format!("cannot create {}", dir.display()))?;
    let mut staged = Staged::create(&target, 0o755).context(|| format!("cannot create a file in {}", dir.display()))?;
    stage(&source, &mut staged)?;
    replace(staged, &target)?;
    Ok(Copied::Installed(target))
}

fn stage(source: &Path, staged: &mut Staged) -> Result<()> {
    staged.copy_from(source).context(|| format!("cannot copy {} to {}", source.display(), staged.path().display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(staged.path(), fs::Permissions::from_mode(0o755))
            .context(|| format!("cannot make {} executable", staged.path().display()))?;
    }
    Ok(())
}

fn replace(staged: Staged, target: &Path) -> Result<()> {
    // Windows refuses to replace a running executable but lets it be renamed: move a running
    // server's binary aside first (a unique name, as an older one may still run); leftovers are
    // deleted on the next install or uninstall, once nothing runs them.
    if cfg!(windows) && target.exists() {
        remove_set_aside(target);
        let aside = target.with_file_name(format!("{ASIDE}{}", std::process::id()));
        fs::rename(target, &aside).context(|| format!("cannot move {} aside", target.display()))?;
    }
    // The commit flushes the bytes before the rename publishes them.
    staged.commit().context(|| format!("cannot put the binary at {}", target.display()))
}

/// Name prefix of binaries moved aside on Windows.
const ASIDE: &str = ".system1-replaced-";

/// Deletes binaries moved aside earlier; those still running stay until next time.
fn remove_set_aside(target: &Path) {
    let Some(dir) = target.parent() else { return };
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(ASIDE) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Removes the installed binary (and a Windows binary moved aside). Returns whether one was there.
pub fn remove_installed() -> Result<bool> {
    let target = paths::installed_binary();
    remove_set_aside(&target);
    let removed = match fs::remove_file(&target) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => {
            let err = crate::error::Error::failure(format!("cannot remove {}: {e}", target.display()));
            return Err(if cfg!(windows) {
                err.with_hint("stop Claude Code and any MCP client using system1, then run scripts\\uninstall.ps1 (it runs a temporary copy)")
            } else {
                err
            });
        }
    };
    // Leave no empty bin folder behind; a non-empty one holds something that is not ours.
    let _ = fs::remove_dir(paths::bin_dir());
    Ok(removed)
}
