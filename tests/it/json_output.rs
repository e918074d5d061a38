//! `--json` on `doctor`, `toggle status`, `config show` and `smoke`: one JSON object each, in the
//! shape the docs give, saying what the text says, with the same exit code.

use serde_json::Value;

use crate::support::{self, TestEnv, stderr, stdout};

fn json_of(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", stdout(o), stderr(o)))
}

/// Each finding of the text is one entry, in order, with its level and fix; `failed` and the exit
/// code agree with the text's.
#[test]
fn doctor_json_lists_the_findings_the_text_shows_with_the_same_exit_code() {
    // The binary is not installed here: a FAIL, so the exit code is 1 both ways.
    let env = TestEnv::with_mock("");
    let text = env.run(&["doctor"], "");
    let json = env.run(&["doctor", "--json"], "");
    assert_eq!(text.status.code(), Some(1), "{}", stdout(&text));
    assert_eq!(json.status.code(), text.status.code());
    let v = json_of(&json);
    let findings = v["findings"].as_array().unwrap();
    let lines = stdout(&text);
    let tags: Vec<&str> =
        lines.lines().filter_map(|l| l.get(..4).filter(|t| ["ok  ", "warn", "FAIL"].contains(t))).collect();
    assert_eq!(findings.len(), tags.len(), "{v}");
    for (f, tag) in findings.iter().zip(&tags) {
        let level = f["level"].as_str().unwrap();
        assert_eq!(level, tag.trim().to_lowercase(), "{f}");
        assert!(f["what"].is_string() && f.get("fix").is_some(), "{f}");
        assert_eq!(f["fix"].is_null(), level == "ok", "{f}");
    }
    assert!(findings.iter().any(|f| f["level"] == "fail" && f["what"].as_str().unwrap().contains("not installed")));
    assert_eq!(v["failed"], true);
    assert_eq!(v["problems"], findings.iter().filter(|f| f["level"] != "ok").count());

    // Installed, nothing fails: 0 both ways.
    let out = env.run(&["install", "--no-register"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let json = env.run(&["doctor", "--json"], "");
    let v = json_of(&json);
    assert_eq!(
        (json.status.code(), &v["failed"]),
        (env.run(&["doctor"], "").status.code(), &Value::Bool(false)),
        "{v}"
    );
    assert_eq!(json.status.code(), Some(0), "{v}");
}

#[test]
fn toggle_status_json_shows_the_pause_the_modes_the_health_and_the_tally() {
    let env = TestEnv::with_mock("[routing]\nenabled = true\nhint = true\nenforce = \"fill\"\n");
    assert_eq!(env.decide_json(&["-q", "Ship it?"]).1, 0);
    let o = env.run(&["toggle", "status", "--json"], "");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_of(&o);
    assert_eq!(
        (v["paused"].as_bool(), &v["paused_since"], v["config_ok"].as_bool()),
        (Some(false), &Value::Null, Some(true)),
        "{v}"
    );
    assert_eq!(v["engines"], serde_json::json!(["mock"]));
    assert_eq!((v["routing_hint"].as_str(), v["skill_picker"].as_str()), (Some("hints"), Some("off")), "{v}");
    assert_eq!(v["spawn_model"], serde_json::json!({"enforce": "fill", "active": true}));
    assert_eq!(v["engine_health"]["status"], "ok", "the system1_health shape: {v}");
    assert_eq!(v["engine_health"]["providers"][0]["name"], "mock");
    assert_eq!(v["decisions_today"], serde_json::json!({"total": 1, "by_status": {"decided": 1}}));

    assert!(env.run(&["toggle", "off"], "").status.success());
    let v = json_of(&env.run(&["toggle", "status", "--json"], ""));
    assert_eq!(v["paused"], true);
    assert!(v["paused_since"].is_string(), "{v}");
    assert_eq!((v["routing_hint"].as_str(), v["spawn_model"]["active"].as_bool()), (Some("off"), Some(false)), "{v}");

    let o = env.run(&["toggle", "on", "--json"], "");
    assert_eq!(o.status.code(), Some(2), "--json is for status only");
    assert!(stderr(&o).contains("toggle status"), "{}", stderr(&o));

    let broken = TestEnv::with_mock("timeout_s = 0\n");
    let v = json_of(&broken.run(&["toggle", "status", "--json"], ""));
    assert_eq!((v["config_ok"].as_bool(), &v["engine_health"]), (Some(false), &Value::Null), "{v}");
    assert!(v["config_errors"][0].as_str().unwrap().contains("timeout_s"), "{v}");
}

/// Every line of the text's settings is one entry with its source; the environment's names its
/// variable.
#[test]
fn config_show_json_gives_each_setting_its_value_and_source() {
    let mut env = TestEnv::with_mock("timeout_s = 2.0\n");
    env.set_env("SYSTEM1_MIN_CONFIDENCE", "0.7");
    let o = env.run(&["config", "show", "--json"], "");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_of(&o);
    assert_eq!((v["file"].as_str(), v["file_read"].as_bool()), (env.config.to_str(), Some(true)), "{v}");
    assert_eq!(v["engines"], serde_json::json!(["mock"]));
    let settings = v["settings"].as_array().unwrap();
    let text = stdout(&env.run(&["config", "show"], ""));
    assert_eq!(settings.len(), text.lines().filter(|l| !l.starts_with('#')).count(), "{v}");
    let get = |key: &str| settings.iter().find(|s| s["key"] == key).unwrap_or_else(|| panic!("{key}: {v}"));
    assert_eq!(get("gateway.provider")["value"], "\"mock\"");
    assert_eq!(get("gateway.timeout_s")["source"], "file");
    let env_set = get("gateway.min_confidence");
    assert_eq!(
        (env_set["source"].as_str(), env_set["from"].as_str()),
        (Some("env"), Some("SYSTEM1_MIN_CONFIDENCE")),
        "{env_set}"
    );
    let default = get("gateway.log_level");
    assert_eq!((default["source"].as_str(), default["is_default"].as_bool()), (Some("default"), Some(true)));
    assert_eq!(v["errors"], serde_json::json!([]));
}

#[test]
fn smoke_json_gives_each_step_and_the_verdict_with_the_same_exit_code() {
    let env = TestEnv::with_mock("");
    let o = env.run(&["smoke", "--bin", support::BIN, "-q", "Which?", "-o", "red", "-o", "green", "--json"], "");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_of(&o);
    let steps: Vec<(&str, &str)> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["step"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        steps,
        [
            ("launch", "ok"),
            ("initialize", "ok"),
            ("tools/list", "ok"),
            ("system1_health", "ok"),
            ("system1_decide", "ok")
        ],
        "{v}"
    );
    assert_eq!((v["verdict"].as_str(), v["binary"].as_str()), (Some("ok"), Some(support::BIN)), "{v}");
    assert!(v["steps"][4]["detail"].as_str().unwrap().starts_with("\"red\""), "{v}");

    let down = TestEnv::with_mock("[providers.mock]\ndown = true\n");
    let o = down.run(&["smoke", "--bin", support::BIN, "--json"], "");
    assert_eq!(o.status.code(), Some(5), "{}", stdout(&o));
    let v = json_of(&o);
    assert_eq!((v["verdict"].as_str(), v["steps"][3]["status"].as_str()), (Some("engine_down"), Some("warn")), "{v}");
    assert!(!v["fixes"].as_array().unwrap().is_empty(), "{v}");

    let missing = env.root.join("no-such-system1");
    let o = env.run(&["smoke", "--bin", missing.to_str().unwrap(), "--json"], "");
    assert_eq!(o.status.code(), Some(1));
    let v = json_of(&o);
    assert_eq!((v["verdict"].as_str(), v["steps"][0]["status"].as_str()), (Some("failed"), Some("fail")), "{v}");
    assert!(v["fixes"][0].as_str().unwrap().contains("--bin"), "{v}");
}
