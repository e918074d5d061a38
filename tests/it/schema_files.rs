//! The committed schema files are what the binary generates, and they describe every field of the
//! real response.

use crate::support::{TestEnv, stdout};
use serde_json::{Value, json};

fn committed(name: &str) -> Value {
    let path = format!("{}/schema/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("schema file")).expect("schema JSON")
}

/// Every field of `value` is a property of `schema` and required by it.
fn assert_named_and_required(schema: &Value, value: &Value, what: &str) {
    let props = schema["properties"].as_object().unwrap_or_else(|| panic!("{what}: no properties in {schema}"));
    let required: Vec<&str> =
        schema["required"].as_array().expect("required").iter().filter_map(Value::as_str).collect();
    for key in value.as_object().unwrap_or_else(|| panic!("{what} is not an object: {value}")).keys() {
        assert!(props.contains_key(key), "{what} field {key} missing from the schema");
        assert!(required.contains(&key.as_str()), "{what} field {key} not required by the schema");
    }
}

#[test]
fn committed_schemas_match_the_binary() {
    let env = TestEnv::new();
    let out_dir = env.root.join("schema");
    let o = env.run(&["schema", "--write", "--dir", out_dir.to_str().expect("utf-8 path")], "");
    assert!(o.status.success(), "{}", stdout(&o));
    for name in ["request.json", "response.json", "health.json", "capabilities.json"] {
        let generated = std::fs::read_to_string(out_dir.join(name)).expect("generated");
        let committed = std::fs::read_to_string(format!("{}/schema/{name}", env!("CARGO_MANIFEST_DIR")))
            .expect("committed schema file");
        assert_eq!(committed, generated, "schema/{name} drifted: run `system1 schema --write`");
    }
}

#[test]
fn response_schema_names_every_field_of_a_real_response() {
    let env = TestEnv::with_mock("");
    let o = env.run(&["decide", "--question", "Ship it?", "--json"], "");
    let resp: Value = serde_json::from_slice(&o.stdout).expect("JSON response");
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{}/schema/response.json", env!("CARGO_MANIFEST_DIR"))).expect("schema"),
    )
    .expect("schema JSON");
    let props = schema["properties"].as_object().expect("properties");
    let required: Vec<&str> =
        schema["required"].as_array().expect("required").iter().filter_map(Value::as_str).collect();
    for key in resp.as_object().expect("object").keys() {
        assert!(props.contains_key(key), "response field {key} missing from the schema");
        assert!(required.contains(&key.as_str()), "response field {key} not required by the schema");
    }
    let attempt_props = schema["properties"]["attempts"]["items"]["properties"].as_object().expect("attempt props");
    for key in resp["attempts"][0].as_object().expect("attempt").keys() {
        assert!(attempt_props.contains_key(key), "attempt field {key} missing from the schema");
    }

    // With stability on, two optional fields join, named by the schema and not required by it (a
    // client of schema "1" that does not know them is unaffected); everything else is as before.
    let env = TestEnv::with_mock("stability = \"fast\"\n");
    let o = env.run(&["decide", "--question", "Ship it?", "--json"], "");
    let with: Value = serde_json::from_slice(&o.stdout).expect("JSON response");
    for key in ["stability", "soft_stability"] {
        assert!(with.get(key).is_some_and(Value::is_number), "{key} in {with}");
        assert!(props.contains_key(key), "{key} missing from the schema");
        assert!(!required.contains(&key), "{key} is optional");
    }
    for key in with.as_object().expect("object").keys().filter(|k| !k.contains("stability")) {
        assert!(required.contains(&key.as_str()), "response field {key} not required by the schema");
    }
    for (key, _) in resp.as_object().expect("object") {
        assert!(with.get(key).is_some(), "{key} is still sent with stability on");
    }
    assert!(resp.get("stability").is_none() && resp.get("soft_stability").is_none(), "absent with stability off");
}

#[test]
fn health_and_capabilities_schemas_name_every_field_of_real_results() {
    let env = TestEnv::with_mock("fallback = [\"mock\"]\n");
    let mut mcp = env.mcp();
    mcp.initialize("2025-06-18");
    let health = mcp.call("system1_health", json!({}));
    let caps = mcp.call("system1_capabilities", json!({}));
    let (health_schema, caps_schema) = (committed("health.json"), committed("capabilities.json"));

    assert_named_and_required(&health_schema, &health, "health");
    assert_eq!(health["providers"].as_array().map(Vec::len), Some(2), "{health}");
    for probe in health["providers"].as_array().expect("probes") {
        assert_named_and_required(&health_schema["properties"]["providers"]["items"], probe, "health probe");
    }

    assert_named_and_required(&caps_schema, &caps, "capabilities");
    // A provider twice in the chain is listed once.
    assert_eq!(caps["provider_chain"], json!(["mock", "mock"]));
    let providers = caps["providers"].as_object().expect("providers");
    assert_eq!(providers.keys().collect::<Vec<_>>(), ["mock"]);
    let entry_schema = &caps_schema["properties"]["providers"]["additionalProperties"];
    assert_named_and_required(entry_schema, &providers["mock"], "capabilities provider");
    let fit_schema = &caps_schema["properties"]["calibration_fits"]["items"];
    let fits = caps["calibration_fits"].as_array().expect("fits");
    assert!(!fits.is_empty(), "shipped fits are listed");
    for fit in fits {
        for key in fit_schema["required"].as_array().expect("required") {
            assert!(fit.get(key.as_str().expect("name")).is_some(), "fit without {key}: {fit}");
        }
    }
    assert_eq!(mcp.close().code(), Some(0));
}

#[test]
fn a_hosted_engine_is_marked_remote_with_its_price_an_optional_field_the_schema_names() {
    // Gemini behind the mock, at its own host: not asked (capabilities asks no engine), only described.
    let env = TestEnv::with_mock("fallback = [\"gemini\"]\n\n[providers.gemini]\nallow_remote = true\n");
    let mut mcp = env.mcp();
    mcp.initialize("2025-06-18");
    let caps = mcp.call("system1_capabilities", json!({}));
    assert_eq!(mcp.close().code(), Some(0));
    let schema = committed("capabilities.json");
    let entry_schema = &schema["properties"]["providers"]["additionalProperties"];
    assert!(entry_schema["properties"]["remote"].is_object(), "remote is named by the schema");
    let required = entry_schema["required"].as_array().expect("required");
    assert!(!required.contains(&json!("remote")), "remote is optional: an engine on this machine has none");

    let gemini = &caps["providers"]["gemini"];
    let remote = &gemini["remote"];
    assert_eq!(remote["host"], "generativelanguage.googleapis.com", "{caps}");
    assert_eq!(remote["usd_per_million_input_tokens"], 0.1, "{remote}");
    assert!(remote["price_source"].as_str().is_some_and(|s| s.contains("Google")), "{remote}");
    let remote_props = entry_schema["properties"]["remote"]["properties"].as_object().expect("remote properties");
    for key in remote.as_object().expect("object").keys() {
        assert!(remote_props.contains_key(key), "remote field {key} missing from the schema");
    }
    assert!(caps["providers"]["mock"].get("remote").is_none(), "the mock runs here: {caps}");
    // The routes say which questions it gets: the mock answers everything first.
    assert_eq!(caps["routes"]["yes_no"], "mock");

    // doctor says the same for people: hosted, what leaves, and what it gets.
    let o = env.run(&["doctor"], "");
    let text = crate::support::stdout(&o);
    let line = text.lines().find(|l| l.contains("gemini: hosted at")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("leave this machine") && line.contains("$0.10 per million input tokens"), "{line}");
    assert!(line.contains("only the questions the engines before it fail on"), "{line}");
}
