// Package render turns conversations and Conversation objects into what kubectl parley prints:
// a conversation as a person reads it, the describe page, the context bar and human durations. It is pure:
// values in, text out, no clients and no clock of its own (now is a parameter).
package render

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parley-dev/parley/pkg/conversation"
)

// Options say how much of a conversation to show.
type Options struct {
	// Full unfolds tool calls, tool results and thinking: without it each is one line.
	Full bool
	// Location is the zone message times are shown in (UTC when nil).
	Location *time.Location
	// Width bounds a folded line, in characters (default 100).
	Width int
}

func (o Options) width() int {
	if o.Width <= 0 {
		return 100
	}
	return o.Width
}

// ConversationHeader is what the first line of Conversation's output says about the conversation.
type ConversationHeader struct {
	Namespace, Name, SessionID string
	Epoch                      uint64
	// Tokens is the context the history costs, as the Session API counts it.
	Tokens int
}

// Conversation writes a conversation as a person reads it: the system prompt, then each
// message with its role, model, time and token usage, turn by turn; tool calls and results
// folded to one line each unless opts.Full; subagent threads indented under the tool call
// that started them (threads no call names come last).
func Conversation(w io.Writer, h ConversationHeader, s *conversation.State, opts Options) error {
	p := &printer{w: terminalText{w}, opts: opts}
	turns := 0
	for i := range s.Messages {
		turns = max(turns, s.Messages[i].Turn)
	}
	p.linef("", "Conversation %s/%s · session %s · epoch %d · %s · %s · %s tokens",
		h.Namespace, h.Name, orDash(h.SessionID), h.Epoch,
		plural(len(s.Messages), "message"), plural(turns, "turn"), Count(int64(h.Tokens)))
	if s.System != nil {
		p.line("", "")
		p.line("", "system")
		p.text("  ", s.System.Text())
	}
	threads := subagentsByCall(s.Subagents)
	p.thread("", s.Messages, threads, true)
	for i := range s.Subagents {
		if s.Subagents[i].ToolUseID == "" || !callsAny(s.Messages, s.Subagents[i].ToolUseID) {
			p.line("", "")
			p.subagent("", &s.Subagents[i])
		}
	}
	return p.err
}

// Message writes one message as Conversation does (for tail).
func Message(w io.Writer, m *conversation.Message, opts Options) error {
	p := &printer{w: terminalText{w}, opts: opts}
	p.message("", m, nil)
	return p.err
}

type printer struct {
	w    io.Writer
	opts Options
	err  error
}

func (p *printer) line(indent, s string) {
	if p.err != nil {
		return
	}
	_, p.err = io.WriteString(p.w, strings.TrimRight(indent+s, " ")+"\n")
}

func (p *printer) linef(indent, format string, args ...any) {
	p.line(indent, fmt.Sprintf(format, args...))
}

// text writes a block of text, every line indented; empty text writes nothing.
func (p *printer) text(indent, s string) {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return
	}
	for l := range strings.SplitSeq(s, "\n") {
		p.line(indent, l)
	}
}

func (p *printer) thread(indent string, msgs []conversation.Message, threads map[string]*conversation.Subagent, dividers bool) {
	turn := -1
	for i := range msgs {
		m := &msgs[i]
		if dividers && m.Turn != turn && m.Role != conversation.RoleTool {
			turn = m.Turn
			p.line(indent, "")
			p.line(indent, divider(fmt.Sprintf("turn %d", m.Turn)))
		}
		p.message(indent, m, threads)
	}
}

func divider(label string) string {
	return "── " + label + " " + strings.Repeat("─", max(3, 40-utf8.RuneCountInString(label)))
}

func (p *printer) message(indent string, m *conversation.Message, threads map[string]*conversation.Subagent) {
	p.line(indent, MessageHeader(m, p.opts.Location))
	body := indent + "  "
	for i := range m.Blocks {
		b := &m.Blocks[i]
		switch b.Type {
		case conversation.BlockText:
			p.text(body, b.Text)
		case conversation.BlockThinking:
			if p.opts.Full {
				p.line(body, "thinking:")
				p.text(body+"  ", b.Text)
			} else {
				p.line(body, fold("… thinking", b.Text, p.opts.width()))
			}
		case conversation.BlockRedactedThinking:
			p.line(body, "… thinking (redacted)")
		case conversation.BlockToolUse:
			p.toolUse(body, b)
			if sub, ok := threads[b.ToolUseID]; ok {
				p.subagent(body+"│ ", sub)
			}
		case conversation.BlockToolResult:
			p.toolResult(body, b)
		case conversation.BlockImage, conversation.BlockDocument:
			p.line(body, mediaLine(b))
		default:
			p.linef(body, "[%s block]", b.Type)
		}
	}
}

// MessageHeader is a message's first line: role, name, model, time, token usage, flags.
func MessageHeader(m *conversation.Message, loc *time.Location) string {
	parts := []string{string(m.Role)}
	if m.Name != "" {
		parts[0] += " (" + m.Name + ")"
	}
	if m.Model != "" {
		parts = append(parts, m.Model)
	}
	if !m.CreatedAt.IsZero() {
		if loc == nil {
			loc = time.UTC
		}
		parts = append(parts, m.CreatedAt.In(loc).Format("2006-01-02 15:04:05"))
	}
	if u := Usage(m.Usage); u != "" {
		parts = append(parts, u)
	}
	for _, f := range []struct {
		flag conversation.Flags
		name string
	}{
		{conversation.FlagCompactSummary, "compaction summary"},
		{conversation.FlagTruncationNotice, "truncation notice"},
		{conversation.FlagToolResultsCleared, "tool results cleared"},
		{conversation.FlagMeta, "meta"},
		{conversation.FlagSynthetic, "synthetic"},
	} {
		if m.Flags.Has(f.flag) {
			parts = append(parts, f.name)
		}
	}
	return strings.Join(parts, " · ")
}

// Usage is a message's provider-reported token usage, e.g. "in 1,204 · out 56 · cache read 900";
// empty when none was reported.
func Usage(u conversation.Usage) string {
	if u.IsZero() {
		return ""
	}
	var parts []string
	for _, f := range []struct {
		n    int64
		name string
	}{{u.Input, "in"}, {u.Output, "out"}, {u.CacheRead, "cache read"}, {u.CacheWrite, "cache write"}} {
		if f.n != 0 {
			parts = append(parts, f.name+" "+Count(f.n))
		}
	}
	return "tokens " + strings.Join(parts, " · ")
}

func (p *printer) toolUse(indent string, b *conversation.Block) {
	args := string(b.Input)
	if b.Arguments != "" {
		args = b.Arguments
	}
	if p.opts.Full {
		p.linef(indent, "▸ %s [%s]", b.ToolName, b.ToolUseID)
		p.text(indent+"  ", args)
		return
	}
	p.line(indent, fold("▸ "+b.ToolName, oneLine(args), p.opts.width()))
}

func (p *printer) toolResult(indent string, b *conversation.Block) {
	label := "◂ result"
	if b.IsError {
		label = "◂ error"
	}
	out := b.Text
	if out == "" {
		var parts []string
		for i := range b.Content {
			if b.Content[i].Type == conversation.BlockText {
				parts = append(parts, b.Content[i].Text)
			} else {
				parts = append(parts, "["+string(b.Content[i].Type)+"]")
			}
		}
		out = strings.Join(parts, "\n")
	}
	if p.opts.Full {
		p.linef(indent, "%s [%s]", label, b.ToolUseID)
		p.text(indent+"  ", out)
		return
	}
	p.line(indent, fold(label, oneLine(out), p.opts.width()))
}

func (p *printer) subagent(indent string, sub *conversation.Subagent) {
	name := sub.AgentID
	if name == "" {
		name = sub.ToolUseID
	}
	head := "subagent " + name
	if sub.Description != "" {
		head += " · " + sub.Description
	}
	if sub.Status != "" {
		head += " · " + string(sub.Status)
	}
	head += " · " + plural(len(sub.Messages), "message")
	p.line(indent, head)
	p.thread(indent, sub.Messages, subagentsByCall(sub.Subagents), false)
	for i := range sub.Subagents {
		if !callsAny(sub.Messages, sub.Subagents[i].ToolUseID) {
			p.subagent(indent+"│ ", &sub.Subagents[i])
		}
	}
}

func mediaLine(b *conversation.Block) string {
	s := "[" + string(b.Type)
	if b.Media != nil {
		for _, v := range []string{b.Media.Title, b.Media.MediaType, b.Media.URL, b.Media.FileID} {
			if v != "" {
				s += " " + v
			}
		}
	}
	return s + "]"
}

// fold is one line: label, then as much of text as fits in width, with its size when cut.
func fold(label, text string, width int) string {
	if text == "" {
		return label
	}
	size := " (" + Count(int64(utf8.RuneCountInString(text))) + " chars)"
	line := label + " " + text
	if utf8.RuneCountInString(line) <= width {
		return line
	}
	keep := max(0, width-utf8.RuneCountInString(label)-utf8.RuneCountInString(size)-2)
	r := []rune(text)
	return label + " " + string(r[:min(keep, len(r))]) + "…" + size
}

// oneLine joins lines with ⏎ and collapses runs of spaces, so a fold stays on one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\n", " ⏎ ")
	return strings.Join(strings.Fields(s), " ")
}

func subagentsByCall(subs []conversation.Subagent) map[string]*conversation.Subagent {
	out := map[string]*conversation.Subagent{}
	for i := range subs {
		if subs[i].ToolUseID != "" {
			out[subs[i].ToolUseID] = &subs[i]
		}
	}
	return out
}

func callsAny(msgs []conversation.Message, toolUseID string) bool {
	if toolUseID == "" {
		return false
	}
	for i := range msgs {
		for _, id := range msgs[i].ToolUseIDs() {
			if id == toolUseID {
				return true
			}
		}
	}
	return false
}
