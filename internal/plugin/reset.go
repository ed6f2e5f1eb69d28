package plugin

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/pkg/wire"
)

func newResetCommand(o *Options) *cobra.Command {
	var keepSystem bool
	cmd := &cobra.Command{
		Use:   "reset CONVERSATION",
		Short: "Clear a conversation's history (POST …/reset), after a Checkpoint that keeps it",
		Long: `Clear the conversation's history through the Session API's reset: a Reset Checkpoint keeps the
history first, then the conversation starts a new epoch, empty (or with its system prompt:
--keep-system). Needs delete on conversations/history (conversation-editor-role). A manager
older than the reset endpoint answers that it does not exist; nothing changes then, and
kubectl parley says so.`,
		Example: `  # Start over, keeping the system prompt
  kubectl parley reset my-agent --keep-system`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeConversations,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := o.open(cmd.Context(), args[0], needAPI)
			if err != nil {
				return err
			}
			res, err := t.api.Reset(cmd.Context(), t.ns, t.name, wire.ResetRequest{KeepSystem: keepSystem})
			if noEndpoint(err) {
				return fmt.Errorf("this Parley's Session API has no reset (it answered %v); nothing was changed. "+
					"Upgrade the manager, or start over with a new conversation (kubectl parley rewind %s TURN keeps the turns you want)",
					err, t.name)
			}
			if err != nil {
				return o.apiError(err, t.ns, t.name)
			}
			msg := fmt.Sprintf("conversation.parley.dev/%s reset: %d message(s) cleared, epoch %d", t.name, res.Cleared, res.Epoch)
			if res.Kept > 0 {
				msg += fmt.Sprintf(", %d kept (appended while the checkpoint was taken)", res.Kept)
			}
			if res.Checkpoint != "" {
				msg += "; the history before it is in checkpoint " + res.Checkpoint +
					" (kubectl parley fork " + res.Checkpoint + " NEW-NAME brings it back)"
			}
			_, err = fmt.Fprintln(o.out(), msg)
			return err
		},
	}
	cmd.Flags().BoolVar(&keepSystem, "keep-system", false, "Keep the system prompt")
	return cmd
}

// noEndpoint reports an answer that says the Session API has no such endpoint (an older
// manager): its router's 404, or a 405.
func noEndpoint(err error) bool {
	var p *wire.Problem
	if !errors.As(err, &p) {
		return false
	}
	return p.Status == http.StatusMethodNotAllowed ||
		p.Status == http.StatusNotFound && strings.HasPrefix(p.Detail, "no such endpoint")
}
