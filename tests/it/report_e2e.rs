//! `system1 report` on a transcript the real Claude Code CLI wrote (each version the tests run): the plugin installed from this
//! checkout in a scratch HOME, the routing hook hinting haiku (mock engine), a fake Anthropic API on
//! 127.0.0.1 scripting the model to spawn a haiku subagent. The report must find the one prompt,
//! its hint, the spawn that followed it, and count each API request once with the usage the fake
//! sent (100 input and 20 output tokens a reply; the early per-block copies carry 1).
//!
//! Needs the CLIs that `scripts/test` installs; fails without them under CI.

#![cfg(unix)]

use std::path::Path;
use std::process::{Command, Output};

use crate::support;
use crate::support::claude_cli;
use crate::support::fake_anthropic::{Block, FakeAnthropic, is_subagent, texts, tool_result};
use crate::support::{TestEnv, stderr, stdout};
use serde_json::{Value, json};

const AGENT_ID: &str = "toolu_report_agent";
/// Long and read-only, so the mock's features give the default rule's haiku.
const PROMPT: &str = "REPORT-E2E-PROMPT: read the parser module and list every public function it exports, please";

fn claude(cli: &Path, env: &TestEnv, api: &FakeAnthropic, cwd: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(cli);
    cmd.args(args).current_dir(cwd);
    claude_cli::offline(&mut cmd, env, &api.base_url());
    let out = cmd.output().expect("run claude");
    assert!(out.status.success(), "claude {args:?} failed:\nstdout: {}\nstderr: {}", stdout(&out), stderr(&out));
    out
}

#[test]
fn report_reads_a_transcript_written_by_claude_code_2_1_197() {
    report_reads_a_transcript(claude_cli::PINNED);
}

#[test]
fn report_reads_a_transcript_written_by_claude_code_2_1_332() {
    report_reads_a_transcript(claude_cli::NEWEST);
}

fn report_reads_a_transcript(version: &str) {
    let Some(cli) = claude_cli::find(&format!("report_e2e {version}"), version) else { return };
    let env = TestEnv::with_mock(
        "[providers.mock]\nanswer = \"wait\"\nconfidence = 0.8\n\
         answers = { read_only = \"yes\", design = \"no\", review = \"no\", specified = \"yes\" }\n\
         [routing]\nenabled = true\nhint = true\n",
    );
    // The plugin's hook launcher runs the binary from the install dir.
    let bin_dir = env.install_dir.join("bin");
    support::copy_executable(Path::new(support::BIN), &bin_dir.join("system1"));
    let project = env.root.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let api = FakeAnthropic::start();
    let checkout = env.root.join("plugin-checkout");
    claude_cli::plugin_checkout(&checkout);
    claude(&cli, &env, &api, &project, &["plugin", "marketplace", "add", checkout.to_str().unwrap()]);
    claude(&cli, &env, &api, &project, &["plugin", "install", "system1@system1-gateway"]);

    api.script(|req| {
        if is_subagent(req) {
            return vec![Block::text("REPORT-E2E-SUBAGENT-DONE")];
        }
        if tool_result(req, AGENT_ID).is_some() {
            return vec![Block::text("REPORT-E2E-FINAL")];
        }
        if texts(req).iter().any(|t| t.contains("REPORT-E2E-PROMPT")) {
            let input = json!({"description": "list functions", "prompt": "REPORT-E2E-SUBAGENT-PROMPT: list them",
                "subagent_type": "general-purpose", "model": "haiku"});
            return vec![
                Block::text("Spawning a helper."),
                Block::ToolUse { id: AGENT_ID.into(), name: "Agent".into(), input },
            ];
        }
        vec![Block::text("ok")]
    });
    claude(&cli, &env, &api, &project, &["-p", PROMPT]);
    let requests = api.requests();
    let sub_requests = requests.iter().filter(|r| is_subagent(r)).count() as u64;
    assert!(sub_requests >= 1, "the subagent never reached the API");

    let out = env.run(&["report", "--json"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("REPORT-E2E"), "prompt text leaked into the report");
    let r: Value = serde_json::from_str(&text).unwrap();

    assert_eq!(r["read"]["malformed_lines"], 0, "{}", r["read"]);
    assert_eq!(r["read"]["subagent_files"], 1, "{}", r["read"]);
    assert_eq!(r["reach"]["prompts"], 1, "{}", r["reach"]);
    assert_eq!(r["reach"]["hinted_prompts"], 1, "{}", r["reach"]);
    assert_eq!(r["reach"]["long_prompts"], 1, "{}", r["reach"]);
    assert_eq!(r["adherence"]["spawns"], 1, "{}", r["adherence"]);
    assert_eq!(r["adherence"]["hinted_spawns"], 1, "{}", r["adherence"]);
    assert_eq!(r["adherence"]["followed"], 1, "{}", r["adherence"]);
    let haiku = r["subagents_by_tier"].as_array().unwrap().iter().find(|t| t["tier"] == "haiku").unwrap().clone();
    assert_eq!(haiku["spawns"], 1, "{haiku}");
    assert_eq!(haiku["requests"], sub_requests, "{haiku}");
    // Every request the transcripts hold is one the fake answered: 100 in, 20 out, no placeholders.
    let main = &r["totals"]["main"];
    let requests_in_transcripts = main["requests"].as_u64().unwrap() + sub_requests;
    assert!(requests_in_transcripts <= requests.len() as u64);
    assert!(main["requests"].as_u64().unwrap() >= 2, "{main}");
    assert_eq!(r["totals"]["all"]["tokens"]["input"], json!(100 * requests_in_transcripts));
    assert_eq!(r["totals"]["all"]["tokens"]["output"], json!(20 * requests_in_transcripts));
    assert_eq!(r["savings"]["hint_tokens"].as_u64().map(|t| t > 10), Some(true), "{}", r["savings"]);
}
