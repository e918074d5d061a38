//! Every file system1 touches on the user's machine, each with an environment override so that
//! tests (and unusual setups) never reach the real home directory.
//!
//! | what | default | override |
//! |---|---|---|
//! | install dir | `~/.system1-gateway` | `SYSTEM1_INSTALL_DIR` |
//! | config file | `~/.config/system1/config.toml`, `%APPDATA%\system1\config.toml` | `SYSTEM1_CONFIG` |
//! | Claude Code dir | `~/.claude` | `CLAUDE_CONFIG_DIR` |
//! | Claude Code settings (user MCP servers) | `~/.claude.json` | `$CLAUDE_CONFIG_DIR/.claude.json` |
//! | start-at-login units (Linux) | `~/.config/systemd/user/` | `XDG_CONFIG_HOME` |
//! | start-at-login scripts (Windows) | `%APPDATA%\Microsoft\Windows\Start Menu\Programs\Startup` | `APPDATA` |
//!
//! In the unit tests, which run on threads of one process and so cannot each have an environment
//! of their own, every one of these is under one scratch home of the test process, whatever the
//! environment says: a unit test never reads or writes the user's files.
//!
//! Programs system1 runs (the `claude` CLI, service managers) are found on `PATH` with
//! [`find_on_path`].

use std::env;
use std::path::{Path, PathBuf};

/// The user's home: `HOME` (or `USERPROFILE` on Windows) first, so a test's scratch HOME wins.
pub fn home() -> PathBuf {
    if let Some(h) = unit_test_home() {
        return h;
    }
    let from_env =
        if cfg!(windows) { env::var_os("USERPROFILE").or_else(|| env::var_os("HOME")) } else { env::var_os("HOME") };
    match from_env {
        Some(h) if !h.is_empty() => PathBuf::from(h),
        _ => directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf()).unwrap_or_else(|| PathBuf::from(".")),
    }
}

fn env_path(var: &str) -> Option<PathBuf> {
    if cfg!(test) {
        return None;
    }
    env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// The unit tests' home, once a test has asked for it.
#[cfg(test)]
static UNIT_TEST_HOME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// The unit tests' home: one scratch folder per test process, in the system's temp folder, removed
/// when the process exits.
#[cfg(test)]
fn unit_test_home() -> Option<PathBuf> {
    Some(
        UNIT_TEST_HOME
            .get_or_init(|| {
                remove_unit_test_home_at_exit();
                env::temp_dir().join(format!("system1-unit-tests-{}", std::process::id()))
            })
            .clone(),
    )
}

/// Has the C library's exit remove the unit tests' home: the test harness ends by returning from
/// `main` or, when a test failed, by `exit`, and both run the exit handlers. (A process killed
/// outright leaves its folder; on Windows it is left too.)
#[cfg(all(test, unix))]
fn remove_unit_test_home_at_exit() {
    extern "C" fn remove() {
        if let Some(home) = UNIT_TEST_HOME.get() {
            let _ = std::fs::remove_dir_all(home);
        }
    }
    // SAFETY: `remove` is a function of the program, there for as long as the process is.
    #[allow(unsafe_code, reason = "registering an exit handler is a C call")]
    unsafe {
        libc::atexit(remove);
    }
}

#[cfg(all(test, not(unix)))]
fn remove_unit_test_home_at_exit() {}

#[cfg(not(test))]
fn unit_test_home() -> Option<PathBuf> {
    None
}

/// The base of the user's configuration (`XDG_CONFIG_HOME`, else `~/.config`), where systemd
/// looks for user units.
pub fn xdg_config_home() -> PathBuf {
    env_path("XDG_CONFIG_HOME").unwrap_or_else(|| home().join(".config"))
}

/// Windows' roaming profile folder (`APPDATA`, else `~/AppData/Roaming`).
pub fn appdata() -> PathBuf {
    env_path("APPDATA").unwrap_or_else(|| home().join("AppData").join("Roaming"))
}

pub fn install_dir() -> PathBuf {
    env_path("SYSTEM1_INSTALL_DIR").unwrap_or_else(|| home().join(".system1-gateway"))
}

pub fn bin_dir() -> PathBuf {
    install_dir().join("bin")
}

/// The installed binary, `<install>/bin/system1` (`system1.exe` on Windows).
pub fn installed_binary() -> PathBuf {
    bin_dir().join(if cfg!(windows) { "system1.exe" } else { "system1" })
}

pub fn engines_dir() -> PathBuf {
    install_dir().join("engines")
}

pub fn logs_dir() -> PathBuf {
    install_dir().join("logs")
}

/// The routing and agent log (JSON lines), written only for repos in `[routing] log_dirs`.
pub fn routing_log() -> PathBuf {
    logs_dir().join("routing.jsonl")
}

/// Per-day decision tallies kept by the gateway (no question text), for `toggle status` and `doctor`.
pub fn decisions_log(day: &str) -> PathBuf {
    logs_dir().join(format!("decisions-{day}.jsonl"))
}

/// Present while System-1 is paused (`system1 toggle off`).
pub fn pause_file() -> PathBuf {
    install_dir().join("paused")
}

/// Present once the session-start hook has said that no real engine is set up (it says so once).
pub fn no_engine_notice() -> PathBuf {
    install_dir().join("told-no-engine")
}

/// The status line's cache (`system1 statusline`): what it read of today's transcripts.
pub fn statusline_cache() -> PathBuf {
    install_dir().join("statusline")
}

/// The engine's answers `system1 report --what-if` got, by brief: a rerun asks nothing twice.
pub fn what_if_cache() -> PathBuf {
    install_dir().join("what-if.json")
}

/// Calibration fitted on this machine; takes precedence over the shipped fits.
pub fn fitted_calibration() -> PathBuf {
    install_dir().join("calibration.json")
}

/// The config file: `SYSTEM1_CONFIG`, else the platform location.
pub fn config_file() -> PathBuf {
    if let Some(p) = env_path("SYSTEM1_CONFIG") {
        return p;
    }
    if cfg!(windows)
        && let Some(appdata) = env_path("APPDATA")
    {
        return appdata.join("system1").join("config.toml");
    }
    home().join(".config").join("system1").join("config.toml")
}

/// Claude Code's own directory (`~/.claude`, or `CLAUDE_CONFIG_DIR`).
pub fn claude_dir() -> PathBuf {
    env_path("CLAUDE_CONFIG_DIR").unwrap_or_else(|| home().join(".claude"))
}

/// Claude Code's global settings file, which holds the user-scoped MCP servers: `.claude.json` in
/// `CLAUDE_CONFIG_DIR` when that is set, else in the home directory.
pub fn claude_json() -> PathBuf {
    env_path("CLAUDE_CONFIG_DIR").unwrap_or_else(home).join(".claude.json")
}

/// Where Claude Code keeps its transcripts.
pub fn claude_projects_dir() -> PathBuf {
    claude_dir().join("projects")
}

/// The file `log_file` names, or why it cannot be one: an absolute path (or one under `~/`) of a
/// file of its own. A relative path would land in whichever project each process runs in, and
/// a device or process file (`/dev/stdout`, `/proc/self/fd/1`) may be the MCP server's stdout,
/// which must carry nothing but protocol.
pub fn log_file(setting: &str) -> Result<PathBuf, String> {
    let path = expand_tilde(setting.trim());
    if !path.is_absolute() {
        return Err(format!("must be an absolute path or start with ~/, got {setting:?}"));
    }
    if ["/dev", "/proc", "/sys"].iter().any(|d| path.starts_with(d)) {
        return Err(format!("must be a file of its own, not a device or process file, got {setting:?}"));
    }
    Ok(path)
}

/// Expands a leading `~` to the home directory.
pub fn expand_tilde(p: &str) -> PathBuf {
    if p == "~" {
        return home();
    }
    if let Some(rest) = p.strip_prefix("~/").or_else(|| p.strip_prefix("~\\")) {
        return home().join(rest);
    }
    PathBuf::from(p)
}

/// Creates a file's parent directory if needed (see [`create_dirs`]).
pub fn ensure_parent(p: &Path) -> std::io::Result<()> {
    match p.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => create_dirs(dir),
        _ => Ok(()),
    }
}

/// Creates `dir` and its missing parents, each new one readable and writable by its owner only
/// (0700 on Unix, set after creation so the umask cannot widen or narrow it): the install dir
/// holds prompts, and a folder another user could write to would let them plant links in it.
/// Folders that exist already are left as they are.
pub fn create_dirs(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let missing: Vec<&Path> = dir.ancestors().take_while(|a| !a.as_os_str().is_empty() && !a.exists()).collect();
    for d in missing.into_iter().rev() {
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        match builder.create(d) {
            Ok(()) => {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700))?;
                }
            }
            // Made by someone else meanwhile: theirs to keep as it is.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && d.is_dir() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The first of `names` found as an executable file in a `PATH` directory, as `which` finds it.
pub fn find_on_path(names: &[&str]) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| is_executable(p))
}

/// Whether `a` and `b` name the same file (links resolved); false when either cannot be resolved.
pub fn same_file(a: &Path, b: &Path) -> bool {
    matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(a), Ok(b)) if a == b)
}

fn is_executable(p: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(p) else { return false };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test process's scratch home is gone once it has exited: this test runs itself in a
    /// child test process, which writes a file there and says where.
    #[test]
    fn the_unit_tests_home_is_removed_when_the_test_process_exits() {
        const CHILD: &str = "SYSTEM1_UNIT_TEST_HOME_CHILD";
        if std::env::var_os(CHILD).is_some() {
            let home = home();
            std::fs::create_dir_all(home.join(".system1-gateway")).unwrap();
            std::fs::write(home.join(".system1-gateway/written"), "x").unwrap();
            std::io::Write::write_all(&mut std::io::stdout(), format!("\nhome={}\n", home.display()).as_bytes())
                .unwrap();
            return;
        }
        let me = "paths::tests::the_unit_tests_home_is_removed_when_the_test_process_exits";
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", me, "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
        let home = said.lines().find_map(|l| l.strip_prefix("home=")).expect("the child says where its home is");
        assert_ne!(Path::new(home), super::home(), "the child had a home of its own");
        assert!(home.contains("system1-unit-tests-"), "{home}");
        assert!(!Path::new(home).exists(), "{home} is still there after its process exited");
    }
}
