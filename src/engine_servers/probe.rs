//! `system1 engine probe`: what this machine can run. OS, CPU, RAM, GPU and VRAM where the system
//! says (Linux `/proc`, macOS `sysctl`, Windows CIM through PowerShell, `nvidia-smi` anywhere),
//! plus the Python, Ollama and llama-server found on PATH, and the System One servers within reach
//! (docs/engines.md#system-one-servers). Anything not detectable is reported as unknown, never
//! guessed.

use std::process::Command;

use serde::Serialize;

use crate::providers::Probe;
use crate::providers::hosted::SERVICES;
use crate::text;

/// Runs a command briefly and returns its trimmed stdout when it succeeds.
fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if text.is_empty() { None } else { Some(text) }
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn os_name() -> String {
    let os = std::env::consts::OS;
    let arch = std::env::consts::ARCH;
    let pretty = match os {
        "linux" => read("/etc/os-release").and_then(|t| {
            t.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_string()))
        }),
        "macos" => output("sw_vers", &["-productVersion"]).map(|v| format!("macOS {v}")),
        _ => None,
    };
    match pretty {
        Some(p) => format!("{p} ({os}, {arch})"),
        None => format!("{os} ({arch})"),
    }
}

fn cpu_model() -> Option<String> {
    match std::env::consts::OS {
        "linux" => read("/proc/cpuinfo").and_then(|t| {
            t.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == "model name").then(|| v.trim().to_string())
            })
        }),
        "macos" => output("sysctl", &["-n", "machdep.cpu.brand_string"]),
        "windows" => output("powershell", &["-NoProfile", "-Command", "(Get-CimInstance Win32_Processor).Name"]),
        _ => None,
    }
}

fn ram_bytes() -> Option<u64> {
    match std::env::consts::OS {
        "linux" => read("/proc/meminfo").and_then(|t| {
            let line = t.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb * 1024)
        }),
        "macos" => output("sysctl", &["-n", "hw.memsize"]).and_then(|s| s.parse().ok()),
        "windows" => output(
            "powershell",
            &["-NoProfile", "-Command", "(Get-CimInstance Win32_ComputerSystem).TotalPhysicalMemory"],
        )
        .and_then(|s| s.parse().ok()),
        _ => None,
    }
}

/// What the probe finds, as `engine probe --json` prints it (docs/engines.md lists the fields).
#[derive(Debug, Serialize)]
pub struct Machine {
    pub os: String,
    pub cpu: Cpu,
    pub ram_gb: Option<f64>,
    pub gpus: Vec<Gpu>,
    pub python: Option<String>,
    pub ollama: Option<String>,
    /// llama.cpp's build number of the `llama-server` on PATH.
    pub llama_server: Option<u64>,
    pub systemone: Vec<ServerOffer>,
    pub hosted: Vec<HostedOffer>,
    pub recommended: Recommended,
}

#[derive(Debug, Default, Serialize)]
pub struct Cpu {
    pub model: Option<String>,
    pub threads: Option<usize>,
}

#[derive(Debug, Serialize)]
pub struct Gpu {
    pub name: String,
    pub vram_gb: Option<f64>,
    /// `cuda` or `mps`.
    pub backend: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<&'static str>,
}

/// A System One server this machine has or could reach.
#[derive(Debug, Serialize)]
pub struct ServerOffer {
    /// `running`, `ollama`, `llama-server` or `hosted`.
    pub server: &'static str,
    /// Whether it can serve decisions as it is (an Ollama or llama-server too old does not).
    pub fits: bool,
    pub how: String,
}

/// A hosted decision engine whose key is set.
#[derive(Debug, Serialize)]
pub struct HostedOffer {
    pub engine: &'static str,
    pub how: String,
}

/// The engine this machine suits, and why.
#[derive(Debug, Serialize)]
pub struct Recommended {
    pub engine: &'static str,
    pub why: String,
}

/// NVIDIA GPUs with their memory, from `nvidia-smi`; on Apple Silicon the integrated GPU (MPS).
fn gpus() -> Vec<Gpu> {
    let mut found = Vec::new();
    if let Some(csv) = output("nvidia-smi", &["--query-gpu=name,memory.total", "--format=csv,noheader,nounits"]) {
        for line in csv.lines() {
            let mut parts = line.split(',').map(str::trim);
            let name = text::printable(parts.next().unwrap_or("NVIDIA GPU"), 200);
            let vram_mib: Option<u64> = parts.next().and_then(|m| m.parse().ok());
            found.push(Gpu { name, vram_gb: vram_mib.map(|m| gb(m * 1024 * 1024)), backend: "cuda", note: None });
        }
    }
    if found.is_empty() && std::env::consts::OS == "macos" && std::env::consts::ARCH == "aarch64" {
        found.push(Gpu {
            name: "Apple Silicon GPU".into(),
            vram_gb: None,
            backend: "mps",
            note: Some("unified memory: the GPU shares the RAM"),
        });
    }
    found
}

fn gb(bytes: u64) -> f64 {
    crate::text::round(bytes as f64 / 1_073_741_824.0, 1)
}

/// Runs a command briefly and returns what it printed, stdout and stderr (some programs print
/// their version on stderr), whether or not it succeeded; `None` when it does not run.
fn printed(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let text = text.trim().to_string();
    if text.is_empty() { None } else { Some(text) }
}

/// The first `major.minor[.patch]` in `text`, as numbers.
fn version_in(text: &str) -> Option<(u64, u64)> {
    text.split(|c: char| c.is_whitespace() || c == 'v').find_map(|w| {
        let mut parts = w.trim_matches(|c: char| !c.is_ascii_digit()).split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some((major, minor))
    })
}

/// llama.cpp's build number in `llama-server --version` ("version: 11400 (abc1234)").
fn llama_build(text: &str) -> Option<u64> {
    let rest = text.split("version:").nth(1)?;
    rest.split_whitespace().next()?.trim_start_matches('b').parse().ok()
}

/// The first Ollama release that serves the System One API (with a decision model).
const OLLAMA_SYSTEMONE: (u64, u64) = (0, 35);
/// llama.cpp's last release without the System One API in `llama-server`.
const LLAMA_WITHOUT_SYSTEMONE: u64 = 11349;

/// The System One servers this machine has or could reach, each with whether it fits and how to
/// use it: one answering at the configured endpoint (`answering`: its health probe), an Ollama new
/// enough to serve decision models, a `llama-server` on PATH, and TypeSafe's hosted Jev, which only
/// the user can choose (prompts and contexts leave the machine).
pub fn systemone(ollama: Option<&str>, llama: Option<&str>, answering: Option<(&str, &Probe)>) -> Vec<ServerOffer> {
    let mut offers = Vec::new();
    let fallback = "as a fallback after the local engine it answers the free yes/no questions local passes on";
    if let Some((endpoint, probe)) = answering {
        match probe {
            Probe::Up(detail) => offers.push(ServerOffer {
                server: "running",
                fits: true,
                how: format!(
                    "a System One server answers at {endpoint} ({}): add \"systemone\" to [gateway] fallback; {fallback}",
                    detail.as_deref().unwrap_or("up")
                ),
            }),
            Probe::Down(_) => {}
        }
    }
    if let Some(v) = ollama {
        let fits = version_in(v).is_some_and(|got| got >= OLLAMA_SYSTEMONE);
        let how = if fits {
            format!(
                "Ollama ({v}) serves the System One API with a decision model: `ollama pull d1-omni:600m`, then \
                 [providers.systemone] endpoint = \"http://127.0.0.1:11434\" and model = \"d1-omni:600m\"; {fallback}"
            )
        } else {
            format!(
                "Ollama ({v}) is older than 0.35, the first to serve the System One API: upgrade it to use a decision model"
            )
        };
        offers.push(ServerOffer { server: "ollama", fits, how });
    }
    if let Some(v) = llama {
        let build = llama_build(v);
        let fits = build.is_some_and(|b| b > LLAMA_WITHOUT_SYSTEMONE);
        let how = if fits {
            format!(
                "llama-server (build {}) serves the System One API with a decision-model GGUF (Kev-4B, say) at \
                 http://127.0.0.1:8080, [providers.systemone]'s default endpoint; {fallback}",
                build.unwrap_or_default()
            )
        } else {
            format!(
                "llama-server is here, but not a build after b{LLAMA_WITHOUT_SYSTEMONE}, which added the System One API: \
                 build llama.cpp from source until a release has it"
            )
        };
        offers.push(ServerOffer { server: "llama-server", fits, how });
    }
    offers.push(ServerOffer {
        server: "hosted",
        fits: true,
        how: "TypeSafe's hosted Jev, only if you agree: every prompt and context it decides on leaves this machine, \
              and it is a paid service billed by TypeSafe (each answer reports its tokens in `usage`; check \
              TypeSafe's prices first). A team's vLLM (0.32 or later) is the same kind of server on your own network"
            .into(),
    });
    offers
}

/// The median prompt of the routing seed set (calibration/routing.jsonl: 281 prompts, median 141
/// characters): the state of a routing-sized decision.
const ROUTING_PROMPT_CHARS: usize = 141;

/// The input tokens of one decision the size of the routing hook's (its four questions about a
/// median prompt), at one token per four characters, the estimate `system1 serve` reports `usage` by.
pub fn routing_decision_tokens() -> u64 {
    let questions: usize = crate::routing::features::QUESTIONS.iter().map(|(_, q)| q.chars().count()).sum();
    ((questions + ROUTING_PROMPT_CHARS) as u64).div_ceil(4)
}

/// The hosted engines to offer: only those whose key is set (`keyed` names their providers), each
/// saying that prompts leave the machine, what 1,000 routing-sized decisions cost at the published
/// price, and that it goes behind the local engine.
pub fn hosted(keyed: &[&str]) -> Vec<HostedOffer> {
    let tokens = routing_decision_tokens();
    SERVICES
        .iter()
        .filter(|h| keyed.contains(&h.provider))
        .map(|h| {
            let cost = match (h.usd_per_million_input, h.usd(tokens * 1000)) {
                (Some(p), Some(usd)) => format!(
                    "about ${usd:.3} per 1,000 decisions the size of the routing hook's ({tokens} input tokens each, \
                     at ${p:.2} per million input tokens and nothing for output: {})",
                    h.price_source
                ),
                _ => format!("priced per model ({})", h.price_source),
            };
            let how = format!(
                "{} (your key is set), only if you agree: every prompt and context it decides on leaves this machine \
                 for {}'s servers; {cost}. Put it behind the local engine, so that the questions the local engine was \
                 taught stay here and only the others go out: [gateway] provider = \"local\", fallback = [\"{}\"], \
                 and [providers.{}] allow_remote = true",
                h.service, h.vendor, h.provider, h.provider
            );
            HostedOffer { engine: h.provider, how }
        })
        .collect()
}

/// Everything the probe finds. `answering` is the configured System One server's endpoint and
/// health probe, when one is configured or listens at the default address; `keyed` the hosted
/// engines whose key is set.
pub fn probe(answering: Option<(&str, &Probe)>, keyed: &[&str]) -> Machine {
    let threads = std::thread::available_parallelism().map(|n| n.get()).ok();
    // What programs and system files say is printed and goes to the model: escaped and short.
    let shown = |s: Option<String>| s.map(|s| text::printable(&s, 200));
    let python = shown(output("python3", &["--version"]).or_else(|| output("python", &["--version"])));
    let ollama = shown(output("ollama", &["--version"]));
    let llama = printed("llama-server", &["--version"]);
    let gpus = gpus();
    let recommended = recommend(!gpus.is_empty(), python.is_some());
    Machine {
        os: text::printable(&os_name(), 200),
        cpu: Cpu { model: shown(cpu_model()), threads },
        ram_gb: ram_bytes().map(gb),
        gpus,
        systemone: systemone(ollama.as_deref(), llama.as_deref(), answering),
        python,
        ollama,
        llama_server: llama.as_deref().and_then(llama_build),
        hosted: hosted(keyed),
        recommended,
    }
}

/// The engine this machine suits: Laya where a GPU and Python are there (one forward pass for the
/// four features, fast on a GPU), else the local engine, which needs neither (a 91 MB model run
/// inside system1 on the CPU).
pub fn recommend(gpu: bool, python: bool) -> Recommended {
    let install_local = text::command("engine install local");
    let (engine, why) = match (gpu, python) {
        (true, true) => (
            "laya",
            "a GPU and Python are there: Laya answers the four routing features in one pass on the GPU (a 6 GB install); \
             the local engine is the light alternative"
                .to_string(),
        ),
        (_, false) => {
            ("local", format!("no Python on PATH: the local engine runs inside system1 (`{install_local}`, 91 MB)"))
        }
        (false, true) => (
            "local",
            format!(
                "no GPU: the local engine runs inside system1 on the CPU (`{install_local}`, 91 MB); Laya would work on \
                 the CPU but slowly"
            ),
        ),
    };
    Recommended { engine, why }
}

/// The probe as lines for a person.
pub fn describe(p: &Machine) -> Vec<String> {
    let unknown = || "unknown".to_string();
    let mut lines = vec![format!("OS:     {}", p.os)];
    lines.push(format!(
        "CPU:    {}{}",
        p.cpu.model.clone().unwrap_or_else(unknown),
        p.cpu.threads.map(|t| format!(", {t} threads")).unwrap_or_default()
    ));
    lines.push(format!("RAM:    {}", p.ram_gb.map(|g| format!("{g} GB")).unwrap_or_else(unknown)));
    if p.gpus.is_empty() {
        lines.push("GPU:    none detected (engines run on the CPU)".to_string());
    }
    for g in &p.gpus {
        let vram = g.vram_gb.map(|v| format!(", {v} GB VRAM")).unwrap_or_default();
        lines.push(format!("GPU:    {}{vram} ({})", g.name, g.backend));
    }
    let or_not_found = |s: &Option<String>| s.clone().unwrap_or_else(|| "not found on PATH".into());
    lines.push(format!("Python: {}", or_not_found(&p.python)));
    lines.push(format!("Ollama: {}", or_not_found(&p.ollama)));
    lines.push(format!("Engine: {} ({})", p.recommended.engine, p.recommended.why));
    for offer in &p.systemone {
        let mark = if offer.fits { "" } else { "(not yet) " };
        lines.push(format!("System One server: {mark}{}", offer.how));
    }
    for offer in &p.hosted {
        lines.push(format!("Hosted engine: {}", offer.how));
    }
    lines
}

#[cfg(test)]
mod recommend_tests {
    use super::*;

    #[test]
    fn system_one_servers_are_offered_where_they_fit() {
        let servers = |o: Option<&str>, l: Option<&str>| -> Vec<(String, bool)> {
            systemone(o, l, None).iter().map(|v| (v.server.to_string(), v.fits)).collect()
        };
        let names = |v: &[(&str, bool)]| v.iter().map(|(s, f)| (s.to_string(), *f)).collect::<Vec<_>>();
        assert_eq!(servers(None, None), names(&[("hosted", true)]), "the hosted one is always named, to ask about");
        assert_eq!(
            servers(Some("ollama version is 0.35.0"), Some("version: 11350 (abc1234)\nbuilt with cc")),
            names(&[("ollama", true), ("llama-server", true), ("hosted", true)])
        );
        assert_eq!(
            servers(Some("ollama version is 0.12.11"), Some("version: 11349 (abc1234)")),
            names(&[("ollama", false), ("llama-server", false), ("hosted", true)])
        );
        assert_eq!(version_in("ollama version is 0.36.2"), Some((0, 36)));
        assert_eq!(llama_build("version: b11400 (x)"), Some(11400));
        let up = Probe::up("systemone at http://127.0.0.1:8080 is up and offers jev-latest");
        let offered = systemone(None, None, Some(("http://127.0.0.1:8080", &up)));
        assert_eq!(offered[0].server, "running");
        let down = Probe::Down(crate::providers::Failure::new(crate::providers::Cause::Refused, "refused"));
        assert_eq!(systemone(None, None, Some(("http://127.0.0.1:8080", &down))).len(), 1);
        let hosted = offered.last().map(|v| v.how.as_str()).unwrap_or("");
        assert!(
            hosted.contains("only if you agree") && hosted.contains("leaves this machine") && hosted.contains("paid")
        );
    }

    #[test]
    fn a_hosted_engine_is_offered_only_with_its_key_and_says_what_leaves_and_what_it_costs() {
        assert!(hosted(&[]).is_empty(), "no key, no offer");
        let offers = hosted(&["gemini", "openrouter"]);
        assert_eq!(offers.iter().map(|o| o.engine).collect::<Vec<_>>(), ["gemini", "openrouter"]);
        let gemini = offers[0].how.as_str();
        let tokens = routing_decision_tokens();
        assert!((150..300).contains(&tokens), "four questions and a median prompt: {tokens}");
        let cost = format!("about ${:.3} per 1,000 decisions", tokens as f64 * 1000.0 * 0.10 / 1e6);
        assert!(gemini.contains(&cost), "{gemini}");
        assert!(gemini.contains("leaves this machine") && gemini.contains("fallback = [\"gemini\"]"), "{gemini}");
        assert!(offers[1].how.contains("priced per model"));
        let machine = Machine {
            os: "linux".into(),
            cpu: Cpu::default(),
            ram_gb: None,
            gpus: Vec::new(),
            python: None,
            ollama: None,
            llama_server: None,
            systemone: Vec::new(),
            hosted: offers,
            recommended: recommend(false, false),
        };
        let lines = describe(&machine);
        assert_eq!(lines.iter().filter(|l| l.starts_with("Hosted engine: ")).count(), 2, "{lines:?}");
    }

    #[test]
    fn local_without_a_gpu_or_python_laya_with_both() {
        assert_eq!(recommend(false, true).engine, "local");
        assert_eq!(recommend(true, false).engine, "local");
        assert_eq!(recommend(true, true).engine, "laya");
    }
}
