// Package compact shrinks a conversation that outgrew its model's context window.
//
// Each strategy is a function (ctx, state, policy) -> (new state, Record, error) that never
// modifies its input (the result shares unchanged messages and slices with it). All of them:
//
//   - keep State.System untouched;
//   - never separate a tool call from its result: the history is only ever cut between
//     "exchange groups", where no tool_use before the cut has its tool_result after it, and
//     the kept part never starts with a tool result;
//   - keep the last Policy.KeepRecentMessages messages as they are (and always the newest one);
//   - never increase the token count: when a strategy cannot save anything it returns the
//     state unchanged with Record.MessagesFolded == 0;
//   - are idempotent: compacting their own output again changes nothing.
//
// The strategies: SlidingWindow drops the oldest groups and puts a truncation notice in their
// place; ClearToolResults replaces old tool outputs with a placeholder that keeps the call ids;
// Summarize folds the oldest groups into one summary written by a Summarizer (an
// OpenAI-compatible or Anthropic model, called through the providers' official Go SDKs).
//
// A message standing in for folded history (the notice, the summary) is a RoleSystem message
// flagged FlagTruncationNotice or FlagCompactSummary. It takes the Seq of the last message it
// replaces, so Seq stays strictly increasing, and an ID derived from that message's ID, so
// compacting the same state twice gives the same result.
package compact
