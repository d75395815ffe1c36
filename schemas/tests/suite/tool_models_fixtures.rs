//! Every `tool_call` payload in the recorded Cursor CLI fixtures parses into the typed tool models
//! with no field left untyped, and a seed-001-style example of every kind does too.

// Test helpers outside `#[test]` fns may fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use serde_json::Value;
use toolstream_schemas::cursor_cli::tool_models::{
    is_success_arm, parse_args, parse_failure, parse_success, ToolArgs, ToolSuccess, Unmodeled, RESULT_SIBLING_KEYS,
};
use toolstream_schemas::{Tool, ToolKind};

fn fixtures_dir() -> Option<PathBuf> {
    toolstream_testkit::fixture("cursor-cli")
}

/// Integers as strings become numbers, on both sides, so a round trip through `Int` compares equal.
fn normalize(v: &Value) -> Value {
    match v {
        Value::String(s) => s.parse::<i64>().map_or_else(|_| v.clone(), Value::from),
        Value::Array(a) => Value::Array(a.iter().map(normalize).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), normalize(v))).collect()),
        _ => v.clone(),
    }
}

/// The payload is fully typed and nothing was lost: no unmodeled field at any depth, and it
/// serializes back to the input.
fn assert_typed<T: Unmodeled + serde::Serialize>(what: &str, parsed: &T, raw: &Value) {
    let unmodeled = parsed.unmodeled_fields();
    assert!(unmodeled.is_empty(), "{what}: untyped fields {unmodeled:?}");
    let back = serde_json::to_value(parsed).unwrap();
    assert_eq!(normalize(&back), normalize(raw), "{what}: round trip differs");
}

#[test]
fn every_recorded_tool_payload_is_typed() {
    let Some(dir) = fixtures_dir() else { return };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {}", dir.display());

    let (mut args_seen, mut successes, mut failures) = (0, 0, 0);
    let mut kinds = std::collections::BTreeSet::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        for (i, line) in std::fs::read_to_string(file).unwrap().lines().enumerate() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if v["type"] != "tool_call" {
                continue;
            }
            let at = format!("{name}:{}", i + 1);
            let tool_call = v["tool_call"].as_object().unwrap();
            let keys: Vec<&String> = tool_call.keys().filter(|k| k.ends_with("ToolCall")).collect();
            assert_eq!(keys.len(), 1, "{at}: tool keys {keys:?}");
            let Some(kind) = Tool::from_cli_key(keys[0]).kind() else {
                continue;
            };
            kinds.insert(kind);
            let payload = &tool_call[keys[0].as_str()];

            if let Some(args) = payload.get("args") {
                let parsed = parse_args(kind, &args.to_string()).unwrap_or_else(|e| panic!("{at}: args: {e}"));
                assert_eq!(parsed.kind(), kind);
                assert!(parsed.extra().is_empty(), "{at}: args extra {:?}", parsed.extra());
                assert_typed(&format!("{at} args"), &parsed, args);
                args_seen += 1;
            }
            let Some(result) = payload.get("result").and_then(Value::as_object) else {
                continue;
            };
            for (arm, inner) in result {
                if RESULT_SIBLING_KEYS.contains(&arm.as_str()) {
                    continue;
                }
                let what = format!("{at} result.{arm}");
                let raw = inner.to_string();
                if is_success_arm(arm) {
                    let parsed = parse_success(kind, &raw).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(parsed.extra().is_empty(), "{what}: extra {:?}", parsed.extra());
                    assert_typed(&what, &parsed, inner);
                    successes += 1;
                } else {
                    let parsed = parse_failure(&raw).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(parsed.extra.is_empty(), "{what}: extra {:?}", parsed.extra);
                    assert_typed(&what, &parsed, inner);
                    failures += 1;
                }
            }
        }
    }
    println!("typed {args_seen} args, {successes} successes, {failures} failures; kinds {kinds:?}");
    assert!(args_seen >= 50 && successes >= 20 && failures >= 5, "{args_seen} {successes} {failures}");
    for kind in [ToolKind::Shell, ToolKind::Read, ToolKind::Edit, ToolKind::Grep, ToolKind::Mcp, ToolKind::Task] {
        assert!(kinds.contains(&kind), "fixtures no longer cover {kind}");
    }
}

/// `(kind, args, success)` in the style of seed 001; kinds without a capture use Cursor's field
/// names for them.
const EXAMPLES: &[(ToolKind, &str, &str)] = &[
    (
        ToolKind::Ls,
        r#"{"path":"/p/thor","ignore":[],"toolCallId":"tool_1"}"#,
        r#"{"directoryTreeRoot":{"absPath":"/p/thor","childrenDirs":[{"absPath":"/p/thor/src","childrenDirs":[],
            "childrenFiles":[{"name":"index.ts"}],"childrenWereProcessed":true,"fullSubtreeExtensionCounts":{".ts":1},
            "numFiles":1}],"childrenFiles":[{"name":"package.json"}],"childrenWereProcessed":true,
            "fullSubtreeExtensionCounts":{".ts":10,".json":2},"numFiles":12}}"#,
    ),
    (
        ToolKind::Read,
        r#"{"path":"/p/thor/CLAUDE.md","limit":10}"#,
        r##"{"content":"# CLAUDE.md","isEmpty":false,"exceededLimit":false,"totalLines":345,"fileSize":13228,
            "path":"/p/thor/CLAUDE.md","readRange":{"startLine":1,"endLine":10}}"##,
    ),
    (
        ToolKind::Edit,
        r#"{"path":"/p/thor/test.txt","streamContent":"hi"}"#,
        r#"{"path":"/p/thor/test.txt","linesAdded":1,"linesRemoved":1,"diffString":"-hello world\n+hi world",
            "beforeFullFileContent":"hello world\n","afterFullFileContent":"hi world\n","message":"updated"}"#,
    ),
    (
        ToolKind::Glob,
        r#"{"targetDirectory":"/p/thor","globPattern":"*thor*"}"#,
        r#"{"pattern":"","path":"/p/thor","files":["thor-core/src/index.ts"],"totalFiles":1,"clientTruncated":false,
            "ripgrepTruncated":false}"#,
    ),
    (
        ToolKind::Grep,
        r#"{"pattern":"export default","path":"/p/thor","glob":"*.ts","outputMode":"content","caseInsensitive":false,
            "multiline":false,"toolCallId":"tool_2"}"#,
        r#"{"pattern":"export default","path":"/p/thor","outputMode":"content","workspaceResults":{"/p/thor":{
            "content":{"matches":[{"file":"./src/index.ts","matches":[{"lineNumber":27,"content":"export default C;",
            "contentTruncated":false,"isContextLine":false}]}]},"files":{"files":["./src/index.ts"]}}}}"#,
    ),
    (
        ToolKind::Shell,
        r#"{"command":"ls -la","workingDirectory":"/p/thor","timeout":30000,"simpleCommands":["ls"],
            "hasInputRedirect":false,"hasOutputRedirect":false,"parsingResult":{"parsingFailed":false,
            "executableCommands":[{"name":"ls","args":[{"type":"word","value":"-la"}],"fullText":"ls -la"}],
            "hasRedirects":false,"hasCommandSubstitution":false},"fileOutputThresholdBytes":"40000",
            "isBackground":false,"skipApproval":false,"timeoutBehavior":"TIMEOUT_BEHAVIOR_BACKGROUND"}"#,
        r#"{"command":"ls -la","workingDirectory":"/p/thor","exitCode":0,"signal":"","stdout":"total 520\n",
            "stderr":"","executionTime":243,"interleavedOutput":"total 520\n"}"#,
    ),
    (
        ToolKind::UpdateTodos,
        r#"{"todos":[{"id":"1","content":"检查 package.json 文件","status":"TODO_STATUS_IN_PROGRESS",
            "createdAt":"1769942817550","updatedAt":"1769942817550","dependencies":[]}],"merge":false}"#,
        r#"{"todos":[{"id":"1","content":"检查 package.json 文件","status":"TODO_STATUS_IN_PROGRESS",
            "createdAt":"1769942817550","updatedAt":"1769942817550","dependencies":[]}],"totalCount":1,"wasMerge":false}"#,
    ),
    (
        ToolKind::Delete,
        r#"{"path":"/p/thor/test.txt","toolCallId":"tool_3"}"#,
        r#"{"path":"/p/thor/test.txt","deletedFile":"/p/thor/test.txt","fileSize":"2","prevContent":"x\n"}"#,
    ),
    (
        ToolKind::WebFetch,
        r#"{"url":"https://api.github.com","toolCallId":"tool_4"}"#,
        r#"{"url":"https://api.github.com","markdown":"{\n\"current_user_url\": \"https://api.github.com/user\"}"}"#,
    ),
    (
        ToolKind::SemSearch,
        r#"{"query":"如何在项目中使用组件","targetDirectories":[],"explanation":""}"#,
        r#"{"results":"<search_result path=\"showcase/src/App.tsx\" startLine=\"1\" endLine=\"139\">…</search_result>"}"#,
    ),
    (
        ToolKind::Mcp,
        r#"{"name":"hitl-hil-send_message_only","args":{"message":"Hello"},"toolCallId":"toolu_1",
            "providerIdentifier":"hitl-hil","toolName":"send_message_only"}"#,
        r#"{"content":[{"text":{"text":"{\"status\": \"success\"}"}},{"image":{"data":"iVBORw0=","mimeType":"image/png"}},
            {"resource":{"uri":"file:///a.txt","text":"a"}}],"isError":false}"#,
    ),
    (
        ToolKind::Task,
        r#"{"description":"Reply with PONG","prompt":"Reply PONG.","subagentType":{"unspecified":{}},"model":"default",
            "attachments":[],"mode":"TASK_MODE_UNSPECIFIED","machine":{"sameMachine":{}}}"#,
        r#"{"conversationSteps":[{"assistantMessage":{"text":"PONG"}},{"thinkingMessage":{"text":"hm",
            "thinkingDurationMs":12}},{"toolCall":{"readToolCall":{"args":{"path":"a"}}}}],"agentId":"a-1",
            "isBackground":false,"durationMs":"2890","backgroundReason":"SUBAGENT_BACKGROUND_REASON_UNSPECIFIED"}"#,
    ),
    (
        ToolKind::Write,
        r#"{"path":"/p/new.txt","fileText":"hello\n","toolCallId":"tool_5","returnFileContentAfterWrite":true}"#,
        r#"{"path":"/p/new.txt","linesCreated":1,"fileSize":6,"fileContentAfterWrite":"hello\n"}"#,
    ),
    (
        ToolKind::ReadLints,
        r#"{"paths":["/p/src/a.ts"]}"#,
        r#"{"fileDiagnostics":[{"path":"/p/src/a.ts","diagnostics":[{"severity":"DIAGNOSTIC_SEVERITY_ERROR",
            "range":{"start":{"line":3,"column":1},"end":{"line":3,"column":9}},"message":"Cannot find name 'x'.",
            "source":"ts","code":"2304","isStale":false}],"diagnosticsCount":1}],"totalFiles":1,"totalDiagnostics":1}"#,
    ),
    (
        ToolKind::CreatePlan,
        r##"{"name":"Refactor","overview":"Split the parser","plan":"# Plan\n1. split","todos":[{"id":"t1",
            "content":"split","status":"TODO_STATUS_PENDING"}],"phases":[{"name":"one","todos":[{"id":"t1"}]}],
            "isProject":false}"##,
        r#"{"planUri":"file:///p/.cursor/plans/refactor.md"}"#,
    ),
    (
        ToolKind::GenerateImage,
        r#"{"description":"a red fox, watercolor","filePath":"assets/fox.png","referenceImagePaths":[],
            "aspectRatio":"16:9"}"#,
        r#"{"filePath":"assets/fox.png","imageData":"iVBORw0KGgo="}"#,
    ),
    (
        ToolKind::RecordScreen,
        r#"{"mode":"RECORDING_MODE_SAVE_RECORDING","toolCallId":"tool_6","saveAsFilename":"demo"}"#,
        r#"{"path":"/tmp/demo.mp4","recordingDurationMs":"5400"}"#,
    ),
    (
        ToolKind::WebSearch,
        r#"{"searchTerm":"rust serde flatten","toolCallId":"tool_7"}"#,
        r#"{"references":[{"title":"Struct flattening","url":"https://serde.rs/attr-flatten.html","chunk":"…"}]}"#,
    ),
];

#[test]
fn a_seed_style_example_of_every_kind_is_typed() {
    let mut covered: Vec<ToolKind> = EXAMPLES.iter().map(|e| e.0).collect();
    covered.sort();
    assert_eq!(covered, ToolKind::all().collect::<Vec<_>>(), "one example per kind");
    for &(kind, args, success) in EXAMPLES {
        let parsed = parse_args(kind, args).unwrap_or_else(|e| panic!("{kind} args: {e}"));
        assert_eq!(parsed.kind(), kind);
        assert_typed(&format!("{kind} args"), &parsed, &serde_json::from_str(args).unwrap());
        let parsed = parse_success(kind, success).unwrap_or_else(|e| panic!("{kind} success: {e}"));
        assert_eq!(parsed.kind(), kind);
        assert_typed(&format!("{kind} success"), &parsed, &serde_json::from_str(success).unwrap());
    }
}

#[test]
fn typed_fields_read_back() {
    let ToolArgs::Shell(shell) = parse_args(ToolKind::Shell, EXAMPLES[5].1).unwrap() else { panic!() };
    assert_eq!(shell.file_output_threshold_bytes.map(|n| n.get()), Some(40_000));
    let cmds = shell.parsing_result.unwrap().executable_commands.unwrap();
    assert_eq!(cmds[0].args.as_ref().unwrap()[0].r#type.as_deref(), Some("word"));

    let ToolSuccess::Grep(grep) = parse_success(ToolKind::Grep, EXAMPLES[4].2).unwrap() else { panic!() };
    let root = &grep.workspace_results.unwrap()["/p/thor"];
    let file = &root.content.as_ref().unwrap().matches.as_ref().unwrap()[0];
    assert_eq!(file.matches.as_ref().unwrap()[0].line_number.map(|n| n.get()), Some(27));
    assert_eq!(root.files.as_ref().unwrap().files.as_deref(), Some(&["./src/index.ts".to_owned()][..]));

    let ToolSuccess::Task(task) = parse_success(ToolKind::Task, EXAMPLES[11].2).unwrap() else { panic!() };
    assert_eq!(task.duration_ms.map(|n| n.get()), Some(2890));
    let steps = task.conversation_steps.unwrap();
    assert_eq!(steps[0].assistant_message.as_ref().unwrap().text.as_deref(), Some("PONG"));

    let ToolSuccess::Ls(ls) = parse_success(ToolKind::Ls, EXAMPLES[0].2).unwrap() else { panic!() };
    let root = ls.directory_tree_root.unwrap();
    assert_eq!(root.children_dirs.unwrap()[0].children_files.as_ref().unwrap()[0].name.as_deref(), Some("index.ts"));
    assert_eq!(root.full_subtree_extension_counts.unwrap()[".json"].get(), 2);
}
