package compact

import (
	"fmt"
	"reflect"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/conversation/tokens"
)

// byteTokens counts one token per byte, so that expectations can be worked out by hand.
type byteTokens struct{}

func (byteTokens) Name() string              { return "bytes" }
func (byteTokens) CountText(text string) int { return len(text) }

func byteCounter() tokens.Counter { return tokens.NewMessageCounter(byteTokens{}) }

// conv builds messages with increasing Seq; ids are "m<seq>".
type conv struct {
	system   *conversation.Message
	messages []conversation.Message
}

func newConv() *conv {
	return &conv{system: &conversation.Message{
		ID: "sys", Role: conversation.RoleSystem,
		Blocks: []conversation.Block{{Type: conversation.BlockText, Text: "You are a careful agent."}},
	}}
}

func (c *conv) add(role conversation.Role, blocks ...conversation.Block) *conv {
	seq := int64(len(c.messages) + 1)
	c.messages = append(c.messages, conversation.Message{ID: fmt.Sprintf("m%d", seq), Seq: seq, Role: role, Blocks: blocks})
	return c
}

func (c *conv) user(text string) *conv { return c.add(conversation.RoleUser, textBlock(text)) }

func (c *conv) assistant(text string) *conv {
	return c.add(conversation.RoleAssistant, textBlock(text))
}

// call adds an assistant message calling a tool for every id.
func (c *conv) call(ids ...string) *conv {
	blocks := make([]conversation.Block, 0, 1+len(ids))
	blocks = append(blocks, textBlock("calling tools"))
	for _, id := range ids {
		blocks = append(blocks, conversation.Block{Type: conversation.BlockToolUse, ToolUseID: id, ToolName: "read", Input: []byte(`{"path":"/etc/hosts"}`)})
	}
	return c.add(conversation.RoleAssistant, blocks...)
}

// result adds a tool message answering every id with output.
func (c *conv) result(output string, ids ...string) *conv {
	blocks := make([]conversation.Block, 0, len(ids))
	for _, id := range ids {
		blocks = append(blocks, conversation.Block{Type: conversation.BlockToolResult, ToolUseID: id, Text: output})
	}
	return c.add(conversation.RoleTool, blocks...)
}

func (c *conv) state() *conversation.State {
	s := conversation.NewState("session")
	s.System = c.system
	s.Messages = c.messages
	return &s
}

func textBlock(s string) conversation.Block {
	return conversation.Block{Type: conversation.BlockText, Text: s}
}

func ids(messages []conversation.Message) []string {
	out := make([]string, len(messages))
	for i := range messages {
		out[i] = messages[i].ID
	}
	return out
}

// cloneState deep-copies what the strategies could touch, to check they did not.
func cloneState(s *conversation.State) *conversation.State {
	out := *s
	if s.System != nil {
		sys := cloneMessage(*s.System)
		out.System = &sys
	}
	if s.Messages == nil {
		return &out
	}
	out.Messages = make([]conversation.Message, len(s.Messages))
	for i := range s.Messages {
		out.Messages[i] = cloneMessage(s.Messages[i])
	}
	return &out
}

func cloneMessage(m conversation.Message) conversation.Message {
	m.Blocks = cloneBlocks(m.Blocks)
	return m
}

func cloneBlocks(blocks []conversation.Block) []conversation.Block {
	if blocks == nil {
		return nil
	}
	out := make([]conversation.Block, len(blocks))
	for i, b := range blocks {
		b.Content = cloneBlocks(b.Content)
		out[i] = b
	}
	return out
}

func equalStates(a, b *conversation.State) bool { return reflect.DeepEqual(a, b) }

func equalBlocks(a, b []conversation.Block) bool { return reflect.DeepEqual(a, b) }
