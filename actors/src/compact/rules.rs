//! The reducer rules as data: the schema of `rules/<family>.toml` (unknown fields are rejected),
//! the compiled [`RuleSet`] built from the embedded files once — with the content signatures of
//! every rule gathered into two regex sets — and its checks at load (regexes, duplicate ids,
//! known families and code reducers, capture groups, `absorbs` and inline cases naming a rule).

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
    ("agents.toml", include_str!("rules/agents.toml")),
];

/// The rule output gets when neither its command nor its content names one.
pub const FALLBACK_ID: &str = "generic/fallback";
/// The rule the output of several producers gets when it cannot be split between them.
pub const COMPOUND_ID: &str = "generic/compound";
/// The rule a file read (`cat`, `head`, `sed -n`, …) gets when its content names no other.
pub const FILE_ID: &str = "generic/file";

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
    /// Regions dropped whole (a passing test suite's block): from a line matching `start` up to
    /// the next line matching `end` (not included, and itself free to start a block); `keep`
    /// still keeps lines inside.
    #[serde(default)]
    skip_blocks: Vec<SectionSpec>,
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
    /// Runs of lines whose first word is a path in one folder are listed under the folder.
    #[serde(default)]
    group_by_folder: bool,
    /// The whole output when nothing is left and the command succeeded.
    on_empty: Option<String>,
    /// A code reducer that runs on the output before the line rules.
    reducer: Option<String>,
    /// Lines only this tool's output has: when the command names no rule, a hit among the first
    /// and last lines of the output picks this one.
    #[serde(default)]
    signatures: Vec<String>,
    /// Lines that begin this tool's output: where the output of several commands is split.
    #[serde(default)]
    starts: Vec<String>,
    /// Rules whose output, next to this rule's, is part of it (`cargo test` compiles first).
    #[serde(default)]
    absorbs: Vec<String>,
    /// Runs of lines of the same shape collapse into one line with a count.
    similar: Option<SimilarSpec>,
    /// The output is kept as it is (only `exit N` goes on top).
    #[serde(default)]
    verbatim: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SimilarSpec {
    /// The shortest run collapsed.
    min_run: usize,
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
    /// When `pattern` never matches (a summary line cut off), count the lines matching this.
    fallback: Option<String>,
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
    pub fallback: Option<Regex>,
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
    pub skip_blocks: Vec<(Regex, Regex)>,
    pub last_of: RegexSet,
    pub rewrites: Vec<Rewrite>,
    pub counters: Vec<Counter>,
    pub head: Option<usize>,
    pub tail: Option<usize>,
    pub trim: bool,
    pub squeeze_spaces: bool,
    pub group_by_folder: bool,
    pub on_empty: Option<String>,
    pub reducer: Option<CodeReducer>,
    /// Indices (in [`RuleSet::rules`]) of the rules this one absorbs.
    pub absorbs: Vec<usize>,
    /// The shortest run of same-shape lines collapsed, when this rule collapses them.
    pub similar_min_run: Option<usize>,
    pub verbatim: bool,
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

/// Every rule, in match order, with the common failure patterns, the content signatures and the
/// inline cases.
#[derive(Debug)]
pub struct RuleSet {
    pub rules: Vec<Rule>,
    pub common_failure: RegexSet,
    /// Every rule's `starts`, and for each pattern the index of its rule.
    pub starts: RegexSet,
    pub start_rules: Vec<usize>,
    /// Every rule's `signatures`, and for each pattern the index of its rule.
    pub signatures: RegexSet,
    pub signature_rules: Vec<usize>,
    /// The indices of [`FALLBACK_ID`], [`COMPOUND_ID`] and [`FILE_ID`] (checked to exist at load).
    pub fallback: usize,
    pub compound: usize,
    pub file: usize,
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
        let mut content = Content::default();
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
                content.add(file, &spec, rules.len())?;
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
        let position =
            |id: &str| rules.iter().position(|r| r.id == id).ok_or_else(|| RuleError::Set(format!("no rule `{id}`")));
        let (fallback, compound, file) = (position(FALLBACK_ID)?, position(COMPOUND_ID)?, position(FILE_ID)?);
        if let Some(case) = cases.iter().find(|c| !ids.contains(&c.rule)) {
            return Err(RuleError::Set(format!("{}: case `{}` names no rule `{}`", case.file, case.name, case.rule)));
        }
        for (file, from, names) in content.absorbs {
            for name in names {
                let Some(to) = rules.iter().position(|r| r.id == name) else {
                    return Err(rule_err(&file, &rules[from].id, format!("absorbs an unknown rule `{name}`")));
                };
                rules[from].absorbs.push(to);
            }
        }
        let common_failure = common.ok_or_else(|| RuleError::Set("no [common] table".into()))?;
        let compiled = |patterns: &[String]| RegexSet::new(patterns).map_err(|e| RuleError::Set(e.to_string()));
        Ok(RuleSet {
            rules,
            common_failure,
            starts: compiled(&content.starts)?,
            start_rules: content.start_rules,
            signatures: compiled(&content.signatures)?,
            signature_rules: content.signature_rules,
            fallback,
            compound,
            file,
            cases,
        })
    }

    /// The rule with this id.
    pub fn get(&self, id: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.id == id)
    }

    /// The index of the rule with this id.
    pub fn index(&self, id: &str) -> Option<usize> {
        self.rules.iter().position(|r| r.id == id)
    }
}

/// The content patterns of the rules, gathered while they load.
#[derive(Default)]
struct Content {
    starts: Vec<String>,
    start_rules: Vec<usize>,
    signatures: Vec<String>,
    signature_rules: Vec<usize>,
    /// (file, rule index, the ids it absorbs), resolved once every rule is known.
    absorbs: Vec<(String, usize, Vec<String>)>,
}

impl Content {
    fn add(&mut self, file: &str, spec: &RuleSpec, rule: usize) -> Result<(), RuleError> {
        for pattern in spec.starts.iter().chain(&spec.signatures) {
            regex(file, &spec.id, pattern)?;
        }
        self.starts.extend(spec.starts.iter().cloned());
        self.start_rules.extend(std::iter::repeat_n(rule, spec.starts.len()));
        self.signatures.extend(spec.signatures.iter().cloned());
        self.signature_rules.extend(std::iter::repeat_n(rule, spec.signatures.len()));
        if !spec.absorbs.is_empty() {
            self.absorbs.push((file.to_owned(), rule, spec.absorbs.clone()));
        }
        Ok(())
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
        let fallback = c.fallback.as_deref().map(|f| regex(file, id, f)).transpose()?;
        counters.push(Counter { label: c.label.clone(), pattern, unless, mode: c.mode, fallback });
    }
    let regions = |specs: &[SectionSpec]| -> Result<Vec<(Regex, Regex)>, RuleError> {
        specs.iter().map(|sec| Ok((regex(file, id, &sec.start)?, regex(file, id, &sec.end)?))).collect()
    };
    let sections = regions(&s.sections)?;
    let skip_blocks = regions(&s.skip_blocks)?;
    let mut rewrites = Vec::new();
    for r in &s.rewrite {
        rewrites.push(Rewrite { pattern: regex(file, id, &r.pattern)?, with: r.with.clone() });
    }
    if s.head.is_some() != s.tail.is_some() {
        return Err(rule_err(file, id, "`head` and `tail` go together"));
    }
    if s.similar.as_ref().is_some_and(|sim| sim.min_run < 2) {
        return Err(rule_err(file, id, "`similar.min_run` is at least 2"));
    }
    Ok(Rule {
        skip: set(file, id, &s.skip)?,
        keep: set(file, id, &s.keep)?,
        last_of: set(file, id, &s.last_of)?,
        id: s.id,
        family: s.family,
        matchers,
        sections,
        skip_blocks,
        rewrites,
        counters,
        head: s.head,
        tail: s.tail,
        trim: s.trim,
        squeeze_spaces: s.squeeze_spaces,
        group_by_folder: s.group_by_folder,
        on_empty: s.on_empty,
        reducer,
        absorbs: Vec::new(),
        similar_min_run: s.similar.map(|sim| sim.min_run),
        verbatim: s.verbatim,
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
[[rule]]
id = "generic/file"
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
        assert_eq!(RuleSet::load(&[("a.toml", MIN)]).unwrap().rules.len(), 3);
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
        assert!(load_err("[[rule]]\nid = \"x\"\nfamily = \"generic\"\nstarts = [\"[\"]\n").contains("bad pattern"));
        assert!(load_err("[[rule]]\nid = \"x\"\nfamily = \"generic\"\nabsorbs = [\"nope\"]\n").contains("unknown rule"));
        assert!(
            load_err("[[rule]]\nid = \"x\"\nfamily = \"generic\"\nsimilar = { min_run = 1 }\n").contains("at least 2")
        );
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
