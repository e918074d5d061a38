//! The MCP server against clients and environments that misbehave: batches whose members wait on
//! a slow engine, a stderr nobody reads, input that ends while calls are still running, fields of
//! the wrong type, request ids made to forge log lines. Through the real binary over real pipes.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::support::fake_http::{FakeServer, Reply, Request};
use crate::support::fake_laya::healthy;
use crate::support::{CUT_OFF, TestEnv};
use serde_json::json;

/// A laya fake that holds every question until the test lets go (then answers as laya does), so
/// the order of events shows what ran beside what, whatever the machine's speed.
struct HeldEngine {
    server: FakeServer,
    released: Arc<(Mutex<bool>, Condvar)>,
}

impl HeldEngine {
    fn start() -> Self {
        let released = Arc::new((Mutex::new(false), Condvar::new()));
        let gate = released.clone();
        let server = FakeServer::start(move |r: &Request| {
            if r.path != "/v1/systemone" {
                return healthy(r);
            }
            let (lock, cvar) = &*gate;
            let open = cvar.wait_timeout_while(lock.lock().unwrap(), Duration::from_secs(20), |o| !*o).unwrap();
            if *open.0 { healthy(r) } else { Reply::json(503, &json!({"detail": "never released"})) }
        });
        HeldEngine { server, released }
    }

    /// Waits until `n` questions have reached the engine (or 10 s pass); how many did.
    fn wait_for_questions(&self, n: usize) -> usize {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.server.requests_to("/v1/systemone").len() < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.server.requests_to("/v1/systemone").len()
    }

    fn release(&self) {
        *self.released.0.lock().unwrap() = true;
        self.released.1.notify_all();
    }

    fn config(&self) -> String {
        format!(
            "[gateway]\nprovider = \"laya\"\ntimeout_s = 30\n[providers.laya]\nendpoint = \"{}\"\n",
            self.server.url()
        )
    }
}

fn decide(id: i64) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "system1_decide", "arguments": {"question": format!("slow {id}?")}}})
}

/// Protocol 2025-03-26 batches: the members run side by side, and the batch holds up neither the
/// reading thread nor a ping sent after it.
#[test]
fn a_batch_of_slow_decides_runs_side_by_side_and_holds_up_no_ping() {
    let engine = HeldEngine::start();
    let env = TestEnv::new();
    env.write_config(&engine.config());
    let mut c = env.mcp();
    c.initialize("2025-03-26");
    c.send(&json!([decide(1), decide(2), decide(3)]));
    c.send(&json!({"jsonrpc": "2.0", "id": "after", "method": "ping"}));
    let first = c.recv(Duration::from_secs(10)).expect("the ping is answered while the batch waits");
    assert_eq!(first["id"], "after", "{first}");
    assert_eq!(engine.wait_for_questions(3), 3, "the batch's decides ran one after another");
    engine.release();
    let batch = c.recv(CUT_OFF).expect("the batch's reply");
    let items = batch.as_array().expect("one array for the batch");
    let ids: Vec<i64> = items.iter().filter_map(|m| m["id"].as_i64()).collect();
    assert_eq!(ids, [1, 2, 3], "{batch}");
    for item in items {
        let text: serde_json::Value =
            serde_json::from_str(item["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text["status"], "decided", "{item}");
    }
}
