package compact

import (
	"fmt"
	"strings"

	"github.com/parley-dev/parley/pkg/conversation"
)

const (
	// maxSummaryInputBytes bounds the text sent to a summarizer (about 100k tokens); the
	// oldest messages past it are left out, an earlier summary at the front is kept.
	maxSummaryInputBytes = 400_000
	// maxBlockBytes bounds one tool input or output in that text: the summary needs the
	// gist of a file read or a command's output, not all of it.
	maxBlockBytes = 4_000
)

// summaryInput writes messages as plain text for a summarizer. Thinking is left out (it
// is long and the answers that followed carry its conclusions); tool inputs and outputs are
// cut to maxBlockBytes; media appear as a one-line reference.
func summaryInput(messages []conversation.Message, limit int) string {
	parts := make([]string, len(messages))
	total := 0
	for i := range messages {
		parts[i] = renderMessage(&messages[i])
		total += len(parts[i])
	}
	first := 0
	var pinned string
	if len(messages) > 0 && isStandIn(&messages[0]) {
		pinned, first = parts[0], 1
	}
	// Leave out the oldest messages (after a pinned summary) until the rest fits.
	omitted := 0
	for total > limit && first+omitted < len(parts)-1 {
		total -= len(parts[first+omitted])
		omitted++
	}
	var b strings.Builder
	b.WriteString(pinned)
	if omitted > 0 {
		fmt.Fprintf(&b, "[%d older messages left out]\n\n", omitted)
	}
	for _, p := range parts[first+omitted:] {
		b.WriteString(p)
	}
	return b.String()
}

func renderMessage(m *conversation.Message) string {
	var b strings.Builder
	label := string(m.Role)
	switch {
	case m.Flags.Has(conversation.FlagCompactSummary):
		label = "earlier summary"
	case m.Flags.Has(conversation.FlagTruncationNotice):
		label = "notice"
	}
	fmt.Fprintf(&b, "[%s]\n", label)
	for i := range m.Blocks {
		renderBlock(&b, &m.Blocks[i])
	}
	b.WriteString("\n")
	return b.String()
}

func renderBlock(b *strings.Builder, blk *conversation.Block) {
	switch blk.Type {
	case conversation.BlockText:
		b.WriteString(blk.Text)
		b.WriteString("\n")
	case conversation.BlockThinking, conversation.BlockRedactedThinking:
		// Left out on purpose.
	case conversation.BlockToolUse:
		args := blk.Arguments
		if args == "" {
			args = string(blk.Input)
		}
		fmt.Fprintf(b, "(tool call %s id=%s) %s\n", blk.ToolName, blk.ToolUseID, cut(args, maxBlockBytes))
	case conversation.BlockToolResult:
		status := "result"
		if blk.IsError {
			status = "error"
		}
		fmt.Fprintf(b, "(tool %s id=%s) ", status, blk.ToolUseID)
		var out strings.Builder
		out.WriteString(blk.Text)
		for i := range blk.Content {
			renderBlock(&out, &blk.Content[i])
		}
		b.WriteString(cut(strings.TrimRight(out.String(), "\n"), maxBlockBytes))
		b.WriteString("\n")
	case conversation.BlockImage, conversation.BlockDocument:
		fmt.Fprintf(b, "(%s", blk.Type)
		if blk.Media != nil && blk.Media.Title != "" {
			fmt.Fprintf(b, " %q", blk.Media.Title)
		}
		b.WriteString(")\n")
	default:
		fmt.Fprintf(b, "(%s block)\n", blk.Type)
	}
}

// cut shortens s to about n bytes, at a rune boundary, saying how much was left out.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := n
	for end > 0 && !isRuneStart(s[end]) {
		end--
	}
	return fmt.Sprintf("%s… [%d more bytes]", s[:end], len(s)-end)
}
