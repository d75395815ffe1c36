//! The secret rules as data: the schema of `secrets.toml` (unknown fields are rejected), its
//! compiled form — one ASCII-case-insensitive Aho-Corasick automaton over every rule's keywords
//! (the prefilter: a rule runs only when one of its keywords occurs) and a regex per pattern
//! rule — built once, and the checks made when it loads (regexes, duplicate ids, known
//! scanners, a replacement group named `secret` only, cases naming a rule). The embedded set's
//! regexes are compiled when a text first wakes their rule ([`Pattern`]); a unit test loads it
//! with every check.

use std::collections::HashSet;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, Input, MatchKind};
use regex::Regex;
use serde::Deserialize;

use super::REDACTED;

/// The embedded rule file.
const RULES_TOML: &str = include_str!("secrets.toml");

/// A rule file or rule that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    #[error("secrets.toml: {0}")]
    Toml(#[from] toml::de::Error),
    #[error("secrets.toml: rule `{id}`: {what}")]
    Rule { id: String, what: String },
    #[error("secrets.toml: {0}")]
    Set(String),
}

// ---- the schema (what the rule file may say) ----

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    rule: Vec<RuleSpec>,
    #[serde(default)]
    tests: Vec<CaseSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    id: String,
    /// The rule runs only when one of these occurs (ASCII case-insensitively).
    keywords: Vec<String>,
    /// A `regex` pattern; the group `secret`, if any, is what gets replaced.
    pattern: Option<String>,
    /// What a pattern's match becomes (default `[redacted]`).
    replace: Option<String>,
    /// A hand-written scanner instead of a pattern.
    scanner: Option<String>,
    /// Whole names that are never secrets (the `secret-field` scanner).
    #[serde(default)]
    allow: Vec<String>,
    /// Unquoted values that are never secrets (the `secret-field` scanner).
    #[serde(default)]
    allow_values: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseSpec {
    rule: String,
    input: String,
    /// Omitted: the input must come out unchanged.
    expected: Option<String>,
}

// ---- the compiled form ----

/// The hand-written scanners a rule may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scanner {
    UrlUserinfo,
    ScpUserinfo,
    AuthScheme,
    Cookie,
    SecretField,
    BridgeEndpoint,
}

impl Scanner {
    fn from_name(name: &str) -> Option<Scanner> {
        Some(match name {
            "url-userinfo" => Scanner::UrlUserinfo,
            "scp-userinfo" => Scanner::ScpUserinfo,
            "auth-scheme" => Scanner::AuthScheme,
            "cookie" => Scanner::Cookie,
            "secret-field" => Scanner::SecretField,
            "bridge-endpoint" => Scanner::BridgeEndpoint,
            _ => return None,
        })
    }
}

/// What a rule does.
#[derive(Debug)]
pub enum Action {
    /// Replace each match (or its `secret` group) with `replace`.
    Pattern {
        pattern: Pattern,
        replace: String,
    },
    Scanner(Scanner),
}

/// A pattern rule's regex, compiled the first time a text wakes the rule: a run wakes few rules,
/// and compiling every one cost each process about 10 M instructions (4 ms) before its first
/// scrub.
#[derive(Debug)]
pub struct Pattern {
    source: String,
    compiled: OnceLock<Option<Regex>>,
}

impl Pattern {
    /// The regex; `None` when it does not compile, which a checked load rules out (and the
    /// embedded set's unit test checks).
    pub fn regex(&self) -> Option<&Regex> {
        self.compiled.get_or_init(|| Regex::new(&self.source).ok()).as_ref()
    }
}

/// Whether a load compiles every regex to check it, or leaves each to its first use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compile {
    Checked,
    Deferred,
}

/// A compiled rule.
#[derive(Debug)]
pub struct Rule {
    pub id: String,
    pub action: Action,
}

/// The names of the `secret-field` scanner, for finding them in text and telling a secret key.
#[derive(Debug)]
pub struct FieldNames {
    /// Every name, ASCII-case-insensitively, all matches (names overlap: `secret`, `secret_key`).
    pub automaton: AhoCorasick,
    pub names: Vec<String>,
    /// The names again, by their last byte (lower case): a key is compared only with the names
    /// it could end with.
    by_last: Vec<Vec<String>>,
    /// Lower-case whole names that are never secrets.
    pub allow: Vec<String>,
    /// Unquoted values that are never secrets (compared ASCII-case-insensitively).
    pub allow_values: Vec<String>,
}

impl FieldNames {
    /// Whether `key` ends with one of the names, ASCII-case-insensitively.
    pub fn ends_a_name(&self, key: &[u8]) -> bool {
        let Some(last) = key.last() else { return false };
        self.by_last[usize::from(last.to_ascii_lowercase())]
            .iter()
            .any(|n| key.len() >= n.len() && key[key.len() - n.len()..].eq_ignore_ascii_case(n.as_bytes()))
    }
}

/// An inline case of the rule file.
#[derive(Debug, Clone)]
pub struct Case {
    pub rule: String,
    pub input: String,
    pub expected: String,
}

/// Every rule, in order, with the keyword prefilter.
#[derive(Debug)]
pub struct RuleSet {
    pub rules: Vec<Rule>,
    /// One automaton over every keyword of every rule.
    prefilter: AhoCorasick,
    /// For each keyword of the prefilter, the rules it wakes (a bit per rule).
    wakes: Vec<u64>,
    /// Every rule some keyword wakes: the prefilter's scan stops once it has found them all.
    wakeable: u64,
    pub fields: FieldNames,
    pub cases: Vec<Case>,
}

/// Which rules may match a text: a bit per rule, in rule order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Candidates(u64);

impl Candidates {
    /// Every rule (no prefilter).
    pub const ALL: Candidates = Candidates(u64::MAX);

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn contains(self, rule: usize) -> bool {
        self.0 & (1 << rule) != 0
    }
}

impl RuleSet {
    /// The embedded rules, loaded once; each regex is compiled at its first use (the unit test
    /// `the_builtin_rules_pass_every_check` compiles and checks them all).
    pub fn builtin() -> Result<&'static RuleSet, &'static RuleError> {
        static SET: OnceLock<Result<RuleSet, RuleError>> = OnceLock::new();
        SET.get_or_init(|| RuleSet::read(RULES_TOML, Compile::Deferred)).as_ref()
    }

    /// Compile and check a rule file.
    pub fn load(text: &str) -> Result<RuleSet, RuleError> {
        RuleSet::read(text, Compile::Checked)
    }

    fn read(text: &str, compile: Compile) -> Result<RuleSet, RuleError> {
        let file: RuleFile = toml::from_str(text)?;
        if file.rule.len() > 64 {
            return Err(RuleError::Set("more than 64 rules".into()));
        }
        let mut ids = HashSet::new();
        let mut rules = Vec::new();
        let mut keywords: Vec<String> = Vec::new();
        let mut wakes: Vec<u64> = Vec::new();
        let mut fields = None;
        for (i, spec) in file.rule.into_iter().enumerate() {
            if !ids.insert(spec.id.clone()) {
                return Err(rule_err(&spec.id, "the id is used twice"));
            }
            for k in &spec.keywords {
                if k.is_empty() {
                    return Err(rule_err(&spec.id, "an empty keyword"));
                }
                let lower = k.to_ascii_lowercase();
                match keywords.iter().position(|x| *x == lower) {
                    Some(at) => wakes[at] |= 1 << i,
                    None => {
                        keywords.push(lower);
                        wakes.push(1 << i);
                    }
                }
            }
            let action = compile_action(&spec, compile)?;
            if let Action::Scanner(Scanner::SecretField) = action {
                fields = Some(field_names(&spec)?);
            } else if !spec.allow.is_empty() || !spec.allow_values.is_empty() {
                return Err(rule_err(&spec.id, "`allow` and `allow_values` are for the secret-field scanner"));
            }
            rules.push(Rule { id: spec.id, action });
        }
        let fields = fields.ok_or_else(|| RuleError::Set("no rule with `scanner = \"secret-field\"`".into()))?;
        // What `candidates` needs: a keyword inside another wakes every rule the other wakes.
        for (i, a) in keywords.iter().enumerate() {
            for (j, b) in keywords.iter().enumerate() {
                if i != j && wakes[j] & !wakes[i] != 0 && b.contains(a.as_str()) {
                    return Err(RuleError::Set(format!("keyword `{a}` lies inside `{b}` of another rule")));
                }
            }
        }
        let prefilter = automaton(&keywords).map_err(|e| RuleError::Set(format!("keywords: {e}")))?;
        let mut cases = Vec::new();
        for c in file.tests {
            if !ids.contains(&c.rule) {
                return Err(RuleError::Set(format!("a case names no rule `{}`", c.rule)));
            }
            let expected = c.expected.unwrap_or_else(|| c.input.clone());
            cases.push(Case { rule: c.rule, input: c.input, expected });
        }
        let wakeable = wakes.iter().fold(0, |a, w| a | w);
        Ok(RuleSet { rules, prefilter, wakes, wakeable, fields, cases })
    }

    /// The rules that may match `text`: those with a keyword in it. (Rules without keywords —
    /// the bridge endpoints, whose markers are settings — are never among them.)
    ///
    /// Each search reports the keyword that ends first and the next starts one byte after it
    /// began, which finds every rule with a keyword in the text as long as a keyword that lies
    /// inside another wakes the other's rules too (checked at load): a keyword missed this way
    /// would have to contain one that was found. Cheaper than reporting every overlapping match.
    pub fn candidates(&self, text: &str) -> Candidates {
        let mut found = 0;
        let mut at = 0;
        while let Some(m) = self.prefilter.find(Input::new(text).span(at..text.len())) {
            found |= self.wakes[m.pattern().as_usize()];
            if found == self.wakeable {
                break;
            }
            at = m.start() + 1;
        }
        Candidates(found)
    }
}

fn rule_err(id: &str, what: impl Into<String>) -> RuleError {
    RuleError::Rule { id: id.to_owned(), what: what.into() }
}

/// An ASCII-case-insensitive automaton reporting every match (overlapping ones too).
fn automaton(patterns: &[String]) -> Result<AhoCorasick, aho_corasick::BuildError> {
    AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .build(patterns)
}

fn compile_action(spec: &RuleSpec, compile: Compile) -> Result<Action, RuleError> {
    let id = spec.id.as_str();
    match (&spec.pattern, &spec.scanner) {
        (Some(pattern), None) => {
            let compiled = OnceLock::new();
            if compile == Compile::Checked {
                let regex = Regex::new(pattern).map_err(|e| rule_err(id, format!("bad pattern: {e}")))?;
                if regex.capture_names().flatten().any(|n| n != "secret") {
                    return Err(rule_err(id, "the only named group a pattern may have is `secret`"));
                }
                let _ = compiled.set(Some(regex));
            }
            if spec.keywords.is_empty() {
                return Err(rule_err(id, "a pattern rule needs keywords"));
            }
            let pattern = Pattern { source: pattern.clone(), compiled };
            Ok(Action::Pattern { pattern, replace: spec.replace.clone().unwrap_or_else(|| REDACTED.to_owned()) })
        }
        (None, Some(name)) => {
            if spec.replace.is_some() {
                return Err(rule_err(id, "`replace` is for pattern rules"));
            }
            let scanner = Scanner::from_name(name).ok_or_else(|| rule_err(id, format!("unknown scanner `{name}`")))?;
            if spec.keywords.is_empty() != (scanner == Scanner::BridgeEndpoint) {
                return Err(rule_err(
                    id,
                    "every scanner but bridge-endpoint needs keywords (its markers are settings)",
                ));
            }
            Ok(Action::Scanner(scanner))
        }
        _ => Err(rule_err(id, "a rule has exactly one of `pattern` and `scanner`")),
    }
}

fn field_names(spec: &RuleSpec) -> Result<FieldNames, RuleError> {
    let names: Vec<String> = spec.keywords.iter().map(|k| k.to_ascii_lowercase()).collect();
    if let Some(bad) = names.iter().find(|n| !n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')) {
        return Err(rule_err(&spec.id, format!("`{bad}` is not a name (letters, digits, `_`, `-`)")));
    }
    let automaton = automaton(&names).map_err(|e| rule_err(&spec.id, format!("names: {e}")))?;
    let allow = spec.allow.iter().map(|a| a.to_ascii_lowercase()).collect();
    let mut by_last = vec![Vec::new(); 256];
    for n in &names {
        if let Some(&last) = n.as_bytes().last() {
            by_last[usize::from(last)].push(n.clone());
        }
    }
    Ok(FieldNames { automaton, names, by_last, allow, allow_values: spec.allow_values.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str = r#"
[[rule]]
id = "secret-field"
scanner = "secret-field"
keywords = ["token"]
"#;

    fn load_err(extra: &str) -> String {
        RuleSet::load(&format!("{MIN}{extra}")).unwrap_err().to_string()
    }

    #[test]
    fn the_builtin_rules_load() {
        let set = RuleSet::builtin().unwrap();
        assert!(set.rules.len() > 10);
        assert!(!set.cases.is_empty());
    }

    /// What `builtin` leaves to each regex's first use: every one compiles, with no named group
    /// but `secret`.
    #[test]
    fn the_builtin_rules_pass_every_check() {
        let set = RuleSet::load(RULES_TOML).unwrap();
        let patterns: Vec<&Pattern> = set
            .rules
            .iter()
            .filter_map(|r| match &r.action {
                Action::Pattern { pattern, .. } => Some(pattern),
                Action::Scanner(_) => None,
            })
            .collect();
        assert!(patterns.len() > 5 && patterns.iter().all(|p| p.regex().is_some()));
        let deferred = RuleSet::builtin().unwrap();
        assert_eq!(deferred.rules.len(), set.rules.len());
    }

    #[test]
    fn a_deferred_regex_is_compiled_at_its_first_use_and_a_bad_one_reads_as_none() {
        let good = Pattern { source: "a+".into(), compiled: OnceLock::new() };
        assert!(good.compiled.get().is_none());
        assert!(good.regex().is_some_and(|r| r.is_match("baa")));
        assert!(good.compiled.get().is_some());
        let bad = Pattern { source: "(".into(), compiled: OnceLock::new() };
        assert!(bad.regex().is_none());
    }

    #[test]
    fn a_minimal_set_loads() {
        assert_eq!(RuleSet::load(MIN).unwrap().rules.len(), 1);
    }

    #[test]
    fn bad_rules_are_rejected_at_load() {
        assert!(load_err("[[rule]]\nid = \"x\"\nkeywords = [\"a\"]\nregex = \"a\"\n").contains("unknown field"));
        assert!(load_err("[[rule]]\nid = \"secret-field\"\nkeywords = [\"a\"]\npattern = \"a\"\n").contains("twice"));
        assert!(load_err("[[rule]]\nid = \"x\"\nkeywords = [\"a\"]\npattern = \"(\"\n").contains("bad pattern"));
        assert!(load_err("[[rule]]\nid = \"x\"\nkeywords = [\"a\"]\npattern = \"(?P<s>a)\"\n").contains("`secret`"));
        assert!(load_err("[[rule]]\nid = \"x\"\nkeywords = []\npattern = \"a\"\n").contains("needs keywords"));
        assert!(load_err("[[rule]]\nid = \"x\"\nkeywords = [\"a\"]\nscanner = \"nope\"\n").contains("unknown scanner"));
        assert!(load_err("[[rule]]\nid = \"x\"\nkeywords = [\"a\"]\n").contains("exactly one"));
        assert!(load_err("[[rule]]\nid = \"x\"\nkeywords = [\"\"]\npattern = \"a\"\n").contains("empty keyword"));
        assert!(load_err("[[rule]]\nid = \"x\"\nkeywords = [\"a\"]\npattern = \"a\"\nallow = [\"a\"]\n")
            .contains("`allow`"));
        assert!(load_err("[[tests]]\nrule = \"missing\"\ninput = \"\"\n").contains("names no rule"));
        let no_fields = "[[rule]]\nid = \"x\"\nkeywords = [\"a\"]\npattern = \"a\"\n";
        assert!(RuleSet::load(no_fields).unwrap_err().to_string().contains("secret-field"));
        let bad_name = "[[rule]]\nid = \"f\"\nscanner = \"secret-field\"\nkeywords = [\"a b\"]\n";
        assert!(RuleSet::load(bad_name).unwrap_err().to_string().contains("not a name"));
        assert!(load_err("[[rule]]\nid = \"x\"\nkeywords = [\"TOKENS\"]\npattern = \"a\"\n").contains("lies inside"));
    }

    #[test]
    fn candidates_are_the_rules_whose_keywords_occur() {
        let set = RuleSet::load(&format!(
            "{MIN}[[rule]]\nid = \"aws\"\nkeywords = [\"AKIA\", \"ASIA\"]\npattern = \"x\"\n\
             [[rule]]\nid = \"b\"\nscanner = \"bridge-endpoint\"\nkeywords = []\n"
        ))
        .unwrap();
        assert!(set.candidates("nothing here").is_empty());
        let c = set.candidates("an akia and a TOKEN");
        assert!(c.contains(0) && c.contains(1) && !c.contains(2), "{c:?}");
        let c = set.candidates("ASIA");
        assert!(!c.contains(0) && c.contains(1), "{c:?}");
    }
}
