//! File helpers every module shares: reading a JSON file that may be absent.

use std::fmt;
use std::io;
use std::path::Path;

use serde_json::Value;

/// Why a JSON file that exists could not be used.
#[derive(Debug)]
pub enum ReadError {
    Unreadable(io::Error),
    NotJson(serde_json::Error),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Unreadable(e) => write!(f, "cannot be read: {e}"),
            ReadError::NotJson(e) => write!(f, "is not JSON: {e}"),
        }
    }
}

/// The JSON document in `path`: `Ok(None)` when there is no such file.
pub fn read_json(path: &Path) -> Result<Option<Value>, ReadError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ReadError::Unreadable(e)),
    };
    serde_json::from_str(&text).map(Some).map_err(ReadError::NotJson)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_json_tells_missing_from_broken() {
        let dir = std::env::temp_dir().join(format!("system1-fsutil-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(matches!(read_json(&dir.join("absent.json")), Ok(None)));
        std::fs::write(dir.join("ok.json"), r#"{"a": 1}"#).unwrap();
        assert_eq!(read_json(&dir.join("ok.json")).unwrap().unwrap()["a"], 1);
        std::fs::write(dir.join("bad.json"), "{").unwrap();
        let err = read_json(&dir.join("bad.json")).unwrap_err();
        assert!(matches!(err, ReadError::NotJson(_)) && err.to_string().starts_with("is not JSON: "), "{err}");
        assert!(matches!(read_json(&dir), Err(ReadError::Unreadable(_))), "a directory is not a file");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
