//! The outcome rules, as pure functions over the spawns found in the transcripts (for users:
//! docs/calibration.md, "Outcome labels"). A spawn failed when its tool result was an error, its task notification said
//! `failed`/`stopped`/`killed`, its subagent died on an API error, its hand-back says it was blocked,
//! or a later spawn redid the same task; otherwise it succeeded. Cases where the evidence is weak
//! are proposed anyway but flagged doubtful, so that a person decides them.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex_lite::Regex;

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
    /// The agent's hand-back: the tool result's text, plus the task notification's result if any.
    pub hand_back: String,
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
    /// The later spawn that redid this one, when that is why it failed (the reason says it in
    /// words; summaries group on this).
    #[serde(skip)]
    pub redone_by: Option<String>,
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

/// The agent says in its hand-back that it was blocked: a statement about itself, not the word
/// anywhere (a hand-back may well say that a firewall blocked a port).
const BLOCKED_PATTERN: &str = r"(?im)(^\W*(status|result|outcome)?\W*blocked\b|\b(i am|i'm|i was|i got|we are|we're|we were|agent (is|was)|task (is|was)|remains?|still) blocked\b|\bblocked (on|by) (a |the )?(missing|lack|permission|access|dependency|error|failing))";
static BLOCKED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(BLOCKED_PATTERN).unwrap_or_else(|_| unreachable!("the pattern is a literal")));

/// Words that suggest trouble without saying the task failed.
const TROUBLE_PATTERN: &str = r"(?i)\b(blocked|could not|couldn't|unable to|did not finish|gave up|not able to)\b";
static TROUBLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(TROUBLE_PATTERN).unwrap_or_else(|_| unreachable!("the pattern is a literal")));

/// A task id a redo would repeat: `W4-P3`, `Task 12`, `Phase 2`, `Step 3b`, `Issue #7`.
const TASK_ID_PATTERN: &str =
    r"\b([A-Z]{1,3}\d+(?:-[A-Z]{1,3}\d+)+)\b|(?i)\b(task|step|phase|issue|ticket|milestone)\s*#?\s*(\d+[a-z]?)\b";
static TASK_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(TASK_ID_PATTERN).unwrap_or_else(|_| unreachable!("the pattern is a literal")));

const RETRY_PATTERN: &str = r"(?i)\b(previous attempt|last attempt|earlier attempt|retry|retrying|re-try|try again|another attempt|second attempt|redo)\b";
static RETRY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(RETRY_PATTERN).unwrap_or_else(|_| unreachable!("the pattern is a literal")));

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

/// How long after a spawn a redo is looked for: a plan's "Task 12" a week later is another task.
pub const REDO_WINDOW_HOURS: i64 = 24;

/// A later spawn that redid one: which, whether that is doubtful, and by which rule.
pub type Redo<'a> = (&'a Spawn, bool, &'static str);

/// What the redo rules read of a spawn, worked out once.
struct Facts {
    time: chrono::DateTime<chrono::FixedOffset>,
    task_id: Option<String>,
    retry: bool,
}

/// Proposes an outcome for every spawn. `spawns` may come in any order; redos are looked for among
/// the spawns of the same project that started after it, within [`REDO_WINDOW_HOURS`]. A spawn
/// whose time cannot be read is not placed among the others: it neither redoes nor is redone.
///
/// The first later spawn that matches is the redo. Each candidate list (the spawns of one project
/// with one task id, or with one description) is walked once from its end, keeping the nearest
/// later spawn of each kind, so the work grows with the number of spawns, not with its square
/// (20,000 spawns in one session took 40 s).
pub fn propose(spawns: &[Spawn]) -> Vec<Proposal> {
    let facts: Vec<Option<Facts>> = spawns
        .iter()
        .map(|s| {
            Some(Facts {
                time: chrono::DateTime::parse_from_rfc3339(&s.timestamp).ok()?,
                task_id: primary_task_id(s),
                retry: says_retry(s),
            })
        })
        .collect();
    let mut timed: Vec<usize> = (0..spawns.len()).filter(|&i| facts[i].is_some()).collect();
    let time = |i: usize| facts[i].as_ref().map(|f| f.time);
    timed.sort_by(|&a, &b| (&spawns[a].project, time(a)).cmp(&(&spawns[b].project, time(b))));
    // Each spawn's place in that order.
    let mut rank = vec![usize::MAX; spawns.len()];
    for (r, &i) in timed.iter().enumerate() {
        rank[i] = r;
    }
    // The candidate lists, each in time order.
    let mut by_task: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    let mut by_description: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for &i in &timed {
        let (s, f) = (&spawns[i], facts[i].as_ref());
        if let Some(id) = f.and_then(|f| f.task_id.as_deref()) {
            by_task.entry((&s.project, id)).or_default().push(i);
        }
        if !s.description.is_empty() {
            by_description.entry((&s.project, &s.description)).or_default().push(i);
        }
    }
    let window = chrono::Duration::hours(REDO_WINDOW_HOURS);
    let within = |s: usize, l: usize| matches!((time(s), time(l)), (Some(a), Some(b)) if b - a <= window);
    let mut redos: Vec<Option<Redo<'_>>> = vec![None; spawns.len()];
    // The same task id: the first later spawn that says it retries, or that has the same role.
    for list in by_task.values() {
        let mut next_retry: Option<usize> = None;
        let mut next_of_role: HashMap<&str, usize> = HashMap::new();
        for &i in list.iter().rev() {
            let s = &spawns[i];
            let same_role = Some(s.subagent_type.as_str()).filter(|t| !t.is_empty()).and_then(|t| next_of_role.get(t));
            let first = match (next_retry, same_role.copied()) {
                (Some(r), Some(t)) if rank[t] < rank[r] => Some((t, false)),
                (Some(r), _) => Some((r, true)),
                (None, Some(t)) => Some((t, false)),
                (None, None) => None,
            };
            if let Some((l, retry)) = first.filter(|&(l, _)| within(i, l)) {
                redos[i] = Some(if retry {
                    (&spawns[l], false, "the same task id plus a retry")
                } else {
                    // Same role and task: usually a redo, but it may be the next stage of the same task.
                    (&spawns[l], true, "a same-role re-spawn of the same task id")
                });
            }
            if facts[i].as_ref().is_some_and(|f| f.retry) {
                next_retry = Some(i);
            }
            if !s.subagent_type.is_empty() {
                next_of_role.insert(&s.subagent_type, i);
            }
        }
    }
    // No task id to go by: the very same description, re-spawned with retry words.
    for list in by_description.values() {
        let mut next_retry: Option<usize> = None;
        for &i in list.iter().rev() {
            if facts[i].as_ref().is_some_and(|f| f.task_id.is_none())
                && let Some(l) = next_retry.filter(|&l| within(i, l))
            {
                redos[i] = Some((&spawns[l], true, "the same description re-spawned as a retry"));
            }
            if facts[i].as_ref().is_some_and(|f| f.retry) {
                next_retry = Some(i);
            }
        }
    }
    // In time order; the spawns without a time last, as they came.
    let untimed = (0..spawns.len()).filter(|&i| facts[i].is_none());
    timed.iter().copied().chain(untimed).map(|i| propose_one(&spawns[i], redos[i])).collect()
}

/// The rules for one spawn, in order of how sure each is; `redo` is the later spawn that redid it,
/// if [`propose`] found one.
pub fn propose_one(s: &Spawn, redo: Option<Redo<'_>>) -> Proposal {
    let (tier, tier_guessed) = tier(s);
    let mut p = Proposal {
        tool_use_id: s.tool_use_id.clone(),
        outcome: Outcome::Failed,
        reason: String::new(),
        tier,
        doubtful: None,
        redone_by: None,
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
    } else if BLOCKED.is_match(&s.hand_back) {
        p.reason = "its hand-back says the agent was blocked".into();
    } else if let Some((l, doubtful, how)) = redo {
        p.reason = format!("redone by {} ({how})", l.tool_use_id);
        p.redone_by = Some(l.tool_use_id.clone());
        if doubtful {
            p.doubtful = Some(format!("{how}: check that {} really redid it", l.tool_use_id));
        }
    } else {
        p.outcome = Outcome::Succeeded;
        p.reason = "no sign of failure".into();
        if !s.has_result && s.notification_status.is_empty() {
            p.doubtful = Some("no result in the transcripts (interrupted, or still running)".into());
        } else if let Some(m) = TROUBLE.find(&s.hand_back) {
            p.doubtful = Some(format!("its hand-back says {:?}", m.as_str()));
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

    /// regex-lite reads the rules as the full regex crate did: on hand-backs written in the ways
    /// agents write them (and a few non-ASCII ones), both find the same matches and task ids.
    #[test]
    fn the_rules_match_as_they_did_with_the_regex_crate() {
        let texts = [
            "BLOCKED: the migration needs credentials I do not have",
            "Status: blocked\nWaiting on review.",
            "  - **Result**: Blocked by a missing dependency",
            "I'm blocked until the API key is provided.",
            "The firewall blocked port 22, so I used 2222 instead. Done.",
            "We were blocked on the lack of access to staging.",
            "Task 12 is done; see W4-P3-B2 and Step 3b, issue #7, Phase 2.",
            "Could not reproduce; gave up after three tries. Unable to finish.",
            "Retry of the previous attempt: try again with the fix (a redo).",
            "Re-try Milestone 4 — still blocked — café blocked déjà; ÉTAPE 3; Ünit 5",
            "unblocked, not blocked-ish, couldn't, did not finish",
        ];
        for (name, pattern) in [
            ("BLOCKED", BLOCKED_PATTERN),
            ("TROUBLE", TROUBLE_PATTERN),
            ("TASK_ID", TASK_ID_PATTERN),
            ("RETRY", RETRY_PATTERN),
        ] {
            let lite = Regex::new(pattern).unwrap();
            let full = regex::Regex::new(pattern).unwrap();
            for text in texts {
                let a: Vec<Vec<Option<&str>>> =
                    lite.captures_iter(text).map(|c| c.iter().map(|m| m.map(|m| m.as_str())).collect()).collect();
                let b: Vec<Vec<Option<&str>>> =
                    full.captures_iter(text).map(|c| c.iter().map(|m| m.map(|m| m.as_str())).collect()).collect();
                assert_eq!(a, b, "{name} on {text:?}");
            }
        }
        // The one difference: a task number is ASCII digits now (the regex crate's \d took any
        // script's digits, so "task ３" was a task id).
        assert!(TASK_ID.find("task ３").is_none() && TASK_ID.find("task 3").is_some());
    }

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
            hand_back: "Done.".into(),
            ..Spawn::default()
        }
    }

    /// The proposal for spawn `id` when `spawns` are proposed together.
    fn outcome(spawns: &[&Spawn], id: &str) -> Proposal {
        let all: Vec<Spawn> = spawns.iter().map(|s| (*s).clone()).collect();
        propose(&all).into_iter().find(|p| p.tool_use_id == id).expect("a proposal for every spawn")
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
        s.hand_back = "BLOCKED: the migration needs credentials I do not have".into();
        assert_eq!(propose_one(&s, None).outcome, Outcome::Failed);
        s.hand_back = "I am blocked on a missing API key.".into();
        assert_eq!(propose_one(&s, None).outcome, Outcome::Failed);
        s.hand_back = "Fixed: the firewall blocked port 22, so I opened it.".into();
        let p = propose_one(&s, None);
        assert_eq!(p.outcome, Outcome::Succeeded);
        assert!(p.doubtful.as_deref().unwrap_or("").contains("blocked"), "{p:?}");
    }

    #[test]
    fn doubtful_without_a_model_or_with_a_described_retry() {
        // Nothing names a model: not the run, not the request, not the parent.
        let mut s = spawn("01", "Check the links");
        s.resolved_model.clear();
        let p = propose_one(&s, None);
        assert_eq!((p.outcome, p.tier), (Outcome::Succeeded, None));
        assert_eq!(p.doubtful.as_deref(), Some("nothing says which model ran"));
        // No task id, but the very same description comes back as a retry: a redo, doubtful.
        let first = spawn("01", "fix the flaky email test");
        let mut again = spawn("02", "fix the flaky email test");
        again.prompt = "Retry: the previous attempt did not make it pass".into();
        let p = outcome(&[&first, &again], "01");
        assert_eq!(p.outcome, Outcome::Failed);
        assert!(p.doubtful.as_deref().unwrap_or("").contains("same description"), "{p:?}");
        // The same description without retry words is just the same kind of task again.
        assert_eq!(outcome(&[&first, &spawn("02", "fix the flaky email test")], "01").outcome, Outcome::Succeeded);
    }

    #[test]
    fn redo_rules() {
        let first = spawn("01", "W4-P3: implement the parser");
        let mut retry = spawn("02", "W4-P3 retry: implement the parser");
        retry.subagent_type = "coder".into();
        let p = outcome(&[&first, &retry], "01");
        assert_eq!((p.outcome, p.doubtful.is_none()), (Outcome::Failed, true), "{p:?}");
        // Same task id, another role, no retry words: the next stage, not a redo.
        let mut review = spawn("02", "W4-P3: review the parser");
        review.subagent_type = "reviewer".into();
        assert_eq!(outcome(&[&first, &review], "01").outcome, Outcome::Succeeded);
        // Same task id, same role: a redo, doubtful.
        let p = outcome(&[&first, &spawn("02", "W4-P3: implement the parser, carefully")], "01");
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
        let ps = propose(&[other, first.clone()]);
        assert_eq!(ps.iter().find(|p| p.tool_use_id == "01").map(|p| p.outcome), Some(Outcome::Succeeded));
        // The nearest later spawn decides: a same-role re-spawn before a retry is the redo.
        let mut same_role = spawn("02", "W4-P3: implement the parser again");
        same_role.subagent_type = first.subagent_type.clone();
        let mut retry3 = retry.clone();
        retry3.tool_use_id = "03".into();
        retry3.timestamp = "2026-10-01T10:00:03Z".into();
        let p = outcome(&[&retry3, &same_role, &first], "01");
        assert!(p.reason.contains("redone by 02") && p.doubtful.is_some(), "{p:?}");
        let mut retry2 = retry3.clone();
        retry2.timestamp = "2026-10-01T10:00:01.5Z".into();
        let p = outcome(&[&retry2, &same_role, &first], "01");
        assert!(p.reason.contains("redone by 03") && p.doubtful.is_none(), "{p:?}");
        assert_eq!(p.redone_by.as_deref(), Some("03"));
    }

    #[test]
    fn a_spawn_whose_time_cannot_be_read_is_neither_redone_nor_a_redo() {
        let first = spawn("01", "W4-P3: implement the parser");
        let mut retry = spawn("02", "W4-P3 retry: implement the parser");
        retry.timestamp = "yesterday".into();
        assert_eq!(outcome(&[&first, &retry], "01").outcome, Outcome::Succeeded);
        let mut first = first;
        first.timestamp = String::new();
        retry.timestamp = "2026-10-01T10:00:02Z".into();
        assert_eq!(outcome(&[&first, &retry], "01").outcome, Outcome::Succeeded);
        assert_eq!(propose(&[first, retry]).len(), 2, "every spawn still gets a proposal");
    }
}
