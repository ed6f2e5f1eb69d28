package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
)

// answerBundle is the part of the resume bundle's conversation.json answer reads: the whole
// main thread, roles and text.
type answerBundle struct {
	State struct {
		Messages []conversation.Message `json:"messages"`
	} `json:"state"`
}

// answer stands in for an agent that talks with a person: it reads the resume bundle, answers
// the person's message the bundle ends with (the one that woke it, after an idle suspension),
// then follows the conversation and answers each new user message, until SIGTERM. Each answer
// says how many messages the agent knows, so a test sees it resumed with the whole
// conversation.
func answer(args []string) int {
	fs := flag.NewFlagSet("answer", flag.ExitOnError)
	_ = fs.Parse(args)

	dir := envOr("PARLEY_RESUME_DIR", "/var/run/parley")
	data, err := os.ReadFile(filepath.Join(dir, "conversation.json"))
	if err != nil {
		return fail("reading the resume bundle: %v", err)
	}
	var b answerBundle
	if err := json.Unmarshal(data, &b); err != nil {
		return fail("decoding conversation.json: %v", err)
	}
	api, err := parleyclient.FromEnvironment()
	if err != nil {
		return fail("configuring the Session API client: %v", err)
	}
	ns, name := os.Getenv("PARLEY_NAMESPACE"), os.Getenv("PARLEY_CONVERSATION")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	known := len(b.State.Messages)
	fmt.Printf("RESUME resume=%s attempt=%s bundleMessages=%d\n", os.Getenv("PARLEY_RESUME"), os.Getenv("PARLEY_RESUME_ATTEMPT"), known)
	var after uint64
	if known > 0 {
		last := b.State.Messages[known-1]
		after = uint64(last.Seq)
		if needsAnswer(&last) {
			if err := reply(ctx, api, ns, name, &last, known); err != nil {
				return fail("answering %s: %v", last.ID, err)
			}
		}
	}
	// Every message after the bundle's last counts, this agent's own answers included.
	err = api.Follow(ctx, ns, name, after, func(m conversation.Message) error {
		known++
		if !needsAnswer(&m) {
			return nil
		}
		return reply(ctx, api, ns, name, &m, known)
	})
	if ctx.Err() == nil { // not stopped by SIGTERM
		return fail("following the conversation: %v", err)
	}
	fmt.Println("STOP")
	return 0
}

// needsAnswer: a person's message (not a tool result, not this agent's own answer).
func needsAnswer(m *conversation.Message) bool {
	return m.Role == conversation.RoleUser && !m.HasToolResult()
}

// reply appends the answer to question, naming how many messages the agent knows with it.
func reply(ctx context.Context, api *parleyclient.Client, ns, name string, question *conversation.Message, known int) error {
	a := text("answer-"+question.ID, conversation.RoleAssistant,
		fmt.Sprintf("You said %q; I know %d messages of this conversation.", question.Text(), known))
	resp, err := api.Append(ctx, ns, name, []conversation.Message{a})
	if err != nil {
		return err
	}
	// The id only: the e2e tier matches it, and no content goes to logs.
	fmt.Printf("ANSWER %s seq=%d\n", a.ID, resp.Sequences[0])
	return nil
}
