package compact

import (
	"context"
	"fmt"

	"github.com/parley-dev/parley/pkg/conversation"
)

// Summarizer writes the summary that stands in for folded history.
type Summarizer interface {
	// Summarize returns a summary of req.Messages (plain text, without SummaryPrefix). It must
	// honor ctx's deadline and cancellation. Errors must not quote the messages.
	Summarize(ctx context.Context, req SummaryRequest) (Summary, error)
}

// Summary is what a Summarizer wrote.
type Summary struct {
	// Text is the summary, trimmed, without SummaryPrefix.
	Text string
	// Usage is what the provider reported the call cost (zero when it reported nothing):
	// Input the transcript and instructions, Output the summary.
	Usage conversation.Usage
}

// SummaryRequest is what a Summarizer is asked to condense.
type SummaryRequest struct {
	// Messages are the folded messages, oldest first. The first may be an earlier summary or
	// truncation notice (see conversation.FlagCompactSummary), to be merged in.
	Messages []conversation.Message
	// MaxTokens is the longest summary wanted.
	MaxTokens int
}

// SummarizerFunc adapts a function to the Summarizer interface.
type SummarizerFunc func(ctx context.Context, req SummaryRequest) (Summary, error)

// Summarize calls f.
func (f SummarizerFunc) Summarize(ctx context.Context, req SummaryRequest) (Summary, error) {
	return f(ctx, req)
}

// Providers accepted by NewSummarizer, as in spec.context.summarizer.provider.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// NewSummarizer returns the summarizer of a provider: "openai" for any OpenAI-compatible
// /v1/chat/completions endpoint, "anthropic" for the Anthropic Messages API.
func NewSummarizer(provider string, cfg HTTPConfig) (Summarizer, error) {
	switch provider {
	case ProviderOpenAI:
		return NewOpenAISummarizer(cfg)
	case ProviderAnthropic:
		return NewAnthropicSummarizer(cfg)
	default:
		return nil, fmt.Errorf("unknown summarizer provider %q: want %s or %s", provider, ProviderOpenAI, ProviderAnthropic)
	}
}

// NewOpenAISummarizer returns a summarizer calling an OpenAI-compatible chat completions API
// through the official SDK (github.com/openai/openai-go). The key, when set, is sent as
// Authorization: Bearer; without one no Authorization is sent (local servers).
func NewOpenAISummarizer(cfg HTTPConfig) (Summarizer, error) {
	c, err := newOpenAICompleter(cfg)
	if err != nil {
		return nil, err
	}
	return &modelSummarizer{complete: c.complete}, nil
}

// NewAnthropicSummarizer returns a summarizer calling the Anthropic Messages API through the
// official SDK (github.com/anthropics/anthropic-sdk-go), which sends x-api-key and the API
// version it was written for.
func NewAnthropicSummarizer(cfg HTTPConfig) (Summarizer, error) {
	c, err := newAnthropicCompleter(cfg)
	if err != nil {
		return nil, err
	}
	return &modelSummarizer{complete: c.complete}, nil
}

// completeFunc sends instructions and one user message to a model and returns its answer.
type completeFunc func(ctx context.Context, system, user string, maxTokens int) (Summary, error)

// modelSummarizer asks a chat model for the summary of a rendered transcript.
type modelSummarizer struct {
	complete completeFunc
}

func (s *modelSummarizer) Summarize(ctx context.Context, req SummaryRequest) (Summary, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultSummaryMaxTokens
	}
	return s.complete(ctx, summaryInstructions(maxTokens), summaryInput(req.Messages, maxSummaryInputBytes), maxTokens)
}

func summaryInstructions(maxTokens int) string {
	return fmt.Sprintf(`You compact the history of a conversation between a user and an AI agent, so that the agent can continue its work with less context.
Write a summary of the transcript you are given that keeps what the agent needs to continue: the user's goals and requests, decisions and their reasons, facts learned, names of files, commands, identifiers and values that matter, results of tool calls that are still relevant, errors met, and what remains to be done.
If the transcript opens with an earlier summary, merge it in: the result replaces it.
Write in the language of the conversation, as plain prose or short lists, in at most about %d tokens. Output only the summary.`, maxTokens)
}
