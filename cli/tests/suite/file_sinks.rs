//! What every file sink (`jsonl`, `openai-sse`, `pi-session`, `pi-sessions`, `cursor-db`) does with
//! what is at its PATH, end to end with the real binary (docs/sinks.md, "What a file sink does at its PATH"):
//! an existing regular file (replaced only as each sink's rule says; `pi-session` refuses it
//! without `--force`), a symlink (its target written, the link kept), a FIFO and a device node
//! made with `mknod` (written through, or refused by `cursor-db`; never replaced); and its
//! temporary files: private (0600 in a 0700 folder), gone after a normal exit, an error and
//! Ctrl-C, and a killed process's leftovers removed by the next run.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{symlink, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const DEMO: &str = "demo.jsonl";
/// Longer than any of these runs takes; a sink that hangs (opening a FIFO it should refuse)
/// fails the test instead of hanging it.
const TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FileSink {
    Jsonl,
    OpenAiSse,
    PiSession,
    PiSessions,
    CursorDb,
}

const ALL: [FileSink; 5] =
    [FileSink::Jsonl, FileSink::OpenAiSse, FileSink::PiSession, FileSink::PiSessions, FileSink::CursorDb];

impl FileSink {
    fn name(self) -> &'static str {
        match self {
            FileSink::Jsonl => "jsonl",
            FileSink::OpenAiSse => "openai-sse",
            FileSink::PiSession => "pi-session",
            FileSink::PiSessions => "pi-sessions",
            FileSink::CursorDb => "cursor-db",
        }
    }
}

/// One case's folder: `out/` for the sink's files, `state/` as `XDG_STATE_HOME` (the private
/// temporary files of the process under test, `state/toolstream/tmp`).
struct Case {
    dir: PathBuf,
    sink: FileSink,
}

impl Case {
    fn new(sink: FileSink) -> Case {
        let dir = common::tempdir();
        fs::create_dir_all(dir.join("out")).unwrap();
        Case { dir, sink }
    }

    fn out(&self) -> PathBuf {
        self.dir.join("out")
    }

    fn temp_dir(&self) -> PathBuf {
        self.dir.join("state/toolstream/tmp")
    }

    /// The file the sink writes: `out/x` (or, for `pi-sessions=out`, the session file inside).
    fn target(&self) -> PathBuf {
        match self.sink {
            FileSink::PiSessions => self.out().join(session_file_name()),
            _ => self.out().join("x"),
        }
    }

    fn args(&self, extra: &[&str]) -> Vec<String> {
        let path = if self.sink == FileSink::PiSessions { self.out() } else { self.target() };
        let mut args = vec![
            "replay".to_owned(),
            common::example(DEMO).display().to_string(),
            "--sink".into(),
            format!("{}={}", self.sink.name(), path.display()),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    }

    fn command(&self, args: &[String]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolstream"));
        cmd.args(args).env("XDG_STATE_HOME", self.dir.join("state")).stdin(Stdio::null());
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd
    }

    fn run(&self, extra: &[&str]) -> common::Run {
        finish(self.command(&self.args(extra)).spawn().unwrap())
    }

    /// No temporary file of the run is left: none in the private folder, none beside the target.
    fn assert_no_leftovers(&self) {
        let private = listing(&self.temp_dir());
        assert!(private.is_empty(), "{:?}: left in the private folder: {private:?}", self.sink);
        let beside: Vec<String> = listing(&self.out()).into_iter().filter(|n| n.ends_with(".tmp")).collect();
        assert!(beside.is_empty(), "{:?}: left beside the target: {beside:?}", self.sink);
    }
}

impl Drop for Case {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Wait for `child` (at most [`TIMEOUT`]) and collect what it printed.
fn finish(mut child: Child) -> common::Run {
    let deadline = Instant::now() + TIMEOUT;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("toolstream did not finish within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    common::Run::from(child.wait_with_output().unwrap())
}

fn listing(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut names: Vec<String> = entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// The name pi-sessions gives the demo's session (derived from the run: the same every time).
fn session_file_name() -> String {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        let case = Case::new(FileSink::PiSessions);
        let r = case.run(&[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let names = listing(&case.out());
        assert_eq!(names.len(), 1, "{names:?}");
        names[0].clone()
    })
    .clone()
}

/// What the sink writes for the demo into a fresh regular file (its bytes; for `cursor-db` the
/// conversation's rows as text, which do not depend on the file's layout).
fn reference(sink: FileSink) -> Vec<u8> {
    static SEEN: std::sync::Mutex<Vec<(FileSink, Vec<u8>)>> = std::sync::Mutex::new(Vec::new());
    if let Some((_, bytes)) = SEEN.lock().unwrap().iter().find(|(s, _)| *s == sink) {
        return bytes.clone();
    }
    let case = Case::new(sink);
    let r = case.run(&[]);
    assert_eq!(r.code, 0, "{sink:?}: {}", r.stderr);
    let bytes = content(sink, &case.target());
    assert!(!bytes.is_empty(), "{sink:?} wrote nothing");
    SEEN.lock().unwrap().push((sink, bytes.clone()));
    bytes
}

fn content(sink: FileSink, path: &Path) -> Vec<u8> {
    if sink != FileSink::CursorDb {
        return fs::read(path).unwrap();
    }
    let c = rusqlite::Connection::open(path).unwrap();
    let mut rows: Vec<String> = c
        .prepare("SELECT key || '=' || CAST(value AS TEXT) FROM cursorDiskKV UNION ALL SELECT key || '=' || CAST(value AS TEXT) FROM ItemTable")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows.sort();
    rows.join("\n").into_bytes()
}

/// Read a FIFO to its end on a thread (a writer's open waits for a reader).
fn drain(fifo: &Path) -> std::thread::JoinHandle<Vec<u8>> {
    let fifo = fifo.to_path_buf();
    std::thread::spawn(move || {
        let mut all = Vec::new();
        fs::File::open(fifo).unwrap().read_to_end(&mut all).unwrap();
        all
    })
}

/// What the reader of `fifo` got, once the writer is done. A reader still waiting for a writer
/// (the sink never opened the FIFO) is let go with nothing.
fn drained(fifo: &Path, reader: std::thread::JoinHandle<Vec<u8>>) -> Vec<u8> {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !reader.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if !reader.is_finished() {
        drop(fs::OpenOptions::new().write(true).open(fifo).unwrap());
    }
    reader.join().unwrap()
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).unwrap().file_type().is_symlink()
}

#[test]
fn an_existing_regular_file_is_replaced_only_as_each_sink_s_rule_says() {
    for sink in ALL {
        let case = Case::new(sink);
        let target = case.target();
        fs::write(&target, "keep\n").unwrap();
        let r = case.run(&[]);
        match sink {
            // Streams are truncated and written, as a shell's `>` does.
            FileSink::Jsonl | FileSink::OpenAiSse => {
                assert_eq!(r.code, 0, "{sink:?}: {}", r.stderr);
                assert_eq!(fs::read(&target).unwrap(), reference(sink), "{sink:?}");
            }
            // One session file: refused without --force, exit 2, the flag named.
            FileSink::PiSession => {
                assert_eq!(r.code, 2, "{sink:?}: {}", r.stderr);
                assert!(r.stderr.contains("exists already") && r.stderr.contains("--force"), "{}", r.stderr);
                assert_eq!(fs::read_to_string(&target).unwrap(), "keep\n");
                let forced = case.run(&["--force"]);
                assert_eq!(forced.code, 0, "{}", forced.stderr);
                assert_eq!(fs::read(&target).unwrap(), reference(sink));
            }
            // A chat's session: left as it is with a warning (exit 0), replaced with --force.
            FileSink::PiSessions => {
                assert_eq!(r.code, 0, "{sink:?}: {}", r.stderr);
                assert!(r.stderr.contains("exists already"), "{}", r.stderr);
                assert_eq!(fs::read_to_string(&target).unwrap(), "keep\n");
                let forced = case.run(&["--force"]);
                assert_eq!(forced.code, 0, "{}", forced.stderr);
                assert_eq!(fs::read(&target).unwrap(), reference(sink));
            }
            // SQLite opens it as a database, which a text file is not: an error, the file as it was.
            FileSink::CursorDb => {
                assert_eq!(r.code, 2, "{sink:?}: {}", r.stderr);
                assert_eq!(fs::read_to_string(&target).unwrap(), "keep\n");
            }
        }
        case.assert_no_leftovers();
    }
}

/// A run that one sink refuses leaves every other sink's file as it was, whichever comes first on
/// the command line: the streams (`jsonl`, `openai-sse`) are emptied only once every sink opened.
#[test]
fn a_run_refused_by_one_sink_leaves_every_other_sink_s_file_as_it_was() {
    let case = Case::new(FileSink::PiSession);
    let (trace, sse, session, db) =
        (case.out().join("t.jsonl"), case.out().join("o.sse"), case.out().join("s.jsonl"), case.out().join("db"));
    let replay = |sinks: &[String], extra: &[&str]| {
        let mut args = vec!["replay".to_owned(), common::example(DEMO).display().to_string()];
        for sink in sinks {
            args.extend(["--sink".to_owned(), sink.clone()]);
        }
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        finish(case.command(&args).spawn().unwrap())
    };
    let streams = [format!("jsonl={}", trace.display()), format!("openai-sse={}", sse.display())];
    let with_session = [&streams[..], &[format!("pi-session={}", session.display())]].concat();
    fs::create_dir(&db).unwrap();
    let refusals: [(&str, Vec<String>, &[&str]); 2] = [
        // The pi session exists and there is no --force.
        ("pi-session", with_session.clone(), &[]),
        // A folder where the database goes; with --force the pi session would be replaced.
        ("cursor-db", [&with_session[..], &[format!("cursor-db={}", db.display())]].concat(), &["--force"]),
    ];
    for (refusing, sinks, extra) in refusals {
        for path in [&trace, &sse, &session] {
            fs::write(path, "keep\n").unwrap();
        }
        let r = replay(&sinks, extra);
        assert_eq!(r.code, 2, "{refusing}: {}", r.stderr);
        assert!(r.stderr.contains(refusing), "{refusing}: {}", r.stderr);
        for path in [&trace, &sse, &session] {
            assert_eq!(fs::read_to_string(path).unwrap(), "keep\n", "{refusing}: {}", path.display());
        }
    }
    // Not refused, the same streams are emptied and written.
    let r = replay(&streams, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(fs::read(&trace).unwrap(), reference(FileSink::Jsonl));
    assert_eq!(fs::read(&sse).unwrap(), reference(FileSink::OpenAiSse));
    case.assert_no_leftovers();
}

#[test]
fn a_symlink_is_kept_and_its_target_written() {
    for sink in ALL {
        let case = Case::new(sink);
        let real = case.dir.join("real");
        fs::create_dir(&real).unwrap();
        symlink(real.join("target"), case.target()).unwrap();
        let r = case.run(&[]);
        assert_eq!(r.code, 0, "{sink:?}: {}", r.stderr);
        assert!(is_symlink(&case.target()), "{sink:?}: the link was replaced");
        assert_eq!(fs::read_link(case.target()).unwrap(), real.join("target"));
        assert_eq!(content(sink, &real.join("target")), reference(sink), "{sink:?}");
        case.assert_no_leftovers();
        assert_eq!(listing(&real).iter().filter(|n| n.ends_with(".tmp")).count(), 0, "{sink:?}");
    }
}

#[test]
fn a_fifo_is_written_through_or_refused_never_replaced() {
    for sink in ALL {
        let case = Case::new(sink);
        let fifo = case.target();
        mkfifo(&fifo);
        if sink == FileSink::CursorDb {
            // SQLite needs a regular file: refused before anything opens the FIFO (no reader here,
            // so an open would hang until the timeout).
            let r = case.run(&[]);
            assert_eq!(r.code, 2, "{}", r.stderr);
            assert!(r.stderr.contains("is a FIFO") && r.stderr.contains("regular file"), "{}", r.stderr);
        } else {
            let reader = drain(&fifo);
            let r = case.run(&[]);
            assert_eq!(r.code, 0, "{sink:?}: {}", r.stderr);
            assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "{sink:?}: no longer a FIFO");
            // The reader got what a regular file would hold.
            assert_eq!(drained(&fifo, reader), reference(sink), "{sink:?}");
        }
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "{sink:?}: no longer a FIFO");
        case.assert_no_leftovers();
    }
}

#[test]
fn a_device_node_is_written_through_or_refused_never_replaced() {
    for sink in ALL {
        let case = Case::new(sink);
        let node = case.target();
        // The null device (1, 3), made here: the tests never touch the system's /dev.
        let made = Command::new("mknod").args(["-m", "666"]).arg(&node).args(["c", "1", "3"]).output().unwrap();
        if !made.status.success() {
            let why = String::from_utf8_lossy(&made.stderr);
            // Skipped only when this process may not make device nodes; any other failure fails.
            assert!(why.contains("not permitted"), "mknod failed: {why}");
            eprintln!(
                "SKIPPED a_device_node_is_written_through_or_refused_never_replaced: mknod is not permitted here ({})",
                why.trim()
            );
            return;
        }
        let rdev = fs::symlink_metadata(&node).unwrap().rdev();
        let r = case.run(&[]);
        if sink == FileSink::CursorDb {
            assert_eq!(r.code, 2, "{}", r.stderr);
            assert!(r.stderr.contains("is a character device"), "{}", r.stderr);
        } else {
            assert_eq!(r.code, 0, "{sink:?}: {}", r.stderr);
        }
        let meta = fs::symlink_metadata(&node).unwrap();
        assert!(meta.file_type().is_char_device(), "{sink:?}: the device node was replaced");
        assert_eq!(meta.rdev(), rdev, "{sink:?}");
        case.assert_no_leftovers();
    }
}

#[test]
fn private_files_live_in_a_0700_folder_and_are_gone_after_a_normal_exit_or_an_error() {
    let case = Case::new(FileSink::PiSession);
    let r = case.run(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for dir in [case.dir.join("state/toolstream"), case.temp_dir()] {
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700, "{}", dir.display());
    }
    case.assert_no_leftovers();
    // An error ends the replay (--strict, a bad line after the first run closed).
    fs::remove_file(case.target()).unwrap();
    let input = case.dir.join("bad.jsonl");
    let mut bytes = fs::read(common::example(DEMO)).unwrap();
    bytes.extend_from_slice(b"{not json\n");
    fs::write(&input, bytes).unwrap();
    let args: Vec<String> =
        ["replay", input.to_str().unwrap(), "--strict", "--sink", &format!("pi-session={}", case.target().display())]
            .map(str::to_owned)
            .to_vec();
    let r = finish(case.command(&args).spawn().unwrap());
    assert_ne!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("--strict"), "{}", r.stderr);
    // The run closed before the bad line and was published from its spool: there was a spool.
    assert_eq!(fs::read(case.target()).unwrap(), reference(FileSink::PiSession));
    case.assert_no_leftovers();
}

/// Start a live replay into a pi session (stdin piped), feed it the demo's complete run and wait
/// until its spool exists (the run closed); the child, its input (kept open: the replay is live
/// until it is stopped) and the spool's path.
fn live_replay_with_a_spool(case: &Case, target: &Path) -> (Child, std::process::ChildStdin, PathBuf) {
    let args: Vec<String> =
        ["replay", "-", "--sink", &format!("pi-session={}", target.display())].map(str::to_owned).to_vec();
    let mut cmd = case.command(&args);
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&fs::read(common::example(DEMO)).unwrap()).unwrap();
    stdin.flush().unwrap();
    let deadline = Instant::now() + TIMEOUT;
    let spool = loop {
        if let Some(name) = listing(&case.temp_dir()).into_iter().find(|n| n.ends_with(".spool")) {
            break Some(case.temp_dir().join(name));
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let Some(spool) = spool else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("no spool file appeared in {}", case.temp_dir().display());
    };
    (child, stdin, spool)
}

#[test]
fn ctrl_c_publishes_the_session_and_removes_the_spool() {
    let case = Case::new(FileSink::PiSession);
    let target = case.target();
    let (child, stdin, spool) = live_replay_with_a_spool(&case, &target);
    // The spool holds the conversation: only its owner may read it.
    assert_eq!(fs::metadata(&spool).unwrap().mode() & 0o777, 0o600);
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let r = finish(child);
    drop(stdin);
    assert_eq!(r.code, 130, "{}", r.stderr);
    assert!(!spool.exists(), "the spool outlived Ctrl-C");
    assert_eq!(fs::read(&target).unwrap(), reference(FileSink::PiSession), "Ctrl-C publishes what was received");
    case.assert_no_leftovers();
}

#[test]
fn a_killed_process_s_leftovers_are_removed_by_the_next_run() {
    let case = Case::new(FileSink::PiSession);
    let target = case.target();
    let (mut child, stdin, spool) = live_replay_with_a_spool(&case, &target);
    let pid = child.id();
    child.kill().unwrap(); // SIGKILL: nothing of toolstream runs
    child.wait().unwrap();
    drop(stdin);
    assert!(spool.exists(), "kill -9 leaves the spool (what the next run must clean)");
    // And a temporary file beside the target, as a kill in the middle of a publish leaves it.
    let beside = case.out().join(format!(".x.{pid}.tmp"));
    fs::write(&beside, "half a session").unwrap();
    let r = case.run(&["--force"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!spool.exists(), "the killed process's spool is still there");
    assert!(!beside.exists(), "the killed process's temporary file is still there");
    case.assert_no_leftovers();
}
