/**
 * The Cursor models the provider offers, as toolstream lists them (`toolstream models --json`):
 * cursor-agent's own listing (cached for a day by toolstream), else the ids in
 * $TOOLSTREAM_CURSOR_MODELS; `auto` always. Each comes with the context window and most output
 * tokens of the engine's model table (`schemas/models.json`, overridable with toolstream's
 * `models_file` setting), the same limits the engine checks usage against: one table, read in one
 * place.
 */

import { execFileSync } from "node:child_process";
import { CONTRACT, UNKNOWN_MODEL_LIMITS } from "./contract.js";
import { findToolstream } from "./provider.js";

export interface CursorModel {
	id: string;
	name: string;
	contextWindow: number;
	maxTokens: number;
}

/** How long listing may take (toolstream asks cursor-agent at most once a day). */
const LIST_TIMEOUT_MS = 15_000;

function isModel(m: unknown): m is CursorModel {
	const v = m as CursorModel;
	return typeof v?.id === "string" && typeof v.name === "string" && Number.isFinite(v.contextWindow) && Number.isFinite(v.maxTokens);
}

/**
 * The models to register. When toolstream is missing or fails, `auto` and the environment's ids
 * with the default limits (the provider then reports the missing binary on the first prompt).
 */
export function cursorModels(): CursorModel[] {
	const bin = findToolstream();
	if (bin) {
		try {
			const out = execFileSync(bin, ["models", "--json"], {
				encoding: "utf8",
				timeout: LIST_TIMEOUT_MS,
				stdio: ["ignore", "pipe", "ignore"],
			});
			const models = JSON.parse(out) as unknown;
			if (Array.isArray(models) && models.length > 0 && models.every(isModel)) return models;
		} catch {
			// Fall through to the environment.
		}
	}
	const auto = CONTRACT.autoModelId;
	const ids = (process.env[CONTRACT.modelsEnv] ?? "")
		.split(",")
		.map((s) => s.trim())
		.filter((s) => s && s !== auto);
	return [auto, ...new Set(ids)].map((id) => ({
		id,
		name: id === auto ? CONTRACT.autoModelName : id,
		...UNKNOWN_MODEL_LIMITS,
	}));
}
