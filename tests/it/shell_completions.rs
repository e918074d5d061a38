//! `system1 completions <shell>`: the script each shell loads, from the real binary. Bash is here to
//! load it; the other shells' scripts are checked for what names them and the subcommands.

use crate::support::{TestEnv, stderr, stdout};

/// Bash sources the script and then completes `system1` with it: `complete -p` names the function,
/// and that function offers the subcommands after `system1 ` and `doctor`'s `--json` after
/// `system1 doctor --`.
#[test]
fn bash_loads_the_completion_script_and_completes_subcommands_and_options() {
    let env = TestEnv::new();
    let out = env.run(&["completions", "bash"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let script = env.root.join("system1.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    // COMP_* as bash sets them when Tab is pressed; the function fills COMPREPLY.
    let probe = format!(
        r#"source {script:?} && complete -p system1 &&
           COMP_WORDS=(system1 ""); COMP_CWORD=1; COMP_LINE="system1 "; COMP_POINT=8
           _system1 system1 "" system1; echo "subcommands: ${{COMPREPLY[*]}}"
           COMP_WORDS=(system1 doctor --); COMP_CWORD=2; COMP_LINE="system1 doctor --"; COMP_POINT=17
           _system1 system1 -- doctor; echo "doctor: ${{COMPREPLY[*]}}""#
    );
    let mut bash = std::process::Command::new("bash");
    bash.args(["--norc", "--noprofile", "-c", &probe]);
    crate::support::sandbox(&mut bash, &env.home);
    let o = bash.output().unwrap();
    let text = stdout(&o);
    assert!(o.status.success(), "{text}{}", stderr(&o));
    assert!(
        text.lines()
            .next()
            .is_some_and(|l| l.starts_with("complete ") && l.contains(" -F _system1 ") && l.ends_with(" system1")),
        "{text}"
    );
    let subcommands = text.lines().find_map(|l| l.strip_prefix("subcommands: ")).unwrap();
    for name in ["decide", "doctor", "toggle", "config", "completions"] {
        assert!(subcommands.split(' ').any(|w| w == name), "{name} missing: {text}");
    }
    let doctor = text.lines().find_map(|l| l.strip_prefix("doctor: ")).unwrap();
    assert!(doctor.split(' ').any(|w| w == "--days"), "{text}");
}

#[test]
fn every_other_shell_gets_a_script_that_names_system1() {
    let env = TestEnv::new();
    for (shell, mark) in [
        ("zsh", "#compdef system1"),
        ("fish", "complete -c system1"),
        ("powershell", "'system1'"),
        ("elvish", "system1"),
    ] {
        let out = env.run(&["completions", shell], "");
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains(mark) && text.contains("doctor"), "{shell}: {text}");
    }
    let out = env.run(&["completions", "tcsh"], "");
    assert_eq!(out.status.code(), Some(2), "an unknown shell is a usage error");
    assert!(stderr(&out).contains("possible values"), "{}", stderr(&out));
}
