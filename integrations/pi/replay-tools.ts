/**
 * Display-only replay tools. A Cursor run arrives in pi as assistant messages whose tool calls
 * have ids `cursor-replay-*`; pi "executes" each such call, and these tools answer with the
 * result Cursor recorded (sent by toolstream in the `tool_results` line, see provider.ts).
 * Nothing runs and no file is touched for a replay id.
 *
 * - `cursor`: neutral Cursor activity cards (MCP, todos, plans, deletes, …); calls with any other
 *   id are refused (it is not a real tool).
 * - `read`, `bash`, `grep`, `find`, `ls`, `edit`, `write`: wrappers of pi's built-in tools. For
 *   any other id they call pi's own built-in tool, created exactly as pi creates it (same cwd,
 *   same settings), so they behave as the built-in does; renderers, schema and prompt text are
 *   the built-in's. pi offers no other way to answer a call by its id: a `tool_call` handler can
 *   only block (the call then fails with the block reason) and `tool_result` handlers run after
 *   the tool has executed.
 *
 * A `tool_result` handler restores the recorded error flag (a tool that returns a value is
 * always a success in pi) and keeps the recorded content and details whatever ran before it.
 */

import fs from "node:fs";
import path from "node:path";
import type { ImageContent, TextContent } from "@mariozechner/pi-ai";
import {
	createBashToolDefinition,
	getLanguageFromPath,
	highlightCode,
	renderDiff,
	createEditToolDefinition,
	createFindToolDefinition,
	createGrepToolDefinition,
	createLsToolDefinition,
	createReadToolDefinition,
	createWriteToolDefinition,
	type ExtensionAPI,
	getAgentDir,
	SettingsManager,
	type ToolDefinition,
} from "@mariozechner/pi-coding-agent";
import { Text } from "@mariozechner/pi-tui";
import { Type } from "typebox";
import { CONTRACT } from "./contract.js";
import { envFlag } from "./env.js";
import { isReplayId, recordedResults } from "./provider.js";

/** The neutral replay tool (the engine's cards of every other Cursor activity). */
const NEUTRAL_TOOL = CONTRACT.neutralReplayTool;
/** The pi built-ins the engine's cards replay as (the pi contract's). */
export const NATIVE_REPLAY_TOOLS: readonly string[] = CONTRACT.nativeReplayTools;
export const REPLAY_TOOL_NAMES: string[] = [NEUTRAL_TOOL, ...NATIVE_REPLAY_TOOLS];

/** How pi builds each of its built-in tools for a session in `cwd`, with that session's settings. */
// biome-ignore lint/suspicious/noExplicitAny: the built-in definitions differ in their types.
const BUILTINS: Record<string, (cwd: string, settings: SettingsManager) => ToolDefinition<any, any>> = {
	read: (cwd, settings) => createReadToolDefinition(cwd, { autoResizeImages: settings.getImageAutoResize() }),
	bash: (cwd, settings) =>
		createBashToolDefinition(cwd, {
			commandPrefix: settings.getShellCommandPrefix(),
			shellPath: settings.getShellPath(),
		}),
	grep: (cwd) => createGrepToolDefinition(cwd),
	find: (cwd) => createFindToolDefinition(cwd),
	ls: (cwd) => createLsToolDefinition(cwd),
	edit: (cwd) => createEditToolDefinition(cwd),
	write: (cwd) => createWriteToolDefinition(cwd),
};

/** pi's built-in tool `name`, as pi itself builds it for a session in `cwd`; none when pi has no such built-in. */
// biome-ignore lint/suspicious/noExplicitAny: the built-in definitions differ in their types.
function builtinTool(name: string, cwd: string): ToolDefinition<any, any> | undefined {
	const build = Object.hasOwn(BUILTINS, name) ? BUILTINS[name] : undefined;
	return build?.(cwd, SettingsManager.create(cwd, getAgentDir()));
}

/** The recorded result of a replay call; never runs anything. */
function recorded(toolCallId: string) {
	const r = recordedResults.get(toolCallId);
	if (!r) {
		// Fail closed: an unknown replay id is never executed.
		throw new Error("No recorded Cursor result for this replayed call; nothing was run.");
	}
	return { content: r.content, details: r.details };
}

/** Lines of a collapsed replay card (SPEC §8 collapsed preview, the engine's too). */
const PREVIEW_LINES = CONTRACT.previewLines;

/** What toolstream records in a replay result's `details` (`CardDetails` in schemas/src/event.rs). */
interface ReplayDetails {
	sourceToolName?: string;
	/** The result text's short header (`edit src/a.ts`, `web search …`), shown by the call line. */
	header?: string;
	/** A recorded diff in pi's own numbered form (`+N text`, `-N text`, ` N text`). */
	diff?: string;
	/** A write's recorded content. */
	content?: string;
	/** The file a preview belongs to (relative to the cwd): its language for highlighting. */
	path?: string;
	/** Where Cursor saved a generated image (relative to the cwd when inside it). */
	imagePath?: string;
}

/** Image types pi can draw, by file extension. */
const IMAGE_TYPES: Record<string, string> = {
	".png": "image/png",
	".jpg": "image/jpeg",
	".jpeg": "image/jpeg",
	".gif": "image/gif",
	".webp": "image/webp",
};
/** Larger files are not inlined (the path is still shown). */
const MAX_INLINE_IMAGE_BYTES = 10 * 1024 * 1024;

/** The saved image as an image block, if it is still there, readable and not too large. */
function savedImage(imagePath: string | undefined, cwd: string): ImageContent | undefined {
	if (!imagePath) return undefined;
	const file = path.resolve(cwd, imagePath);
	const mimeType = IMAGE_TYPES[path.extname(file).toLowerCase()];
	if (!mimeType) return undefined;
	try {
		if (fs.statSync(file).size > MAX_INLINE_IMAGE_BYTES) return undefined;
		return { type: "image", data: fs.readFileSync(file).toString("base64"), mimeType };
	} catch {
		return undefined;
	}
}

/** The result's text without the header the call line already shows. */
function bodyText(content: { type: string }[], header: string | undefined): string {
	const text = content
		.filter((c): c is TextContent => c.type === "text")
		.map((c) => c.text)
		.join("\n");
	const body = header && text.startsWith(header) ? text.slice(header.length).replace(/^\n+/, "") : text;
	return body.trimEnd();
}

/**
 * The lines a replayed Cursor activity shows: a recorded diff as pi colours its own edits
 * (numbered added/removed/context lines, no unified headers), a write's content highlighted when
 * pi knows the file's language, anything else as tool output.
 */
function replayLines(details: ReplayDetails, body: string, theme: { fg: (c: never, t: string) => string }): string[] {
	const fg = (t: string) => theme.fg("toolOutput" as never, t);
	if (details.diff) return renderDiff(details.diff).split("\n");
	if (typeof details.content === "string" && details.content) {
		const lang = details.path ? getLanguageFromPath(details.path) : undefined;
		const content = details.content.replace(/\n$/, "").replace(/\t/g, "   ");
		return lang ? highlightCode(content, lang) : content.split("\n").map(fg);
	}
	return body ? body.split("\n").map(fg) : [];
}

/**
 * Seed 000's opt-outs (booleans read as the engine reads them, see env.ts):
 * `PI_CURSOR_NATIVE_TOOL_DISPLAY=0` registers no replay tool at all (every Cursor call reaches pi
 * as a thinking trace); `PI_CURSOR_REGISTER_NATIVE_TOOLS=0` registers the neutral `cursor` tool
 * only (native calls show as neutral cards).
 */
export function replayToolsWanted(env = process.env): { any: boolean; natives: boolean } {
	const any = envFlag(env.PI_CURSOR_NATIVE_TOOL_DISPLAY, true);
	return { any, natives: any && envFlag(env.PI_CURSOR_REGISTER_NATIVE_TOOLS, true) };
}

/**
 * What the engine may send as replay tool calls: the replay tools this extension registered and
 * still owns. pi keeps the first registration of a name, so a wrapper whose name another
 * extension registered first is not ours: its calls fall back to thinking traces instead of
 * reaching someone else's tool.
 */
export function ownedToolDisplay(
	tools: { name: string; sourceInfo?: { path?: string } }[],
	ourDir: string,
	wanted = replayToolsWanted(),
): { tools: string[]; nativeAsNeutral: boolean } {
	const ours = (t: { sourceInfo?: { path?: string } }) => (t.sourceInfo?.path ?? "").startsWith(ourDir);
	const names = wanted.any ? REPLAY_TOOL_NAMES.filter((n) => n === NEUTRAL_TOOL || wanted.natives) : [];
	const owned = names.filter((n) => tools.some((t) => t.name === n && ours(t)));
	return { tools: owned, nativeAsNeutral: wanted.any && !wanted.natives };
}

/**
 * Whether another extension already registered `name` (a pi built-in is fine: an extension tool
 * replaces it). pi refuses to load two extensions that register the same tool at load time, so
 * the native wrappers are registered once pi is running, and only under names still free.
 */
function ownedElsewhere(tools: { name: string; sourceInfo?: { path?: string; source?: string } }[], name: string, ourDir: string): boolean {
	return tools.some(
		(t) => t.name === name && t.sourceInfo?.source !== "builtin" && !(t.sourceInfo?.path ?? "").startsWith(ourDir),
	);
}

/** Register the native wrappers whose names are free (call once pi runs, e.g. at `session_start`). */
export function registerNativeWrappers(pi: ExtensionAPI, ourDir: string): void {
	if (!replayToolsWanted().natives) return;
	const tools = pi.getAllTools();
	for (const name of NATIVE_REPLAY_TOOLS) {
		if (ownedElsewhere(tools, name, ourDir)) continue;
		const base = builtinTool(name, process.cwd());
		// A tool this pi does not have is not wrapped: its cards reach pi as thinking traces.
		if (!base) continue;
		pi.registerTool({
			...base,
			async execute(toolCallId, params, signal, onUpdate, ctx) {
				if (isReplayId(toolCallId)) return recorded(toolCallId);
				const own = builtinTool(name, ctx.cwd) ?? base;
				return own.execute(toolCallId, params, signal, onUpdate, ctx);
			},
		});
	}
}

/** Register the neutral `cursor` tool and the result handling (at load; see also registerNativeWrappers). */
export function registerReplayTools(pi: ExtensionAPI): void {
	if (!replayToolsWanted().any) return;

	pi.registerTool({
		name: NEUTRAL_TOOL,
		label: "Cursor",
		description:
			"Display-only record of an activity the Cursor agent performed (MCP call, todos, plan, delete, …), replayed from its recorded result. It cannot be called.",
		parameters: Type.Object(
			{
				activityTitle: Type.Optional(Type.String({ description: "What Cursor did, e.g. `Cursor MCP`" })),
				activitySummary: Type.Optional(Type.String({ description: "One-line summary" })),
			},
			{ additionalProperties: true },
		),
		async execute(toolCallId) {
			if (isReplayId(toolCallId)) return recorded(toolCallId);
			throw new Error("`cursor` only replays recorded Cursor activity; it cannot be called.");
		},
		renderCall(args, theme, context) {
			const text = (context.lastComponent as Text | undefined) ?? new Text("", 0, 0);
			const title = typeof args?.activityTitle === "string" && args.activityTitle ? args.activityTitle : "Cursor";
			const summary = typeof args?.activitySummary === "string" ? args.activitySummary : "";
			text.setText(theme.fg("toolTitle", theme.bold(title)) + (summary ? ` ${theme.fg("accent", summary)}` : ""));
			return text;
		},
		renderResult(result, options, theme, context) {
			const text = (context.lastComponent as Text | undefined) ?? new Text("", 0, 0);
			const details = (result.details ?? {}) as ReplayDetails;
			const web = details.sourceToolName === "webSearch" || details.sourceToolName === "webFetch";
			// Web search/fetch cards stay a title line while collapsed: they often arrive after the
			// final text and would bury the answer (an error still shows why).
			if (web && !options.expanded && !context.isError) {
				text.setText("");
				return text;
			}
			const lines = replayLines(details, bodyText(result.content, details.header), theme);
			const shown = options.expanded ? lines : lines.slice(0, PREVIEW_LINES);
			let out = shown.join("\n");
			if (shown.length < lines.length) {
				out += `\n${theme.fg("muted", `… ${lines.length - shown.length} more lines (ctrl+o to expand)`)}`;
			}
			text.setText(out);
			return text;
		},
	});

	// Keep the recorded result (content, details and error flag) for every replay call; the
	// call has run, so its recorded result is not needed any more. A generated image is shown
	// inline (pi draws image blocks when its image display is on) while its file can be read.
	pi.on("tool_result", (event, ctx) => {
		if (!isReplayId(event.toolCallId)) return undefined;
		const r = recordedResults.get(event.toolCallId);
		if (!r) return undefined;
		recordedResults.delete(event.toolCallId);
		const image = savedImage((r.details as ReplayDetails | undefined)?.imagePath, ctx.cwd);
		return { content: image ? [...r.content, image] : r.content, details: r.details, isError: r.isError };
	});
}
