//! Colour where a word carries meaning: doctor's and smoke's ok / warn / FAIL, decide's answer and
//! "abstained", toggle status's state. On a terminal (a pseudo-terminal through `script`), off when
//! stdout is a pipe, off with `NO_COLOR`, on with `CLICOLOR_FORCE`, and `NO_COLOR` wins over it.

use crate::support::{self, TestEnv, stderr, stdout};

const GREEN: &str = "\u{1b}[32m";
const YELLOW: &str = "\u{1b}[33m";
const RED: &str = "\u{1b}[31m";
const RESET: &str = "\u{1b}[0m";

/// Runs `args` in `env` with stdout on a pseudo-terminal (util-linux `script`), plus `extra`
/// variables; what the terminal got. `None` where `script` is missing.
fn on_a_terminal(env: &TestEnv, args: &[&str], extra: &[(&str, &str)]) -> Option<String> {
    let line = std::iter::once(support::BIN).chain(args.iter().copied()).map(shell_quote).collect::<Vec<_>>().join(" ");
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"]);
    for (k, v) in env.command(&[]).get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.env("TERM", "xterm-256color").stdin(std::process::Stdio::null());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    match cmd.output() {
        Ok(o) => Some(stdout(&o)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("script: {e}"),
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn run_with(env: &TestEnv, args: &[&str], extra: &[(&str, &str)]) -> String {
    let mut cmd = env.command(args);
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.code().is_some(), "{}", stderr(&o));
    stdout(&o)
}

/// `text` with every "N ms" as "[TIME] ms".
fn without_timings(text: &str) -> String {
    regex::Regex::new(r"\b\d+ ms\b").unwrap().replace_all(text, "[TIME] ms").into_owned()
}

#[test]
fn without_timings_masks_only_the_timings() {
    assert_eq!(
        without_timings("health in 0 ms: ok\ndecision in 1234 ms (12 items)"),
        "health in [TIME] ms: ok\ndecision in [TIME] ms (12 items)"
    );
}

#[test]
fn doctor_colours_its_findings_on_a_terminal_and_not_in_a_pipe_or_with_no_color() {
    let env = TestEnv::with_mock("");
    // Not installed here: one FAIL among the ok lines, and a warning for the mock.
    let Some(tty) = on_a_terminal(&env, &["doctor"], &[]) else {
        support::skip_loudly("the pseudo-terminal half: util-linux `script` is not installed");
        return;
    };
    assert!(tty.contains(&format!("{RED}FAIL{RESET}")) || tty.contains(&format!("FAIL{RESET}")), "{tty:?}");
    assert!(tty.contains(GREEN) && tty.contains(YELLOW) && tty.contains(RED), "{tty:?}");
    let plain = on_a_terminal(&env, &["doctor"], &[("NO_COLOR", "1")]).unwrap();
    assert!(!plain.contains('\u{1b}'), "NO_COLOR: {plain:?}");
    assert!(plain.contains("FAIL  the binary is not installed"), "{plain:?}");

    // Each run times its own health check and test decision: "in 0 ms" in one run can be "in 1 ms"
    // in the next on a busy machine, so the runs are compared with their timings masked.
    let piped = without_timings(&run_with(&env, &["doctor"], &[]));
    assert!(!piped.contains('\u{1b}'), "a pipe: {piped:?}");
    let forced = without_timings(&run_with(&env, &["doctor"], &[("CLICOLOR_FORCE", "1")]));
    assert!(forced.contains(RED) && forced.contains(RESET), "CLICOLOR_FORCE: {forced:?}");
    // Only the tag is coloured: the finding's words are as in the plain text.
    assert_eq!(
        forced.replace(RED, "").replace(GREEN, "").replace(YELLOW, "").replace(RESET, "").replace("\u{1b}[1m", ""),
        piped
    );
    let both = without_timings(&run_with(&env, &["doctor"], &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]));
    assert_eq!(both, piped, "NO_COLOR wins over CLICOLOR_FORCE");
}

#[test]
fn decide_colours_the_answer_and_an_abstention() {
    let env = TestEnv::with_mock("");
    let force = [("CLICOLOR_FORCE", "1")];
    let decided = run_with(&env, &["decide", "-q", "Ship it?"], &force);
    assert!(decided.contains(GREEN) && decided.contains(&format!("yes{RESET} (confidence 0.90")), "{decided:?}");
    let abstained = run_with(&env, &["decide", "-q", "Ship it?", "--min-confidence", "0.95"], &force);
    assert!(
        abstained.contains(YELLOW) && abstained.contains(&format!("abstained{RESET}: confidence")),
        "{abstained:?}"
    );
    // --json is for programs: never coloured.
    let json = run_with(&env, &["decide", "-q", "Ship it?", "--json"], &force);
    assert!(!json.contains('\u{1b}'), "{json:?}");
    let piped = run_with(&env, &["decide", "-q", "Ship it?"], &[]);
    assert!(piped.starts_with("yes (confidence 0.90"), "{piped:?}");
    if let Some(tty) = on_a_terminal(&env, &["decide", "-q", "Ship it?"], &[]) {
        assert!(tty.contains(GREEN), "{tty:?}");
    }
}

#[test]
fn smoke_and_toggle_status_colour_their_states() {
    let env = TestEnv::with_mock("");
    let force = [("CLICOLOR_FORCE", "1")];
    let smoke = run_with(&env, &["smoke", "--bin", support::BIN], &force);
    assert!(smoke.contains(&format!("{GREEN}ok")) || smoke.contains(&format!("ok{RESET}")), "{smoke:?}");
    assert!(smoke.contains(GREEN), "{smoke:?}");
    assert!(env.run(&["toggle", "off"], "").status.success());
    let status = run_with(&env, &["toggle", "status"], &force);
    assert!(status.contains(YELLOW) && status.contains(&format!("paused{RESET}")), "{status:?}");
    let json = run_with(&env, &["toggle", "status", "--json"], &force);
    assert!(!json.contains('\u{1b}'), "{json:?}");
}
