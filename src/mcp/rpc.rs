//! JSON-RPC 2.0 framing over stdio: one message a line, each line bounded in size, and a message's
//! envelope (id, `jsonrpc`, `method`, `params`) read and checked before any method sees it.

use std::io::{BufRead, Read};

use serde_json::{Map, Value, json};

use crate::logging;

/// A line longer than this is refused: its bytes are skipped as they arrive, never parsed, so one
/// message can never hold more memory than this (a decision request with the longest question and
/// 256 of the longest options is under 600 kB).
pub const MAX_LINE: usize = 16 * 1024 * 1024;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;

pub fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

pub fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub enum Line {
    /// A line is in the buffer.
    Read,
    /// A line longer than [`MAX_LINE`] was skipped.
    TooLong,
    /// End of input (or stdin cannot be read).
    End,
}

/// Reads the next line into `buf`, never holding more than [`MAX_LINE`] bytes of it.
pub fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> Line {
    buf.clear();
    match reader.take(MAX_LINE as u64 + 1).read_until(b'\n', buf) {
        Ok(0) => return Line::End,
        Ok(_) => {}
        Err(e) => {
            logging::error("stdin", &format!("cannot read stdin: {e}"));
            return Line::End;
        }
    }
    if buf.len() <= MAX_LINE || buf.last() == Some(&b'\n') {
        return Line::Read;
    }
    // Skip the rest of the oversized line as it arrives.
    let mut skipped = Vec::new();
    loop {
        skipped.clear();
        match reader.take(1 << 20).read_until(b'\n', &mut skipped) {
            Ok(0) => break,
            Ok(_) if skipped.last() == Some(&b'\n') => break,
            Ok(_) => continue,
            Err(_) => break,
        }
    }
    Line::TooLong
}

pub fn valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// A JSON-RPC request with a valid id, taken apart.
pub struct Request {
    /// The id to reply with.
    pub id: Value,
    pub method: String,
    pub params: Map<String, Value>,
    /// The id for the log.
    pub rid: String,
}

/// What one JSON-RPC message is, once its envelope has been read.
pub enum Message {
    Request(Request),
    Notification {
        method: String,
        params: Value,
    },
    /// Needs no reply: a reply from the client (this server sends no requests), or a broken notification.
    Ignored,
    /// Broken: the error to reply with.
    Invalid(Value),
}

/// Reads a message's envelope: its id, `jsonrpc`, `method` and `params`.
pub fn read_envelope(mut obj: Map<String, Value>) -> Message {
    let id = obj.remove("id");
    let is_notification = id.is_none();
    let reply_id = match &id {
        Some(v) if valid_id(v) => v.clone(),
        _ => Value::Null,
    };
    // Where the sender expects no reply, a broken message gets none.
    let invalid = |reply_id: Value, message: &str| {
        if is_notification { Message::Ignored } else { Message::Invalid(error(reply_id, INVALID_REQUEST, message)) }
    };
    if let Some(v) = &id
        && !valid_id(v)
    {
        return Message::Invalid(error(Value::Null, INVALID_REQUEST, "id must be a string or an integer"));
    }
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(reply_id, "jsonrpc must be \"2.0\"");
    }
    let Some(Value::String(method)) = obj.remove("method") else {
        if obj.contains_key("result") || obj.contains_key("error") {
            return Message::Ignored;
        }
        return invalid(reply_id, "method must be a string");
    };
    let params = obj.remove("params").unwrap_or_else(|| Value::Object(Map::new()));
    if is_notification {
        return Message::Notification { method, params };
    }
    let Value::Object(params) = params else {
        return Message::Invalid(error(reply_id, INVALID_PARAMS, "params must be an object"));
    };
    let rid = format!("rpc:{reply_id}");
    Message::Request(Request { id: reply_id, method, params, rid })
}
