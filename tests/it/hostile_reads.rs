//! Files named on the command line or in the environment that are not what they should be (issue
//! 41): a FIFO (which a blocking open waits on for a writer that never comes) and a device without
//! an end. `TZ`, `--timezone`, `--prices` and `study --set` each give a clear error, or fall back,
//! within a bounded time and without growing.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::support::{TestEnv, stderr, stdout};

fn fifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

#[test]
fn a_fifo_or_a_device_named_for_a_file_is_refused_at_once() {
    let mut env = TestEnv::with_mock("");
    std::fs::create_dir_all(env.claude_dir.join("projects")).unwrap();
    let pipe = env.root.join("pipe");
    fifo(&pipe);
    let pipe = pipe.to_str().unwrap().to_string();
    let limit = Duration::from_secs(20);
    for bad in [pipe.as_str(), "/dev/zero"] {
        for (args, says) in [
            (vec!["report", "--timezone", bad], "not a time zone this machine knows"),
            (vec!["report", "--prices", bad], "is not a regular file"),
            (vec!["study", "--set", bad], "is not a regular file"),
        ] {
            let out = env.run_within(&args, "", false, limit).unwrap_or_else(|| panic!("{args:?} hung"));
            let err = stderr(&out);
            assert_ne!(out.status.code(), Some(0), "{args:?}: {err}");
            assert!(err.contains(says), "{args:?}: {err}");
        }
    }
    // TZ is read by the status line on every update: a FIFO there falls back to UTC at once.
    env.set_env("TZ", &pipe);
    let out = env.run_within(&["report", "--json"], "", false, limit).expect("report with TZ a FIFO hung");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let input = json!({"session_id": "s1", "model": {"display_name": "Opus"}}).to_string();
    let out = env.run_within(&["statusline"], &input, false, limit).expect("the status line with TZ a FIFO hung");
    assert!(stdout(&out).starts_with("Opus · "), "{}", stdout(&out));
    env.set_env("TZ", "/dev/zero");
    let out = env.run_within(&["statusline"], &input, false, limit).expect("the status line with TZ /dev/zero hung");
    assert!(stdout(&out).starts_with("Opus · "), "{}", stdout(&out));
}
