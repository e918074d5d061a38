//! The spawns of the routing log: each agent entry (what the agent hook saw and did) joined with the
//! spawn entry the PostToolUse hook wrote for the same call (what it ran on), for `doctor` and the
//! report's spawn section.

use std::collections::HashMap;

use super::entry::{Entry, Source};
use crate::tier::Tier;

/// One logged spawn.
#[derive(Debug, Clone, Copy)]
pub struct Logged<'a> {
    pub agent: &'a Entry,
    /// The spawn entry with the same session and `tool_use_id`, when the PostToolUse hook wrote one.
    pub ran: Option<&'a Entry>,
}

impl Logged<'_> {
    /// The tier the hook set, when it rewrote the call.
    pub fn set_tier(&self) -> Option<Tier> {
        self.agent.enforcement.tier_after
    }

    /// The tier the spawn ran on: its `resolvedModel`, else the outcome rules' reading of the
    /// transcript (`system1 outcomes`).
    pub fn ran_tier(&self) -> Option<Tier> {
        self.ran.and_then(|r| r.ran.ran_tier).or(self.agent.judged.outcome_tier)
    }

    /// Whether a rewrite took effect; `None` when nothing was set or nothing says what ran.
    pub fn took_effect(&self) -> Option<bool> {
        let set = self.set_tier()?;
        self.ran.and_then(|r| r.ran.took_effect).or_else(|| self.ran_tier().map(|t| t == set))
    }
}

/// Every agent entry of `entries`, in log order, with its spawn entry.
pub fn join(entries: &[Entry]) -> Vec<Logged<'_>> {
    let key = |e: &Entry| Some((e.session_id.clone(), e.call.tool_use_id.clone()?));
    let ran: HashMap<(Option<String>, String), &Entry> =
        entries.iter().filter(|e| e.source == Some(Source::Spawn)).filter_map(|e| Some((key(e)?, e))).collect();
    entries
        .iter()
        .filter(|e| e.is_agent())
        .map(|agent| Logged { agent, ran: key(agent).and_then(|k| ran.get(&k).copied()) })
        .collect()
}

/// What the latest rewrites show.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rewrites {
    /// Rewrites looked at (the latest, at most the number asked for).
    pub looked_at: usize,
    /// Of those, the ones whose tier that ran is known.
    pub checked: usize,
    /// Of those, the ones that ran on another tier than was set.
    pub not_taken: usize,
    /// The time of the latest rewrite that did not take effect.
    pub last_not_taken: Option<String>,
}

/// The latest `n` rewrites of `spawns` (in log order) and whether they took effect.
pub fn latest_rewrites(spawns: &[Logged], n: usize) -> Rewrites {
    let mut out = Rewrites::default();
    for s in spawns.iter().rev().filter(|s| s.set_tier().is_some()).take(n) {
        out.looked_at += 1;
        match s.took_effect() {
            Some(true) => out.checked += 1,
            Some(false) => {
                out.checked += 1;
                out.not_taken += 1;
                if out.last_not_taken.is_none() {
                    out.last_not_taken = s.agent.time.clone();
                }
            }
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entries(lines: &[serde_json::Value]) -> Vec<Entry> {
        lines.iter().map(|v| serde_json::from_value(v.clone()).unwrap()).collect()
    }

    #[test]
    fn spawns_join_their_records_and_tell_whether_a_rewrite_took() {
        let log = entries(&[
            json!({"source": "agent", "session_id": "s", "tool_use_id": "t1", "time": "T1", "enforce": "raise", "tier_before": "haiku", "tier_after": "sonnet"}),
            json!({"source": "agent", "session_id": "s", "tool_use_id": "t2", "time": "T2", "enforce": "raise", "tier_after": "sonnet"}),
            json!({"source": "agent", "session_id": "s", "tool_use_id": "t3", "enforce": "raise", "kept": "above_rule"}),
            json!({"source": "agent", "session_id": "s", "tool_use_id": "t4", "tier_after": "opus", "outcome_tier": "opus"}),
            json!({"source": "agent", "session_id": "s", "tool_use_id": "t5", "time": "T5", "tier_after": "haiku"}),
            json!({"source": "agent", "session_id": "other", "tool_use_id": "t1"}),
            json!({"source": "prompt", "session_id": "s", "tool_use_id": "t9"}),
            json!({"source": "spawn", "session_id": "s", "tool_use_id": "t1", "ran_tier": "sonnet", "took_effect": true}),
            json!({"source": "spawn", "session_id": "s", "tool_use_id": "t2", "ran_tier": "haiku", "took_effect": false}),
            json!({"source": "spawn", "session_id": "s", "tool_use_id": "t3", "ran_tier": "opus"}),
        ]);
        let spawns = join(&log);
        assert_eq!(spawns.len(), 6, "agent entries only");
        assert_eq!(spawns[0].ran.and_then(|r| r.ran.ran_tier), Some(Tier::Sonnet));
        assert!(spawns[5].ran.is_none(), "another session's spawn");
        let took: Vec<Option<bool>> = spawns.iter().map(Logged::took_effect).collect();
        assert_eq!(took, [Some(true), Some(false), None, Some(true), None, None]);
        assert_eq!(spawns[2].ran_tier(), Some(Tier::Opus));
        assert_eq!(spawns[3].ran_tier(), Some(Tier::Opus), "from the outcome rules when no spawn entry");

        assert_eq!(
            latest_rewrites(&spawns, 20),
            Rewrites { looked_at: 4, checked: 3, not_taken: 1, last_not_taken: Some("T2".into()) }
        );
        assert_eq!(
            latest_rewrites(&spawns, 2),
            Rewrites { looked_at: 2, checked: 1, not_taken: 0, last_not_taken: None }
        );
    }
}
