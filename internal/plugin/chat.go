package plugin

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/plugin/render"
	"github.com/parley-dev/parley/pkg/conversation"
)

func newChatCommand(o *Options) *cobra.Command {
	var lines int
	var full bool
	cmd := &cobra.Command{
		Use:   "chat CONVERSATION",
		Short: "Talk with a conversation's agent in the terminal",
		Long: `An interactive session: the last messages first, then each line you type is appended as a user
message (Enter sends it) and the agent's messages are printed as they come, tool calls folded
as history shows them. A message to an agent asleep while idle (spec.agent.idle) wakes it.
Ctrl-D (end of input) leaves; the conversation and its agent go on without you.`,
		Example: `  kubectl parley chat my-agent

  # From a script: one message per line
  printf 'hello\nwhat changed?\n' | kubectl parley chat my-agent`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeConversations,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := o.open(cmd.Context(), args[0], needAPI|mayKube)
			if err != nil {
				return err
			}
			return o.chat(cmd.Context(), t, cmd.InOrStdin(), lines, render.Options{Full: full})
		},
	}
	cmd.Flags().IntVar(&lines, "lines", 3, "How many of the last messages to print first")
	cmd.Flags().BoolVar(&full, "full", false, "Unfold tool calls, tool results and thinking")
	return cmd
}

// chat prints the last messages, then follows the conversation while it appends every line of
// in as a user message, until in ends. Lines are appended one after the other; the agent's
// messages print as they come, never the user's own lines again.
func (o *Options) chat(ctx context.Context, t target, in io.Reader, lines int, opts render.Options) error {
	st, seen, err := o.printLast(ctx, t.api, t, lines, opts)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(o.err(), "chatting with %s: type a message and press Enter; Ctrl-D leaves\n", t)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	followed := make(chan error, 1)
	go func() {
		followed <- o.follow(ctx, t, st.Sequence, seen, false, func(m *conversation.Message) error {
			return render.Message(o.out(), m, opts)
		})
	}()
	typed := readLines(ctx, in)
	for {
		select {
		case err := <-followed:
			if ctx.Err() != nil {
				return nil // interrupted: the session ends there
			}
			return err
		case line, ok := <-typed:
			if !ok {
				return nil // Ctrl-D
			}
			if strings.TrimSpace(line) == "" {
				continue
			}
			m := userMessage(line)
			seen.add(m.ID)
			if _, err := o.say(ctx, t, m); err != nil {
				return err
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// readLines sends each line of in until it ends (the channel closes) or ctx ends.
func readLines(ctx context.Context, in io.Reader) <-chan string {
	out := make(chan string)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			select {
			case out <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
