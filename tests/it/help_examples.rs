//! Every subcommand's `--help` ends with examples, `decide --help` lists its exit codes, and
//! every help text is pinned whole by a snapshot.

use crate::support::{self, TestEnv, stderr, stdout};

/// The subcommands a help text lists under `Commands:`, without `help` itself; none when it lists
/// none.
fn listed(help: &str) -> Vec<String> {
    let Some(section) = help.split("Commands:\n").nth(1) else { return Vec::new() };
    section
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The subcommands `system1 --help` lists, without `help` itself.
fn subcommands(env: &TestEnv) -> Vec<String> {
    let help = stdout(&env.run(&["--help"], ""));
    let names = listed(&help);
    assert!(!names.is_empty(), "{help}");
    names
}

#[test]
fn every_subcommands_help_has_an_example_section() {
    let env = TestEnv::new();
    let names = subcommands(&env);
    assert!(names.len() >= 20, "{names:?}");
    let mut missing = Vec::new();
    for name in &names {
        let o = env.run(&[name, "--help"], "");
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let help = stdout(&o);
        // The section heads a line ("Example:" or "Examples:") and shows a command with system1 in it.
        let section = help.lines().skip_while(|l| !l.starts_with("Example")).skip(1).collect::<Vec<_>>().join("\n");
        if !section.contains("system1 ") {
            missing.push(name.clone());
        }
    }
    assert!(missing.is_empty(), "--help without an Example section: {missing:?}");
}

#[test]
fn decide_help_lists_its_exit_codes() {
    let env = TestEnv::new();
    let help = stdout(&env.run(&["decide", "--help"], ""));
    let codes = help.split("Exit codes:\n").nth(1).unwrap_or_else(|| panic!("{help}"));
    for (code, meaning) in [("0", "decided"), ("1", "error"), ("2", "usage"), ("3", "config"), ("4", "abstained")] {
        assert!(
            codes.lines().any(|l| l.trim_start().starts_with(code) && l.contains(meaning)),
            "{code} {meaning}: {help}"
        );
    }
    // The codes it lists are the ones it exits with.
    let env = TestEnv::with_mock("");
    assert_eq!(env.run(&["decide", "-q", "Ship it?"], "").status.code(), Some(0));
    assert_eq!(env.run(&["decide", "-q", "Ship it?", "--min-confidence", "0.95"], "").status.code(), Some(4));
    assert_eq!(env.run(&["decide", "-q", "q", "--context", "{"], "").status.code(), Some(2));
    assert_eq!(env.run(&["decide", "-q", "q", "-o", "only"], "").status.code(), Some(1));
    let broken = TestEnv::with_mock("timeout_s = 0\n");
    assert_eq!(broken.run(&["decide", "-q", "Ship it?"], "").status.code(), Some(3));
}

/// What `--help` says, pinned whole: the top level's, each subcommand's and each of theirs
/// (`tests/it/snapshots/help*.snap`), so that a change to a text people read shows in review.
#[test]
fn every_help_text_is_pinned() {
    let env = TestEnv::new();
    let settings = support::snapshots(&env);
    let help = |args: &[&str]| {
        let o = env.run(args, "");
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };
    let top = help(&["--help"]);
    settings.bind(|| insta::assert_snapshot!("help", top));
    let mut pinned = 1;
    for name in listed(&top) {
        let text = help(&[&name, "--help"]);
        for sub in listed(&text) {
            let nested = help(&[&name, &sub, "--help"]);
            settings.bind(|| insta::assert_snapshot!(format!("help_{name}_{sub}").as_str(), nested));
            pinned += 1;
        }
        settings.bind(|| insta::assert_snapshot!(format!("help_{name}").as_str(), text));
        pinned += 1;
    }
    assert!(pinned >= 30, "every subcommand and theirs: {pinned}");
}
