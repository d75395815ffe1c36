//! `toolstream models`: the Cursor models to offer, with their limits (see `toolstream_hosts::cursor_models`).

use std::path::PathBuf;

use clap::Args;
use toolstream_schemas::display::{display_line, DISPLAY_LINE_CHARS};

use super::InputArgs;
use toolstream_hosts::cursor_agent;
use toolstream_hosts::cursor_models::{self, MODELS_ENV};

#[derive(Debug, Args)]
pub struct ModelsArgs {
    /// Print a JSON array of `{id, name, contextWindow, maxTokens}` (what the pi extension reads).
    #[arg(long)]
    pub json: bool,
    /// Ask cursor-agent again even when its listing of less than a day ago is cached.
    #[arg(long)]
    pub refresh: bool,
    /// The cursor-agent binary (default: $TOOLSTREAM_CURSOR_AGENT, then `cursor-agent` on PATH).
    #[arg(long, value_name = "PATH")]
    pub cursor_agent: Option<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
}

pub fn run(args: ModelsArgs) -> anyhow::Result<i32> {
    let config = args.input.config()?;
    let table = super::model_table(&config)?;
    let agent = cursor_agent::agent_bin(args.cursor_agent.as_deref(), &config);
    let env_value = Some(config.cursor_models.value.as_str()).filter(|v| !v.is_empty());
    let cache = cursor_models::default_cache_file();
    let (models, source, why) = cursor_models::resolve(&agent, cache.as_deref(), env_value, args.refresh);
    if let Some(why) = why {
        tracing::debug!(%why, "no model listing from cursor-agent; using {MODELS_ENV}");
    }
    tracing::debug!(?source, count = models.len(), "models resolved");
    let models = cursor_models::with_limits(models, &table);
    if args.json {
        println!("{}", serde_json::to_string(&models)?);
    } else {
        // cursor-agent's listing is shown as display lines (SPEC §8).
        let shown = |s: &str| display_line(s, DISPLAY_LINE_CHARS);
        let width = models.iter().map(|m| shown(&m.id).chars().count()).max().unwrap_or(2).max(2);
        println!("{:<width$}  {:>10}  {:>10}  name", "id", "context", "max output");
        for m in &models {
            println!("{:<width$}  {:>10}  {:>10}  {}", shown(&m.id), m.context_window, m.max_tokens, shown(&m.name));
        }
        let from = match source {
            cursor_models::ListSource::CursorAgent => format!("{} --list-models", agent.display()),
            cursor_models::ListSource::Cache => "cursor-agent's listing (cached)".to_owned(),
            cursor_models::ListSource::Environment => format!("${MODELS_ENV} (cursor-agent gave no listing)"),
        };
        toolstream_engine::say!("models from {from}; limits from the model table");
    }
    Ok(0)
}
