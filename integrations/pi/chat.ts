/**
 * Conversations that continue: which Cursor chat a new prompt resumes.
 *
 * Each assistant message a Cursor run produces carries the run's Cursor chat id as its
 * `responseId` and the model id pi asked for as its `model` (toolstream writes both; Cursor's own
 * name for the model is in `responseModel`), so the id lives in the pi session with the messages: it survives a pi restart and `pi -c`, and it moves with pi's
 * session tree. A new prompt resumes that chat (`cursor-agent --resume <id>`, only the new text
 * is sent) when pi's conversation so far *is* that chat:
 *
 * - the message just before the prompt is an assistant message of provider `cursor` with a chat
 *   id, made by the same model (a model change starts a new chat);
 * - that message is the chat's newest turn: no message of the chat lies off the current branch
 *   of the session tree (a branch from an earlier point would otherwise resume a chat that holds
 *   turns pi's conversation does not);
 * - the chat began in this session file, not in a session this one was forked from: a fork
 *   starts chats of its own, so that neither side ever resumes turns the other one added.
 *
 * Otherwise no chat is resumed, and toolstream flattens the earlier conversation into the prompt
 * (the `conversation` module of toolstream's hosts crate; bounded, the oldest turns cut with a note). After `/new`
 * the context is empty: nothing carries over.
 */

import fs from "node:fs";
import type { AssistantMessage, Message } from "@mariozechner/pi-ai";

/** The session entries this module looks at (pi's `SessionEntry`, narrowed). */
export interface EntryLike {
	type: string;
	id: string;
	message?: { role?: string; provider?: string; responseId?: string };
}

/** What the decision needs of pi's session manager (`ctx.sessionManager`). */
export interface SessionView {
	getEntries(): EntryLike[];
	getBranch(): EntryLike[];
	getHeader(): { parentSession?: string } | null | undefined;
}

/** How many forks back the chat's newest turn is looked for. */
const MAX_PARENT_SESSIONS = 8;

/** The chat id of a Cursor assistant message, if it has one. */
export function chatIdOf(message: { role?: string; provider?: string; responseId?: string } | undefined, provider: string): string | undefined {
	if (message?.role !== "assistant" || message.provider !== provider) return undefined;
	const id = message.responseId;
	return typeof id === "string" && id.trim() ? id : undefined;
}

/** Entry ids of session `file` whose assistant message belongs to `chat`, and the file's parent session. */
function chatEntriesInFile(file: string, chat: string, provider: string): { ids: string[]; parent?: string } {
	let text: string;
	try {
		text = fs.readFileSync(file, "utf8");
	} catch {
		return { ids: [] };
	}
	const ids: string[] = [];
	let parent: string | undefined;
	for (const line of text.split("\n")) {
		if (!line.trim()) continue;
		// Only lines that can matter are parsed: the header and the chat's messages.
		if (!line.includes(chat) && !line.startsWith('{"type":"session"')) continue;
		try {
			const e = JSON.parse(line) as EntryLike & { parentSession?: string };
			if (e.type === "session") parent = e.parentSession;
			else if (e.type === "message" && chatIdOf(e.message, provider) === chat) ids.push(e.id);
		} catch {
			// A torn line is not evidence either way.
		}
	}
	return { ids, parent };
}

/**
 * The Cursor chat the prompt at the end of `messages` (the conversation, without pi 0.86+'s
 * system messages: see pi-compat.ts) continues, or undefined when the earlier conversation must
 * travel in the prompt instead.
 */
export function chatToResume(
	messages: readonly Message[],
	modelId: string,
	provider: string,
	session: SessionView | undefined,
): string | undefined {
	const last = messages.length - 1;
	if (last < 1 || messages[last].role !== "user") return undefined;
	const before = messages[last - 1];
	if (before.role !== "assistant") return undefined;
	const assistant = before as AssistantMessage;
	const chat = chatIdOf(assistant, provider);
	if (!chat || assistant.model !== modelId) return undefined;
	if (!session) return undefined;

	// Every message of the chat in this session must be on the current branch.
	const onBranch = new Set(session.getBranch().map((e) => e.id));
	const known = new Set<string>();
	for (const e of session.getEntries()) {
		if (e.type !== "message" || chatIdOf(e.message, provider) !== chat) continue;
		if (!onBranch.has(e.id)) return undefined;
		known.add(e.id);
	}
	if (known.size === 0) return undefined;
	// …and the chat must not come from a session this one was forked from.
	let parent = session.getHeader()?.parentSession;
	for (let depth = 0; parent && depth < MAX_PARENT_SESSIONS; depth++) {
		const found = chatEntriesInFile(parent, chat, provider);
		if (found.ids.length > 0) return undefined;
		parent = found.parent;
	}
	return chat;
}
