package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/plugin/render"
)

func newCompactCommand(o *Options) *cobra.Command {
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "compact CONVERSATION",
		Short: "Ask the controller to compact a conversation now",
		Long: `Ask for a compaction now, whatever the context's fill (the Session API records the request in the
annotation parley.dev/compact-requested-at). The controller takes a Compaction Checkpoint first,
then folds the history into a new epoch with spec.context.strategy. --wait waits until
status.lastCompaction reports it. A conversation with nothing to fold (fewer messages than
keepRecentMessages) is left as it is, and --wait then times out.`,
		Example: `  kubectl parley compact my-agent

  # Wait for the result: tokens before and after, messages folded
  kubectl parley compact my-agent --wait`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeConversations,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := o.open(cmd.Context(), args[0], needKube|needAPI)
			if err != nil {
				return err
			}
			if err := t.api.Compact(cmd.Context(), t.ns, t.name); err != nil {
				return o.apiError(err, t.ns, t.name)
			}
			conv, err := o.getConversation(cmd.Context(), t.kc, t)
			if err != nil {
				return err
			}
			requested, _ := time.Parse(time.RFC3339, conv.Annotations[parleyv1alpha1.AnnotationCompactRequestedAt])
			_, _ = fmt.Fprintf(o.out(), "conversation.parley.dev/%s compaction requested at %s\n", t.name, requested.UTC().Format(time.RFC3339))
			if !wait {
				return nil
			}
			lc, err := waitCompaction(cmd.Context(), o, t, requested, timeout)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(o.out(), "  compacted (%s): %s → %s tokens, %s messages folded, checkpoint %s\n",
				lc.Strategy, render.Count(lc.TokensBefore), render.Count(lc.TokensAfter), render.Count(lc.MessagesFolded), lc.Checkpoint)
			return err
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "Wait until status.lastCompaction reports the compaction")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "How long --wait waits")
	return cmd
}

// waitCompaction waits until the conversation records a compaction at or after requested.
func waitCompaction(ctx context.Context, o *Options, t target, requested time.Time, timeout time.Duration) (*parleyv1alpha1.CompactionRecord, error) {
	kc, err := o.kube()
	if err != nil {
		return nil, err
	}
	var lc *parleyv1alpha1.CompactionRecord
	err = waitUntil(ctx, timeout, "the compaction of "+t.String(), func(ctx context.Context) (bool, error) {
		conv, err := o.getConversation(ctx, kc, t)
		if err != nil {
			return false, err
		}
		lc = conv.Status.LastCompaction
		return lc != nil && lc.Time != nil && !lc.Time.Time.Before(requested), nil
	})
	return lc, err
}
