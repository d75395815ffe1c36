//! `toolstream serve openai`: the OpenAI-compatible chat completions API (`crate::openai_server`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::InputArgs;
use crate::conversation::Budget;
use crate::openai_server::live::LiveOptions;
use crate::openai_server::replay::Recording;
use crate::openai_server::{serve, Mode, ServerOptions, DEFAULT_ADDR};
use crate::pi_provider::cursor_agent::agent_bin;

/// The environment variable holding the server's bearer key (what `--api-key` sets).
pub const API_KEY_ENV: &str = "TOOLSTREAM_OPENAI_API_KEY";

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(subcommand)]
    pub api: ServeApi,
}

#[derive(Debug, Subcommand)]
pub enum ServeApi {
    /// OpenAI-compatible chat completions in front of Cursor: `POST /v1/chat/completions`
    /// (streamed or not) and `GET /v1/models`. Each request runs a Cursor turn through
    /// cursor-agent with the conversation flattened into its prompt, or, with --replay, is
    /// answered from a recording (an exec recording's tool requests become the client's tool
    /// calls). See the README section "OpenAI-compatible server".
    Openai(OpenaiArgs),
}

#[derive(Debug, Args)]
pub struct OpenaiArgs {
    /// Address to listen on (loopback unless you say otherwise; port 0 picks a free one, and
    /// the address served is printed on stderr).
    #[arg(long, value_name = "HOST:PORT", default_value = DEFAULT_ADDR)]
    pub addr: SocketAddr,
    /// Serve this recording instead of running cursor-agent: an exec recording
    /// (`--format cursor-exec`) or any stream the engine reads.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// The bearer key every request must carry (`Authorization: Bearer KEY`); default
    /// $TOOLSTREAM_OPENAI_API_KEY; none: requests are not checked.
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// The cursor-agent binary (default: $TOOLSTREAM_CURSOR_AGENT, then `cursor-agent` on PATH).
    #[arg(long, value_name = "PATH")]
    pub cursor_agent: Option<PathBuf>,
    /// The workspace cursor-agent runs in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Runs at once; more requests are refused with 429 until one ends.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub max_runs: usize,
    /// Deadline of one request, in seconds, from its arrival to its last byte.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub request_timeout: u64,
    /// How long a run that called one of the client's tools waits for the result (the client's
    /// next request with the `role:"tool"` message), in seconds; then it is stopped, and a later
    /// result starts a fresh run with the whole conversation.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub tool_result_timeout: u64,
    /// Do not expose client tools named like pi's built-ins (read, bash, write, edit, grep, find,
    /// ls) to Cursor, which has its own (the rule pi's bridge follows). By default every client
    /// tool is exposed: an OpenAI client's tools are its own.
    #[arg(long)]
    pub hide_builtin_tool_names: bool,
    /// Largest request body, in bytes (suffixes K, M, G).
    #[arg(long, value_name = "SIZE", default_value_t = super::ByteSize(8 << 20))]
    pub max_body: super::ByteSize,
    #[command(flatten)]
    pub input: InputArgs,
}

pub fn run(args: ServeArgs) -> anyhow::Result<i32> {
    match args.api {
        ServeApi::Openai(a) => openai(a),
    }
}

fn openai(args: OpenaiArgs) -> anyhow::Result<i32> {
    let config = args.input.config()?;
    let pipeline = args.input.pipeline_options(&config)?;
    let mode = match &args.replay {
        Some(path) => Mode::Replay(Arc::new(Recording::load(path, pipeline).map_err(anyhow::Error::msg)?)),
        None => Mode::Live(Box::new(LiveOptions {
            pipeline,
            agent_bin: agent_bin(args.cursor_agent.as_deref()),
            workspace: args.workspace.clone(),
            budget: Budget::default(),
            hide_builtin_names: args.hide_builtin_tool_names,
        })),
    };
    let api_key = args.api_key.clone().or_else(|| std::env::var(API_KEY_ENV).ok()).filter(|k| !k.is_empty());
    serve(ServerOptions {
        addr: args.addr,
        api_key,
        mode,
        max_runs: args.max_runs,
        request_timeout: Duration::from_secs(args.request_timeout.max(1)),
        body_limit: usize::try_from(args.max_body.0).unwrap_or(usize::MAX),
        tool_result_timeout: Duration::from_secs(args.tool_result_timeout.max(1)),
    })?;
    Ok(0)
}
