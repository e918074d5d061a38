//! The status line against Claude Code's model name as it may come (issue 41): the name is text
//! from outside, printed on the user's terminal, so it is escaped and capped like any other.

use serde_json::json;

use crate::support::{TestEnv, stdout};

#[test]
fn the_model_name_is_escaped_and_capped() {
    let env = TestEnv::with_mock("");
    let hostile = "Opus\u{1b}]0;pwned\u{7}\u{1b}[2J\nsecond line";
    let long = "x".repeat(1 << 20);
    for name in [hostile, long.as_str()] {
        let input = json!({"session_id": "s1", "model": {"id": "claude-opus-4-8", "display_name": name}});
        let out = env.run(&["statusline"], &input.to_string());
        let line = stdout(&out);
        assert_eq!(line.lines().count(), 1, "one line: {line:.300}");
        assert!(!line.contains('\u{1b}') && !line.contains('\u{7}'), "{line:.300}");
        assert!(line.len() < 400, "capped: {} bytes", line.len());
    }
    let input = json!({"session_id": "s1", "model": {"display_name": hostile}});
    let line = stdout(&env.run(&["statusline"], &input.to_string()));
    assert!(line.starts_with("Opus\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{a}second line · "), "{line}");
}
