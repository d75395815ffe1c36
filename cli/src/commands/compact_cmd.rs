//! `toolstream compact --command CMD [--exit-code N] [FILE|-]`: compact output that was already
//! saved, as if CMD had printed it (SPEC §10; what tokenjuice's `reduce-json` does) — with the
//! same output options as `wrap`. Without `--command` the output's content picks the reducer.

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use toolstream_actors::compact::Request;

use super::compacted::{self, OutputArgs};

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  cargo test 2>&1 > test.log; toolstream compact --command 'cargo test' --exit-code 101 test.log\n  some-script | toolstream compact --trace\n  toolstream compact --command 'pytest -q' --format json --trace - < pytest.log"
)]
pub struct CompactArgs {
    /// The command that printed the output, as a shell command line (pipelines, `&&`, `bash -lc
    /// '…'` and the like are understood). Without it, the content decides.
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,
    /// Its exit code (shown as `exit N` on top when not 0).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub exit_code: Option<i32>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// The saved output; `-` or nothing: stdin.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// Exit status: 0, or 2 when the output cannot be read.
pub fn run(args: CompactArgs) -> anyhow::Result<i32> {
    let bytes = match args.file.as_deref().filter(|f| f.as_os_str() != "-") {
        Some(path) => std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
        None => {
            let mut buf = Vec::new();
            std::io::stdin().lock().read_to_end(&mut buf).context("reading stdin")?;
            buf
        }
    };
    let origin = Request { command: args.command.as_deref(), exit_code: args.exit_code, ..Request::default() };
    let result = compacted::reduce(&args.output, &bytes, origin);
    compacted::print(&args.output, "compact", &result, &bytes, args.exit_code)?;
    Ok(0)
}
