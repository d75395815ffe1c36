//! The `toolstream` binary: parse the command line, set up logging, run, exit with its code.

use std::io::IsTerminal;

use clap::Parser;
use tracing_subscriber::EnvFilter;

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_env("TOOLSTREAM_LOG").unwrap_or_else(|_| EnvFilter::new("warn")))
        .with_writer(std::io::stderr)
        // No ANSI escapes in logs that go to a file or a pipe.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let cli = toolstream::cli::Cli::parse();
    let code = match toolstream::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("toolstream: {e:#}");
            2
        }
    };
    std::process::exit(code);
}
