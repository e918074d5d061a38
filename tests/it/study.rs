//! `system1 study` through the real binary, against two loopback engines (a laya-serve and a von
//! fake) whose answers and delays are set here, so that every figure is computed by hand below.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::fake_http::{FakeServer, Reply, Request};
use crate::support::{TestEnv, stderr, stdout, write};

/// A routing item: its prompt, labels (read_only, design, review, specified), labelled tier, and
/// each engine's P(yes) per feature.
struct Item {
    prompt: &'static str,
    labels: [bool; 4],
    tier: &'static str,
    laya: [f64; 4],
    von: [f64; 4],
}

const FEATURES: [&str; 4] = ["read_only", "design", "review", "specified"];

const ITEMS: [Item; 6] = [
    // Laya right on all four (rule: read_only and specified -> haiku, as labelled); von misses specified.
    Item {
        prompt: "Find every call to parse_header in the repository and list the files",
        labels: [true, false, false, true],
        tier: "haiku",
        laya: [0.9, 0.2, 0.1, 0.8],
        von: [0.8, 0.1, 0.1, 0.45],
    },
    // Both right: design -> opus.
    Item {
        prompt: "Design a plugin system for the command line so others can add subcommands",
        labels: [false, true, false, false],
        tier: "opus",
        laya: [0.3, 0.7, 0.2, 0.4],
        von: [0.1, 0.95, 0.2, 0.2],
    },
    // Laya misses review (0.45): its rule gives sonnet for an opus task; von is right.
    Item {
        prompt: "Review the diff of the payment module and point out every bug you find",
        labels: [true, false, true, false],
        tier: "opus",
        laya: [0.6, 0.4, 0.45, 0.3],
        von: [0.7, 0.2, 0.9, 0.1],
    },
    // Both right: plain -> sonnet.
    Item {
        prompt: "Add a retry with backoff to the webhook sender in src/hooks/send.rs",
        labels: [false, false, false, true],
        tier: "sonnet",
        laya: [0.2, 0.1, 0.1, 0.9],
        von: [0.3, 0.3, 0.2, 0.8],
    },
    // Laya says specified (0.6): read_only and specified -> haiku for a sonnet task; von is right.
    Item {
        prompt: "Explain how the scheduler decides which job runs next in this service",
        labels: [true, false, false, false],
        tier: "sonnet",
        laya: [0.55, 0.3, 0.2, 0.6],
        von: [0.9, 0.2, 0.1, 0.3],
    },
    // Laya says read_only (0.7) but not specified: still sonnet, as labelled. Von says design: opus.
    Item {
        prompt: "Refactor the storage layer so that it no longer depends on the old cache",
        labels: [false, false, false, false],
        tier: "sonnet",
        laya: [0.7, 0.2, 0.1, 0.3],
        von: [0.2, 0.65, 0.1, 0.2],
    },
];

/// Commands, their labels, and each engine's P(yes).
const COMMANDS: [(&str, bool, f64, f64); 4] = [
    ("rm -rf build/", true, 0.9, 0.8),
    ("ls -la ~/projects", false, 0.3, 0.1),
    ("git push --force origin main", true, 0.4, 0.7),
    ("cat README.md", false, 0.2, 0.4),
];

const LAYA_DELAY: Duration = Duration::from_millis(40);
const VON_DELAY: Duration = Duration::from_millis(5);

/// P(yes) the named engine gives for question `id` about `state`.
fn p_yes(engine: &str, state: &Value, id: &str) -> f64 {
    if let Some(command) = state.get("command").and_then(Value::as_str) {
        let c = COMMANDS.iter().find(|c| c.0 == command).unwrap_or_else(|| panic!("unknown command {command}"));
        return if engine == "laya" { c.2 } else { c.3 };
    }
    let prompt = state.as_str().expect("the prompt is the state");
    let item = ITEMS.iter().find(|i| i.prompt == prompt).unwrap_or_else(|| panic!("unknown prompt {prompt}"));
    let f = FEATURES.iter().position(|f| *f == id).expect("a feature");
    if engine == "laya" { item.laya[f] } else { item.von[f] }
}

fn laya(r: &Request) -> Reply {
    if r.path != "/v1/systemone" {
        return Reply::json(200, &json!({"status": "ok", "loaded": ["typed-decisions"]}));
    }
    std::thread::sleep(LAYA_DELAY);
    let body = r.json();
    let mut answers = serde_json::Map::new();
    for id in body["questions"].as_object().expect("questions").keys() {
        let p = p_yes("laya", &body["state"], id);
        let pick = if p >= 0.5 { "yes" } else { "no" };
        answers.insert(
            id.clone(),
            json!({"type": "choice", "choice": pick, "probabilities": {"yes": p, "no": 1.0 - p}, "answer_confidence": p.max(1.0 - p)}),
        );
    }
    Reply::json(
        200,
        &json!({"model": "laya-rl-agent", "answers": answers, "routing": {"model": "typed-decisions", "reason": "explicit"}}),
    )
}

fn von(r: &Request) -> Reply {
    if r.path != "/v1/systemone" {
        return Reply::json(200, &json!({"status": "ok", "version": "1.3.7", "engine": "fake"}));
    }
    std::thread::sleep(VON_DELAY);
    let body = r.json();
    let mut answers = serde_json::Map::new();
    for id in body["questions"].as_object().expect("questions").keys() {
        let p = p_yes("von", &body["state"], id);
        answers.insert(id.clone(), json!({"type": "noul", "noul": 0.8, "noul_raw": p}));
    }
    Reply::json(200, &json!({"answers": answers}))
}

/// A scratch environment with both fakes configured, the routing threshold at 0.7, the two sets
/// written as files, and a local fit for laya's read_only (T = 2) in force.
struct Study {
    env: TestEnv,
    routing: String,
    commands: String,
    _servers: (FakeServer, FakeServer),
}

fn study() -> Study {
    let (l, v) = (FakeServer::start(laya), FakeServer::start(von));
    let mut env = TestEnv::new();
    env.write_config("[gateway]\nprovider = \"laya\"\nfallback = [\"von\"]\n[routing]\nmin_confidence = 0.7\n");
    env.set_env("SYSTEM1_LAYA_ENDPOINT", &l.url());
    env.set_env("SYSTEM1_VON_ENDPOINT", &v.url());
    let routing = env.root.join("routing.jsonl");
    let lines: String = ITEMS
        .iter()
        .enumerate()
        .map(|(i, it)| {
            let labels: serde_json::Map<String, Value> =
                FEATURES.iter().zip(it.labels).map(|(f, l)| (f.to_string(), json!(l))).collect();
            format!("{}\n", json!({"id": format!("t{i}"), "prompt": it.prompt, "labels": labels, "tier": it.tier}))
        })
        .collect();
    write(&routing, &lines);
    let commands = env.root.join("commands.jsonl");
    let lines: String = COMMANDS.iter().map(|c| format!("{}\n", json!({"command": c.0, "destructive": c.1}))).collect();
    write(&commands, &lines);
    let fit = json!({"format": "system1-calibration", "version": 1, "fits": [
        {"provider": "laya", "model": "typed-decisions", "question": "read_only", "temperature": 2.0}]});
    write(&env.install_dir.join("calibration.json"), &fit.to_string());
    Study { env, routing: routing.display().to_string(), commands: commands.display().to_string(), _servers: (l, v) }
}

/// The figures of one yes/no question, the simple way: answers are yes at P(yes) >= 0.5, with the
/// winner's probability as confidence; six or four answers make one reliability bin, so the ECE is
/// |mean confidence - accuracy|.
struct ByHand {
    accuracy: f64,
    ece: f64,
    coverage: f64,
    accuracy_at: Option<f64>,
    auroc: f64,
}

fn by_hand(p_yes: &[f64], labels: &[bool], threshold: f64, t: f64) -> ByHand {
    let soften = |c: f64| c.powf(1.0 / t) / (c.powf(1.0 / t) + (1.0 - c).powf(1.0 / t));
    let conf: Vec<f64> = p_yes.iter().map(|p| soften(p.max(1.0 - p))).collect();
    let right: Vec<bool> = p_yes.iter().zip(labels).map(|(p, l)| (*p >= 0.5) == *l).collect();
    let n = p_yes.len() as f64;
    let accuracy = right.iter().filter(|r| **r).count() as f64 / n;
    let ece = (conf.iter().sum::<f64>() / n - accuracy).abs();
    let kept: Vec<bool> = conf.iter().zip(&right).filter(|(c, _)| **c >= threshold).map(|(_, r)| *r).collect();
    let accuracy_at = (!kept.is_empty()).then(|| kept.iter().filter(|r| **r).count() as f64 / kept.len() as f64);
    let mut pairs = 0.0;
    let mut wins = 0.0;
    for (pp, lp) in p_yes.iter().zip(labels) {
        for (pn, ln) in p_yes.iter().zip(labels) {
            if *lp && !*ln {
                pairs += 1.0;
                wins += if pp > pn {
                    1.0
                } else if pp == pn {
                    0.5
                } else {
                    0.0
                };
            }
        }
    }
    ByHand { accuracy, ece, coverage: kept.len() as f64 / n, accuracy_at, auroc: wins / pairs }
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-9)
}

/// The default rules, written out: design -> opus, review -> opus, read_only and specified -> haiku, else sonnet.
fn rule(a: [bool; 4]) -> &'static str {
    if a[1] || a[2] {
        "opus"
    } else if a[0] && a[3] {
        "haiku"
    } else {
        "sonnet"
    }
}

#[test]
fn two_engines_every_figure_by_hand() {
    let s = study();
    let svg = s.env.root.join("out/study.svg");
    let args = ["study", "--set", &s.routing, "--set", &s.commands, "--json", "--svg", svg.to_str().unwrap()];
    if std::env::var_os("STUDY_DUMP").is_some() {
        let o = s.env.run(&["study", "--set", &s.routing, "--set", &s.commands], "");
        eprintln!("{}", stdout(&o));
    }
    let out = s.env.run(&args, "");
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    let engines = v["engines"].as_array().unwrap();
    assert_eq!(
        engines
            .iter()
            .map(|e| format!("{}/{}", e["provider"].as_str().unwrap(), e["model"].as_str().unwrap()))
            .collect::<Vec<_>>(),
        ["laya/typed-decisions", "von/von-1.3"],
        "the chain's engines, each alone"
    );
    assert_eq!(v["sets"][0]["items"], 6);
    assert_eq!(v["sets"][1]["items"], 4);
    for (e, engine) in engines.iter().zip(["laya", "von"]) {
        let routing = &e["sets"][0];
        assert_eq!((routing["items"].as_u64(), routing["failed"].as_u64()), (Some(6), Some(0)));
        assert!(routing["cross_validated"].is_null(), "only an engine fitted on the set is cross-validated");
        for (q, f) in FEATURES.iter().enumerate() {
            let p: Vec<f64> = ITEMS.iter().map(|i| if engine == "laya" { i.laya[q] } else { i.von[q] }).collect();
            let l: Vec<bool> = ITEMS.iter().map(|i| i.labels[q]).collect();
            let fig = routing["questions"].as_array().unwrap().iter().find(|x| x["question"] == *f).unwrap();
            let off = by_hand(&p, &l, 0.7, 1.0);
            // Laya's read_only has the local fit, T = 2, in force; nothing else has a fit.
            let t = if engine == "laya" && *f == "read_only" { 2.0 } else { 1.0 };
            let on = by_hand(&p, &l, 0.7, t);
            assert_eq!((fig["labelled"].as_u64(), fig["answered"].as_u64()), (Some(6), Some(6)), "{engine} {f}");
            assert!(close(&fig["accuracy"], off.accuracy), "{engine} {f}: {fig}");
            assert!(close(&fig["auroc"], off.auroc), "{engine} {f}: {fig}");
            assert!(close(&fig["off"]["ece"], off.ece), "{engine} {f}: {fig}");
            assert!(close(&fig["off"]["coverage"], off.coverage), "{engine} {f}: {fig}");
            assert_eq!(fig["off"]["accuracy_at_threshold"].as_f64(), off.accuracy_at, "{engine} {f}: {fig}");
            assert!(close(&fig["on"]["ece"], on.ece), "{engine} {f}: {fig}");
            assert!(close(&fig["on"]["coverage"], on.coverage), "{engine} {f}: {fig}");
            assert_eq!(
                fig["on"]["accuracy_at_threshold"].as_f64().map(|x| (x * 1e9).round()),
                on.accuracy_at.map(|x| (x * 1e9).round())
            );
            assert_eq!(fig["fit_in_force"]["temperature"].as_f64(), (t != 1.0).then_some(2.0));
            assert!(fig["fit_here"].is_null(), "six answers are too few for a fit");
        }
        // Laya's read_only written out: answers 0.9 yes, 0.7 no, 0.6 yes, 0.8 no, 0.55 yes, 0.7 yes
        // against yes, no, yes, no, yes, no: 5 of 6; at 0.7 covered 0.9, 0.7, 0.8, 0.7 (3 of 4 right).
        if engine == "laya" {
            let ro = &routing["questions"][0];
            assert!(close(&ro["accuracy"], 5.0 / 6.0) && close(&ro["off"]["coverage"], 4.0 / 6.0), "{ro}");
            assert!(close(&ro["off"]["accuracy_at_threshold"], 0.75), "{ro}");
            // Softened at T = 2, 0.9 -> 0.75, 0.8 -> 0.667, 0.7 -> 0.604: only 0.9 clears 0.7.
            assert!(close(&ro["on"]["coverage"], 1.0 / 6.0) && close(&ro["on"]["accuracy_at_threshold"], 1.0), "{ro}");
            assert_eq!(ro["fit_in_force"]["origin"], "local");
        }
        // The tier: the rule on each engine's answers against the labelled tier.
        let tiers = &routing["tiers"];
        let picks: Vec<&str> = ITEMS
            .iter()
            .map(|i| {
                let p = if engine == "laya" { i.laya } else { i.von };
                rule(p.map(|x| x >= 0.5))
            })
            .collect();
        let agree = ITEMS.iter().zip(&picks).filter(|(i, p)| i.tier == **p).count();
        // Laya: haiku, opus, sonnet (opus labelled), sonnet, haiku (sonnet labelled), sonnet: 4 of 6.
        // Von: sonnet (haiku labelled), opus, opus, sonnet, sonnet, opus (sonnet labelled): 4 of 6.
        assert_eq!(agree, 4);
        assert!(close(&tiers["rule_on_engine"]["agreement"], agree as f64 / 6.0), "{tiers}");
        assert_eq!(tiers["rule_on_engine"]["picked"], 6);
        // The labels themselves give the labelled tier every time but the review item's read_only,
        // which the rule does not look at: 6 of 6.
        assert!(close(&tiers["rule_on_labels"], 1.0), "{tiers}");
        assert_eq!(tiers["best_constant"], json!({"tier": "sonnet", "agreement": 0.5}));
        assert!(tiers["tier_head"].is_null(), "no trained heads, no tier head");
        // The hint: the answers that decided the tier at 0.7 or more. With the default rule, design
        // yes is decided by design alone; review yes by design and review; read_only and specified
        // by all four; the default by design, review and the surer failed one of read_only and
        // specified.
        let clears = |p: [f64; 4], t_ro: f64| {
            let sure = |k: usize| {
                let c = p[k].max(1.0 - p[k]);
                let t = if k == 0 { t_ro } else { 1.0 };
                c.powf(1.0 / t) / (c.powf(1.0 / t) + (1.0 - c).powf(1.0 / t))
            };
            let yes = |k: usize| p[k] >= 0.5;
            let deciding: Vec<usize> = if yes(1) {
                vec![1]
            } else if yes(2) {
                vec![1, 2]
            } else if yes(0) && yes(3) {
                vec![0, 1, 2, 3]
            } else {
                let failed: Vec<usize> = [0, 3].into_iter().filter(|k| !yes(*k)).collect();
                let surest = *failed.iter().max_by(|a, b| sure(**a).total_cmp(&sure(**b))).unwrap();
                vec![1, 2, surest]
            };
            deciding.iter().all(|k| sure(*k) >= 0.7)
        };
        for (side, t_ro) in [("off", 1.0), ("on", if engine == "laya" { 2.0 } else { 1.0 })] {
            let hinted: Vec<bool> = ITEMS
                .iter()
                .zip(&picks)
                .filter(|(i, _)| clears(if engine == "laya" { i.laya } else { i.von }, t_ro))
                .map(|(i, p)| i.tier == *p)
                .collect();
            let c = &tiers["rule_on_engine"][side];
            assert!(close(&c["coverage"], hinted.len() as f64 / 6.0), "{engine} {side}: {c}");
            let want = (!hinted.is_empty()).then(|| hinted.iter().filter(|a| **a).count() as f64 / hinted.len() as f64);
            assert_eq!(c["agreement"].as_f64(), want, "{engine} {side}: {c}");
        }
        // The commands, at the gateway's threshold 0.6.
        let d = &e["sets"][1]["questions"][0];
        assert_eq!(d["question"], "Is this shell command destructive?");
        let p: Vec<f64> = COMMANDS.iter().map(|c| if engine == "laya" { c.2 } else { c.3 }).collect();
        let l: Vec<bool> = COMMANDS.iter().map(|c| c.1).collect();
        let h = by_hand(&p, &l, 0.6, 1.0);
        assert!(close(&d["accuracy"], h.accuracy) && close(&d["off"]["ece"], h.ece), "{d}");
        assert!(close(&d["off"]["coverage"], h.coverage) && close(&d["auroc"], h.auroc), "{d}");
        assert!(e["sets"][1]["tiers"].is_null());
        // Latency: every decision waits for the fake's delay at least.
        let delay = if engine == "laya" { LAYA_DELAY } else { VON_DELAY }.as_secs_f64() * 1000.0;
        for set in e["sets"].as_array().unwrap() {
            assert!(set["latency"]["p50_ms"].as_f64().unwrap() >= delay, "{set}");
            assert!(set["latency"]["p95_ms"].as_f64().unwrap() >= set["latency"]["p50_ms"].as_f64().unwrap());
            assert_eq!(set["latency"]["decisions"], set["items"]);
        }
        // Pooled: 24 feature answers and 4 commands.
        let right: usize = (0..4)
            .map(|q| {
                ITEMS
                    .iter()
                    .filter(|i| ((if engine == "laya" { i.laya[q] } else { i.von[q] }) >= 0.5) == i.labels[q])
                    .count()
            })
            .sum::<usize>()
            + COMMANDS.iter().filter(|c| ((if engine == "laya" { c.2 } else { c.3 }) >= 0.5) == c.1).count();
        assert_eq!(e["overall"]["answered"], 28);
        assert!(close(&e["overall"]["accuracy"], right as f64 / 28.0), "{engine}: {right}");
    }
    check_svg(&std::fs::read_to_string(&svg).unwrap(), engines);
    renders_as_png(&svg);
    if std::env::var_os("STUDY_DUMP").is_some() {
        std::fs::copy(&svg, "/tmp/study-fakes.svg").unwrap();
    }
}

/// The chart's points, parsed back: one per engine, at its accuracy and median latency on the
/// chart's axes (log scale across), labelled; and a reliability panel per engine.
fn check_svg(doc: &str, engines: &[Value]) {
    assert!(doc.starts_with("<svg") && doc.trim_end().ends_with("</svg>"));
    let attr = |el: &str, name: &str| -> f64 {
        let re = regex::Regex::new(&format!(r#"\b{name}="([^"]*)""#)).unwrap();
        re.captures(el).unwrap_or_else(|| panic!("{name} in {el}"))[1].parse().unwrap()
    };
    let chart = regex::Regex::new(r#"<rect class="chart"[^>]*>"#).unwrap().find(doc).expect("the chart").as_str();
    let (left, top, w, h) = (attr(chart, "x"), attr(chart, "y"), attr(chart, "width"), attr(chart, "height"));
    let (x0, x1) = (attr(chart, "data-x-min-ms"), attr(chart, "data-x-max-ms"));
    let (y0, y1) = (attr(chart, "data-y-min"), attr(chart, "data-y-max"));
    let points: Vec<&str> =
        regex::Regex::new(r#"<circle class="engine"[^>]*>"#).unwrap().find_iter(doc).map(|m| m.as_str()).collect();
    assert_eq!(points.len(), engines.len(), "one point per engine");
    for (p, e) in points.iter().zip(engines) {
        let name = format!("{}/{}", e["provider"].as_str().unwrap(), e["model"].as_str().unwrap());
        assert!(p.contains(&format!("data-engine=\"{name}\"")), "{p}");
        let ms = e["overall"]["latency"]["p50_ms"].as_f64().unwrap();
        let acc = e["overall"]["accuracy"].as_f64().unwrap();
        // The axes are whole decades around the latencies, and reach down below the accuracies.
        assert!(x0 <= ms && ms <= x1 && (x0.log10().fract()).abs() < 1e-9, "{x0} {ms} {x1}");
        assert!(y0 <= acc && y1 == 1.0);
        let cx = left + (ms.log10() - x0.log10()) / (x1.log10() - x0.log10()) * w;
        let cy = top + (1.0 - (acc - y0) / (y1 - y0)) * h;
        assert!((attr(p, "cx") - cx).abs() < 0.01 && (attr(p, "cy") - cy).abs() < 0.01, "{p} vs ({cx}, {cy})");
        assert!(doc.contains(&format!(">{name} <tspan")), "the point is labelled");
        assert!(doc.contains(&format!("font-weight=\"bold\">{name}</text>")), "a reliability panel for {name}");
    }
}

/// The picture renders: librsvg (Debian's rsvg-convert, what GNOME and many browsers' thumbnails
/// use) parses the whole document and draws it to a PNG. Skipped, loudly, where it is not installed.
fn renders_as_png(svg: &std::path::Path) {
    let png = svg.with_extension("png");
    match std::process::Command::new("rsvg-convert").arg("-o").arg(&png).arg(svg).output() {
        Ok(out) => {
            assert!(out.status.success(), "rsvg-convert: {}", String::from_utf8_lossy(&out.stderr));
            let bytes = std::fs::read(&png).unwrap();
            assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 10_000, "{} bytes", bytes.len());
        }
        Err(e) => {
            crate::support::skip_loudly(&format!("rendering the study's SVG: rsvg-convert: {e}"));
        }
    }
}

/// Everything under `dir`, with each file's bytes, so that a test can tell that nothing changed.
fn tree(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.display().to_string(), std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn study_is_read_only_and_says_what_it_left_out() {
    let s = study();
    // von goes down: left out, said so; laya is studied.
    let mut env = s.env;
    env.set_env("SYSTEM1_VON_ENDPOINT", &format!("http://127.0.0.1:{}", crate::support::fake_http::free_port()));
    let before = tree(&env.home);
    let out = env.run(&["study", "--set", &s.routing], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(tree(&env.home), before, "nothing in the home, the install dir or the config changed");
    // laya's tables, the tier block and the pooled table, as a person reads them; von left out.
    // (A latency's column is padded to its width, which the time filter hides.)
    let text = stdout(&out);
    let mut settings = crate::support::snapshots(&env);
    settings.add_filter(r" +\[TIME\] ms", " [TIME] ms");
    settings.bind(|| insta::assert_snapshot!(text, @r#"
        Study of 1 engine on [ROOT]/routing.jsonl (6 items).
        Each item is asked once with calibration off; "on" applies the fit in force to the same answers. Nothing is written.

        == laya/typed-decisions ==
        [ROOT]/routing.jsonl: 6 items, 0 failed; latency per decision p50 [TIME] ms, p95 [TIME] ms
                                                       calibration off               calibration on                           
          question      answered accuracy AUROC      ECE  cov@0.70  acc@0.70      ECE  cov@0.70  acc@0.70   fit in force      fit on this set
          read_only          6/6    83.3%  0.78    0.125     66.7%     75.0%    0.217     16.7%    100.0%   T 2.000 local     too few answers (< 20)
          design             6/6   100.0%  1.00    0.250     83.3%    100.0%    0.250     83.3%    100.0%   none              too few answers (< 20)
          review             6/6    83.3%  1.00    0.025     83.3%    100.0%    0.025     83.3%    100.0%   none              too few answers (< 20)
          specified          6/6    83.3%  1.00    0.117     66.7%    100.0%    0.117     66.7%    100.0%   none              too few answers (< 20)
          The tier, against the labelled tier of 6 items (a hint needs the answers that decided it at 0.70 or more):
            rule on the engine's answers           66.7%  (6 with four answers); hint off: 66.7% of items, 100.0% agree; on: 50.0% of items, 100.0% agree
            rule on the labels (its ceiling)      100.0%  (6 with all four labels)
            best constant tier (sonnet)            50.0%
          Each rule on the engine's answers:
            rule                                         decided   agree  hinted   agree
            1: design -> opus                                  1  100.0%       1  100.0%
            2: review -> opus                                  0     n/a       0     n/a
            3: read_only and specified -> haiku                2   50.0%       1  100.0%
            default (no rule matched) -> sonnet                3   66.7%       1  100.0%

        Left out:
          von: not answering its health probe: von at http://127.0.0.1:[PORT]: connection refused: is the engine running?

        Side by side, every question pooled:
          engine                           answered  accuracy  p50 latency  p95 latency  ECE off -> on
          laya/typed-decisions                   24     87.5% [TIME] ms [TIME] ms  0.129 -> 0.152
        "#));
    // Only von named, and down: nothing to study is an error that says why.
    let out = env.run(&["study", "--providers", "von", "--set", &s.routing], "");
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains("no engine to study (von: not answering its health probe"), "{}", stderr(&out));
}

#[test]
fn bad_arguments_are_usage_errors() {
    let s = study();
    let bad = s.env.root.join("bad.jsonl");
    write(
        &bad,
        "{\"prompt\": \"Explain it\", \"tier\": \"haiku\"}\n{\"prompt\": \"x\", \"labels\": {\"vibes\": true}}\n",
    );
    for (args, says) in [
        (vec!["study", "--providers", "nonsense"], "unknown provider"),
        (vec!["study", "--set", bad.to_str().unwrap()], "bad.jsonl line 2"),
        (vec!["study", "--set", "/nonexistent/set.jsonl"], "cannot read /nonexistent/set.jsonl"),
        (vec!["study", "--set", "log"], "no entry with feature labels"),
    ] {
        let out = s.env.run(&args, "");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

/// Ctrl-C in the middle of a run ends it and leaves nothing behind: no picture, no temp file,
/// nothing changed in the install dir.
#[cfg(unix)]
#[test]
fn an_interrupted_study_leaves_nothing_behind() {
    let slow = FakeServer::start(|r: &Request| {
        if r.path == "/v1/systemone" {
            std::thread::sleep(Duration::from_millis(300));
        }
        laya(r)
    });
    let mut s = study();
    s.env.set_env("SYSTEM1_LAYA_ENDPOINT", &slow.url());
    let out_dir = s.env.root.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let before = tree(&s.env.home);
    let svg = out_dir.join("study.svg");
    let mut cmd = s.env.command(&["study", "--providers", "laya", "--set", &s.routing, "--svg", svg.to_str().unwrap()]);
    cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    // A shell without job control starts its background commands with SIGINT ignored, and an
    // ignored signal stays ignored across exec: run under such a shell (`cmd &` in a script, as a
    // CI runner may), the study would never see this Ctrl-C. Give the child the default action.
    #[allow(unsafe_code, reason = "pre_exec runs between fork and exec")]
    // SAFETY: signal(2) is async-signal-safe, and nothing else runs in the forked child.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let waited = std::time::Instant::now();
    while slow.requests_to("/v1/systemone").is_empty() {
        assert!(waited.elapsed() < crate::support::CUT_OFF, "the study never asked the engine");
        std::thread::sleep(Duration::from_millis(10));
    }
    let kill = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert!(!status.success(), "interrupted: {status:?}");
    assert!(slow.requests_to("/v1/systemone").len() < ITEMS.len(), "it stopped before the end");
    assert_eq!(tree(&out_dir), Vec::new(), "no picture and no temp file");
    assert_eq!(tree(&s.env.home), before);
}

/// The local engine's shipped heads were fitted on the seed sets: on seed items its answers are
/// replaced by held-out ones (and the output says so, with how many items were seen); on new
/// prompts they are its own. Its embedding also gives the direct tier head.
#[test]
fn the_local_engine_is_cross_validated_where_its_heads_were_fitted() {
    let Some(dir) = crate::local_engine::model_dir() else { return };
    let env = TestEnv::new();
    env.write_config(&format!("[gateway]\nprovider = \"local\"\n[providers.local]\nmodel_dir = {dir:?}\n"));
    let seeds = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/calibration/routing.jsonl")).unwrap();
    let seeds: Vec<&str> = seeds.lines().collect();
    // 24 seed prompts (each feature labelled both ways among them, three tiers).
    let seen = env.root.join("seen.jsonl");
    write(&seen, &seeds[..24].iter().map(|l| format!("{l}\n")).collect::<String>());
    // Two seed prompts and four new ones.
    let new: Vec<String> = [
        (
            "Find where the retry budget is read in the HTTP client and list each call site",
            [true, false, false, true],
            "haiku",
        ),
        (
            "Design the storage layout for per-tenant audit logs that we keep for seven years",
            [false, true, false, false],
            "opus",
        ),
        (
            "Review my change to the session cache for races and tell me what you would fix",
            [true, false, true, false],
            "opus",
        ),
        (
            "Rename the module util/strings.rs to util/text.rs and update every import of it",
            [false, false, false, true],
            "haiku",
        ),
    ]
    .iter()
    .map(|(prompt, l, tier)| {
        let labels: serde_json::Map<String, Value> =
            FEATURES.iter().zip(l).map(|(f, l)| (f.to_string(), json!(l))).collect();
        format!("{}\n", json!({"prompt": prompt, "labels": labels, "tier": tier}))
    })
    .collect();
    let mixed = env.root.join("mixed.jsonl");
    write(&mixed, &format!("{}\n{}\n{}", seeds[30], seeds[31], new.concat()));
    let fresh = env.root.join("fresh.jsonl");
    write(&fresh, &new.concat());
    let args =
        ["study", "--set", seen.to_str().unwrap(), "--set", mixed.to_str().unwrap(), "--set", fresh.to_str().unwrap()];
    let out = env.run(&[&args[..], &["--json"]].concat(), "");
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let e = &v["engines"][0];
    assert_eq!((e["provider"].as_str(), e["model"].as_str()), (Some("local"), Some("all-MiniLM-L6-v2")), "{v}");
    let how = "cross-validated: leave-one-out weights, temperature fitted on the other 9 of 10 folds";
    let sets = e["sets"].as_array().unwrap();
    assert_eq!(sets[0]["cross_validated"], format!("{how}: the engine's heads were fitted on this set"));
    assert_eq!(sets[1]["cross_validated"], format!("{how}: the engine's heads were fitted on 2 of these 6 items"));
    assert!(sets[2]["cross_validated"].is_null(), "new prompts: the engine's own answers");
    for (set, n) in sets.iter().zip([24, 6, 4]) {
        assert_eq!(set["failed"], 0, "{set}");
        for q in set["questions"].as_array().unwrap() {
            assert_eq!((q["labelled"].as_u64(), q["answered"].as_u64()), (Some(n), Some(n)), "{q}");
        }
        let head = &set["tiers"]["tier_head"];
        assert_eq!(head["answered"].as_u64(), Some(n), "a tier head on every set: {set}");
    }
    // The choice of rule among the candidates, held out on the 24 seed prompts' ten folds.
    let choice = &sets[0]["tiers"]["rule_choice"];
    assert_eq!((choice["items"].as_u64(), choice["folds"].as_u64()), (Some(24), Some(10)), "{choice}");
    assert_eq!(choice["chosen_per_fold"].as_array().map(Vec::len), Some(10), "{choice}");
    assert_eq!(choice["each"].as_array().map(Vec::len), Some(6), "{choice}");
    assert_eq!(choice["each"][0][0], json!({"rules": "configured", "head_first": false}), "{choice}");
    assert!(sets[1]["tiers"]["rule_choice"].is_null(), "6 items: too few for ten folds");
    // On the new prompts the tier head is the one the seed set gives (3 of 4 right here): fitted
    // on these four prompts alone, as it was, it agreed on none.
    let head = &sets[2]["tiers"]["tier_head"];
    assert!(head["agreement"].as_f64().is_some_and(|a| a >= 0.75), "{head}");
    // A person reads the same (on the small set alone: every item costs two passes of the model).
    let out = env.run(&["study", "--set", mixed.to_str().unwrap()], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("  Answers {how}: the engine's heads were fitted on 2 of these 6 items.\n")),
        "{text}"
    );
    assert!(text.contains("direct tier head (held out)"), "{text}");
}
