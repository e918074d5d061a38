//! Every subcommand's `--help` ends with examples, and `decide --help` lists its exit codes.

use crate::support::{TestEnv, stderr, stdout};

/// The subcommands `system1 --help` lists, without `help` itself.
fn subcommands(env: &TestEnv) -> Vec<String> {
    let help = stdout(&env.run(&["--help"], ""));
    let listed = help.split("Commands:\n").nth(1).unwrap_or_else(|| panic!("{help}"));
    listed
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
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
