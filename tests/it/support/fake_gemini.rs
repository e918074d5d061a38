//! A fake Gemini API (`generativelanguage.googleapis.com`'s v1beta REST surface) on the loopback
//! fake server, for driving the real Gemini CLI offline through `GOOGLE_GEMINI_BASE_URL`.
//!
//! `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` is answered as server-sent events,
//! one `GenerateContentResponse` per event, as the real API streams; `:generateContent` with the
//! same JSON in one body; `:countTokens` with a count. A test scripts each reply's parts (text or
//! `functionCall`) with a function of the request body, and reads back every body.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::fake_http::{FakeServer, Reply, Request};

type Script = dyn Fn(&Value) -> Vec<Value> + Send + Sync;

pub struct FakeGemini {
    server: FakeServer,
    script: Arc<Mutex<Arc<Script>>>,
}

impl FakeGemini {
    pub fn start() -> Self {
        let default: Arc<Script> = Arc::new(|_: &Value| vec![text("ok")]);
        let script = Arc::new(Mutex::new(default));
        let scripted = script.clone();
        let server = FakeServer::start(move |r: &Request| {
            let Some(method) = method_of(r) else { return Reply::json(404, &json!({"error": {"code": 404}})) };
            let request = r.json();
            if method == "countTokens" {
                return Reply::json(200, &json!({"totalTokens": 100}));
            }
            let f = scripted.lock().map(|f| f.clone()).expect("script lock");
            let response = response(&request, f(&request));
            if method == "streamGenerateContent" {
                Reply::new(200, "text/event-stream", format!("data: {response}\r\n\r\n"))
            } else {
                Reply::json(200, &response)
            }
        });
        FakeGemini { server, script }
    }

    pub fn base_url(&self) -> String {
        self.server.url()
    }

    /// Replaces the reply script: the parts of each reply, from the request body.
    pub fn script(&self, f: impl Fn(&Value) -> Vec<Value> + Send + Sync + 'static) {
        *self.script.lock().expect("script lock") = Arc::new(f);
    }

    /// Every generate request so far, in order: (the model method, the body).
    pub fn requests(&self) -> Vec<(String, Value)> {
        self.server.requests().iter().filter_map(|r| Some((method_of(r)?.to_string(), r.json()))).collect()
    }
}

/// `generateContent`, `streamGenerateContent` or `countTokens` for `POST /v1beta/models/<m>:<method>`.
fn method_of(r: &Request) -> Option<&str> {
    if r.method != "POST" || !r.path.starts_with("/v1beta/models/") {
        return None;
    }
    let (_, method) = r.path.split_once(':')?;
    let method = method.split('?').next()?;
    ["generateContent", "streamGenerateContent", "countTokens"].into_iter().find(|m| *m == method)
}

/// A GenerateContentResponse with one candidate.
fn response(request: &Value, parts: Vec<Value>) -> Value {
    let model = request["model"].as_str().unwrap_or("gemini-2.5-flash");
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
        "modelVersion": model,
        "responseId": "fake-gemini",
    })
}

pub fn text(t: &str) -> Value {
    json!({"text": t})
}

pub fn function_call(name: &str, args: Value) -> Value {
    json!({"functionCall": {"name": name, "args": args}})
}

/// The function declarations a request offers the model.
pub fn declarations(request: &Value) -> Vec<Value> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["functionDeclarations"].as_array().cloned().unwrap_or_default())
        .collect()
}

/// The `functionResponse` parts of the request's last turn.
pub fn function_responses(request: &Value) -> Vec<Value> {
    let last = request["contents"].as_array().and_then(|c| c.last()).cloned().unwrap_or(Value::Null);
    last["parts"].as_array().into_iter().flatten().filter_map(|p| p.get("functionResponse").cloned()).collect()
}
