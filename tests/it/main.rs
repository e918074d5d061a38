//! Every integration test, in one binary: each module is one area, and drives the real `system1`
//! binary (over stdio, HTTP on 127.0.0.1, files in temp dirs). Run one area with
//! `cargo test --test it -- report::`. What the tests share (scratch environments, the MCP client,
//! the loopback fakes) is in `support/`.

// Helpers outside #[test] functions (support/, fakes) are test code too: a failed assumption in them
// is a failed test. Cargo.toml's [lints] refuses these in the product.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed assumption is a failed test"
)]

mod support;

mod bounded_inputs;
mod calibrate;
mod ci_workflows;
mod cli_core;
mod clients_real;
mod colour_output;
mod decisions_api;
mod docs;
mod e2e_claude;
mod e2e_enforce;
mod e2e_subagent_model;
mod engine_answers;
mod engine_replies;
mod engines_decider;
mod engines_laya;
mod engines_laya_serve_021;
mod engines_servers;
mod engines_systemone;
mod engines_von_ollama;
mod engines_xllamacpp;
mod first_hour;
mod frictions;
mod gemini_sdk;
mod guarded_reads;
mod help_examples;
mod hook_deadlines;
mod hostile_output;
mod hostile_reads;
mod install;
mod json_output;
mod local_deadline;
mod local_engine;
mod local_install;
mod local_teach;
mod local_untrusted;
mod mcp_bad_input;
mod mcp_bounds;
mod mcp_clients;
mod mcp_config;
mod mcp_decide;
mod mcp_fallback;
mod mcp_hostile;
mod mcp_protocol;
mod outcomes;
mod outside_https;
mod plugin;
mod plugin_commands;
mod private_files;
mod real_laya;
mod report;
mod report_e2e;
mod report_engines;
mod report_html;
mod report_views;
mod report_what_if;
mod report_what_if_effort;
mod routing_enforce;
mod routing_hook;
mod routing_laya;
mod routing_tier_head;
mod schema_files;
mod scripts_test_progress;
mod sdk_client;
mod serve;
mod serve_hostile;
mod shell_completions;
mod skill_picker;
mod static_build;
mod statusline;
mod statusline_hostile;
mod study;
mod teach_bounds;
mod tournament;
