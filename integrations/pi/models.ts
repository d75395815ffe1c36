/**
 * Known Cursor models and their limits, read from the table the engine uses for its usage sanity
 * check (`schemas/models.json`, SPEC §6c), so that pi and toolstream agree on each model's context
 * window and most output tokens. Ids are compared as the engine compares them
 * (`schemas/src/models.rs` `normalize_model_id`): case, a `cursor/` prefix, a `:fast`/`:slow`
 * suffix, and `.`, `_` or spaces versus `-` do not matter; an `@<context>` qualifier the table
 * does not list falls back to the model's own entry; unknown models get the table's default.
 */

import fs from "node:fs";
import path from "node:path";
import { extensionDir } from "./provider.js";

export interface ModelLimits {
	contextWindow: number;
	maxTokens: number;
}

interface ModelTable {
	default: ModelLimits;
	models: Record<string, ModelLimits>;
}

/** What an unknown model counts as when the table cannot be read (SPEC §6c). */
const UNKNOWN: ModelLimits = { contextWindow: 200_000, maxTokens: 64_000 };

export function normalizeModelId(id: string): string {
	let s = id.trim().toLowerCase();
	if (s.startsWith("cursor/")) s = s.slice("cursor/".length);
	s = s.replace(/:(fast|slow)$/, "");
	return s
		.split(/\s+/)
		.filter(Boolean)
		.join("-")
		.replace(/[._]/g, "-");
}

function loadTable(): ModelTable {
	try {
		const file = path.resolve(extensionDir(), "..", "..", "schemas", "models.json");
		const raw = JSON.parse(fs.readFileSync(file, "utf8")) as Partial<ModelTable>;
		const models: Record<string, ModelLimits> = {};
		for (const [id, limits] of Object.entries(raw.models ?? {})) models[normalizeModelId(id)] = limits;
		return { default: raw.default ?? UNKNOWN, models };
	} catch {
		return { default: UNKNOWN, models: {} };
	}
}

const table = loadTable();

/** The limits of a Cursor model id. */
export function modelLimits(id: string | undefined): ModelLimits {
	const key = id ? normalizeModelId(id) : "";
	if (!key) return table.default;
	const base = key.split("@")[0] ?? key;
	return table.models[key] ?? table.models[base] ?? table.default;
}
