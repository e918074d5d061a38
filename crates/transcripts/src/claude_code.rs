//! Claude Code's own names that its transcripts carry and the reader tells apart: the reasoning
//! effort levels, and the tools that spawn a subagent. The product uses the same ones (its
//! src/claude_code.rs re-exports them), so there is one list of each.

/// The tools that spawn a subagent: `Agent`, and `Task` before Claude Code 2.1. The spawn hooks'
/// matcher in hooks/hooks.json names the same (a test in src/claude_code.rs holds the two equal).
pub const SPAWN_TOOLS: [&str; 2] = ["Agent", "Task"];

/// Whether a call of tool `name` spawns a subagent.
pub fn is_spawn_tool(name: &str) -> bool {
    SPAWN_TOOLS.contains(&name)
}

/// A request's reasoning effort, as Claude Code sends it (`output_config.effort`) and, from 2.1.332
/// on, writes it on each assistant line of a transcript (`"effort": "medium"`); a subagent's
/// `.meta.json` has it too when the Agent call named a level. Cheapest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

impl Effort {
    pub const ALL: [Effort; 5] = [Effort::Low, Effort::Medium, Effort::High, Effort::Xhigh, Effort::Max];

    pub fn name(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Xhigh => "xhigh",
            Effort::Max => "max",
        }
    }

    /// The level a transcript or a setting names; `None` for anything else (the Agent tool's
    /// relative `"lower"` and `"higher"` among them: they say no level).
    pub fn named(name: &str) -> Option<Effort> {
        Effort::ALL.into_iter().find(|e| e.name() == name)
    }

    pub fn index(self) -> usize {
        self as usize
    }
}
