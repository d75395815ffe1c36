//! `replay --from-cursor-db PATH [--composer ID… | --all] [--list]`: the Cursor chat database as
//! the input of a replay, and the sinks that write into Cursor's and pi's own stores
//! (`--sink cursor-db=PATH`, `--sink pi-sessions[=DIR]`).

use std::path::{Path, PathBuf};

use clap::Args;
use toolstream_actors::present::scrub::Scrubber;
use toolstream_schemas::display::{display_line, DISPLAY_LINE_CHARS};
use toolstream_schemas::iso_time::format_ms;

use toolstream_engine::cursor_db::{conversation_events, list, CursorDb};
use toolstream_engine::decode::DecodeError;
use toolstream_engine::pipeline::{Pipeline, PipelineError};

/// Where a replay reads Cursor's own history (its chat database or its agent transcripts), and
/// what it may write into a chat database.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("history").args(["from_cursor_db", "from_cursor_transcripts"])))]
pub struct CursorDbArgs {
    /// Replay the conversations of a Cursor chat database (`state.vscdb`, e.g.
    /// `~/.config/Cursor/User/globalStorage/state.vscdb`) instead of streams. The file is opened
    /// read-only and never changed, even while Cursor runs.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["files", "from_cursor_transcripts"])]
    pub from_cursor_db: Option<PathBuf>,
    /// Replay Cursor's agent transcripts (the IDE's and the CLI's) under DIR (default
    /// `~/.cursor/projects`): each conversation's `<id>/<id>.jsonl`, its subagents nested under
    /// their task calls. Transcripts record no tool results: cards say so.
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = "", conflicts_with = "files")]
    pub from_cursor_transcripts: Option<PathBuf>,
    /// With --from-cursor-db: the conversation (composer id) to replay; repeatable.
    #[arg(long = "composer", value_name = "ID", requires = "from_cursor_db")]
    pub composers: Vec<String>,
    /// With --from-cursor-transcripts: the conversation (its id) to replay; repeatable.
    #[arg(long = "conversation", value_name = "ID", requires = "from_cursor_transcripts")]
    pub conversations: Vec<String>,
    /// With --from-cursor-db or --from-cursor-transcripts: replay every conversation.
    #[arg(long, requires = "history", conflicts_with_all = ["composers", "conversations"])]
    pub all: bool,
    /// With --from-cursor-db or --from-cursor-transcripts: list the conversations (id, times,
    /// size, first prompt) and exit.
    #[arg(long, requires = "history")]
    pub list: bool,
    /// Let `--sink cursor-db=PATH` write into a file named `state.vscdb` — Cursor's own database.
    /// Only with Cursor closed: Cursor may overwrite or corrupt what is written while it runs.
    #[arg(long)]
    pub i_know_cursor_is_closed: bool,
}

/// `--list`: one line per conversation; exit status 0. What the database holds (ids, models,
/// titles) is shown as display lines (SPEC §8).
pub fn print_list(path: &Path, scrubber: &Scrubber) -> anyhow::Result<i32> {
    let db = CursorDb::open(path)?;
    let all = list(&db)?;
    println!("{:<36}  {:<24}  {:<24}  {:>7}  {:<16}  title", "id", "created", "updated", "bubbles", "model");
    for c in &all {
        let time = |t: Option<u64>| t.map_or_else(|| "-".to_owned(), format_ms);
        let title = if c.unreadable { "(unreadable)".to_owned() } else { scrubber.scrub(&c.title).into_owned() };
        let shown = |s: &str| display_line(s, DISPLAY_LINE_CHARS);
        println!(
            "{:<36}  {:<24}  {:<24}  {:>7}  {:<16}  {}",
            shown(&c.id),
            time(c.created_ms),
            time(c.updated_ms),
            c.bubbles,
            shown(c.model.as_deref().unwrap_or("-")),
            shown(&title)
        );
    }
    toolstream_engine::say!("toolstream: {} conversation(s) in {}", all.len(), path.display());
    Ok(0)
}

/// The conversations a replay reads: those named, every one with `--all`, or the only one.
pub fn selection(args: &CursorDbArgs, db: &CursorDb) -> anyhow::Result<Vec<String>> {
    if !args.composers.is_empty() {
        return Ok(args.composers.clone());
    }
    let all: Vec<String> = list(db)?.into_iter().map(|c| c.id).collect();
    if args.all || all.len() <= 1 {
        return Ok(all);
    }
    anyhow::bail!(
        "{} holds {} conversations: name one with --composer ID, or replay them all with --all (see --list)",
        db.path().display(),
        all.len()
    )
}

/// Feed each selected conversation through the pipeline, in order.
pub fn feed(
    pipeline: &mut Pipeline,
    db: &CursorDb,
    ids: &[String],
    report: &mut dyn FnMut(&DecodeError),
) -> anyhow::Result<Result<(), PipelineError>> {
    let name = db.path().display().to_string();
    for id in ids {
        let mut items = Vec::new();
        conversation_events(db, id, &mut items)?;
        tracing::debug!(conversation = %id, items = items.len(), "replaying a Cursor conversation");
        if let Err(e) = pipeline.run_events(&name, "cursor-db", items, report) {
            return Ok(Err(e));
        }
    }
    Ok(Ok(()))
}
