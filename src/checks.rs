//! Checks that the SessionStart hook and `system1 doctor` both make, written once so that the two
//! never disagree: whether a real engine is set up at all, what to do about an engine that fails
//! (one fix per kind of failure), and how many log entries wait for labels.

use crate::config::Loaded;
use crate::gateway::Gateway;
use crate::providers::{Cause, Failure, Provider};
use crate::{paths, servers, text};

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

/// The fix for `failure` of `provider` (a health probe's or a decision's), as one imperative
/// phrase. The provider words it ([`Provider::fix`]); what is said here is only what the provider
/// cannot know, because it sits below `servers`: that System-1 installs and starts this engine's
/// server itself, and where that server's log is.
pub fn engine_fix(provider: &dyn Provider, failure: &Failure) -> String {
    let name = provider.name();
    let server = servers::SPECS.iter().find(|s| s.name == name);
    if let (Cause::Refused, Some(spec)) = (failure.cause, server) {
        return if spec.is_installed() {
            format!("start it with `{}`", text::command(&format!("engine start {name} --wait 180")))
        } else {
            format!(
                "{name} is not installed: `{}`, then `{}` (or start your own server at the configured endpoint)",
                text::command(&format!("engine install {name}")),
                text::command(&format!("engine start {name} --wait 180"))
            )
        };
    }
    let fix = provider.fix(failure);
    if fix.see_log { format!("{}{}", fix.action, log_hint(server)) } else { fix.action }
}

/// The fix for each engine of `gateway`'s chain that `down` (engine names, say from a health
/// report that came over the wire) lists, from a probe made here: a report in words carries no
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

/// `; see its log, <file>` for an engine System-1 runs.
fn log_hint(server: Option<&servers::Spec>) -> String {
    server.map(|s| format!("; see its log, {}", s.log_file().display())).unwrap_or_default()
}

/// Routing-log entries waiting for labels (`Entry::needs_labels`: what `calibrate pending` lists).
pub fn pending_labels() -> usize {
    crate::routing::log::count_waiting_for_labels()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers;

    /// A provider whose every fix says which cause it was given, and nothing else.
    struct Echo(&'static str);

    impl Provider for Echo {
        fn name(&self) -> &'static str {
            self.0
        }
        fn model(&self) -> String {
            String::new()
        }
        fn capabilities(&self) -> providers::Capabilities {
            providers::Capabilities { max_options: 2, one_pass: true }
        }
        fn decide(
            &self,
            _: &providers::EngineRequest,
            _: std::time::Duration,
        ) -> Result<Vec<providers::EngineAnswer>, Failure> {
            Err(Failure::new(Cause::Other, "unused"))
        }
        fn health(&self, _: std::time::Duration) -> providers::Probe {
            providers::Probe::Up(None)
        }
        fn fix(&self, failure: &Failure) -> providers::Fix {
            providers::Fix::new(format!("{:?}", failure.cause))
        }
    }

    #[test]
    fn the_fix_is_the_providers_whatever_the_detail_says() {
        // A detail that reads like another cause changes nothing: only the cause is looked at.
        let failure = Failure::new(Cause::EngineTooOld, "connection refused: HTTP 422 unknown model not installed");
        assert_eq!(engine_fix(&Echo("myengine"), &failure), "EngineTooOld");
        let failure = Failure::new(Cause::Refused, "");
        assert_eq!(engine_fix(&Echo("myengine"), &failure), "Refused", "not an engine System-1 runs");
    }

    #[test]
    fn a_refused_engine_that_system1_runs_is_started_or_installed() {
        let fix = engine_fix(&Echo("laya"), &Failure::new(Cause::Refused, "whatever"));
        assert!(fix.starts_with("start it with `") || fix.starts_with("laya is not installed: `"), "{fix}");
        assert!(fix.contains("engine start laya --wait 180"), "{fix}");
    }
}
