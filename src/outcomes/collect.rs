//! Gathers the spawns from transcript lines. The main session file gives the Agent tool call (its
//! brief and requested model), the tool result (error flag, report, `resolvedModel`, `agentId`)
//! and any `<task-notification>` about a background agent; the subagent's own file
//! (`<session>/subagents/agent-<id>.jsonl`, with a `.meta.json` naming its `toolUseId`) gives the
//! model it ran on and whether it died on an API error, which the parent never marks
//! (claude-code.md section 7).
//!
//! Files may come in any order. A forked session repeats the whole history in a new file, so
//! everything is keyed by tool use id or agent id and the first copy wins.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::rules::Spawn;

/// The names the subagent tool has had.
const SPAWN_TOOLS: [&str; 2] = ["Agent", "Task"];

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

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.as_str()),
                _ if b.get("type").and_then(Value::as_str) == Some("text") => b.get("text").and_then(Value::as_str),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
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

impl Collector {
    /// One line of a main session file. `project` is the session's project folder.
    pub fn main_line(&mut self, project: &str, session_id: &str, line: &Value) {
        let Some(content) = line.pointer("/message/content") else { return };
        let timestamp = str_of(line, "timestamp");
        match str_of(line, "type") {
            "assistant" => {
                let Value::Array(blocks) = content else { return };
                let parent_model = line.pointer("/message/model").and_then(Value::as_str).unwrap_or("");
                for b in blocks {
                    if str_of(b, "type") != "tool_use" || !SPAWN_TOOLS.contains(&str_of(b, "name")) {
                        continue;
                    }
                    let id = str_of(b, "id");
                    if id.is_empty() || self.index.contains_key(id) {
                        continue;
                    }
                    let input = b.get("input").cloned().unwrap_or(Value::Null);
                    self.index.insert(id.to_string(), self.spawns.len());
                    self.spawns.push(Spawn {
                        tool_use_id: id.to_string(),
                        project: project.to_string(),
                        session_id: session_id.to_string(),
                        timestamp: timestamp.to_string(),
                        description: str_of(&input, "description").to_string(),
                        prompt: str_of(&input, "prompt").to_string(),
                        subagent_type: str_of(&input, "subagent_type").to_string(),
                        requested_model: str_of(&input, "model").to_string(),
                        parent_model: parent_model.to_string(),
                        ..Spawn::default()
                    });
                }
            }
            "user" => {
                let text = text_of(content);
                if text.contains("<task-notification>") {
                    self.notification(&text);
                }
                let Value::Array(blocks) = content else { return };
                for b in blocks {
                    if str_of(b, "type") != "tool_result" {
                        continue;
                    }
                    let Some(&i) = self.index.get(str_of(b, "tool_use_id")) else { continue };
                    let s = &mut self.spawns[i];
                    if s.has_result {
                        continue; // a forked copy of a result already seen
                    }
                    let result = line.get("toolUseResult").cloned().unwrap_or(Value::Null);
                    s.has_result = true;
                    s.is_error = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                    let report = b.get("content").map(text_of).unwrap_or_default();
                    s.status = str_of(&result, "status").to_string();
                    s.resolved_model = str_of(&result, "resolvedModel").to_string();
                    s.agent_id = match str_of(&result, "agentId") {
                        "" => AGENT_ID.captures(&report).map(|c| c[1].to_string()).unwrap_or_default(),
                        id => id.to_string(),
                    };
                    s.report = report;
                }
            }
            _ => {}
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
                    s.report =
                        if s.report.is_empty() { n.result.clone() } else { format!("{}\n{}", s.report, n.result) };
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
    use serde_json::json;

    #[test]
    fn joins_spawn_result_meta_and_subagent_file() {
        let mut c = Collector::default();
        c.main_line("p", "s", &json!({"type": "assistant", "timestamp": "t1", "message": {"model": "claude-opus-4-8",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "Agent", "input": {"description": "d", "prompt": "go", "subagent_type": "general-purpose", "model": "inherit"}}]}}));
        c.main_line(
            "p",
            "s",
            &json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_1",
            "content": [{"type": "text", "text": "all done"}, {"type": "text", "text": "agentId: abc123 <usage>"}]}]},
            "toolUseResult": {"status": "completed", "resolvedModel": "claude-opus-4-8[1m]"}}),
        );
        c.subagent_file("abc123", Some("toolu_1"), true, "");
        let s = c.finish();
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].agent_id.as_str(), s[0].api_error, s[0].has_result), ("abc123", true, true));
        assert_eq!(s[0].requested_model, "inherit");
        assert_eq!(s[0].parent_model, "claude-opus-4-8");
        assert!(s[0].report.starts_with("all done"));
    }

    #[test]
    fn task_notifications_by_task_id() {
        let mut c = Collector::default();
        c.main_line("p", "s", &json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "toolu_2", "name": "Task", "input": {"description": "bg"}}]}}));
        c.main_line("p", "s", &json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_2",
            "content": "Async agent launched successfully. agentId: bg77"}]}, "toolUseResult": {"status": "async_launched", "agentId": "bg77"}}));
        c.main_line("p", "s", &json!({"type": "user", "message": {"content": "<task-notification>\n<task-id>bg77</task-id>\n<status>killed</status>\n<summary>Agent \"bg\" was stopped</summary>\n</task-notification>"}}));
        let s = c.finish();
        assert_eq!(s[0].notification_status, "killed");
        assert!(s[0].report.contains("was stopped"));
    }
}
