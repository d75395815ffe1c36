//! Command classification (SPEC §10): normalize what ran — unwrap `bash|sh|zsh|fish -c|-lc
//! '<cmd>'`, strip `VAR=x`, `env` and wrappers (`time`, `timeout 60`, `xargs`, …), drop a leading
//! `cd x &&` — and find the producers of the output: the commands whose output is seen (in `a |
//! tail`, `a`; in `a | wc`, `wc`; never `cd`, `export` or `echo`). A producer's rule is the first
//! whose matcher fits its argv, retrying without a package-runner prefix (`pnpm tsc`, `uv run
//! pytest`, `npx jest`); a command that names no rule leaves the choice to the output's content.

use super::rules::{Matcher, Rule, RuleSet};
use super::shell::{self, Simple};

/// Shells whose `-c` argument is the real command.
pub const SHELLS: &[&str] = &["bash", "sh", "zsh", "fish", "dash", "ksh"];

/// Runner prefixes stripped when no rule matches the command as written: the words of the prefix
/// (`*` matches any word), after which the real tool follows (flags in between are skipped).
const RUNNERS: &[&[&str]] = &[
    &["npx"],
    &["bunx"],
    &["pnpx"],
    &["uvx"],
    &["pnpm", "exec|dlx"],
    &["npm", "exec"],
    &["yarn", "exec|dlx"],
    &["uv", "run"],
    &["poetry", "run"],
    &["pipenv", "run"],
    &["bundle", "exec"],
    &["python|python3", "-m"],
    &["pnpm"],
    &["yarn"],
];

/// Commands that run the command after them: (name, its options that take a value, positional
/// arguments before the command — `timeout 60 cmd`).
const WRAPPERS: &[(&str, &[&str], usize)] = &[
    ("time", &[], 0),
    ("nice", &["-n"], 0),
    ("nohup", &[], 0),
    ("timeout", &["-s", "-k", "--signal", "--kill-after"], 1),
    ("stdbuf", &[], 0),
    ("unbuffer", &[], 0),
    ("xargs", &["-n", "-I", "-P", "-d", "-L", "-s", "-E", "-a"], 0),
    ("command", &[], 0),
    ("exec", &[], 0),
    ("sudo", &["-u", "-g", "-C", "-h", "-p"], 0),
    ("env", &["-u", "-C", "-S"], 0),
];

/// Commands whose output, if any, is a label or a complaint, never what was asked for: they are
/// not producers (their lines go with the output around them).
const QUIET: &[&str] = &[
    "cd", "pushd", "popd", "export", "unset", "set", "source", ".", "alias", "true", "false", ":", "sleep", "wait",
    "trap", "shopt", "umask", "ulimit", "mkdir", "rm", "rmdir", "cp", "mv", "ln", "touch", "chmod", "chown", "exit",
    "return", "local", "declare", "readonly", "echo", "printf", "clear",
];

/// Commands that, reading a pipe, pass their input through (cut, filtered or copied, not
/// reshaped): the output is still the producer's (`cargo test 2>&1 | tail -n 50`).
const PASS_THROUGH: &[&str] =
    &["tail", "head", "tee", "cat", "less", "more", "grep", "egrep", "fgrep", "rg", "sort", "uniq", "sed", "ts", "col"];

/// Commands that print files: their output is a file's content, not a log (see
/// [`reads_files`]).
const FILE_READERS: &[&str] = &["cat", "head", "tail", "sed", "nl", "less", "more", "bat", "batcat", "jq", "yq"];

/// Global flags that take a value before a subcommand (`git -C dir status`).
const VALUE_FLAGS: &[&str] = &["-C", "-c", "--git-dir", "--work-tree"];

/// What ran, normalized.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Normalized {
    /// The command as classified (the nested command of a shell wrapper, prefixes dropped).
    pub command: String,
    /// Its words; for a compound command, the words of its one producer (empty when it has
    /// several or none).
    pub argv: Vec<String>,
    /// Several real commands (`a && b`, `a | b`, `a; b`).
    pub compound: bool,
    /// The argv of each command whose output is seen, in order (see the module doc).
    pub producers: Vec<Vec<String>>,
}

/// Normalize an argv as executed (e.g. by `toolstream wrap`).
pub fn normalize_argv(argv: &[String]) -> Normalized {
    let words = strip_prefixes(argv);
    if let Some(nested) = shell_payload(words) {
        return normalize_command(nested);
    }
    let producers = if words.is_empty() || is_quiet(words) { Vec::new() } else { vec![words.to_vec()] };
    Normalized { command: join_words(words), argv: words.to_vec(), compound: false, producers }
}

/// Normalize a command string (as a shell would run it).
pub fn normalize_command(cmd: &str) -> Normalized {
    let cmds = shell::parse(cmd);
    // A leading `cd x &&` (or `cd x;`) only sets where the real command runs.
    let mut first = 0;
    while cmds.len() - first > 1 && is_leading_cd(&cmds[first]) {
        first += 1;
    }
    match &cmds[first..] {
        [] => Normalized::default(),
        [only] => normalize_argv(&only.words),
        [head, ..] => {
            let producers = producers(&cmds, first);
            let argv = match producers.as_slice() {
                [one] => one.clone(),
                _ => Vec::new(),
            };
            Normalized {
                command: cmd.get(head.start..).unwrap_or(cmd).trim().to_owned(),
                argv,
                compound: true,
                producers,
            }
        }
    }
}

fn is_leading_cd(c: &Simple) -> bool {
    c.words.first().is_some_and(|w| w == "cd") && matches!(c.then, shell::Op::And | shell::Op::Seq)
}

/// The producers among `cmds[first..]`: commands whose standard output reaches the end of the
/// line — not piped, or piped only through pass-through filters — that are not quiet, with
/// shell wrappers (`bash -c '…'`) opened.
fn producers(cmds: &[Simple], first: usize) -> Vec<Vec<String>> {
    let n = cmds.len();
    let mut seen = vec![true; n];
    for i in (0..n).rev() {
        if let Some(to) = cmds[i].pipe_to {
            seen[i] = to < n && seen[to] && is_pass_through(&cmds[to].words);
        }
    }
    let mut out = Vec::new();
    for (i, c) in cmds.iter().enumerate().skip(first) {
        if !seen[i] || (c.piped_in && is_pass_through(&c.words)) {
            continue;
        }
        let words = strip_prefixes(&c.words);
        if words.is_empty() || is_quiet(words) {
            continue;
        }
        match shell_payload(words) {
            Some(nested) => out.extend(normalize_command(nested).producers),
            None => out.push(words.to_vec()),
        }
    }
    out
}

/// Whether every producer prints files (`cat src/main.rs`, `sed -n 1,80p a.py`, `head -50 x`):
/// what they print is what was asked for, unless its content names a rule.
pub fn reads_files(producers: &[Vec<String>]) -> bool {
    !producers.is_empty()
        && producers.iter().all(|p| p.len() > 1 && p.first().is_some_and(|w| FILE_READERS.contains(&basename(w))))
}

fn is_quiet(words: &[String]) -> bool {
    words.first().is_some_and(|w| QUIET.contains(&basename(w)))
}

fn is_pass_through(words: &[String]) -> bool {
    words.first().is_some_and(|w| PASS_THROUGH.contains(&basename(w)))
}

/// The rule a command names and the argv it matched with (after a runner prefix, if one was
/// stripped); `None` when no rule fits — the output's content decides.
pub fn pick<'a>(set: &'a RuleSet, argv: &[String]) -> Option<(&'a Rule, Vec<String>)> {
    let mut argv = argv;
    loop {
        if let Some(rule) = set.rules.iter().find(|r| r.matchers.iter().any(|m| matches(m, argv))) {
            return Some((rule, argv.to_vec()));
        }
        match strip_runner(argv) {
            Some(rest) if !rest.is_empty() => argv = rest,
            _ => return None,
        }
    }
}

/// Whether `argv` fits a matcher: argv[0]'s file name, then the positional arguments in order.
pub fn matches(m: &Matcher, argv: &[String]) -> bool {
    let Some((first, rest)) = argv.split_first() else { return false };
    if !m.argv.is_empty() {
        let Some((want0, want_rest)) = m.argv.split_first() else { return false };
        if !want0.iter().any(|w| w == basename(first)) {
            return false;
        }
        let mut positional = positionals(rest);
        for want in want_rest {
            match positional.next() {
                Some(arg) if want.iter().any(|w| w == arg) => {}
                _ => return false,
            }
        }
    }
    m.any_arg.is_empty() || rest.iter().any(|a| m.any_arg.contains(a))
}

fn positionals(args: &[String]) -> impl Iterator<Item = &str> {
    let mut skip_next = false;
    args.iter().filter_map(move |a| {
        if std::mem::take(&mut skip_next) {
            return None;
        }
        if VALUE_FLAGS.contains(&a.as_str()) {
            skip_next = true;
            return None;
        }
        (!a.starts_with('-') && !a.starts_with('+')).then_some(a.as_str())
    })
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `argv` without a leading runner prefix and the flags right after it.
fn strip_runner(argv: &[String]) -> Option<&[String]> {
    RUNNERS.iter().find_map(|prefix| {
        if argv.len() <= prefix.len() {
            return None;
        }
        let fits = prefix.iter().zip(argv).all(|(want, got)| want.split('|').any(|w| w == basename(got)));
        if !fits {
            return None;
        }
        let rest = &argv[prefix.len()..];
        let flags = rest.iter().take_while(|a| a.starts_with('-')).count();
        Some(&rest[flags..])
    })
}

/// `VAR=x …`, `env [-i] [VAR=x] …` and wrapper prefixes (`time`, `nice -n 5`, `timeout 60`, …)
/// removed.
fn strip_prefixes(mut words: &[String]) -> &[String] {
    loop {
        let Some((w, rest)) = words.split_first() else { return words };
        if is_assignment(w) {
            words = rest;
            continue;
        }
        let Some((_, value_flags, positional)) = WRAPPERS.iter().find(|(name, _, _)| *name == basename(w)) else {
            return words;
        };
        words = rest;
        while let Some((flag, after)) = words.split_first() {
            if !flag.starts_with('-') || flag == "-" {
                break;
            }
            words = if value_flags.contains(&flag.as_str()) { after.get(1..).unwrap_or_default() } else { after };
        }
        words = words.get(*positional..).unwrap_or_default();
    }
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let mut chars = name.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// The command string of `sh -c '<cmd>'`, `bash -lc '<cmd>'`, … (any flag cluster holding `c`).
fn shell_payload(words: &[String]) -> Option<&str> {
    let (shell, rest) = words.split_first()?;
    if !SHELLS.contains(&basename(shell)) {
        return None;
    }
    let mut it = rest.iter();
    while let Some(arg) = it.next() {
        let flags = arg.strip_prefix('-')?;
        if !flags.starts_with('-') && flags.contains('c') {
            return it.next().map(String::as_str);
        }
    }
    None
}

/// Words joined back into a command line, quoted where needed.
pub fn join_words(words: &[String]) -> String {
    words.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ")
}

/// `s` as one shell word: unchanged when it holds only safe characters, else single-quoted.
pub fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
    if safe {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_shell_wrapper_is_unwrapped() {
        let n = normalize_argv(&argv(&["/bin/bash", "-lc", "git status --short"]));
        assert_eq!(n.argv, argv(&["git", "status", "--short"]));
        assert_eq!(n.command, "git status --short");
        assert!(!n.compound);
        for shell in ["sh", "zsh", "fish"] {
            assert_eq!(normalize_argv(&argv(&[shell, "-c", "cargo test"])).argv, argv(&["cargo", "test"]));
        }
    }

    #[test]
    fn env_assignments_env_and_a_leading_cd_are_stripped() {
        let n = normalize_command("cd /repo && RUST_LOG=debug env -i FOO=1 cargo test -p x");
        assert_eq!(n.argv, argv(&["cargo", "test", "-p", "x"]));
        assert_eq!(normalize_command("bash -lc 'cd apps/ios && xcodebuild -scheme App'").argv[0], "xcodebuild");
        assert_eq!(normalize_command("cd a; cd b && git diff").argv, argv(&["git", "diff"]));
    }

    #[test]
    fn several_real_commands_are_compound() {
        for cmd in ["npm ci && npm test", "cargo test | tail -5", "make; make install", "a || b", "sleep 1 & wait"] {
            assert!(normalize_command(cmd).compound, "{cmd}");
        }
        assert_eq!(normalize_command("cd x && npm ci && npm test").command, "npm ci && npm test");
        assert!(!normalize_command("cd a; cd b && git diff").compound);
    }

    fn producers(cmd: &str) -> Vec<String> {
        normalize_command(cmd).producers.iter().map(|p| join_words(p)).collect()
    }

    #[test]
    fn the_producer_of_a_pipeline_is_its_last_stage_that_is_not_a_pass_through_filter() {
        assert_eq!(producers("cargo test 2>&1 | tail -n 50"), ["cargo test"]);
        assert_eq!(normalize_command("cargo test 2>&1 | tail -n 50").argv, argv(&["cargo", "test"]));
        assert_eq!(producers("pytest -q | tee log.txt | head -100"), ["pytest -q"]);
        assert_eq!(producers("cat pytest.log | grep -v PASSED"), ["cat pytest.log"]);
        assert_eq!(producers("git log --oneline | wc -l"), ["wc -l"]);
        assert_eq!(producers("find . -name '*.rs' | xargs rg TODO"), ["rg TODO"]);
        assert_eq!(producers("(cd app && npm test) 2>&1 | tail -20"), ["npm test"]);
        assert_eq!(producers("tail -n 200 build.log"), ["tail -n 200 build.log"]);
    }

    #[test]
    fn quiet_commands_and_wrappers_are_not_producers() {
        assert_eq!(producers("set -e; export CI=1; echo start && cargo test; echo done"), ["cargo test"]);
        assert_eq!(producers("cd app && time nice -n 5 timeout 600 env -i A=1 npx jest --ci"), ["npx jest --ci"]);
        assert_eq!(producers("cat cargo.log; ./run-tests.sh"), ["cat cargo.log", "./run-tests.sh"]);
        assert_eq!(
            producers("cargo build && bash -c 'cargo test | tail; go test ./...'"),
            ["cargo build", "cargo test", "go test ./..."]
        );
        assert_eq!(normalize_argv(&argv(&["bash", "-c", "echo hi"])).producers, Vec::<Vec<String>>::new());
        assert_eq!(normalize_argv(&argv(&["stdbuf", "-oL", "pytest"])).argv, argv(&["pytest"]));
    }

    #[test]
    fn quotes_and_redirections_do_not_split() {
        let n = normalize_command(r#"git commit -m "a && b; c | d" 2>&1"#);
        assert!(!n.compound);
        assert_eq!(n.argv, argv(&["git", "commit", "-m", "a && b; c | d"]));
        assert_eq!(normalize_command("cargo test > out.txt 2>&1").argv, argv(&["cargo", "test"]));
        assert_eq!(normalize_command("cargo test &>/dev/null").argv, argv(&["cargo", "test"]));
        assert_eq!(normalize_command("echo 'it'\\''s'").argv, argv(&["echo", "it's"]));
    }

    #[test]
    fn quoting_round_trips_through_the_splitter() {
        for w in ["plain", "two words", "it's", "a&&b", "", "$HOME"] {
            let line = join_words(&argv(&["echo", w]));
            assert_eq!(normalize_command(&line).argv, argv(&["echo", w]), "{line}");
        }
    }

    #[test]
    fn runners_are_stripped_only_when_nothing_matches() {
        let set = RuleSet::builtin().unwrap();
        let id = |cmd: &str| pick(set, &normalize_command(cmd).argv).map(|(r, _)| r.id.clone());
        assert_eq!(id("pnpm tsc --noEmit").as_deref(), Some("build/tsc"));
        assert_eq!(id("uv run pytest tests/x.py").as_deref(), Some("tests/pytest"));
        assert_eq!(id("npx --yes jest").as_deref(), Some("tests/jest"));
        assert_eq!(id("python3 -m pytest -q").as_deref(), Some("tests/pytest"));
        assert_eq!(id("pnpm install").as_deref(), Some("install/pnpm"));
        assert_eq!(id("git -C repo status").as_deref(), Some("git/status"));
        assert_eq!(id("cargo +nightly test").as_deref(), Some("tests/cargo"));
        assert_eq!(id("cargo test 2>&1 | tail -n 40").as_deref(), Some("tests/cargo"));
        for says_nothing in
            ["custom-tool check", "make test", "npm test", "pnpm run test", "./run-tests.sh", "cat x.log"]
        {
            assert_eq!(id(says_nothing), None, "{says_nothing}");
        }
    }
}
