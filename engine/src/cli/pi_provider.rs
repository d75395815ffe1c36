//! `toolstream pi-provider`: the stdio JSON-lines backend of the pi extension (`integrations/pi`).
//! The protocol is described in `crate::pi_provider` and in the README ("pi provider protocol").

use std::path::PathBuf;

use clap::Args;

use super::InputArgs;
use crate::pi_provider::{serve, ProviderOptions};

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
    #[command(flatten)]
    pub input: InputArgs,
}

pub fn run(args: PiProviderArgs) -> anyhow::Result<i32> {
    let config = args.input.config()?;
    let pipeline = args.input.pipeline_options(&config)?;
    Ok(serve(ProviderOptions {
        pipeline,
        config,
        realtime: args.realtime,
        cursor_agent: args.cursor_agent,
        compact: args.compact,
    }))
}
