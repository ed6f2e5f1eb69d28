import { problemOf, ParleyProblem } from './client.js';
import { transient } from './transport.js';
/** Ends a follow when the conversation moved to a new epoch (a compaction or a reset). */
export class EpochChanged extends Error {
    name = 'EpochChanged';
    constructor() {
        super('parley client: the conversation moved to a new epoch; read it again from the start');
    }
}
// followMessages streams GET …/messages?follow=true, resuming a dropped stream with
// Last-Event-ID from the last message seen, with backoff (reset by every message).
export async function* followMessages(client, path, options) {
    let after = options.after ?? 0;
    let backoff = 100;
    const url = new URL(client.url.pathname.replace(/\/+$/, '') + path, client.url);
    for (;;) {
        options.signal?.throwIfAborted();
        let res;
        try {
            const headers = await client.headers({ accept: 'text/event-stream', 'last-event-id': String(after) });
            res = await client.transportOf.open({ method: 'GET', url, headers, timeoutMs: 60_000 }, options.signal);
            if (res.statusCode !== 200) {
                const chunks = [];
                for await (const c of res)
                    chunks.push(c);
                const problem = problemOf(res.statusCode ?? 0, res.statusMessage ?? '', Buffer.concat(chunks).toString('utf8'));
                if (problem.status !== 429 && problem.status < 500) {
                    throw problem;
                }
            }
            else {
                for await (const ev of serverEvents(res)) {
                    if (ev.event === 'epoch') {
                        throw new EpochChanged();
                    }
                    if (ev.event === 'message' && ev.data) {
                        const sequence = Number(ev.id);
                        after = sequence;
                        backoff = 100;
                        yield { sequence, message: JSON.parse(ev.data) };
                    }
                }
            }
        }
        catch (err) {
            if (err instanceof EpochChanged || err instanceof ParleyProblem || options.signal?.aborted || !transient(err)) {
                throw err;
            }
        }
        finally {
            res?.destroy();
        }
        await client.sleep(backoff);
        backoff = Math.min(backoff * 2, client.backoffLimitMs);
    }
}
// serverEvents parses a text/event-stream into its events.
async function* serverEvents(res) {
    res.setEncoding('utf8');
    let buffer = '';
    let ev = { event: '', id: '', data: '' };
    for await (const chunk of res) {
        buffer += chunk;
        let nl;
        while ((nl = buffer.indexOf('\n')) >= 0) {
            const line = buffer.slice(0, nl).replace(/\r$/, '');
            buffer = buffer.slice(nl + 1);
            if (line === '') {
                if (ev.event || ev.data) {
                    yield ev;
                }
                ev = { event: '', id: '', data: '' };
            }
            else if (line.startsWith('event: ')) {
                ev.event = line.slice(7);
            }
            else if (line.startsWith('id: ')) {
                ev.id = line.slice(4);
            }
            else if (line.startsWith('data: ')) {
                ev.data += line.slice(6);
            }
        }
    }
}
