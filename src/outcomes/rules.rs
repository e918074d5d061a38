//! The outcome rules, as pure functions over the spawns found in the transcripts (for users:
//! docs/calibration.md, "Outcome labels"). A spawn failed when its tool result was an error, its task notification said
//! `failed`/`stopped`/`killed`, its subagent died on an API error, its report says it was blocked,
//! or a later spawn redid the same task; otherwise it succeeded. Cases where the evidence is weak
//! are proposed anyway but flagged doubtful, so that a person decides them.

use std::sync::LazyLock;

use regex::Regex;

use crate::tier::Tier;

/// Everything the transcripts say about one Agent (or Task) tool call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spawn {
    pub tool_use_id: String,
    /// The project folder the session belongs to: redos are looked for within it.
    pub project: String,
    pub session_id: String,
    pub timestamp: String,
    pub description: String,
    pub prompt: String,
    pub subagent_type: String,
    /// The `model` the orchestrator asked for (`haiku`, `inherit`, a full id) or empty.
    pub requested_model: String,
    /// The model of the assistant that spawned it (what `inherit` resolves to).
    pub parent_model: String,
    pub agent_id: String,
    /// Whether a tool result came back at all.
    pub has_result: bool,
    pub is_error: bool,
    /// `toolUseResult.status` (`completed`, `async_launched`, ...).
    pub status: String,
    pub resolved_model: String,
    /// The agent's report: the tool result's text, plus the task notification's result if any.
    pub report: String,
    /// The `<status>` of a `<task-notification>` about this agent, if one came.
    pub notification_status: String,
    /// The model named by the subagent's own assistant lines.
    pub subagent_model: String,
    /// The subagent's own file has an `isApiErrorMessage` line.
    pub api_error: bool,
}

/// The outcome the routing log keeps, so proposals are written as they are read.
pub use crate::routing::entry::Outcome;

/// The proposal for one spawn.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Proposal {
    pub tool_use_id: String,
    pub outcome: Outcome,
    pub reason: String,
    /// The tier that ran; None when nothing says which model ran.
    pub tier: Option<Tier>,
    /// Why a person should look at it, when the evidence is weak.
    pub doubtful: Option<String>,
    pub timestamp: String,
    pub description: String,
    pub subagent_type: String,
}

/// The tier that actually ran: `resolvedModel` first (it already covers `inherit`), then the
/// subagent's own lines, then what was asked for (with `inherit` or nothing meaning the parent's
/// model). The bool says whether the tier came from a guess rather than from the run itself.
/// Model ids read as the usage report reads them (`Tier::of`): `claude-opus-4-8[1m]` is opus.
pub fn tier(s: &Spawn) -> (Option<Tier>, bool) {
    if let Some(t) = Tier::of(&s.resolved_model).or_else(|| Tier::of(&s.subagent_model)) {
        return (Some(t), false);
    }
    let asked = if s.requested_model.is_empty() || s.requested_model == "inherit" {
        &s.parent_model
    } else {
        &s.requested_model
    };
    (Tier::of(asked), true)
}

/// The agent says in its report that it was blocked: a statement about itself, not the word
/// anywhere (a report may well say that a firewall blocked a port).
static BLOCKED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?im)(^\W*(status|result|outcome)?\W*blocked\b|\b(i am|i'm|i was|i got|we are|we're|we were|agent (is|was)|task (is|was)|remains?|still) blocked\b|\bblocked (on|by) (a |the )?(missing|lack|permission|access|dependency|error|failing))",
    )
    .unwrap_or_else(|_| unreachable!("the pattern is a literal"))
});

/// Words that suggest trouble without saying the task failed.
static TROUBLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(blocked|could not|couldn't|unable to|did not finish|gave up|not able to)\b")
        .unwrap_or_else(|_| unreachable!("the pattern is a literal"))
});

/// A task id a redo would repeat: `W4-P3`, `Task 12`, `Phase 2`, `Step 3b`, `Issue #7`.
static TASK_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b([A-Z]{1,3}\d+(?:-[A-Z]{1,3}\d+)+)\b|(?i)\b(task|step|phase|issue|ticket|milestone)\s*#?\s*(\d+[a-z]?)\b",
    )
    .unwrap_or_else(|_| unreachable!("the pattern is a literal"))
});

static RETRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(previous attempt|last attempt|earlier attempt|retry|retrying|re-try|try again|another attempt|second attempt|redo)\b")
        .unwrap_or_else(|_| unreachable!("the pattern is a literal"))
});

/// The first task id of a spawn, from its description, else its prompt; normalised (`task 12`).
pub fn primary_task_id(s: &Spawn) -> Option<String> {
    for text in [&s.description, &s.prompt] {
        if let Some(c) = TASK_ID.captures(text) {
            if let Some(m) = c.get(1) {
                return Some(m.as_str().to_string());
            }
            if let (Some(kind), Some(n)) = (c.get(2), c.get(3)) {
                return Some(format!("{} {}", kind.as_str().to_ascii_lowercase(), n.as_str().to_ascii_lowercase()));
            }
        }
    }
    None
}

fn says_retry(s: &Spawn) -> bool {
    RETRY.is_match(&s.description) || RETRY.is_match(&s.prompt)
}

/// Which later spawn redid this one, if any, and whether that is doubtful. `later` holds the spawns
/// of the same project that started after it, in order.
fn redone_by<'a>(s: &Spawn, later: &[&'a Spawn]) -> Option<(&'a Spawn, bool, &'static str)> {
    let id = primary_task_id(s);
    for &l in later {
        if let Some(id) = &id
            && primary_task_id(l).as_ref() == Some(id)
        {
            if says_retry(l) {
                return Some((l, false, "the same task id plus a retry"));
            }
            if !l.subagent_type.is_empty() && l.subagent_type == s.subagent_type {
                // Same role and task: usually a redo, but it may be the next stage of the same task.
                return Some((l, true, "a same-role re-spawn of the same task id"));
            }
        }
        // No task id to go by: the very same description, re-spawned with retry words.
        if id.is_none() && !s.description.is_empty() && l.description == s.description && says_retry(l) {
            return Some((l, true, "the same description re-spawned as a retry"));
        }
    }
    None
}

/// How long after a spawn a redo is looked for: a plan's "Task 12" a week later is another task.
pub const REDO_WINDOW_HOURS: i64 = 24;

fn time_of(s: &Spawn) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    chrono::DateTime::parse_from_rfc3339(&s.timestamp).ok()
}

/// Proposes an outcome for every spawn. `spawns` may come in any order; redos are looked for among
/// the spawns of the same project that started after it, within [`REDO_WINDOW_HOURS`].
pub fn propose(spawns: &[Spawn]) -> Vec<Proposal> {
    let mut ordered: Vec<&Spawn> = spawns.iter().collect();
    ordered.sort_by(|a, b| (&a.project, &a.timestamp).cmp(&(&b.project, &b.timestamp)));
    let window = chrono::Duration::hours(REDO_WINDOW_HOURS);
    ordered
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let start = time_of(s);
            let later: Vec<&Spawn> = ordered[i + 1..]
                .iter()
                .take_while(|l| {
                    l.project == s.project
                        && match (start, time_of(l)) {
                            (Some(a), Some(b)) => b - a <= window,
                            _ => true,
                        }
                })
                .copied()
                .collect();
            propose_one(s, &later)
        })
        .collect()
}

/// The rules for one spawn, in order of how sure each is.
pub fn propose_one(s: &Spawn, later: &[&Spawn]) -> Proposal {
    let (tier, tier_guessed) = tier(s);
    let mut p = Proposal {
        tool_use_id: s.tool_use_id.clone(),
        outcome: Outcome::Failed,
        reason: String::new(),
        tier,
        doubtful: None,
        timestamp: s.timestamp.clone(),
        description: s.description.clone(),
        subagent_type: s.subagent_type.clone(),
    };
    let notification = s.notification_status.to_ascii_lowercase();
    if s.is_error {
        p.reason = "the tool result was an error".into();
    } else if ["failed", "stopped", "killed", "error", "cancelled"].contains(&notification.as_str()) {
        p.reason = format!("the task notification's status was {notification}");
    } else if s.api_error {
        p.reason = "the subagent died on an API error".into();
    } else if BLOCKED.is_match(&s.report) {
        p.reason = "the report says the agent was blocked".into();
    } else if let Some((l, doubtful, how)) = redone_by(s, later) {
        p.reason = format!("redone by {} ({how})", l.tool_use_id);
        if doubtful {
            p.doubtful = Some(format!("{how}: check that {} really redid it", l.tool_use_id));
        }
    } else {
        p.outcome = Outcome::Succeeded;
        p.reason = "no sign of failure".into();
        if !s.has_result && s.notification_status.is_empty() {
            p.doubtful = Some("no result in the transcripts (interrupted, or still running)".into());
        } else if let Some(m) = TROUBLE.find(&s.report) {
            p.doubtful = Some(format!("the report says {:?}", m.as_str()));
        }
    }
    if p.doubtful.is_none() && tier.is_none() {
        p.doubtful = Some("nothing says which model ran".into());
    } else if p.doubtful.is_none() && tier_guessed && s.status == "completed" {
        p.doubtful = Some("no resolvedModel: the tier is the one asked for".into());
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spawn(id: &str, desc: &str) -> Spawn {
        Spawn {
            tool_use_id: id.into(),
            project: "p".into(),
            timestamp: format!("2026-10-01T10:00:{id}Z"),
            description: desc.into(),
            prompt: desc.into(),
            subagent_type: "general-purpose".into(),
            has_result: true,
            status: "completed".into(),
            resolved_model: "claude-sonnet-4-6".into(),
            report: "Done.".into(),
            ..Spawn::default()
        }
    }

    #[test]
    fn tiers_from_model_ids() {
        let mut s = spawn("01", "x");
        s.resolved_model.clear();
        s.requested_model = "inherit".into();
        s.parent_model = "claude-opus-4-8".into();
        assert_eq!(tier(&s), (Some(Tier::Opus), true));
        s.subagent_model = "claude-haiku-4-5".into();
        assert_eq!(tier(&s), (Some(Tier::Haiku), false));
        s.resolved_model = "claude-fable-5-1".into();
        assert_eq!(tier(&s), (Some(Tier::Fable), false));
        s.resolved_model = "inherit".into();
        s.subagent_model.clear();
        s.requested_model = "fable".into();
        assert_eq!(tier(&s), (Some(Tier::Fable), true));
    }

    #[test]
    fn task_ids() {
        assert_eq!(primary_task_id(&spawn("01", "Implement W4-P3 parser")), Some("W4-P3".into()));
        assert_eq!(primary_task_id(&spawn("01", "Task 12: fix the tests")), Some("task 12".into()));
        assert_eq!(primary_task_id(&spawn("01", "do TASK #12 again")), Some("task 12".into()));
        assert_eq!(primary_task_id(&spawn("01", "fix the tests")), None);
    }

    #[test]
    fn blocked_means_the_agent_not_the_word() {
        let mut s = spawn("01", "x");
        s.report = "BLOCKED: the migration needs credentials I do not have".into();
        assert_eq!(propose_one(&s, &[]).outcome, Outcome::Failed);
        s.report = "I am blocked on a missing API key.".into();
        assert_eq!(propose_one(&s, &[]).outcome, Outcome::Failed);
        s.report = "Fixed: the firewall blocked port 22, so I opened it.".into();
        let p = propose_one(&s, &[]);
        assert_eq!(p.outcome, Outcome::Succeeded);
        assert!(p.doubtful.as_deref().unwrap_or("").contains("blocked"), "{p:?}");
    }

    #[test]
    fn doubtful_without_a_model_or_with_a_described_retry() {
        // Nothing names a model: not the run, not the request, not the parent.
        let mut s = spawn("01", "Check the links");
        s.resolved_model.clear();
        let p = propose_one(&s, &[]);
        assert_eq!((p.outcome, p.tier), (Outcome::Succeeded, None));
        assert_eq!(p.doubtful.as_deref(), Some("nothing says which model ran"));
        // No task id, but the very same description comes back as a retry: a redo, doubtful.
        let first = spawn("01", "fix the flaky email test");
        let mut again = spawn("02", "fix the flaky email test");
        again.prompt = "Retry: the previous attempt did not make it pass".into();
        let p = propose_one(&first, &[&again]);
        assert_eq!(p.outcome, Outcome::Failed);
        assert!(p.doubtful.as_deref().unwrap_or("").contains("same description"), "{p:?}");
        // The same description without retry words is just the same kind of task again.
        assert_eq!(propose_one(&first, &[&spawn("02", "fix the flaky email test")]).outcome, Outcome::Succeeded);
    }

    #[test]
    fn redo_rules() {
        let first = spawn("01", "W4-P3: implement the parser");
        let mut retry = spawn("02", "W4-P3 retry: implement the parser");
        retry.subagent_type = "coder".into();
        let p = propose_one(&first, &[&retry]);
        assert_eq!((p.outcome, p.doubtful.is_none()), (Outcome::Failed, true), "{p:?}");
        // Same task id, another role, no retry words: the next stage, not a redo.
        let mut review = spawn("02", "W4-P3: review the parser");
        review.subagent_type = "reviewer".into();
        assert_eq!(propose_one(&first, &[&review]).outcome, Outcome::Succeeded);
        // Same task id, same role: a redo, doubtful.
        let p = propose_one(&first, &[&spawn("02", "W4-P3: implement the parser, carefully")]);
        assert_eq!(p.outcome, Outcome::Failed);
        assert!(p.doubtful.is_some());
        // A retry two days later is another task that happens to share the id.
        let mut late = retry.clone();
        late.timestamp = "2026-10-03T10:00:02Z".into();
        let ps = propose(&[late, first.clone()]);
        assert_eq!(ps.iter().find(|p| p.tool_use_id == "01").map(|p| p.outcome), Some(Outcome::Succeeded));
        // propose() looks only at later spawns of the same project.
        let mut other = retry.clone();
        other.project = "q".into();
        let ps = propose(&[retry.clone(), first.clone()]);
        assert_eq!(ps.iter().find(|p| p.tool_use_id == "01").map(|p| p.outcome), Some(Outcome::Failed));
        assert_eq!(ps.iter().find(|p| p.tool_use_id == "02").map(|p| p.outcome), Some(Outcome::Succeeded));
        let ps = propose(&[other, first]);
        assert_eq!(ps.iter().find(|p| p.tool_use_id == "01").map(|p| p.outcome), Some(Outcome::Succeeded));
    }
}
