//! `system1 report --html FILE` and `--by day|week --svg FILE` on the report's fixture history
//! (tests/it/report.rs) with its routing log: the page opened in real headless Chromium (Debian's
//! `chromium`, which `scripts/test` installs): what it renders is no blank page, it prints to PDF,
//! nothing in it names a URL to fetch, it holds no prompt text, and every figure it shows equals
//! the `--json` output it cites. The charts over time rendered by librsvg as the study's are.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::report::{fixtures, report_json, routing_log};
use crate::support::{self, TestEnv, stderr};

/// Every `data-json="src:/pointer" data-value="v"` pair in `html`.
fn cited(html: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find("data-json=\"") {
        rest = &rest[at + 11..];
        let end = rest.find('"').unwrap();
        let (src, pointer) = rest[..end].split_once(':').unwrap();
        let v = rest.find("data-value=\"").unwrap();
        let tail = &rest[v + 12..];
        let value = tail[..tail.find('"').unwrap()].replace("&quot;", "\"");
        out.push((src.to_string(), pointer.to_string(), value));
    }
    out
}

/// Each cited figure against the JSON of its source; how many were checked.
fn figures_equal_the_json(html: &str, sources: &HashMap<&str, Value>) -> usize {
    let cells = cited(html);
    for (src, pointer, value) in &cells {
        let json = sources.get(src.as_str()).unwrap_or_else(|| panic!("no source {src}"));
        let want = json.pointer(pointer).unwrap_or_else(|| panic!("{src}:{pointer} not in the JSON"));
        let got: Value = serde_json::from_str(value).unwrap();
        match (want.as_f64(), got.as_f64()) {
            (Some(w), Some(g)) => assert!((w - g).abs() < 1e-12, "{src}:{pointer}: page {g}, --json {w}"),
            _ => assert_eq!(&got, want, "{src}:{pointer}"),
        }
    }
    cells.len()
}

fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("SYSTEM1_TEST_CHROMIUM").map(PathBuf::from).or_else(|| {
        std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).map(|d| d.join("chromium")).find(|c| c.exists()))
    });
    if found.is_none() {
        support::missing_test_dep(
            "report_html: chromium is missing: run scripts/test",
            "report_html: the page in headless Chromium (chromium is not installed; run scripts/test)",
        );
    }
    found
}

/// Headless Chromium on `page` with `args`, in a profile and a HOME of its own under `root`.
fn run_chromium(exe: &Path, root: &Path, args: &[String], page: &Path) -> std::process::Output {
    let profile = root.join(format!("chromium-profile-{}", args.len()));
    let home = root.join("chromium-home");
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(exe)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .output()
        .expect("run chromium");
    assert!(out.status.success(), "chromium {args:?}: {}", stderr(&out));
    out
}

#[test]
fn the_page_shows_every_figure_as_the_json_has_it_and_renders_in_chromium() {
    let env = TestEnv::new();
    fixtures(&env.claude_dir);
    routing_log(&env.install_dir.join("logs/routing.jsonl"));
    let page = env.root.join("report.html");
    let out = env.run(&["report", "--html", page.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // Nothing to fetch: no URL at all, no script, and no prompt text.
    for never in ["http:", "https:", "//", "<script", "<link", "<img", "@import", "url(", "SECRET"] {
        assert!(!html.contains(never), "{never:?} in the page");
    }
    assert_eq!(html.matches("<svg").count(), 2, "the summary chart and the one by day");
    for section in [
        "id=\"summary\"",
        "id=\"charts\"",
        "id=\"by-day\"",
        "id=\"by-session\"",
        "id=\"by-project\"",
        "id=\"by-agent\"",
    ] {
        assert!(html.contains(section), "{section} missing");
    }

    let mut sources: HashMap<&str, Value> = HashMap::new();
    sources.insert("report", report_json(&env, &[]));
    for view in ["day", "session", "project", "agent"] {
        sources.insert(view, report_json(&env, &["--by", view]));
    }
    let checked = figures_equal_the_json(&html, &sources);
    assert!(checked > 60, "only {checked} figures cited");
    // The realised savings as the page shows them, beside the JSON's +$0.0353.
    assert!(html.contains(r#"data-json="report:/savings/realised_usd" data-value="0.03525"#), "{html}");
    assert!(html.contains(">+$0.0353</td>"), "{html}");

    let Some(exe) = chromium() else { return };
    // The page as the browser built it: the same figures, all of them.
    let dom = String::from_utf8(run_chromium(&exe, &env.root, &["--dump-dom".into()], &page).stdout).unwrap();
    assert_eq!(figures_equal_the_json(&dom, &sources), checked, "the browser dropped some of the page");
    // A screenshot of it is no blank page: beside one of an empty page of the same size, it holds
    // far more (a PNG of one colour compresses to almost nothing).
    let shot = |name: &str, html_file: &Path| {
        let png = env.root.join(name);
        run_chromium(
            &exe,
            &env.root,
            &[format!("--screenshot={}", png.display()), "--window-size=1000,2400".into()],
            html_file,
        );
        let bytes = std::fs::read(&png).unwrap();
        assert!(bytes.starts_with(b"\x89PNG"), "{name} is no PNG");
        bytes.len()
    };
    let blank = env.root.join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let (ours, empty) = (shot("page.png", &page), shot("blank.png", &blank));
    assert!(ours > empty * 10, "the screenshot looks blank: {ours} bytes against {empty} for an empty page");
    // It prints.
    let pdf = env.root.join("report.pdf");
    run_chromium(
        &exe,
        &env.root,
        &[format!("--print-to-pdf={}", pdf.display()), "--no-pdf-header-footer".into()],
        &page,
    );
    let bytes = std::fs::read(&pdf).unwrap();
    assert!(bytes.starts_with(b"%PDF-") && bytes.len() > 10_000, "{} bytes of PDF", bytes.len());
}

/// The chart over time renders (librsvg, as the study's chart is checked), and draws each sign in
/// its colour: a day whose followed hints cost money is a red bar, not a green one.
#[test]
fn the_chart_over_time_draws_cost_by_tier_savings_and_reach_per_period() {
    let env = TestEnv::new();
    fixtures(&env.claude_dir);
    for view in ["day", "week"] {
        let svg = env.root.join(format!("{view}.svg"));
        let out = env.run(&["report", "--by", view, "--timezone", "UTC", "--svg", svg.to_str().unwrap()], "");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.contains(&format!(">System-1 by {view}<")), "{text}");
        for part in [">Cost by tier<", ">Savings<", ">Hint reach<"] {
            assert!(text.contains(part), "{part} missing in {view}");
        }
        assert!(!text.contains("SECRET"));
        let png = env.root.join(format!("{view}.png"));
        match Command::new("rsvg-convert").arg("-o").arg(&png).arg(&svg).output() {
            Ok(out) => assert!(out.status.success(), "rsvg-convert: {}", stderr(&out)),
            Err(e) => support::skip_loudly(&format!("rendering the chart over time: rsvg-convert: {e}")),
        }
    }
    let day = std::fs::read_to_string(env.root.join("day.svg")).unwrap();
    // 2026-11-10: tu1 and tu4 followed their hints and saved $0.03525, drawn green.
    assert!(day.contains(r##"fill="#2a9d8f"><title>2026-11-10 realised +$0.0353</title>"##), "{day}");
    // Both days, and the tiers that ran.
    for title in ["<title>2026-11-10 opus $", "<title>2026-11-20 sonnet $", "<title>2026-11-10 haiku $"] {
        assert!(day.contains(title), "{title} missing");
    }
    // Only periods can be drawn over time.
    let out = env.run(&["report", "--by", "session", "--svg", env.root.join("s.svg").to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(2));
}
