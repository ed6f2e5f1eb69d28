// Package stubmodel is a stand-in for the model APIs agents call, for tests that run real agent
// frameworks without a model provider: enough of the Anthropic Messages API (streamed as
// server-sent events, as Claude Code uses it, or not), of the OpenAI Responses API and of the
// OpenAI Chat Completions API (streamed or not) to drive a conversation with tool calls.
//
// Replies come from a script: each model request takes the next Reply, whichever API it came
// through, so a test writes the conversation once for any framework. A Reply can hold its
// request unanswered until the client goes away, which is how a test catches an agent in the
// middle of a turn to kill it.
//
// Every request is recorded — its body as sent and the conversation it carries, normalized to
// a list of Entries (role, kind, text, tool call) — and served at GET /_stub/requests, so a test
// asserts on what the agent sent after a crash without parsing three wire formats itself.
package stubmodel
