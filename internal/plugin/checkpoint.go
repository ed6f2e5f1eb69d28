package plugin

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/plugin/render"
	"github.com/parley-dev/parley/pkg/wire"
)

func newCheckpointCommand(o *Options) *cobra.Command {
	pf := genericclioptions.NewPrintFlags("created").WithTypeSetter(scheme)
	var name string
	var turn int64
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "checkpoint CONVERSATION",
		Short: "Take a Manual Checkpoint of a conversation, now or at a turn",
		Long: `Ask the Session API for a Manual Checkpoint of the conversation: an immutable snapshot at the
latest complete turn, or at --turn. The controller writes and verifies the snapshot; --wait
waits until it is Ready. Needs create on conversations/history and on checkpoints.`,
		Example: `  # A checkpoint at the latest complete turn, named by the server
  kubectl parley checkpoint my-agent

  # At turn 3, with a name, and wait until its snapshot is written
  kubectl parley checkpoint my-agent --turn 3 --name before-refactor --wait`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeConversations,
		RunE: func(cmd *cobra.Command, args []string) error {
			printer, err := pf.ToPrinter()
			if err != nil {
				return err
			}
			t, err := o.open(cmd.Context(), args[0], needKube|needAPI)
			if err != nil {
				return err
			}
			req := wire.CheckpointRequest{Name: name}
			if cmd.Flags().Changed("turn") {
				req.Turn = &turn
			}
			created, err := t.api.Checkpoint(cmd.Context(), t.ns, t.name, req)
			if err != nil {
				return o.apiError(err, t.ns, t.name)
			}
			ck := &parleyv1alpha1.Checkpoint{}
			if wait {
				if ck, err = waitCheckpoint(cmd.Context(), t.kc, t.ns, created, timeout); err != nil {
					return err
				}
			} else if err := t.kc.Get(cmd.Context(), client.ObjectKey{Namespace: t.ns, Name: created}, ck); err != nil {
				return kubeError(err, "checkpoint "+t.ns+"/"+created)
			}
			if err := printer.PrintObj(ck, o.out()); err != nil {
				return err
			}
			if wait && *pf.OutputFormat == "" {
				_, err = fmt.Fprintf(o.out(), "  ready at turn %d: %s messages, %s tokens, %s\n",
					ck.Status.Turn, render.Count(ck.Status.Messages), render.Count(ck.Status.Tokens), ck.Status.Digest)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "Name of the Checkpoint (default: generated from the conversation's name)")
	cmd.Flags().Int64Var(&turn, "turn", 0, "Turn to snapshot (default: the latest complete turn)")
	cmd.Flags().BoolVar(&wait, "wait", false, "Wait until the snapshot is written and verified (phase Ready)")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "How long --wait waits")
	pf.AddFlags(cmd)
	return cmd
}
