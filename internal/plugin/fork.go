package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// forkOptions say how a fork differs from the conversation it comes from.
type forkOptions struct {
	noAgent, suspend bool
	wait             bool
	timeout          time.Duration
}

func (f *forkOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.noAgent, "no-agent", false, "Leave out spec.agent: the fork has a history but no agent pod")
	cmd.Flags().BoolVar(&f.suspend, "suspend", false, "Create the fork suspended (no agent pod until kubectl parley resume)")
	cmd.Flags().BoolVar(&f.wait, "wait", true, "Wait until the fork's history is available")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 2*time.Minute, "How long to wait")
}

// forkSpec is the spec of a fork of source from a Checkpoint: the same history backend,
// lifetime, context, checkpoint policy and agent (unless left out), with spec.forkFrom naming
// the Checkpoint and its conversation (so admission checks the right to read that one only)
// and what belongs to the source alone cleared: its pinned session id (the fork gets its own)
// and its seed (the snapshot is the fork's start).
func forkSpec(source *parleyv1alpha1.ConversationSpec, sourceName, checkpoint string, f forkOptions) parleyv1alpha1.ConversationSpec {
	spec := *source.DeepCopy()
	spec.SessionID = ""
	spec.Seed = nil
	spec.ForkFrom = &parleyv1alpha1.ForkSource{Checkpoint: checkpoint, Conversation: sourceName}
	if f.noAgent {
		spec.Agent = nil
	}
	if f.suspend {
		spec.Suspend = ptr.To(true)
	} else {
		spec.Suspend = nil
	}
	return spec
}

func newForkCommand(o *Options) *cobra.Command {
	pf := genericclioptions.NewPrintFlags("created").WithTypeSetter(scheme)
	var f forkOptions
	cmd := &cobra.Command{
		Use:   "fork CHECKPOINT NEW-NAME",
		Short: "Start a new conversation from a Checkpoint (spec.forkFrom)",
		Long: `Create the Conversation NEW-NAME as a copy of a Checkpoint: its spec is the checkpointed
conversation's (history backend, lifetime, context, checkpoint policy, agent), with
spec.forkFrom naming the Checkpoint. The controller starts its history from the verified
snapshot, under a session id of its own; the original conversation is not touched.`,
		Example: `  # Branch off a checkpoint, with the same agent
  kubectl parley fork my-agent-crash-1 my-agent-retry

  # A history-only copy to inspect or export, without an agent pod
  kubectl parley fork before-refactor my-agent-copy --no-agent`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeCheckpoints,
		RunE: func(cmd *cobra.Command, args []string) error {
			printer, err := pf.ToPrinter()
			if err != nil {
				return err
			}
			ns, err := o.namespace()
			if err != nil {
				return err
			}
			kc, err := o.kube()
			if err != nil {
				return err
			}
			conv, err := o.fork(cmd.Context(), kc, ns, args[0], args[1], f)
			if err != nil {
				return err
			}
			return printer.PrintObj(conv, o.out())
		},
	}
	f.addFlags(cmd)
	pf.AddFlags(cmd)
	return cmd
}

// fork creates the fork of a Checkpoint and, with f.wait, waits for its history.
func (o *Options) fork(ctx context.Context, kc client.Client, ns, checkpoint, name string, f forkOptions) (*parleyv1alpha1.Conversation, error) {
	ck := &parleyv1alpha1.Checkpoint{}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: checkpoint}, ck); err != nil {
		return nil, kubeError(err, "checkpoint "+ns+"/"+checkpoint)
	}
	source, err := o.getConversation(ctx, kc, target{ns: ns, name: ck.Spec.ConversationRef.Name})
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s/%s: %w (a fork needs the conversation whose store holds the snapshot)", ns, checkpoint, err)
	}
	conv := &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       forkSpec(&source.Spec, source.Name, checkpoint, f),
	}
	if err := kc.Create(ctx, conv); err != nil {
		return nil, kubeError(err, "creating conversation "+ns+"/"+name)
	}
	if !f.wait {
		return conv, nil
	}
	return waitHistory(ctx, kc, target{ns: ns, name: name}, f.timeout)
}
