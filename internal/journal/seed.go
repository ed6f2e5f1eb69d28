package journal

import (
	"errors"
	"fmt"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/conversation"
)

// ErrSeed wraps every reason a seed cannot be read; the message says which line and why.
var ErrSeed = errors.New("seed")

// ParseSeed reads a seed in the format spec.seed.format names: neutral JSONL
// (conversation.ParseJSONL) or a Claude Code / Agent SDK transcript; Auto tells them apart by the first line (conversation.IsClaudeTranscript). It returns the format it read. A
// transcript whose last line was cut is refused rather than half-imported.
func ParseSeed(data []byte, format parleyv1alpha1.SeedFormat) (conversation.State, parleyv1alpha1.SeedFormat, error) {
	if format == parleyv1alpha1.SeedFormatAuto {
		format = parleyv1alpha1.SeedFormatNeutral
		if conversation.IsClaudeTranscript(data) {
			format = parleyv1alpha1.SeedFormatClaudeCode
		}
	}
	switch format {
	case parleyv1alpha1.SeedFormatClaudeCode:
		s, err := conversation.ImportClaudeJSONL(data)
		if err != nil {
			return conversation.State{}, format, fmt.Errorf("%w: not a readable Claude Code transcript: %w", ErrSeed, err)
		}
		return s, format, nil
	case parleyv1alpha1.SeedFormatNeutral:
		s, err := conversation.ParseJSONL(data)
		if err != nil {
			return conversation.State{}, format, fmt.Errorf("%w: %w", ErrSeed, err)
		}
		return s, format, nil
	default:
		return conversation.State{}, format, fmt.Errorf("%w: unknown format %q (Auto, Neutral or ClaudeCode)", ErrSeed, format)
	}
}
