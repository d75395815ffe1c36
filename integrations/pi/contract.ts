/**
 * The facts this extension shares with the engine — provider and api names, the replay tools and
 * their id prefix, the collapsed preview's line count, the cancelled message, Cursor's modes, the
 * mode's session entry, the `auto` model and the models variable — read at load from the one file
 * both sides use, `schemas/pi-contract.json` (the engine builds its constants from it, see
 * `schemas/build.rs`), and what an unknown model counts as from the model table's `default`
 * (`schemas/models.json`). None of them is declared in TypeScript.
 */

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** This extension's directory (integrations/pi). */
export function extensionDir(): string {
	try {
		return path.dirname(fileURLToPath(import.meta.url));
	} catch {
		return typeof __dirname === "string" ? __dirname : process.cwd();
	}
}

/** `schemas/pi-contract.json`. */
export interface PiContract {
	provider: string;
	api: string;
	neutralReplayTool: string;
	nativeReplayTools: string[];
	replayIdPrefix: string;
	previewLines: number;
	cancelledMessage: string;
	cursorModes: string[];
	defaultCursorMode: string;
	modeEntry: string;
	autoModelId: string;
	autoModelName: string;
	modelsEnv: string;
	mcpToolPrefix: string;
	bridgePathPrefix: string;
}

/** What a model counts as when toolstream cannot be asked (the model table's default, SPEC §6c). */
export interface ModelLimits {
	contextWindow: number;
	maxTokens: number;
}

/** A file of the repository's `schemas/` (next to integrations/), parsed. */
function readSchema(file: string): Record<string, unknown> {
	const p = path.join(extensionDir(), "..", "..", "schemas", file);
	return JSON.parse(fs.readFileSync(p, "utf8")) as Record<string, unknown>;
}

/** `value` when it has the type of `example`'s field, else an error naming the field. */
function checked<T>(file: string, object: Record<string, unknown>, example: T): T {
	for (const [key, want] of Object.entries(example as Record<string, unknown>)) {
		const got = object[key];
		const ok = Array.isArray(want)
			? Array.isArray(got) && got.every((v) => typeof v === "string")
			: typeof got === typeof want;
		if (!ok) throw new Error(`toolstream: schemas/${file} has no valid \`${key}\``);
	}
	return object as T;
}

/** The shape each field must have (values are not used). */
const SHAPE: PiContract = {
	provider: "",
	api: "",
	neutralReplayTool: "",
	nativeReplayTools: [],
	replayIdPrefix: "",
	previewLines: 0,
	cancelledMessage: "",
	cursorModes: [],
	defaultCursorMode: "",
	modeEntry: "",
	autoModelId: "",
	autoModelName: "",
	modelsEnv: "",
	mcpToolPrefix: "",
	bridgePathPrefix: "",
};

export const CONTRACT: PiContract = checked("pi-contract.json", readSchema("pi-contract.json"), SHAPE);

const unknown = checked("models.json", (readSchema("models.json").default ?? {}) as Record<string, unknown>, {
	contextWindow: 0,
	maxTokens: 0,
});
export const UNKNOWN_MODEL_LIMITS: ModelLimits = { contextWindow: unknown.contextWindow, maxTokens: unknown.maxTokens };
