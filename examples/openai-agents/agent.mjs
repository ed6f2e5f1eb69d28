// An OpenAI Agents SDK agent whose session is its Parley Conversation (ParleySession).
// It converses the prompts given as arguments, one turn each, with a weather tool. After a
// crash the controller starts a new pod: the session reads the Conversation, so the agent
// knows which turns are done and the model gets every earlier item. The SDK saves a turn's
// items when the turn ends, so an interrupted turn left nothing behind and is run again.
//
//   node agent.mjs "weather in Paris?" "and in Rome?" "which is warmer?"
import { Agent, run, tool, setTracingDisabled } from '@openai/agents';
import { ParleySession } from '@parley-dev/openai-agents-session';
import { z } from 'zod';

// Traces go to OpenAI's platform by default: nothing to send them to here.
setTracingDisabled(true);

const getWeather = tool({
  name: 'get_weather',
  description: 'The weather in a city today.',
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => `18°C and sunny in ${city}`,
});

const agent = new Agent({
  name: 'weather',
  instructions: 'Answer in one sentence. Use get_weather for the weather.',
  tools: [getWeather],
  model: process.env.OPENAI_MODEL || 'gpt-4.1-mini',
});

const prompts = process.argv.slice(2);
const session = new ParleySession();
const items = await session.getItems();
const done = items.filter((i) => i.role === 'user').length;
console.log(`RESUME resume=${process.env.PARLEY_RESUME === 'true'} items=${items.length} turnsDone=${done}`);

for (const [i, prompt] of prompts.entries()) {
  if (i < done) continue;
  const result = await run(agent, prompt, { session });
  console.log(`TURN ${i + 1} done`);
  // The answer is the conversation's content: it stays out of the log.
  void result.finalOutput;
}
console.log('DONE');
