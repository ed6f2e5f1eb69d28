// A LangGraph JS graph (a model node and a tool node) whose checkpointer is its Parley
// Conversation (ParleyCheckpointSaver): thread = Conversation. It converses the prompts given
// as arguments, one turn each. After a crash the controller starts a new pod: the saver reads
// the thread's checkpoints from the Conversation, the graph's state says which turns are done,
// and a turn the crash interrupted is resumed from its last checkpoint with invoke(null), as
// LangGraph resumes any interrupted run. Interrupted means the state has tasks: nodes still to
// run, or (LangGraph saves a step's checkpoint while the next step already runs) nodes whose
// writes were saved before the checkpoint that would have followed them.
//
//   node agent.mjs "weather in Paris?" "and in Rome?" "which is warmer?"
import { HumanMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { ChatOpenAI } from '@langchain/openai';
import { ParleyCheckpointSaver } from '@parley-dev/langgraph-checkpoint-saver';
import { z } from 'zod';

const getWeather = tool(async ({ city }) => `18°C and sunny in ${city}`, {
  name: 'get_weather',
  description: 'The weather in a city today.',
  schema: z.object({ city: z.string() }),
});

const model = new ChatOpenAI({
  model: process.env.OPENAI_MODEL || 'gpt-4.1-mini',
  configuration: { baseURL: process.env.OPENAI_BASE_URL },
}).bindTools([getWeather]);

const graph = new StateGraph(MessagesAnnotation)
  .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
  .addNode('tools', new ToolNode([getWeather]))
  .addEdge(START, 'agent')
  .addConditionalEdges('agent', (s) => (s.messages.at(-1).tool_calls?.length ? 'tools' : END))
  .addEdge('tools', 'agent')
  .compile({ checkpointer: new ParleyCheckpointSaver() });

// In an agent pod the thread is the pod's own Conversation (its token may touch no other).
const config = { configurable: { thread_id: process.env.PARLEY_CONVERSATION } };
const prompts = process.argv.slice(2);
const humans = (st) => (st.values.messages ?? []).filter((m) => m.getType() === 'human').length;
let state = await graph.getState(config);
console.log(`RESUME resume=${process.env.PARLEY_RESUME === 'true'} messages=${state.values.messages?.length ?? 0} tasks=${state.tasks.map((t) => t.name).join(',')}`);
if (state.tasks.length > 0) {
  await graph.invoke(null, config);
  state = await graph.getState(config);
  console.log(`TURN ${humans(state)} resumed`);
}
const done = humans(state);
for (const [i, prompt] of prompts.entries()) {
  if (i < done) continue;
  // A fixed id: a crash can land after the saver sent the prompt to the Conversation but before
  // the step's checkpoint; the resumed step then adds it again, and the same id stores it once.
  await graph.invoke({ messages: [new HumanMessage({ id: `prompt-${i + 1}`, content: prompt })] }, config);
  console.log(`TURN ${i + 1} done`);
}
console.log('DONE');
