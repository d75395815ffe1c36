//! `tsc --noEmit` output (not a terminal: no colours, `file(line,col): error TSnnnn: …`), some
//! errors with indented elaboration lines, and tsc's closing count and per-file table.

/// `errors` type errors over `files` files. The "names" are the errors' `file(line,col)`.
pub fn tsc_log(errors: usize, files: usize) -> (String, Vec<String>) {
    let files = files.clamp(1, errors.max(1));
    let mut log = String::new();
    let mut names = Vec::new();
    let mut per_file = vec![(0usize, 0usize); files];
    for e in 0..errors {
        let f = e % files;
        let path = format!("src/{}/module_{f:02}.ts", ["cart", "api", "ui"][f % 3]);
        let line = 10 + e * 3;
        let at = format!("{path}({line},{})", 5 + e % 7);
        match e % 3 {
            0 => log.push_str(&format!("{at}: error TS2322: Type 'string' is not assignable to type 'number'.\n")),
            1 => log.push_str(&format!(
                "{at}: error TS2345: Argument of type '{{ id: string; }}' is not assignable to parameter of type 'Item'.\n  Property 'price' is missing in type '{{ id: string; }}' but required in type 'Item'.\n"
            )),
            _ => log.push_str(&format!("{at}: error TS2339: Property 'totl' does not exist on type 'Cart'.\n")),
        }
        names.push(at);
        if per_file[f].0 == 0 {
            per_file[f].1 = line;
        }
        per_file[f].0 += 1;
    }
    log.push_str(&format!("\nFound {errors} errors in {files} files.\n\nErrors  Files\n"));
    for (f, (n, first)) in per_file.iter().enumerate() {
        log.push_str(&format!("{n:>6}  src/{}/module_{f:02}.ts:{first}\n", ["cart", "api", "ui"][f % 3]));
    }
    (log, names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_is_listed_and_counted() {
        let (log, names) = tsc_log(23, 7);
        assert_eq!(names.len(), 23);
        assert_eq!(log.matches(": error TS").count(), 23);
        assert!(log.contains("Found 23 errors in 7 files."));
    }
}
