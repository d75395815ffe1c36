//! Cursor's agent transcripts as a source (SPEC §1.6): the conversations under a folder
//! (`~/.cursor/projects` by default: `<slug>/agent-transcripts/<id>/<id>.jsonl`, each with its
//! `subagents/*.jsonl`), listed, and replayed one conversation at a time — its subagents first,
//! so that a subagent's run is known before the task call it belongs to completes.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use toolstream_schemas::cursor_transcript::{parse_line, Block, TranscriptLine, UserText};

/// How deep below the folder conversations are looked for (`projects/<slug>/agent-transcripts/
/// <id>/<id>.jsonl` is four levels down).
const MAX_DEPTH: usize = 6;

/// One conversation's transcript files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conversation {
    pub id: String,
    /// `<id>/<id>.jsonl`.
    pub main: PathBuf,
    /// `<id>/subagents/*.jsonl`, sorted.
    pub subagents: Vec<PathBuf>,
}

/// What `--list` shows of a conversation.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub turns: usize,
    pub first_query: String,
    pub modified: Option<SystemTime>,
    pub workspace: Option<String>,
}

/// `~/.cursor/projects`.
pub fn default_dir() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".cursor").join("projects"))
}

/// Every conversation under `dir` (a folder named `<id>` holding `<id>.jsonl`), sorted by id.
/// `dir` may also be one conversation's folder or its main file.
pub fn conversations(dir: &Path) -> std::io::Result<Vec<Conversation>> {
    let mut out = Vec::new();
    if dir.is_file() {
        let folder = dir.parent().unwrap_or(Path::new("."));
        if let Some(c) = conversation_in(folder) {
            out.push(c);
        }
        return Ok(out);
    }
    std::fs::read_dir(dir)?; // an unreadable folder is an error, not an empty list
    walk(dir, 0, &mut out);
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<Conversation>) {
    if let Some(c) = conversation_in(dir) {
        out.push(c);
        return;
    }
    if depth >= MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut dirs: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    for d in dirs {
        // A subagents folder belongs to the conversation above it.
        if d.file_name().is_some_and(|n| n == "subagents") {
            continue;
        }
        walk(&d, depth + 1, out);
    }
}

/// The conversation whose folder is `dir`, when it holds `<name>.jsonl`.
fn conversation_in(dir: &Path) -> Option<Conversation> {
    let id = dir.file_name()?.to_string_lossy().into_owned();
    let main = dir.join(format!("{id}.jsonl"));
    if !main.is_file() {
        return None;
    }
    let mut subagents: Vec<PathBuf> = std::fs::read_dir(dir.join("subagents"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    subagents.sort();
    Some(Conversation { id, main, subagents })
}

/// Turns, first query, last change and workspace of a conversation (unreadable lines are skipped).
pub fn summary(c: &Conversation) -> Summary {
    let text = std::fs::read_to_string(&c.main).unwrap_or_default();
    let mut s = Summary {
        modified: std::fs::metadata(&c.main).and_then(|m| m.modified()).ok(),
        workspace: crate::decode::transcript::TranscriptPlace::of(&c.main.to_string_lossy()).workspace,
        ..Summary::default()
    };
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Ok(TranscriptLine::Message(m)) = parse_line(line) {
            if m.role != "user" {
                continue;
            }
            s.turns += 1;
            if s.first_query.is_empty() {
                let text: Vec<&str> = m
                    .message
                    .content
                    .iter()
                    .filter_map(|b| if let Block::Text { text } = b { Some(text.as_str()) } else { None })
                    .collect();
                s.first_query = UserText::parse(&text.join("\n")).query;
            }
        }
    }
    s
}

/// The files of a conversation in replay order: its subagents, then the conversation itself.
pub fn replay_order(c: &Conversation) -> Vec<PathBuf> {
    let mut files = c.subagents.clone();
    files.push(c.main.clone());
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversations_are_found_at_any_depth_with_their_subagents() {
        let root = std::env::temp_dir().join(format!("toolstream-transcripts-{}", std::process::id()));
        let conv = root.join("proj-a/agent-transcripts/c1");
        std::fs::create_dir_all(conv.join("subagents")).unwrap();
        std::fs::write(conv.join("c1.jsonl"), "{\"role\":\"user\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"<user_query>\\nhello\\n</user_query>\"}]}}\n").unwrap();
        std::fs::write(conv.join("subagents/s1.jsonl"), "").unwrap();
        std::fs::create_dir_all(root.join("proj-b/agent-transcripts/empty")).unwrap();
        let all = conversations(&root).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].id, "c1");
        assert_eq!(all[0].subagents, [conv.join("subagents/s1.jsonl")]);
        assert_eq!(replay_order(&all[0]), [conv.join("subagents/s1.jsonl"), conv.join("c1.jsonl")]);
        let s = summary(&all[0]);
        assert_eq!((s.turns, s.first_query.as_str()), (1, "hello"));
        assert_eq!(conversations(&conv.join("c1.jsonl")).unwrap(), all, "a conversation's own file");
        assert!(conversations(&root.join("missing")).is_err());
        let _ = std::fs::remove_dir_all(&root);
    }
}
