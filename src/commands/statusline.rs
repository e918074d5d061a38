//! `system1 statusline`: Claude Code's `statusLine` command (figures and cache in
//! `report/statusline.rs`). Reads the JSON Claude Code sends on stdin and prints one line; input
//! that is empty or not Claude Code's, or any failure, prints nothing and exits 0, as a hook does.
//! `--install` sets it in Claude Code's user settings where no status line is set; `--remove`
//! takes it out again when it is system1's.

use std::io::Write;
use std::panic::AssertUnwindSafe;

use crate::config::Loaded;
use crate::error::{Error, Result};
use crate::gateway::Gateway;
use crate::install::statusline::{self, Set};
use crate::report::statusline::{Cache, Health, Input, Routing, render};
use crate::zone::Zone;
use crate::{checks, paths, state};

/// What `statusline --help` says it reads, and what it prints.
pub const READS: &str = "\
Reads one JSON object on stdin, as Claude Code sends its statusLine command (2.1.332):
  model.display_name (else model.id)   the model, first on the line
  session_id, transcript_path          this session's transcripts: its cost, and whether its last
                                       prompt got a routing hint (the tier) or why not
  cost.total_cost_usd                  the session's cost where its transcript cannot be read
  prompt_cache.warm, .hit_ratio,       the prompt cache: warm or cold, the share of hits, the
    .expected_rebuilds                 rebuilds Claude Code expects
  context_window.used_percentage       ctx
  rate_limits.five_hour/seven_day.used_percentage   5h, 7d
It also reads every transcript written today (today's cost and what routing saved), the routing
log, and the config and pause state; it keeps a cache in the install dir. Input that is empty or
not Claude Code's prints nothing; it always exits 0.

Examples:
  system1 statusline --install               # Claude Code runs it for its status line from then on
  echo '{\"model\": {\"display_name\": \"Opus\"}, \"session_id\": \"s1\"}' | system1 statusline
  system1 statusline --remove";

#[derive(clap::Args)]
pub struct Args {
    /// Set Claude Code's status line to this command (in its user settings.json), unless another
    /// status line is set there.
    #[arg(long, conflicts_with = "remove")]
    install: bool,
    /// Remove it from Claude Code's user settings, if it is system1's.
    #[arg(long)]
    remove: bool,
}

pub fn run(args: Args) -> Result<i32> {
    let settings = statusline::settings_file();
    if args.install {
        let bin = paths::installed_binary();
        return match statusline::set(&settings, &bin)? {
            Set::Added => {
                outln!("statusLine: set in {} to `{}`", settings.display(), statusline::command(&bin))?;
                Ok(0)
            }
            Set::AlreadyOurs => {
                outln!("statusLine: already system1's in {}", settings.display())?;
                Ok(0)
            }
            Set::Taken(other) => Err(Error::failure(format!(
                "{} already has a status line (`{other}`); left as it is",
                settings.display()
            ))
            .with_hint("remove it there first if you want system1's")),
        };
    }
    if args.remove {
        let line = if statusline::remove(&settings)? {
            format!("statusLine: removed system1's from {}", settings.display())
        } else {
            format!("statusLine: none of system1's in {}", settings.display())
        };
        outln!("{line}")?;
        return Ok(0);
    }
    Ok(show())
}

/// The status line itself, under the same guard as a hook: whatever happens, exit 0, and the line
/// or nothing on stdout.
pub fn show() -> i32 {
    std::panic::set_hook(Box::new(|_| {}));
    if let Ok(Some(line)) = std::panic::catch_unwind(AssertUnwindSafe(line)) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
    }
    0
}

fn line() -> Option<String> {
    let (_, payload) = crate::hook::read_input(std::io::stdin().lock(), crate::hook::STDIN_DEADLINE).ok()?;
    let input = Input::from_payload(&payload)?;
    let loaded = crate::config::load();
    let paused = state::is_paused();
    let broken = !loaded.errors.is_empty();
    // The engine is probed when System-1 would use it: not paused, a config that reads, a real engine.
    let real = !paused && !broken && checks::no_real_engine(&loaded).is_none();
    let probe = |timeout| engine_answers(&loaded, timeout);
    let zone = Zone::local();
    let now = chrono::Utc::now().timestamp();
    let (figures, down) = Cache::new().run(&input, &zone, now, real.then_some(&probe as &dyn Fn(_) -> bool));
    let health = if paused {
        Health::Paused
    } else if broken {
        Health::ConfigError
    } else if down {
        Health::EngineDown
    } else {
        Health::Ok
    };
    let routing = Routing { enabled: loaded.config.routing.enabled, hint: loaded.config.routing.hint };
    Some(render(&input, &figures, routing, health))
}

/// Whether any engine of the chain answers a health probe within `timeout` (probed side by side).
fn engine_answers(loaded: &Loaded, timeout: std::time::Duration) -> bool {
    let gateway = Gateway::new(loaded.clone());
    std::thread::scope(|s| {
        let probes: Vec<_> = gateway.chain().iter().map(|p| s.spawn(move || p.health(timeout).ok())).collect();
        probes.into_iter().any(|h| h.join().unwrap_or(false))
    })
}
