//! A real OTLP collector for the tests: `rotel-agent` (PyPI `rotel`, installed into `.venv` by
//! `scripts/install-py`) on 127.0.0.1 with ports picked here, printing what it received
//! (`--debug-log traces --debug-log-verbosity detailed`), which [`Collector::spans`] reads back.
//! Without the collector [`rotel_agent`] says so and tests skip, except under `./scripts/test`
//! (`TOOLSTREAM_REQUIRE_OTEL=1`), where its absence fails them. Every wait is bounded and every
//! collector is killed by its guard. [`SilentCollector`] is the other kind: it accepts connections
//! and never answers.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{tempdir, toolstream};

/// `.venv/bin/rotel-agent`, or `None` (with a note) when absent and not required.
pub fn rotel_agent() -> Option<PathBuf> {
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/rotel-agent");
    let present = agent.exists();
    toolstream_testkit::require(toolstream_testkit::Tool::Otel, present, &agent.display().to_string()).then_some(agent)
}

/// A loopback port, held (bound) until [`HeldPort::release`].
struct HeldPort(TcpListener);

impl HeldPort {
    fn new() -> HeldPort {
        HeldPort(TcpListener::bind("127.0.0.1:0").unwrap())
    }

    fn port(&self) -> u16 {
        self.0.local_addr().unwrap().port()
    }

    /// Let the port go, for the collector about to bind it.
    fn release(self) -> u16 {
        self.port()
    }
}

/// A running collector; killed when dropped.
pub struct Collector {
    child: Child,
    log: PathBuf,
    pub http: u16,
    pub grpc: u16,
}

impl Collector {
    /// Ports picked now, for a collector started later ([`Collector::start_on`]) and absent until
    /// then: they are free (not held) meanwhile, so another process could take them first.
    pub fn ports() -> (u16, u16) {
        (HeldPort::new().release(), HeldPort::new().release())
    }

    /// A collector on ports held until the moment it is started; should another process take one
    /// in that moment (the collector then exits), it is started again on new ports.
    pub fn start(agent: &Path) -> Collector {
        Collector::start_held(agent, &["traces"])
    }

    /// A collector that prints the metrics it receives too ([`Collector::metrics`]).
    pub fn start_with_metrics(agent: &Path) -> Collector {
        Collector::start_held(agent, &["traces", "metrics"])
    }

    /// [`Collector::start`], printing `what` it receives.
    fn start_held(agent: &Path, what: &[&str]) -> Collector {
        for _ in 0..3 {
            let (http, grpc) = (HeldPort::new(), HeldPort::new());
            if let Some(c) = Collector::try_start(agent, http.release(), grpc.release(), what) {
                return c;
            }
        }
        panic!("rotel did not start on three pairs of free ports");
    }

    pub fn start_on(agent: &Path, http: u16, grpc: u16) -> Collector {
        match Collector::try_start(agent, http, grpc, &["traces"]) {
            Some(c) => c,
            None => panic!("rotel could not listen on {http} and {grpc}"),
        }
    }

    /// The collector on `http` and `grpc`, printing `what` it receives, once it listens on both;
    /// `None` when it exited first.
    fn try_start(agent: &Path, http: u16, grpc: u16, what: &[&str]) -> Option<Collector> {
        let dir = tempdir();
        let log = dir.join("rotel.out");
        let out = fs::File::create(&log).unwrap();
        let mut cmd = Command::new(agent);
        cmd.args(["start", "--exporter", "blackhole", "--debug-log-verbosity", "detailed"]);
        for w in what {
            cmd.args(["--debug-log", w]);
        }
        let child = cmd
            .arg("--otlp-http-endpoint")
            .arg(format!("127.0.0.1:{http}"))
            .arg("--otlp-grpc-endpoint")
            .arg(format!("127.0.0.1:{grpc}"))
            .arg("--pid-file")
            .arg(dir.join("rotel.pid"))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        let mut c = Collector { child, log, http, grpc };
        let deadline = Instant::now() + Duration::from_secs(15);
        for port in [http, grpc] {
            while TcpStream::connect(("127.0.0.1", port)).is_err() {
                if c.child.try_wait().unwrap().is_some() {
                    eprintln!("rotel exited before listening on {port}: {}", c.output());
                    return None;
                }
                assert!(Instant::now() < deadline, "rotel did not listen on {port}: {}", c.output());
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Some(c)
    }

    pub fn http_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.http)
    }

    pub fn grpc_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.grpc)
    }

    pub fn output(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The spans printed so far.
    pub fn spans(&self) -> Vec<Span> {
        parse_spans(&self.output())
    }

    /// The data points of the last metrics export printed so far (they are cumulative).
    pub fn metrics(&self) -> Vec<Point> {
        let out = self.output();
        let last = out.rfind("ResourceMetrics #").map_or("", |i| &out[i..]);
        parse_points(last.split("ResourceSpans #").next().unwrap_or_default())
    }

    /// Wait (bounded) until at least `n` spans were printed; the spans. While it waits it only
    /// counts them (parsing a 100,000-span log at every poll took longer than receiving it).
    pub fn wait_for(&self, n: usize, within: Duration) -> Vec<Span> {
        let deadline = Instant::now() + within;
        while span_count(&self.output()) < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        // Anything more (duplicates) would show within a moment.
        std::thread::sleep(Duration::from_millis(300));
        self.spans()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A "collector" on 127.0.0.1 that accepts every connection, reads what it is sent and never
/// answers (a hung collector, or a proxy that holds requests). Stops when dropped.
pub struct SilentCollector {
    pub port: u16,
    stop: Arc<AtomicBool>,
    accepting: Option<std::thread::JoinHandle<()>>,
}

impl SilentCollector {
    pub fn start() -> SilentCollector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let accepting = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let flag = flag.clone();
                        std::thread::spawn(move || swallow(conn, &flag));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        SilentCollector { port, stop, accepting: Some(accepting) }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// Read a connection to its end without ever writing a byte.
fn swallow(mut conn: TcpStream, stop: &AtomicBool) {
    use std::io::Read;
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(Duration::from_millis(100)));
    let mut buf = [0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match conn.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}

impl Drop for SilentCollector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.accepting.take() {
            let _ = t.join();
        }
    }
}

/// One span as rotel printed it.
#[derive(Clone, Debug, Default)]
pub struct Span {
    pub service: String,
    pub trace_id: String,
    pub parent_id: String,
    pub id: String,
    pub name: String,
    pub status: String,
    pub attrs: BTreeMap<String, String>,
    pub events: Vec<String>,
}

impl Span {
    pub fn attr(&self, k: &str) -> Option<&str> {
        self.attrs.get(k).map(String::as_str)
    }
}

/// One metric data point as rotel printed it.
#[derive(Clone, Debug, Default)]
pub struct Point {
    pub metric: String,
    pub unit: String,
    pub attrs: BTreeMap<String, String>,
    /// A histogram point's count (sums: 0).
    pub count: u64,
    /// A histogram point's sum, a sum point's value.
    pub value: f64,
}

/// Parse one `ResourceMetrics` block of rotel's detailed debug log: per metric a `Descriptor:`
/// (`-> Name`, `-> Unit`), then data points (`NumberDataPoints #` / `HistogramDataPoints #`) with
/// `Data point attributes:`, `Value:` or `Count:` and `Sum:`.
fn parse_points(out: &str) -> Vec<Point> {
    let mut points: Vec<Point> = Vec::new();
    let (mut metric, mut unit) = (String::new(), String::new());
    for raw in out.lines() {
        let line = raw.trim_start();
        let value = |l: &str| l.split_once(':').map(|(_, v)| v.trim().to_owned()).unwrap_or_default();
        if line.starts_with("NumberDataPoints #") || line.starts_with("HistogramDataPoints #") {
            points.push(Point { metric: metric.clone(), unit: unit.clone(), ..Point::default() });
        } else if let Some(kv) = line.strip_prefix("-> ") {
            let Some((k, v)) = kv.split_once(": ") else { continue };
            let v = v.strip_prefix("Str(").and_then(|v| v.strip_suffix(')')).unwrap_or(v).to_owned();
            match (k, points.last_mut()) {
                ("Name", _) => {
                    metric = v;
                    unit.clear();
                }
                ("Unit", _) => unit = v,
                (_, Some(p)) if p.metric == metric => {
                    p.attrs.insert(k.to_owned(), v);
                }
                _ => {}
            }
        } else if let Some(p) = points.last_mut().filter(|p| p.metric == metric) {
            if line.starts_with("Value:") || line.starts_with("Sum:") {
                p.value = value(line).parse().unwrap_or(0.0);
            } else if line.starts_with("Count:") {
                p.count = value(line).parse().unwrap_or(0);
            }
        }
    }
    points
}

/// The number of spans in rotel's debug log (what [`parse_spans`] would find).
fn span_count(out: &str) -> usize {
    out.lines().filter(|line| line.trim_start().starts_with("Span #")).count()
}

/// Parse rotel's detailed debug log: `Resource attributes:` then per span `Trace ID`, `Parent
/// ID`, `ID`, `Name`, `Status code`, `Attributes:` (`     -> key: Str(v)`) and `Events:`.
fn parse_spans(out: &str) -> Vec<Span> {
    #[derive(PartialEq)]
    enum Mode {
        None,
        Resource,
        Attrs,
        Events,
    }
    let mut spans: Vec<Span> = Vec::new();
    let mut service = String::new();
    let mut mode = Mode::None;
    let field = |line: &str| line.split_once(':').map(|(_, v)| v.trim().to_owned()).unwrap_or_default();
    for raw in out.lines() {
        let line = raw.trim_start();
        if line.starts_with("ResourceSpans #") {
            mode = Mode::None;
            service.clear();
        } else if line.starts_with("Resource attributes:") {
            mode = Mode::Resource;
        } else if line.starts_with("ScopeSpans #") {
            mode = Mode::None;
        } else if line.starts_with("Span #") {
            spans.push(Span { service: service.clone(), ..Span::default() });
            mode = Mode::None;
        } else if line.starts_with("Attributes:") {
            mode = Mode::Attrs;
        } else if line.starts_with("Events:") {
            mode = Mode::Events;
        } else if let Some(kv) = line.strip_prefix("-> ") {
            let indent = raw.len() - line.len();
            let Some((k, v)) = kv.split_once(": ") else { continue };
            let v = v.strip_prefix("Str(").and_then(|v| v.strip_suffix(')')).unwrap_or(v).to_owned();
            match mode {
                Mode::Resource if k == "service.name" => service = v,
                Mode::Attrs if indent <= 6 => {
                    if let Some(s) = spans.last_mut() {
                        s.attrs.insert(k.to_owned(), v);
                    }
                }
                Mode::Events if k == "Name" => {
                    if let Some(s) = spans.last_mut() {
                        s.events.push(v);
                    }
                }
                _ => {}
            }
        } else if let Some(s) = spans.last_mut() {
            if line.starts_with("Trace ID") {
                s.trace_id = field(line);
            } else if line.starts_with("Parent ID") {
                s.parent_id = field(line);
            } else if line.starts_with("ID ") {
                s.id = field(line);
            } else if line.starts_with("Name ") {
                s.name = field(line);
            } else if line.starts_with("Status code") {
                s.status = field(line);
            }
        }
    }
    spans
}

/// The trace shape of one conversation with one subagent: every turn of the conversation a trace
/// of its own, rooted at its `invoke_agent` span and carrying the conversation id; the subagent's
/// run under the `execute_tool task` span of its parent's turn, in that turn's trace, with its
/// own calls under it. The number of root turns.
pub fn check_subagent_nesting(spans: &[Span], conversation: &str, what: &str) -> usize {
    let runs: Vec<&Span> = spans.iter().filter(|s| s.attr("gen_ai.operation.name") == Some("invoke_agent")).collect();
    let roots: Vec<&Span> = runs.iter().copied().filter(|s| s.parent_id.is_empty()).collect();
    let nested: Vec<&Span> = runs.iter().copied().filter(|s| !s.parent_id.is_empty()).collect();
    assert_eq!(nested.len(), 1, "{what}: the one subagent run is nested");
    let traces: HashSet<&str> = roots.iter().map(|s| s.trace_id.as_str()).collect();
    assert_eq!(traces.len(), roots.len(), "{what}: one trace per turn");
    for r in &roots {
        assert_eq!(r.attr("gen_ai.conversation.id"), Some(conversation), "{what}: every turn names its conversation");
    }
    let sub = nested[0];
    let task = spans.iter().find(|s| s.id == sub.parent_id).expect("the subagent's parent span was exported");
    assert_eq!(task.name, "execute_tool task", "{what}: the subagent runs under its task call");
    assert_eq!(task.trace_id, sub.trace_id, "{what}: in its parent's trace");
    let parent_turn = roots.iter().find(|r| r.id == task.parent_id).expect("the task call's own turn");
    assert_eq!(parent_turn.trace_id, sub.trace_id);
    assert_ne!(sub.attr("gen_ai.conversation.id"), Some(conversation), "{what}: the subagent's own conversation");
    let sub_calls: Vec<&Span> = spans.iter().filter(|s| s.parent_id == sub.id).collect();
    assert!(!sub_calls.is_empty(), "{what}: the subagent's calls");
    for c in &sub_calls {
        assert!(c.name.starts_with("execute_tool "), "{what}: {}", c.name);
        assert_eq!(c.trace_id, sub.trace_id, "{what}: the subagent's calls in the same trace");
    }
    roots.len()
}

/// What `toolstream stats --json` counts in `file`: (runs, calls, failed calls).
pub fn expected(file: &Path) -> (usize, usize, usize) {
    let run = toolstream(&["stats", "--json", file.to_str().unwrap()], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let n = |k: &str| v[k].as_u64().unwrap() as usize;
    (n("runs"), n("calls"), n("error_cards") + n("incomplete_calls"))
}
