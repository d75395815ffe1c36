//! `gh … --json` output (one object per line, as `--jq '.[]'` prints, or one array): each issue or
//! pull request becomes `#N title {labels} YYYY-MM-DD`, `(N comments)` when it has any. Lines that
//! are not such objects stay as they are.

use std::borrow::Cow;

use serde_json::Value;

/// `output` with every gh item rendered on one line; borrowed unchanged when it holds none.
pub fn gh_items(output: &str) -> Cow<'_, str> {
    if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(output.trim()) {
        let lines: Option<Vec<String>> = items.iter().map(item).collect();
        if let Some(lines) = lines.filter(|l| !l.is_empty()) {
            return Cow::Owned(lines.join("\n"));
        }
    }
    let mut changed = false;
    let lines: Vec<Cow<'_, str>> = output
        .lines()
        .map(|line| match serde_json::from_str::<Value>(line).ok().as_ref().and_then(item) {
            Some(rendered) => {
                changed = true;
                Cow::Owned(rendered)
            }
            None => Cow::Borrowed(line),
        })
        .collect();
    if changed {
        Cow::Owned(lines.join("\n"))
    } else {
        Cow::Borrowed(output)
    }
}

fn item(v: &Value) -> Option<String> {
    let number = v.get("number")?.as_u64()?;
    let title = v.get("title")?.as_str()?;
    let mut out = format!("#{number} {title}");
    if let Some(state) = v.get("state").and_then(Value::as_str) {
        out.push_str(&format!(" [{}]", state.to_ascii_lowercase()));
    }
    let comments = match v.get("comments") {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::Array(a)) => Some(a.len() as u64),
        _ => None,
    };
    if let Some(n) = comments.filter(|n| *n > 0) {
        out.push_str(&format!(" ({n} comment{})", if n == 1 { "" } else { "s" }));
    }
    if let Some(labels) = v.get("labels").and_then(Value::as_array).filter(|l| !l.is_empty()) {
        let names: Vec<&str> =
            labels.iter().filter_map(|l| l.as_str().or_else(|| l.get("name").and_then(Value::as_str))).collect();
        out.push_str(&format!(" {{{}}}", names.join(", ")));
    }
    if let Some(date) = v.get("updatedAt").or_else(|| v.get("createdAt")).and_then(Value::as_str) {
        out.push(' ');
        out.push_str(date.get(..10).unwrap_or(date));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_become_one_line_each() {
        let out = gh_items(
            "{\"number\":7,\"title\":\"Fix it\",\"comments\":2,\"labels\":[{\"name\":\"bug\"}],\"updatedAt\":\"2026-01-02T03:04:05Z\"}\nnot json\n",
        );
        assert_eq!(out, "#7 Fix it (2 comments) {bug} 2026-01-02\nnot json");
        assert_eq!(gh_items("[{\"number\":1,\"title\":\"T\"}]"), "#1 T");
    }

    #[test]
    fn other_output_is_borrowed() {
        assert!(matches!(gh_items("Showing 2 of 2 issues\n"), Cow::Borrowed(_)));
    }
}
