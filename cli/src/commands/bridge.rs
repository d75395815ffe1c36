//! `toolstream bridge --tools FILE`: the pi tool bridge's MCP endpoint on its own, over stdio — for
//! tests and for other clients standing in for pi. stdout: one `listening` line (the MCP URL),
//! then a `bridge_call` line per accepted `tools/call` and a `bridge_cancel` line when pi's side
//! must abort one; stdin: `bridge_result` lines; end of stdin disposes the endpoint and exits 0.

use std::io::{BufRead, Write};
use std::net::IpAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;
use toolstream_actors::bridge::exposure::PiToolDef;
use toolstream_engine::config::Config;

use toolstream_hosts::bridge_server::{BridgeEvent, BridgeServer, BridgeServerOptions, BridgeSettings};

const AFTER_HELP: &str = "\
Protocol (one JSON object per line):
  stdout  {\"type\":\"listening\",\"url\":\"http://127.0.0.1:PORT/cursor-pi-tool-bridge/TOKEN/mcp\"}   first
          {\"type\":\"bridge_call\",\"id\":\"cursor-pi-bridge-run-…-tool-N\",\"tool\":\"<pi name>\",\"args\":{…}}
          {\"type\":\"bridge_cancel\",\"id\":\"…\",\"reason\":\"timeout|aborted|cancelled|disposed\"}
          {\"type\":\"skipped\",\"reason\":\"bridge_disabled|no_tools_exposed\"}   instead of listening; exit 0
  stdin   {\"type\":\"bridge_result\",\"id\":\"…\",\"content\":[{\"type\":\"text\",\"text\":\"…\"}],\"isError\":false}
A bridge_call is answered by the bridge_result with its id; a bridge_cancel means that call's MCP
request was rejected (deadline, client cancellation, dispose) and pi's execution should stop — a
result for it is refused. Malformed stdin lines are reported on stderr with their line number and
skipped. End of stdin disposes the endpoint (pending calls are rejected, later requests get 410 or
a refused connection) and exits 0.

Settings (SPEC §7): the bridge_* settings `toolstream config` lists, with their variables, defaults
and rules — PI_CURSOR_PI_TOOL_BRIDGE=0 turns the bridge off; PI_CURSOR_PI_TOOL_BRIDGE_DEBUG=1 prints
diagnostics on stderr ([toolstream:bridge] lines) and PI_CURSOR_PI_TOOL_BRIDGE_DEBUG_FILE=PATH appends
them as JSONL (allowlisted fields only: never the URL, port, token, path, raw MCP ids, args, results
or error text). A value the bridge cannot use is said on stderr and ignored.";

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct BridgeArgs {
    /// A JSON array of pi tool definitions: `name`, `description`, `parameters` (a JSON schema),
    /// optional `promptGuidelines` (strings).
    #[arg(long, value_name = "FILE")]
    pub tools: PathBuf,
    /// Listen on this address instead of 127.0.0.1 (for tests of the loopback check: requests from
    /// non-loopback peers are answered 403 whatever the address).
    #[arg(long, value_name = "IP", default_value = "127.0.0.1")]
    pub listen: IpAddr,
}

/// What `toolstream bridge` writes on stdout.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Out<'a> {
    Listening { url: &'a str },
    Skipped { reason: &'a str },
    BridgeCall { id: &'a str, tool: &'a str, args: &'a Value },
    BridgeCancel { id: &'a str, reason: &'a str },
}

/// What it reads on stdin.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum In {
    BridgeResult {
        id: String,
        #[serde(default)]
        content: Vec<Value>,
        #[serde(default, rename = "isError")]
        is_error: bool,
    },
}

pub fn run(args: BridgeArgs) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(&args.tools).with_context(|| format!("cannot read {}", args.tools.display()))?;
    let tools: Vec<PiToolDef> = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a JSON array of pi tool definitions", args.tools.display()))?;
    let config = Config::from_process_env(None)?;
    for w in &config.warnings {
        toolstream_engine::say!("toolstream bridge: {w}");
    }
    let settings = BridgeSettings::from_config(&config);
    let opts = BridgeServerOptions { listen: args.listen, settings };
    actix::System::new().block_on(serve(opts, tools))
}

fn emit(line: &Out<'_>) {
    let mut out = std::io::stdout().lock();
    if let Ok(json) = serde_json::to_string(line) {
        // A closed stdout is not an error here: the endpoint still ends with stdin.
        let _ = writeln!(out, "{json}");
        let _ = out.flush();
    }
}

fn emit_event(event: &BridgeEvent) {
    match event {
        BridgeEvent::Call { pi_call_id, pi_tool, args, .. } => {
            emit(&Out::BridgeCall { id: pi_call_id, tool: pi_tool, args });
        }
        BridgeEvent::Abort { pi_call_id, reason } => {
            emit(&Out::BridgeCancel { id: pi_call_id, reason: reason.as_str() });
        }
    }
}

async fn serve(opts: BridgeServerOptions, tools: Vec<PiToolDef>) -> anyhow::Result<i32> {
    let bridge_on = opts.settings.exposure.bridge_enabled;
    let (server, mut events) = BridgeServer::start(opts).await?;
    let Some(route) = server.add_run(&tools).await? else {
        emit(&Out::Skipped { reason: if bridge_on { "no_tools_exposed" } else { "bridge_disabled" } });
        server.shutdown().await;
        return Ok(0);
    };
    emit(&Out::Listening { url: &route.url });

    let (lines_tx, mut lines) = mpsc::unbounded_channel::<(usize, std::io::Result<String>)>();
    std::thread::spawn(move || {
        for (n, line) in std::io::stdin().lock().lines().enumerate() {
            let stop = line.is_err();
            if lines_tx.send((n + 1, line)).is_err() || stop {
                return;
            }
        }
    });

    loop {
        tokio::select! {
            Some(event) = events.recv() => emit_event(&event),
            line = lines.recv() => match line {
                None => break,
                Some((n, Err(e))) => {
                    toolstream_engine::say!("toolstream bridge: stdin line {n}: {e}");
                    break;
                }
                Some((n, Ok(line))) => answer(&server, n, &line).await,
            },
        }
    }
    server.shutdown().await;
    while let Ok(event) = events.try_recv() {
        emit_event(&event);
    }
    Ok(0)
}

async fn answer(server: &BridgeServer, n: usize, line: &str) {
    if line.trim().is_empty() {
        return;
    }
    match serde_json::from_str::<In>(line) {
        Ok(In::BridgeResult { id, content, is_error }) => {
            if let Err(e) = server.pi_result(&id, content, is_error).await {
                toolstream_engine::say!("toolstream bridge: stdin line {n}: {e}");
            }
        }
        Err(e) => toolstream_engine::say!("toolstream bridge: stdin line {n}: not a bridge_result line: {e}"),
    }
}
