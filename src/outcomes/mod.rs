//! Outcome labels for subagent spawns (`system1 outcomes`): whether the model that ran got the job
//! done, read from Claude Code's transcripts. `collect` gathers the spawns, `rules` proposes an
//! outcome for each, and [`apply`] writes the proposals into the routing log's agent entries.

pub mod collect;
pub mod rules;
pub mod scan;

use std::collections::HashMap;

pub use rules::{Outcome, Proposal, propose};

use crate::routing::entry::{Entry, OutcomeSource};

/// What writing the proposals into the log did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Applied {
    /// Agent entries given an outcome (or whose automatic outcome changed).
    pub written: usize,
    /// Agent entries left alone because a person labelled their outcome.
    pub kept_user: usize,
    /// Proposals whose spawn has no entry in the log (its repo was not in `log_dirs`).
    pub not_in_log: usize,
}

/// Writes each proposal into the agent entry with the same `tool_use_id`: `outcome`,
/// `outcome_reason`, `outcome_tier`, `outcome_source: "auto"`, and `outcome_doubtful` when the
/// evidence is weak (so that labelling asks about it). An outcome a person labelled
/// (`outcome_source: "user"`) is never overwritten.
pub fn apply(entries: &mut [Entry], proposals: &[Proposal]) -> Applied {
    let by_id: HashMap<&str, &Proposal> = proposals.iter().map(|p| (p.tool_use_id.as_str(), p)).collect();
    let mut applied = Applied::default();
    let mut matched = std::collections::HashSet::new();
    for e in entries.iter_mut().filter(|e| e.is_agent()) {
        let Some(p) = e.call.tool_use_id.as_deref().and_then(|id| by_id.get(id)).copied() else {
            continue;
        };
        matched.insert(p.tool_use_id.as_str());
        if e.judged.outcome_source == Some(OutcomeSource::User) {
            applied.kept_user += 1;
            continue;
        }
        e.judged.outcome = Some(p.outcome);
        e.judged.outcome_reason = Some(p.reason.clone());
        e.judged.outcome_tier = p.tier;
        e.judged.outcome_source = Some(OutcomeSource::Auto);
        e.judged.outcome_doubtful = p.doubtful.clone();
        applied.written += 1;
    }
    applied.not_in_log = proposals.iter().filter(|p| !matched.contains(p.tool_use_id.as_str())).count();
    applied
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn proposal(id: &str, outcome: Outcome, doubtful: Option<&str>) -> Proposal {
        Proposal {
            tool_use_id: id.into(),
            outcome,
            reason: "r".into(),
            tier: Some(crate::tier::Tier::Sonnet),
            doubtful: doubtful.map(String::from),
            redone_by: None,
            timestamp: String::new(),
            description: String::new(),
            subagent_type: String::new(),
        }
    }

    #[test]
    fn apply_writes_auto_outcomes_and_keeps_user_ones() {
        let mut entries: Vec<Entry> = [
            json!({"id": "1", "source": "agent", "tool_use_id": "t1"}),
            json!({"id": "2", "source": "agent", "tool_use_id": "t2", "outcome": "succeeded", "outcome_source": "user"}),
            json!({"id": "3", "source": "prompt", "tool_use_id": "t3"}),
            json!({"id": "4", "source": "agent", "tool_use_id": "t4", "outcome": "failed", "outcome_source": "auto", "outcome_doubtful": "old"}),
        ]
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
        let ps = [
            proposal("t1", Outcome::Failed, Some("check")),
            proposal("t2", Outcome::Failed, None),
            proposal("t3", Outcome::Failed, None),
            proposal("t4", Outcome::Succeeded, None),
            proposal("t9", Outcome::Succeeded, None),
        ];
        let a = apply(&mut entries, &ps);
        assert_eq!(a, Applied { written: 2, kept_user: 1, not_in_log: 2 });
        let v: Vec<serde_json::Value> = entries.iter().map(|e| serde_json::to_value(e).unwrap()).collect();
        assert_eq!(v[0]["outcome"], "failed");
        assert_eq!(v[0]["outcome_source"], "auto");
        assert_eq!(v[0]["outcome_tier"], "sonnet");
        assert_eq!(v[0]["outcome_doubtful"], "check");
        assert_eq!(v[1]["outcome"], "succeeded", "a user's label stays");
        assert!(v[2].get("outcome").is_none(), "only agent entries get outcomes");
        assert_eq!(v[3]["outcome"], "succeeded");
        assert!(v[3].get("outcome_doubtful").is_none());
    }
}
