//! The sink registry: every sink a user can name, its argument, its default `when_full`, and how
//! it is opened. A sink is named on the command line as `NAME[=ARG][,when_full=block|drop_newest]`
//! (`--sink cards`, `--sink jsonl=trace.jsonl,when_full=drop_newest`); without `when_full` the
//! config setting `<name>_when_full` decides, else the sink's default. Adding a sink is one row
//! here and one arm in [`SinkSpec::plan`].

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::str::FromStr;

use toolstream_schemas::OutputEvent;
use toolstream_sinks::cards::{CardsOptions, CardsSink};
use toolstream_sinks::cursor_db::{CursorDbOptions, CursorDbSink};
use toolstream_sinks::jsonl_trace::JsonlTraceSink;
use toolstream_sinks::openai::OpenAiSseSink;
use toolstream_sinks::otel::config::{ContentCapture, OtelConfig, OtelEnv, Protocol, TextScrub};
use toolstream_sinks::otel::OtelSink;
use toolstream_sinks::output_file::{open_stream_kept, Emptying};
use toolstream_sinks::pi_session::dir::{PiSessionsOptions, PiSessionsSink, SessionsRoot};
use toolstream_sinks::pi_session::PiSessionSink;
use toolstream_sinks::{LossProbe, Sink, SinkError};

use super::port::WhenFull;
use super::thread::{OpenSink, SinkPlan};

/// The kinds of sink, one row each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SinkKind {
    Cards,
    Jsonl,
    PiSession,
    PiSessions,
    CursorDb,
    Otlp,
    OtlpGrpc,
    OpenAiSse,
}

/// A sink's argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    None,
    /// Required, e.g. `PATH`.
    Required(&'static str),
    /// Optional, e.g. `DIR` (`--sink otlp` alone reads `OTEL_EXPORTER_OTLP_*`).
    Optional(&'static str),
}

/// What the registry says of one kind.
#[derive(Debug)]
pub struct KindInfo {
    pub kind: SinkKind,
    /// How it is named: `--sink <name>`.
    pub name: &'static str,
    /// Its argument (`PATH`), if it takes one.
    pub arg: Arg,
    /// Its `when_full` unless configured: `block` for files and the terminal, `drop_newest` for
    /// network sinks.
    pub when_full: WhenFull,
    pub help: &'static str,
}

/// The registry.
pub const KINDS: &[KindInfo] = &[
    KindInfo {
        kind: SinkKind::Cards,
        name: "cards",
        arg: Arg::None,
        when_full: WhenFull::Block,
        help: "terminal cards on stdout (the default when no sink is named)",
    },
    KindInfo {
        kind: SinkKind::Jsonl,
        name: "jsonl",
        arg: Arg::Required("PATH"),
        when_full: WhenFull::Block,
        help: "the JSONL debug trace: allowlisted fields, hashed call ids, capped at 2 MiB",
    },
    KindInfo {
        kind: SinkKind::PiSession,
        name: "pi-session",
        arg: Arg::Required("PATH"),
        when_full: WhenFull::Block,
        help: "one pi session file (format v3) for every run, written whole and renamed into place: open it \
               with `pi --session PATH`",
    },
    KindInfo {
        kind: SinkKind::PiSessions,
        name: "pi-sessions",
        arg: Arg::Optional("DIR"),
        when_full: WhenFull::Block,
        help: "one pi session per Cursor chat, named as pi names its own, in DIR or by default in pi's \
               sessions folder for the chat's working directory, so `pi -r` lists them; an existing file is \
               left alone unless --force",
    },
    KindInfo {
        kind: SinkKind::CursorDb,
        name: "cursor-db",
        arg: Arg::Required("PATH"),
        when_full: WhenFull::Block,
        help: "each run as a conversation of a Cursor chat database (created if absent)",
    },
    KindInfo {
        kind: SinkKind::Otlp,
        name: "otlp",
        arg: Arg::Optional("URL"),
        when_full: WhenFull::DropNewest,
        help: "OpenTelemetry traces and metrics over OTLP HTTP/protobuf to URL (`http://HOST:4318`); \
               without URL, from OTEL_EXPORTER_OTLP_ENDPOINT / _PROTOCOL / _HEADERS",
    },
    KindInfo {
        kind: SinkKind::OtlpGrpc,
        name: "otlp-grpc",
        arg: Arg::Optional("URL"),
        when_full: WhenFull::DropNewest,
        help: "OpenTelemetry traces and metrics over OTLP gRPC to URL (`http://HOST:4317`)",
    },
    KindInfo {
        kind: SinkKind::OpenAiSse,
        name: "openai-sse",
        arg: Arg::Required("PATH"),
        when_full: WhenFull::Block,
        help: "the OpenAI `chat.completion.chunk` server-sent events a client would have received for each run",
    },
];

impl SinkKind {
    pub fn info(self) -> &'static KindInfo {
        // Every kind has exactly one row (a unit test checks it).
        KINDS.iter().find(|k| k.kind == self).unwrap_or(&KINDS[0])
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// `cards` / `jsonl` / `pi_session`: the stem of its config setting `<stem>_when_full`.
    pub fn setting_stem(self) -> String {
        self.name().replace('-', "_")
    }

    fn by_name(name: &str) -> Option<SinkKind> {
        KINDS.iter().find(|k| k.name == name).map(|k| k.kind)
    }
}

/// The list of sinks for messages: `cards, jsonl=PATH, pi-session=PATH`.
pub fn available() -> String {
    KINDS.iter().map(KindInfo::usage).collect::<Vec<_>>().join(", ")
}

impl KindInfo {
    /// How it is written on the command line: `cards`, `jsonl=PATH`, `otlp[=URL]`.
    pub fn usage(&self) -> String {
        match self.arg {
            Arg::Required(arg) => format!("{}={arg}", self.name),
            Arg::Optional(arg) => format!("{}[={arg}]", self.name),
            Arg::None => self.name.to_owned(),
        }
    }
}

/// The long `--sink` help of a command, generated from the registry: `lead`, then one line per
/// kind (except those in `skip`) with what it does and its `when_full` default and setting.
pub fn sinks_help(lead: &str, skip: &[SinkKind]) -> String {
    let mut out = lead.to_owned();
    for k in KINDS.iter().filter(|k| !skip.contains(&k.kind)) {
        out.push_str(&format!(
            "\n  {}: {} (when full: {}; setting `{}_when_full`)",
            k.usage(),
            k.help,
            k.when_full.as_str(),
            k.kind.setting_stem()
        ));
    }
    out.push_str(
        "\nAppend `,when_full=block` (wait for a full sink) or `,when_full=drop_newest` (drop and count \
         what it cannot take) to a sink to choose for it alone.",
    );
    out
}

/// A sink as the user named it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkSpec {
    pub kind: SinkKind,
    pub path: Option<PathBuf>,
    /// `,when_full=…` given with the sink; else the config's, else the kind's default.
    pub when_full: Option<WhenFull>,
}

impl SinkSpec {
    pub fn new(kind: SinkKind, path: Option<PathBuf>) -> SinkSpec {
        SinkSpec { kind, path, when_full: None }
    }

    /// Whether it writes to stdout (`cards`): where stdout carries a protocol, it cannot be used.
    pub fn writes_stdout(&self) -> bool {
        self.kind == SinkKind::Cards
    }

    /// How reports name it: `jsonl=trace.jsonl`, `cards`.
    pub fn label(&self) -> String {
        match &self.path {
            Some(p) => format!("{}={}", self.kind.name(), p.display()),
            None => self.kind.name().to_owned(),
        }
    }
}

impl fmt::Display for SinkSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())?;
        if let Some(w) = self.when_full {
            write!(f, ",when_full={w}")?;
        }
        Ok(())
    }
}

impl FromStr for SinkSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // Options come last, as `,key=value`; a path may itself hold commas.
        let mut rest = s;
        let mut when_full = None;
        while let Some((head, opt)) = rest.rsplit_once(',') {
            let Some(value) = opt.strip_prefix("when_full=") else { break };
            if when_full.is_some() {
                return Err("`when_full` is given twice".into());
            }
            when_full = Some(WhenFull::parse(value)?);
            rest = head;
        }
        let (name, arg) = match rest.split_once('=') {
            Some((n, a)) => (n, Some(a)),
            None => (rest, None),
        };
        let Some(kind) = SinkKind::by_name(name) else {
            return Err(format!("unknown sink `{name}`; available: {}", available()));
        };
        let info = kind.info();
        let path = match (info.arg, arg) {
            (Arg::None, None) | (Arg::Optional(_), None) => None,
            (Arg::None, Some(_)) => return Err(format!("`{name}` takes no argument")),
            (Arg::Required(_) | Arg::Optional(_), Some(a)) if !a.is_empty() => Some(PathBuf::from(a)),
            (Arg::Required(what) | Arg::Optional(what), _) => {
                return Err(format!("`{name}` needs a {what}: `--sink {name}={what}`"))
            }
        };
        Ok(SinkSpec { kind, path, when_full })
    }
}

/// Whether any of `specs` needs the recorded calls themselves kept (only a Cursor chat database
/// stores them).
pub fn keeps_recorded(specs: &[SinkSpec]) -> bool {
    specs.iter().any(|s| s.kind == SinkKind::CursorDb)
}

/// What opening a sink needs from the command.
#[derive(Clone, Debug)]
pub struct SinkContext {
    pub cards: CardsOptions,
    pub trace_limit_bytes: u64,
    /// `pi-session`, `pi-sessions`: replace session files that exist (`--force`).
    pub overwrite_sessions: bool,
    /// `cursor-db`: the database the run reads (`--from-cursor-db`), never written.
    pub reading_db: Option<PathBuf>,
    /// `cursor-db`: the user said Cursor is closed, so its own `state.vscdb` may be written.
    pub allow_cursor_state_db: bool,
    /// The OTLP sinks' content capture.
    pub otel: OtelContent,
}

/// What content the OTLP sinks write, and the scrubber for the part the engine leaves unscrubbed
/// (the assistant's own text).
#[derive(Clone, Debug)]
pub struct OtelContent {
    pub capture: ContentCapture,
    pub scrub: TextScrub,
    /// The standard `OTEL_*` variables, as the settings table read them.
    pub env: OtelEnv,
}

impl OtelContent {
    /// `capture`, with `api_key` scrubbed too, under the variables `env` (as configured:
    /// `Config::otel_content`).
    pub fn new(capture: ContentCapture, api_key: Option<String>, env: OtelEnv) -> OtelContent {
        let scrubber = toolstream_actors::present::scrub::Scrubber::new(api_key);
        let scrub = TextScrub(std::sync::Arc::new(move |s: &str| scrubber.scrub(s).into_owned()));
        OtelContent { capture, scrub, env }
    }
}

impl Default for OtelContent {
    /// No content, no variables.
    fn default() -> OtelContent {
        OtelContent::new(ContentCapture::NoContent, None, OtelEnv::default())
    }
}

impl SinkContext {
    /// For a command with no terminal of its own (pi-provider, bench): default cards, no database
    /// being read, existing pi session files never replaced.
    pub fn headless(trace_limit_bytes: u64) -> SinkContext {
        SinkContext {
            cards: CardsOptions::default(),
            trace_limit_bytes,
            overwrite_sessions: false,
            reading_db: None,
            allow_cursor_state_db: false,
            otel: OtelContent::default(),
        }
    }
}

impl SinkSpec {
    /// How to start this sink, with its `when_full` resolved (`configured`: the config setting of
    /// its kind, when set).
    pub fn plan(&self, ctx: &SinkContext, configured: Option<WhenFull>) -> SinkPlan {
        let when_full = self.when_full.or(configured).unwrap_or(self.kind.info().when_full);
        let path = self.path.clone().unwrap_or_default();
        let open: OpenSink = match self.kind {
            SinkKind::Cards => {
                let opts = ctx.cards;
                Box::new(move || Ok(Box::new(CardsSink::new(io::BufWriter::new(io::stdout()), opts)) as Box<dyn Sink>))
            }
            SinkKind::Jsonl => {
                let limit = ctx.trace_limit_bytes;
                Box::new(move || {
                    let (file, emptying) = open_stream_kept(&path).map_err(|source| SinkError::Other {
                        sink: "jsonl",
                        message: format!("cannot create trace file {}: {source}", path.display()),
                    })?;
                    let sink = JsonlTraceSink::new(io::BufWriter::new(file), limit);
                    Ok(EmptiedAtBegin::wrap(Box::new(sink), emptying))
                })
            }
            SinkKind::PiSession => {
                let overwrite = ctx.overwrite_sessions;
                Box::new(move || {
                    let sink = PiSessionSink::create(&path, overwrite).map_err(|source| SinkError::Other {
                        sink: "pi-session",
                        message: format!("cannot write pi session {}: {source}", path.display()),
                    })?;
                    Ok(Box::new(sink) as Box<dyn Sink>)
                })
            }
            SinkKind::PiSessions => {
                let (dir, overwrite) = (self.path.clone(), ctx.overwrite_sessions);
                Box::new(move || {
                    let root = match dir {
                        Some(d) => SessionsRoot::Flat(d),
                        None => {
                            let home = std::env::var_os("HOME").map(PathBuf::from);
                            SessionsRoot::from_pi_env(|k| std::env::var(k).ok(), home.as_deref()).map_err(|e| {
                                SinkError::Other {
                                    sink: "pi-sessions",
                                    message: format!("cannot find pi's sessions folder: {e}"),
                                }
                            })?
                        }
                    };
                    tracing::debug!(?root, "pi sessions go here");
                    Ok(Box::new(PiSessionsSink::new(PiSessionsOptions { root, overwrite })) as Box<dyn Sink>)
                })
            }
            SinkKind::CursorDb => {
                let (reading, allow) = (ctx.reading_db.clone(), ctx.allow_cursor_state_db);
                Box::new(move || {
                    let fail = |message| SinkError::Other { sink: "cursor-db", message };
                    // The source reads its file without locks: writing it under the source would
                    // corrupt what it reads (and change a file the source promises not to change).
                    if let Some(source) = reading {
                        if let (Ok(a), Ok(b)) = (source.canonicalize(), path.canonicalize()) {
                            if a == b {
                                return Err(fail(format!(
                                    "{}: cannot write into the database being read",
                                    path.display()
                                )));
                            }
                        }
                    }
                    let sink = CursorDbSink::create(&path, CursorDbOptions { allow_cursor_state_db: allow })
                        .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
                    Ok(Box::new(sink) as Box<dyn Sink>)
                })
            }
            SinkKind::OpenAiSse => Box::new(move || {
                let (file, emptying) = open_stream_kept(&path).map_err(|source| SinkError::Other {
                    sink: "openai-sse",
                    message: format!("cannot create {}: {source}", path.display()),
                })?;
                Ok(EmptiedAtBegin::wrap(Box::new(OpenAiSseSink::new(io::BufWriter::new(file))), emptying))
            }),
            SinkKind::Otlp | SinkKind::OtlpGrpc => {
                let protocol = (self.kind == SinkKind::OtlpGrpc).then_some(Protocol::Grpc);
                let endpoint = self.path.as_ref().map(|p| p.display().to_string());
                let name = self.kind.name();
                let content = ctx.otel.clone();
                Box::new(move || {
                    let mut cfg = OtelConfig::new(endpoint.as_deref(), protocol, &content.env)
                        .map_err(|e| SinkError::Other { sink: name, message: e.to_string() })?;
                    cfg.capture_content = content.capture;
                    Ok(Box::new(OtelSink::open(&cfg, content.scrub)?) as Box<dyn Sink>)
                })
            }
        };
        SinkPlan { label: self.label(), when_full, open }
    }
}

/// A sink that streams into a file opened by `open_stream_kept`: the file is emptied when the run
/// begins, not when it opened: a run that another sink refuses leaves the file as it was.
struct EmptiedAtBegin {
    sink: Box<dyn Sink>,
    emptying: Option<Emptying>,
}

impl EmptiedAtBegin {
    fn wrap(sink: Box<dyn Sink>, emptying: Emptying) -> Box<dyn Sink> {
        Box::new(EmptiedAtBegin { sink, emptying: Some(emptying) })
    }
}

impl Sink for EmptiedAtBegin {
    fn name(&self) -> &'static str {
        self.sink.name()
    }
    fn begin(&mut self) -> Result<(), SinkError> {
        if let Some(emptying) = self.emptying.take() {
            emptying.now().map_err(|source| SinkError::Io { sink: self.sink.name(), source })?;
        }
        self.sink.begin()
    }
    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        self.sink.write(batch)
    }
    fn flush(&mut self) -> Result<(), SinkError> {
        self.sink.flush()
    }
    fn checkpoint(&mut self) -> Result<(), SinkError> {
        self.sink.checkpoint()
    }
    fn loss_probe(&self) -> Option<LossProbe> {
        self.sink.loss_probe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_row() {
        for kind in [
            SinkKind::Cards,
            SinkKind::Jsonl,
            SinkKind::PiSession,
            SinkKind::PiSessions,
            SinkKind::CursorDb,
            SinkKind::Otlp,
            SinkKind::OtlpGrpc,
            SinkKind::OpenAiSse,
        ] {
            assert_eq!(KINDS.iter().filter(|k| k.kind == kind).count(), 1, "{kind:?}");
            assert_eq!(kind.info().kind, kind);
        }
    }

    #[test]
    fn specs_parse_with_options() {
        let p = |s: &str| s.parse::<SinkSpec>();
        assert_eq!(p("cards"), Ok(SinkSpec::new(SinkKind::Cards, None)));
        assert_eq!(p("jsonl=t.jsonl"), Ok(SinkSpec::new(SinkKind::Jsonl, Some("t.jsonl".into()))));
        assert_eq!(
            p("jsonl=a,b.jsonl,when_full=drop_newest"),
            Ok(SinkSpec {
                kind: SinkKind::Jsonl,
                path: Some("a,b.jsonl".into()),
                when_full: Some(WhenFull::DropNewest)
            })
        );
        assert_eq!(p("cards,when_full=block").map(|s| s.when_full), Ok(Some(WhenFull::Block)));
        assert!(p("jsonl").unwrap_err().contains("needs a PATH"));
        assert!(p("cards=x").unwrap_err().contains("takes no argument"));
        assert!(p("nope").unwrap_err().contains(
            "available: cards, jsonl=PATH, pi-session=PATH, pi-sessions[=DIR], cursor-db=PATH, otlp[=URL], otlp-grpc[=URL], openai-sse=PATH"
        ));
        assert_eq!(p("pi-sessions"), Ok(SinkSpec::new(SinkKind::PiSessions, None)));
        assert_eq!(p("pi-sessions=d"), Ok(SinkSpec::new(SinkKind::PiSessions, Some("d".into()))));
        assert!(p("pi-sessions=").is_err());
        assert_eq!(p("otlp"), Ok(SinkSpec::new(SinkKind::Otlp, None)));
        assert_eq!(
            p("otlp-grpc=http://127.0.0.1:4317").map(|s| s.path),
            Ok(Some(PathBuf::from("http://127.0.0.1:4317")))
        );
        assert!(p("cards,when_full=sometimes").unwrap_err().contains("block or drop_newest"));
        assert_eq!(
            p("jsonl=t.jsonl,when_full=drop_newest").unwrap().to_string(),
            "jsonl=t.jsonl,when_full=drop_newest"
        );
    }
}
