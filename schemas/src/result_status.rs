//! Which oneof arm a tool result is ([`ResultStatus`]): read by the wire models
//! (`cursor_cli`) and carried by the canonical events (`event`, which re-exports it).

use serde::Serialize;

/// Which oneof arm a result is. Only `Success` is a success (SPEC §1.1 rule 6).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ResultStatus {
    Success,
    Failure,
    Rejected,
    Error,
    Timeout,
    SpawnError,
    PermissionDenied,
    FileNotFound,
    Other(Box<str>),
}

/// Whether a `result` arm reports success: `success`, plus the tool-specific success arms
/// `startSuccess` / `saveSuccess` / `discardSuccess` (recordScreen) and `complete` (await).
pub fn is_success_arm(arm: &str) -> bool {
    matches!(arm, "success" | "startSuccess" | "saveSuccess" | "discardSuccess" | "complete")
}

impl ResultStatus {
    /// The status for a CLI oneof key (`success`, `failure`, …).
    pub fn from_key(key: &str) -> ResultStatus {
        match key {
            k if is_success_arm(k) => ResultStatus::Success,
            "failure" => ResultStatus::Failure,
            "rejected" => ResultStatus::Rejected,
            "error" => ResultStatus::Error,
            "timeout" => ResultStatus::Timeout,
            "spawnError" => ResultStatus::SpawnError,
            "permissionDenied" => ResultStatus::PermissionDenied,
            "fileNotFound" => ResultStatus::FileNotFound,
            other => ResultStatus::Other(other.into()),
        }
    }

    /// Whether `key` names a oneof arm (known or plausible) rather than a sibling field.
    pub fn is_known_key(key: &str) -> bool {
        !matches!(ResultStatus::from_key(key), ResultStatus::Other(_))
    }

    pub fn is_success(&self) -> bool {
        matches!(self, ResultStatus::Success)
    }

    pub fn as_str(&self) -> &str {
        match self {
            ResultStatus::Success => "success",
            ResultStatus::Failure => "failure",
            ResultStatus::Rejected => "rejected",
            ResultStatus::Error => "error",
            ResultStatus::Timeout => "timeout",
            ResultStatus::SpawnError => "spawnError",
            ResultStatus::PermissionDenied => "permissionDenied",
            ResultStatus::FileNotFound => "fileNotFound",
            ResultStatus::Other(s) => s,
        }
    }
}
