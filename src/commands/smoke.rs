//! `system1 smoke`: launches the installed server exactly as an MCP client does (the command
//! registered with Claude Code, else `<install>/bin/system1 mcp`, or `--bin`), then checks the handshake, the tool list,
//! health and, with `--question`, one decision, printing one line per step.
//!
//! It speaks newline-delimited JSON-RPC over the child's stdio. A reader thread forwards stdout
//! lines so each step has a deadline; the child's stderr is kept to show when a step fails.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::checks;
use crate::error::{Error, Result, exit};
use crate::gateway::{Gateway, TOOLS};
use crate::install::claude;
use crate::output::{self, Tone};
use crate::{paths, text};

#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  system1 smoke
  system1 smoke --question \"Which?\" -o red -o green
  system1 smoke --bin target/debug/system1 --json

Exit codes: 0 every step passed, 1 a step failed, 5 the server works but no engine answers.")]
pub struct Args {
    /// Also ask one decision.
    #[arg(long, short)]
    question: Option<String>,
    /// One option of that decision (repeat for each, as for `decide`); without options it is a
    /// yes/no question.
    #[arg(long = "option", short = 'o', requires = "question")]
    options: Vec<String>,
    /// The server binary to launch (default: the one registered with Claude Code, else the installed one).
    #[arg(long)]
    bin: Option<PathBuf>,
    /// Seconds each step may take.
    #[arg(long, default_value_t = 30.0)]
    timeout_s: f64,
    /// Print the steps and the verdict as one JSON object at the end (its fields are in
    /// docs/troubleshooting.md); the exit code is the same.
    #[arg(long)]
    json: bool,
}

/// What `smoke --json` prints: each step as the line a person reads would say it.
#[derive(Serialize)]
struct Report {
    /// The server binary launched (with `mcp`).
    binary: String,
    steps: Vec<Step>,
    /// For an engine that is down, or a binary that is missing: what to do.
    fixes: Vec<String>,
    /// The server's last lines on stderr, when a step failed.
    server_stderr: Vec<String>,
    verdict: VerdictName,
}

#[derive(Serialize)]
struct Step {
    /// launch, initialize, initialized, tools/list, system1_health or system1_decide.
    step: &'static str,
    status: StepStatus,
    detail: String,
}

#[derive(Serialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum StepStatus {
    Ok,
    Warn,
    Fail,
}

/// `ok` (exit 0), `engine_down` (exit 5) or `failed` (exit 1).
#[derive(Serialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum VerdictName {
    Ok,
    EngineDown,
    Failed,
}

/// Where the steps go: printed one line each as they happen, or kept for `--json`.
struct Out {
    json: bool,
    report: Report,
}

impl Out {
    fn step(&mut self, status: StepStatus, step: &'static str, detail: String) -> Result<()> {
        if !self.json {
            let (tone, tag) = match status {
                StepStatus::Ok => (Tone::Good, "ok"),
                StepStatus::Warn => (Tone::Warn, "warn"),
                StepStatus::Fail => (Tone::Bad, "FAIL"),
            };
            let pad = " ".repeat(11 - tag.len());
            output::write_line(&[(Some(tone), tag), (None, &pad), (None, &format!("{step}: {detail}"))])?;
        }
        self.report.steps.push(Step { step, status, detail });
        Ok(())
    }

    fn fix(&mut self, fix: String) -> Result<()> {
        if !self.json {
            outln!("fix:       {fix}")?;
        }
        self.report.fixes.push(fix);
        Ok(())
    }

    /// The verdict's line (or the JSON), and the exit code that goes with it.
    fn finish(mut self, verdict: VerdictName, line: Option<String>) -> Result<i32> {
        self.report.verdict = verdict;
        if self.json {
            outln!("{}", serde_json::to_string_pretty(&self.report).map_err(|e| Error::failure(e.to_string()))?)?;
        } else if let Some(line) = line {
            // The verdict's word in its colour: `smoke: ok`, `smoke: FAILED ...`, `smoke: the server works, ...`.
            let (head, rest) = line.split_once(": ").unwrap_or((&line, ""));
            let first_word =
                || rest.split_once(' ').map(|(w, t)| (w, format!(" {t}"))).unwrap_or((rest, String::new()));
            let (tone, (word, tail)) = match verdict {
                VerdictName::Ok => (Tone::Good, first_word()),
                VerdictName::EngineDown => (Tone::Warn, (rest, String::new())),
                VerdictName::Failed => (Tone::Bad, first_word()),
            };
            output::write_line(&[(None, &format!("{head}: ")), (Some(tone), word), (None, &tail)])?;
        }
        Ok(match verdict {
            VerdictName::Ok => exit::OK,
            VerdictName::EngineDown => exit::ENGINE_DOWN,
            VerdictName::Failed => exit::FAILURE,
        })
    }
}

/// The command Claude Code launches: the user-scoped registration when it runs `<bin> mcp`,
/// else the installed binary (which is what `system1 install` registers).
fn registered_or_installed() -> PathBuf {
    match claude::current() {
        claude::Current::Registered(line) if line.len() == 2 && line[1] == "mcp" && !line[0].is_empty() => {
            PathBuf::from(&line[0])
        }
        _ => paths::installed_binary(),
    }
}

/// The MCP protocol version smoke offers: the one Claude Code opens stdio servers at (2.1.197).
const PROTOCOL_VERSION: &str = "2025-11-25";

pub fn run(args: Args) -> Result<i32> {
    let bin = args.bin.clone().unwrap_or_else(registered_or_installed);
    let timeout = Duration::from_secs_f64(args.timeout_s.clamp(0.1, 3600.0));
    let report = Report {
        binary: bin.display().to_string(),
        steps: Vec::new(),
        fixes: Vec::new(),
        server_stderr: Vec::new(),
        verdict: VerdictName::Failed,
    };
    let mut out = Out { json: args.json, report };
    if !out.json {
        outln!("launch     {} mcp", bin.display())?;
    }
    let mut server = match Server::spawn(&bin) {
        Ok(s) => s,
        Err(e) => {
            let why = format!("cannot start {}: {e}", bin.display());
            if !out.json {
                output::write_line(&[(Some(Tone::Bad), "FAIL"), (None, "       "), (None, &why)])?;
            }
            out.report.steps.push(Step { step: "launch", status: StepStatus::Fail, detail: why });
            if !bin.exists() {
                out.fix(format!("install it with /system1:setup (or `{}`), or pass --bin", text::command("install")))?;
            }
            // The fix says it all: no server ran, so doctor has no more to say.
            return out.finish(VerdictName::Failed, None);
        }
    };
    out.report.steps.push(Step { step: "launch", status: StepStatus::Ok, detail: format!("{} mcp", bin.display()) });
    let verdict = steps(&mut server, &args, timeout, &mut out);
    let stderr = server.finish();
    let verdict = verdict?;
    if let Verdict::EngineDown(fixes) = &verdict {
        for fix in fixes {
            out.fix(fix.clone())?;
        }
        let line = format!("smoke: the server works, but no engine answers (exit {})", exit::ENGINE_DOWN);
        return out.finish(VerdictName::EngineDown, Some(line));
    }
    if verdict == Verdict::Failed {
        let tail: Vec<&str> = stderr.lines().rev().take(10).collect();
        if !tail.is_empty() && !out.json {
            outln!("server stderr (last lines):")?;
        }
        for line in tail.into_iter().rev() {
            if !out.json {
                outln!("  {}", said(line))?;
            }
            out.report.server_stderr.push(line.to_string());
        }
        let line = format!("smoke: FAILED (run `{}` for fixes)", text::command("doctor"));
        return out.finish(VerdictName::Failed, Some(line));
    }
    out.finish(VerdictName::Ok, Some("smoke: ok".to_string()))
}

/// How the checks went.
#[derive(PartialEq)]
enum Verdict {
    Ok,
    /// The server works, but no engine of the chain answers health: stopped, not broken. With the
    /// fix for each engine that is down.
    EngineDown(Vec<String>),
    Failed,
}

/// Runs each step in order and stops at the first that fails (after printing why); an error when
/// the report cannot be printed.
fn steps(server: &mut Server, args: &Args, timeout: Duration, out: &mut Out) -> Result<Verdict> {
    let started = Instant::now();
    let init = server.request(
        "initialize",
        json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
               "clientInfo": {"name": "system1-smoke", "version": crate::gateway::VERSION}}),
        timeout,
    );
    let init = match init {
        Ok(r) => r,
        Err(e) => return fail(out, "initialize", &e),
    };
    let info = &init["serverInfo"];
    out.step(
        StepStatus::Ok,
        "initialize",
        format!(
            "{} {}, protocol {} ({:.0} ms)",
            said(info["name"].as_str().unwrap_or("?")),
            said(info["version"].as_str().unwrap_or("?")),
            said(init["protocolVersion"].as_str().unwrap_or("?")),
            started.elapsed().as_secs_f64() * 1e3
        ),
    )?;
    if let Err(e) = server.notify("notifications/initialized") {
        return fail(out, "initialized", &e);
    }

    let tools = match server.request("tools/list", json!({}), timeout) {
        Ok(r) => r,
        Err(e) => return fail(out, "tools/list", &e),
    };
    let names: Vec<&str> =
        tools["tools"].as_array().map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect()).unwrap_or_default();
    let missing: Vec<&str> = TOOLS.iter().copied().filter(|t| !names.contains(t)).collect();
    if !missing.is_empty() {
        return fail(out, "tools/list", &format!("missing {} (got {})", missing.join(", "), said(&names.join(", "))));
    }
    out.step(StepStatus::Ok, "tools/list", said(&names.join(", ")))?;

    let health = match server.call("system1_health", json!({}), timeout) {
        Ok(h) => h,
        Err(e) => return fail(out, "system1_health", &e),
    };
    let status = health["status"].as_str().unwrap_or("?");
    let engines: Vec<String> = health["providers"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .map(|p| {
                    let up = if p["ok"].as_bool() == Some(true) { "up" } else { "down" };
                    let detail = p["detail"].as_str().map(|d| format!(": {d}")).unwrap_or_default();
                    format!("{} {up}{detail}", p["name"].as_str().unwrap_or("?"))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut health_line = format!("{status} ({})", engines.join("; "));
    if let Some(errs) = health["config_errors"].as_array().filter(|e| !e.is_empty()) {
        let errs: Vec<&str> = errs.iter().filter_map(Value::as_str).collect();
        health_line.push_str(&format!("; config errors: {}", errs.join("; ")));
    }
    let health_line = text::printable(&health_line, MAX_LINE_CHARS);
    let config_ok = health["config_errors"].as_array().is_none_or(|e| e.is_empty());
    match status {
        "ok" => out.step(StepStatus::Ok, "system1_health", health_line)?,
        "degraded" | "paused" => out.step(StepStatus::Warn, "system1_health", health_line)?,
        "down" if config_ok => {
            out.step(StepStatus::Warn, "system1_health", health_line)?;
            let down: Vec<&str> = health["providers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["ok"].as_bool() != Some(true))
                .map(|p| p["name"].as_str().unwrap_or("?"))
                .collect();
            // The server's health answer says what is down in words; the fix needs the cause,
            // which a probe from here (with the same config) gives.
            let fixes = checks::fixes_for(&Gateway::from_env(), &down)
                .into_iter()
                .map(|(name, fix)| format!("{name}: {fix}"))
                .collect();
            return Ok(Verdict::EngineDown(fixes));
        }
        _ => return fail(out, "system1_health", &health_line),
    }

    let Some(question) = &args.question else { return Ok(Verdict::Ok) };
    let mut req = json!({"question": question});
    if !args.options.is_empty() {
        req["options"] = json!(args.options);
    }
    let d = match server.call("system1_decide", req, timeout) {
        Ok(d) => d,
        Err(e) => return fail(out, "system1_decide", &e),
    };
    let latency = d["latency_ms"].as_f64().unwrap_or(f64::NAN);
    match d["status"].as_str() {
        Some("decided") => out.step(
            StepStatus::Ok,
            "system1_decide",
            format!(
                "\"{}\" (confidence {:.2}, {}, {latency} ms)",
                said(d["decision"].as_str().unwrap_or("")),
                d["confidence"].as_f64().unwrap_or(f64::NAN),
                said(d["provider"].as_str().unwrap_or("?"))
            ),
        )?,
        Some("abstained") => out.step(
            StepStatus::Ok,
            "system1_decide",
            format!("abstained ({}, {latency} ms)", said(d["rationale"].as_str().unwrap_or("no rationale"))),
        )?,
        _ => {
            let code = said(d["error"]["code"].as_str().unwrap_or("?"));
            let msg = said(d["error"]["message"].as_str().unwrap_or("?"));
            return fail(out, "system1_decide", &format!("error {code}: {msg}"));
        }
    }
    Ok(Verdict::Ok)
}

/// The most of one line printed, in characters.
const MAX_LINE_CHARS: usize = 4000;

/// What the server under test said (a name, a decision, a message, a line of its stderr), as it is
/// printed: it may be any binary, and any engine behind it, so its words are escaped and capped.
fn said(text: &str) -> String {
    text::printable(text, crate::providers::failure::MAX_QUOTED_CHARS)
}

fn fail(out: &mut Out, step: &'static str, why: &str) -> Result<Verdict> {
    out.step(StepStatus::Fail, step, text::printable(why, MAX_LINE_CHARS))?;
    Ok(Verdict::Failed)
}

/// The server under test: its stdin, its stdout lines, and its stderr collected in the background.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Receiver<String>,
    next_id: u64,
}

impl Server {
    fn spawn(bin: &std::path::Path) -> std::io::Result<Server> {
        let mut child = Command::new(bin)
            .arg("mcp")
            .env(crate::gateway::CHECK_RUN_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let (tx, lines) = channel();
        if let Some(out) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let (etx, stderr) = channel();
        if let Some(mut err) = child.stderr.take() {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = err.by_ref().take(1 << 20).read_to_string(&mut text);
                let _ = etx.send(text);
            });
        }
        let stdin = child.stdin.take();
        Ok(Server { child, stdin, lines, stderr, next_id: 0 })
    }

    fn send(&mut self, msg: &Value) -> std::result::Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        let mut line = msg.to_string();
        line.push('\n');
        stdin.write_all(line.as_bytes()).and_then(|_| stdin.flush()).map_err(|e| format!("cannot write: {e}"))
    }

    fn notify(&mut self, method: &str) -> std::result::Result<(), String> {
        self.send(&json!({"jsonrpc": "2.0", "method": method}))
    }

    /// Sends a request and waits for the answer with its id; any non-JSON line on stdout fails.
    fn request(&mut self, method: &str, params: Value, timeout: Duration) -> std::result::Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        // A server that died at once closes its stdin too: then what it printed says more than EPIPE.
        let sent = self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let timeout = if sent.is_err() { timeout.min(Duration::from_secs(2)) } else { timeout };
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(l) => l,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    sent?;
                    return Err(format!("no answer within {:.1} s", timeout.as_secs_f64()));
                }
                Err(_) => {
                    let code = self.wait_timeout(Duration::from_millis(500)).and_then(|s| s.code());
                    let how = code.map(|c| format!(" with exit code {c}")).unwrap_or_default();
                    return Err(format!("the server closed its output{how}"));
                }
            };
            let msg: Value =
                serde_json::from_str(&line).map_err(|e| format!("not JSON-RPC on stdout ({e}): {}", shorten(&line)))?;
            if msg.get("id") != Some(&json!(id)) {
                continue; // a notification or a server request: not ours
            }
            if let Some(err) = msg.get("error") {
                return Err(format!("JSON-RPC error {}", err));
            }
            return msg.get("result").cloned().ok_or_else(|| format!("answer without a result: {}", shorten(&line)));
        }
    }

    /// Calls a tool and returns its structured result.
    fn call(&mut self, tool: &str, arguments: Value, timeout: Duration) -> std::result::Result<Value, String> {
        let r = self.request("tools/call", json!({"name": tool, "arguments": arguments}), timeout)?;
        if let Some(s) = r.get("structuredContent") {
            return Ok(s.clone());
        }
        // Older clients read the text content; the server puts the same JSON there.
        r["content"][0]["text"]
            .as_str()
            .and_then(|t| serde_json::from_str(t).ok())
            .ok_or_else(|| format!("result has no structuredContent: {}", shorten(&r.to_string())))
    }

    /// Waits up to `limit` for the child to exit (so its exit code can be reported).
    fn wait_timeout(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                _ => return None,
            }
        }
    }

    /// Closes stdin, gives the server a moment to exit, and returns what it wrote on stderr.
    fn finish(mut self) -> String {
        drop(self.stdin.take());
        if self.wait_timeout(Duration::from_secs(2)).is_none() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        self.stderr.recv_timeout(Duration::from_secs(1)).unwrap_or_default()
    }
}

fn shorten(s: &str) -> String {
    crate::text::ellipsis(s, 201)
}
