//! `toolstream hooks status|deliver`: what the Cursor hook spool holds, and its delivery.
//! `deliver` is what a hook starts, detached, when a turn closes; run by hand it delivers what is
//! pending now (to the sinks `install cursor` configured, or those named).

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;

use clap::{Args, Subcommand};
use serde::Serialize;
use toolstream_schemas::display::{display_line, DISPLAY_LINE_CHARS};

use super::{FormatArg, InputArgs};
use toolstream_engine::cursor_hooks::deliver::{deliver, due, read_spools, DeliverSettings, TurnState};
use toolstream_engine::cursor_hooks::{configured_sinks, spool, HookPaths};
use toolstream_engine::sinks::SinkSpec;

/// Delivery passes one `deliver` runs at most (more requests come in while it works).
const MAX_PASSES: usize = 16;

#[derive(Debug, Args)]
pub struct HooksArgs {
    #[command(subcommand)]
    pub command: HooksCommand,
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// What the Cursor hook spool holds: per conversation its events, its turns (closed, idle,
    /// still open), what each sink took and what is pending; then the hook log's last lines.
    Status(StatusArgs),
    /// Deliver the closed turns each sink has not taken yet (a hook starts this, detached, when
    /// a turn closes); then prune old spools. One delivery runs at a time; a request that comes
    /// meanwhile makes it run again.
    Deliver(DeliverArgs),
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The sinks to count pending turns for (default: those `install cursor` configured).
    #[arg(long = "sink", value_name = "SPEC")]
    pub sinks: Vec<SinkSpec>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DeliverArgs {
    /// Where to deliver (default: the sinks `install cursor` configured).
    #[arg(long = "sink", value_name = "SPEC")]
    pub sinks: Vec<String>,
    /// Configuration file (as for `replay`).
    #[arg(long, value_name = "PATH")]
    pub config: Option<std::path::PathBuf>,
}

pub fn run(args: HooksArgs) -> anyhow::Result<i32> {
    match args.command {
        HooksCommand::Status(a) => status(a),
        HooksCommand::Deliver(a) => run_deliver(a),
    }
}

/// The sinks named, else the configured ones; ones that do not parse are said in the log.
fn sinks(paths: &HookPaths, named: Vec<String>) -> Vec<SinkSpec> {
    let names = if named.is_empty() { configured_sinks(paths) } else { named };
    names
        .into_iter()
        .filter_map(|s| match s.parse::<SinkSpec>() {
            Ok(spec) => Some(spec),
            Err(e) => {
                spool::log(paths, "delivery", &format!("--sink {s}: {e}"));
                None
            }
        })
        .collect()
}

#[derive(Debug, Default, Serialize)]
struct ConversationStatus {
    events: u64,
    bytes: u64,
    turns: usize,
    open: usize,
    idle: usize,
    delivered: BTreeMap<String, usize>,
    pending: BTreeMap<String, usize>,
}

#[derive(Debug, Default, Serialize)]
struct Status {
    spool: String,
    sinks: Vec<String>,
    conversations: BTreeMap<String, ConversationStatus>,
    pending: BTreeMap<String, usize>,
    log: Vec<String>,
}

fn status(args: StatusArgs) -> anyhow::Result<i32> {
    let paths = HookPaths::locate()?;
    let cfg = InputArgs::hooks().config()?;
    let specs = if args.sinks.is_empty() { sinks(&paths, Vec::new()) } else { args.sinks.clone() };
    let spooled = read_spools(&paths, spool::now_ms(), cfg.hook_turn_idle_ms.value)?;
    let mut st = Status {
        spool: paths.spool_dir().display().to_string(),
        sinks: specs.iter().map(SinkSpec::label).collect(),
        log: spool::log_tail(&paths, 10),
        ..Status::default()
    };
    for (conv, (events, bytes)) in &spooled.records {
        let c = st.conversations.entry(conv.clone()).or_default();
        c.events = *events;
        c.bytes = *bytes;
    }
    for t in spooled.turns.values() {
        let c = st.conversations.entry(toolstream_engine::cursor_hooks::file_name(&t.conversation)).or_default();
        c.turns += 1;
        c.open += usize::from(t.state == TurnState::Open);
        c.idle += usize::from(t.state == TurnState::Idle);
        for s in &t.delivered {
            *c.delivered.entry(s.clone()).or_default() += 1;
        }
    }
    for spec in &specs {
        let label = spec.label();
        let pending = due(&spooled, spec).unwrap_or_default();
        // Whole-conversation sinks re-take delivered turns with new ones: count only the new.
        for key in pending.iter().filter(|k| spooled.turns.get(*k).is_some_and(|t| !t.delivered.contains(&label))) {
            let c = st.conversations.entry(toolstream_engine::cursor_hooks::file_name(&key.conversation)).or_default();
            *c.pending.entry(label.clone()).or_default() += 1;
            *st.pending.entry(label.clone()).or_default() += 1;
        }
    }
    if args.json {
        println!("{}", serde_json::to_string(&st)?);
        return Ok(0);
    }
    println!("spool: {} ({} conversation(s))", st.spool, st.conversations.len());
    println!("sinks: {}", if st.sinks.is_empty() { "none configured".to_owned() } else { st.sinks.join(", ") });
    println!(
        "{:<38} {:>7} {:>9} {:>6} {:>5} {:>5}  pending",
        "conversation", "events", "bytes", "turns", "open", "idle"
    );
    for (id, c) in &st.conversations {
        let pending: Vec<String> = c.pending.iter().map(|(s, n)| format!("{n} → {s}")).collect();
        let pending = if pending.is_empty() { "-".to_owned() } else { pending.join(", ") };
        let id = display_line(id, DISPLAY_LINE_CHARS);
        let pending = display_line(&pending, DISPLAY_LINE_CHARS);
        println!("{id:<38} {:>7} {:>9} {:>6} {:>5} {:>5}  {pending}", c.events, c.bytes, c.turns, c.open, c.idle);
    }
    if st.pending.is_empty() {
        println!("pending: none");
    } else {
        for (s, n) in &st.pending {
            println!("pending: {n} turn(s) not yet delivered to {s}");
        }
    }
    if !st.log.is_empty() {
        println!("hook log ({}):", paths.log_file().display());
        for l in &st.log {
            println!("  {}", display_line(l, DISPLAY_LINE_CHARS));
        }
    }
    Ok(0)
}

/// Holds the delivery lock while alive.
struct Lock {
    _file: std::fs::File,
}

/// Take the delivery lock, or `None` when another delivery holds it.
fn lock(paths: &HookPaths) -> std::io::Result<Option<Lock>> {
    toolstream_engine::state_dir::private_dir(&paths.root)?;
    let file = OpenOptions::new().create(true).truncate(false).write(true).open(paths.lock_file())?;
    #[cfg(unix)]
    {
        use rustix::fs::{flock, FlockOperation};
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Some(Lock { _file: file }))
}

fn run_deliver(args: DeliverArgs) -> anyhow::Result<i32> {
    // Detached from the hook's session: Cursor neither waits for nor signals this process.
    #[cfg(unix)]
    let _ = rustix::process::setsid();
    let paths = HookPaths::locate()?;
    let specs = sinks(&paths, args.sinks);
    let Some(mut held) = lock_or_ask(&paths)? else { return Ok(0) };
    let mut input = InputArgs::hooks();
    input.config = args.config;
    let cfg = input.config()?;
    let mut pipeline = input.pipeline_options(&cfg)?;
    pipeline.sink_grace = std::time::Duration::from_secs(10);
    let mut settings = DeliverSettings {
        sinks: specs,
        now_ms: spool::now_ms(),
        idle_ms: cfg.hook_turn_idle_ms.value,
        pipeline,
        trace_limit_bytes: cfg.trace_limit_bytes.value,
        otel: cfg.otel_content(),
    };
    let mut failed = false;
    for _ in 0..MAX_PASSES {
        let _ = std::fs::remove_file(paths.again_file());
        settings.now_ms = spool::now_ms();
        match deliver(&paths, &settings) {
            Ok(outcomes) => {
                for o in outcomes {
                    let what = if o.delivered { "delivered" } else { "not delivered" };
                    let why = o.problem.map(|p| format!(": {p}")).unwrap_or_default();
                    println!("{}: {} turn(s) {what}{why}", o.sink, o.turns);
                    failed |= !o.delivered;
                }
            }
            Err(e) => {
                spool::log(&paths, "delivery", &format!("cannot read the spool: {e}"));
                failed = true;
            }
        }
        if paths.again_file().exists() {
            continue;
        }
        prune(&paths, &settings, &cfg);
        drop(held);
        // A delivery asked for while this one was finishing found the lock taken and left its
        // request after that check: serve it now, unless that delivery took the lock itself.
        if !paths.again_file().exists() {
            return Ok(i32::from(failed));
        }
        match lock(&paths)? {
            Some(again) => held = again,
            None => return Ok(i32::from(failed)),
        }
    }
    prune(&paths, &settings, &cfg);
    Ok(i32::from(failed))
}

/// The delivery lock; or, when a delivery holds it, a request that it pass again. The request is
/// left before the lock is tried a second time, and a delivery looks for requests after it lets
/// the lock go: whichever order the two take, one of them delivers what this one was started for.
fn lock_or_ask(paths: &HookPaths) -> std::io::Result<Option<Lock>> {
    if let Some(held) = lock(paths)? {
        return Ok(Some(held));
    }
    let mut f = OpenOptions::new().create(true).truncate(true).write(true).open(paths.again_file())?;
    f.write_all(b"1")?;
    lock(paths)
}

/// Remove old spools; those still pending somewhere are said in the log.
fn prune(paths: &HookPaths, settings: &DeliverSettings, cfg: &toolstream_engine::config::Config) {
    let spooled = read_spools(paths, settings.now_ms, settings.idle_ms).unwrap_or_default();
    let pending: std::collections::BTreeSet<String> = settings
        .sinks
        .iter()
        .flat_map(|s| due(&spooled, s).unwrap_or_default())
        .map(|k| toolstream_engine::cursor_hooks::file_name(&k.conversation))
        .collect();
    let open: std::collections::BTreeSet<String> = spooled
        .turns
        .values()
        .filter(|t| t.state == TurnState::Open)
        .map(|t| toolstream_engine::cursor_hooks::file_name(&t.conversation))
        .collect();
    let max_age = std::time::Duration::from_secs(cfg.hook_spool_max_age_days.value.saturating_mul(86_400));
    let delivered = |c: &str| !pending.contains(c) && !open.contains(c);
    let pruned = spool::prune(paths, max_age, cfg.hook_spool_max_bytes.value, &delivered);
    if let Ok(p) = &pruned {
        tracing::debug!(files = p.files, bytes = p.bytes, undelivered = p.undelivered, "spools pruned");
    }
    match pruned {
        Ok(p) if p.undelivered > 0 => spool::log(
            paths,
            "prune",
            &format!(
                "{} spool(s) removed before every sink took them (age or size limit); their turns are lost",
                p.undelivered
            ),
        ),
        Ok(_) => {}
        Err(e) => spool::log(paths, "prune", &format!("{e}")),
    }
}

impl InputArgs {
    /// The input settings of a hook delivery: one shard (a few turns at a time), the rest as
    /// configured.
    pub(super) fn hooks() -> InputArgs {
        InputArgs {
            config: None,
            shards: Some("1".into()),
            format: FormatArg::CursorHooks,
            strict: false,
            max_line_bytes: None,
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_delivery_asked_for_while_one_holds_the_lock_leaves_a_request_and_takes_the_lock_once_free() {
        let root = std::env::temp_dir().join(format!("toolstream-lock-{}", std::process::id()));
        let paths = HookPaths::new(&root);
        let held = lock(&paths).unwrap().expect("the lock is free");
        assert!(lock_or_ask(&paths).unwrap().is_none(), "held by the running delivery");
        assert!(paths.again_file().exists(), "the request is left for it");
        drop(held);
        let _ = std::fs::remove_file(paths.again_file());
        assert!(lock_or_ask(&paths).unwrap().is_some(), "free again: this delivery runs itself");
        assert!(!paths.again_file().exists(), "and asks nothing of anyone");
        let _ = std::fs::remove_dir_all(&root);
    }
}
