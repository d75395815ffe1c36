//! The reducer rules as data: the schema of `rules/<family>.toml` (unknown fields are rejected),
//! the compiled [`RuleSet`] built from the embedded files once, and its checks at load (regexes,
//! duplicate ids, known families and code reducers, capture groups, inline cases naming a rule).

use std::collections::HashSet;
use std::sync::OnceLock;

use regex::{Regex, RegexSet};
use serde::Deserialize;

use super::reducers::CodeReducer;
use super::FAMILIES;

/// The embedded rule files, one per command family (file name, contents), in match order: the
/// first rule whose matcher fits wins (so `--help` of any command is help first).
const RULE_FILES: &[(&str, &str)] = &[
    ("common.toml", include_str!("rules/common.toml")),
    ("generic.toml", include_str!("rules/generic.toml")),
    ("git.toml", include_str!("rules/git.toml")),
    ("tests.toml", include_str!("rules/tests.toml")),
    ("install.toml", include_str!("rules/install.toml")),
    ("build.toml", include_str!("rules/build.toml")),
    ("search.toml", include_str!("rules/search.toml")),
    ("devops.toml", include_str!("rules/devops.toml")),
];

/// The rule an unknown single command gets.
pub const FALLBACK_ID: &str = "generic/fallback";
/// The rule a compound command (several real commands) gets.
pub const COMPOUND_ID: &str = "generic/compound";

/// A rule file or rule that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    #[error("{file}: {source}")]
    Toml { file: String, source: toml::de::Error },
    #[error("{file}: rule `{id}`: {what}")]
    Rule { file: String, id: String, what: String },
    #[error("{0}")]
    Set(String),
}

// ---- the schema (what a rule file may say) ----

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    common: Option<CommonSpec>,
    #[serde(default)]
    rule: Vec<RuleSpec>,
    #[serde(default)]
    tests: Vec<CaseSpec>,
}

/// Failure patterns every rule keeps (after the rule's own `skip`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CommonSpec {
    failure: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    id: String,
    family: String,
    /// Which commands it reduces: any one matcher matching is enough. Empty: chosen by id only.
    #[serde(default, rename = "match")]
    matches: Vec<MatchSpec>,
    /// Lines dropped (progress, passing tests, hints), unless a failure pattern keeps them.
    #[serde(default)]
    skip: Vec<String>,
    /// Lines never dropped, even between the head and the tail: failures, error locations,
    /// headers (a file's `diff --git`).
    #[serde(default)]
    keep: Vec<String>,
    /// Regions never cut by the head/tail bound (e.g. cargo's `failures:` list); `skip` still
    /// applies inside.
    #[serde(default)]
    sections: Vec<SectionSpec>,
    /// Consecutive lines matching one of these keep only the last (progress counters).
    #[serde(default)]
    last_of: Vec<String>,
    /// Line rewrites (first matching one applies; `$1` names a capture).
    #[serde(default)]
    rewrite: Vec<RewriteSpec>,
    /// Counts shown in the summary line.
    #[serde(default)]
    counters: Vec<CounterSpec>,
    /// Lines kept from the start and the end when there are more; `None`: keep all.
    head: Option<usize>,
    tail: Option<usize>,
    /// Trim leading whitespace of every line.
    #[serde(default)]
    trim: bool,
    /// Collapse runs of spaces inside a line (column padding) to one.
    #[serde(default)]
    squeeze_spaces: bool,
    /// The whole output when nothing is left and the command succeeded.
    on_empty: Option<String>,
    /// A code reducer that runs on the output before the line rules.
    reducer: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MatchSpec {
    /// `argv[0]` (its file name), then the positional arguments in order; `a|b` allows either.
    #[serde(default)]
    argv: Vec<String>,
    /// Matches when any argument is one of these (e.g. `--help`).
    #[serde(default)]
    any_arg: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SectionSpec {
    start: String,
    end: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RewriteSpec {
    pattern: String,
    with: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CounterSpec {
    label: String,
    pattern: String,
    /// Lines matching this are not counted.
    unless: Option<String>,
    /// `lines` (default): count matching lines; `last`: the number captured by the last match;
    /// `sum`: the numbers captured by every match, added up (the first capture group that took
    /// part in the match counts).
    #[serde(default)]
    mode: CounterMode,
}

/// How a counter counts.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CounterMode {
    #[default]
    Lines,
    Last,
    Sum,
}

/// An inline case: the rule's output for `input` must be `expected`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseSpec {
    name: String,
    rule: String,
    command: String,
    #[serde(default)]
    exit: i32,
    input: String,
    expected: String,
}

// ---- the compiled form ----

/// One argv matcher.
#[derive(Debug)]
pub struct Matcher {
    /// Alternatives for argv[0] and each positional argument after it.
    pub argv: Vec<Vec<String>>,
    pub any_arg: Vec<String>,
}

/// A counter of the summary line.
#[derive(Debug)]
pub struct Counter {
    pub label: String,
    pub pattern: Regex,
    pub unless: Option<Regex>,
    pub mode: CounterMode,
}

/// A rewrite of one line.
#[derive(Debug)]
pub struct Rewrite {
    pub pattern: Regex,
    pub with: String,
}

/// A compiled rule.
#[derive(Debug)]
pub struct Rule {
    pub id: String,
    pub family: String,
    pub matchers: Vec<Matcher>,
    pub skip: RegexSet,
    pub keep: RegexSet,
    pub sections: Vec<(Regex, Regex)>,
    pub last_of: RegexSet,
    pub rewrites: Vec<Rewrite>,
    pub counters: Vec<Counter>,
    pub head: Option<usize>,
    pub tail: Option<usize>,
    pub trim: bool,
    pub squeeze_spaces: bool,
    pub on_empty: Option<String>,
    pub reducer: Option<CodeReducer>,
}

/// An inline case, for the test that runs them all (and `toolstream`'s own checks).
#[derive(Debug, Clone)]
pub struct Case {
    pub file: String,
    pub name: String,
    pub rule: String,
    pub command: String,
    pub exit: i32,
    pub input: String,
    pub expected: String,
}

/// Every rule, in match order, with the common failure patterns and the inline cases.
#[derive(Debug)]
pub struct RuleSet {
    pub rules: Vec<Rule>,
    pub common_failure: RegexSet,
    pub cases: Vec<Case>,
}

impl RuleSet {
    /// The embedded rules, compiled once.
    pub fn builtin() -> Result<&'static RuleSet, &'static RuleError> {
        static SET: OnceLock<Result<RuleSet, RuleError>> = OnceLock::new();
        SET.get_or_init(|| RuleSet::load(RULE_FILES)).as_ref()
    }

    /// Compile and check rule files (name, TOML text).
    pub fn load(files: &[(&str, &str)]) -> Result<RuleSet, RuleError> {
        let mut rules = Vec::new();
        let mut common = None;
        let mut cases = Vec::new();
        let mut ids = HashSet::new();
        for (file, text) in files {
            let parsed: RuleFile =
                toml::from_str(text).map_err(|source| RuleError::Toml { file: (*file).to_owned(), source })?;
            if let Some(c) = parsed.common {
                if common.is_some() {
                    return Err(RuleError::Set(format!("{file}: a second [common] table")));
                }
                common = Some(set(file, "common", &c.failure)?);
            }
            for spec in parsed.rule {
                if !ids.insert(spec.id.clone()) {
                    return Err(rule_err(file, &spec.id, "the id is used twice"));
                }
                rules.push(compile(file, spec)?);
            }
            cases.extend(parsed.tests.into_iter().map(|c| Case {
                file: (*file).to_owned(),
                name: c.name,
                rule: c.rule,
                command: c.command,
                exit: c.exit,
                input: c.input,
                expected: c.expected,
            }));
        }
        for id in [FALLBACK_ID, COMPOUND_ID] {
            if !ids.contains(id) {
                return Err(RuleError::Set(format!("no rule `{id}`")));
            }
        }
        if let Some(case) = cases.iter().find(|c| !ids.contains(&c.rule)) {
            return Err(RuleError::Set(format!("{}: case `{}` names no rule `{}`", case.file, case.name, case.rule)));
        }
        let common_failure = common.ok_or_else(|| RuleError::Set("no [common] table".into()))?;
        Ok(RuleSet { rules, common_failure, cases })
    }

    /// The rule with this id.
    pub fn get(&self, id: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.id == id)
    }
}

fn rule_err(file: &str, id: &str, what: impl Into<String>) -> RuleError {
    RuleError::Rule { file: file.to_owned(), id: id.to_owned(), what: what.into() }
}

fn regex(file: &str, id: &str, pattern: &str) -> Result<Regex, RuleError> {
    Regex::new(pattern).map_err(|e| rule_err(file, id, format!("bad pattern `{pattern}`: {e}")))
}

fn set(file: &str, id: &str, patterns: &[String]) -> Result<RegexSet, RuleError> {
    RegexSet::new(patterns).map_err(|e| rule_err(file, id, format!("bad pattern: {e}")))
}

fn compile(file: &str, s: RuleSpec) -> Result<Rule, RuleError> {
    let id = s.id.as_str();
    if !FAMILIES.contains(&s.family.as_str()) {
        return Err(rule_err(file, id, format!("unknown family `{}`", s.family)));
    }
    let reducer = match &s.reducer {
        Some(name) => {
            Some(CodeReducer::from_name(name).ok_or_else(|| rule_err(file, id, format!("unknown reducer `{name}`")))?)
        }
        None => None,
    };
    let mut matchers = Vec::new();
    for m in &s.matches {
        if m.argv.is_empty() && m.any_arg.is_empty() {
            return Err(rule_err(file, id, "a matcher needs `argv` or `any_arg`"));
        }
        let argv = m.argv.iter().map(|a| a.split('|').map(str::to_owned).collect()).collect();
        matchers.push(Matcher { argv, any_arg: m.any_arg.clone() });
    }
    let mut counters = Vec::new();
    for c in &s.counters {
        let pattern = regex(file, id, &c.pattern)?;
        if c.mode != CounterMode::Lines && pattern.captures_len() < 2 {
            return Err(rule_err(file, id, format!("counter `{}` reads numbers but has no capture", c.label)));
        }
        let unless = c.unless.as_deref().map(|u| regex(file, id, u)).transpose()?;
        counters.push(Counter { label: c.label.clone(), pattern, unless, mode: c.mode });
    }
    let mut sections = Vec::new();
    for sec in &s.sections {
        sections.push((regex(file, id, &sec.start)?, regex(file, id, &sec.end)?));
    }
    let mut rewrites = Vec::new();
    for r in &s.rewrite {
        rewrites.push(Rewrite { pattern: regex(file, id, &r.pattern)?, with: r.with.clone() });
    }
    if s.head.is_some() != s.tail.is_some() {
        return Err(rule_err(file, id, "`head` and `tail` go together"));
    }
    Ok(Rule {
        skip: set(file, id, &s.skip)?,
        keep: set(file, id, &s.keep)?,
        last_of: set(file, id, &s.last_of)?,
        id: s.id,
        family: s.family,
        matchers,
        sections,
        rewrites,
        counters,
        head: s.head,
        tail: s.tail,
        trim: s.trim,
        squeeze_spaces: s.squeeze_spaces,
        on_empty: s.on_empty,
        reducer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str = r#"
[common]
failure = ["error"]
[[rule]]
id = "generic/fallback"
family = "generic"
[[rule]]
id = "generic/compound"
family = "generic"
"#;

    #[test]
    fn the_builtin_rules_load() {
        let set = RuleSet::builtin().unwrap();
        assert!(set.get(FALLBACK_ID).is_some() && set.get(COMPOUND_ID).is_some());
        assert!(!set.cases.is_empty());
    }

    #[test]
    fn a_minimal_set_loads() {
        assert_eq!(RuleSet::load(&[("a.toml", MIN)]).unwrap().rules.len(), 2);
    }

    fn load_err(extra: &str) -> String {
        let text = format!("{MIN}{extra}");
        RuleSet::load(&[("a.toml", &text)]).unwrap_err().to_string()
    }

    #[test]
    fn unknown_fields_are_rejected() {
        assert!(
            load_err("[[rule]]\nid = \"x\"\nfamily = \"generic\"\nkeep_lines = [\"a\"]\n").contains("unknown field")
        );
    }

    #[test]
    fn bad_rules_are_rejected_at_load() {
        assert!(load_err("[[rule]]\nid = \"generic/fallback\"\nfamily = \"generic\"\n").contains("used twice"));
        assert!(load_err("[[rule]]\nid = \"x\"\nfamily = \"nope\"\n").contains("unknown family"));
        assert!(load_err("[[rule]]\nid = \"x\"\nfamily = \"generic\"\nskip = [\"(\"]\n").contains("bad pattern"));
        assert!(
            load_err("[[rule]]\nid = \"x\"\nfamily = \"generic\"\nreducer = \"nope\"\n").contains("unknown reducer")
        );
        assert!(load_err("[[rule]]\nid = \"x\"\nfamily = \"generic\"\nhead = 3\n").contains("go together"));
        assert!(load_err(
            "[[rule]]\nid = \"x\"\nfamily = \"generic\"\n[[rule.counters]]\nlabel = \"a\"\npattern = \"a\"\nmode = \"last\"\n"
        )
        .contains("no capture"));
        assert!(load_err(
            "[[tests]]\nname = \"n\"\nrule = \"missing\"\ncommand = \"x\"\ninput = \"\"\nexpected = \"\"\n"
        )
        .contains("names no rule"));
        let second = RuleSet::load(&[("a.toml", MIN), ("b.toml", "[common]\nfailure = []\n")]);
        assert!(second.unwrap_err().to_string().contains("second [common]"));
    }

    #[test]
    fn the_fallbacks_must_exist() {
        let text = "[common]\nfailure = []\n[[rule]]\nid = \"generic/fallback\"\nfamily = \"generic\"\n";
        assert!(RuleSet::load(&[("a.toml", text)]).unwrap_err().to_string().contains("generic/compound"));
    }
}
