package plugin

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/plugin/render"
	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
)

func newTailCommand(o *Options) *cobra.Command {
	var lines int
	var follow, full bool
	cmd := &cobra.Command{
		Use:   "tail CONVERSATION",
		Short: "Print a conversation's last messages, and with -f follow new ones as they are appended",
		Long: `Print the last messages of a conversation's main thread. With -f, keep printing messages as
the agent appends them, until interrupted. A compaction starts a new epoch: tail says so and
goes on with the messages of the new epoch it has not printed yet (a compaction summary
appears as a new message).`,
		Example: `  # The last 10 messages
  kubectl parley tail my-agent

  # Follow the conversation, starting from the last 3 messages
  kubectl parley tail -f --lines 3 my-agent`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeConversations,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := o.open(cmd.Context(), args[0], needAPI)
			if err != nil {
				return err
			}
			return o.tail(cmd.Context(), t, lines, follow, render.Options{Full: full})
		},
	}
	cmd.Flags().IntVar(&lines, "lines", 10, "How many of the last messages to print first")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "Follow new messages as they are appended")
	cmd.Flags().BoolVar(&full, "full", false, "Unfold tool calls, tool results and thinking")
	return cmd
}

func (o *Options) tail(ctx context.Context, t target, lines int, follow bool, opts render.Options) error {
	st, seen, err := o.printLast(ctx, t.api, t, lines, opts)
	if err != nil || !follow {
		return err
	}
	err = o.follow(ctx, t, st.Sequence, seen, false, func(m *conversation.Message) error {
		return render.Message(o.out(), m, opts)
	})
	if ctx.Err() != nil {
		return nil //nolint:nilerr // interrupted (Ctrl-C): following ends there
	}
	return err
}

// printLast prints the last lines messages of the conversation's current epoch (all with a
// negative lines) and returns its state with every message of the epoch counted as seen,
// printed or not: after a compaction only what is new to this reader is printed.
func (o *Options) printLast(ctx context.Context, api *parleyclient.Client, t target, lines int, opts render.Options) (*wire.StateResponse, *idSet, error) {
	st, err := api.State(ctx, t.ns, t.name)
	if err != nil {
		return nil, nil, o.apiError(err, t.ns, t.name)
	}
	seen := newIDSet()
	for i := range st.State.Messages {
		seen.add(st.State.Messages[i].ID)
	}
	msgs := st.State.Messages
	if lines >= 0 && len(msgs) > lines {
		msgs = msgs[len(msgs)-lines:]
	}
	for i := range msgs {
		if err := render.Message(o.out(), &msgs[i], opts); err != nil {
			return nil, nil, err
		}
	}
	return st, seen, nil
}
