//! The hook spool: one file per conversation, one `{received_ms, payload}` line per hook event,
//! owner-only. A hook appends with a single write (O_APPEND), never reads; deliveries read every
//! spool, in time order. A payload is kept without file contents (`beforeReadFile.content`) and
//! with any string longer than [`MAX_STRING_CHARS`] cut short the way recorders mark it
//! (`…[+N chars]`: the decoder then keeps that value as text). The hook log (`hook.log`) says what
//! went wrong, bounded by rotation.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use toolstream_schemas::cursor_hooks::{HookEvent, SpoolRecord};

use super::HookPaths;
use crate::state_dir::private_dir;

/// Longest string kept in a spooled payload, in chars (a tool output of many MB is cut here).
pub const MAX_STRING_CHARS: usize = 256 * 1024;
/// The hook log is rotated (to `hook.log.1`) past this size.
pub const MAX_LOG_BYTES: u64 = 1024 * 1024;

/// What spooling did to a payload.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Spooled {
    /// The spool file written.
    pub file: PathBuf,
    /// Strings cut short.
    pub clipped: usize,
    /// A file's content left out.
    pub dropped_content: bool,
}

/// Now, in unix ms.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Write a whole file owner-only (0600), through a temporary file renamed into place.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().ok_or_else(|| io::Error::other("no folder"))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        std::process::id()
    ));
    let mut f = open_private(&tmp, false)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

fn open_private(path: &Path, append: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    if append {
        o.create(true).append(true);
    } else {
        o.create(true).write(true).truncate(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o.open(path)
}

/// Append one payload to its conversation's spool. `payload` is changed: contents dropped,
/// long strings cut.
pub fn append(paths: &HookPaths, received_ms: u64, payload: &mut Value) -> io::Result<Spooled> {
    let mut spooled = Spooled::default();
    if let Some(obj) = payload.as_object_mut() {
        let read_file = obj.get("hook_event_name").and_then(Value::as_str) == Some(HookEvent::BeforeReadFile.name());
        if read_file && obj.remove("content").is_some() {
            spooled.dropped_content = true;
        }
    }
    spooled.clipped = clip_strings(payload, MAX_STRING_CHARS);
    let conversation = payload
        .get("conversation_id")
        .or_else(|| payload.get("session_id"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    private_dir(&paths.root)?;
    private_dir(&paths.spool_dir())?;
    spooled.file = paths.spool_file(&conversation);
    let mut line = serde_json::to_vec(&SpoolRecord { received_ms, payload }).map_err(io::Error::other)?;
    line.push(b'\n');
    // One write: appends of concurrent hook processes do not interleave.
    open_private(&spooled.file, true)?.write_all(&line)?;
    Ok(spooled)
}

/// Cut every string longer than `max` chars to `max` chars plus `…[+N chars]`; how many were cut.
pub fn clip_strings(v: &mut Value, max: usize) -> usize {
    match v {
        Value::String(s) => match s.char_indices().nth(max) {
            Some((at, _)) => {
                let rest = s[at..].chars().count();
                s.truncate(at);
                s.push_str(&format!("…[+{rest} chars]"));
                1
            }
            None => 0,
        },
        Value::Array(items) => items.iter_mut().map(|i| clip_strings(i, max)).sum(),
        Value::Object(o) => o.values_mut().map(|i| clip_strings(i, max)).sum(),
        _ => 0,
    }
}

/// One line of the hook log: `<ISO time> <what>: <message>`. Best effort: a log that cannot be
/// written is not an error anyone could act on from inside a hook.
pub fn log(paths: &HookPaths, what: &str, message: &str) {
    let _ = try_log(paths, what, message);
}

fn try_log(paths: &HookPaths, what: &str, message: &str) -> io::Result<()> {
    private_dir(&paths.root)?;
    let file = paths.log_file();
    if std::fs::metadata(&file).is_ok_and(|m| m.len() > MAX_LOG_BYTES) {
        let _ = std::fs::rename(&file, file.with_extension("log.1"));
    }
    let line = format!(
        "{} {what}: {}\n",
        toolstream_schemas::iso_time::format_ms(now_ms()),
        message.replace(['\n', '\r'], " ")
    );
    open_private(&file, true)?.write_all(line.as_bytes())
}

/// The last `n` lines of the hook log.
pub fn log_tail(paths: &HookPaths, n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(paths.log_file()).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].iter().map(|s| (*s).to_owned()).collect()
}

/// One spooled line, as read back.
#[derive(Debug)]
pub struct Record {
    /// The spool file's conversation (its file stem).
    pub conversation: String,
    pub line: u64,
    /// The line (a `{received_ms, payload}` record).
    pub text: String,
    pub received_ms: u64,
}

/// A spool file and its size and age.
#[derive(Clone, Debug)]
pub struct SpoolFile {
    pub conversation: String,
    pub path: PathBuf,
    pub bytes: u64,
    pub modified: SystemTime,
}

/// Every spool file.
pub fn spool_files(paths: &HookPaths) -> io::Result<Vec<SpoolFile>> {
    let entries = match std::fs::read_dir(paths.spool_dir()) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for e in entries.filter_map(Result::ok) {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let Ok(meta) = e.metadata() else { continue };
        let conversation = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        out.push(SpoolFile {
            conversation,
            path,
            bytes: meta.len(),
            modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        });
    }
    out.sort_by(|a, b| a.conversation.cmp(&b.conversation));
    Ok(out)
}

/// Every record of `files`, in time order (ties: file, then line). A line that is not a record
/// (a torn write) is kept: the decoder reports it.
pub fn read_records(files: &[SpoolFile]) -> io::Result<Vec<Record>> {
    let mut out = Vec::new();
    for f in files {
        let reader = BufReader::new(File::open(&f.path)?);
        for (i, line) in reader.lines().enumerate() {
            let text = line?;
            if text.trim().is_empty() {
                continue;
            }
            let received_ms = received_ms(&text).unwrap_or(0);
            out.push(Record { conversation: f.conversation.clone(), line: i as u64 + 1, text, received_ms });
        }
    }
    // Stable: records of one time keep their file and line order.
    out.sort_by_key(|r| r.received_ms);
    Ok(out)
}

/// `received_ms` of a record line, read without parsing the payload.
fn received_ms(text: &str) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Head {
        received_ms: Option<u64>,
    }
    serde_json::from_str::<Head>(text).ok()?.received_ms
}

/// What pruning removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    pub files: usize,
    pub bytes: u64,
    /// Of those, files that still held turns not delivered to every sink.
    pub undelivered: usize,
}

/// Remove spools older than `max_age`, then the oldest while all of them take more than
/// `max_bytes`; `delivered(conversation)` tells whether a spool was delivered in full (those go
/// first). Their delivery records go with them.
pub fn prune(
    paths: &HookPaths,
    max_age: Duration,
    max_bytes: u64,
    delivered: &dyn Fn(&str) -> bool,
) -> io::Result<Pruned> {
    let mut files = spool_files(paths)?;
    let now = SystemTime::now();
    let mut pruned = Pruned::default();
    let remove = |f: &SpoolFile, pruned: &mut Pruned| {
        if std::fs::remove_file(&f.path).is_ok() {
            let _ = std::fs::remove_file(paths.delivered_file(&f.conversation));
            pruned.files += 1;
            pruned.bytes += f.bytes;
            if !delivered(&f.conversation) {
                pruned.undelivered += 1;
            }
        }
    };
    files.retain(|f| {
        let old = now.duration_since(f.modified).is_ok_and(|age| age > max_age);
        if old {
            remove(f, &mut pruned);
        }
        !old
    });
    let mut total: u64 = files.iter().map(|f| f.bytes).sum();
    // Delivered ones first, oldest first.
    files.sort_by_key(|f| (!delivered(&f.conversation), f.modified));
    for f in &files {
        if total <= max_bytes {
            break;
        }
        remove(f, &mut pruned);
        total = total.saturating_sub(f.bytes);
    }
    Ok(pruned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> HookPaths {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        HookPaths::new(std::env::temp_dir().join(format!("toolstream-spool-{}-{n}", std::process::id())))
    }

    #[test]
    fn a_payload_is_spooled_without_file_contents_and_bounded() {
        let p = paths();
        let mut read = serde_json::json!({"hook_event_name": "beforeReadFile", "conversation_id": "c/1", "content": "SECRET", "file_path": "/a"});
        let s = append(&p, 5, &mut read).unwrap();
        assert!(s.dropped_content);
        assert_eq!(s.file, p.spool_dir().join("c_1.jsonl"));
        let mut big = serde_json::json!({"hook_event_name": "postToolUse", "conversation_id": "c/1", "tool_output": "é".repeat(MAX_STRING_CHARS + 3)});
        assert_eq!(append(&p, 4, &mut big).unwrap().clipped, 1);
        let text = std::fs::read_to_string(&s.file).unwrap();
        assert!(!text.contains("SECRET"));
        assert!(text.contains("…[+3 chars]"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&s.file).unwrap().permissions().mode() & 0o777, 0o600);
            assert_eq!(std::fs::metadata(p.spool_dir()).unwrap().permissions().mode() & 0o777, 0o700);
        }
        let records = read_records(&spool_files(&p).unwrap()).unwrap();
        assert_eq!(records.iter().map(|r| (r.received_ms, r.line)).collect::<Vec<_>>(), [(4, 2), (5, 1)], "time order");
        let _ = std::fs::remove_dir_all(&p.root);
    }

    #[test]
    fn pruning_takes_delivered_spools_first_and_counts_undelivered_ones() {
        let p = paths();
        for (conv, n) in [("a", 10), ("b", 10), ("c", 10)] {
            let mut v = serde_json::json!({"conversation_id": conv, "text": "x".repeat(n)});
            append(&p, 1, &mut v).unwrap();
        }
        let size = spool_files(&p).unwrap()[0].bytes;
        let pruned = prune(&p, Duration::from_secs(3600), size * 2, &|c| c != "b").unwrap();
        assert_eq!((pruned.files, pruned.undelivered), (1, 0), "{pruned:?}");
        let left: Vec<String> = spool_files(&p).unwrap().into_iter().map(|f| f.conversation).collect();
        assert!(left.contains(&"b".to_owned()), "the undelivered one stays: {left:?}");
        let all = prune(&p, Duration::ZERO, u64::MAX, &|c| c != "b").unwrap();
        assert_eq!((all.files, all.undelivered), (2, 1), "age prunes even undelivered ones, and says so");
        let _ = std::fs::remove_dir_all(&p.root);
    }
}
