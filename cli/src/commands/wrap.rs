//! `toolstream wrap -- <cmd…>`: run a command, print its output compacted (SPEC §10) and exit
//! with its exit code. Whatever goes wrong in compaction (output not UTF-8, a reducer panicking),
//! the raw output is printed instead: nothing is ever lost.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};

use anyhow::Context;
use clap::Args;
use toolstream_actors::compact::Request;

use super::compacted::{self, OutputArgs};

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  toolstream wrap -- cargo test\n  toolstream wrap --format json --trace -- \"$SHELL\" -lc 'cargo test 2>&1 | tail -n 200'\n  toolstream wrap --raw -- pnpm --help"
)]
pub struct WrapArgs {
    #[command(flatten)]
    pub output: OutputArgs,
    /// The command to run and its arguments, after `--`. Its stdout and stderr are read together
    /// (interleaved as written); stdin is passed through.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// The exit code shells use for a command that cannot be run.
const CANNOT_RUN: i32 = 127;

pub fn run(args: WrapArgs) -> anyhow::Result<i32> {
    // Ctrl-C reaches the command too; wrap stays to print what it wrote and pass on its status.
    let _ = ctrlc::set_handler(|| {});
    let (bytes, code) = match execute(&args.command) {
        Ok(done) => done,
        Err(e) => {
            toolstream_engine::say!("toolstream wrap: cannot run `{}`: {e:#}", args.command.join(" "));
            return Ok(CANNOT_RUN);
        }
    };
    let origin = Request { argv: Some(&args.command), exit_code: Some(code), ..Request::default() };
    let result = compacted::reduce(&args.output, &bytes, origin);
    compacted::print(&args.output, "wrap", &result, &bytes, Some(code))?;
    Ok(code)
}
/// Run `argv` with stdout and stderr on one pipe; its combined output and exit code.
fn execute(argv: &[String]) -> anyhow::Result<(Vec<u8>, i32)> {
    let (program, args) = argv.split_first().context("no command given")?;
    let (mut reader, writer) = std::io::pipe().context("creating a pipe")?;
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::inherit()).stdout(writer.try_clone()?).stderr(writer);
    let mut child = cmd.spawn()?;
    // Our copies of the write end must close, or the read below never ends.
    drop(cmd);
    let mut bytes = Vec::new();
    let read = reader.read_to_end(&mut bytes);
    let status = child.wait().context("waiting for the command")?;
    read.context("reading the command's output")?;
    Ok((bytes, exit_code(status)))
}

#[cfg(unix)]
fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1)
}

#[cfg(not(unix))]
fn exit_code(status: ExitStatus) -> i32 {
    status.code().unwrap_or(1)
}
