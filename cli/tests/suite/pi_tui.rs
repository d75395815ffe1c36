//! Real pi's terminal UI, as a person sees it: pi runs the extension in tmux on the demo
//! recording, and the captured screen is checked (seed 000 "Cursor native tool replay"): the
//! edit card shows numbered diff lines without the unified `---`/`+++`/`@@` headers, and no card
//! shows an absolute path inside the run's cwd.
//!
//! Needs pi (each of `scripts/pi-versions`, installed by `scripts/install-pi`) and tmux; without them it prints a note and passes, except
//! under `TOOLSTREAM_REQUIRE_PI` (as `scripts/test` runs it), where their absence is a failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Longest the replay may take to appear and settle.
const TIMEOUT: Duration = Duration::from_secs(90);
/// The screen must not change for this long to count as settled.
const SETTLE: Duration = Duration::from_secs(3);

fn tmux(args: &[&str]) -> Option<String> {
    let out = Command::new("tmux").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Kills the tmux session this test started, whatever happens.
struct Session(String);

impl Drop for Session {
    fn drop(&mut self) {
        let _ = tmux(&["kill-session", "-t", &self.0]);
    }
}

#[test]
fn the_demo_in_pis_terminal_shows_numbered_diffs_and_relative_paths() {
    common::each_pi(|pi| {
        let pi = pi.bin();
        if !toolstream_testkit::require(toolstream_testkit::Tool::Pi, tmux(&["-V"]).is_some(), "tmux") {
            return;
        }
        let demo = common::example("demo.jsonl");
        let first: serde_json::Value =
            serde_json::from_str(std::fs::read_to_string(&demo).unwrap().lines().next().unwrap()).unwrap();
        let cwd = first["cwd"].as_str().unwrap().trim_end_matches('/').to_owned();

        let home = common::tempdir();
        let (agent, work) = (home.join("agent"), home.join("work"));
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(agent.join("settings.json"), r#"{"retry":{"enabled":false}}"#).unwrap();
        let extension = Path::new(env!("CARGO_MANIFEST_DIR")).join("../integrations/pi").canonicalize().unwrap();
        let script = home.join("run.sh");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\ncd '{work}' || exit 1\n\
                 export PI_CODING_AGENT_DIR='{agent}' PI_OFFLINE=1 HOME='{home}' TERM=xterm-256color\n\
                 export TOOLSTREAM_BIN='{bin}' TOOLSTREAM_CURSOR_REPLAY='{demo}'\n\
                 exec '{pi}' --no-extensions -e '{ext}' --provider cursor --model auto 'Replay the recorded Cursor run.'\n",
                work = work.display(),
                agent = agent.display(),
                home = home.display(),
                bin = env!("CARGO_BIN_EXE_toolstream"),
                demo = demo.display(),
                pi = pi.display(),
                ext = extension.display(),
            ),
        )
        .unwrap();
        let name = format!("toolstream-test-{}", std::process::id());
        let session = Session(name.clone());
        tmux(&["new-session", "-d", "-s", &name, "-x", "160", "-y", "300", "sh", script.to_str().unwrap()])
            .expect("tmux new-session");

        // Wait until the replay is on screen and the screen stops changing.
        let started = Instant::now();
        let (mut last, mut since) = (String::new(), Instant::now());
        let screen = loop {
            let now = tmux(&["capture-pane", "-t", &name, "-p", "-S", "-2000"]).unwrap_or_default();
            if now != last {
                (last, since) = (now, Instant::now());
            } else if last.contains("Cursor edit") && since.elapsed() >= SETTLE {
                break last;
            }
            assert!(started.elapsed() < TIMEOUT, "pi did not show the replay within {TIMEOUT:?}:\n{last}");
            std::thread::sleep(Duration::from_millis(250));
        };
        drop(session);

        let lines: Vec<&str> = screen.lines().map(str::trim).collect();
        let edit = lines.iter().position(|l| l.starts_with("Cursor edit")).unwrap();
        // The edit card's body: numbered added/removed/context lines, no unified headers.
        let body: Vec<&str> = lines[edit + 1..].iter().take_while(|l| !l.is_empty()).copied().collect();
        let numbered = |l: &&str| {
            let rest = l.trim_start_matches(['+', '-']);
            rest.len() < l.len() && rest.chars().next().is_some_and(|c| c.is_ascii_digit())
        };
        assert!(body.iter().any(numbered), "no numbered diff line in the edit card:\n{screen}");
        for l in &lines {
            assert!(!l.starts_with("--- ") && !l.starts_with("+++ ") && !l.starts_with("@@ "), "a diff header: {l}");
        }
        assert!(!screen.contains(&format!("{cwd}/")), "an absolute path inside {cwd}:\n{screen}");
        let _ = std::fs::remove_dir_all(&home);
    });
}
