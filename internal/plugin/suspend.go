package plugin

import (
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newSuspendCommand is suspend (on) or resume (off): a merge patch of spec.suspend.
func newSuspendCommand(o *Options, on bool) *cobra.Command {
	verb, patch := "suspended", `{"spec":{"suspend":true}}`
	cmd := &cobra.Command{
		Use:   "suspend CONVERSATION",
		Short: "Stop a conversation's agent pod and keep everything (spec.suspend: true)",
		Long: `Set spec.suspend: the controller stops the agent pod (marked as stopped by Parley first, so the
deletion is no crash) and keeps the history, checkpoints and expiry as they are. Note that a
GitOps tool that owns the Conversation may set spec.suspend back.`,
		Example: `  kubectl parley suspend my-agent`,
	}
	if !on {
		verb, patch = "resumed", `{"spec":{"suspend":false}}`
		cmd.Use = "resume CONVERSATION"
		cmd.Short = "Let a suspended conversation's agent run again (spec.suspend: false)"
		cmd.Long = `Set spec.suspend back to false: the controller starts the agent pod again, with the resume bundle of the
history as it is now.`
		cmd.Example = `  kubectl parley resume my-agent`
	}
	pf := genericclioptions.NewPrintFlags(verb).WithTypeSetter(scheme)
	cmd.Args = cobra.ExactArgs(1)
	cmd.ValidArgsFunction = o.completeConversations
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		printer, err := pf.ToPrinter()
		if err != nil {
			return err
		}
		t, err := o.open(cmd.Context(), args[0], needKube)
		if err != nil {
			return err
		}
		conv, err := o.getConversation(cmd.Context(), t.kc, t)
		if err != nil {
			return err
		}
		if err := t.kc.Patch(cmd.Context(), conv, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			return kubeError(err, "patching conversation "+t.String())
		}
		return printer.PrintObj(conv, o.out())
	}
	pf.AddFlags(cmd)
	return cmd
}
