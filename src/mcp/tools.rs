//! The three tools as MCP sees them: their listing and their results.
//!
//! Schemas in the tool list name no `$schema`: they use only keywords that mean the same in JSON
//! Schema draft-07 and 2020-12 , so every client's validator compiles
//! them, whichever draft it defaults to (a test below walks them); MCP reads a schema without
//! `$schema` as 2020-12. The files in `schema/` keep their 2020-12 `$schema`.

use serde_json::{Map, Value, json};

use crate::gateway::{Gateway, Status, request, schema};

/// Handshake-era protocols, newest first; `initialize` echoes the client's version when it is one
/// of these.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Stateless-era protocols (no `initialize`: each request names its version in `_meta`).
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];

/// The reserved `_meta` keys of the stateless era.
pub const VERSION_META_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_INFO_META_KEY: &str = "io.modelcontextprotocol/clientInfo";
const SERVER_INFO_META_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// JSON-RPC error of the stateless era for a protocol version this server does not speak.
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

pub fn server_info() -> Value {
    json!({"name": "system1", "title": "System-1 gateway", "version": crate::gateway::VERSION})
}

pub fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}})
}

/// The server's `instructions` (in `initialize` and `server/discover`). Claude Code puts them in
/// every session's context, so they stay one line: when to reach for `system1_decide`, which Claude
/// Code 2.1.332 otherwise knows by its name alone until it loads the schema (docs/tools.md).
pub const INSTRUCTIONS: &str = "For a quick, low-stakes decision (yes or no, which option, classify, triage), call \
     system1_decide; when it abstains, decide yourself.";

/// The instructions of a chain that answers no free yes/no question: they promise choices only.
pub const CHOICE_INSTRUCTIONS: &str = "For a quick, low-stakes choice (which option, classify, triage), call \
     system1_decide with options; when it abstains, decide yourself.";

/// What the tools offer: everything, or choices only (no engine of the chain answers a free
/// yes/no question; `Gateway::lacks_free_yes_no`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    All,
    ChoicesOnly,
}

impl Offer {
    pub fn of(gateway: &Gateway) -> Self {
        if gateway.lacks_free_yes_no() { Offer::ChoicesOnly } else { Offer::All }
    }

    pub fn instructions(self) -> &'static str {
        match self {
            Offer::All => INSTRUCTIONS,
            Offer::ChoicesOnly => CHOICE_INSTRUCTIONS,
        }
    }
}

/// The answer to `server/discover`: the stateless versions served, capabilities, instructions and
/// identity. Clients that speak only the handshake era never send it; dual-era clients adopt this.
pub fn discover(offer: Offer) -> Value {
    modern_result(
        json!({"supportedVersions": MODERN_VERSIONS, "capabilities": capabilities(), "instructions": offer.instructions()}),
        true,
    )
}

/// A result in the stateless era's shape: `resultType`, the server's identity in `_meta`, and for
/// cacheable results (`tools/list`, `server/discover`) caching hints that allow no reuse.
pub fn modern_result(mut result: Value, cacheable: bool) -> Value {
    if let Value::Object(m) = &mut result {
        m.insert("resultType".into(), json!("complete"));
        if cacheable {
            m.insert("ttlMs".into(), json!(0));
            m.insert("cacheScope".into(), json!("private"));
        }
        m.insert("_meta".into(), json!({SERVER_INFO_META_KEY: server_info()}));
    }
    result
}

/// -32022 for a request naming a version this server does not speak, listing the ones it does
/// (the handshake versions too, so that a dual-era client falls back to `initialize`).
pub fn unsupported_version(id: Value, requested: &Value) -> Value {
    let supported: Vec<&str> = MODERN_VERSIONS.iter().chain(PROTOCOL_VERSIONS.iter()).copied().collect();
    let requested = requested.as_str().map(String::from).unwrap_or_else(|| requested.to_string());
    json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": UNSUPPORTED_PROTOCOL_VERSION,
        "message": format!("protocol version {requested:?} is not supported; supported: {}", supported.join(", ")),
        "data": {"supported": supported, "requested": requested},
    }})
}

/// Tool annotations arrived in 2025-03-26; titles, output schemas and structured results in 2025-06-18.
fn has_annotations(version: &str) -> bool {
    version >= "2025-03-26"
}
fn has_structured(version: &str) -> bool {
    version >= "2025-06-18"
}

/// A schema as the tool list shows it: without `$schema` (see the module comment).
fn tool_schema(mut s: Value) -> Value {
    if let Value::Object(m) = &mut s {
        m.remove("$schema");
    }
    s
}

fn input_schema(s: Value) -> Value {
    let mut s = tool_schema(s);
    if let Value::Object(m) = &mut s {
        m.remove("title");
    }
    s
}

/// Arguments that MCP clients add to every tool for their own use, all of them booleans. Gemini CLI
/// adds `wait_for_previous` (run this call after the ones before it) to every tool's schema, tells
/// its model to set it, and forwards it. A tool never sees them; with a value that is not a boolean
/// (or null) the argument is not the client's, and is refused like any unknown one.
const CONTROL_ARGUMENTS: [&str; 1] = ["wait_for_previous"];

fn is_control(name: &str, value: &Value) -> bool {
    CONTROL_ARGUMENTS.contains(&name) && (value.is_boolean() || value.is_null())
}

fn has_control(arguments: &Value) -> bool {
    arguments.as_object().is_some_and(|m| m.iter().any(|(k, v)| is_control(k, v)))
}

/// The arguments with the clients' control arguments taken off.
fn tool_arguments(arguments: &Value) -> Value {
    match arguments {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, v)| !is_control(k, v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Map<String, Value>>(),
        ),
        other => other.clone(),
    }
}

/// The `_meta` key Claude Code reads a deferred tool's search words from: `ToolSearch` ranks a
/// keyword query by the words of the tool's name, of this hint and of its description, each matched
/// whole, the hint's weighing twice the description's (docs/tools.md).
const SEARCH_HINT_META_KEY: &str = "anthropic/searchHint";

/// One tool as listed: its name (the contract), title, description and search hint.
struct Listed {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    search_hint: &'static str,
}

/// The words a model reaches for when it wants what each tool does, singular and plural, since a
/// query word matches only a whole word ("option" does not match "options").
const TOOLS: [Listed; 3] = [
    Listed {
        name: "system1_decide",
        title: "System-1 quick decision",
        description: "Quick decision from a local System-1 engine: picks which option of `options` fits, or answers yes or no without options, with a calibrated confidence. Use it to classify, triage or choose when the stakes are low; not for reasoning, facts or code. status \"abstained\" means: decide it yourself.",
        search_hint: "quick fast decision, decide: yes or no, true or false, should we, which option, pick or choose one of several options, make a choice, classify, classification, categorize, category, triage, label, with a confidence",
    },
    Listed {
        name: "system1_health",
        title: "System-1 health",
        description: "Health of the System-1 gateway and its engines: ok, degraded, down or paused, with a probe per provider.",
        search_hint: "is the system1 decision engine up: health check, status, down or paused",
    },
    Listed {
        name: "system1_capabilities",
        title: "System-1 capabilities",
        description: "System-1 gateway version, provider chain, limits (max_options), timeout, threshold, calibration fits and the request/response JSON Schemas.",
        search_hint: "system1 decision engine version, providers, limits, threshold and schemas",
    },
];

/// `system1_decide` as a chain that answers no free yes/no question lists it: it promises only
/// choices, says why, and names the fix, in no more words than the full listing.
const DECIDE_CHOICES_ONLY: Listed = Listed {
    name: "system1_decide",
    title: "System-1 quick decision",
    description: "Quick System-1 decision: picks which of `options` fits, with a calibrated confidence, to classify, triage or choose at low stakes. Give `options`: no engine here answers free yes/no questions (fix: a System One server, or `calibrate fit --question`). \"abstained\" means: decide it yourself.",
    search_hint: "quick fast decision, decide: which option, pick or choose one of several options, make a choice, classify, classification, categorize, category, triage, label, with a confidence",
};

pub fn list(version: &str, offer: Offer) -> Value {
    let schemas = [
        (input_schema(schema::request()), tool_schema(schema::response())),
        (schema::no_arguments(), tool_schema(schema::health())),
        (schema::no_arguments(), tool_schema(schema::capabilities())),
    ];
    let list: Vec<Value> = TOOLS
        .iter()
        .map(|t| if offer == Offer::ChoicesOnly && t.name == DECIDE_CHOICES_ONLY.name { &DECIDE_CHOICES_ONLY } else { t })
        .zip(schemas)
        .map(|(tool, (input, output))| {
            let Listed { name, title, description, search_hint } = *tool;
            let mut t = json!({"name": name, "description": description, "inputSchema": input});
            if has_structured(version) {
                t["title"] = json!(title);
                t["outputSchema"] = output;
                t["_meta"] = json!({SEARCH_HINT_META_KEY: search_hint});
            }
            if has_annotations(version) {
                t["annotations"] = json!({"title": title, "readOnlyHint": true, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false});
            }
            t
        })
        .collect();
    json!({"tools": list})
}

/// Runs a tool. `None` means no such tool (a protocol error, not a tool result).
pub fn call(gateway: &Gateway, name: &str, arguments: &Value, version: &str) -> Option<Value> {
    // Copied only to take a control argument off: a decision's context may be large.
    let stripped;
    let arguments = if has_control(arguments) {
        stripped = tool_arguments(arguments);
        &stripped
    } else {
        arguments
    };
    let (structured, is_error) = match name {
        "system1_decide" => {
            let resp = match request::validate(arguments) {
                Ok(req) => gateway.decide(&req),
                Err(invalid) => gateway.refuse(&invalid),
            };
            let is_error = resp.status == Status::Error;
            (serde_json::to_value(&resp).unwrap_or(Value::Null), is_error)
        }
        "system1_health" | "system1_capabilities" if !no_arguments(arguments) => {
            return Some(refusal(name, arguments));
        }
        "system1_health" => (serde_json::to_value(gateway.health()).unwrap_or(Value::Null), false),
        "system1_capabilities" => (serde_json::to_value(gateway.capabilities()).unwrap_or(Value::Null), false),
        _ => return None,
    };
    let text = serde_json::to_string(&structured).unwrap_or_default();
    let mut result = json!({"content": [{"type": "text", "text": text}], "isError": is_error});
    if has_structured(version) {
        result["structuredContent"] = structured;
    }
    Some(result)
}

fn no_arguments(arguments: &Value) -> bool {
    arguments.as_object().is_none_or(Map::is_empty)
}

/// A tool without parameters called with some: a tool execution error, as its input schema
/// (`additionalProperties: false`) says. Only text: the result schema describes a success.
fn refusal(name: &str, arguments: &Value) -> Value {
    let given: Vec<&str> = arguments.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
    let text = format!("invalid_request: {name} takes no arguments; unknown argument(s): {}", given.join(", "));
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keywords tool schemas may use: each means the same in draft-07 and 2020-12 (`items` only
    /// as one schema, `exclusiveMinimum` only as a number). A test walks every tool schema.
    const NEUTRAL_KEYWORDS: [&str; 19] = [
        "type",
        "title",
        "description",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "oneOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "uniqueItems",
        "default",
    ];

    /// Every keyword in `schema` (and the schemas inside it) is one of [`NEUTRAL_KEYWORDS`]; no `$schema`.
    fn check_keywords(path: &str, schema: &Value, bad: &mut Vec<String>) {
        let Value::Object(m) = schema else {
            bad.push(format!("{path}: not an object"));
            return;
        };
        for (k, v) in m {
            let at = format!("{path}/{k}");
            if !NEUTRAL_KEYWORDS.contains(&k.as_str()) {
                bad.push(at.clone());
            }
            match k.as_str() {
                "properties" => {
                    for (name, sub) in v.as_object().into_iter().flatten() {
                        check_keywords(&format!("{at}/{name}"), sub, bad);
                    }
                }
                "items" | "additionalProperties" if v.is_object() => check_keywords(&at, v, bad),
                "oneOf" => {
                    for (i, sub) in v.as_array().into_iter().flatten().enumerate() {
                        check_keywords(&format!("{at}/{i}"), sub, bad);
                    }
                }
                "items" => bad.push(format!("{at}: items must be one schema")),
                "exclusiveMinimum" if !v.is_number() => bad.push(format!("{at}: must be a number")),
                _ => {}
            }
        }
    }

    #[test]
    fn tool_schemas_use_only_keywords_draft_07_and_2020_12_agree_on() {
        for version in PROTOCOL_VERSIONS {
            let list = list(version, Offer::All);
            let mut bad = Vec::new();
            for t in list["tools"].as_array().into_iter().flatten() {
                let name = t["name"].as_str().unwrap_or("?");
                check_keywords(&format!("{name} inputSchema"), &t["inputSchema"], &mut bad);
                if let Some(output) = t.get("outputSchema") {
                    check_keywords(&format!("{name} outputSchema"), output, &mut bad);
                }
            }
            assert!(bad.is_empty(), "{version}: keywords outside the shared set (or a $schema): {bad:?}");
        }
        // The walk finds what it is meant to find.
        let mut bad = Vec::new();
        check_keywords(
            "x",
            &json!({"$schema": "s", "properties": {"a": {"prefixItems": []}}, "items": [{}]}),
            &mut bad,
        );
        assert_eq!(bad, ["x/$schema", "x/properties/a/prefixItems", "x/items: items must be one schema"]);
    }

    #[test]
    fn control_arguments_are_taken_off_and_nothing_else() {
        let args = json!({"question": "q", "wait_for_previous": true, "extra": 1});
        assert_eq!(tool_arguments(&args), json!({"question": "q", "extra": 1}));
        assert_eq!(tool_arguments(&json!({"wait_for_previous": null})), json!({}));
        // Not the client's boolean: left for the tool to refuse.
        assert_eq!(tool_arguments(&json!({"wait_for_previous": "yes"})), json!({"wait_for_previous": "yes"}));
        assert_eq!(tool_arguments(&json!({"Wait_For_Previous": true})), json!({"Wait_For_Previous": true}));
    }

    /// The whole words of a text, lowercased, as Claude Code's `ToolSearch` matches query words.
    fn words(text: &str) -> Vec<String> {
        text.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(String::from).collect()
    }

    #[test]
    fn the_words_of_a_quick_decision_are_in_decides_search_hint_and_description() {
        let listed = list("2025-11-25", Offer::All);
        let decide = &listed["tools"][0];
        assert_eq!(decide["name"], "system1_decide");
        let hint = words(decide["_meta"][SEARCH_HINT_META_KEY].as_str().unwrap());
        let description = words(decide["description"].as_str().unwrap());
        for query in ["quick decision", "classify", "yes or no", "which option"] {
            for word in words(query) {
                assert!(hint.contains(&word), "{word:?} of {query:?} is not in the search hint");
            }
        }
        for word in ["classify", "yes", "no", "option", "quick"] {
            assert!(description.contains(&word.to_string()), "{word:?} is not in the description");
        }
        // Before 2025-06-18 a tool has no `_meta`.
        assert!(list("2025-03-26", Offer::All)["tools"][0].get("_meta").is_none());
    }

    #[test]
    fn a_chain_without_free_yes_no_lists_choices_only_in_no_more_room() {
        for version in PROTOCOL_VERSIONS {
            let (all, choices) = (list(version, Offer::All), list(version, Offer::ChoicesOnly));
            // The context cost (docs/tools.md) does not grow: the listing and the instructions are no longer.
            assert!(choices.to_string().len() <= all.to_string().len(), "{version}");
            assert_eq!(all["tools"].as_array().unwrap()[1..], choices["tools"].as_array().unwrap()[1..], "{version}");
        }
        assert!(CHOICE_INSTRUCTIONS.len() <= INSTRUCTIONS.len() && !CHOICE_INSTRUCTIONS.contains("yes or no"));
        let decide = &list("2025-11-25", Offer::ChoicesOnly)["tools"][0];
        let description = decide["description"].as_str().unwrap();
        assert!(description.contains("no engine here answers free yes/no questions"), "{description}");
        assert!(description.contains("System One server") && description.contains("calibrate fit --question"));
        let hint = words(decide["_meta"][SEARCH_HINT_META_KEY].as_str().unwrap());
        assert!(!hint.contains(&"yes".to_string()), "the hint promises no yes/no: {hint:?}");
        for word in ["classify", "option", "quick", "triage"] {
            assert!(words(description).contains(&word.to_string()) || hint.contains(&word.to_string()), "{word}");
        }
        assert_eq!(discover(Offer::ChoicesOnly)["instructions"], CHOICE_INSTRUCTIONS);
    }

    #[test]
    fn the_instructions_are_one_line_that_names_the_tool() {
        assert!(!INSTRUCTIONS.contains('\n') && INSTRUCTIONS.len() < 200, "{INSTRUCTIONS}");
        assert!(INSTRUCTIONS.contains("system1_decide"));
        assert_eq!(discover(Offer::All)["instructions"], INSTRUCTIONS);
    }
}
