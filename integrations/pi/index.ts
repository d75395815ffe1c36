/**
 * toolstream's pi extension: provider `cursor`, backed by `toolstream pi-provider`, and the
 * display-only replay tools for the tool calls Cursor made.
 *
 *   pi -e integrations/pi --provider cursor --model auto
 *
 * Sources of Cursor events: `cursor-agent` (spawned by toolstream; extra arguments in
 * $TOOLSTREAM_CURSOR_AGENT_ARGS, e.g. `--force`), or a recording in either format when
 * $TOOLSTREAM_CURSOR_REPLAY names one ($TOOLSTREAM_REPLAY_REALTIME=1 replays it at its recorded
 * pace). The toolstream binary: $TOOLSTREAM_BIN, `toolstream` on PATH, or this repository's
 * target/release, then target/debug build. $TOOLSTREAM_PI_SINKS (comma- or space-separated sink
 * specs, e.g. `otlp=http://127.0.0.1:4318`) exports each Cursor run there too (see provider.ts).
 *
 * Models: `auto` plus any ids listed in $TOOLSTREAM_CURSOR_MODELS (comma-separated); pi also
 * accepts any other `--model <id>` for this provider as a custom id. The id is passed to
 * `cursor-agent --model`. Each model's context window and most output tokens come from the
 * engine's table of known Cursor models (`schemas/models.json`, see models.ts).
 */

import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { modelLimits } from "./models.js";
import { API, PROVIDER, setCwd, stopActiveRun, streamCursor } from "./provider.js";
import { REPLAY_TOOL_NAMES, registerReplayTools } from "./replay-tools.js";

function modelIds(): string[] {
	const extra = (process.env.TOOLSTREAM_CURSOR_MODELS ?? "")
		.split(",")
		.map((s) => s.trim())
		.filter(Boolean);
	return [...new Set(["auto", ...extra])];
}

export default function (pi: ExtensionAPI) {
	pi.registerProvider(PROVIDER, {
		name: "Cursor (toolstream)",
		// Not used for requests: cursor-agent talks to Cursor itself (its login or CURSOR_API_KEY).
		baseUrl: "https://cursor.com",
		apiKey: "CURSOR_API_KEY",
		api: API,
		models: modelIds().map((id) => ({
			id,
			name: id === "auto" ? "Cursor (auto)" : `Cursor ${id}`,
			reasoning: false,
			input: ["text"],
			cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
			// The limits the engine checks usage against (schemas/models.json).
			...modelLimits(id),
		})),
		streamSimple: streamCursor,
	});

	registerReplayTools(pi);

	pi.on("session_start", (_event, ctx) => {
		setCwd(ctx.cwd);
	});

	pi.on("before_agent_start", (_event, ctx) => {
		setCwd(ctx.cwd);
		// Replayed calls need their tools active (pi answers a call to an inactive tool with
		// "not found"); pi activates extension tools at startup, this keeps them so for Cursor.
		if (ctx.model?.provider === PROVIDER) {
			const active = new Set(pi.getActiveTools());
			const all = new Set(pi.getAllTools().map((t) => t.name));
			const missing = REPLAY_TOOL_NAMES.filter((n) => all.has(n) && !active.has(n));
			if (missing.length > 0) pi.setActiveTools([...active, ...missing]);
		}
	});

	// A run ends with pi's agent loop: whatever toolstream child is left is stopped.
	pi.on("agent_end", () => stopActiveRun());
	pi.on("session_shutdown", () => stopActiveRun());
}
