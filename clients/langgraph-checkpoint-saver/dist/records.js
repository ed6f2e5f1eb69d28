// What the saver keeps in a Conversation's history, and its index of it.
//
// Checkpoints, channel values and pending writes are raw records of the history (State.records,
// appended with POST …/import): JSON objects whose `type` starts with "langgraph.". A record
// is no message, so the conversation's messages, token count and resume bundles are the
// graph's messages alone (appended as messages beside the records, see messages.ts).
//
//   {"type":"langgraph.checkpoint","ns","id","parent"?,"checkpoint","metadata"}
//       one checkpoint without its channel values (the serializer's output);
//   {"type":"langgraph.blob","ns","channel","version","value"?}
//       the value of one channel at one version, written by the checkpoint that changed it
//       (no value: the channel was emptied); a checkpoint's values are the blobs of its
//       channel_versions, so a value that did not change is stored once;
//   {"type":"langgraph.writes","ns","checkpoint","task","path"?,"writes":[{"idx","channel","value"}]}
//       one putWrites call.
//
// A serialized value is {"t": type, "json": value} when the serializer wrote JSON, else
// {"t": type, "b64": bytes}.
export const RECORD_PREFIX = 'langgraph.';
/** The saver's records of one thread (one epoch of one Conversation), indexed. */
export class ThreadIndex {
    epoch;
    sequence;
    /** Checkpoints by namespace, then id. */
    checkpoints = new Map();
    /** Blobs by blobKey. Null: the channel was emptied at that version. */
    blobs = new Map();
    /** Writes by checkpoint (writesKey), then `task,idx`. */
    writes = new Map();
    /** The ids of the messages the history holds. */
    messageIds = new Set();
    constructor(epoch, sequence) {
        this.epoch = epoch;
        this.sequence = sequence;
    }
    /** Folds in one record; others than the saver's are ignored. */
    add(raw) {
        if (raw === null || typeof raw !== 'object')
            return;
        const r = raw;
        switch (r.type) {
            case 'langgraph.checkpoint': {
                let ns = this.checkpoints.get(r.ns);
                if (!ns)
                    this.checkpoints.set(r.ns, (ns = new Map()));
                ns.set(r.id, r);
                break;
            }
            case 'langgraph.blob':
                this.blobs.set(blobKey(r.ns, r.channel, r.version), r.value ?? null);
                break;
            case 'langgraph.writes': {
                const key = writesKey(r.ns, r.checkpoint);
                let stored = this.writes.get(key);
                if (!stored)
                    this.writes.set(key, (stored = new Map()));
                for (const w of r.writes) {
                    const inner = `${r.task},${w.idx}`;
                    // A regular write is kept once (the first); the special channels' negative
                    // indexes (errors, interrupts) take the latest, as LangGraph's own savers do.
                    if (w.idx >= 0 && stored.has(inner))
                        continue;
                    stored.set(inner, { task: r.task, path: r.path ?? '', idx: w.idx, channel: w.channel, value: w.value });
                }
                break;
            }
        }
    }
}
export function blobKey(ns, channel, version) {
    return JSON.stringify([ns, channel, String(version)]);
}
export function writesKey(ns, checkpointId) {
    return JSON.stringify([ns, checkpointId]);
}
