//! Checks that the SessionStart hook and `system1 doctor` both make, written once so that the two
//! never disagree: whether a real engine is set up at all, what to do about an engine that fails
//! (one fix per kind of failure), and how many log entries wait for labels.

use crate::config::Loaded;
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

/// The fix for an engine that failed with `detail` (a health probe's or a decision's), one per
/// kind of failure, as one imperative phrase. The details are the adapters' and the HTTP
/// helper's own wording.
pub fn engine_fix(provider: &str, detail: &str) -> String {
    let lower = detail.to_ascii_lowercase();
    let server = servers::SPECS.iter().find(|s| s.name == provider);
    if provider == MOCK {
        return if lower.contains("configured as down") {
            "the mock engine is configured as down: remove `down = true` from [providers.mock]".to_string()
        } else {
            "the mock engine is configured to fail: check `fail` in [providers.mock]".to_string()
        };
    }
    if lower.contains("not on this machine") {
        return format!(
            "set [providers.{provider}] allow_remote = true to use a remote engine, or point endpoint at 127.0.0.1"
        );
    }
    if lower.contains("no answer within") {
        return "the engine is up but slow: the first decision after a start loads the model, so try again; else \
                check the engine's load, or raise [gateway] timeout_s"
            .to_string();
    }
    if lower.contains("connection refused") {
        return match (provider, server) {
            ("ollama", _) if paths::find_on_path(&["ollama", "ollama.exe"]).is_none() => {
                "Ollama is not installed (no `ollama` on PATH): install it from https://ollama.com, then `ollama pull` \
                 the model"
                    .to_string()
            }
            ("ollama", _) => "start Ollama (`ollama serve`, or its desktop app)".to_string(),
            (_, Some(spec)) if !spec.is_installed() => format!(
                "{provider} is not installed: `{}`, then `{}` (or start your own server at the configured endpoint)",
                text::command(&format!("engine install {provider}")),
                text::command(&format!("engine start {provider} --wait 180"))
            ),
            (_, Some(_)) => {
                format!("start it with `{}`", text::command(&format!("engine start {provider} --wait 180")))
            }
            _ => format!("start the {provider} engine, or check [providers.{provider}] endpoint"),
        };
    }
    if provider == "ollama" {
        if lower.contains("too old") {
            return "upgrade Ollama to 0.12.11 or later (older versions give no logprobs), then restart it".to_string();
        }
        if let Some(pull) = detail.split('`').nth(1).filter(|c| c.starts_with("ollama pull ")) {
            return format!("pull the model: `{pull}`");
        }
    }
    if provider == "local" {
        // The engine's own message names the file at fault and the command that fixes it.
        let install = detail.split('`').nth(1).filter(|c| c.contains("engine install local"));
        if lower.contains("not installed") {
            return match install {
                Some(install) => format!("install its model with `{install}`"),
                None => format!(
                    "point [providers.local] model_dir at the folder that holds the model, or remove model_dir and \
                     run `{}`",
                    text::command("engine install local")
                ),
            };
        }
        if lower.contains("model_dir with a working copy") {
            return "replace the file it names in [providers.local] model_dir with a working copy (the model's \
                    config.json, tokenizer.json and model.safetensors belong together), or remove model_dir to use \
                    the model `engine install local` downloads"
                .to_string();
        }
        if let Some(install) = install {
            return format!("reinstall the model with `{install}` (it downloads and checks every file again)");
        }
    }
    if lower.contains("http 401") || lower.contains("http 403") || lower.contains("api_key") {
        return format!(
            "the engine wants a key: set SYSTEM1_{}_API_KEY in the environment of Claude Code and the shell",
            provider.to_ascii_uppercase()
        );
    }
    if lower.contains("http 422") && lower.contains("unknown model") {
        return format!(
            "set [providers.{provider}] model to one the server has (the error lists them), or remove it to use the \
             server's default"
        );
    }
    if lower.contains("http 422") {
        return format!(
            "the engine refused the request as invalid: its version may not match the adapter (laya 0.4.15, von \
             1.3.7); update the engine, or check the [providers.{provider}] keys{}",
            log_hint(server)
        );
    }
    if lower.contains("http 501") || lower.contains("http 404") || lower.contains("http 405") {
        return format!(
            "the server at [providers.{provider}] endpoint does not have {provider}'s routes: another program holds that \
             port, or it is a version System-1 does not speak; point endpoint at a {provider} server"
        );
    }
    if lower.contains("http 5") {
        return format!(
            "the engine failed inside (for Laya, often its checkpoint failing to load){}",
            log_hint(server)
        );
    }
    if lower.contains("host not found") || lower.contains("connection failed") {
        return format!("check [providers.{provider}] endpoint: nothing answers there");
    }
    format!("check the {provider} engine{}", log_hint(server))
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

    #[test]
    fn each_kind_of_failure_has_its_own_fix() {
        let fixes = [
            ("laya", "laya: HTTP 422: unknown model './x'; choose one of ['english']"),
            ("laya", "laya: HTTP 422: question 'q': unknown type 'decision'"),
            ("laya", "laya: HTTP 501: Not Implemented"),
            ("laya", "laya: HTTP 500: inference failed"),
            ("laya", "no answer within 5.000 s"),
            ("ollama", "ollama 0.11.0 at http://127.0.0.1:11434 is too old: logprobs need 0.12.11 or later"),
            ("ollama", "ollama at http://x is up, but gemma4:e4b is not pulled (run `ollama pull gemma4:e4b`)"),
            (
                "local",
                "the local model is not installed: /x/config.json is missing; run `system1 engine install local`",
            ),
            ("local", "the local model is not installed: /m/config.json is missing; point [providers.local] model_dir at a folder"),
            ("local", "/x/model.safetensors: truncated?; reinstall the model with `system1 engine install local`"),
            (
                "local",
                "/m/tokenizer.json: not a tokenizer.json; replace that file in [providers.local] model_dir with a working copy",
            ),
            ("von", "von: HTTP 401: missing key"),
            ("mock", "configured as down"),
        ]
        .map(|(p, d)| engine_fix(p, d));
        for (i, f) in fixes.iter().enumerate() {
            assert!(!fixes[..i].contains(f), "two kinds share the fix {f:?}");
            assert!(!f.contains("Start it with"), "{f}");
        }
        assert!(fixes[0].contains("[providers.laya] model"), "{}", fixes[0]);
        assert!(fixes[5].contains("0.12.11"), "{}", fixes[5]);
        assert!(fixes[6].contains("`ollama pull gemma4:e4b`"), "{}", fixes[6]);
        assert!(fixes[8].starts_with("point [providers.local] model_dir"), "{}", fixes[8]);
        assert!(fixes[9].starts_with("reinstall the model with `system1 engine install local`"), "{}", fixes[9]);
        assert!(fixes[10].starts_with("replace the file it names in [providers.local] model_dir"), "{}", fixes[10]);
    }
}
