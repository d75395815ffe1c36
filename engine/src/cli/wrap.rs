//! `toolstream wrap -- <cmd…>`: run a command, print its output compacted (SPEC §10) and exit
//! with its exit code. Whatever goes wrong in compaction (output not UTF-8, a reducer panicking),
//! the raw output is printed instead: nothing is ever lost.

use std::io::{Read, Write};
use std::process::{Command, ExitStatus, Stdio};

use anyhow::Context;
use clap::{Args, ValueEnum};
use serde::Serialize;
use toolstream_actors::compact::{self, Compacted, Request, Trace};

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  toolstream wrap -- cargo test\n  toolstream wrap --format json --trace -- \"$SHELL\" -lc 'git status --short'\n  toolstream wrap --raw -- pnpm --help"
)]
pub struct WrapArgs {
    /// `text` prints the (compacted) output; `json` prints one object: `output`, `exitCode` and,
    /// with --trace, `trace`.
    #[arg(long, value_enum, default_value_t = WrapFormat::Text)]
    pub format: WrapFormat,
    /// Explain the decision: normalized command, argv, matched reducer, family and ratio (on
    /// stderr for `text`, in the object for `json`).
    #[arg(long)]
    pub trace: bool,
    /// Print the output unchanged, byte for byte (ratio 1).
    #[arg(long)]
    pub raw: bool,
    /// The command to run and its arguments, after `--`. Its stdout and stderr are read together
    /// (interleaved as written); stdin is passed through.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum WrapFormat {
    Text,
    Json,
}

/// The exit code shells use for a command that cannot be run.
const CANNOT_RUN: i32 = 127;

pub fn run(args: WrapArgs) -> anyhow::Result<i32> {
    // Ctrl-C reaches the command too; wrap stays to print what it wrote and pass on its status.
    let _ = ctrlc::set_handler(|| {});
    let (bytes, code) = match execute(&args.command) {
        Ok(done) => done,
        Err(e) => {
            eprintln!("toolstream wrap: cannot run `{}`: {e:#}", args.command.join(" "));
            return Ok(CANNOT_RUN);
        }
    };
    let result = reduce(&args, &bytes, code);
    let mut out = std::io::stdout().lock();
    let written = match args.format {
        WrapFormat::Text => {
            let w = match &result {
                Reduced::Text(c) => write_text(&mut out, &c.text, bytes.ends_with(b"\n")),
                Reduced::Bytes(_) => out.write_all(&bytes),
            };
            if args.trace {
                eprintln!("{}", trace_line(result.trace()));
            }
            w
        }
        WrapFormat::Json => {
            let output = match &result {
                Reduced::Text(c) => c.text.clone(),
                Reduced::Bytes(_) => String::from_utf8_lossy(&bytes).into_owned(),
            };
            let body = JsonResult { output, exit_code: code, trace: args.trace.then(|| result.trace()) };
            serde_json::to_writer(&mut out, &body).map_err(std::io::Error::other).and_then(|()| writeln!(out))
        }
    };
    // A reader that went away (`| head`) is not the command's failure.
    if let Err(e) = written.and_then(|()| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(e).context("writing the output");
        }
    }
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

/// What is printed: compacted text, or the raw bytes (with the trace explaining why).
enum Reduced {
    Text(Compacted),
    Bytes(Trace),
}

impl Reduced {
    fn trace(&self) -> &Trace {
        match self {
            Reduced::Text(c) => &c.trace,
            Reduced::Bytes(t) => t,
        }
    }
}

fn reduce(args: &WrapArgs, bytes: &[u8], code: i32) -> Reduced {
    let Ok(output) = std::str::from_utf8(bytes) else {
        // Not UTF-8: printed byte for byte.
        let lossy = String::from_utf8_lossy(bytes);
        let mut c = compact::raw(&request(&args.command, &lossy, code));
        c.trace.fallback = (!args.raw).then(|| "the output is not UTF-8".to_owned());
        return Reduced::Bytes(c.trace);
    };
    let req = request(&args.command, output, code);
    if args.raw {
        return Reduced::Bytes(compact::raw(&req).trace);
    }
    match std::panic::catch_unwind(|| compact::compact(&req)) {
        Ok(c) => Reduced::Text(c),
        Err(_) => {
            tracing::error!("compaction panicked; printing the raw output");
            let mut c = compact::raw(&req);
            c.trace.fallback = Some("compaction failed".to_owned());
            Reduced::Bytes(c.trace)
        }
    }
}

fn request<'a>(argv: &'a [String], output: &'a str, code: i32) -> Request<'a> {
    Request { argv: Some(argv), command: None, output, exit_code: Some(code) }
}

/// The text, ending with a newline when the output did (or when it is not empty).
fn write_text(out: &mut impl Write, text: &str, newline: bool) -> std::io::Result<()> {
    out.write_all(text.as_bytes())?;
    if (newline || !text.is_empty()) && !text.ends_with('\n') {
        out.write_all(b"\n")?;
    }
    Ok(())
}

fn trace_line(t: &Trace) -> String {
    let mut line = format!(
        "toolstream wrap: command `{}`, argv {:?}, reducer {}, family {}, {} → {} chars, ratio {:.3}",
        t.normalized_command, t.normalized_argv, t.matched_reducer, t.family, t.raw_chars, t.reduced_chars, t.ratio
    );
    if let Some(why) = &t.fallback {
        line.push_str(&format!(" (raw: {why})"));
    }
    line
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonResult<'a> {
    output: String,
    exit_code: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace: Option<&'a Trace>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_ends_with_a_newline_when_there_is_text() {
        let mut buf = Vec::new();
        write_text(&mut buf, "a", false).unwrap();
        assert_eq!(buf, b"a\n");
        let mut buf = Vec::new();
        write_text(&mut buf, "", false).unwrap();
        assert!(buf.is_empty());
    }

    #[test]
    fn non_utf8_output_is_kept_as_bytes() {
        let args = WrapArgs { format: WrapFormat::Text, trace: false, raw: false, command: vec!["cat".into()] };
        match reduce(&args, b"\xff\xfe bad\n", 0) {
            Reduced::Bytes(t) => assert_eq!(t.fallback.as_deref(), Some("the output is not UTF-8")),
            Reduced::Text(_) => panic!("non-UTF-8 output must not be compacted"),
        }
    }
}
