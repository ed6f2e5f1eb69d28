// Responses items (the OpenAI Agents SDK's AgentInputItem) ↔ Parley's neutral messages.
//
// One item is one message. What the neutral model holds goes into blocks, so the history,
// `kubectl parley history`, token counts, compaction and the resume bundles see the turn:
// message text (input_text, output_text, refusal parts, or a string) as text blocks, a
// function_call as a tool_use block, a function_call_result as a tool_result block in a tool
// message, reasoning text as thinking blocks. Everything else of the item — its type, id,
// status, providerData, images, hosted tool calls, members a newer SDK adds — is kept
// verbatim in the message's `source.raw` (source kind "openai-responses"), which only this
// converter reads: the item minus the strings the blocks carry. itemOf(messageOf(item)) is
// deep-equal to the item for any item that is JSON (no undefined members, no Uint8Array).
//
// A message another writer appended (a Go or Python agent, a seed, a compaction summary) has
// no such raw part: it is read as the Responses items that say the same.
/** The source kind of messages this converter wrote. */
export const SOURCE_KIND = 'openai-responses';
// Part types whose string member a text block carries, and that member.
const textMember = {
    input_text: 'text',
    output_text: 'text',
    text: 'text',
    reasoning_text: 'text',
    refusal: 'refusal',
};
/** The neutral message of an item, under the given message id. */
export function messageOf(item, id) {
    const raw = { ...item };
    const blocks = [];
    let role = 'assistant';
    switch (item.type ?? 'message') {
        case 'message': {
            role = roleOf(item.role);
            if (typeof item.content === 'string') {
                blocks.push({ type: 'text', text: item.content });
                delete raw.content;
            }
            else if (Array.isArray(item.content)) {
                raw.content = item.content.map((part) => takeText(part, blocks, 'text'));
            }
            break;
        }
        case 'function_call': {
            const block = { type: 'tool_use', toolUseId: str(item.callId), toolName: str(item.name), arguments: str(item.arguments) };
            const input = jsonObject(item.arguments);
            if (input !== undefined)
                block.input = input;
            blocks.push(block);
            // An empty string would not come back from the block (the server omits empty members):
            // it stays in raw.
            for (const k of ['callId', 'name', 'arguments'])
                if (nonEmpty(item[k]))
                    delete raw[k];
            break;
        }
        case 'function_call_result': {
            role = 'tool';
            const block = { type: 'tool_result', toolUseId: str(item.callId) };
            if (typeof item.output === 'string') {
                block.text = item.output;
                delete raw.output;
            }
            else {
                // Structured output stays in raw whole; its text parts are the result's text.
                const text = outputTexts(item.output).join('\n');
                if (text !== '')
                    block.text = text;
            }
            if (nonEmpty(item.callId))
                delete raw.callId;
            blocks.push(block);
            break;
        }
        case 'reasoning': {
            if (Array.isArray(item.content))
                raw.content = item.content.map((part) => takeText(part, blocks, 'thinking'));
            if (Array.isArray(item.rawContent))
                raw.rawContent = item.rawContent.map((part) => takeText(part, blocks, 'thinking'));
            break;
        }
        default:
            // Hosted tool calls, computer and shell calls, compaction and unknown items: no neutral
            // form; kept whole.
            break;
    }
    return { id, role, blocks, source: { kind: SOURCE_KIND, raw } };
}
/** The items a message stands for: the one this converter stored, or those that say the same. */
export function itemsOf(message, toolNames = new Map()) {
    const raw = message.source?.kind === SOURCE_KIND ? message.source.raw : undefined;
    if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
        const item = itemOf(raw, message.blocks ?? []);
        if (item.type === 'function_call')
            toolNames.set(String(item.callId), String(item.name));
        return [item];
    }
    return foreignItems(message, toolNames);
}
// itemOf puts the strings the blocks carry back into the stored rest of the item.
function itemOf(raw, blocks) {
    const item = structuredClone(raw);
    const queue = [...blocks];
    switch (item.type ?? 'message') {
        case 'message':
            if (!('content' in item)) {
                item.content = queue.shift()?.text ?? '';
            }
            else if (Array.isArray(item.content)) {
                item.content = item.content.map((part) => giveText(part, queue));
            }
            break;
        case 'function_call': {
            const b = queue[0];
            if (!('callId' in item))
                item.callId = b?.toolUseId ?? '';
            if (!('name' in item))
                item.name = b?.toolName ?? '';
            if (!('arguments' in item))
                item.arguments = b?.arguments ?? '';
            break;
        }
        case 'function_call_result': {
            const b = queue[0];
            if (!('callId' in item))
                item.callId = b?.toolUseId ?? '';
            // Only a string output left raw (for the block's text).
            if (!('output' in item))
                item.output = b?.text ?? '';
            break;
        }
        case 'reasoning':
            if (Array.isArray(item.content))
                item.content = item.content.map((part) => giveText(part, queue));
            if (Array.isArray(item.rawContent))
                item.rawContent = item.rawContent.map((part) => giveText(part, queue));
            break;
    }
    return item;
}
// takeText moves a text part's string into a block and returns the part without it.
function takeText(part, blocks, kind) {
    if (part === null || typeof part !== 'object' || Array.isArray(part))
        return part;
    const p = part;
    const member = textMember[String(p.type)];
    if (!member || typeof p[member] !== 'string')
        return part;
    blocks.push({ type: kind, text: p[member] });
    const rest = { ...p };
    delete rest[member];
    return rest;
}
// giveText is takeText undone: a text part without its string takes the next block's text.
function giveText(part, queue) {
    if (part === null || typeof part !== 'object' || Array.isArray(part))
        return part;
    const p = part;
    const member = textMember[String(p.type)];
    if (!member || member in p)
        return part;
    return { ...p, [member]: queue.shift()?.text ?? '' };
}
function roleOf(role) {
    switch (role) {
        case 'user':
            return 'user';
        case 'system':
        case 'developer':
            return 'system';
        default:
            return 'assistant';
    }
}
function nonEmpty(v) {
    return typeof v === 'string' && v !== '';
}
function str(v) {
    return typeof v === 'string' ? v : '';
}
function jsonObject(args) {
    if (typeof args !== 'string')
        return undefined;
    try {
        const v = JSON.parse(args);
        return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : undefined;
    }
    catch {
        return undefined;
    }
}
function outputTexts(output) {
    const parts = Array.isArray(output) ? output : [output];
    return parts.flatMap((p) => (p !== null && typeof p === 'object' && typeof p.text === 'string' ? [p.text] : []));
}
// foreignItems reads a message this converter did not write as Responses items: text as a
// message, tool calls as function_call items, tool results as function_call_result items
// (named after the call they answer), thinking dropped (Responses reasoning needs the
// provider's own item).
function foreignItems(m, toolNames) {
    const blocks = m.blocks ?? [];
    const text = blocks.filter((b) => b.type === 'text').map((b) => b.text ?? '').join('\n');
    const out = [];
    switch (m.role) {
        case 'user':
            if (text)
                out.push({ role: 'user', content: text });
            break;
        case 'system':
            if (text)
                out.push({ role: 'system', content: text });
            break;
        case 'assistant':
            if (text)
                out.push({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] });
            for (const b of blocks) {
                if (b.type !== 'tool_use')
                    continue;
                toolNames.set(b.toolUseId ?? '', b.toolName ?? '');
                const args = b.arguments || (b.input === undefined ? '{}' : JSON.stringify(b.input));
                out.push({ type: 'function_call', callId: b.toolUseId ?? '', name: b.toolName ?? '', arguments: args, status: 'completed' });
            }
            break;
        case 'tool':
            for (const b of blocks) {
                if (b.type === 'tool_result') {
                    const output = b.text ?? (b.content ?? []).filter((c) => c.type === 'text').map((c) => c.text ?? '').join('\n');
                    out.push({ type: 'function_call_result', callId: b.toolUseId ?? '', name: toolNames.get(b.toolUseId ?? '') ?? '', status: 'completed', output });
                }
            }
            if (text)
                out.push({ role: 'user', content: text });
            break;
    }
    return out;
}
