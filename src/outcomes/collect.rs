//! Gathers the spawns from transcript lines. The main session file gives the Agent tool call (its
//! brief and requested model), the tool result (error flag, hand-back, `resolvedModel`, `agentId`)
//! and any `<task-notification>` about a background agent; the subagent's own file
//! (`<session>/subagents/agent-<id>.jsonl`, with a `.meta.json` naming its `toolUseId`) gives the
//! model it ran on and whether it died on an API error, which the parent never marks (its tool
//! result still says `completed`).
//!
//! Lines come typed, from the shared transcript reader. Each main file is collected on its own and
//! then merged ([`Collector::merge`]); a forked session repeats the whole history in a new file, so
//! everything is keyed by tool use id or agent id and the first copy wins.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex_lite::Regex;
use system1_transcripts::Line;
use system1_transcripts::line::Content;

use super::rules::Spawn;

#[derive(Debug, Default, Clone)]
struct SubagentFile {
    api_error: bool,
    model: String,
}

#[derive(Debug, Default, Clone)]
struct Notification {
    status: String,
    result: String,
}

#[derive(Debug, Default)]
pub struct Collector {
    spawns: Vec<Spawn>,
    index: HashMap<String, usize>,
    /// Notifications keyed by tool use id or by task (agent) id, whichever they name.
    notifications: HashMap<String, Notification>,
    subagents: HashMap<String, SubagentFile>,
    /// agent id → tool use id, from the subagent `.meta.json` files.
    meta: HashMap<String, String>,
}

static AGENT_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"agentId:\s*([A-Za-z0-9_-]+)").unwrap_or_else(|_| unreachable!("the pattern is a literal"))
});

fn tag<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find(&close)? + start;
    Some(text[start..end].trim())
}

/// The text of a `user` line that is a task notification (a string, or text blocks).
fn notification_text(line: &Line<'_>) -> Option<String> {
    let text = match line.message.as_ref()?.content.as_ref()? {
        Content::Text(t) => t.to_string(),
        Content::Blocks(blocks) => {
            blocks.iter().filter(|b| b.is("text")).filter_map(|b| b.text()).collect::<Vec<_>>().join("\n")
        }
        Content::Other => return None,
    };
    text.contains("<task-notification>").then_some(text)
}

impl Collector {
    /// One line of a main session file. `project` is the session's project folder.
    pub fn main_line(&mut self, project: &str, session_id: &str, line: &Line<'_>) {
        if line.is("assistant") {
            let parent_model = line.message.as_ref().and_then(|m| m.model.as_deref()).unwrap_or("");
            for b in line.blocks() {
                if !b.is_agent_spawn() {
                    continue;
                }
                let Some(id) = b.id.as_deref().filter(|id| !id.is_empty()) else { continue };
                if self.index.contains_key(id) {
                    continue;
                }
                let input = b.agent_input();
                self.index.insert(id.to_string(), self.spawns.len());
                self.spawns.push(Spawn {
                    tool_use_id: id.to_string(),
                    project: project.to_string(),
                    session_id: session_id.to_string(),
                    timestamp: line.timestamp.as_deref().unwrap_or("").to_string(),
                    description: input.description.unwrap_or_default(),
                    prompt: input.prompt.unwrap_or_default(),
                    subagent_type: input.subagent_type.unwrap_or_default(),
                    requested_model: input.model.unwrap_or_default(),
                    parent_model: parent_model.to_string(),
                    ..Spawn::default()
                });
            }
        } else if line.is("user") {
            if let Some(text) = notification_text(line) {
                self.notification(&text);
            }
            for b in line.blocks() {
                if !b.is("tool_result") {
                    continue;
                }
                let Some(&i) = b.tool_use_id.as_deref().and_then(|id| self.index.get(id)) else { continue };
                let s = &mut self.spawns[i];
                if s.has_result {
                    continue; // a repeated copy of a result already seen
                }
                let result = line.agent_result().unwrap_or_default();
                let hand_back = b.text().unwrap_or_default();
                s.has_result = true;
                s.is_error = b.is_error.unwrap_or(false);
                s.status = result.status.unwrap_or_default();
                s.resolved_model = result.resolved_model.unwrap_or_default();
                s.agent_id = match result.agent_id.filter(|id| !id.is_empty()) {
                    Some(id) => id,
                    None => AGENT_ID.captures(&hand_back).map(|c| c[1].to_string()).unwrap_or_default(),
                };
                s.hand_back = hand_back;
            }
        }
    }

    fn notification(&mut self, text: &str) {
        let Some(body) = tag(text, "task-notification") else { return };
        let n = Notification {
            status: tag(body, "status").unwrap_or("").to_string(),
            result: tag(body, "result").or_else(|| tag(body, "summary")).unwrap_or("").to_string(),
        };
        for key in [tag(body, "tool-use-id"), tag(body, "task-id")].into_iter().flatten() {
            self.notifications.entry(key.to_string()).or_insert_with(|| n.clone());
        }
    }

    /// Folds in what another main file gave; what is here already wins (a forked session repeats
    /// the history), except that a result fills in a spawn that had none.
    pub fn merge(&mut self, other: Collector) {
        for s in other.spawns {
            match self.index.get(&s.tool_use_id) {
                None => {
                    self.index.insert(s.tool_use_id.clone(), self.spawns.len());
                    self.spawns.push(s);
                }
                Some(&i) if !self.spawns[i].has_result && s.has_result => {
                    let old = &mut self.spawns[i];
                    old.has_result = true;
                    old.is_error = s.is_error;
                    old.status = s.status;
                    old.resolved_model = s.resolved_model;
                    old.agent_id = s.agent_id;
                    old.hand_back = s.hand_back;
                }
                Some(_) => {}
            }
        }
        for (key, n) in other.notifications {
            self.notifications.entry(key).or_insert(n);
        }
    }

    /// What a subagent's own file (`agent-<agent_id>.jsonl`) showed, and the `toolUseId` of its
    /// `.meta.json` when there is one.
    pub fn subagent_file(&mut self, agent_id: &str, tool_use_id: Option<&str>, api_error: bool, model: &str) {
        let f = self.subagents.entry(agent_id.to_string()).or_default();
        f.api_error |= api_error;
        if f.model.is_empty() {
            f.model = model.to_string();
        }
        if let Some(id) = tool_use_id.filter(|id| !id.is_empty()) {
            self.meta.insert(agent_id.to_string(), id.to_string());
        }
    }

    /// The spawns, with everything known about each joined in.
    pub fn finish(mut self) -> Vec<Spawn> {
        for (agent, tool_use_id) in &self.meta {
            if let Some(&i) = self.index.get(tool_use_id)
                && self.spawns[i].agent_id.is_empty()
            {
                self.spawns[i].agent_id = agent.clone();
            }
        }
        for s in &mut self.spawns {
            let n = self
                .notifications
                .get(&s.tool_use_id)
                .or_else(|| if s.agent_id.is_empty() { None } else { self.notifications.get(&s.agent_id) });
            if let Some(n) = n {
                s.notification_status = n.status.clone();
                if !n.result.is_empty() {
                    s.hand_back = if s.hand_back.is_empty() {
                        n.result.clone()
                    } else {
                        format!("{}\n{}", s.hand_back, n.result)
                    };
                }
            }
            if let Some(f) = self.subagents.get(&s.agent_id) {
                s.api_error = f.api_error;
                s.subagent_model = f.model.clone();
            }
        }
        self.spawns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// Feeds one JSON line through the shared transcript parser, as the reader does.
    fn feed(c: &mut Collector, v: Value) {
        let raw = v.to_string();
        c.main_line("p", "s", &system1_transcripts::line::parse(raw.as_bytes()).unwrap());
    }

    #[test]
    fn joins_spawn_result_meta_and_subagent_file() {
        let mut c = Collector::default();
        feed(
            &mut c,
            json!({"type": "assistant", "timestamp": "t1", "message": {"model": "claude-opus-4-8",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "Agent", "input": {"description": "d", "prompt": "go", "subagent_type": "general-purpose", "model": "inherit"}}]}}),
        );
        feed(
            &mut c,
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_1",
            "content": [{"type": "text", "text": "all done"}, {"type": "text", "text": "agentId: abc123 <usage>"}]}]},
            "toolUseResult": {"status": "completed", "resolvedModel": "claude-opus-4-8[1m]"}}),
        );
        c.subagent_file("abc123", Some("toolu_1"), true, "");
        let s = c.finish();
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].agent_id.as_str(), s[0].api_error, s[0].has_result), ("abc123", true, true));
        assert_eq!(s[0].requested_model, "inherit");
        assert_eq!(s[0].parent_model, "claude-opus-4-8");
        assert!(s[0].hand_back.starts_with("all done"));
    }

    #[test]
    fn merge_keeps_the_first_copy_and_fills_in_a_missing_result() {
        let spawn = json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "toolu_3", "name": "Agent", "input": {"description": "d"}}]}});
        let result = json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_3", "content": "done", "is_error": true}]}});
        let mut first = Collector::default();
        first.main_line("p", "original", &system1_transcripts::line::parse(spawn.to_string().as_bytes()).unwrap());
        let mut fork = Collector::default();
        for l in [&spawn, &result] {
            fork.main_line("p", "fork", &system1_transcripts::line::parse(l.to_string().as_bytes()).unwrap());
        }
        first.merge(fork);
        let s = first.finish();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].session_id, "original");
        assert!(s[0].has_result && s[0].is_error);
        assert_eq!(s[0].hand_back, "done");
    }

    #[test]
    fn task_notifications_by_task_id() {
        let mut c = Collector::default();
        feed(
            &mut c,
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "toolu_2", "name": "Task", "input": {"description": "bg"}}]}}),
        );
        feed(
            &mut c,
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_2",
            "content": "Async agent launched successfully. agentId: bg77"}]}, "toolUseResult": {"status": "async_launched", "agentId": "bg77"}}),
        );
        feed(
            &mut c,
            json!({"type": "user", "message": {"content": "<task-notification>\n<task-id>bg77</task-id>\n<status>killed</status>\n<summary>Agent \"bg\" was stopped</summary>\n</task-notification>"}}),
        );
        let s = c.finish();
        assert_eq!(s[0].notification_status, "killed");
        assert!(s[0].hand_back.contains("was stopped"));
    }
}
