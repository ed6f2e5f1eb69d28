package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
)

// bundleManifest is the part of the resume bundle's conversation.json this agent reads.
type bundleManifest struct {
	SessionID string `json:"sessionId"`
	Attempt   int    `json:"attempt"`
	Resume    bool   `json:"resume"`
	Messages  int    `json:"messages"`
	Turns     int    `json:"turns"`
	State     struct {
		Messages []struct {
			ID string `json:"id"`
		} `json:"messages"`
	} `json:"state"`
}

// converse stands in for an agent that talks: it reads the mounted resume bundle, then appends
// one user and one assistant message per turn through the Session API with the pod's token,
// from the turn after the bundle's last one up to -turns, and exits 0. With -crash-at-turn it
// appends that turn's user message and then fails (the first pod only: PARLEY_RESUME_ATTEMPT 0),
// the way -crash says: exit 1, oom (allocate past the memory limit), or hang.
func converse(args []string) int {
	fs := flag.NewFlagSet("converse", flag.ExitOnError)
	turns := fs.Int("turns", 4, "turns the whole conversation has")
	crashAt := fs.Int("crash-at-turn", 0, "turn at which the first pod fails (0: never)")
	crash := fs.String("crash", "exit", "how to fail: exit (exit 1), oom (allocate until killed), hang")
	pause := fs.Duration("pause", 200*time.Millisecond, "wait between turns")
	_ = fs.Parse(args)

	dir := envOr("PARLEY_RESUME_DIR", "/var/run/parley")
	data, err := os.ReadFile(filepath.Join(dir, "conversation.json"))
	if err != nil {
		return fail("reading the resume bundle: %v", err)
	}
	var m bundleManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return fail("decoding conversation.json: %v", err)
	}
	last := ""
	if n := len(m.State.Messages); n > 0 {
		last = m.State.Messages[n-1].ID
	}
	// The line the e2e tier reads back from the pod's log.
	fmt.Printf("RESUME resume=%s attempt=%s checkpoint=%s bundleMessages=%d bundleTurns=%d last=%s\n",
		os.Getenv("PARLEY_RESUME"), os.Getenv("PARLEY_RESUME_ATTEMPT"), os.Getenv("PARLEY_CHECKPOINT"), m.Messages, m.Turns, last)

	api, err := parleyclient.FromEnvironment()
	if err != nil {
		return fail("configuring the Session API client: %v", err)
	}
	ns, name := os.Getenv("PARLEY_NAMESPACE"), os.Getenv("PARLEY_CONVERSATION")
	ctx := context.Background()
	firstPod := os.Getenv("PARLEY_RESUME_ATTEMPT") == "0"
	for turn := m.Turns + 1; turn <= *turns; turn++ {
		user := text("u"+strconv.Itoa(turn), conversation.RoleUser, fmt.Sprintf("question %d", turn))
		resp, err := api.Append(ctx, ns, name, []conversation.Message{user})
		if err != nil {
			return fail("appending turn %d: %v", turn, err)
		}
		fmt.Printf("APPEND %s seq=%d\n", user.ID, resp.Sequences[0])
		if turn == *crashAt && firstPod {
			fmt.Printf("CRASH %s at turn %d\n", *crash, turn)
			return crashNow(*crash)
		}
		reply := text("a"+strconv.Itoa(turn), conversation.RoleAssistant, fmt.Sprintf("answer %d", turn))
		resp, err = api.Append(ctx, ns, name, []conversation.Message{reply})
		if err != nil {
			return fail("appending turn %d: %v", turn, err)
		}
		fmt.Printf("APPEND %s seq=%d\n", reply.ID, resp.Sequences[0])
		time.Sleep(*pause)
	}
	fmt.Println("DONE")
	return 0
}

func text(id string, role conversation.Role, s string) conversation.Message {
	return conversation.Message{ID: id, Role: role, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: s}}}
}

func crashNow(how string) int {
	switch how {
	case "oom":
		for {
			b := make([]byte, 16<<20)
			for i := range b {
				b[i] = 1 // touch every page so the memory is really used
			}
			ballast = append(ballast, b)
		}
	case "hang":
		select {}
	default:
		return 1
	}
}

// ballast holds what -crash oom allocates, so the memory stays in use until the kernel kills us.
var ballast [][]byte

func fail(format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintln(os.Stderr, "parley-test-agent: "+msg)
	_ = os.WriteFile(terminationPath, []byte(msg), 0o644)
	return 2
}
