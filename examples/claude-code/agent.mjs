// The Claude Code CLI, headless, as a Parley agent. This driver runs `claude -p` once per
// prompt given as arguments (the model reads weather.txt with the Read tool) and, after each
// turn, sends the new lines of the CLI's transcript to the Conversation (ParleySessionStore's
// append: the Session API's transcript endpoint), so Parley holds the session.
//
// After a crash the controller starts a new pod with the resume bundle: a Claude config
// directory holding the session up to the last complete turn. The driver copies it to a
// writable place (the mount is read-only) and runs `claude -p --resume`, the CLI's own resume.
// The turn the crash interrupted was never sent to Parley, so it is asked again, once.
//
//   node agent.mjs "weather in Paris?" "and in Rome?" "which is warmer?"
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

import { ParleySessionStore } from '@parley-dev/claude-session-store';

const prompts = process.argv.slice(2);
const sessionId = process.env.PARLEY_SESSION_ID;
const mount = process.env.PARLEY_RESUME_DIR || '/var/run/parley';
const bundle = JSON.parse(readFileSync(path.join(mount, 'conversation.json'), 'utf8'));
// The bundle names the directory the CLI files the session under (the container's workingDir).
const cwd = bundle.claude?.cwd ?? process.cwd();
const configDir = '/tmp/claude';
mkdirSync(configDir, { recursive: true });
// The bundle has a Claude config directory once there is a session to resume.
if (existsSync(path.join(mount, 'claude'))) {
  cpSync(path.join(mount, 'claude'), configDir, { recursive: true, dereference: true });
  // The copies keep the mount's read-only modes: the CLI must append to the transcript.
  for (const f of readdirSync(configDir, { recursive: true })) {
    const p = path.join(configDir, f);
    chmodSync(p, statSync(p).isDirectory() ? 0o755 : 0o644);
  }
}
// The CLI files a session under its working directory: every character outside [A-Za-z0-9]
// of the path becomes '-' (docs/resume-bundle.md).
const transcript = path.join(configDir, 'projects', cwd.replace(/[^A-Za-z0-9]/g, '-'), `${sessionId}.jsonl`);

function lines() {
  if (!existsSync(transcript)) return [];
  return readFileSync(transcript, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
}

// asked counts the prompts the transcript holds (user lines that are one of the prompts).
function asked(entries) {
  return entries.filter((e) => {
    if (e.type !== 'user' || e.isMeta || e.isSidechain) return false;
    const c = e.message?.content;
    const texts = typeof c === 'string' ? [c] : (c ?? []).filter((b) => b.type === 'text').map((b) => b.text);
    return texts.some((t) => prompts.includes(t));
  }).length;
}

const store = new ParleySessionStore();
const key = { projectKey: '', sessionId };
let sent = lines().length; // the bundle's lines are Parley's already
const done = asked(lines());
console.log(`RESUME resume=${bundle.resume} bundleLines=${sent} turnsDone=${done}`);
// A session to continue (a transcript in the bundle, or a turn this pod ran) is resumed; else
// the first turn starts it under the Conversation's session id.
let started = Boolean(bundle.claude?.transcript);

const env = {
  ...process.env,
  CLAUDE_CONFIG_DIR: configDir,
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_TELEMETRY: '1',
  DISABLE_AUTOUPDATER: '1',
};
for (const [i, prompt] of prompts.entries()) {
  if (i < done) continue;
  const session = started ? ['--resume', sessionId] : ['--session-id', sessionId];
  const model = process.env.ANTHROPIC_MODEL || 'claude-sonnet-4-5';
  const run = spawnSync('claude', ['-p', prompt, ...session, '--model', model, '--allowedTools', 'Read', '--output-format', 'json'], { cwd, env, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`claude exited ${run.status}: ${run.stderr}`);
  // The CLI keeps the api-request lines (what it sent) to itself, as the Agent SDK does.
  const fresh = lines().slice(sent).filter((e) => !String(e.type).startsWith('api-request'));
  await store.append(key, fresh);
  sent = lines().length;
  started = true;
  console.log(`TURN ${i + 1} done`);
}
console.log('DONE');
