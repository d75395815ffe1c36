//! The fields of a diagnostic (trace-only records: why a call was skipped, which usage a message
//! got, what a source sent that nothing understood). A few named values each, under names the
//! code knows at compile time: kept in a small list with borrowed names rather than an ordered
//! map of owned keys, which cost an allocation per name on every message and call. Read in name
//! order, as the JSON object they are written as holds them.

use std::borrow::Cow;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

/// Named values, kept in name order; a name set twice keeps the last value, as in a JSON object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiagFields(Vec<(Cow<'static, str>, Value)>);

impl DiagFields {
    pub fn new() -> DiagFields {
        DiagFields(Vec::new())
    }

    /// Room for `n` fields without growing (a diagnostic made for every message knows its count).
    pub fn with_capacity(n: usize) -> DiagFields {
        DiagFields(Vec::with_capacity(n))
    }

    /// Set `key` to `value` (replacing an earlier value of the same name).
    pub fn insert(&mut self, key: impl Into<Cow<'static, str>>, value: impl Into<Value>) {
        let (key, value) = (key.into(), value.into());
        // Most diagnostics are written in name order: a name after the last one goes at the end.
        if self.0.last().is_none_or(|(last, _)| last.as_ref() < key.as_ref()) {
            self.0.push((key, value));
            return;
        }
        match self.0.binary_search_by(|(k, _)| k.as_ref().cmp(key.as_ref())) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (key, value)),
        }
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        let i = self.0.binary_search_by(|(k, _)| k.as_ref().cmp(key)).ok()?;
        Some(&self.0[i].1)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The fields in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(k, v)| (k.as_ref(), v))
    }
}

impl<K: Into<Cow<'static, str>>, V: Into<Value>> FromIterator<(K, V)> for DiagFields {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> DiagFields {
        let mut fields = DiagFields::new();
        for (k, v) in iter {
            fields.insert(k, v);
        }
        fields
    }
}

impl std::ops::Index<&str> for DiagFields {
    type Output = Value;

    /// The value of `key`, `null` when there is none (as `serde_json::Map` indexes).
    fn index(&self, key: &str) -> &Value {
        static NULL: Value = Value::Null;
        self.get(key).unwrap_or(&NULL)
    }
}

/// Written as a JSON object, in name order.
impl Serialize for DiagFields {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut map = ser.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_like_the_json_object_it_is_written_as() {
        let mut f = DiagFields::new();
        f.insert("turn", 3);
        f.insert("action", "skip");
        f.insert(String::from("dynamic"), json!([1]));
        f.insert("turn", 4);
        assert_eq!(f.len(), 3);
        assert_eq!(f["turn"], 4);
        assert_eq!(f["missing"], Value::Null);
        let names: Vec<&str> = f.iter().map(|(k, _)| k).collect();
        assert_eq!(names, ["action", "dynamic", "turn"]);
        assert_eq!(serde_json::to_string(&f).unwrap(), r#"{"action":"skip","dynamic":[1],"turn":4}"#);
        let as_map: serde_json::Map<String, Value> =
            [("turn", json!(4)), ("action", json!("skip")), ("dynamic", json!([1]))]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect();
        assert_eq!(serde_json::to_string(&f).unwrap(), serde_json::to_string(&as_map).unwrap());
        let same: DiagFields =
            [("dynamic", json!([1])), ("turn", json!(4)), ("action", json!("skip"))].into_iter().collect();
        assert_eq!(f, same);
        let other: DiagFields =
            [("dynamic", json!([1])), ("turn", json!(5)), ("action", json!("skip"))].into_iter().collect();
        assert_ne!(f, other);
        // Names after the last one, then one between, then the last one again.
        f.insert("zone", 1);
        f.insert("boundary", 2);
        f.insert("zone", 5);
        let names: Vec<&str> = f.iter().map(|(k, _)| k).collect();
        assert_eq!(names, ["action", "boundary", "dynamic", "turn", "zone"]);
        assert_eq!((f.len(), &f["zone"]), (5, &json!(5)));
    }
}
