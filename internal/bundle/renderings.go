package bundle

import (
	"fmt"

	"github.com/parley-dev/parley/pkg/conversation"
)

// addRenderings writes the history as each provider's API takes it, ready to send.
func addRenderings(files Files, s *conversation.State) error {
	openai, err := conversation.ToOpenAI(s)
	if err != nil {
		return fmt.Errorf("%w: render for OpenAI: %w", ErrInput, err)
	}
	if files[OpenAIFile], err = encodeJSON(OpenAIFile, openai); err != nil {
		return err
	}
	anthropic, err := conversation.ToAnthropic(s)
	if err != nil {
		return fmt.Errorf("%w: render for Anthropic: %w", ErrInput, err)
	}
	files[AnthropicFile], err = encodeJSON(AnthropicFile, anthropic)
	return err
}
