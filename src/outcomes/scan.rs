//! Feeds the transcripts, through the shared streaming reader (`crate::transcripts`), into the
//! [`Collector`]. Each file is read on the reader's threads by a visitor that keeps only the few
//! lines outcomes need (Agent tool uses, their results, task notifications) and, for a subagent's
//! own file, just whether it hit an API error and which model it ran on; the joining happens on the
//! calling thread.

use std::collections::HashSet;

use serde_json::Value;

use super::collect::Collector;
use super::rules::Spawn;
use crate::error::Result;
use crate::transcripts::{self, FileInfo, FileVisitor, Line, Needle, Scope, Stats};

enum Found {
    Main { project: String, session_id: String, lines: Vec<Value> },
    Subagent { agent_id: String, tool_use_id: Option<String>, api_error: bool, model: String },
}

struct Visitor {
    info: FileInfo,
    spawn_ids: HashSet<String>,
    lines: Vec<Value>,
    api_error: bool,
    model: String,
    needles: [Needle; 4],
}

impl Visitor {
    fn new(info: &FileInfo) -> Self {
        Visitor {
            info: info.clone(),
            spawn_ids: HashSet::new(),
            lines: Vec::new(),
            api_error: false,
            model: String::new(),
            needles: [
                Needle::new("\"tool_use\""),
                Needle::new("\"tool_result\""),
                Needle::new("<task-notification>"),
                Needle::new("\"isApiErrorMessage\""),
            ],
        }
    }
}

impl FileVisitor for Visitor {
    type Output = Found;

    fn wants(&mut self, raw: &[u8]) -> bool {
        if self.info.is_subagent() {
            // The model comes from the first assistant line; after that only API errors matter.
            return self.model.is_empty() || self.needles[3].is_in(raw);
        }
        self.needles[..3].iter().any(|n| n.is_in(raw))
    }

    fn line(&mut self, line: &Line<'_>, raw: &[u8]) {
        if self.info.is_subagent() {
            if line.is_api_error_message == Some(true) {
                self.api_error = true;
            }
            if self.model.is_empty()
                && line.is("assistant")
                && let Some(m) = line.message.as_ref().and_then(|m| m.model.as_deref())
                && !m.starts_with('<')
            {
                self.model = m.to_string(); // `<synthetic>` marks lines Claude Code wrote itself
            }
            return;
        }
        let mut keep = false;
        for b in line.blocks() {
            if b.is_agent_spawn()
                && let Some(id) = &b.id
            {
                self.spawn_ids.insert(id.to_string());
                keep = true;
            } else if b.is("tool_result") && b.tool_use_id.as_deref().is_some_and(|id| self.spawn_ids.contains(id)) {
                keep = true;
            }
        }
        if !keep && line.is("user") && self.needles[2].is_in(raw) {
            keep = true;
        }
        if keep && let Ok(v) = serde_json::from_slice::<Value>(raw) {
            self.lines.push(v);
        }
    }

    fn finish(self, _stats: &Stats) -> Found {
        match self.info.agent {
            Some(agent) => Found::Subagent {
                agent_id: agent.agent_id,
                tool_use_id: agent.meta.and_then(|m| m.tool_use_id),
                api_error: self.api_error,
                model: self.model,
            },
            None => Found::Main { project: self.info.project, session_id: self.info.session_id, lines: self.lines },
        }
    }
}

/// Every Agent spawn in the transcripts under `scope`, with reader statistics.
pub fn spawns(scope: &Scope) -> Result<(Vec<Spawn>, Stats)> {
    let mut files = transcripts::list(scope)?;
    // Main files in path order, so that a forked session's copy and its original are met in a
    // stable order (the first one seen wins).
    files.sort_by(|a, b| a.is_subagent().cmp(&b.is_subagent()).then_with(|| a.path.cmp(&b.path)));
    let mut found: Vec<(std::path::PathBuf, Found)> = Vec::new();
    let stats = transcripts::read(files, scope, Visitor::new, |info, out, _| found.push((info.path.clone(), out)));
    found.sort_by(|a, b| a.0.cmp(&b.0));
    let mut c = Collector::default();
    for (_, f) in found {
        match f {
            Found::Main { project, session_id, lines } => {
                for l in &lines {
                    c.main_line(&project, &session_id, l);
                }
            }
            Found::Subagent { agent_id, tool_use_id, api_error, model } => {
                c.subagent_file(&agent_id, tool_use_id.as_deref(), api_error, &model);
            }
        }
    }
    Ok((c.finish(), stats))
}
