package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/plugin/render"
	"github.com/parley-dev/parley/pkg/conversation"
)

func newSendCommand(o *Options) *cobra.Command {
	var wait, full bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "send CONVERSATION TEXT",
		Short: "Append a user message to a conversation; --wait prints the agent's answer",
		Long: `Append TEXT as a user message through the Session API (your token needs create on
conversations/history). The command returns as soon as the message is stored. An agent asleep
while idle (spec.agent.idle) is woken by it: a new pod resumes with the message in its bundle.
--wait then follows the conversation and prints the agent's messages, tool calls folded as
history shows them, until its answer (an assistant message that calls no tool), or --timeout.`,
		Example: `  kubectl parley send my-agent "Summarise the open issues"

  # Wait for the answer, waking the agent if it sleeps
  kubectl parley send my-agent "And the closed ones?" --wait --timeout 10m`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeConversations,
		RunE: func(cmd *cobra.Command, args []string) error {
			text := strings.TrimSpace(args[1])
			if text == "" {
				return errors.New("the message is empty: give the text to send as the second argument")
			}
			t, err := o.open(cmd.Context(), args[0], needAPI|mayKube)
			if err != nil {
				return err
			}
			return o.send(cmd.Context(), t, text, wait, timeout, render.Options{Full: full})
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "Print the agent's messages until its answer")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "How long --wait waits for the answer")
	cmd.Flags().BoolVar(&full, "full", false, "Unfold tool calls, tool results and thinking")
	return cmd
}

func (o *Options) send(ctx context.Context, t target, text string, wait bool, timeout time.Duration, opts render.Options) error {
	m := userMessage(text)
	seq, err := o.say(ctx, t, m)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(o.err(), "message %s appended to %s at sequence %d\n", m.ID, t, seq)
	if !wait {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = o.follow(wctx, t, seq, newIDSet(m.ID), true, func(m *conversation.Message) error {
		return render.Message(o.out(), m, opts)
	})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("no answer from the agent of %s within %s; the message is stored. "+
			"kubectl parley describe %s -n %s shows whether its pod runs; kubectl parley tail -f %s follows the answer",
			t, timeout, t.name, t.ns, t.name)
	}
	return err
}
