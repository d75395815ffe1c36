//! A small parser of shell command lines, enough to tell what ran (SPEC §10): the simple commands
//! of a line with their words (quotes and escapes resolved, `$(…)` and backquotes kept inside
//! their word, redirections and heredoc bodies dropped), the operator after each, and which
//! command's standard output feeds which pipe — through subshells `( … )`, brace groups and
//! `if`/`for`/`while` bodies. Not a shell: nothing is expanded. One pass, linear in the line.

/// What follows a simple command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `|` or `|&`.
    Pipe,
    /// `&&`.
    And,
    /// `||`.
    Or,
    /// `;`, `;;` or a newline.
    Seq,
    /// `&` (runs in the background).
    Background,
    /// The end of the line.
    End,
}

/// One simple command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Simple {
    /// Its words (assignments such as `VAR=x` included; redirections not).
    pub words: Vec<String>,
    /// Byte offset in the line where it starts.
    pub start: usize,
    /// The operator after it.
    pub then: Op,
    /// The command its standard output is piped into (an index in the list).
    pub pipe_to: Option<usize>,
    /// Its standard input comes from a pipe.
    pub piped_in: bool,
}

/// Words at the start of a command that are shell syntax, not the command.
const PREFIX_KEYWORDS: &[&str] = &["then", "else", "elif", "do", "!", "time"];
/// Keywords that open a compound command (its body is a group).
const OPEN_KEYWORDS: &[&str] = &["if", "while", "until", "for", "case", "select"];
/// Keywords whose command is only a header (`for x in a b`), not something that runs.
const HEADER_KEYWORDS: &[&str] = &["for", "case", "select"];
/// Keywords that close a compound command.
const CLOSE_KEYWORDS: &[&str] = &["fi", "done", "esac"];

/// The simple commands of `line`, in order.
pub fn parse(line: &str) -> Vec<Simple> {
    let mut p = Parser::default();
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        let next = chars.get(i + 1).map(|&(_, c)| c);
        match c {
            '\'' => {
                p.begin(at, true);
                i = p.take_until(&chars, i + 1, '\'');
            }
            '$' if next == Some('\'') => {
                // ANSI-C quoting: backslash escapes one character.
                p.begin(at, true);
                i += 2;
                while i < chars.len() && chars[i].1 != '\'' {
                    if chars[i].1 == '\\' && i + 1 < chars.len() {
                        i += 1;
                    }
                    p.word.push(chars[i].1);
                    i += 1;
                }
            }
            '"' => {
                p.begin(at, true);
                i += 1;
                while i < chars.len() && chars[i].1 != '"' {
                    if chars[i].1 == '\\' && i + 1 < chars.len() && "\"\\$`".contains(chars[i + 1].1) {
                        i += 1;
                    }
                    p.word.push(chars[i].1);
                    i += 1;
                }
            }
            '`' => {
                p.begin(at, true);
                p.word.push('`');
                i = p.take_until(&chars, i + 1, '`');
                p.word.push('`');
            }
            '$' | '<' | '>' if next == Some('(') => {
                // `$(…)`, `<(…)`, `>(…)`: one word, however much is inside.
                p.begin(at, c == '$');
                p.word.push(c);
                i = p.take_parens(&chars, i + 1);
            }
            '\\' if next == Some('\n') => i += 1,
            '\\' => {
                p.begin(at, true);
                if let Some(n) = next {
                    p.word.push(n);
                    i += 1;
                }
            }
            '#' if !p.in_word => {
                while i + 1 < chars.len() && chars[i + 1].1 != '\n' {
                    i += 1;
                }
            }
            '&' if (p.word.ends_with(['>', '<']) && !p.quoted) || next == Some('>') => {
                p.begin(at, false);
                p.word.push(c);
            }
            '|' | '&' | ';' | '\n' | '(' | ')' => {
                p.end_word();
                let op = match (c, next) {
                    ('|', Some('|')) => Some(Op::Or),
                    ('|', _) => Some(Op::Pipe),
                    ('&', Some('&')) => Some(Op::And),
                    ('&', _) => Some(Op::Background),
                    (';' | '\n', _) => Some(Op::Seq),
                    _ => None,
                };
                if matches!((c, next), ('&', Some('&')) | ('|', Some('|' | '&')) | (';', Some(';'))) {
                    i += 1;
                }
                match (c, op) {
                    ('(', _) => {
                        p.finish(Op::Seq);
                        p.groups.push(p.cmds.len());
                    }
                    (')', _) => {
                        p.finish(Op::Seq);
                        p.close_group();
                    }
                    (_, Some(op)) => p.finish(op),
                    _ => {}
                }
                if c == '\n' {
                    i = p.skip_heredocs(&chars, i + 1).saturating_sub(1);
                }
            }
            c if c.is_whitespace() => p.end_word(),
            c => {
                p.begin(at, false);
                p.word.push(c);
            }
        }
        i += 1;
    }
    p.end_word();
    p.finish(Op::End);
    p.cmds
}

#[derive(Default)]
struct Parser {
    cmds: Vec<Simple>,
    words: Vec<String>,
    word: String,
    in_word: bool,
    /// The current word starts quoted (so it is not an operator or keyword).
    quoted: bool,
    start: Option<usize>,
    /// The word after a redirection operator is its target, not an argument.
    skip_target: bool,
    /// The next word is a heredoc delimiter (`<<` stood alone); `true`: `<<-`.
    heredoc_word: Option<bool>,
    /// Heredocs whose bodies start at the next newline: (delimiter, strip leading tabs).
    heredocs: Vec<(String, bool)>,
    /// Where each open group starts (an index in `cmds`).
    groups: Vec<usize>,
    /// The group that just closed, until a word follows: a `|` pipes all of it.
    closed_group: Option<usize>,
    /// The current command is a header (`for x in …`): it runs nothing.
    header: bool,
    /// Commands whose output the next command reads.
    pipe_from: Vec<usize>,
}

impl Parser {
    /// A word starts or goes on at `at`; `quoted`: this part of it is quoted (a word whose
    /// first part is quoted is never an operator or keyword).
    fn begin(&mut self, at: usize, quoted: bool) {
        if self.in_word {
            return;
        }
        if self.words.is_empty() {
            self.start.get_or_insert(at);
        }
        self.in_word = true;
        self.quoted = quoted;
    }

    /// Copy characters into the word up to `close` (not included); the index of `close`.
    fn take_until(&mut self, chars: &[(usize, char)], mut i: usize, close: char) -> usize {
        while i < chars.len() && chars[i].1 != close {
            self.word.push(chars[i].1);
            i += 1;
        }
        i
    }

    /// Copy a parenthesised span starting at `i` (the `(`) into the word, nested parentheses and
    /// quotes included; the index of the closing `)`.
    fn take_parens(&mut self, chars: &[(usize, char)], mut i: usize) -> usize {
        let mut depth = 0usize;
        let mut quote: Option<char> = None;
        while i < chars.len() {
            let c = chars[i].1;
            self.word.push(c);
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"' | '`') => quote = Some(c),
                (None, '(') => depth += 1,
                (None, ')') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return i;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        i
    }

    fn end_word(&mut self) {
        if !self.in_word {
            return;
        }
        self.in_word = false;
        let quoted = std::mem::take(&mut self.quoted);
        let w = std::mem::take(&mut self.word);
        if let Some(strip_tabs) = self.heredoc_word.take() {
            self.heredocs.push((w, strip_tabs));
            return;
        }
        if std::mem::take(&mut self.skip_target) {
            return;
        }
        if !quoted {
            if let Some(heredoc) = heredoc(&w) {
                match heredoc {
                    (Some(delimiter), strip_tabs) => self.heredocs.push((delimiter.to_owned(), strip_tabs)),
                    (None, strip_tabs) => self.heredoc_word = Some(strip_tabs),
                }
                return;
            }
            if let Some(needs_target) = redirection(&w) {
                self.skip_target = needs_target;
                return;
            }
            if self.words.is_empty() && self.keyword(&w) {
                self.start = None;
                return;
            }
        }
        self.closed_group = None;
        self.words.push(w);
    }

    /// Handle `w` when it is a keyword at the start of a command; whether it was one.
    fn keyword(&mut self, w: &str) -> bool {
        if w == "{" || OPEN_KEYWORDS.contains(&w) {
            self.groups.push(self.cmds.len());
            self.header = HEADER_KEYWORDS.contains(&w);
            return true;
        }
        if w == "}" || CLOSE_KEYWORDS.contains(&w) {
            self.close_group();
            return true;
        }
        PREFIX_KEYWORDS.contains(&w)
    }

    fn close_group(&mut self) {
        if let Some(start) = self.groups.pop() {
            self.closed_group = Some(start);
        }
    }

    /// End the current simple command (if it has words) with `op` after it.
    fn finish(&mut self, op: Op) {
        let header = std::mem::take(&mut self.header);
        let start = self.start.take();
        self.skip_target = false;
        let words = std::mem::take(&mut self.words);
        if !words.is_empty() && !header {
            let idx = self.cmds.len();
            let piped_in = !self.pipe_from.is_empty();
            for from in std::mem::take(&mut self.pipe_from) {
                if let Some(cmd) = self.cmds.get_mut(from) {
                    cmd.pipe_to = Some(idx);
                }
            }
            self.cmds.push(Simple { words, start: start.unwrap_or(0), then: op, pipe_to: None, piped_in });
            self.closed_group = None;
        } else if let Some(last) = self.cmds.last_mut() {
            // `( a; b ) | c`, `done | tail`: the operator after a group.
            if op != Op::Seq || self.closed_group.is_some() {
                last.then = op;
            }
        }
        if op == Op::Pipe {
            self.pipe_from = match self.closed_group.take() {
                Some(start) => (start..self.cmds.len()).collect(),
                None => self.cmds.len().checked_sub(1).into_iter().collect(),
            };
        }
    }

    /// At the start of a line (index `i`): skip the bodies of pending heredocs; the index after.
    fn skip_heredocs(&mut self, chars: &[(usize, char)], mut i: usize) -> usize {
        for (delimiter, strip_tabs) in std::mem::take(&mut self.heredocs) {
            loop {
                let begin = i;
                while i < chars.len() && chars[i].1 != '\n' {
                    i += 1;
                }
                let line: String = chars[begin..i].iter().map(|&(_, c)| c).collect();
                i += 1;
                let line = if strip_tabs { line.trim_start_matches('\t') } else { line.as_str() };
                if line == delimiter || i >= chars.len() {
                    break;
                }
            }
        }
        i
    }
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

/// A heredoc operator (`<<EOF`, `<<-EOF`, `<<` alone): its delimiter when attached, and whether
/// leading tabs are stripped. `<<<` (a here-string) is not one.
fn heredoc(word: &str) -> Option<(Option<&str>, bool)> {
    let rest = word.trim_start_matches(|c: char| c.is_ascii_digit()).strip_prefix("<<")?;
    if rest.starts_with('<') {
        return None;
    }
    let (rest, strip_tabs) = match rest.strip_prefix('-') {
        Some(r) => (r, true),
        None => (rest, false),
    };
    Some(((!rest.is_empty()).then_some(rest), strip_tabs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Vec<String>> {
        parse(line).into_iter().map(|c| c.words).collect()
    }

    fn w(list: &[&[&str]]) -> Vec<Vec<String>> {
        list.iter().map(|c| c.iter().map(|s| (*s).to_owned()).collect()).collect()
    }

    #[test]
    fn operators_split_commands_outside_quotes() {
        assert_eq!(words("a && b || c; d & e | f"), w(&[&["a"], &["b"], &["c"], &["d"], &["e"], &["f"]]));
        let ops: Vec<Op> = parse("a && b || c; d & e | f").iter().map(|c| c.then).collect();
        assert_eq!(ops, [Op::And, Op::Or, Op::Seq, Op::Background, Op::Pipe, Op::End]);
        assert_eq!(words(r#"git commit -m "a && b; c | d""#), w(&[&["git", "commit", "-m", "a && b; c | d"]]));
        assert_eq!(words("echo 'it'\\''s' $'a\\'b'"), w(&[&["echo", "it's", "a'b"]]));
        assert_eq!(words("a\nb;; c"), w(&[&["a"], &["b"], &["c"]]));
    }

    #[test]
    fn redirections_are_not_words() {
        assert_eq!(words("cargo test > out.txt 2>&1"), w(&[&["cargo", "test"]]));
        assert_eq!(words("cargo test &>/dev/null"), w(&[&["cargo", "test"]]));
        assert_eq!(words("cargo test 2>&1 | tail -n 50"), w(&[&["cargo", "test"], &["tail", "-n", "50"]]));
        assert_eq!(words("echo '>' \">\""), w(&[&["echo", ">", ">"]]), "quoted, not a redirection");
        assert_eq!(words("tr a b <<< 'x y'"), w(&[&["tr", "a", "b"]]));
    }

    #[test]
    fn substitutions_stay_inside_their_word() {
        assert_eq!(words("echo $(date; uptime) `a | b` ok"), w(&[&["echo", "$(date; uptime)", "`a | b`", "ok"]]));
        assert_eq!(words("x=$(f \"(\" ')'); y"), w(&[&["x=$(f \"(\" ')')"], &["y"]]));
        assert_eq!(words("diff <(a) <(b)"), w(&[&["diff"]]));
    }

    #[test]
    fn heredoc_bodies_are_skipped() {
        let line = "cat > f.py <<'EOF'\nimport x; x.run() | y\nEOF\npytest -q";
        assert_eq!(words(line), w(&[&["cat"], &["pytest", "-q"]]));
        assert_eq!(
            words("cat <<-END && make\n\tbody && more\n\tEND\ngo test"),
            w(&[&["cat"], &["make"], &["go", "test"]])
        );
        assert_eq!(words("cat << X\nbody"), w(&[&["cat"]]), "an unterminated body ends the line");
    }

    #[test]
    fn comments_and_continuations() {
        assert_eq!(words("a # b && c\nd"), w(&[&["a"], &["d"]]));
        assert_eq!(words("cargo \\\n test"), w(&[&["cargo", "test"]]));
        assert_eq!(words("echo a#b"), w(&[&["echo", "a#b"]]));
    }

    #[test]
    fn pipes_know_where_output_goes() {
        let cmds = parse("a | b | c");
        assert_eq!(cmds[0].pipe_to, Some(1));
        assert_eq!(cmds[1].pipe_to, Some(2));
        assert!(cmds[1].piped_in && cmds[2].piped_in && !cmds[0].piped_in);
        assert_eq!(cmds[2].pipe_to, None);
        // A group's every command feeds the pipe after it.
        let cmds = parse("(cd x && a; b) 2>&1 | tail -5; c");
        assert_eq!(cmds.iter().map(|c| c.words[0].as_str()).collect::<Vec<_>>(), ["cd", "a", "b", "tail", "c"]);
        assert_eq!(cmds.iter().map(|c| c.pipe_to).collect::<Vec<_>>(), [Some(3), Some(3), Some(3), None, None]);
        let cmds = parse("{ a; b; } | head");
        assert_eq!(cmds.iter().map(|c| c.pipe_to).collect::<Vec<_>>(), [Some(2), Some(2), None]);
    }

    #[test]
    fn loops_and_conditionals_keep_their_bodies() {
        assert_eq!(
            words("for f in a b; do pytest \"$f\"; done | tail -3"),
            w(&[&["pytest", "$f"], &["tail", "-3"]]),
            "the `for` header runs nothing"
        );
        let cmds = parse("for f in a b; do pytest \"$f\"; done | tail -3");
        assert_eq!(cmds[0].pipe_to, Some(1));
        assert_eq!(
            words("if make; then make test; else echo no; fi"),
            w(&[&["make"], &["make", "test"], &["echo", "no"]])
        );
        assert_eq!(words("while ! curl x; do sleep 1; done"), w(&[&["curl", "x"], &["sleep", "1"]]));
    }

    #[test]
    fn starts_are_byte_offsets() {
        let line = "cd é && cargo test";
        let cmds = parse(line);
        assert_eq!(&line[cmds[1].start..], "cargo test");
        assert_eq!(parse("  (a)")[0].start, 3);
    }

    #[test]
    fn odd_input_does_not_break_it() {
        for line in ["", ")", "((", "a |", "| a", "'unclosed", "\"unclosed", "$(", "`", "<<", "a <<", "}", "fi"] {
            let _ = parse(line);
        }
        assert!(parse("   ").is_empty());
    }
}
