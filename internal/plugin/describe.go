package plugin

import (
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/plugin/render"
)

func newDescribeCommand(o *Options) *cobra.Command {
	printFlags := genericclioptions.NewJSONYamlPrintFlags()
	var output string
	cmd := &cobra.Command{
		Use:   "describe CONVERSATION",
		Short: "Show a conversation's status, checkpoints, restarts, last failure, expiry and context",
		Long: `Show what an operator on call needs about a conversation: phase and session, when it expires
(ttl, idle timeout, policy), the history's size, a context bar (tokens of maxTokens and where
compaction starts), the last compaction, the agent pod with its restarts and last failure, the
conditions, the Checkpoints and the latest events. -o json|yaml prints the Conversation object.`,
		Example: `  kubectl parley describe my-agent

  # The object itself
  kubectl parley describe my-agent -o yaml`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeConversations,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := o.open(cmd.Context(), args[0], needKube)
			if err != nil {
				return err
			}
			conv, err := o.getConversation(cmd.Context(), t.kc, t)
			if err != nil {
				return err
			}
			if output != "" {
				p, err := printFlags.ToPrinter(output)
				if err != nil {
					return err
				}
				return typed(p).PrintObj(conv, o.out())
			}
			var ckpts parleyv1alpha1.CheckpointList
			if err := t.kc.List(cmd.Context(), &ckpts, client.InNamespace(t.ns)); err != nil {
				return kubeError(err, "listing checkpoints in "+t.ns)
			}
			in := render.DescribeInput{Conversation: conv, Now: o.Now()}
			for _, k := range ckpts.Items {
				if k.Spec.ConversationRef.Name == t.name {
					in.Checkpoints = append(in.Checkpoints, k)
				}
			}
			// Events are a bonus: a user who may not list them still gets the rest.
			var events corev1.EventList
			if err := t.kc.List(cmd.Context(), &events, client.InNamespace(t.ns),
				client.MatchingFields{"involvedObject.kind": "Conversation", "involvedObject.name": t.name}); err == nil {
				for _, e := range events.Items {
					if e.InvolvedObject.Kind == "Conversation" && e.InvolvedObject.Name == t.name && e.InvolvedObject.UID == conv.UID {
						in.Events = append(in.Events, e)
					}
				}
			}
			return render.Describe(o.out(), in)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Print the Conversation object instead: json or yaml")
	return cmd
}
