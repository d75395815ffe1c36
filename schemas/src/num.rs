//! Numbers as Cursor sends them: 64-bit integers arrive as JSON strings (`"fileSize":"2"`), 32-bit
//! ones as numbers (SPEC §1.1 rule 7). [`Int`] accepts both, everywhere.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An integer that may arrive as a JSON number or as a decimal string. Serializes as a number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Int(pub i64);

impl Int {
    pub fn get(self) -> i64 {
        self.0
    }

    /// The value as `u64`, or `None` when negative.
    pub fn as_u64(self) -> Option<u64> {
        u64::try_from(self.0).ok()
    }
}

impl From<i64> for Int {
    fn from(v: i64) -> Self {
        Int(v)
    }
}

impl fmt::Display for Int {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for Int {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(self.0)
    }
}

struct IntVisitor;

impl Visitor<'_> for IntVisitor {
    type Value = Int;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer as a number or a decimal string")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Int, E> {
        Ok(Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Int, E> {
        i64::try_from(v).map(Int).map_err(|_| E::custom(format!("integer {v} out of range")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Int, E> {
        // Some builds send whole numbers as floats (`2.0`); anything else is not an integer.
        if v.fract() == 0.0 && v.is_finite() && v.abs() < 9.007_199_254_740_992e15 {
            Ok(Int(v as i64))
        } else {
            Err(E::custom(format!("{v} is not an integer")))
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Int, E> {
        let t = v.trim();
        if let Ok(n) = t.parse::<i64>() {
            return Ok(Int(n));
        }
        match t.parse::<f64>() {
            Ok(f) => self.visit_f64(f),
            Err(_) => Err(E::custom(format!("{v:?} is not an integer"))),
        }
    }
}

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IntVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_numbers_and_strings() {
        let v: Vec<Int> = serde_json::from_str(r#"[2, "2890", " 7 ", -3, "-4", 5.0, "1790858834807"]"#).unwrap();
        assert_eq!(v, vec![Int(2), Int(2890), Int(7), Int(-3), Int(-4), Int(5), Int(1_790_858_834_807)]);
    }

    #[test]
    fn rejects_non_integers() {
        assert!(serde_json::from_str::<Int>(r#""abc""#).is_err());
        assert!(serde_json::from_str::<Int>("2.5").is_err());
        assert!(serde_json::from_str::<Int>("true").is_err());
        assert!(serde_json::from_str::<Int>("18446744073709551615").is_err());
    }

    #[test]
    fn serializes_as_number() {
        assert_eq!(serde_json::to_string(&Int(42)).unwrap(), "42");
    }
}
