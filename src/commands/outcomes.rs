//! `system1 outcomes`: proposes an outcome (succeeded or failed) for every subagent spawn in Claude
//! Code's transcripts, prints the counts and the doubtful cases (locally: descriptions are the
//! user's text), and with `--apply` writes them into the routing log's agent entries.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::json;
use system1_transcripts::Scope;

use crate::error::{Context, Result};
use crate::outcomes::{self, Outcome, Proposal};
use crate::routing::log;
use crate::text;
use crate::tier::Tier;

#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  system1 outcomes --since 2026-11-01
  system1 outcomes --apply")]
pub struct Args {
    /// Write the proposals into the routing log's agent entries (matched by tool use id). An
    /// outcome a person labelled is never overwritten.
    #[arg(long)]
    apply: bool,
    /// Only spawns from this date on (YYYY-MM-DD, or an RFC 3339 time).
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// Only spawns up to this moment: a date counts whole (until 2026-11-30 includes that day), as
    /// for `report`.
    #[arg(long, value_name = "DATE")]
    until: Option<String>,
    /// Only projects whose directory matches: a path (/home/me/repo) or part of a name, as for `report`.
    #[arg(long, value_name = "PROJECT")]
    project: Option<String>,
    /// The Claude Code projects directory (default: ~/.claude/projects, or $CLAUDE_CONFIG_DIR/projects).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Print the proposals as JSON instead of the summary.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<i32> {
    let zone = crate::zone::Zone::local();
    let scope = Scope {
        dir: args.dir.clone().unwrap_or_else(crate::paths::claude_projects_dir),
        since: args.since.as_deref().map(|s| crate::zone::parse_when(s, "--since", false, &zone)).transpose()?,
        until: args.until.as_deref().map(|s| crate::zone::parse_when(s, "--until", true, &zone)).transpose()?,
        project: args.project.clone(),
        threads: 0,
    };
    if let (Some(s), Some(u)) = (scope.since, scope.until)
        && s >= u
    {
        return Err(crate::error::Error::usage("--since must be before --until"));
    }
    let (spawns, stats) = outcomes::scan::spawns(&scope)?;
    let proposals = outcomes::propose(&spawns);

    let applied = if args.apply {
        let path = crate::paths::routing_log();
        Some(
            log::rewrite(|entries| outcomes::apply(entries, &proposals))
                .context(|| format!("cannot update {}", path.display()))?,
        )
    } else {
        None
    };

    if args.json {
        let mut out = json!({
            "spawns": proposals.len(),
            "failed": proposals.iter().filter(|p| p.outcome == Outcome::Failed).count(),
            "doubtful": proposals.iter().filter(|p| p.doubtful.is_some()).count(),
            "proposals": proposals,
            "transcripts": {"files": stats.files, "malformed_lines": stats.malformed_lines},
        });
        if let Some(a) = &applied {
            out["applied"] = json!({"written": a.written, "kept_user": a.kept_user, "not_in_log": a.not_in_log});
        }
        outln!("{}", serde_json::to_string_pretty(&out).unwrap_or_default())?;
        return Ok(0);
    }
    out!("{}", summary(&proposals))?;
    if stats.malformed_lines > 0 || stats.truncated_files > 0 {
        outln!(
            "\n({} and {} in {} were skipped)",
            text::count(stats.malformed_lines, "malformed line"),
            text::count(stats.truncated_files, "truncated file"),
            text::count(stats.files, "transcript")
        )?;
    }
    match applied {
        Some(a) => outln!(
            "\nWrote {} into {} ({} labelled by you kept as {}; {} no log entry, \
             because {} repo is not in [routing] log_dirs or the agent hook was off).",
            text::count(a.written as u64, "outcome"),
            crate::paths::routing_log().display(),
            a.kept_user,
            if a.kept_user == 1 { "it was" } else { "they were" },
            if a.not_in_log == 1 { "1 spawn has".to_string() } else { format!("{} spawns have", a.not_in_log) },
            if a.not_in_log == 1 { "its" } else { "their" }
        )?,
        None if !proposals.is_empty() => {
            outln!("\nNothing written. `{}` records these in the routing log.", text::command("outcomes --apply"))?
        }
        None => {}
    }
    Ok(0)
}

/// The counts, the failures by reason and tier, and the doubtful list.
pub fn summary(ps: &[Proposal]) -> String {
    let mut s = String::new();
    let failed = ps.iter().filter(|p| p.outcome == Outcome::Failed).count();
    let doubtful: Vec<&Proposal> = ps.iter().filter(|p| p.doubtful.is_some()).collect();
    s.push_str(&format!(
        "Subagent spawns: {}  succeeded {}  failed {}  doubtful {}\n",
        ps.len(),
        ps.len() - failed,
        failed,
        doubtful.len()
    ));
    if ps.is_empty() {
        return s;
    }
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for p in ps.iter().filter(|p| p.outcome == Outcome::Failed) {
        // Every redo under one heading, whichever spawn redid it.
        let key = if p.redone_by.is_some() { "redone by a later spawn".into() } else { p.reason.clone() };
        *reasons.entry(key).or_default() += 1;
    }
    if !reasons.is_empty() {
        s.push_str("\nFailures by reason:\n");
        for (r, n) in &reasons {
            s.push_str(&format!("  {n:>5}  {}\n", text::printable(r, 300)));
        }
    }
    let mut tiers: BTreeMap<Option<Tier>, (usize, usize)> = BTreeMap::new();
    for p in ps {
        let t = tiers.entry(p.tier).or_default();
        t.0 += 1;
        t.1 += usize::from(p.outcome == Outcome::Failed);
    }
    s.push_str("\nBy the tier that ran:\n");
    // Cheapest first, then the spawns nothing says the tier of.
    let (known, unknown): (Vec<_>, Vec<_>) = tiers.iter().partition(|(t, _)| t.is_some());
    for (t, (n, f)) in known.into_iter().chain(unknown) {
        let name = t.map_or("unknown", Tier::name);
        let noun = if *n == 1 { "spawn " } else { "spawns" };
        s.push_str(&format!("  {name:<8} {n:>5} {noun}  {f:>4} failed\n"));
    }
    if !doubtful.is_empty() {
        s.push_str("\nDoubtful (decide these with /system1:calibrate):\n");
        // The id, the time, the reason and the description come from the transcript (the
        // reason may quote the hand-back): escaped, and short enough for one line each.
        for p in doubtful {
            s.push_str(&format!(
                "  {}  {}  {}  proposed {}: {}\n      why doubtful: {}\n      \"{}\"\n",
                text::printable(&p.tool_use_id, 100),
                text::printable(p.timestamp.get(..10).unwrap_or(&p.timestamp), 30),
                p.tier.map_or("?", Tier::name),
                p.outcome.as_str(),
                text::printable(&p.reason, 300),
                text::printable(p.doubtful.as_deref().unwrap_or(""), 300),
                text::printable(&p.description, 200),
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_grouped_by_the_typed_redo_not_the_reason_s_words() {
        let failed = |id: &str, reason: &str, redone_by: Option<&str>| Proposal {
            tool_use_id: id.into(),
            outcome: Outcome::Failed,
            reason: reason.into(),
            tier: None,
            doubtful: None,
            redone_by: redone_by.map(String::from),
            timestamp: String::new(),
            description: String::new(),
            subagent_type: String::new(),
        };
        let s = summary(&[
            failed("a", "redone by b (same task id)", Some("b")),
            failed("c", "redone by d (a retry)", Some("d")),
            failed("e", "redone by hand, says its hand-back", None),
        ]);
        assert!(s.contains("      2  redone by a later spawn\n"), "{s}");
        assert!(s.contains("      1  redone by hand, says its hand-back\n"), "{s}");
    }
}
