//! Checks that the SessionStart hook and `system1 doctor` both make, written once so that the two
//! never disagree: whether a real engine is set up at all, the fixes for the engines a health
//! answer says are down, and how many log entries wait for labels. (The fix for one failure is
//! `engine_servers::fix::engine_fix`, below `tuning`, which prints it too.)

use crate::config::Loaded;
use crate::engine_servers::fix::engine_fix;
use crate::gateway::Gateway;
use crate::{paths, text};

/// From this many entries waiting for labels on, the hook suggests `/system1:calibrate`.
pub const PENDING_LABELS_THRESHOLD: usize = 30;

/// The engine that only stands in for a real one.
const MOCK: &str = "mock";

/// A chain with no real engine in it: only the mock, which answers what it is configured to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoEngine {
    /// The mock set to abstain on every question: the config `system1 install` writes when no
    /// engine answered.
    Placeholder,
    /// The mock giving configured answers, which are not decisions.
    Mock,
}

impl NoEngine {
    /// What is wrong, as a sentence without a full stop.
    pub fn what(self) -> &'static str {
        match self {
            NoEngine::Placeholder => {
                "no real engine is set up: the mock stands in for one and abstains on every question"
            }
            NoEngine::Mock => "no real engine is set up: the mock answers as it is configured to, not by deciding",
        }
    }
}

/// `Some` when every engine of the chain is the mock.
pub fn no_real_engine(loaded: &Loaded) -> Option<NoEngine> {
    if !loaded.chain().iter().all(|p| p == MOCK) {
        return None;
    }
    let fail = loaded.provider_settings(MOCK).string("fail", "");
    Some(if fail == "abstain" { NoEngine::Placeholder } else { NoEngine::Mock })
}

/// Whether the session-start hook should say that no real engine is set up: true the first time
/// only (the notice file is created then, exclusively, so two sessions starting at once say it
/// once). Without a notice file that can be written it stays silent.
pub fn first_no_engine_notice() -> bool {
    let file = paths::no_engine_notice();
    let _ = paths::ensure_parent(&file);
    std::fs::OpenOptions::new().write(true).create_new(true).open(&file).is_ok()
}

/// Forgets that the notice was given, so that it is given again should the chain lose its real
/// engine later.
pub fn reset_no_engine_notice() {
    let file = paths::no_engine_notice();
    if file.exists() {
        let _ = std::fs::remove_file(file);
    }
}

/// How to get a real engine, as one imperative phrase.
pub fn engine_setup_hint() -> String {
    format!(
        "install the local engine with `{}` (a 91 MB model that runs inside system1 on the CPU: no GPU, Python or \
         server; it switches the config install wrote to it), or pick another engine with /system1:choose-model",
        text::command("engine install local")
    )
}

/// The fix for each engine of `gateway`'s chain that `down` (engine names, say from a health
/// answer that came over the wire) lists, from a probe made here: an answer in words carries no
/// cause, and the cause is what a fix is chosen by. An engine that answers this probe gets the
/// advice to try again; one the config cannot build, the config's.
pub fn fixes_for(gateway: &Gateway, down: &[&str]) -> Vec<(String, String)> {
    let health = gateway.health();
    down.iter()
        .map(|&name| {
            let probe = health.providers.iter().find(|p| p.name == name);
            let provider = gateway.chain().iter().find(|p| p.name() == name);
            let fix = match (provider, probe.and_then(|p| p.failure.as_ref())) {
                (Some(provider), Some(failure)) => engine_fix(provider.as_ref(), failure),
                (Some(_), None) => "it answers a probe from this shell: run the check again".to_string(),
                (None, _) => format!("check [providers.{name}] with `{}`", text::command("config check")),
            };
            (name.to_string(), fix)
        })
        .collect()
}

/// Routing-log entries waiting for labels (`Entry::needs_labels`: what `calibrate pending` lists).
pub fn pending_labels() -> usize {
    crate::routing::log::count_waiting_for_labels()
}
