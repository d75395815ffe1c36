//! `replay --from-cursor-transcripts [DIR] [--conversation ID… | --all] [--list]`: Cursor's agent
//! transcripts as the input of a replay (SPEC §1.6), like `--from-cursor-db`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use toolstream_actors::present::scrub::Scrubber;
use toolstream_schemas::display::{display_line, DISPLAY_LINE_CHARS};
use toolstream_schemas::iso_time::format_ms;

use super::cursor_db::CursorDbArgs;
use toolstream_engine::cursor_transcripts::{conversations, default_dir, replay_order, summary, Conversation};
use toolstream_engine::decode::DecodeError;
use toolstream_engine::pipeline::{Pipeline, PipelineError};
use toolstream_engine::source::Source;

/// The folder named (an empty value: the default, `~/.cursor/projects`).
pub fn folder(arg: &Path) -> anyhow::Result<PathBuf> {
    if !arg.as_os_str().is_empty() {
        return Ok(arg.to_path_buf());
    }
    default_dir().context("HOME is not set: name the transcripts folder (--from-cursor-transcripts DIR)")
}

/// `--list`: one line per conversation; exit status 0. What the transcripts hold (ids, workspaces,
/// prompts) is shown as display lines (SPEC §8).
pub fn print_list(dir: &Path, scrubber: &Scrubber) -> anyhow::Result<i32> {
    let all = conversations(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    println!("{:<36}  {:<24}  {:>5}  {:>9}  {:<32}  first prompt", "id", "updated", "turns", "subagents", "workspace");
    for c in &all {
        let s = summary(c);
        let updated = s
            .modified
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or_else(|| "-".to_owned(), |d| format_ms(d.as_millis() as u64));
        let prompt = scrubber.scrub(s.first_query.lines().next().unwrap_or("")).into_owned();
        let workspace = s.workspace.as_deref().map_or_else(|| "-".to_owned(), |w| scrubber.scrub(w).into_owned());
        let shown = |s: &str| display_line(s, DISPLAY_LINE_CHARS);
        println!(
            "{:<36}  {:<24}  {:>5}  {:>9}  {:<32}  {}",
            shown(&c.id),
            updated,
            s.turns,
            c.subagents.len(),
            shown(&workspace),
            shown(&prompt)
        );
    }
    toolstream_engine::say!("toolstream: {} conversation(s) in {}", all.len(), dir.display());
    Ok(0)
}

/// The conversations a replay reads: those named, every one with `--all`, or the only one.
pub fn selection(args: &CursorDbArgs, dir: &Path) -> anyhow::Result<Vec<Conversation>> {
    let all = conversations(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    if !args.conversations.is_empty() {
        return args
            .conversations
            .iter()
            .map(|id| {
                all.iter()
                    .find(|c| &c.id == id)
                    .cloned()
                    .with_context(|| format!("no conversation {id} in {} (see --list)", dir.display()))
            })
            .collect();
    }
    if args.all || all.len() <= 1 {
        return Ok(all);
    }
    anyhow::bail!(
        "{} holds {} conversations: name one with --conversation ID, or replay them all with --all (see --list)",
        dir.display(),
        all.len()
    )
}

/// Feed each selected conversation through the pipeline (its subagents first), in order.
pub fn feed(
    pipeline: &mut Pipeline,
    selected: &[Conversation],
    report: &mut dyn FnMut(&DecodeError),
) -> Result<(), PipelineError> {
    for c in selected {
        tracing::debug!(conversation = %c.id, subagents = c.subagents.len(), "replaying a Cursor agent transcript");
        for file in replay_order(c) {
            pipeline.run_source(&Source::File(file), report)?;
        }
    }
    Ok(())
}
