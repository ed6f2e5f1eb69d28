// The graph's messages (LangChain messages in the root graph's `messages` channel) as Parley's
// neutral messages, so `kubectl parley history`, token counts and resume bundles show the
// conversation the graph had. The checkpoint stays the graph's source of truth: these messages
// are what a person reads, appended once each by id.
/** The source kind of the messages the saver appends. */
export const SOURCE_KIND = 'langgraph';
/** The channel the graph keeps its conversation in (MessagesAnnotation, MessagesValue). */
export const MESSAGES_CHANNEL = 'messages';
/**
 * The neutral messages of a channel value that the history does not hold yet (by id).
 * Messages without an id, or of a kind with no neutral form, are left out.
 */
export function newMessages(value, held) {
    if (!Array.isArray(value))
        return [];
    const out = [];
    for (const v of value) {
        if (v === null || typeof v !== 'object')
            continue;
        const m = v;
        if (typeof m.id !== 'string' || m.id === '' || held.has(m.id))
            continue;
        const neutral = neutralOf(m);
        if (neutral)
            out.push(neutral);
    }
    return out;
}
function neutralOf(m) {
    const kind = m.getType?.() ?? m._getType?.() ?? m.type;
    let role;
    const blocks = textBlocks(m.content);
    switch (kind) {
        case 'human':
            role = 'user';
            break;
        case 'system':
            role = 'system';
            break;
        case 'ai':
            role = 'assistant';
            for (const call of m.tool_calls ?? []) {
                blocks.push({ type: 'tool_use', toolUseId: call.id ?? '', toolName: call.name ?? '', input: call.args ?? {}, arguments: JSON.stringify(call.args ?? {}) });
            }
            break;
        case 'tool': {
            role = 'tool';
            const text = blocks.map((b) => b.text).join('\n');
            blocks.length = 0;
            blocks.push({ type: 'tool_result', toolUseId: m.tool_call_id ?? '', text, ...(m.status === 'error' ? { isError: true } : {}) });
            break;
        }
        default:
            return undefined;
    }
    return { id: m.id, role, blocks, ...(m.name ? { name: m.name } : {}), source: { kind: SOURCE_KIND } };
}
// textBlocks reads a message's content: a string, or parts of which the text ones are kept.
function textBlocks(content) {
    if (typeof content === 'string') {
        return content === '' ? [] : [{ type: 'text', text: content }];
    }
    if (!Array.isArray(content))
        return [];
    return content.flatMap((p) => (p !== null && typeof p === 'object' && p.type === 'text' && typeof p.text === 'string' ? [{ type: 'text', text: p.text }] : []));
}
