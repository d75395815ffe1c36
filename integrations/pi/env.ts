/**
 * Boolean environment values, read exactly as the engine reads its settings (`parse_bool` in
 * engine/src/config.rs): surrounding whitespace ignored (Rust's `char::is_whitespace` set), ASCII
 * case ignored, `1 true yes on` are true, `0 false no off` are false, anything else is no
 * answer (`undefined`). A test runs both on one table of values.
 */

/** Rust's `char::is_whitespace` (Unicode White_Space), which differs from `String.trim`'s set. */
const WHITESPACE = "\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const TRIM = new RegExp(`^[${WHITESPACE}]+|[${WHITESPACE}]+$`, "g");

export function parseBool(value: string | undefined): boolean | undefined {
	if (value === undefined) return undefined;
	const word = value.replace(TRIM, "").replace(/[A-Z]/g, (c) => c.toLowerCase());
	if (["1", "true", "yes", "on"].includes(word)) return true;
	if (["0", "false", "no", "off"].includes(word)) return false;
	return undefined;
}

/** An on/off switch from the environment: `fallback` when unset or not a boolean. */
export function envFlag(value: string | undefined, fallback: boolean): boolean {
	return parseBool(value) ?? fallback;
}
