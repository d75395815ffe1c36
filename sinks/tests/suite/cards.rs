//! The terminal cards sink (SPEC §9.4, §8): untrusted text (prompt, model, streamed text and
//! thinking, expanded bodies, every other string it lays out) never reaches the terminal with
//! escape sequences (or what is left of them), control characters or bidi controls, and cut diffs
//! say `... (N more diff lines hidden)`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use serde_json::json;
use toolstream_schemas::ids::call_ref;
use toolstream_schemas::{
    Card, LineKind, Output, OutputEvent, RunId, RunStatus, ShellStream, StopReason, StyledLine, Tool, ToolKind,
};
use toolstream_sinks::cards::{CardsOptions, CardsSink, Style};
use toolstream_sinks::Sink;

/// OSC title, clear screen, CR, BEL, BS, DEL, NEL and CSI (C1), U+2028/2029, a DCS string, a bidi
/// override and a bidi isolate.
const EVIL: &str =
    "A\x1b]0;PWNED\x07B\x1b[2JC\rD\x08E\x7fF\u{85}G\u{9b}31mH\u{2028}I\u{2029}J\x1bPdcs\x1b\\K\u{202E}L\u{2066}M";

fn run() -> Arc<RunId> {
    Arc::new(RunId { session: "0a3c5e7f-0000-4000-8000-000000000001".into(), seq: 1 })
}

fn ev(run: &Arc<RunId>, kind: Output) -> OutputEvent {
    OutputEvent { run: run.clone(), at_ms: 0, kind }
}

fn card(content: &str) -> Card {
    Card {
        turn: 1,
        call: call_ref("call-1"),
        replay_id: "cursor-replay-abcd1234-1-tool-1".into(),
        source_tool: Tool::Known(ToolKind::Shell),
        pi_tool: "bash".into(),
        title: "Cursor shell".into(),
        summary: "make".into(),
        headline: "$ make".into(),
        args: json!({"command": "make"}),
        content: content.into(),
        result_text: content.into(),
        preview: vec![StyledLine { kind: LineKind::Plain, text: "preview".into() }],
        preview_hidden: 0,
        diff: Vec::new(),
        diff_hidden: 0,
        details: Default::default(),
        is_error: false,
        started_ms: None,
        incomplete: None,
        completed_ms: None,
        recorded_result: None,
        recorded_args: None,
        openai_call: None,
    }
}

fn render(events: &[OutputEvent], opts: CardsOptions) -> String {
    let mut sink = CardsSink::new(Vec::new(), opts);
    sink.write(events).unwrap();
    sink.flush().unwrap();
    String::from_utf8(sink.into_inner()).unwrap()
}

fn hostile_events() -> Vec<OutputEvent> {
    let r = run();
    let mut c = card(&format!("out {EVIL}\r\nline two {EVIL}\n\tindented"));
    c.headline = format!("$ make {EVIL}");
    c.preview = vec![StyledLine { kind: LineKind::Plain, text: format!("pre {EVIL}") }];
    let mut d = card("");
    d.diff = vec![StyledLine { kind: LineKind::Added, text: format!("+1 {EVIL}") }];
    d.preview = d.diff.clone();
    vec![
        ev(
            &r,
            Output::RunOpened {
                cwd: None,
                model: Some(format!("model {EVIL}")),
                prompt: Some(format!("ask {EVIL}")),
                context: None,
            },
        ),
        ev(&r, Output::Thinking { turn: 1, delta: format!("think {EVIL}\nmore").into() }),
        ev(&r, Output::BlockEnded { turn: 1 }),
        ev(&r, Output::Text { turn: 1, delta: format!("text {EVIL}\r\nend").into() }),
        ev(
            &r,
            Output::LifecycleLine { call: call_ref("call-1"), title: format!("T {EVIL}"), label: format!("L {EVIL}") },
        ),
        ev(
            &r,
            Output::ShellProgress { call: call_ref("call-1"), stream: ShellStream::Stdout, line: format!("P {EVIL}") },
        ),
        ev(&r, Output::Card(Box::new(c))),
        ev(&r, Output::Card(Box::new(d))),
        ev(
            &r,
            Output::MessageEnded {
                turn: 1,
                stop_reason: StopReason::Error,
                usage: Box::default(),
                error: Some(format!("E {EVIL}")),
            },
        ),
        ev(
            &r,
            Output::RunClosed {
                status: RunStatus::Error,
                final_text: String::new(),
                totals: Box::default(),
                error: None,
            },
        ),
    ]
}

/// Nothing a terminal acts on, and no remnant of [`EVIL`]'s escape sequences.
fn controls(s: &str) -> Vec<String> {
    toolstream_testkit::terminal::unsafe_on_a_terminal(s, &["]0;", "[2J", "31m", "Pdcs"])
}

#[test]
fn no_control_characters_reach_the_terminal() {
    for expanded in [false, true] {
        let out = render(&hostile_events(), CardsOptions { expanded, color: false });
        assert_eq!(controls(&out), Vec::<String>::new(), "expanded={expanded}:\n{out:?}");
        for part in ["model A", "> ask A", "think A", "text A", "T A", "L A", "P A", "$ make A", "E A"] {
            assert!(out.contains(part), "expanded={expanded}: {part} missing in\n{out}");
        }
        // `\n` is kept where text is multi-line; CRLF ends a line like LF.
        assert!(out.contains("M\nend\n"), "{out:?}");
        assert!(out.contains("\n┆ more\n"), "{out:?}");
        if expanded {
            // Escape sequences are removed whole; other controls are spaces.
            assert!(out.contains("    out ABC D E F GH I JK L M\n    line two A"), "{out:?}");
            // Tabs still expand to three spaces.
            assert!(out.contains("\n       indented\n"), "{out:?}");
        }
    }
}

#[test]
fn with_colour_only_our_own_codes_are_escapes() {
    let s = Style::new(true);
    let ours = [s.reset, s.bold, s.dim, s.red, s.green, s.yellow, s.cyan];
    for expanded in [false, true] {
        let out = render(&hostile_events(), CardsOptions { expanded, color: true });
        assert!(out.contains(s.cyan) && out.contains(s.dim), "colour is still written");
        let mut rest = out.clone();
        for code in ours {
            rest = rest.replace(code, "");
        }
        assert_eq!(controls(&rest), Vec::<String>::new(), "expanded={expanded}:\n{out:?}");
    }
}

#[test]
fn prompt_line_is_the_first_non_blank_line_cleaned_and_bounded() {
    let r = run();
    let prompt = format!("\x07\x1b\r\n  {}\x1b]0;x\x07{}\nsecond line", "p".repeat(230), "q".repeat(50));
    let out = render(
        &[ev(&r, Output::RunOpened { cwd: None, model: None, prompt: Some(prompt), context: None })],
        CardsOptions::default(),
    );
    let line = out.lines().nth(1).unwrap();
    assert!(line.starts_with("> ppp"), "{line:?}");
    assert_eq!(line.chars().count(), 2 + 240, "{line:?}");
    // The OSC title is removed whole; the line is cut to 240 chars.
    assert!(line.ends_with(&format!("p{}…", "q".repeat(9))), "{line:?}");
    assert_eq!(controls(&out), Vec::<String>::new(), "{out:?}");
    assert!(!out.contains("second line"));
}

#[test]
fn streamed_tabs_expand_like_bodies() {
    let r = run();
    let out = render(&[ev(&r, Output::Text { turn: 1, delta: "a\tb\n".into() })], CardsOptions::default());
    assert_eq!(out, "a   b\n");
}

fn diff_card(shown: usize, hidden: usize) -> Card {
    let mut c = card("body");
    c.headline = "edit a.rs added 60 lines, removed 0 lines".into();
    c.diff = (1..=shown).map(|i| StyledLine { kind: LineKind::Added, text: format!("+{i} x") }).collect();
    c.diff_hidden = hidden;
    c.preview = c.diff[..8].to_vec();
    c.preview_hidden = shown + hidden - 8;
    c
}

#[test]
fn cut_diffs_say_more_diff_lines_hidden() {
    let r = run();
    let events = [ev(&r, Output::Card(Box::new(diff_card(40, 20))))];
    let expanded = render(&events, CardsOptions { expanded: true, color: false });
    assert!(expanded.ends_with("    +40 x\n    ... (20 more diff lines hidden)\n"), "{expanded}");
    // The collapsed preview of a diff is a cut diff too (SPEC §8: 8 lines collapsed, 40 expanded).
    let collapsed = render(&events, CardsOptions { expanded: false, color: false });
    assert!(collapsed.ends_with("    +8 x\n    ... (52 more diff lines hidden)\n"), "{collapsed}");
}

#[test]
fn cut_bodies_keep_their_collapsed_marker() {
    let r = run();
    let mut c = card("1\n2\n3\n4\n5\n6\n7\n8\n9\n10");
    c.preview = (1..=8).map(|i| StyledLine { kind: LineKind::Plain, text: i.to_string() }).collect();
    c.preview_hidden = 2;
    let out = render(&[ev(&r, Output::Card(Box::new(c)))], CardsOptions::default());
    assert!(out.ends_with("    8\n    … (2 more lines; --expanded shows them)\n"), "{out}");
}
