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
 * Models: `toolstream models --json` — cursor-agent's own listing (cached for a day), else the
 * ids in $TOOLSTREAM_CURSOR_MODELS (comma-separated); `auto` always; each with the context window
 * and most output tokens of the engine's model table (`schemas/models.json`, see models.ts). pi
 * also accepts any other `--model <id>` for this provider as a custom id. The id is passed to
 * `cursor-agent --model`.
 *
 * Conversations continue: a later prompt resumes the Cursor chat (`cursor-agent --resume`) when
 * pi's conversation is that chat, and carries the earlier conversation otherwise (chat.ts).
 * Commands: `/cursor-mode agent|plan|ask` (Cursor's mode for the following prompts, kept in the
 * session), `/cursor-status`.
 */

import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { CONTRACT, extensionDir } from "./contract.js";
import { cursorModels } from "./models.js";
import {
	API,
	CURSOR_MODES,
	type CursorMode,
	getMode,
	PROVIDER,
	resetSession,
	setCwd,
	setMode,
	setReporter,
	setSession,
	setToolDisplay,
	statusLine,
	stopActiveRun,
	streamCursor,
} from "./provider.js";
import { ownedToolDisplay, registerNativeWrappers, registerReplayTools } from "./replay-tools.js";

/** The session entry that keeps the chosen Cursor mode (`/cursor-mode`). */
const MODE_ENTRY = CONTRACT.modeEntry;

function isMode(value: unknown): value is CursorMode {
	return typeof value === "string" && CURSOR_MODES.includes(value);
}

/** `a, b or c`. */
function orList(items: readonly string[]): string {
	return items.length < 2 ? items.join("") : `${items.slice(0, -1).join(", ")} or ${items[items.length - 1]}`;
}

/** The modes, the default one marked: `agent (default), plan or ask`. */
const MODES_TEXT = orList(CURSOR_MODES.map((m) => (m === CONTRACT.defaultCursorMode ? `${m} (default)` : m)));

export default function (pi: ExtensionAPI) {
	pi.registerProvider(PROVIDER, {
		name: "Cursor (toolstream)",
		// Not used for requests: cursor-agent talks to Cursor itself (its login or CURSOR_API_KEY).
		baseUrl: "https://cursor.com",
		apiKey: "CURSOR_API_KEY",
		api: API,
		models: cursorModels().map((m) => ({
			id: m.id,
			name: m.id === CONTRACT.autoModelId ? m.name : `Cursor ${m.name}`,
			reasoning: false,
			input: ["text"],
			cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
			// The limits the engine checks usage against (schemas/models.json).
			contextWindow: m.contextWindow,
			maxTokens: m.maxTokens,
		})),
		streamSimple: streamCursor,
	});

	registerReplayTools(pi);

	pi.registerCommand("cursor-mode", {
		description: `Cursor's mode for the following prompts: ${MODES_TEXT}`,
		getArgumentCompletions: (prefix) =>
			CURSOR_MODES.filter((m) => m.startsWith(prefix.trim())).map((m) => ({ value: m, label: m })),
		handler: async (args, ctx) => {
			const mode = args.trim();
			if (!mode) {
				ctx.ui.notify(`Cursor mode: ${getMode()}`, "info");
				return;
			}
			if (!isMode(mode)) {
				ctx.ui.notify(`Unknown Cursor mode "${mode}": use ${orList(CURSOR_MODES)}`, "error");
				return;
			}
			setMode(mode);
			pi.appendEntry(MODE_ENTRY, { mode });
			ctx.ui.notify(`Cursor mode: ${mode}`, "info");
		},
	});

	pi.registerCommand("cursor-status", {
		description: "What the Cursor provider holds: mode, run, recorded results",
		handler: async (_args, ctx) => {
			ctx.ui.notify(statusLine(), "info");
		},
	});

	const track = (ctx: ExtensionContext) => {
		setCwd(ctx.cwd);
		setSession(ctx.sessionManager);
		if (ctx.hasUI) setReporter((message) => ctx.ui.notify(message, "warning"));
	};

	pi.on("session_start", (_event, ctx) => {
		// A new, resumed or forked session: nothing of the previous one carries over; the mode
		// is the one this session last chose.
		resetSession();
		track(ctx);
		registerNativeWrappers(pi, extensionDir());
		let mode: CursorMode = CONTRACT.defaultCursorMode;
		for (const e of ctx.sessionManager.getBranch()) {
			if (e.type === "custom" && e.customType === MODE_ENTRY && isMode((e.data as { mode?: unknown })?.mode)) {
				mode = (e.data as { mode: CursorMode }).mode;
			}
		}
		setMode(mode);
	});

	pi.on("session_tree", (_event, ctx) => track(ctx));

	pi.on("before_agent_start", (_event, ctx) => {
		track(ctx);
		// Replayed calls need their tools active (pi answers a call to an inactive tool with
		// "not found"); pi activates extension tools at startup, this keeps them so for Cursor.
		if (ctx.model?.provider === PROVIDER) {
			const display = ownedToolDisplay(pi.getAllTools(), extensionDir());
			setToolDisplay(display);
			const active = new Set(pi.getActiveTools());
			const missing = display.tools.filter((n) => !active.has(n));
			if (missing.length > 0) pi.setActiveTools([...active, ...missing]);
		}
	});

	// A run ends with pi's agent loop: whatever toolstream child is left is stopped.
	pi.on("agent_end", () => stopActiveRun());
	pi.on("session_shutdown", () => resetSession());
}
