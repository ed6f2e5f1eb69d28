package compact

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parley-dev/parley/pkg/conversation"
)

func TestSummaryInput(t *testing.T) {
	c := newConv()
	c.add(conversation.RoleSystem, textBlock("old summary text"))
	c.messages[0].Flags = conversation.FlagCompactSummary
	c.user("please read it")
	c.add(conversation.RoleAssistant,
		conversation.Block{Type: conversation.BlockThinking, Text: "private reasoning"},
		conversation.Block{Type: conversation.BlockRedactedThinking, Data: "opaque"},
		conversation.Block{Type: conversation.BlockToolUse, ToolUseID: "t1", ToolName: "write", Arguments: strings.Repeat("a", maxBlockBytes+10)})
	c.add(conversation.RoleTool,
		conversation.Block{Type: conversation.BlockToolResult, ToolUseID: "t1", IsError: true, Content: []conversation.Block{textBlock("disk full")}},
		conversation.Block{Type: conversation.BlockImage, Media: &conversation.MediaRef{Title: "chart"}},
		conversation.Block{Type: "server_tool_use", Raw: []byte(`{}`)})
	c.add(conversation.RoleSystem, textBlock(TruncationNotice))
	c.messages[4].Flags = conversation.FlagTruncationNotice

	got := summaryInput(c.messages, maxSummaryInputBytes)
	for _, want := range []string{
		"[earlier summary]\nold summary text\n",
		"[user]\nplease read it\n",
		"(tool call write id=t1) aaaa",
		"… [10 more bytes]",
		"(tool error id=t1) disk full\n",
		"(image \"chart\")",
		"(server_tool_use block)",
		"[notice]\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary input lacks %q:\n%s", want, got)
		}
	}
	for _, hidden := range []string{"private reasoning", "opaque"} {
		if strings.Contains(got, hidden) {
			t.Errorf("summary input shows thinking %q", hidden)
		}
	}
}

func TestRenderTranscriptLeavesOutTheOldest(t *testing.T) {
	c := newConv()
	c.add(conversation.RoleSystem, textBlock("the earlier summary"))
	c.messages[0].Flags = conversation.FlagCompactSummary
	for i := range 20 {
		c.user(strings.Repeat(string(rune('a'+i)), 100))
	}
	got := summaryInput(c.messages, 1000)
	if !strings.HasPrefix(got, "[earlier summary]\nthe earlier summary") {
		t.Errorf("the earlier summary is not kept first:\n%s", got)
	}
	if !strings.Contains(got, "older messages left out]") || !strings.Contains(got, strings.Repeat("t", 100)) || strings.Contains(got, strings.Repeat("a", 100)) {
		t.Errorf("want the newest messages and a note:\n%s", got)
	}
	if len(got) > 1100 {
		t.Errorf("summary input of %d bytes for a limit of 1000", len(got))
	}
}

func TestCutKeepsUTF8(t *testing.T) {
	s := strings.Repeat("ж", 10) // 20 bytes
	got := cut(s, 5)
	if !utf8.ValidString(got) || !strings.HasPrefix(got, "жж…") {
		t.Errorf("cut = %q", got)
	}
	if cut("short", 10) != "short" {
		t.Error("short string changed")
	}
}
