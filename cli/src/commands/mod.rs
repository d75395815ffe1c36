//! The `toolstream` command line (clap): argument definitions and dispatch to each command.

mod bench;
mod bridge;
mod compact_cmd;
mod compacted;
mod config_cmd;
pub mod cursor_db;
mod cursor_install;
mod cursor_transcripts;
mod hook;
mod hooks_cmd;
mod hooks_json;
mod models;
mod pi_provider;
mod replay;
mod serve;
mod stats;
mod wrap;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use toolstream_actors::present::scrub::Scrubber;
use toolstream_actors::shard::ShardConfig;

pub use toolstream_engine::config::ByteSize;
use toolstream_engine::config::Config;
use toolstream_engine::decode::Format;
use toolstream_engine::pipeline::PipelineOptions;
use toolstream_engine::sinks::SinkSpec;

/// Ingest Cursor agent event streams and deliver them — ordered, deduplicated, scrubbed and
/// bounded — to sinks such as terminal cards.
#[derive(Debug, Parser)]
#[command(name = "toolstream", version, propagate_version = true)]
#[command(
    after_help = "Feed it a live run:\n  cursor-agent -p --output-format stream-json --stream-partial-output \"…\" | toolstream replay -\n\nSee `toolstream <command> --help` for each command."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Replay recorded (or piped) Cursor streams to sinks; terminal cards by default.
    ///
    /// Reads Cursor CLI `stream-json` lines or `@cursor/sdk` recordings (detected per file).
    /// Bad lines are reported on stderr with their line number and byte offset, and replay goes
    /// on (or stops, with --strict). Runs that end without a `result` line are closed as failed.
    /// Exit status: 0 when everything decoded, 1 when any line could not be decoded or a sink
    /// failed, 2 on usage or read errors.
    Replay(ReplayArgs),
    /// Count what a stream holds: lines, runs, calls per canonical tool, unknown tool kinds and
    /// decode errors.
    Stats(StatsArgs),
    /// Show the effective configuration and where each value came from (config file,
    /// environment, defaults).
    Config(config_cmd::ConfigArgs),
    /// Measure throughput on a recorded high-volume corpus: the parse floor, full decoding, and
    /// end to end to a null sink, the JSONL trace and a pi session, side by side on the same bytes.
    Bench(bench::BenchArgs),
    /// Serve the pi extension (`integrations/pi`): one Cursor run as pi assistant-message events
    /// on stdout, driven by a JSON-lines request, pi's tool results and `abort` on stdin. See
    /// docs/pi-provider-protocol.md.
    PiProvider(pi_provider::PiProviderArgs),
    /// List the Cursor models to offer and their limits: cursor-agent's own listing (cached for a
    /// day), else the ids in $TOOLSTREAM_CURSOR_MODELS; `auto` always. Limits come from the model
    /// table (`schemas/models.json`, overridable with the `models_file` setting).
    Models(models::ModelsArgs),
    /// Run a command and print its output compacted for a model (failures, error locations and
    /// counts kept; progress, passing tests and repeats dropped), exiting with its exit code.
    /// If compaction goes wrong, the raw output is printed instead.
    Wrap(wrap::WrapArgs),
    /// Compact output that was already saved (a file or stdin) as if a command had printed it
    /// (`--command CMD --exit-code N`; without `--command` its content decides), with `wrap`'s
    /// output options.
    Compact(compact_cmd::CompactArgs),
    /// Answer an agent host's hook on stdin (`hook cursor`: rewrite shell commands to run through
    /// `toolstream wrap`; with `--sink`, also spool every event and deliver each closed turn).
    Hook(hook::HookArgs),
    /// Add toolstream's hooks to a host (`install cursor [--sink SPEC]…`: `~/.cursor/hooks.json`
    /// or a project's), keeping every other hook in the file as it was. With sinks, every Cursor
    /// agent turn (IDE and CLI) is delivered to them.
    Install(cursor_install::HostArgs),
    /// Check a host's toolstream hooks (`doctor cursor`): the binary, the entries, the spool and
    /// every sink; prints `health: ok` (exit 0) or `health: broken` and what is wrong (exit 1).
    Doctor(cursor_install::HostArgs),
    /// Remove toolstream's hooks from a host (`uninstall cursor`), leaving every other hook.
    Uninstall(cursor_install::HostArgs),
    /// The Cursor hook spool: `hooks status` (what is spooled, delivered and pending), `hooks
    /// deliver` (deliver what is pending now).
    Hooks(hooks_cmd::HooksArgs),
    /// Serve an API in front of Cursor (`serve openai`: OpenAI-compatible chat completions).
    Serve(serve::ServeArgs),
    /// Serve pi's tools to an MCP client (the pi tool bridge endpoint) over stdio: a `listening`
    /// line with the MCP URL, `bridge_call` lines out, `bridge_result` lines in. See `--help`
    /// and docs/pi-tool-bridge.md.
    Bridge(bridge::BridgeArgs),
}

/// Options shared by every command that reads streams.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// Configuration file (default: $TOOLSTREAM_CONFIG, ./toolstream.toml, then
    /// ~/.config/toolstream/config.toml). `toolstream config` shows the effective settings.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Number of shards (actor threads), 1 to 64; sessions are spread over them by id. Default:
    /// one per core but the one that reads and decodes, at least 1 (or `shards` in the config, or
    /// TOOLSTREAM_SHARDS).
    #[arg(long, value_name = "N")]
    pub shards: Option<String>,
    /// Input format; `auto` detects it from each file's first line.
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub format: FormatArg,
    /// Stop at the first line that cannot be decoded.
    #[arg(long)]
    pub strict: bool,
    /// Longest line accepted, in bytes (suffixes K, M, G; e.g. 16M); longer lines are skipped and
    /// reported. Default: the `max_line_bytes` setting (`toolstream config` shows it).
    #[arg(long, value_name = "SIZE")]
    pub max_line_bytes: Option<String>,
}

impl InputArgs {
    /// The effective configuration: defaults < config file < environment < these flags. What
    /// was clamped on the way is said on stderr.
    pub fn config(&self) -> anyhow::Result<Config> {
        let mut cfg = Config::from_process_env(self.config.as_deref())?;
        if let Some(n) = &self.shards {
            cfg.set_flag("shards", "--shards", n)?;
        }
        if let Some(n) = &self.max_line_bytes {
            cfg.set_flag("max_line_bytes", "--max-line-bytes", n)?;
        }
        for w in &cfg.warnings {
            toolstream_engine::say!("toolstream: {w}");
        }
        Ok(cfg)
    }

    pub fn pipeline_options(&self, cfg: &Config) -> anyhow::Result<PipelineOptions> {
        let usage = toolstream_actors::usage::UsageConfig { models: model_table(cfg)? };
        Ok(PipelineOptions {
            strict: self.strict,
            format: self.format.format(),
            max_line_bytes: usize::try_from(cfg.max_line_bytes.value.0).unwrap_or(usize::MAX),
            shards: cfg.shards.value.max(1),
            shard: ShardConfig {
                scrubber: Scrubber::new(cfg.api_key.value.expose().map(str::to_owned)),
                lifecycle_defer_ms: cfg.lifecycle_defer_ms.value,
                batch_settle_ms: cfg.batch_settle_ms.value,
                usage_wait_ms: cfg.usage_wait_ms.value,
                usage_poll_ms: cfg.usage_poll_ms.value,
                usage,
                keep_recorded: false,
                compact: Default::default(),
            },
            ..PipelineOptions::default()
        })
    }
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Files to replay, in order; `-` (or nothing) reads standard input.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Where to deliver the stream; repeatable (default: `cards`).
    #[arg(long = "sink", value_name = "SPEC", long_help = toolstream_engine::sinks::spec::sinks_help(
        "Where to deliver the stream; repeatable (default: `cards`):", &[]))]
    pub sinks: Vec<SinkSpec>,
    /// Replace pi session files that already exist (`--sink pi-session=PATH`, `--sink
    /// pi-sessions`); without it an existing session file is refused (`pi-session`) or left as it
    /// is (`pi-sessions`).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub cursor_db: cursor_db::CursorDbArgs,
    /// Also write the JSONL debug trace to FILE (same as `--sink jsonl=FILE`).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Replay at the recorded pace instead of as fast as possible.
    #[arg(long)]
    pub realtime: bool,
    /// Show full card bodies and diffs instead of collapsed previews.
    #[arg(long)]
    pub expanded: bool,
    /// Colour: `auto` colours only when stdout is a terminal (and NO_COLOR is unset).
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
    /// Compact shell results in the model-facing output (the pi session) as `toolstream wrap`
    /// does: failures, error locations and counts kept, noise dropped. Cards stay as they are.
    #[arg(long)]
    pub compact: bool,
    /// Compact shell results in the terminal cards too.
    #[arg(long)]
    pub compact_cards: bool,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Files to read; `-` reads standard input.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    Auto,
    CursorCli,
    CursorSdk,
    /// The agent backend's exec messages in proto3-JSON (seed 002; see `examples/exec-demo.jsonl`).
    CursorExec,
    /// Cursor hook payloads, one a line: bare, toolstream's spool records, or a recorder's
    /// envelope (LangSmith's `{ts, evt, cwd, payload}`, agent-bundle's `{event: {native}}`).
    CursorHooks,
    /// A Cursor agent transcript (`~/.cursor/projects/<slug>/agent-transcripts/<id>/<id>.jsonl`).
    CursorTranscript,
}

impl FormatArg {
    fn format(self) -> Option<Format> {
        match self {
            FormatArg::Auto => None,
            FormatArg::CursorCli => Some(Format::CursorCli),
            FormatArg::CursorSdk => Some(Format::CursorSdk),
            FormatArg::CursorExec => Some(Format::CursorExec),
            FormatArg::CursorHooks => Some(Format::CursorHooks),
            FormatArg::CursorTranscript => Some(Format::CursorTranscript),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    Auto,
    Always,
    Never,
}

/// The model table: the built-in one (`schemas/models.json`), with the `models_file` setting's
/// entries over it.
pub fn model_table(cfg: &Config) -> anyhow::Result<toolstream_schemas::models::ModelTable> {
    let mut table = toolstream_schemas::models::ModelTable::default();
    if let Some(path) = &cfg.models_file.value {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read the models file {}: {e}", path.display()))?;
        table
            .merge_json(&text)
            .map_err(|e| anyhow::anyhow!("models file {} is not in the models.json format: {e}", path.display()))?;
    }
    Ok(table)
}

/// Run the parsed command; returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Replay(args) => replay::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Config(args) => config_cmd::run(args),
        Command::Bench(args) => bench::run(args),
        Command::PiProvider(args) => pi_provider::run(args),
        Command::Models(args) => models::run(args),
        Command::Wrap(args) => wrap::run(args),
        Command::Compact(args) => compact_cmd::run(args),
        Command::Hook(args) => hook::run_hook(args),
        Command::Install(args) => cursor_install::run_install(args),
        Command::Doctor(args) => cursor_install::run_doctor(args),
        Command::Uninstall(args) => cursor_install::run_uninstall(args),
        Command::Hooks(args) => hooks_cmd::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Bridge(args) => bridge::run(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
