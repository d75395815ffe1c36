//! `toolstream config`: show the effective configuration (defaults, config file, environment) with
//! where each value came from, as an aligned table or one JSON object. Never shows the API key.
//! `--markdown` prints the reference tables of the docs (every setting, every sink), generated
//! from the settings table and the sink registry; a test checks the docs hold exactly these.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use toolstream_schemas::display::{display_line, DISPLAY_LINE_CHARS};

use toolstream_engine::config::{Config, Origin};

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Print one JSON object `{name: {value, origin, env, flag, rule, doc}}` instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print the docs' reference tables (every setting with its default, every sink) as Markdown,
    /// each between the marker lines the docs keep it in.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Config file to read instead of searching `$TOOLSTREAM_CONFIG`, `./toolstream.toml`,
    /// `$XDG_CONFIG_HOME/toolstream/config.toml` (or `~/.config/toolstream/config.toml`).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

pub fn run(args: ConfigArgs) -> anyhow::Result<i32> {
    let mut out = io::stdout().lock();
    if args.markdown {
        // The defaults only: the docs describe no one's environment.
        return finish(write!(out, "{}", docs_tables()).and_then(|()| out.flush()));
    }
    let config = Config::from_process_env(args.config.as_deref())?;
    let written = if args.json {
        writeln!(out, "{}", serde_json::to_string(&config.to_json())?)
    } else {
        write!(out, "{}", table(&config))
    };
    finish(written.and_then(|()| out.flush()))
}

fn finish(written: io::Result<()>) -> anyhow::Result<i32> {
    match written {
        // A closed stdout (`| head`) is a quiet end.
        Ok(()) => Ok(0),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to standard output")),
    }
}

/// The marker lines around a generated table in the docs: `<!-- toolstream config --markdown:
/// NAME -->` … `<!-- end NAME -->`.
pub fn markers(name: &str) -> (String, String) {
    (format!("<!-- toolstream config --markdown: {name} -->"), format!("<!-- end {name} -->"))
}

/// The docs' reference tables: `settings` (from the settings table, defaults as built in) and
/// `sinks` (from the sink registry).
pub fn docs_tables() -> String {
    let defaults = Config::defaults();
    let mut settings = String::from(
        "| setting | environment | flag | default | rule | what it does |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    for (name, value, _, env, rule) in defaults.entries() {
        let Some(decl) = toolstream_engine::config::all_decls().find(|d| d.name == name) else { continue };
        // The number of shards follows the machine's cores (its doc says how).
        let value = if name == "shards" { "per machine".to_owned() } else { format!("`{value}`") };
        let env = env.split(", ").map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ");
        let flag = decl.flag.map(|f| format!("`{f}`")).unwrap_or_default();
        let doc = decl.doc.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|");
        settings.push_str(&format!("| `{name}` | {env} | {flag} | {value} | {rule} | {doc} |\n"));
    }
    let mut sinks = String::from("| sink | what it writes | `when_full` default |\n| --- | --- | --- |\n");
    for k in toolstream_engine::sinks::spec::KINDS {
        sinks.push_str(&format!("| `{}` | {} | `{}` |\n", k.usage(), k.help.replace('|', "\\|"), k.when_full.as_str()));
    }
    [("settings", settings), ("sinks", sinks)]
        .into_iter()
        .map(|(name, table)| {
            let (open, close) = markers(name);
            format!("{open}\n{table}{close}\n")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `config file: …` then an aligned `NAME  VALUE  FROM  ENV  RULE` table. Values and where they came
/// from (file names, environment values) are shown as display lines (SPEC §8).
fn table(config: &Config) -> String {
    let shown = |s: &str| display_line(s, DISPLAY_LINE_CHARS);
    let mut out = match &config.config_file.value {
        Some(path) => {
            let from = match &config.config_file.origin {
                Origin::Default => "found by the default search".to_owned(),
                other => other.to_string(),
            };
            format!("config file: {}\n\n", shown(&format!("{} ({from})", path.display())))
        }
        None => "config file: none\n\n".to_owned(),
    };
    let rows: Vec<_> = config
        .entries()
        .into_iter()
        .filter(|(name, ..)| *name != "config_file")
        .map(|(name, value, from, env, rule)| (name, shown(&value), shown(&from), env, rule))
        .collect();
    let width = |f: fn(&(&'static str, String, String, String, String)) -> usize, header: &str| {
        rows.iter().map(f).chain([header.chars().count()]).max().unwrap_or(0)
    };
    let w_name = width(|r| r.0.chars().count(), "NAME");
    let w_value = width(|r| r.1.chars().count(), "VALUE");
    let w_from = width(|r| r.2.chars().count(), "FROM");
    let w_env = width(|r| r.3.chars().count(), "ENV");
    let mut line = |name: &str, value: &str, from: &str, env: &str, rule: &str| {
        let text = format!("{name:<w_name$}  {value:<w_value$}  {from:<w_from$}  {env:<w_env$}  {rule}");
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line("NAME", "VALUE", "FROM", "ENV", "RULE");
    for (name, value, from, env, rule) in &rows {
        line(name, value, from, env, rule);
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn table_is_aligned_and_hides_the_key() {
        let mut config = Config::defaults();
        config.api_key.value = toolstream_engine::config::Secret::new(Some("sk-secret-value".into()));
        config.shards.set_cli(3, "--shards");
        let t = table(&config);
        assert!(t.starts_with("config file: none\n\nNAME "), "{t}");
        assert!(!t.contains("sk-secret-value"));
        let lines: Vec<&str> = t.lines().skip(2).collect();
        let col = lines[0].find("VALUE").unwrap();
        let shards = lines.iter().find(|l| l.starts_with("shards ")).unwrap();
        assert_eq!(shards.find('3'), Some(col));
        assert!(shards.contains("flag --shards  TOOLSTREAM_SHARDS  "), "{shards}");
        assert!(shards.ends_with(" ≥ 1, at most 64 (more is clamped)"), "{shards}");
        assert!(lines.iter().any(|l| l.starts_with("api_key ") && l.contains("(set)")));
    }
}
