//! The `toolstream` binary: parse the command line, set up logging, run, exit with its code.

use std::io::IsTerminal;

use clap::Parser;
use toolstream_engine::config;
use toolstream_schemas::display::display_body;
use tracing_subscriber::EnvFilter;

/// mimalloc: the engine allocates events on the reading thread and frees them on shard and sink
/// threads; glibc's malloc serialises those cross-thread frees on an arena lock (measured: half
/// the engine's time went to malloc, free and the futex waits behind them). Built with `no_thp`:
/// mimalloc then never asks for transparent huge pages (with them, every touched 2 MiB of an arena
/// counted whole and peak RSS was 90-120 MiB on the benchmark corpus). On a host whose THP setting
/// is `always` (not `madvise`) the kernel may still use huge pages; the process-wide opt-out
/// (`prctl`) would also reach the `cursor-agent` children, so it is not used.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    tracing_subscriber::fmt()
        // The MCP SDK's own logs are off unless asked for (TOOLSTREAM_LOG): its warnings quote JSON-RPC
        // errors, and the pi bridge's stderr must never carry error texts, args or results (SPEC §7).
        .with_env_filter(
            EnvFilter::try_from_env(config::LOG_ENV).unwrap_or_else(|_| EnvFilter::new(config::DEFAULT_LOG)),
        )
        .with_writer(std::io::stderr)
        // Fields quote input (file names, sink specs, errors): written as display lines.
        .fmt_fields(toolstream_engine::stderr::log_fields())
        // No ANSI escapes in logs that go to a file or a pipe.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let cli = match toolstream::commands::Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version: our own text, on stdout.
        Err(e) if !e.use_stderr() => e.exit(),
        // A usage error quotes what was typed (a file name, a sink spec): shown as display body
        // text, without clap's colours.
        Err(e) => {
            eprint!("{}", display_body(&e.render().to_string()));
            std::process::exit(e.exit_code());
        }
    };
    let code = match toolstream::commands::run(cli) {
        Ok(code) => code,
        Err(e) => {
            toolstream_engine::say!("toolstream: {e:#}");
            2
        }
    };
    toolstream_engine::exit::exit(code);
}
