// A Claude Agent SDK agent whose session lives in its Parley Conversation (ParleySessionStore):
// the SDK mirrors the transcript the claude process writes into the Conversation, and resumes
// from it alone, with a fresh, empty CLAUDE_CONFIG_DIR — nothing of the old pod's disk. It
// converses the prompts given as arguments, one turn each; the model reads weather.txt with
// the Read tool.
//
// The session is the Conversation's (PARLEY_SESSION_ID). A new pod loads the transcript to see
// which prompts were asked. A prompt whose turn a crash interrupted has no answer: the agent
// resumes at the last entry before it (the SDK's resumeSessionAt) and asks it again, so the
// model sees it once.
//
//   node agent.mjs "weather in Paris?" "and in Rome?" "which is warmer?"
import { mkdtempSync } from 'node:fs';

import { query } from '@anthropic-ai/claude-agent-sdk';
import { ParleySessionStore } from '@parley-dev/claude-session-store';

const prompts = process.argv.slice(2);
const sessionId = process.env.PARLEY_SESSION_ID;
const store = new ParleySessionStore();
const env = {
  ...process.env,
  // A fresh, empty config directory in every pod: the session comes from the store.
  CLAUDE_CONFIG_DIR: mkdtempSync('/tmp/claude-'),
  // No update checks or telemetry from a pod.
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_TELEMETRY: '1',
  DISABLE_AUTOUPDATER: '1',
};

// promptText is the text of a transcript line that asks one of the prompts, or undefined.
function promptText(entry) {
  if (entry.type !== 'user' || entry.isMeta) return undefined;
  const content = entry.message?.content;
  const texts = typeof content === 'string' ? [content] : (content ?? []).filter((b) => b.type === 'text').map((b) => b.text);
  return texts.find((t) => prompts.includes(t));
}

// progress reads the transcript: how many prompts were asked, and, when the last one has no
// answer yet, the uuid of the entry before it (where to resume to ask it again).
function progress(entries) {
  let asked = 0;
  let before;
  let answered = true;
  let last;
  for (const e of entries) {
    if (!e.uuid || e.isSidechain) continue;
    if (promptText(e) !== undefined) {
      asked++;
      before = last;
      answered = false;
    } else if (e.type === 'assistant' && (e.message?.content ?? []).some((b) => b.type === 'text')) {
      answered = true;
    }
    last = e.uuid;
  }
  return { asked, answered, before };
}

const entries = (await store.load({ projectKey: '', sessionId })) ?? [];
const { asked, answered, before } = progress(entries);
console.log(`RESUME resume=${process.env.PARLEY_RESUME === 'true'} entries=${entries.length} asked=${asked} answered=${answered}`);

let started = entries.length > 0;
for (const [i, prompt] of prompts.entries()) {
  if (i < asked - 1 || (i === asked - 1 && answered)) continue;
  const where = !started ? { sessionId } : i === asked - 1 ? { resume: sessionId, resumeSessionAt: before } : { resume: sessionId };
  for await (const m of query({
    prompt,
    options: {
      ...where,
      sessionStore: store,
      pathToClaudeCodeExecutable: '/usr/local/bin/claude',
      model: process.env.ANTHROPIC_MODEL || 'claude-sonnet-4-5',
      allowedTools: ['Read'],
      cwd: '/app',
      env,
    },
  })) {
    if (m.type === 'result' && m.subtype !== 'success') throw new Error(`turn ${i + 1}: ${m.subtype}`);
  }
  started = true;
  console.log(`TURN ${i + 1} done`);
}
console.log('DONE');
