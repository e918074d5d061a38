//! What to do about an engine that fails, as one imperative phrase: the provider's own fix
//! ([`Provider::fix`]), and what only this module knows, because providers sit below it: that
//! System-1 installs and starts this engine's server itself, and where that server's log is.
//! `doctor`, the session-start hook, `smoke` and `evaluate` all print this.

use super::{SPECS, Spec};
use crate::providers::{Cause, Failure, Provider};
use crate::text;

/// The fix for `failure` of `provider` (a health probe's or a decision's).
pub fn engine_fix(provider: &dyn Provider, failure: &Failure) -> String {
    let name = provider.name();
    let server = SPECS.iter().find(|s| s.name == name);
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

/// `; see its log, <file>` for an engine System-1 runs.
fn log_hint(server: Option<&Spec>) -> String {
    server.map(|s| format!("; see its log, {}", s.log_file().display())).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::testing::Scripted;

    #[test]
    fn the_fix_is_the_providers_whatever_the_detail_says() {
        // A detail that reads like another cause changes nothing: only the cause is looked at.
        let failure = Failure::new(Cause::EngineTooOld, "connection refused: HTTP 422 unknown model not installed");
        assert_eq!(engine_fix(&*Scripted::echoing_fixes("myengine"), &failure), "EngineTooOld");
        let failure = Failure::new(Cause::Refused, "");
        assert_eq!(
            engine_fix(&*Scripted::echoing_fixes("myengine"), &failure),
            "Refused",
            "not an engine System-1 runs"
        );
    }

    #[test]
    fn a_refused_engine_that_system1_runs_is_started_or_installed() {
        let fix = engine_fix(&*Scripted::echoing_fixes("laya"), &Failure::new(Cause::Refused, "whatever"));
        assert!(fix.starts_with("start it with `") || fix.starts_with("laya is not installed: `"), "{fix}");
        assert!(fix.contains("engine start laya --wait 180"), "{fix}");
    }
}
