//! `system1 engine probe`: what this machine can run. OS, CPU, RAM, GPU and VRAM where the system
//! says (Linux `/proc`, macOS `sysctl`, Windows CIM through PowerShell, `nvidia-smi` anywhere),
//! plus the Python and Ollama found on PATH. Anything not detectable is reported as unknown,
//! never guessed.

use std::process::Command;

use serde_json::{Value, json};

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

/// NVIDIA GPUs with their memory, from `nvidia-smi`; on Apple Silicon the integrated GPU (MPS).
fn gpus() -> Vec<Value> {
    let mut found = Vec::new();
    if let Some(csv) = output("nvidia-smi", &["--query-gpu=name,memory.total", "--format=csv,noheader,nounits"]) {
        for line in csv.lines() {
            let mut parts = line.split(',').map(str::trim);
            let name = parts.next().unwrap_or("NVIDIA GPU").to_string();
            let vram_mib: Option<u64> = parts.next().and_then(|m| m.parse().ok());
            found.push(json!({"name": name, "vram_gb": vram_mib.map(|m| gb(m * 1024 * 1024)), "backend": "cuda"}));
        }
    }
    if found.is_empty() && std::env::consts::OS == "macos" && std::env::consts::ARCH == "aarch64" {
        found.push(json!({"name": "Apple Silicon GPU", "vram_gb": null, "backend": "mps",
            "note": "unified memory: the GPU shares the RAM"}));
    }
    found
}

fn gb(bytes: u64) -> f64 {
    crate::text::round(bytes as f64 / 1_073_741_824.0, 1)
}

/// Everything the probe finds, as JSON.
pub fn probe() -> Value {
    let threads = std::thread::available_parallelism().map(|n| n.get()).ok();
    let python = output("python3", &["--version"]).or_else(|| output("python", &["--version"]));
    let ollama = output("ollama", &["--version"]);
    json!({
        "os": os_name(),
        "cpu": {"model": cpu_model(), "threads": threads},
        "ram_gb": ram_bytes().map(gb),
        "gpus": gpus(),
        "python": python,
        "ollama": ollama,
    })
    .as_object()
    .map(|o| {
        let mut o = o.clone();
        let (engine, why) = recommend(&Value::Object(o.clone()));
        o.insert("recommended".into(), json!({"engine": engine, "why": why}));
        Value::Object(o)
    })
    .unwrap_or_default()
}

/// The engine this machine suits: Laya where a GPU and Python are there (one forward pass for the
/// four features, fast on a GPU), else the local engine, which needs neither (a 91 MB model run
/// inside system1 on the CPU).
pub fn recommend(p: &Value) -> (&'static str, String) {
    let gpu = p["gpus"].as_array().is_some_and(|g| !g.is_empty());
    let python = p["python"].is_string();
    let install_local = text::command("engine install local");
    match (gpu, python) {
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
    }
}

/// The probe as lines for a person.
pub fn describe(p: &Value) -> Vec<String> {
    let unknown = || "unknown".to_string();
    let s = |v: &Value| v.as_str().map(String::from);
    let mut lines = vec![format!("OS:     {}", s(&p["os"]).unwrap_or_else(unknown))];
    lines.push(format!(
        "CPU:    {}{}",
        s(&p["cpu"]["model"]).unwrap_or_else(unknown),
        p["cpu"]["threads"].as_u64().map(|t| format!(", {t} threads")).unwrap_or_default()
    ));
    lines.push(format!("RAM:    {}", p["ram_gb"].as_f64().map(|g| format!("{g} GB")).unwrap_or_else(unknown)));
    match p["gpus"].as_array().filter(|g| !g.is_empty()) {
        None => lines.push("GPU:    none detected (engines run on the CPU)".to_string()),
        Some(gpus) => {
            for g in gpus {
                let vram = g["vram_gb"].as_f64().map(|v| format!(", {v} GB VRAM")).unwrap_or_default();
                let backend = s(&g["backend"]).unwrap_or_default();
                lines.push(format!("GPU:    {}{vram} ({backend})", s(&g["name"]).unwrap_or_else(unknown)));
            }
        }
    }
    lines.push(format!("Python: {}", s(&p["python"]).unwrap_or_else(|| "not found on PATH".into())));
    lines.push(format!("Ollama: {}", s(&p["ollama"]).unwrap_or_else(|| "not found on PATH".into())));
    if let Some(engine) = s(&p["recommended"]["engine"]) {
        lines.push(format!("Engine: {engine} ({})", s(&p["recommended"]["why"]).unwrap_or_default()));
    }
    lines
}

#[cfg(test)]
mod recommend_tests {
    use super::*;

    #[test]
    fn local_without_a_gpu_or_python_laya_with_both() {
        let p = |gpus: Value, python: Value| json!({"gpus": gpus, "python": python});
        assert_eq!(recommend(&p(json!([]), json!("Python 3.11"))).0, "local");
        assert_eq!(recommend(&p(json!([{"name": "RTX"}]), Value::Null)).0, "local");
        assert_eq!(recommend(&p(json!([{"name": "RTX"}]), json!("Python 3.11"))).0, "laya");
    }
}
