package plugin

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/parley-dev/parley/internal/plugin/render"
	"github.com/parley-dev/parley/pkg/wire"
)

func newRewindCommand(o *Options) *cobra.Command {
	pf := genericclioptions.NewPrintFlags("created").WithTypeSetter(scheme)
	var f forkOptions
	var to string
	cmd := &cobra.Command{
		Use:   "rewind CONVERSATION TURN",
		Short: "Go back to a turn: a Checkpoint at TURN, forked into a new conversation",
		Long: `Rewind a conversation to the end of TURN without losing anything: take a Manual Checkpoint at
TURN, wait until its snapshot is Ready, and fork it into a new Conversation (--to, default
CONVERSATION-turn-TURN) that continues from there with the same spec. The original
conversation and its history stay as they are (suspend it, or delete it, if it should not
go on). A turn not reached yet, or still waiting for a tool result, fails the Checkpoint.`,
		Example: `  # Continue my-agent from the end of turn 3, as my-agent-turn-3
  kubectl parley rewind my-agent 3

  # Name the new conversation and stop the original's agent
  kubectl parley rewind my-agent 3 --to my-agent-v2 && kubectl parley suspend my-agent`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeConversations,
		RunE: func(cmd *cobra.Command, args []string) error {
			printer, err := pf.ToPrinter()
			if err != nil {
				return err
			}
			turn, err := strconv.ParseInt(args[1], 10, 64)
			if err != nil || turn < 1 {
				return fmt.Errorf("TURN must be a turn number, 1 or more (kubectl parley history %s shows them), not %q", args[0], args[1])
			}
			t, err := o.target(args[0])
			if err != nil {
				return err
			}
			if to == "" {
				to = fmt.Sprintf("%s-turn-%d", t.name, turn)
			}
			kc, err := o.kube()
			if err != nil {
				return err
			}
			if _, err := o.getConversation(cmd.Context(), kc, t); err != nil {
				return err
			}
			api, err := o.sessionAPI(cmd.Context())
			if err != nil {
				return err
			}
			// A Checkpoint of a turn not reached yet would wait for it: refuse that here.
			sum, err := api.Conversation(cmd.Context(), t.ns, t.name)
			if err != nil {
				return o.apiError(err, t.ns, t.name)
			}
			if turn > int64(sum.Turns) {
				return fmt.Errorf("%s has %d turn(s): rewind to one of 1..%d (kubectl parley history %s shows them)", t, sum.Turns, sum.Turns, t.name)
			}
			name, err := api.Checkpoint(cmd.Context(), t.ns, t.name, wire.CheckpointRequest{Turn: &turn})
			if err != nil {
				return o.apiError(err, t.ns, t.name)
			}
			ck, err := waitCheckpoint(cmd.Context(), kc, t.ns, name, f.timeout)
			if err != nil {
				return fmt.Errorf("rewinding %s to turn %d: %w", t, turn, err)
			}
			f.wait = true
			conv, err := o.fork(cmd.Context(), kc, t.ns, name, to, f)
			if err != nil {
				return fmt.Errorf("rewinding %s to turn %d (checkpoint %s is Ready; kubectl parley fork %s NEW-NAME retries): %w",
					t, turn, name, name, err)
			}
			if err := printer.PrintObj(conv, o.out()); err != nil {
				return err
			}
			if *pf.OutputFormat == "" {
				_, err = fmt.Fprintf(o.out(), "  %s rewound to turn %d through checkpoint %s (%s messages); %s is unchanged\n",
					t.name, ck.Status.Turn, name, render.Count(ck.Status.Messages), t.name)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "Name of the new conversation (default CONVERSATION-turn-TURN)")
	f.addFlags(cmd)
	_ = cmd.Flags().MarkHidden("wait") // rewind always waits: the fork needs the checkpoint
	pf.AddFlags(cmd)
	return cmd
}
