//! Command classification (SPEC §10): normalize what ran — unwrap `bash|sh|zsh|fish -c|-lc
//! '<cmd>'`, strip `VAR=x` and `env`, drop a leading `cd x &&` — split a command string on shell
//! operators outside quotes (several real commands make it compound), then pick the first rule
//! whose matcher fits the argv, retrying without a package-runner prefix (`pnpm tsc`, `uv run
//! pytest`, `npx jest`).

use super::rules::{Matcher, Rule, RuleSet, COMPOUND_ID, FALLBACK_ID};

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

/// Global flags that take a value before a subcommand (`git -C dir status`).
const VALUE_FLAGS: &[&str] = &["-C", "-c", "--git-dir", "--work-tree"];

/// What ran, normalized.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Normalized {
    /// The command as classified (the nested command of a shell wrapper, prefixes dropped).
    pub command: String,
    /// Its words (empty for a compound command).
    pub argv: Vec<String>,
    /// Several real commands (`a && b`, `a | b`, `a; b`).
    pub compound: bool,
}

/// Normalize an argv as executed (e.g. by `toolstream wrap`).
pub fn normalize_argv(argv: &[String]) -> Normalized {
    let words = strip_env(argv);
    if let Some(nested) = shell_payload(words) {
        return normalize_command(nested);
    }
    Normalized { command: join_words(words), argv: words.to_vec(), compound: false }
}

/// Normalize a command string (as a shell would run it).
pub fn normalize_command(cmd: &str) -> Normalized {
    let mut segments = split_segments(cmd);
    // A leading `cd x &&` (or `cd x;`) only sets where the real command runs.
    while segments.len() > 1 && segments[0].words.first().is_some_and(|w| w == "cd") && segments[0].then_runs_next {
        segments.remove(0);
    }
    match segments.as_slice() {
        [] => Normalized::default(),
        [only] => normalize_argv(&only.words),
        [first, ..] => {
            let start = first.start;
            Normalized { command: cmd.get(start..).unwrap_or(cmd).trim().to_owned(), argv: Vec::new(), compound: true }
        }
    }
}

/// The rule for a normalized command and the argv it matched with.
pub fn pick<'a>(set: &'a RuleSet, n: &Normalized) -> Option<(&'a Rule, Vec<String>)> {
    if n.compound {
        return set.get(COMPOUND_ID).map(|r| (r, Vec::new()));
    }
    let mut argv: &[String] = &n.argv;
    loop {
        if let Some(rule) = set.rules.iter().find(|r| r.matchers.iter().any(|m| matches(m, argv))) {
            return Some((rule, argv.to_vec()));
        }
        match strip_runner(argv) {
            Some(rest) if !rest.is_empty() => argv = rest,
            _ => break,
        }
    }
    set.get(FALLBACK_ID).map(|r| (r, n.argv.clone()))
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

/// `VAR=x …` and `env [-i] [VAR=x] …` prefixes removed.
fn strip_env(mut words: &[String]) -> &[String] {
    loop {
        match words.split_first() {
            Some((w, rest)) if is_assignment(w) => words = rest,
            Some((w, rest)) if w == "env" => {
                words = rest;
                while words.first().is_some_and(|w| w.starts_with('-')) {
                    words = &words[1..];
                }
            }
            _ => return words,
        }
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

/// One simple command of a command line.
#[derive(Debug)]
struct Segment {
    words: Vec<String>,
    /// Byte offset where it starts in the command line.
    start: usize,
    /// It is followed by `&&` or `;` (so a `cd` here changes where the next one runs).
    then_runs_next: bool,
}

/// Split a command line into simple commands on `&&`, `||`, `|`, `;`, `&`, newlines and
/// parentheses outside quotes; redirections (`2>&1`, `> f`) are not words.
fn split_segments(cmd: &str) -> Vec<Segment> {
    let mut segments = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut start: Option<usize> = None;
    let mut skip_redirect_target = false;
    let chars: Vec<(usize, char)> = cmd.char_indices().collect();
    let mut i = 0;

    let end_word = |word: &mut String, in_word: &mut bool, words: &mut Vec<String>, skip: &mut bool| {
        if !*in_word {
            return;
        }
        *in_word = false;
        let w = std::mem::take(word);
        if std::mem::take(skip) {
            return;
        }
        if let Some(op) = redirection(&w) {
            // `>` alone: the next word is its target.
            *skip = op;
            return;
        }
        words.push(w);
    };

    while i < chars.len() {
        let (at, c) = chars[i];
        let next = chars.get(i + 1).map(|&(_, c)| c);
        match c {
            '\'' => {
                start.get_or_insert(at);
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i].1 != '\'' {
                    word.push(chars[i].1);
                    i += 1;
                }
            }
            '"' => {
                start.get_or_insert(at);
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i].1 != '"' {
                    if chars[i].1 == '\\' && i + 1 < chars.len() && "\"\\$`".contains(chars[i + 1].1) {
                        i += 1;
                    }
                    word.push(chars[i].1);
                    i += 1;
                }
            }
            '\\' => {
                start.get_or_insert(at);
                in_word = true;
                if let Some(n) = next {
                    if n != '\n' {
                        word.push(n);
                    }
                    i += 1;
                }
            }
            '#' if !in_word => {
                while i < chars.len() && chars[i].1 != '\n' {
                    i += 1;
                }
                continue;
            }
            '&' if word.ends_with(['>', '<']) || next == Some('>') => {
                word.push(c);
                in_word = true;
            }
            '&' | '|' | ';' | '\n' | '(' | ')' => {
                end_word(&mut word, &mut in_word, &mut words, &mut skip_redirect_target);
                let then_runs_next = (c == '&' && next == Some('&')) || c == ';';
                if matches!((c, next), ('&', Some('&')) | ('|', Some('|')) | ('|', Some('&')) | (';', Some(';'))) {
                    i += 1;
                }
                if !words.is_empty() {
                    segments.push(Segment {
                        words: std::mem::take(&mut words),
                        start: start.unwrap_or(at),
                        then_runs_next,
                    });
                }
                start = None;
            }
            c if c.is_whitespace() => end_word(&mut word, &mut in_word, &mut words, &mut skip_redirect_target),
            c => {
                start.get_or_insert(at);
                in_word = true;
                word.push(c);
            }
        }
        i += 1;
    }
    end_word(&mut word, &mut in_word, &mut words, &mut skip_redirect_target);
    if !words.is_empty() {
        segments.push(Segment { words, start: start.unwrap_or(0), then_runs_next: false });
    }
    segments
}

/// `Some(true)` for a redirection operator whose target is the next word (`>`, `2>>`), `Some(false)`
/// for one complete in itself (`2>&1`, `>out.txt`), `None` for an ordinary word.
fn redirection(word: &str) -> Option<bool> {
    let rest = word.trim_start_matches(|c: char| c.is_ascii_digit());
    let rest = rest.strip_prefix('&').unwrap_or(rest);
    if !rest.starts_with(['>', '<']) {
        return None;
    }
    let target = rest.trim_start_matches(['>', '<', '&', '|']);
    Some(target.is_empty())
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
            let n = normalize_command(cmd);
            assert!(n.compound, "{cmd}");
            assert!(n.argv.is_empty());
        }
        assert_eq!(normalize_command("cd x && npm ci && npm test").command, "npm ci && npm test");
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
        let id = |cmd: &str| pick(set, &normalize_command(cmd)).unwrap().0.id.clone();
        assert_eq!(id("pnpm tsc --noEmit"), "build/tsc");
        assert_eq!(id("uv run pytest tests/x.py"), "tests/pytest");
        assert_eq!(id("npx --yes jest"), "tests/jest");
        assert_eq!(id("python3 -m pytest -q"), "tests/pytest");
        assert_eq!(id("pnpm install"), "install/pnpm");
        assert_eq!(id("git -C repo status"), "git/status");
        assert_eq!(id("cargo +nightly test"), "tests/cargo");
        assert_eq!(id("custom-tool check"), FALLBACK_ID);
        assert_eq!(id("cargo test && git status"), COMPOUND_ID);
    }
}
