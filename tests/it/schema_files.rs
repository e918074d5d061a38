//! The committed schema files are what the binary generates, and they describe every field of the
//! real response.

use crate::support::{TestEnv, stdout};
use serde_json::Value;

#[test]
fn committed_schemas_match_the_binary() {
    let env = TestEnv::new();
    let out_dir = env.root.join("schema");
    let o = env.run(&["schema", "--write", "--dir", out_dir.to_str().expect("utf-8 path")], "");
    assert!(o.status.success(), "{}", stdout(&o));
    for name in ["request.json", "response.json"] {
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
}
