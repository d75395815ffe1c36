//! The scrubber's tests: each rule's cases (also the inline cases of `secrets.toml`), the
//! streaming of known secrets, and properties (idempotence, the prefilter never hiding a match).

use super::*;

#[test]
fn secret_keys_lose_values_of_any_shape_and_header_lists_their_value() {
    let sc = Scrubber::default();
    let mut v = serde_json::json!({
        "token": {"value": "abc"},
        "apiKey": ["k1", "k2"],
        "session_id": 12345,
        "headers": [{"name": "Authorization", "value": "Basic Zm9vOmJhcg=="}, {"name": "Accept", "value": "json"}],
        "cookies": [{"key": "Cookie", "value": "sid=1"}],
        "max_tokens": 5,
    });
    sc.scrub_json(&mut v);
    let s = v.to_string();
    for secret in ["abc", "k1", "12345", "Zm9vOmJhcg", "sid=1"] {
        assert!(!s.contains(secret), "{secret} survived: {s}");
    }
    assert_eq!(v["headers"][1]["value"], "json");
    assert_eq!(v["max_tokens"], 5);
}
use proptest::prelude::*;
use serde_json::json;

#[test]
fn a_field_scrubbed_alone_is_that_field_of_the_whole_object_scrubbed() {
    let sc = Scrubber::new(Some("sk-live-123".into()));
    let objects = [
        json!({"name": "Authorization", "value": "Basic Zm9vOmJhcg==", "other": "x"}),
        json!({"key": "X-Api-Key", "value": {"nested": "v"}, "header": null}),
        json!({"header": "Accept", "value": "json", "token": "t0k", "apiKey": ["k1"], "session_id": 7}),
        json!({"name": "token", "value": null, "command": "curl -H 'Authorization: Bearer abc.def' https://u:p@h/?k=sk-live-123"}),
        json!({"path": "/w/a", "edits": [{"old_string": "password=hunter2", "new_string": "sk-live-123"}], "cookie": ""}),
        json!({"key": "Bearer [redacted]", "value": "v", "secret": "[redacted]", "password": false}),
    ];
    for obj in objects {
        let mut whole = obj.clone();
        sc.scrub_json(&mut whole);
        let (map, whole) = (obj.as_object().unwrap(), whole.as_object().unwrap());
        // Read from the map, and from the recorded text's fields as a card reads them.
        let args = toolstream_schemas::CallArgs::from_json(&obj.to_string()).unwrap();
        for key in map.keys().map(String::as_str).chain(["absent"]) {
            let from_map = |k: &str| map.get(k).map(std::borrow::Cow::Borrowed);
            let from_text = |k: &str| args.field_as::<serde_json::Value>(k).map(std::borrow::Cow::Owned);
            assert_eq!(sc.scrub_field(&from_map, key).as_ref(), whole.get(key), "{key} of {obj}");
            assert_eq!(sc.scrub_field(&from_text, key).as_ref(), whole.get(key), "{key} of {obj}, from its text");
        }
    }
}

fn scrub(s: &str) -> String {
    Scrubber::default().scrub(s).into_owned()
}

#[test]
fn clean_text_is_borrowed() {
    let s = Scrubber::new(Some("sk-secret-123".into()));
    for text in [
        "",
        "cargo test --workspace",
        "fn main() { println!(\"hello\"); }",
        "tokens: 5",
        "max_tokens=5",
        "the authorization header is missing",
    ] {
        assert!(matches!(s.scrub(text), Cow::Borrowed(_)), "{text}");
    }
}

#[test]
fn api_key_exact() {
    let s = Scrubber::new(Some("  sk-secret-123 ".into()));
    assert_eq!(s.scrub("key sk-secret-123 and sk-secret-123!"), "key [redacted] and [redacted]!");
    assert_eq!(s.scrub("sk-secret-12"), "sk-secret-12");
    assert!(!format!("{s:?}").contains("sk-secret"));
    assert_eq!(Scrubber::new(Some("   ".into())).known_secrets(), 0);
}

#[test]
fn api_key_inside_marker_is_stable() {
    let s = Scrubber::new(Some("redacted".into()));
    let once = s.scrub("redacted then [redacted]").into_owned();
    assert_eq!(once, "[redacted] then [redacted]");
    assert_eq!(s.scrub(&once), once);
}

#[test]
fn url_userinfo() {
    assert_eq!(
        scrub("git clone https://alice:s3cret@example.com/repo.git"),
        "git clone https://[redacted]@example.com/repo.git"
    );
    assert_eq!(scrub("https://ghp_abcdef@github.com/o/r"), "https://[redacted]@github.com/o/r");
    assert_eq!(scrub("see https://example.com/@user and x@y"), "see https://example.com/@user and x@y");
    assert_eq!(scrub("redis://u:p@w@host:6379/0"), "redis://[redacted]@host:6379/0");
}

#[test]
fn scp_userinfo() {
    assert_eq!(
        scrub("git clone alice:s3cret@example.com:org/repo.git"),
        "git clone [redacted]@example.com:org/repo.git"
    );
    // No password: untouched.
    assert_eq!(scrub("git clone git@github.com:org/repo.git"), "git clone git@github.com:org/repo.git");
    // Needs the trailing `host:`.
    assert_eq!(scrub("mail a:b@c.com now"), "mail a:b@c.com now");
}

#[test]
fn bearer() {
    assert_eq!(scrub("curl -H 'Authorization: Bearer abc.def-ghi' x"), "curl -H 'Authorization: Bearer [redacted]' x");
    assert_eq!(scrub("BEARER xyz123"), "BEARER [redacted]");
    assert_eq!(scrub("Bearer ${TOKEN}"), "Bearer ${TOKEN}");
    assert_eq!(scrub("Bearers are fine"), "Bearers are fine");
    // Prose: a word after `bearer` is not a credential (a header's value always is: see fields).
    for prose in ["the token to use for bearer auth.", "Bearer Authentication", "a Bearer token", "BEARER TOKEN"] {
        assert_eq!(scrub(prose), prose);
    }
    assert_eq!(scrub("Authorization: Bearer xyz"), "Authorization: Bearer [redacted]");
}

/// An auth scheme inside a quote that never closes (`password="token `): the value ends where an
/// unquoted one would, and the credentials are read from there on (this once read past the end).
#[test]
fn a_scheme_in_an_unclosed_quote() {
    assert_eq!(scrub("password=\"token "), "password=\"token ");
    assert_eq!(scrub("password=\"token  abc123xyz"), "password=\"token  [redacted]");
    assert_eq!(scrub("auth: 'Bearer\t"), "auth: 'Bearer\t");
    assert_eq!(scrub("password=\"basic"), "password=\"[redacted]");
}

#[test]
fn cookies() {
    assert_eq!(scrub("Cookie: a=1; b=2\nnext line"), "Cookie: [redacted]\nnext line");
    assert_eq!(scrub("Set-Cookie: sid=abc; HttpOnly"), "Set-Cookie: [redacted]");
    assert_eq!(scrub(r#"{"cookie": "a=b; c=d", "x": 1}"#), r#"{"cookie": "[redacted]", "x": 1}"#);
    assert_eq!(scrub("curl -H 'Cookie: a=b' https://x"), "curl -H 'Cookie: [redacted]' https://x");
    assert_eq!(scrub("cookies: 3"), "cookies: 3");
    assert_eq!(scrub("cookie jar"), "cookie jar");
}

#[test]
fn field_secrets() {
    let cases = [
        ("token=abc", "token=[redacted]"),
        ("API_KEY=abc", "API_KEY=[redacted]"),
        ("OPENAI_API_KEY=sk-abc", "OPENAI_API_KEY=[redacted]"),
        ("GITHUB_TOKEN=ghp_1 next", "GITHUB_TOKEN=[redacted] next"),
        (r#""token": "abc def""#, r#""token": "[redacted]""#),
        (r#"{\"apiKey\": \"abc\"}"#, r#"{\"apiKey\": \"[redacted]\"}"#),
        ("session_id=abc&x=1", "session_id=[redacted]&x=1"),
        ("sessionId: abc, next", "sessionId: [redacted], next"),
        ("accessToken: abc", "accessToken: [redacted]"),
        ("x-api-key: abc", "x-api-key: [redacted]"),
        ("?token=abc&page=2", "?token=[redacted]&page=2"),
        ("--token abc --verbose", "--token [redacted] --verbose"),
        ("--api-key=abc", "--api-key=[redacted]"),
        ("Authorization: Basic dXNlcg==", "Authorization: Basic [redacted]"),
        ("authorization: abc123", "authorization: [redacted]"),
        ("token := abc", "token := [redacted]"),
        // Any prefix (SPEC §8 rule 5).
        ("mytoken=abc", "mytoken=[redacted]"),
        ("PGPASSWORD=pw psql", "PGPASSWORD=[redacted] psql"),
        ("spring.datasource.password=pw", "spring.datasource.password=[redacted]"),
        ("--db-password pw -p 5432", "--db-password [redacted] -p 5432"),
        ("'--password' 'pw'", "'--password' '[redacted]'"),
        ("password: supersecret", "password: [redacted]"),
        ("Authorization: token ghp_x", "Authorization: token [redacted]"),
        ("'session' => 'abc'", "'session' => '[redacted]'"),
    ];
    for (input, want) in cases {
        assert_eq!(scrub(input), want, "{input}");
    }
}

#[test]
fn field_false_positives_untouched() {
    for text in [
        "tokens: 5",
        "max_tokens=5",
        "token_count: 3",
        "tokenizer: bpe",
        "the authorization failed",
        "session ended",
        "if token == other {",
        "use session::Store;",
        r#""session": null"#,
        "token: {\"nested\": 1}",
        "fn f(token: &str)",
        "--token --verbose",
        "token=",
        // Code, not literals: calls, types, references to where a secret is.
        "let session = Session::new();",
        "password: Option<String>,",
        "pub token: String,",
        "token: string;",
        "self.token = token;",
        "const password = process.env.DB_PASSWORD;",
        "api_key = os.environ[\"API_KEY\"]",
        "token = tokens[i]",
        "connect(user=user, password=password)",
        "const token = await getToken();",
        "export TOKEN=$(gh auth token)",
        "Authorization: Bearer $TOKEN",
        "password: ${DB_PASSWORD}",
        // Paths and the shell's working directory.
        "/etc/passwd:1:root:x:0:0",
        "PWD=/home/dev OLDPWD=/home",
        "--password -p",
        "-p secret",
        "return fmt.Errorf(\"refreshed OAuth token: %w\", err)",
        "printf(\"password=%s\\n\", pw)",
        "export LANGSMITH_API_KEY=\"lsv2_pt_...\"",
        "--api-key <your-key>",
        "password: ********",
    ] {
        assert_eq!(scrub(text), text, "{text}");
    }
}

#[test]
fn bridge_endpoints() {
    let cases = [
        (
            "MCP connect failed: http://127.0.0.1:54321/cursor-pi-tool-bridge/tok-abc/mcp",
            "MCP connect failed: [redacted-bridge-endpoint]",
        ),
        ("route not found: /cursor-pi-tool-bridge/tok/mcp", "route not found: [redacted-bridge-endpoint]"),
        (
            "fetch failed for 127.0.0.1:8080/cursor-pi-tool-bridge/tok/mcp.",
            "fetch failed for [redacted-bridge-endpoint]",
        ),
        ("url=\"http://[::1]:9/Cursor-Pi-Tool-Bridge/t/mcp\"", "url=\"[redacted-bridge-endpoint]\""),
        ("endpoint:/cursor-pi-tool-bridge/t/mcp", "endpoint:[redacted-bridge-endpoint]"),
        ("GET /cursor-pi-tool-bridge/t/mcp?token=abc ok", "GET [redacted-bridge-endpoint] ok"),
    ];
    for (input, want) in cases {
        assert_eq!(scrub(input), want, "{input}");
    }
    let custom = Scrubber::default().with_bridge_markers(["/my-bridge/"]);
    assert_eq!(
        custom.scrub("at /my-bridge/x/mcp and /cursor-pi-tool-bridge/y"),
        "at [redacted-bridge-endpoint] and /cursor-pi-tool-bridge/y"
    );
}

#[test]
fn combined_rules() {
    let key = "super-secret-cursor-key-12345";
    let s = Scrubber::new(Some(key.into()));
    let text = format!("Bearer {key} api_key={key} http://127.0.0.1:1/cursor-pi-tool-bridge/bridge-token/mcp");
    let out = s.scrub(&text);
    assert_eq!(out, "Bearer [redacted] api_key=[redacted] [redacted-bridge-endpoint]");
    assert_eq!(scrub("http://u:p@127.0.0.1:1/cursor-pi-tool-bridge/t/mcp ok"), "[redacted-bridge-endpoint] ok");
    assert_eq!(scrub("Authorization: Bearer abc"), "Authorization: Bearer [redacted]");
}

#[test]
fn non_ascii_text_is_safe() {
    assert_eq!(scrub("jeton é token=ünïcødé ok"), "jeton é token=[redacted] ok");
    assert_eq!(scrub("令牌token=秘密"), "令牌token=[redacted]");
    assert_eq!(scrub("é@ü:"), "é@ü:");
}

#[test]
fn json_recursive() {
    let s = Scrubber::new(Some("KEY123456".into()));
    let mut v = json!({
        "command": "curl -H 'Authorization: Bearer abc' https://x",
        "token": "plain",
        "apiKey": "KEY123456",
        "tokens": 5,
        "max_tokens": "5",
        "nested": [{"url": "https://u:p@h/x"}, "KEY123456", 3, null],
        "headers": {"Authorization": "Basic xyz", "Set-Cookie": "a=b"},
        "tokenizer": "bpe",
        "session": "",
        "sessionToken": "x [redacted] y",
        "auth": {"token": "Bearer abc123"}
    });
    s.scrub_json(&mut v);
    assert_eq!(
        v,
        json!({
            "command": "curl -H 'Authorization: Bearer [redacted]' https://x",
            "token": "[redacted]",
            "apiKey": "[redacted]",
            "tokens": 5,
            "max_tokens": "5",
            "nested": [{"url": "https://[redacted]@h/x"}, "[redacted]", 3, null],
            "headers": {"Authorization": "[redacted]", "Set-Cookie": "[redacted]"},
            "tokenizer": "bpe",
            "session": "",
            "sessionToken": "[redacted]",
            "auth": {"token": "Bearer [redacted]"}
        })
    );
}

#[test]
fn secret_keys() {
    for k in [
        "token",
        "apiKey",
        "x-api-key",
        "accessToken",
        "session_id",
        "Set-Cookie",
        "mytoken",
        "DB_PASSWORD",
        "AWS_SECRET_ACCESS_KEY",
        "client_secret",
        "privateKey",
        "passwd",
    ] {
        assert!(is_secret_key(k), "{k}");
    }
    for k in ["tokens", "max_tokens", "tokenizer", "sessions", "cookies", "password_file", "PWD", "oldpwd"] {
        assert!(!is_secret_key(k), "{k}");
    }
}

/// Fragments that exercise every rule and their interactions.
fn fragment() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "token",
        "Token",
        "TOKEN",
        "session_id",
        "api_key",
        "apiKey",
        "authorization",
        "Basic",
        "Bearer",
        "bearer",
        "cookie",
        "Set-",
        "=",
        ":",
        "=>",
        "::",
        "==",
        " ",
        "\t",
        "\n",
        "\"",
        "'",
        "\\",
        "abc",
        "x9",
        "@",
        "host",
        "://",
        "http",
        "/cursor-pi-tool-bridge/",
        "/",
        "[redacted]",
        "[",
        "]",
        "--",
        ",",
        ";",
        "&",
        "{",
        "}",
        "127.0.0.1",
        ":80",
        "é",
        "令",
        "-",
        "null",
        "KEY-42xy",
        "password",
        "DB_PASSWORD",
        "secret_key",
        "pwd",
        "--password ",
        "-u ",
        "alice:pw",
        "$",
        "(",
        ".",
        "AKIAUJZDE8GXD6NCF10E",
        "ghp_jIhKtJ0RlgLKOmxgJTeKdNnFRIBXuDL7Dxtp",
        "sk-KjIg8xNbe3nNyjOq9wMxEhh2FDEE",
        "eyJhbGciOiJub25lIn0",
        "eyJhIjoxfQ",
        "YWxpY2U6czNjcmV0",
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEA0Z3VS5JJcds3",
        "\\n",
        "[redacted private key]",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn scrub_is_idempotent(parts in prop::collection::vec(fragment(), 0..24)) {
        let s = Scrubber::new(Some("KEY-42xy".into()));
        let text: String = parts.concat();
        let once = s.scrub(&text).into_owned();
        let twice = s.scrub(&once).into_owned();
        prop_assert_eq!(&twice, &once, "input {:?}", text);
        prop_assert!(!once.contains("KEY-42xy"));
    }

    #[test]
    fn scrub_never_panics(text in any::<String>()) {
        let s = Scrubber::new(Some("k".into()));
        let once = s.scrub(&text).into_owned();
        prop_assert_eq!(s.scrub(&once).into_owned(), once);
    }

    #[test]
    fn field_secret_never_survives(
        prefix in "[a-z ]{0,12}",
        name in prop::sample::select(vec![
            "token", "api_key", "API-KEY", "apiKey", "session", "sessionid", "authorization",
        ]),
        sep in prop::sample::select(vec!["=", ": ", " = ", "\": \""]),
        secret in "[A-Z0-9]{8,16}",
        suffix in "[a-z ,;]{0,12}",
    ) {
        let text = format!("{prefix} {name}{sep}{secret}{suffix}");
        let out = Scrubber::default().scrub(&text).into_owned();
        prop_assert!(!out.contains(&secret), "{} -> {}", text, out);
    }

    #[test]
    fn the_pre_scan_skips_only_text_no_rule_changes(parts in prop::collection::vec(fragment(), 0..24)) {
        let text: String = parts.concat();
        for s in [Scrubber::default(), Scrubber::new(Some("KEY-42xy".into()))] {
            prop_assert_eq!(s.scrub(&text), s.run_rules(&text, false), "input {:?}", text);
        }
    }

    #[test]
    fn borrowed_iff_unchanged(text in "[a-z :=@/]{0,40}") {
        let out = Scrubber::default().scrub(&text);
        if let Cow::Owned(o) = &out {
            prop_assert_ne!(o, &text);
        }
    }
}

#[test]
fn every_inline_case_of_the_rule_file_holds() {
    let rules = RuleSet::builtin().unwrap();
    let mut failures = Vec::new();
    for case in &rules.cases {
        let got = scrub(&case.input);
        if got != case.expected {
            failures.push(format!(
                "[{}]\ninput:    {:?}\nexpected: {:?}\ngot:      {:?}",
                case.rule, case.input, case.expected, got
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_rule_has_a_case_that_redacts_and_one_that_must_not() {
    let rules = RuleSet::builtin().unwrap();
    for rule in rules.rules.iter().filter(|r| !matches!(r.action, Action::Scanner(Scanner::BridgeEndpoint))) {
        let cases: Vec<_> = rules.cases.iter().filter(|c| c.rule == rule.id).collect();
        assert!(cases.iter().any(|c| c.input != c.expected), "{}: no case that redacts", rule.id);
        assert!(cases.iter().any(|c| c.input == c.expected), "{}: no case that must stay", rule.id);
    }
}

#[test]
fn known_secrets_are_removed_everywhere_the_longest_first() {
    let s = Scrubber::new(Some("cursor-key-1234".into())).with_known_secret("tok").with_known_secret("tok-longer");
    assert_eq!(s.known_secrets(), 3);
    assert_eq!(s.scrub_known("a cursor-key-1234 b tok-longer c tok"), "a [redacted] b [redacted] c [redacted]");
    // Only the exact secrets: the assistant's text keeps everything else.
    assert_eq!(s.scrub_known("password=hunter2 tok"), "password=hunter2 [redacted]");
    assert!(!format!("{s:?}").contains("tok"));
    assert_eq!(s.with_known_secret("tok").known_secrets(), 3);
}

#[test]
fn a_stream_without_known_secrets_holds_nothing_back() {
    let mut st = Scrubber::default().stream();
    // Long enough to live on the heap (a short delta is kept inline and moves with it).
    let piece = toolstream_schemas::Delta::from("sk-abc ".repeat(8));
    let ptr = piece.as_ptr();
    let out = st.push(piece);
    assert_eq!(out.as_ptr(), ptr, "passed through, not copied");
    assert!(!st.is_holding());
    assert_eq!(st.flush(), "");
}

#[test]
fn a_known_secret_split_across_pieces_is_removed() {
    let s = Scrubber::new(Some("cursor_live_Kq8Zr2Xx".into()));
    let mut st = s.stream();
    let mut out = String::new();
    for piece in ["Your key is cursor_", "live_Kq8", "Zr2Xx done. cur", "sor is a word"] {
        out.push_str(&st.push(piece.into()));
    }
    out.push_str(&st.flush());
    assert_eq!(out, "Your key is [redacted] done. cursor is a word");
    // A possible start waits only as long as it may still become the secret.
    let mut st = s.stream();
    assert_eq!(st.push("see cursor_li".into()), "see ");
    assert!(st.is_holding());
    assert_eq!(st.push("ne 2".into()), "cursor_line 2");
    assert!(!st.is_holding());
}

/// Known secrets that overlap each other, and pieces cut anywhere.
fn stream_text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!["ab", "abc", "abcab", "b", "c", "x", "a", "é", "ca", " "]), 0..20)
        .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn streaming_gives_what_scrubbing_the_whole_text_gives(
        text in stream_text(),
        cuts in prop::collection::vec(0usize..64, 0..8),
    ) {
        let s = Scrubber::new(Some("abcab".into())).with_known_secret("bca").with_known_secret("ab");
        let mut bounds: Vec<usize> = cuts.into_iter().map(|c| c % (text.len() + 1)).filter(|&c| text.is_char_boundary(c)).collect();
        bounds.extend([0, text.len()]);
        bounds.sort_unstable();
        bounds.dedup();
        let mut st = s.stream();
        let mut out = String::new();
        for w in bounds.windows(2) {
            out.push_str(&st.push(text[w[0]..w[1]].into()));
        }
        out.push_str(&st.flush());
        prop_assert_eq!(out, s.scrub_known(&text).into_owned(), "text {:?}", text);
    }
}

#[test]
fn a_redaction_that_runs_on_from_earlier_output_covers_the_continuation() {
    let sc = Scrubber::default();
    let key_head = "log\n-----BEGIN RSA PRIVATE KEY-----\n";
    let body = "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF0qzVRa3Gv7Tb+fs8Fw0hS1RG2aL\n";
    // The key's lines arrive after its BEGIN line: they are the key.
    assert_eq!(sc.scrub_after(key_head, body), "[redacted private key]\n");
    // After the key's END, output is output again.
    let done = format!("{key_head}{body}-----END RSA PRIVATE KEY-----\n");
    assert_eq!(sc.scrub_after(&done, "next line token=abc\n"), "next line token=[redacted]\n");
    assert_eq!(sc.scrub_after(&format!("{key_head}{body}"), "ok\n"), "ok\n");
    // Nothing before: the text alone.
    assert!(matches!(sc.scrub_after("", "plain"), Cow::Borrowed("plain")));
    assert_eq!(sc.scrub_after("[INFO] ", "password=pw"), "password=[redacted]");
}

/// Text cut anywhere (a streamed chunk that ends mid-line): what `settled` leaves of its scrubbing
/// holds no eight-character piece of a secret (a run of token characters in a word of 12 or more
/// characters, not PEM armour) that scrubbing the whole text removes, for every redacting case of the rule file.
#[test]
fn a_cut_secret_shows_no_piece_of_itself_once_settled() {
    let sc = Scrubber::default();
    let mut cuts = 0;
    for case in RuleSet::builtin().unwrap().cases.iter().filter(|c| c.expected != c.input) {
        let words = |s: &str| s.split(|c: char| c.is_whitespace() || "\"'`".contains(c)).map(str::to_owned).collect();
        let (before, after): (Vec<String>, Vec<String>) = (words(&case.input), words(&case.expected));
        let pieces: Vec<&str> = before
            .iter()
            .filter(|w| w.len() >= 12 && !w.starts_with("-----") && !after.contains(w))
            .flat_map(|w| (0..w.len().saturating_sub(7)).filter_map(move |i| w.get(i..i + 8)))
            .filter(|p| {
                !p.contains("--")
                    && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-+/=".contains(&b))
                    && !case.expected.contains(p)
            })
            .collect();
        for k in (0..=case.input.len()).filter(|&k| case.input.is_char_boundary(k)) {
            let scrubbed = sc.scrub(&case.input[..k]);
            let shown = settled(&scrubbed);
            cuts += 1;
            if let Some(p) = pieces.iter().find(|p| shown.contains(*p)) {
                panic!("[{}] cut at {k}: `{p}` shows in {shown:?}", case.rule);
            }
        }
    }
    assert!(cuts > 1000, "{cuts} cuts");
}
