//! `toolstream serve openai`: the OpenAI-compatible chat completions API (`toolstream_hosts::openai_server`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::InputArgs;
use toolstream_engine::config::user_config_dir;
use toolstream_hosts::bridge_server::BridgeSettings;
use toolstream_hosts::conversation::Budget;
use toolstream_hosts::cursor_agent::agent_bin;
use toolstream_hosts::local_http::AllowedOrigins;
use toolstream_hosts::openai_server::api_key::{stored_key, KeyChoice};
use toolstream_hosts::openai_server::live::LiveOptions;
use toolstream_hosts::openai_server::replay::Recording;
use toolstream_hosts::openai_server::{serve, Mode, ServerOptions, DEFAULT_ADDR};

/// The environment variable listing the allowed browser origins (the `openai_allowed_origins`
/// setting's), separated by commas or spaces.
pub use toolstream_engine::config::OPENAI_ALLOWED_ORIGINS_ENV as ALLOWED_ORIGINS_ENV;

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
    /// calls). See docs/openai-server.md.
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
    /// $TOOLSTREAM_OPENAI_API_KEY, else the key in ~/.config/toolstream/openai-api-key (made on
    /// the first start, mode 0600, and printed then).
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// Serve without a key: any local process that reaches the port can start runs (web pages
    /// still cannot: see --allow-origin).
    #[arg(long, conflicts_with = "api_key")]
    pub no_api_key: bool,
    /// A browser origin allowed to call the server (`http://localhost:5173`; port `*` for any
    /// port); repeatable; default $TOOLSTREAM_OPENAI_ALLOWED_ORIGINS (comma-separated). Requests
    /// from every other origin, and `Origin: null`, are refused with 403; clients that send no
    /// Origin (SDKs, curl) are not browsers and are served.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// The cursor-agent binary (default: $TOOLSTREAM_CURSOR_AGENT, then `cursor-agent` on PATH).
    #[arg(long, value_name = "PATH")]
    pub cursor_agent: Option<PathBuf>,
    /// The workspace cursor-agent runs in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Runs at once; more requests are refused with 429 until one ends (default: the setting
    /// `openai_max_runs`, see `toolstream config`).
    #[arg(long, value_name = "N")]
    pub max_runs: Option<String>,
    /// Deadline of one request, in seconds, from its arrival to its last byte (default: the
    /// setting `openai_request_timeout_seconds`).
    #[arg(long, value_name = "SECONDS")]
    pub request_timeout: Option<String>,
    /// How long a run that called one of the client's tools waits for the result (the client's
    /// next request with the `role:"tool"` message), in seconds; then it is stopped, and a later
    /// result starts a fresh run with the whole conversation (default: the setting
    /// `openai_tool_result_timeout_seconds`).
    #[arg(long, value_name = "SECONDS")]
    pub tool_result_timeout: Option<String>,
    /// Do not expose client tools named like pi's built-ins (read, bash, write, edit, grep, find,
    /// ls) to Cursor, which has its own (the rule pi's bridge follows). By default every client
    /// tool is exposed: an OpenAI client's tools are its own.
    #[arg(long)]
    pub hide_builtin_tool_names: bool,
    /// Largest request body, in bytes (suffixes K, M, G; default: the setting `openai_max_body`).
    #[arg(long, value_name = "SIZE")]
    pub max_body: Option<String>,
    #[command(flatten)]
    pub input: InputArgs,
}

pub fn run(args: ServeArgs) -> anyhow::Result<i32> {
    match args.api {
        ServeApi::Openai(a) => openai(a),
    }
}

fn openai(args: OpenaiArgs) -> anyhow::Result<i32> {
    let mut config = args.input.config()?;
    for (name, flag, value) in [
        ("openai_max_runs", "--max-runs", &args.max_runs),
        ("openai_request_timeout_seconds", "--request-timeout", &args.request_timeout),
        ("openai_tool_result_timeout_seconds", "--tool-result-timeout", &args.tool_result_timeout),
        ("openai_max_body", "--max-body", &args.max_body),
    ] {
        if let Some(v) = value {
            let said = config.warnings.len();
            config.set_flag(name, flag, v)?;
            for w in &config.warnings[said..] {
                toolstream_engine::say!("toolstream: {w}");
            }
        }
    }
    let mut pipeline = args.input.pipeline_options(&config)?;
    let env = |var: &str| std::env::var(var).ok().filter(|v| !v.trim().is_empty());
    let allowed_origins = if args.allow_origin.is_empty() {
        AllowedOrigins::parse(&config.openai_allowed_origins.value)
            .map_err(|e| anyhow::anyhow!("{ALLOWED_ORIGINS_ENV}: {e}"))?
    } else {
        AllowedOrigins::from_entries(args.allow_origin.iter().map(String::as_str))
            .map_err(|e| anyhow::anyhow!("--allow-origin {e}"))?
    };
    let key = if args.no_api_key {
        KeyChoice::Off
    } else if let Some(k) = args
        .api_key
        .clone()
        .filter(|k| !k.trim().is_empty())
        .or_else(|| config.openai_api_key.value.expose().map(str::to_owned))
    {
        KeyChoice::Given(k)
    } else {
        let dir = user_config_dir(&env).ok_or_else(|| {
            anyhow::anyhow!("no HOME or XDG_CONFIG_HOME to keep the API key in: give --api-key KEY or --no-api-key")
        })?;
        let (key, path, created) = stored_key(&dir)?;
        KeyChoice::Stored { key, path, created }
    };
    // Each line as a display line (SPEC §8): the path comes from HOME or XDG_CONFIG_HOME.
    for line in key.announce().lines() {
        toolstream_engine::say!("{line}");
    }
    if !allowed_origins.is_empty() {
        toolstream_engine::say!("toolstream: browser origins allowed: {allowed_origins}");
    }
    // The server's own key is scrubbed from everything it answers, like the Cursor key.
    if let Some(key) = key.key() {
        pipeline.shard.scrubber = pipeline.shard.scrubber.with_known_secret(key);
    }
    let mode = match &args.replay {
        Some(path) => Mode::Replay(Arc::new(Recording::load(path, pipeline).map_err(anyhow::Error::msg)?)),
        None => Mode::Live(Box::new(LiveOptions {
            pipeline,
            agent_bin: agent_bin(args.cursor_agent.as_deref(), &config),
            workspace: args.workspace.clone(),
            budget: Budget::default(),
            hide_builtin_names: args.hide_builtin_tool_names,
            bridge: BridgeSettings::from_config(&config),
        })),
    };
    serve(ServerOptions {
        addr: args.addr,
        api_key: key.key().map(str::to_owned),
        allowed_origins,
        mode,
        max_runs: config.openai_max_runs.value,
        request_timeout: Duration::from_secs(config.openai_request_timeout_seconds.value),
        body_limit: usize::try_from(config.openai_max_body.value.0).unwrap_or(usize::MAX),
        tool_result_timeout: Duration::from_secs(config.openai_tool_result_timeout_seconds.value),
    })?;
    Ok(0)
}
