// LangGraph's conformance suite for checkpoint savers (@langchain/langgraph-checkpoint-validation)
// against ParleyCheckpointSaver, run with vitest by the Go envtest suite. It is the suite the
// package's `validate-checkpointer` CLI runs (specTest: put, putWrites, getTuple, list,
// deleteThread), plus its getDeltaChannelHistory tests; the CLI itself cannot load an
// initializer in release 1.1.1 (its bundle lacks the schema it checks the initializer with).
import { deltaChannelHistoryTests, validate } from '@langchain/langgraph-checkpoint-validation';

import initializer from './initializer.mjs';

validate(initializer);
deltaChannelHistoryTests(initializer);
