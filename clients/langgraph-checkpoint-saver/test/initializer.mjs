// The CheckpointerTestInitializer that LangGraph's conformance suite
// (@langchain/langgraph-checkpoint-validation, `validate-checkpointer`) runs against
// ParleyCheckpointSaver (../dist). Run by the Go envtest suite
// (test/clients/agent_frameworks_test.go), which sets PARLEY_API_URL,
// PARLEY_NAMESPACE, PARLEY_CHECK_TOKEN (a token that may read, append and reset) and
// PARLEY_CHECK_PROVISION, a URL that creates a Conversation (?name=) and answers once its
// history is available.
//
// Each saver the suite creates maps a thread to a Conversation of its own name prefix, so
// savers never see each other's threads (the suite reuses thread ids such as "thread-1").
import { randomBytes } from 'node:crypto';

import { ParleyClient } from '@parley-dev/session-api';

import { ParleyCheckpointSaver } from '../dist/index.js';

const env = process.env;
const client = new ParleyClient({ url: env.PARLEY_API_URL, token: env.PARLEY_CHECK_TOKEN });
const provisioned = new Map();

function provision(name) {
  if (!provisioned.has(name)) {
    provisioned.set(
      name,
      fetch(`${env.PARLEY_CHECK_PROVISION}?name=${encodeURIComponent(name)}`, { method: 'POST' }).then(async (res) => {
        if (!res.ok) throw new Error(`provisioning conversation ${name}: ${res.status} ${await res.text()}`);
      }),
    );
  }
  return provisioned.get(name);
}

export default {
  checkpointerName: 'ParleyCheckpointSaver',
  createCheckpointer() {
    const prefix = `lg-${randomBytes(4).toString('hex')}-`;
    return new ParleyCheckpointSaver({
      client,
      namespace: env.PARLEY_NAMESPACE,
      conversationFor: async (threadId) => {
        const name = prefix + threadId.toLowerCase();
        await provision(name);
        return name;
      },
    });
  },
};
