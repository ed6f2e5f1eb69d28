// Reads the stub model's record of requests (GET /_stub/requests, test/stubmodel) on stdin, for
// hack/demo-claude-code.sh:
//   held     prints the number of the request the stub holds open, nothing when there is none
//   print    one line per request: its number, how many messages it carries, the last one
//   resumed  prints the conversation of the first request after the held one, and exits 1
//            unless it is the held request's conversation: the same messages, in order, once
// Claude Code adds context to user messages (<system-reminder> blocks) that differs from one
// request to the next: those are left out, as in test/e2e.
import { readFileSync } from 'node:fs';

const requests = JSON.parse(readFileSync(0, 'utf8'));

const messages = (r) => (r.conversation ?? []).filter((e) => !(e.text ?? '').startsWith('<system-reminder>'));
const short = (s) => {
  const one = (s ?? '').replace(/\s+/g, ' ').trim();
  return one.length > 70 ? `${one.slice(0, 67)}...` : one;
};
const describe = (e) => `${e.role.padEnd(10)} ${e.kind.padEnd(12)} ${e.kind === 'tool_use' ? `${e.name} (${e.callID})` : short(e.text)}`;
const held = requests.find((r) => r.held);

switch (process.argv[2]) {
  case 'held':
    if (held) console.log(held.seq);
    break;
  case 'print':
    for (const r of requests) {
      const m = messages(r);
      const last = m.at(-1);
      console.log(`model request #${r.seq} (${r.api}${r.stream ? ', streamed' : ''}): ${m.length} message${m.length === 1 ? "" : "s"}, the last ${last ? describe(last).replace(/\s+/g, ' ') : 'none'}${r.held ? '  [held open]' : ''}`);
    }
    break;
  case 'resumed': {
    const after = held && requests.find((r) => r.seq === held.seq + 1);
    if (!after) {
      console.error('no request after a held one in the record');
      process.exit(1);
    }
    const want = messages(held).map(describe);
    const got = messages(after).map(describe);
    console.log(`The first model request after the crash, #${after.seq}, carries:`);
    for (const line of got) console.log(`  ${line}`);
    if (new Set(messages(after).map((e) => JSON.stringify(e))).size !== got.length) {
      console.error('a message appears twice in it');
      process.exit(1);
    }
    if (JSON.stringify(messages(after)) !== JSON.stringify(messages(held))) {
      console.error(`\nbut the request the crash interrupted, #${held.seq}, carried:`);
      for (const line of want) console.error(`  ${line}`);
      process.exit(1);
    }
    console.log(`the ${got.length} messages the interrupted request #${held.seq} carried, in the same order, each once`);
    break;
  }
  default:
    console.error('usage: node stub-record.mjs held|print|resumed < record.json');
    process.exit(2);
}
