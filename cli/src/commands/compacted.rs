//! What `toolstream wrap` and `toolstream compact` share: their output options (`--format`,
//! `--trace`, `--raw`), the compaction of captured bytes — raw bytes when they are not UTF-8 or
//! when compaction fails, so nothing is ever lost — and how the result is printed.

use std::io::Write;

use anyhow::Context;
use clap::{Args, ValueEnum};
use serde::Serialize;
use toolstream_actors::compact::{self, Compacted, MatchedVia, Request, Trace};

/// How the result is printed.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// `text` prints the (compacted) output; `json` prints one object: `output`, `exitCode` and,
    /// with --trace, `trace`.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Explain the decision: normalized command, argv, the producers of the output, matched
    /// reducer, family, how it matched (`command`, `content` with the line that decided,
    /// `split` with each part, `fallback`) and the ratio (on stderr for `text`, in the object
    /// for `json`).
    #[arg(long)]
    pub trace: bool,
    /// Print the output unchanged, byte for byte (ratio 1).
    #[arg(long)]
    pub raw: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

/// What is printed: compacted text, or the raw bytes (with the trace explaining why).
pub enum Reduced {
    Text(Compacted),
    Bytes(Trace),
}

impl Reduced {
    pub fn trace(&self) -> &Trace {
        match self {
            Reduced::Text(c) => &c.trace,
            Reduced::Bytes(t) => t,
        }
    }
}

/// Compact `bytes` as printed by what `origin` names (its `output` is ignored).
pub fn reduce(opts: &OutputArgs, bytes: &[u8], origin: Request<'_>) -> Reduced {
    let Ok(output) = std::str::from_utf8(bytes) else {
        // Not UTF-8: printed byte for byte.
        let lossy = String::from_utf8_lossy(bytes);
        let mut c = compact::raw(&Request { output: &lossy, ..origin });
        c.trace.fallback = (!opts.raw).then(|| "the output is not UTF-8".to_owned());
        return Reduced::Bytes(c.trace);
    };
    let req = Request { output, ..origin };
    if opts.raw {
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

/// Print `result` (of `bytes`) on stdout in the chosen format; the trace, when asked, goes on
/// stderr (`text`, prefixed by `who`) or into the object (`json`). A reader that went away
/// (`| head`) is not an error.
pub fn print(
    opts: &OutputArgs,
    who: &str,
    result: &Reduced,
    bytes: &[u8],
    exit_code: Option<i32>,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let written = match opts.format {
        OutputFormat::Text => {
            let w = match result {
                Reduced::Text(c) => write_text(&mut out, &c.text, bytes.ends_with(b"\n")),
                Reduced::Bytes(_) => out.write_all(bytes),
            };
            if opts.trace {
                toolstream_engine::say!("{}", trace_line(who, result.trace()));
            }
            w
        }
        OutputFormat::Json => {
            let output = match result {
                Reduced::Text(c) => c.text.clone(),
                Reduced::Bytes(_) => String::from_utf8_lossy(bytes).into_owned(),
            };
            let body = JsonResult { output, exit_code, trace: opts.trace.then(|| result.trace()) };
            serde_json::to_writer(&mut out, &body).map_err(std::io::Error::other).and_then(|()| writeln!(out))
        }
    };
    if let Err(e) = written.and_then(|()| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(e).context("writing the output");
        }
    }
    Ok(())
}

/// The text, ending with a newline when the output did (or when it is not empty).
fn write_text(out: &mut impl Write, text: &str, newline: bool) -> std::io::Result<()> {
    out.write_all(text.as_bytes())?;
    if (newline || !text.is_empty()) && !text.ends_with('\n') {
        out.write_all(b"\n")?;
    }
    Ok(())
}

fn via(via: MatchedVia, evidence: Option<&str>) -> String {
    let name = serde_json::to_value(via).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    match evidence {
        Some(line) => format!("{name}: `{line}`"),
        None => name,
    }
}

/// The trace as one line, for stderr.
pub fn trace_line(who: &str, t: &Trace) -> String {
    let mut line = format!(
        "toolstream {who}: command `{}`, argv {:?}, producers {:?}, reducer {} ({}), family {}, {} → {} chars, ratio {:.3}",
        t.normalized_command,
        t.normalized_argv,
        t.producers,
        t.matched_reducer,
        via(t.matched_via, t.evidence.as_deref()),
        t.family,
        t.raw_chars,
        t.reduced_chars,
        t.ratio
    );
    for p in &t.parts {
        line.push_str(&format!(
            "; from line {}: {} ({})",
            p.first_line,
            p.matched_reducer,
            via(p.matched_via, p.evidence.as_deref())
        ));
    }
    if let Some(why) = &t.fallback {
        line.push_str(&format!(" (raw: {why})"));
    }
    line
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonResult<'a> {
    output: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<i32>,
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
        let opts = OutputArgs { format: OutputFormat::Text, trace: false, raw: false };
        match reduce(&opts, b"\xff\xfe bad\n", Request { command: Some("cat"), ..Request::default() }) {
            Reduced::Bytes(t) => assert_eq!(t.fallback.as_deref(), Some("the output is not UTF-8")),
            Reduced::Text(_) => panic!("non-UTF-8 output must not be compacted"),
        }
    }

    #[test]
    fn the_trace_line_names_how_the_reducer_was_chosen() {
        let out = compact::compact(&Request {
            command: Some("cat test.log"),
            output: "running 1 test\ntest a ... ok\n\ntest result: ok. 1 passed; 0 failed\n",
            ..Request::default()
        });
        let line = trace_line("compact", &out.trace);
        assert!(line.contains("reducer tests/cargo (content: `running 1 test`)"), "{line}");
        assert!(line.contains("producers [\"cat test.log\"]"), "{line}");
    }
}
