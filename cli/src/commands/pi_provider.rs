//! `toolstream pi-provider`: the stdio JSON-lines backend of the pi extension (`integrations/pi`).
//! The protocol is described in `toolstream_hosts::pi_provider` and in docs/pi-provider-protocol.md.

use std::path::PathBuf;

use clap::Args;

use super::InputArgs;
use toolstream_engine::sinks::SinkSpec;
use toolstream_hosts::pi_provider::{serve, ProviderOptions};

#[derive(Debug, Args)]
pub struct PiProviderArgs {
    /// Replay recordings at their recorded pace (what `"realtime": true` in the request's replay
    /// source does).
    #[arg(long)]
    pub realtime: bool,
    /// The cursor-agent binary for `cursor-agent` sources (default: $TOOLSTREAM_CURSOR_AGENT,
    /// then `cursor-agent` on PATH).
    #[arg(long, value_name = "PATH")]
    pub cursor_agent: Option<PathBuf>,
    /// Compact shell results before pi sees them (as `toolstream wrap` does).
    #[arg(long)]
    pub compact: bool,
    /// Also deliver the run to this sink, beside the protocol on stdout; repeatable.
    #[arg(long = "sink", value_name = "SPEC", long_help = toolstream_engine::sinks::spec::sinks_help(
        "Also deliver the run to this sink, beside the protocol on stdout; repeatable (not `cards`: \
         stdout carries the protocol). The pi extension passes $TOOLSTREAM_PI_SINKS here:",
        &[toolstream_engine::sinks::SinkKind::Cards]))]
    pub sinks: Vec<SinkSpec>,
    #[command(flatten)]
    pub input: InputArgs,
}

pub fn run(args: PiProviderArgs) -> anyhow::Result<i32> {
    if let Some(spec) = args.sinks.iter().find(|s| s.writes_stdout()) {
        anyhow::bail!("--sink {spec}: pi-provider's stdout carries the protocol only; name another sink");
    }
    let config = args.input.config()?;
    let pipeline = args.input.pipeline_options(&config)?;
    Ok(serve(ProviderOptions {
        pipeline,
        config,
        realtime: args.realtime,
        cursor_agent: args.cursor_agent,
        compact: args.compact,
        sinks: args.sinks,
    }))
}
