//! `system1 decide`: one decision from the command line, through the same gateway as the MCP tool.
//!
//! Exit codes: 0 decided, 4 abstained, 1 error (invalid request or every provider failed),
//! 3 broken config.

use serde_json::{Map, Value, json};

use crate::error::{Error, Result, exit};
use crate::gateway::{ErrorCode, Gateway, Outcome, Status, request};
use crate::logging;
use crate::output::{self, Tone};

#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  system1 decide -q \"Is this change safe to ship on a Friday?\"
  system1 decide -q \"Which database?\" -o postgres -o sqlite --context '{\"users\": 40}'
  system1 decide -q \"Ship it?\" --json

Exit codes:
  0  decided
  1  an error: an invalid request, or every engine failed
  2  a usage error (an unknown option, --context that is not JSON)
  3  the config is broken
  4  abstained: no decision (below the threshold, paused, or no engine answers); not an error")]
pub struct Args {
    /// The question to decide.
    #[arg(long, short)]
    question: String,
    /// One option (repeat for each); without options the question is answered yes or no.
    #[arg(long = "option", short = 'o')]
    options: Vec<String>,
    /// Context for the engine, as a JSON object.
    #[arg(long)]
    context: Option<String>,
    /// Abstain below this confidence (overrides the config).
    #[arg(long)]
    min_confidence: Option<f64>,
    /// Print the whole response as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<i32> {
    let gateway = Gateway::from_env();
    let g = &gateway.loaded.config.gateway;
    // The printed answer already says how the decision went, so INFO lines on a terminal would only
    // repeat it: the command line logs warnings, or everything at DEBUG.
    let level = if g.log_level == "DEBUG" { "DEBUG" } else { "WARNING" };
    logging::init(level, &g.log_file, true);

    let mut req = Map::new();
    req.insert("question".into(), json!(args.question));
    if !args.options.is_empty() {
        req.insert("options".into(), json!(args.options));
    }
    if let Some(c) = &args.context {
        let v: Value = serde_json::from_str(c).map_err(|e| Error::usage(format!("--context is not JSON: {e}")))?;
        req.insert("context".into(), v);
    }
    if let Some(m) = args.min_confidence {
        req.insert("min_confidence".into(), json!(m));
    }
    // The same validation as the MCP tool's, so both refuse the same requests with the same words.
    let resp = match request::validate(&Value::Object(req)) {
        Ok(req) => gateway.decide(&req),
        Err(invalid) => gateway.refuse(&invalid),
    };

    if args.json {
        outln!("{}", serde_json::to_string_pretty(&resp).unwrap_or_default())?;
    } else {
        match resp.status {
            Status::Decided => {
                let rest = format!(
                    " (confidence {:.2}{}{}, {}, {} ms)",
                    resp.confidence.unwrap_or(0.0),
                    if resp.calibrated { ", calibrated" } else { "" },
                    resp.stability.map(|s| format!(", stability {s:.2}")).unwrap_or_default(),
                    resp.provider.as_deref().unwrap_or("-"),
                    resp.latency_ms
                );
                output::write_line(&[(Some(Tone::Good), resp.decision.as_deref().unwrap_or("")), (None, &rest)])?
            }
            Status::Abstained => output::write_line(&[
                (Some(Tone::Warn), "abstained"),
                (None, ": "),
                (None, resp.rationale.as_deref().unwrap_or("")),
            ])?,
            Status::Error => {}
        }
        // Failed attempts explain a fallback or an error; an abstention is already the printed answer.
        let failed = |a: &&crate::gateway::Attempt| !matches!(a.outcome, Outcome::Ok | Outcome::Abstained);
        for a in resp.attempts.iter().filter(failed) {
            errln!(
                "  attempt {}: {:?} after {} ms: {}",
                a.provider,
                a.outcome,
                a.latency_ms,
                a.detail.as_deref().unwrap_or("")
            );
        }
    }
    // What would answer the question, for the person (the model's rationale is one sentence).
    if let Some(hint) = &resp.hint {
        errln!("system1: {hint}");
    }
    Ok(match (&resp.status, &resp.error) {
        (Status::Decided, _) => exit::OK,
        (Status::Abstained, _) => exit::ABSTAINED,
        (Status::Error, Some(e)) if e.code == ErrorCode::ConfigError => {
            if !args.json {
                errln!("system1: config error: {}", e.message);
            }
            exit::CONFIG
        }
        (Status::Error, e) => {
            if !args.json {
                errln!("system1: {}", e.as_ref().map(|e| e.message.as_str()).unwrap_or("error"));
            }
            exit::FAILURE
        }
    })
}
