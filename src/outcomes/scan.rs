//! Feeds the transcripts, through the shared streaming reader (crates/transcripts), into the
//! [`Collector`]. Each file is read on the reader's threads by a visitor that passes only the lines
//! outcomes need (Agent tool uses, their results, task notifications) to a collector of its own and,
//! for a subagent's own file, keeps just whether it hit an API error and which model it ran on. The
//! calling thread merges the files in path order, so that of a forked session's copies the same one
//! always wins.

use system1_transcripts::{self as transcripts, FileInfo, FileVisitor, Line, Needle, Scope, Stats};

use super::collect::Collector;
use super::rules::Spawn;
use crate::error::Result;

enum Found {
    Main(Collector),
    Subagent { agent_id: String, tool_use_id: Option<String>, api_error: bool, model: String },
}

struct Visitor {
    info: FileInfo,
    /// A main file's spawns, results and notifications, gathered as its lines are read.
    collector: Collector,
    api_error: bool,
    model: String,
    needles: [Needle; 4],
}

impl Visitor {
    fn new(info: &FileInfo) -> Self {
        Visitor {
            info: info.clone(),
            collector: Collector::default(),
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

    fn line(&mut self, line: &Line<'_>, _raw: &[u8]) {
        if !self.info.is_subagent() {
            self.collector.main_line(&self.info.project, &self.info.session_id, line);
            return;
        }
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
    }

    fn finish(self, _stats: &Stats) -> Found {
        match self.info.agent {
            Some(agent) => Found::Subagent {
                agent_id: agent.agent_id,
                tool_use_id: agent.meta.and_then(|m| m.tool_use_id),
                api_error: self.api_error,
                model: self.model,
            },
            None => Found::Main(self.collector),
        }
    }
}

/// Every Agent spawn in the transcripts under `scope`, with reader statistics.
pub fn spawns(scope: &Scope) -> Result<(Vec<Spawn>, Stats)> {
    let files = transcripts::list(scope)?;
    let mut found: Vec<(std::path::PathBuf, Found)> = Vec::new();
    let stats = transcripts::read(files, scope, Visitor::new, |info, out, _| found.push((info.path.clone(), out)));
    found.sort_by(|a, b| a.0.cmp(&b.0));
    let mut c = Collector::default();
    for (_, f) in found {
        match f {
            Found::Main(file) => c.merge(file),
            Found::Subagent { agent_id, tool_use_id, api_error, model } => {
                c.subagent_file(&agent_id, tool_use_id.as_deref(), api_error, &model);
            }
        }
    }
    Ok((c.finish(), stats))
}
