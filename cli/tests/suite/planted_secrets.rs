//! The planted-secret corpus (SPEC §8; issue 20 item 4). Every secret format the scrubber knows
//! is planted in every place a stream carries text — the prompt, shell args and output (whole,
//! and streamed in deltas: a private key across chunks, every secret cut in two mid-line), file
//! reads, edits, MCP args and results, tool errors, a failed run's error, unknown fields, a line
//! that cannot be decoded — and the secrets the engine knows exactly also in the assistant's
//! text and thinking, split across deltas, and in the run's result. The corpus is replayed
//! through every sink: terminal cards (collapsed and expanded) and stderr, the JSONL trace, a pi
//! session, pi sessions, the Cursor DB, OpenAI SSE (the sink and `serve openai`), pi live events
//! (`pi-provider`) and OTLP with content capture on (against rotel). No planted secret, and no
//! telling piece of one, may reach any of them; every sink must show that content reached it
//! (`[redacted`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

/// `CURSOR_API_KEY` for every run: no rule but rule 1 knows it.
const CURSOR_KEY: &str = "crsr_Kq8Zr2XxW7mLp4Tb";
/// `serve openai --api-key`: also a known secret of that server's runs.
const SERVER_KEY: &str = "srvk_Wm4Tn6Vb1Lc8Ys3P";

/// One planted secret: how it appears, and what of it must never appear in an output.
struct Planted {
    kind: &'static str,
    context: String,
    needles: Vec<String>,
}

/// `n` characters that start with the place's code and continue with a fixed mix of `pool`.
fn rnd(code: &str, salt: usize, n: usize, pool: &str) -> String {
    let pool: Vec<char> = pool.chars().collect();
    let mut s: String = code.chars().take(n).collect();
    let mut i = salt * 7 + 3 + code.bytes().map(usize::from).sum::<usize>() * 101;
    while s.chars().count() < n {
        s.push(pool[i % pool.len()]);
        i = (i * 31 + 17) % 1_000_003;
    }
    s
}

const ALNUM: &str = "Kq8Zr2XxW7mLp4Tb9Nc3Vd6Fh1Jg5Ys0UeAiOwEyRtBnMkGj";
const UPPER: &str = "Q3NDKW5TPLXR2MZ7HJ6YV4";
const HEX: &str = "0123456789abcdef";

/// Every format the scrubber knows, for the place `code` (two characters of `[A-Z0-9]`), so a
/// leak says where it came from.
fn planted(code: &str) -> Vec<Planted> {
    let p = |kind: &'static str, context: String, needles: &[&str]| Planted {
        kind,
        context,
        needles: needles.iter().map(|n| (*n).to_owned()).collect(),
    };
    let pw = |salt: usize| format!("Pw{}", rnd(code, salt, 14, ALNUM));
    let aws_id = format!("AKIA{}", rnd(code, 1, 16, UPPER));
    let aws_secret = rnd(code, 2, 40, ALNUM);
    let ghp = format!("ghp_{}", rnd(code, 3, 36, ALNUM));
    let pat = format!("github_pat_{}_{}", rnd(code, 4, 22, ALNUM), rnd(code, 5, 59, ALNUM));
    let glpat = format!("glpat-{}", rnd(code, 6, 20, ALNUM));
    let openai = format!("sk-{}", rnd(code, 7, 48, ALNUM));
    let proj = format!("sk-proj-{}T3BlbkFJ{}", rnd(code, 8, 74, ALNUM), rnd(code, 9, 74, ALNUM));
    let ant = format!("sk-ant-api03-{}AA", rnd(code, 10, 93, ALNUM));
    let slack = format!("xoxb-201684934072-2470455853043-{}", rnd(code, 11, 24, ALNUM));
    let stripe = format!("sk_live_{}", rnd(code, 12, 24, ALNUM));
    let restricted = format!("rk_test_{}", rnd(code, 13, 24, ALNUM));
    let google = format!("AIza{}", rnd(code, 14, 35, ALNUM));
    let npm = format!("npm_{}", rnd(code, 15, 36, ALNUM));
    let jwt_sig = rnd(code, 16, 43, ALNUM);
    let jwt = format!("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvIn0.{jwt_sig}");
    let key_lines: Vec<String> = (0..3).map(|i| rnd(code, 20 + i, 64, ALNUM)).collect();
    let pem = format!("-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----", key_lines.join("\n"));
    let bearer = rnd(code, 17, 32, ALNUM);
    let basic_pw = pw(18);
    let basic = b64(&format!("alice:{basic_pw}"));
    let cookie = rnd(code, 19, 24, ALNUM);
    let bridge = rnd(&code.to_ascii_lowercase(), 24, 32, HEX);
    let (url_pw, scp_pw, curl_pw, env_pw, yaml_pw, json_pw, toml_pw, flag_pw, tok_flag, pg_pw, aws_cfg) =
        (pw(30), pw(31), pw(32), pw(33), pw(34), pw(35), pw(36), pw(37), pw(38), pw(39), rnd(code, 40, 40, ALNUM));
    let mut all = vec![
        p("aws-access-key-id", format!("aws s3 ls --key {aws_id}"), &[&aws_id]),
        p("aws-secret-access-key", format!("AWS_SECRET_ACCESS_KEY={aws_secret}"), &[&aws_secret]),
        p("github-token", format!("token {ghp} and {pat}"), &[&ghp, &pat]),
        p("gitlab-pat", format!("glab auth login -t {glpat}"), &[&glpat]),
        p("model-provider-keys", format!("keys {openai} {proj} {ant}"), &[&openai, &proj, &ant]),
        p("slack-token", format!("SLACK={slack}"), &[&slack]),
        p("stripe-keys", format!("Stripe {stripe} / {restricted}"), &[&stripe, &restricted]),
        p("google-api-key", format!("maps?key={google}&cb=x"), &[&google]),
        p("npm-token", format!("//registry.npmjs.org/:_authToken={npm}"), &[&npm]),
        p("jwt", format!("id: {jwt}"), &[&jwt_sig]),
        p("private-key", pem, &key_lines.iter().map(String::as_str).collect::<Vec<_>>()),
        p("url-userinfo", format!("git clone https://deploy:{url_pw}@git.example.com/x.git"), &[&url_pw]),
        p("scp-userinfo", format!("git clone deploy:{scp_pw}@example.com:org/repo.git"), &[&scp_pw]),
        p("bearer", format!("curl -H 'Authorization: Bearer {bearer}' https://api"), &[&bearer]),
        p("basic", format!("proxy said Basic {basic}"), &[&basic, &basic_pw]),
        p("cookie", format!("Cookie: session={cookie}; theme=dark"), &[&cookie]),
        p("curl-user", format!("curl -u alice:{curl_pw} https://x"), &[&curl_pw]),
        p("aws-configure", format!("aws configure set aws_secret_access_key {aws_cfg}"), &[&aws_cfg]),
        p("dotenv", format!("export DB_PASSWORD=\"{env_pw}\""), &[&env_pw]),
        p("yaml", format!("db:\n  password: {yaml_pw}"), &[&yaml_pw]),
        p("json", format!("{{\"client_secret\": \"{json_pw}\"}}"), &[&json_pw]),
        p("toml", format!("api_key = \"{toml_pw}\""), &[&toml_pw]),
        p("flags", format!("mysql --password {flag_pw} -p 5432; gh --token {tok_flag}"), &[&flag_pw, &tok_flag]),
        p("prefixed-name", format!("PGPASSWORD={pg_pw} psql -h db"), &[&pg_pw]),
        p("bridge-endpoint", format!("http://127.0.0.1:43111/cursor-pi-tool-bridge/{bridge}/mcp"), &[&bridge]),
        p("known", format!("using {CURSOR_KEY}"), &[CURSOR_KEY]),
    ];
    // Values under secret-named keys of a JSON object (MCP args): see `keyed`.
    let (kpw, ktok) = keyed(code);
    all.push(p("secret-named-keys", String::new(), &[&kpw, &ktok]));
    // A telling piece of a secret is a leak too: the middle sixteen characters of a long one,
    // and the eight on each side of its middle (where the streamed copy is cut in two).
    for planted in &mut all {
        let mut pieces = Vec::new();
        for n in &planted.needles {
            let mid = n.len() / 2;
            if n.len() >= 24 {
                pieces.push(n[mid - 8..mid + 8].to_owned());
            }
            if n.len() >= 16 {
                pieces.extend([n[mid - 8..mid].to_owned(), n[mid..mid + 8].to_owned()]);
            }
        }
        planted.needles.extend(pieces);
    }
    all
}

/// The values an object holds under `password` and `apiToken` at a place.
fn keyed(code: &str) -> (String, String) {
    (format!("Kp{}", rnd(code, 41, 12, ALNUM)), format!("Kt{}", rnd(code, 42, 12, ALNUM)))
}

fn b64(s: &str) -> String {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = s.as_bytes();
    let mut out = String::new();
    for chunk in b.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |a, (i, &c)| a | (u32::from(c) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The block of every planted secret for a place, one per line.
fn block(code: &str) -> String {
    planted(code).iter().map(|p| p.context.as_str()).filter(|c| !c.is_empty()).collect::<Vec<_>>().join("\n")
}

/// Every (place, kind, needle) of the corpus.
fn needles() -> Vec<(String, &'static str, String)> {
    PLACES
        .iter()
        .flat_map(|code| {
            planted(code)
                .into_iter()
                .flat_map(move |p| p.needles.into_iter().map(move |n| (code.to_string(), p.kind, n)))
        })
        .collect()
}

/// The places, by code: where in the streams each block is planted.
const PLACES: &[&str] = &[
    "PR", // the prompt
    "SA", // shell args
    "SO", // shell stdout
    "SE", // a failed shell's stderr
    "RD", // a file read (a `.env`)
    "ED", // an edit's new text (its diff)
    "MA", // MCP args (also under secret-named keys)
    "MR", // an MCP result
    "TE", // a tool's error message
    "UK", // an unknown field (the trace's raw diagnostic)
    "DE", // a line that cannot be decoded
    "RE", // a failed run's error
    "SD", // SDK shell output deltas (a private key across chunks, every secret cut mid-way)
    "SK", // SDK tool args and results
];

const SA: &str = "5ec7e75e-0000-4000-8000-00000000a001";
const SB: &str = "5ec7e75e-0000-4000-8000-00000000b002";
const SC: &str = "5ec7e75e-0000-4000-8000-00000000c003";

fn line(v: Value) -> String {
    format!("{v}\n")
}

fn call(session: &str, at: u64, id: &str, started: bool, tool: Value) -> String {
    let sub = if started { "started" } else { "completed" };
    line(json!({"type":"tool_call","subtype":sub,"call_id":id,"session_id":session,"timestamp_ms":at,"tool_call":tool}))
}

/// A Cursor CLI run with the secrets in its prompt, tools and errors, the known ones in its text
/// and thinking split across deltas; a second run that fails with them in its error.
fn cli_corpus() -> String {
    let shell_args = json!({"command": block("SA"), "workingDirectory": ""});
    let read_args = json!({"path": "/w/.env"});
    let edit_args = json!({"path": "/w/config.yml", "old_string": "db:", "new_string": block("ED")});
    let (kpw, ktok) = keyed("MA");
    let mcp_args = json!({"name": "vault-get", "toolName": "get", "providerIdentifier": "vault",
        "args": {"query": block("MA"), "password": kpw, "apiToken": ktok}});
    let (known_a, known_b) = CURSOR_KEY.split_at(9);
    let mut s = String::new();
    s += &line(json!({"type":"system","subtype":"init","cwd":"/w","session_id":SA,"model":"Auto"}));
    s += &line(
        json!({"type":"user","message":{"role":"user","content":[{"type":"text","text":block("PR")}]},"session_id":SA}),
    );
    s += &line(
        json!({"type":"thinking","subtype":"delta","text":format!("checking {known_a}"),"session_id":SA,"timestamp_ms":10}),
    );
    s += &line(
        json!({"type":"thinking","subtype":"delta","text":format!("{known_b} now"),"session_id":SA,"timestamp_ms":11}),
    );
    s += &line(json!({"type":"thinking","subtype":"completed","session_id":SA,"timestamp_ms":12}));
    s += &call(SA, 20, "c1", true, json!({"shellToolCall":{"args":shell_args}}));
    s += &call(
        SA,
        30,
        "c1",
        false,
        json!({"shellToolCall":{"args":shell_args,"result":{"success":{"command":"x","exitCode":0,"stdout":block("SO"),"stderr":""}}}}),
    );
    s += &call(SA, 40, "c2", true, json!({"shellToolCall":{"args":{"command":"make deploy"}}}));
    s += &call(
        SA,
        50,
        "c2",
        false,
        json!({"shellToolCall":{"args":{"command":"make deploy"},"result":{"failure":{"command":"make deploy","exitCode":2,"stdout":"","stderr":block("SE")}}}}),
    );
    s += &call(SA, 60, "c3", true, json!({"readToolCall":{"args":read_args}}));
    s += &call(
        SA,
        70,
        "c3",
        false,
        json!({"readToolCall":{"args":read_args,"result":{"success":{"content":block("RD"),"totalLines":40,"path":"/w/.env"}}}}),
    );
    s += &call(SA, 80, "c4", true, json!({"editToolCall":{"args":edit_args}}));
    s += &call(
        SA,
        90,
        "c4",
        false,
        json!({"editToolCall":{"args":edit_args,"result":{"success":{"path":"/w/config.yml","linesAdded":30,"linesRemoved":1,"diffString":format!("@@ -1,1 +1,30 @@\n-db:\n+{}", block("ED").replace('\n', "\n+"))}}}}),
    );
    s += &call(SA, 100, "c5", true, json!({"mcpToolCall":{"args":mcp_args}}));
    s += &call(
        SA,
        110,
        "c5",
        false,
        json!({"mcpToolCall":{"args":mcp_args,"result":{"success":{"content":[{"text":{"text":block("MR")}}],"isError":false}}}}),
    );
    s += &call(SA, 120, "c6", true, json!({"readToolCall":{"args":{"path":"/w/secrets.txt"}}}));
    s += &call(
        SA,
        130,
        "c6",
        false,
        json!({"readToolCall":{"args":{"path":"/w/secrets.txt"},"result":{"error":{"errorMessage":block("TE")}}}}),
    );
    s += &line(
        json!({"type":"tool_call","subtype":"started","call_id":"c7","session_id":SA,"timestamp_ms":140,"zzUnknown":block("UK"),"tool_call":{"globToolCall":{"args":{"globPattern":"*.md"}}}}),
    );
    // A line that cannot be decoded: its reason quotes the value.
    s += &format!("{{\"type\":\"assistant\",\"message\":{},\"session_id\":\"{SA}\"}}\n", json!(block("DE")));
    s += &line(
        json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":format!("Done. The key is {known_a}")}]},"session_id":SA,"timestamp_ms":150}),
    );
    s += &line(
        json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":format!("{known_b}, and {SERVER_KEY}.")}]},"session_id":SA,"timestamp_ms":151}),
    );
    s += &line(
        json!({"type":"result","subtype":"success","is_error":false,"result":format!("Done. The key is {CURSOR_KEY}, and {SERVER_KEY}."),"session_id":SA,"duration_ms":160}),
    );
    // A failed run: its error carries the secrets.
    s += &line(json!({"type":"system","subtype":"init","cwd":"/w","session_id":SC,"model":"Auto"}));
    s +=
        &line(json!({"type":"user","message":{"role":"user","content":[{"type":"text","text":"go"}]},"session_id":SC}));
    s += &line(
        json!({"type":"result","subtype":"error","is_error":true,"result":block("RE"),"session_id":SC,"duration_ms":5}),
    );
    s
}

/// An `@cursor/sdk` recording: shell output streamed in deltas, one planted line a chunk and a
/// private key cut across chunks, with a blank recorded output (the deltas stand in for it).
fn sdk_corpus() -> String {
    let rec = |at: u64, v: Value| line(json!({"at_ms": at, "delta": v}));
    let (known_a, known_b) = CURSOR_KEY.split_at(5);
    let mut s =
        line(json!({"at_ms": 1, "start": {"session_id": SB, "cwd": "/w", "model": "composer-2", "prompt": "deploy"}}));
    s += &rec(2, json!({"type":"text-delta","text":format!("Deploying with {known_a}")}));
    s += &rec(3, json!({"type":"text-delta","text":format!("{known_b}.")}));
    let args = json!({"command": block("SK"), "workingDirectory": "/w"});
    s += &rec(4, json!({"type":"tool-call-started","callId":"t1","toolCall":{"type":"shell","args":args}}));
    s += &rec(5, json!({"type":"shell-output-delta","event":{"case":"start","value":{}}}));
    let mut at = 6;
    let out = block("SD");
    // The first three chunks are the progress lines: one cuts a private key in two.
    let key_at = out.find("-----BEGIN").unwrap();
    let cut = key_at + 60;
    for chunk in [&out[key_at..cut], &out[cut..cut + 40], &out[cut + 40..]] {
        s += &rec(at, json!({"type":"shell-output-delta","event":{"case":"stdout","value":{"data":chunk}}}));
        at += 1;
    }
    for l in out[..key_at].lines() {
        s += &rec(at, json!({"type":"shell-output-delta","event":{"case":"stdout","value":{"data":format!("{l}\n")}}}));
        at += 1;
    }
    s += &rec(
        at,
        json!({"type":"tool-call-completed","callId":"t1","toolCall":{"type":"shell","result":{"status":"success","value":{"exitCode":0,"stdout":"","stderr":""}}}}),
    );
    // Every planted line again, each in a shell call of its own (three progress lines a call),
    // its output cut in two in the middle of the secret: the first chunk ends mid-secret.
    for (n, p) in planted("SD").iter().enumerate() {
        let Some(cut) = p.needles.first().and_then(|needle| Some(p.context.find(needle.as_str())? + needle.len() / 2))
        else {
            continue;
        };
        let id = format!("split{n}");
        let shell = json!({"type":"shell","args":{"command":"cat part","workingDirectory":"/w"}});
        s += &rec(at, json!({"type":"tool-call-started","callId":id,"toolCall":shell}));
        s += &rec(at, json!({"type":"shell-output-delta","event":{"case":"start","value":{}}}));
        for chunk in [p.context[..cut].to_owned(), format!("{}\n", &p.context[cut..])] {
            s += &rec(at, json!({"type":"shell-output-delta","event":{"case":"stdout","value":{"data":chunk}}}));
        }
        s += &rec(
            at,
            json!({"type":"tool-call-completed","callId":id,"toolCall":{"type":"shell","result":{"status":"success","value":{"exitCode":0,"stdout":"","stderr":""}}}}),
        );
        at += 1;
    }
    s += &rec(
        at + 1,
        json!({"type":"tool-call-started","callId":"t2","toolCall":{"type":"read","args":{"path":"/w/.env"}}}),
    );
    s += &rec(
        at + 2,
        json!({"type":"tool-call-completed","callId":"t2","toolCall":{"type":"read","result":{"status":"success","value":{"content":block("SK")}}}}),
    );
    s += &line(
        json!({"at_ms": at + 3, "wait": {"status": "finished", "result": format!("Deploying with {CURSOR_KEY}.")}}),
    );
    s
}

/// Every needle that occurs in `output`: `sink: place kind needle`.
fn leaks(sink: &str, output: &str) -> Vec<String> {
    needles()
        .into_iter()
        .filter(|(_, _, n)| output.contains(n.as_str()))
        .map(|(place, kind, n)| format!("{sink}: {place} {kind} `{n}`"))
        .collect()
}

fn check(sink: &str, output: &str, all: &mut Vec<String>) {
    assert!(output.contains("[redacted"), "{sink}: no planted content reached it at all:\n{output}");
    all.extend(leaks(sink, output));
}

/// The corpus files in a fresh directory.
fn corpus_files() -> (PathBuf, PathBuf, PathBuf) {
    let dir = common::tempdir();
    let (cli, sdk) = (dir.join("cli.jsonl"), dir.join("sdk.jsonl"));
    std::fs::write(&cli, cli_corpus()).unwrap();
    std::fs::write(&sdk, sdk_corpus()).unwrap();
    (dir, cli, sdk)
}

fn toolstream_cmd() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolstream"));
    cmd.env("CURSOR_API_KEY", CURSOR_KEY).env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
    cmd
}

/// Every text of every row of the Cursor DB (SQLite splits long values over pages: read them
/// back, never the file's bytes).
fn cursor_db_text(path: &Path) -> String {
    let db = rusqlite::Connection::open(path).unwrap();
    let mut out = String::new();
    for table in ["ItemTable", "cursorDiskKV"] {
        let Ok(mut stmt) = db.prepare(&format!("SELECT key, CAST(value AS TEXT) FROM {table}")) else { continue };
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))).unwrap();
        for (k, v) in rows.map(Result::unwrap) {
            out.push_str(&k);
            out.push('\n');
            out.push_str(&v.unwrap_or_default());
            out.push('\n');
        }
    }
    out
}

#[test]
fn no_planted_secret_reaches_cards_traces_sessions_the_cursor_db_or_openai_sse() {
    let (dir, cli, sdk) = corpus_files();
    let mut found = Vec::new();
    for expanded in [false, true] {
        let (trace, session, sessions, db, sse) =
            (dir.join("t.jsonl"), dir.join("s.jsonl"), dir.join("pi"), dir.join("c.vscdb"), dir.join("o.sse"));
        let mut cmd = toolstream_cmd();
        cmd.args(["replay", "--color", "never", "--force"]);
        if expanded {
            cmd.arg("--expanded");
        }
        for sink in [
            "cards".to_owned(),
            format!("jsonl={}", trace.display()),
            format!("pi-session={}", session.display()),
            format!("pi-sessions={}", sessions.display()),
            format!("cursor-db={}", db.display()),
            format!("openai-sse={}", sse.display()),
        ] {
            cmd.args(["--sink", &sink]);
        }
        let out = cmd.args([&cli, &sdk]).output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(stderr.contains("could not be decoded"), "the corpus has its bad line: {stderr}");
        let label = if expanded { "cards --expanded" } else { "cards" };
        check(label, &stdout, &mut found);
        check("stderr", &stderr, &mut found);
        check("jsonl trace", &std::fs::read_to_string(&trace).unwrap(), &mut found);
        check("pi-session", &std::fs::read_to_string(&session).unwrap(), &mut found);
        let mut per_chat = String::new();
        for f in walk(&sessions) {
            per_chat.push_str(&std::fs::read_to_string(f).unwrap());
        }
        check("pi-sessions", &per_chat, &mut found);
        check("cursor-db", &cursor_db_text(&db), &mut found);
        check("openai-sse", &std::fs::read_to_string(&sse).unwrap(), &mut found);
        for p in [&trace, &session, &db, &sse] {
            let _ = std::fs::remove_file(p);
        }
        let _ = std::fs::remove_dir_all(&sessions);
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(found.is_empty(), "planted secrets reached sinks:\n{}", found.join("\n"));
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// pi's side of `pi-provider`: the request, then each `tool_results` answered with the
/// recorded results, until the run's last message. Returns every line it printed.
fn pi_provider_lines(recording: &Path) -> String {
    let mut child = toolstream_cmd()
        .arg("pi-provider")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let request = json!({"type": "request", "model": "auto", "cwd": "/w",
        "context": {"systemPrompt": "You are pi.", "messages": [{"role": "user", "content": [{"type": "text", "text": "go"}], "timestamp": 1}], "tools": []},
        "source": {"kind": "replay", "path": recording}});
    writeln!(stdin, "{request}").unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let mut all = String::new();
    while let Ok(l) = rx.recv_timeout(Duration::from_secs(30)) {
        all.push_str(&l);
        all.push('\n');
        let v: Value = serde_json::from_str(&l).unwrap();
        match v["type"].as_str() {
            Some("tool_results") => {
                for r in v["results"].as_array().unwrap() {
                    let mut answer = r.clone();
                    answer["type"] = "tool_result".into();
                    writeln!(stdin, "{answer}").unwrap();
                }
            }
            Some("done") if v["reason"] != "toolUse" => break,
            Some("error") => break,
            _ => {}
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    all.push_str(&String::from_utf8_lossy(&out.stderr));
    all
}

#[test]
fn no_planted_secret_reaches_pi_live_events() {
    let (dir, cli, sdk) = corpus_files();
    let mut found = Vec::new();
    for recording in [&cli, &sdk] {
        check("pi live events", &pi_provider_lines(recording), &mut found);
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(found.is_empty(), "planted secrets reached pi:\n{}", found.join("\n"));
}

#[test]
fn no_planted_secret_reaches_an_otlp_collector_with_content_capture_on() {
    let Some(agent) = common::otel::rotel_agent() else { return };
    let (dir, cli, sdk) = corpus_files();
    let collector = common::otel::Collector::start(&agent);
    let out = toolstream_cmd()
        .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        .args(["replay", "--sink", &format!("otlp={}", collector.http_url())])
        .args([&cli, &sdk])
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "{}", String::from_utf8_lossy(&out.stderr));
    let stats = toolstream_cmd().args(["stats", "--json"]).args([&cli, &sdk]).output().unwrap();
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    let want = (stats["runs"].as_u64().unwrap() + stats["calls"].as_u64().unwrap()) as usize;
    let spans = collector.wait_for(want, Duration::from_secs(20));
    assert_eq!(spans.len(), want);
    let mut found = Vec::new();
    check("otlp", &collector.output(), &mut found);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(found.is_empty(), "planted secrets reached the collector:\n{}", found.join("\n"));
}

/// `serve openai --replay` answering one streamed request (its key a known secret too), read
/// with the Python standard library.
#[test]
fn no_planted_secret_reaches_a_client_of_serve_openai() {
    let (dir, cli, _) = corpus_files();
    let mut server = toolstream_cmd()
        .args(["serve", "openai", "--addr", "127.0.0.1:0", "--api-key", SERVER_KEY, "--replay"])
        .arg(&cli)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = server.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = l.strip_prefix("toolstream: serving OpenAI chat completions on ") {
                let _ = tx.send(url.to_owned());
            }
        }
    });
    let url = rx.recv_timeout(Duration::from_secs(60)).expect("the server did not start");
    let client = r#"
import json, sys, urllib.request
url, key = sys.argv[1], sys.argv[2]
body = json.dumps({"model": "auto", "stream": True, "messages": [{"role": "user", "content": "go"}]}).encode()
req = urllib.request.Request(url + "/chat/completions", data=body, headers={"Content-Type": "application/json", "Authorization": "Bearer " + key})
sys.stdout.write(urllib.request.urlopen(req, timeout=60).read().decode())
"#;
    let python = ["../.venv/bin/python", "python3"]
        .iter()
        .map(|p| Path::new(env!("CARGO_MANIFEST_DIR")).join(p))
        .find(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("python3"));
    let out = Command::new(python).args(["-c", client, &url, SERVER_KEY]).output().unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let answer = String::from_utf8_lossy(&out.stdout);
    let mut found = Vec::new();
    check("serve openai", &answer, &mut found);
    // The assistant's text names the server's key: known to this server, so removed.
    assert!(!answer.contains(SERVER_KEY) && answer.contains("[redacted], and [redacted]."), "{answer}");
    assert!(found.is_empty(), "planted secrets reached the client:\n{}", found.join("\n"));
}
