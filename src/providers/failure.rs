//! Why an engine failed, as a type the code matches, and what the person should do about it.
//!
//! An adapter names the [`Cause`] where it knows it (the HTTP helper for the transport and the
//! status, the adapter for what its engine's reply means) and words the `detail` for people. Code
//! that acts on a failure (the gateway's attempt outcome, the fix that `doctor`, the session-start
//! hook and `smoke` print) matches the cause and never reads the detail: a sentence can be reworded
//! without changing what anything does. The fix belongs to the provider whose cause it is
//! ([`super::Provider::fix`]); [`generic_fix`] is the shared one for the causes every HTTP engine
//! has, which a provider falls back to for what it has nothing of its own to say about.

/// Why an attempt or a health probe failed: the cause, and the detail for people.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub cause: Cause,
    /// What happened, in words: the engine's own explanation where it gave one.
    pub detail: String,
}

/// The kind of a failure. Only [`Cause::Timeout`] and [`Cause::Malformed`] have outcomes of their
/// own in a response's attempts; every other cause is an engine error there, and differs in its fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// No answer within the time allowed.
    Timeout,
    /// The reply could not be read, or broke the engine's contract; the detail names the rule.
    Malformed,
    /// Nothing listens at the endpoint: the connection was refused.
    Refused,
    /// The endpoint cannot be reached: its host has no address, or the connection failed.
    Unreachable,
    /// The `endpoint` setting cannot be used (the config loader said why).
    BadEndpoint,
    /// The engine wants a key (HTTP 401 or 403): none is set, or the one set is refused.
    Unauthorised,
    /// The engine does not have the model the config names; its detail lists the ones it has.
    UnknownModel,
    /// The engine answered with this HTTP error status; the detail carries its explanation.
    HttpStatus(u16),
    /// The engine runs, but a version too old for what System-1 needs from it.
    EngineTooOld,
    /// The engine itself, or the model it runs in process, is not installed on this machine.
    NotInstalled,
    /// The engine runs, but the model the config names is not there (Ollama: not pulled).
    ModelMissing,
    /// A file of the model is there but broken; the detail names the file.
    ModelBroken,
    /// A request beyond what the engine takes: more options, questions or text than its limits.
    OverLimit,
    /// The engine is slower than the caller's time left: its latency, measured at install, is
    /// more than what remains of the budget (a hook's), so it was not asked.
    TooSlow,
    /// The mock set to be down (`down = true`): nothing to repair but the setting.
    ConfiguredDown,
    /// The mock set to fail its decisions (`fail = "error"`).
    ConfiguredToFail,
    /// Anything else the transport reported.
    Other,
}

/// The most of a failure's detail, or of anything else an engine says, that is kept, in
/// characters. System-1's own sentences stay under a few hundred even with a path or a URL in
/// them, and an engine's error body is quoted at 300 (`http::error_detail`); the cap bounds what
/// one engine reply can put on a terminal, into a log line, or into a tool result in a model's
/// context, whatever the adapter built from it.
pub const MAX_QUOTED_CHARS: usize = 1000;

/// Text that came from an engine (or holds something that did), as every provider's output
/// carries it: control and invisible characters escaped, cut at [`MAX_QUOTED_CHARS`].
pub fn quoted(text: &str) -> String {
    crate::text::printable(text, MAX_QUOTED_CHARS)
}

impl Failure {
    /// A failure whose detail is [`quoted`]: details quote what engines, servers and files said,
    /// and reach a terminal, logs and tool results; this is where every one of them is tamed.
    pub fn new(cause: Cause, detail: impl Into<String>) -> Self {
        Failure { cause, detail: quoted(&detail.into()) }
    }

    /// No answer within `timeout`, in the words every adapter uses.
    pub fn timeout(timeout: std::time::Duration) -> Self {
        Failure::new(Cause::Timeout, format!("no answer within {:.3} s", timeout.as_secs_f64()))
    }

    pub fn malformed(detail: impl Into<String>) -> Self {
        Failure::new(Cause::Malformed, detail)
    }

    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// The same failure with `prefix` before its detail (`laya-serve at URL: `).
    pub fn prefixed(self, prefix: &str) -> Self {
        Failure::new(self.cause, format!("{prefix}{}", self.detail))
    }
}

/// What to do about a failure: one imperative phrase, and whether the engine's log is where to
/// look next (for an engine System-1 runs, `doctor` adds the log's path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    pub action: String,
    pub see_log: bool,
}

impl Fix {
    pub fn new(action: impl Into<String>) -> Self {
        Fix { action: action.into(), see_log: false }
    }

    /// The same fix, pointing at the engine's log.
    pub fn see_log(mut self) -> Self {
        self.see_log = true;
        self
    }
}

/// The fix for a cause that every HTTP engine can have, in terms of `provider`'s config section.
pub fn generic_fix(provider: &str, failure: &Failure) -> Fix {
    match failure.cause {
        Cause::Timeout => Fix::new(
            "the engine is up but slow: the first decision after a start loads the model, so try again; else check \
             the engine's load, or raise [gateway] timeout_s",
        ),
        Cause::Refused => Fix::new(format!("start the {provider} engine, or check [providers.{provider}] endpoint")),
        Cause::Unreachable => Fix::new(format!("check [providers.{provider}] endpoint: nothing answers there")),
        Cause::BadEndpoint => Fix::new(format!(
            "set [providers.{provider}] endpoint to an http:// or https:// URL on this machine, or set allow_remote = \
             true to use a remote engine"
        )),
        Cause::Unauthorised => Fix::new(format!(
            "the engine wants a key: set SYSTEM1_{}_API_KEY in the environment of Claude Code and the shell",
            provider.to_ascii_uppercase()
        )),
        Cause::UnknownModel => Fix::new(format!(
            "set [providers.{provider}] model to one the server has (the error lists them), or remove it to use the \
             server's default"
        )),
        Cause::HttpStatus(422) => Fix::new(format!(
            "the engine refused the request as invalid: its version may not match the adapter; update the engine, \
             or check the [providers.{provider}] keys"
        ))
        .see_log(),
        Cause::HttpStatus(404 | 405 | 501) => Fix::new(format!(
            "the server at [providers.{provider}] endpoint does not have {provider}'s routes: another program holds that \
             port, or it is a version System-1 does not speak; point endpoint at a {provider} server"
        )),
        Cause::HttpStatus(500..=599) => {
            Fix::new("the engine failed inside (for Laya, often its checkpoint failing to load)").see_log()
        }
        Cause::TooSlow => Fix::new(format!(
            "the hooks' engine budget is shorter than {provider}'s measured latency: raise [routing] budget_ms, or \
             put a faster engine before it; system1_decide still asks it"
        )),
        _ => Fix::new(format!("check the {provider} engine")).see_log(),
    }
}

/// The fixes a provider gives for `causes`, checked to differ from each other: one fix per kind
/// of failure. The detail is the same words for all, so only the cause can tell them apart.
#[cfg(test)]
pub fn distinct_fixes(provider: &dyn super::Provider, causes: &[Cause]) -> Vec<String> {
    let fixes: Vec<String> =
        causes.iter().map(|&c| provider.fix(&Failure::new(c, "connection refused: HTTP 422 too old")).action).collect();
    for (i, f) in fixes.iter().enumerate() {
        assert!(
            !fixes[..i].contains(f),
            "{:?} and {:?} share the fix {f:?}",
            causes[fixes[..i].iter().position(|g| g == f).unwrap_or(0)],
            causes[i]
        );
    }
    fixes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_generic_cause_has_its_own_fix_in_the_providers_words() {
        let causes = [
            Cause::Timeout,
            Cause::Refused,
            Cause::Unreachable,
            Cause::BadEndpoint,
            Cause::Unauthorised,
            Cause::UnknownModel,
            Cause::HttpStatus(422),
            Cause::HttpStatus(501),
            Cause::HttpStatus(503),
            Cause::Other,
        ];
        let fixes: Vec<Fix> = causes.iter().map(|&c| generic_fix("myengine", &Failure::new(c, ""))).collect();
        for (i, f) in fixes.iter().enumerate() {
            assert!(!fixes[..i].contains(f), "{:?} shares {f:?}", causes[i]);
        }
        assert!(fixes[4].action.contains("SYSTEM1_MYENGINE_API_KEY"), "{:?}", fixes[4]);
        assert!(fixes[5].action.contains("[providers.myengine] model"), "{:?}", fixes[5]);
        assert!(fixes[7].action.contains("myengine's routes"), "{:?}", fixes[7]);
        // Where the engine failed inside, its log is where to look next; a refused connection has no log.
        assert!(fixes[8].see_log && !fixes[1].see_log);
        // The generic fixes name no engine but the one asked about.
        for f in &fixes {
            for other in ["laya", "von", "ollama", "Ollama", "local"] {
                assert!(!f.action.contains(other), "{other} in the generic {f:?}");
            }
        }
    }
}
