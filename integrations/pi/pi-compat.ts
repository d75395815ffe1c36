/**
 * The one place where the supported pi versions (0.73 … 0.87, see docs/pi-provider-protocol.md) differ for the
 * extension: the context pi hands a provider. pi up to 0.85 passes pi-ai's `Context`
 * (`systemPrompt`, `messages`, `tools`); pi 0.86+ passes a `TranscriptContext`, whose
 * `role:"system"` messages carry the prompt and the tool declarations (the first holds them,
 * later ones append to the prompt, patch its sections by name, add or remove tools), with
 * `systemPrompt` and `tools` absent. `requestContext` gives toolstream's `request` line the same
 * shape from either: the prompt and the current tools folded out of the system messages as
 * pi-ai's `getCurrentSystemPrompt` / `getCurrentTools` do, and the conversation without them.
 */

import type { Context, Message, Tool } from "@mariozechner/pi-ai";

/** pi-ai's `SystemMessage` (0.86+); pi 0.73's types have no such role. */
interface SystemMessage {
	role: "system";
	content: string | { type: string; text?: string }[];
	sections?: Record<string, string | null>;
	toolsAdded?: Tool[];
	toolsRemoved?: { name: string }[];
}

/** A tool as the `request` line carries it. */
export interface RequestTool {
	name: string;
	description: string;
	parameters: unknown;
}

/** The `context` of the `request` line (docs/pi-provider-protocol.md). */
export interface RequestContext {
	systemPrompt?: string;
	messages: Message[];
	tools: RequestTool[];
}

function isSystem(m: { role: string }): m is SystemMessage {
	return m.role === "system";
}

function text(content: SystemMessage["content"]): string {
	if (typeof content === "string") return content;
	return content
		.filter((b) => b.type === "text")
		.map((b) => b.text ?? "")
		.join("\n");
}

export function requestContext(context: Context): RequestContext {
	const all: readonly { role: string }[] = context.messages;
	const system = all.filter(isSystem);
	const messages = context.messages.filter((m) => !isSystem(m));
	const declared = (tools: Tool[]) =>
		tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
	if (system.length === 0) {
		return { systemPrompt: context.systemPrompt, messages, tools: declared(context.tools ?? []) };
	}
	const contents: string[] = [];
	const sections = new Map<string, string>();
	const tools = new Map<string, Tool>();
	for (const m of system) {
		const t = text(m.content);
		if (t.length > 0) contents.push(t);
		for (const [name, value] of Object.entries(m.sections ?? {})) {
			if (value === null) sections.delete(name);
			else sections.set(name, value);
		}
		for (const t of m.toolsRemoved ?? []) tools.delete(t.name);
		for (const t of m.toolsAdded ?? []) tools.set(t.name, t);
	}
	const prompt = [contents.join("\n\n"), ...sections.values()].filter((p) => p.length > 0).join("\n\n");
	return { systemPrompt: prompt || context.systemPrompt, messages, tools: declared([...tools.values()]) };
}
