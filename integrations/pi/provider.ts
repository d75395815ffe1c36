/**
 * The `cursor` provider's stream: one `toolstream pi-provider` child per Cursor run (see the
 * docs/pi-provider-protocol.md), its output lines turned into pi-ai
 * AssistantMessageEvents, one assistant message per provider call.
 *
 * pi calls the provider once per assistant message. The first call of a run (the context ends
 * with the user's prompt) starts the child and sends the `request`; the child streams the first
 * message and pauses after its `tool_results`. pi then runs the replay tools (which answer with
 * the recorded results, see replay-tools.ts) and calls again with those results at the end of
 * the context: that call is a continuation of the same run — the results go to the child as
 * `tool_result` lines and the next message streams. A call whose context does not continue the
 * active run starts a new run (the old child is stopped).
 *
 * The stream never throws: every failure (no binary, the child dying, a bad line) ends the
 * message as an `error` event; an abort ends it as `error{reason:"aborted"}` at once and kills
 * the child's whole process group (toolstream and the cursor-agent it started).
 */

import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { chatToResume, type SessionView } from "./chat.js";
import { CONTRACT, extensionDir } from "./contract.js";
import { envFlag } from "./env.js";
import {
	type Api,
	type AssistantMessage,
	type AssistantMessageEventStream,
	type Context,
	createAssistantMessageEventStream,
	type Model,
	type SimpleStreamOptions,
	type ToolCall,
	type ToolResultMessage,
} from "@mariozechner/pi-ai";
import { requestContext } from "./pi-compat.js";

export const PROVIDER = CONTRACT.provider;
/** The `api` of every message toolstream produces (its pi sinks write the same). */
export const API = CONTRACT.api;
export const REPLAY_PREFIX = CONTRACT.replayIdPrefix;
/** The error message of an aborted run's message (SPEC §5.4; the engine's `CANCELLED_MESSAGE`). */
export const CANCELLED_MESSAGE = CONTRACT.cancelledMessage;

/**
 * Recorded results of replay tool calls, by tool call id (filled from `tool_results` lines; an
 * entry is taken when pi has run its call, and whatever is left goes when the run ends or the
 * session changes).
 */
export const recordedResults = new Map<string, ToolResultMessage>();

/** Cursor's modes, passed as `cursor-agent --mode` (one of them is Cursor's default). */
export const CURSOR_MODES: readonly string[] = CONTRACT.cursorModes;
export type CursorMode = string;
let currentMode: CursorMode = CONTRACT.defaultCursorMode;
export function setMode(mode: CursorMode): void {
	currentMode = mode;
}
export function getMode(): CursorMode {
	return currentMode;
}

/** pi's session (kept up to date by the extension's event handlers): where chat ids are looked up. */
let currentSession: SessionView | undefined;
export function setSession(session: SessionView | undefined): void {
	currentSession = session;
}

/**
 * Which replay tools pi has for Cursor's calls (sent with each request): `undefined` means all of
 * them; the cards of any other tool reach pi as thinking traces (see replay-tools.ts).
 */
export interface ToolDisplay {
	tools: string[];
	nativeAsNeutral: boolean;
}
let toolDisplay: ToolDisplay | undefined;
export function setToolDisplay(display: ToolDisplay | undefined): void {
	toolDisplay = display;
}

/** How the extension reports something the user should know (pi's UI when there is one). */
let reporter: (message: string) => void = (message) => process.stderr.write(`[toolstream] ${message}\n`);
export function setReporter(report: (message: string) => void): void {
	reporter = report;
}

export function isReplayId(id: string): boolean {
	return id.startsWith(REPLAY_PREFIX);
}

/** pi's working directory, kept up to date by the extension's event handlers. */
let currentCwd = process.cwd();
export function setCwd(cwd: string | undefined): void {
	if (cwd) currentCwd = cwd;
}

export { extensionDir };

function isExecutable(p: string): boolean {
	try {
		fs.accessSync(p, fs.constants.X_OK);
		return fs.statSync(p).isFile();
	} catch {
		return false;
	}
}

/**
 * The toolstream binary: $TOOLSTREAM_BIN, else `toolstream` on PATH, else the repository's
 * target/release then target/debug build (relative to this file: integrations/pi/../../target).
 */
export function findToolstream(): string | undefined {
	const fromEnv = process.env.TOOLSTREAM_BIN;
	if (fromEnv) return fromEnv;
	const exe = process.platform === "win32" ? "toolstream.exe" : "toolstream";
	for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
		if (dir && isExecutable(path.join(dir, exe))) return path.join(dir, exe);
	}
	const repo = path.resolve(extensionDir(), "..", "..");
	for (const profile of ["release", "debug"]) {
		const p = path.join(repo, "target", profile, exe);
		if (isExecutable(p)) return p;
	}
	return undefined;
}

/** Where the Cursor events come from: a recording ($TOOLSTREAM_CURSOR_REPLAY) or cursor-agent. */
function sourceSpec(cwd: string): Record<string, unknown> {
	const replay = process.env.TOOLSTREAM_CURSOR_REPLAY;
	if (replay) {
		return {
			kind: "replay",
			path: path.resolve(cwd, replay),
			realtime: envFlag(process.env.TOOLSTREAM_REPLAY_REALTIME, false),
		};
	}
	const args = (process.env.TOOLSTREAM_CURSOR_AGENT_ARGS ?? "").split(/\s+/).filter(Boolean);
	return { kind: "cursor-agent", args };
}

/**
 * `--sink SPEC` for each sink named in $TOOLSTREAM_PI_SINKS (comma- or space-separated, e.g.
 * `otlp=http://127.0.0.1:4318`): toolstream delivers each Cursor run there too. A spec's own
 * options follow it (`otlp=URL,when_full=block`), so a `when_full=` item belongs to the one before.
 */
export function sinkArgs(value = process.env.TOOLSTREAM_PI_SINKS ?? ""): string[] {
	const specs: string[] = [];
	for (const item of value.split(/[\s,]+/).filter(Boolean)) {
		if (item.startsWith("when_full=") && specs.length > 0) specs[specs.length - 1] += `,${item}`;
		else specs.push(item);
	}
	return specs.flatMap((spec) => ["--sink", spec]);
}

/** Splits a byte stream on LF only (JSON strings may hold U+2028, which `readline` would split). */
class LineQueue {
	private buffered = "";
	private lines: string[] = [];
	private waiting: ((line: string | null) => void) | undefined;
	private ended = false;

	push(chunk: string): void {
		this.buffered += chunk;
		let nl = this.buffered.indexOf("\n");
		while (nl >= 0) {
			const line = this.buffered.slice(0, nl).replace(/\r$/, "");
			this.buffered = this.buffered.slice(nl + 1);
			if (line.trim()) this.deliver(line);
			nl = this.buffered.indexOf("\n");
		}
	}

	end(): void {
		if (this.buffered.trim()) this.deliver(this.buffered);
		this.buffered = "";
		this.ended = true;
		const w = this.waiting;
		this.waiting = undefined;
		w?.(null);
	}

	private deliver(line: string): void {
		const w = this.waiting;
		if (w) {
			this.waiting = undefined;
			w(line);
		} else {
			this.lines.push(line);
		}
	}

	/** The next line, or null at the end of the stream. */
	next(): Promise<string | null> {
		const line = this.lines.shift();
		if (line !== undefined) return Promise.resolve(line);
		if (this.ended) return Promise.resolve(null);
		return new Promise((resolve) => {
			this.waiting = resolve;
		});
	}
}

const STDERR_KEEP = 8000;

/** One `toolstream pi-provider` process: one Cursor run. */
class ProviderChild {
	readonly proc: ChildProcessWithoutNullStreams;
	readonly lines = new LineQueue();
	readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>;
	stderr = "";
	/** Tool call ids of the last delivered toolUse message, waiting for pi's results. */
	pending: string[] = [];
	/** The run's last message was delivered (or it failed): no continuation. */
	finished = false;
	dead = false;
	/** Output lines that were not protocol JSON (reported once, counted). */
	malformed = 0;

	constructor(bin: string, cwd: string) {
		this.proc = spawn(bin, ["pi-provider", ...sinkArgs()], {
			cwd: fs.existsSync(cwd) ? cwd : undefined,
			stdio: ["pipe", "pipe", "pipe"],
			// Its own process group, so that an abort kills it and the cursor-agent it started.
			detached: process.platform !== "win32",
			env: process.env,
		});
		this.proc.stdout.setEncoding("utf8");
		this.proc.stdout.on("data", (chunk: string) => this.lines.push(chunk));
		this.proc.stdout.on("end", () => this.lines.end());
		this.proc.stderr.setEncoding("utf8");
		this.proc.stderr.on("data", (chunk: string) => {
			this.stderr = (this.stderr + chunk).slice(-STDERR_KEEP);
		});
		// Writing to a child that already exited must not crash pi.
		this.proc.stdin.on("error", () => {});
		this.exited = new Promise((resolve) => {
			let error: Error | undefined;
			this.proc.on("error", (e) => {
				error = e;
				this.dead = true;
				this.lines.end();
				resolve({ code: null, signal: null, error });
			});
			this.proc.on("close", (code, signal) => {
				this.dead = true;
				this.lines.end();
				resolve({ code, signal, error });
			});
		});
	}

	send(message: unknown): void {
		if (this.dead || this.proc.stdin.destroyed) return;
		this.proc.stdin.write(`${JSON.stringify(message)}\n`);
	}

	private signalGroup(signal: NodeJS.Signals): void {
		const pid = this.proc.pid;
		if (pid === undefined) return;
		try {
			if (process.platform === "win32") this.proc.kill(signal);
			else process.kill(-pid, signal);
		} catch {
			// Already gone.
		}
	}

	/** The run's last message was delivered: end its input, it exits by itself (killed if not). */
	release(): void {
		this.proc.stdin.end();
		if (!this.dead) setTimeout(() => this.signalGroup("SIGKILL"), 5000).unref();
	}

	/** Stop the run: `abort`, then end the whole process group (SIGTERM, SIGKILL after 1 s). */
	kill(): void {
		this.finished = true;
		this.send({ type: "abort" });
		this.signalGroup("SIGTERM");
		if (!this.dead) setTimeout(() => this.signalGroup("SIGKILL"), 1000).unref();
		this.proc.stdin.end();
	}
}

/** The child of the run in progress, if any. */
let active: ProviderChild | undefined;

/**
 * Let go of the active run (agent end, session shutdown, pi exiting): a child that delivered the
 * run's last message winds down by itself; any other is stopped with its process group.
 */
export function stopActiveRun(): void {
	const child = active;
	active = undefined;
	// Recorded results of a run that is over are never asked for again.
	recordedResults.clear();
	if (!child || child.dead) return;
	if (child.finished) child.release();
	else child.kill();
}

/** Forget everything of the current session (pi switched, forked or started a new one). */
export function resetSession(): void {
	stopActiveRun();
	lastPrompt = undefined;
}

/** What `/cursor-status` shows: the mode and how much state the extension holds. */
export function statusLine(): string {
	const run = active ? (active.finished ? "finished" : "running") : "none";
	return `mode ${currentMode}; run ${run}; recorded results ${recordedResults.size}; pending calls ${active?.pending.length ?? 0}`;
}

process.once("exit", () => stopActiveRun());

/** Whether `context` answers the tool calls the active run is waiting for. */
function continuesActiveRun(context: Context): boolean {
	if (!active || active.finished || active.dead || active.pending.length === 0) return false;
	const messages = context.messages;
	if (messages.at(-1)?.role !== "toolResult") return false;
	let lastAssistant = messages.length - 1;
	while (lastAssistant >= 0 && messages[lastAssistant].role !== "assistant") lastAssistant--;
	const answered = new Set(
		messages
			.slice(lastAssistant + 1)
			.filter((m): m is ToolResultMessage => m.role === "toolResult")
			.map((m) => m.toolCallId),
	);
	return active.pending.every((id) => answered.has(id));
}

/**
 * The prompt that last started a Cursor run: pi retries a failed message by calling the provider
 * again with the same context, and that must not run the prompt a second time.
 */
let lastPrompt: string | undefined;

/** The last user message of a context (its time and content identify the prompt). */
function promptKey(context: Context): string | undefined {
	for (let i = context.messages.length - 1; i >= 0; i--) {
		const m = context.messages[i];
		if (m.role === "user") return `${i}:${m.timestamp ?? ""}:${JSON.stringify(m.content)}`;
	}
	return undefined;
}

function emptyMessage(model: Model<Api>): AssistantMessage {
	return {
		role: "assistant",
		content: [],
		api: API,
		provider: PROVIDER,
		model: model.id,
		usage: {
			input: 0,
			output: 0,
			cacheRead: 0,
			cacheWrite: 0,
			totalTokens: 0,
			cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
		},
		stopReason: "stop",
		timestamp: Date.now(),
	};
}

function exitText(exit: { code: number | null; signal: NodeJS.Signals | null; error?: Error }): string {
	if (exit.error) return exit.error.message;
	if (exit.signal) return `signal ${exit.signal}`;
	return `status ${exit.code}`;
}

// biome-ignore lint/suspicious/noExplicitAny: wire lines are untyped JSON.
type WireLine = Record<string, any>;


/** pi's `streamSimple` for provider `cursor`. */
export function streamCursor(model: Model<Api>, context: Context, options?: SimpleStreamOptions): AssistantMessageEventStream {
	const stream = createAssistantMessageEventStream();
	void deliverOneMessage(model, context, options, stream).catch((error: unknown) => {
		const message = emptyMessage(model);
		message.stopReason = "error";
		message.errorMessage = error instanceof Error ? error.message : String(error);
		stream.push({ type: "error", reason: "error", error: message });
		stream.end();
	});
	return stream;
}

async function deliverOneMessage(
	model: Model<Api>,
	context: Context,
	options: SimpleStreamOptions | undefined,
	stream: AssistantMessageEventStream,
): Promise<void> {
	let output = emptyMessage(model);
	let started = false;
	let ended = false;
	const finish = (event: Parameters<AssistantMessageEventStream["push"]>[0]) => {
		if (ended) return;
		ended = true;
		stream.push(event);
		stream.end();
	};
	const fail = (reason: "error" | "aborted", errorMessage: string) => {
		if (ended) return;
		if (!started) stream.push({ type: "start", partial: output });
		started = true;
		output = { ...output, stopReason: reason, errorMessage };
		finish({ type: "error", reason, error: output });
	};

	const signal = options?.signal;
	if (signal?.aborted) {
		fail("aborted", CANCELLED_MESSAGE);
		return;
	}

	let child: ProviderChild;
	if (continuesActiveRun(context) && active) {
		child = active;
		for (const id of child.pending) {
			const result = context.messages.find(
				(m): m is ToolResultMessage => m.role === "toolResult" && m.toolCallId === id,
			);
			child.send({ type: "tool_result", ...result });
		}
		child.pending = [];
	} else {
		// pi retries a failed message on its own when the error text looks transient; for Cursor
		// that would run the prompt again, and its tools (edits, commands) may already have acted.
		// A prompt starts at most one run; the user re-sending it is a new prompt.
		const prompt = promptKey(context);
		if (prompt !== undefined && prompt === lastPrompt) {
			fail(
				"error",
				"Cursor run not started again for the same prompt: Cursor may already have acted on it " +
					"(edits, commands). Send the prompt again to run it anew.",
			);
			return;
		}
		if (prompt !== undefined) lastPrompt = prompt;
		stopActiveRun();
		const bin = findToolstream();
		if (!bin) {
			fail(
				"error",
				"toolstream not found: set TOOLSTREAM_BIN, put toolstream on PATH, or build it (cargo build --release)",
			);
			return;
		}
		child = new ProviderChild(bin, currentCwd);
		active = child;
		const request = requestContext(context);
		child.send({
			type: "request",
			model: model.id,
			cwd: currentCwd,
			context: request,
			source: sourceSpec(currentCwd),
			// Continue the Cursor chat this conversation is, or send the conversation along.
			resume: chatToResume(request.messages, model.id, PROVIDER, currentSession),
			mode: currentMode,
			display: toolDisplay,
		});
	}

	const onAbort = () => {
		fail("aborted", CANCELLED_MESSAGE);
		if (active === child) active = undefined;
		child.kill();
	};
	signal?.addEventListener("abort", onAbort, { once: true });
	let heldDone: WireLine | undefined;
	const toolJson = new Map<number, string>();
	try {
		while (!ended) {
			const text = await child.lines.next();
			if (ended) break;
			if (text === null) {
				const exit = await child.exited;
				child.finished = true;
				const stderr = child.stderr.trim();
				fail(
					"error",
					`toolstream pi-provider ended (${exitText(exit)}) before the message did${stderr ? `: ${stderr.slice(-2000)}` : ""}`,
				);
				break;
			}
			let ev: WireLine;
			try {
				ev = JSON.parse(text);
			} catch {
				child.malformed++;
				if (child.malformed === 1) {
					reporter(`toolstream pi-provider sent a line that is not JSON (ignored): ${text.slice(0, 200)}`);
				}
				continue;
			}
			const i: number = ev.contentIndex;
			const block = output.content[i] as WireLine | undefined;
			switch (ev.type) {
				case "chat":
					// The run's Cursor chat; every message of the run carries it as `responseId`
					// (chat.ts), so nothing needs keeping here.
					break;
				case "start":
					output = ev.partial as AssistantMessage;
					started = true;
					stream.push({ type: "start", partial: output });
					break;
				case "text_start":
					output.content.push({ type: "text", text: "" });
					stream.push({ type: "text_start", contentIndex: i, partial: output });
					break;
				case "text_delta":
					if (block) block.text += ev.delta;
					stream.push({ type: "text_delta", contentIndex: i, delta: ev.delta, partial: output });
					break;
				case "text_end":
					if (block) block.text = ev.content;
					stream.push({ type: "text_end", contentIndex: i, content: ev.content, partial: output });
					break;
				case "thinking_start":
					output.content.push({ type: "thinking", thinking: "" });
					stream.push({ type: "thinking_start", contentIndex: i, partial: output });
					break;
				case "thinking_delta":
					if (block) block.thinking += ev.delta;
					stream.push({ type: "thinking_delta", contentIndex: i, delta: ev.delta, partial: output });
					break;
				case "thinking_end":
					if (block) block.thinking = ev.content;
					stream.push({ type: "thinking_end", contentIndex: i, content: ev.content, partial: output });
					break;
				case "toolcall_start":
					output.content.push({ ...(ev.toolCall as ToolCall), arguments: {} });
					stream.push({ type: "toolcall_start", contentIndex: i, partial: output });
					break;
				case "toolcall_delta": {
					const json = (toolJson.get(i) ?? "") + ev.delta;
					toolJson.set(i, json);
					try {
						if (block) block.arguments = JSON.parse(json);
					} catch {
						// Not complete yet.
					}
					stream.push({ type: "toolcall_delta", contentIndex: i, delta: ev.delta, partial: output });
					break;
				}
				case "toolcall_end":
					output.content[i] = ev.toolCall as ToolCall;
					stream.push({ type: "toolcall_end", contentIndex: i, toolCall: ev.toolCall, partial: output });
					break;
				case "done":
					if (ev.reason === "toolUse") {
						// pi runs the tools as soon as the message is done: hold it until their
						// recorded results (the next line) are stored.
						heldDone = ev;
					} else {
						child.finished = true;
						finish({ type: "done", reason: ev.reason, message: ev.message });
					}
					break;
				case "error":
					child.finished = true;
					finish({ type: "error", reason: ev.reason, error: ev.error });
					break;
				case "tool_results": {
					const results = (ev.results ?? []) as ToolResultMessage[];
					for (const r of results) recordedResults.set(r.toolCallId, r);
					// Bridged calls (Cursor calling pi's own tools, SPEC §7) are run by pi for
					// real; their results go back to toolstream like the replayed ones.
					const bridged = Array.isArray(ev.bridged) ? (ev.bridged as string[]) : [];
					child.pending = [...results.map((r) => r.toolCallId), ...bridged];
					if (heldDone) finish({ type: "done", reason: "toolUse", message: heldDone.message });
					break;
				}
				default:
					child.malformed++;
					if (child.malformed === 1) reporter(`toolstream pi-provider sent an unknown line (ignored): ${text.slice(0, 200)}`);
					break;
			}
		}
	} finally {
		signal?.removeEventListener("abort", onAbort);
	}
}
