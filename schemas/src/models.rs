//! Known Cursor models and their limits (SPEC §6c): the context window and the most output tokens
//! of one message. The table is `schemas/models.json`, the one copy shared with the pi extension
//! (`integrations/pi` registers its models from it); the engine's usage sanity check reads it
//! through [`ModelTable`], whose entries a configuration may override.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The bundled table (`schemas/models.json`).
pub const MODELS_JSON: &str = include_str!("../models.json");

/// What an unknown model counts as when the table names no default (SPEC §6c): the bundled
/// table's `default`, the one the pi extension registers unknown models with.
pub const UNKNOWN_MODEL_LIMITS: ModelLimits = ModelLimits {
    context_window: crate::pi_contract::UNKNOWN_CONTEXT_WINDOW,
    max_tokens: crate::pi_contract::UNKNOWN_MAX_TOKENS,
};

/// One model's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelLimits {
    /// Prompt plus output of one model call, in tokens.
    pub context_window: u64,
    /// Output of one model call, in tokens.
    pub max_tokens: u64,
}

#[derive(Deserialize)]
struct TableFile {
    default: Option<ModelLimits>,
    #[serde(default)]
    models: BTreeMap<String, ModelLimits>,
}

/// Limits by model id, with a default for models it does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelTable {
    default: ModelLimits,
    /// Keyed by [`normalize_model_id`].
    models: BTreeMap<String, ModelLimits>,
}

impl Default for ModelTable {
    /// The bundled table.
    fn default() -> Self {
        // The bundled file is checked by a unit test; should it ever not parse, every model counts
        // as unknown rather than the engine failing.
        ModelTable::from_json(MODELS_JSON)
            .unwrap_or_else(|_| ModelTable { default: UNKNOWN_MODEL_LIMITS, models: BTreeMap::new() })
    }
}

impl ModelTable {
    /// A table in the `models.json` format: `{"default"?: limits, "models": {id: limits}}` with
    /// limits `{"contextWindow", "maxTokens"}`; other keys are ignored.
    pub fn from_json(text: &str) -> Result<ModelTable, serde_json::Error> {
        let file: TableFile = serde_json::from_str(text)?;
        let mut table = ModelTable { default: file.default.unwrap_or(UNKNOWN_MODEL_LIMITS), models: BTreeMap::new() };
        for (id, limits) in file.models {
            table.set(&id, limits);
        }
        Ok(table)
    }

    /// Apply overrides in the `models.json` format: each listed model is added or replaced, and a
    /// `default` replaces what unknown models count as.
    pub fn merge_json(&mut self, text: &str) -> Result<(), serde_json::Error> {
        let file: TableFile = serde_json::from_str(text)?;
        if let Some(d) = file.default {
            self.default = d;
        }
        for (id, limits) in file.models {
            self.set(&id, limits);
        }
        Ok(())
    }

    /// Add or replace one model's limits (a configuration override).
    pub fn set(&mut self, model: &str, limits: ModelLimits) {
        self.models.insert(normalize_model_id(model), limits);
    }

    /// Replace what unknown models count as.
    pub fn set_default(&mut self, limits: ModelLimits) {
        self.default = limits;
    }

    /// The limits of `model`: its entry, else the entry of its id without an `@<context>`
    /// qualifier, else the default (also for a run whose model is not known).
    pub fn limits(&self, model: Option<&str>) -> ModelLimits {
        let Some(id) = model.map(normalize_model_id).filter(|id| !id.is_empty()) else {
            return self.default;
        };
        let base = id.split('@').next().unwrap_or(&id);
        self.models.get(&id).or_else(|| self.models.get(base)).copied().unwrap_or(self.default)
    }

    /// Every entry, by normalized id.
    pub fn entries(&self) -> impl Iterator<Item = (&str, ModelLimits)> {
        self.models.iter().map(|(k, v)| (k.as_str(), *v))
    }
}

/// The form ids are compared in: lower case, without a `cursor/` provider prefix or a
/// `:fast`/`:slow` suffix, with `.`, `_` and runs of whitespace as `-` (so `Composer 2.5`,
/// `cursor/composer-2-5:slow` and `composer-2.5` are one model).
pub fn normalize_model_id(id: &str) -> String {
    let lower = id.trim().to_ascii_lowercase();
    let id = lower.strip_prefix("cursor/").unwrap_or(&lower);
    let id = id.strip_suffix(":fast").or_else(|| id.strip_suffix(":slow")).unwrap_or(id);
    let mut out = String::with_capacity(id.len());
    for word in id.split_whitespace() {
        if !out.is_empty() {
            out.push('-');
        }
        out.extend(word.chars().map(|c| if c == '.' || c == '_' { '-' } else { c }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_merge_into_the_bundled_table() {
        let mut t = ModelTable::default();
        let auto = t.limits(Some("auto"));
        t.merge_json(r#"{"models": {"composer-2": {"contextWindow": 1000, "maxTokens": 10}}}"#).unwrap();
        assert_eq!(t.limits(Some("Composer 2")), ModelLimits { context_window: 1000, max_tokens: 10 });
        assert_eq!(t.limits(Some("auto")), auto, "entries not named stay");
        t.merge_json(r#"{"default": {"contextWindow": 5, "maxTokens": 1}}"#).unwrap();
        assert_eq!(t.limits(Some("no-such-model")), ModelLimits { context_window: 5, max_tokens: 1 });
        assert!(t.merge_json("{\"models\": []}").is_err());
    }

    #[test]
    fn the_bundled_table_parses_and_knows_composer() {
        let t = ModelTable::from_json(MODELS_JSON).unwrap();
        assert_eq!(t.default, UNKNOWN_MODEL_LIMITS);
        assert!(t.entries().count() > 10);
        let composer = ModelLimits { context_window: 200_000, max_tokens: 64_000 };
        for id in ["composer-2.5", "cursor/composer-2-5", "cursor/composer-2-5:slow", "Composer 2.5"] {
            assert_eq!(t.limits(Some(id)), composer, "{id}");
        }
        assert_eq!(t.limits(Some("gpt-5.5@272k")).context_window, 272_000);
        assert_eq!(t.limits(Some("grok-4.5:fast")).context_window, 256_000);
    }

    #[test]
    fn unknown_models_count_as_the_default_and_entries_can_be_overridden() {
        let mut t = ModelTable::default();
        assert_eq!(t.limits(Some("some-future-model")), UNKNOWN_MODEL_LIMITS);
        assert_eq!(t.limits(None), UNKNOWN_MODEL_LIMITS);
        assert_eq!(t.limits(Some("  ")), UNKNOWN_MODEL_LIMITS);
        let big = ModelLimits { context_window: 1_000_000, max_tokens: 128_000 };
        t.set("Composer-2.5", big);
        assert_eq!(t.limits(Some("composer-2.5")), big);
        t.set_default(big);
        assert_eq!(t.limits(Some("some-future-model")), big);
        // A context qualifier the table does not list falls back to the model's own entry.
        assert_eq!(t.limits(Some("composer-2.5@1m")), big);
    }
}
