package plugin

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/plugin/render"
	"github.com/parley-dev/parley/pkg/wire"
)

const formatText = "text"

func newHistoryCommand(o *Options) *cobra.Command {
	var format string
	var full bool
	cmd := &cobra.Command{
		Use:   "history CONVERSATION",
		Short: "Print a conversation's transcript, or its history in an export format",
		Long: `Print a conversation's history as a readable transcript: the system prompt, then each message
with its role, model, time and token usage, turn by turn. Tool calls, tool results and thinking
are folded to one line each (--full unfolds them); subagent threads are indented under the call
that started them. -o prints the history in an export format instead (see kubectl parley export).`,
		Example: `  # The transcript, tool calls folded
  kubectl parley history my-agent

  # Everything unfolded, in another namespace
  kubectl parley history my-agent -n team-a --full

  # The history as OpenAI chat messages, or as a Claude Code transcript
  kubectl parley history my-agent -o openai
  kubectl parley history my-agent -o claude > session.jsonl`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeConversations,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, append([]string{formatText}, exportFormats...)); err != nil {
				return err
			}
			t, err := o.open(cmd.Context(), args[0], needAPI)
			if err != nil {
				return err
			}
			st, err := t.api.State(cmd.Context(), t.ns, t.name)
			if err != nil {
				return o.apiError(err, t.ns, t.name)
			}
			if format == formatText {
				h := render.ConversationHeader{Namespace: t.ns, Name: t.name, SessionID: st.State.SessionID, Epoch: st.Epoch, Tokens: st.Tokens}
				return render.Conversation(o.out(), h, &st.State, render.Options{Full: full})
			}
			return o.printExport(st, format, exportOptions{sessionID: st.State.SessionID})
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", formatText, "Output format: text, or an export format (jsonl, json, claude, openai, opencode)")
	cmd.Flags().BoolVar(&full, "full", false, "Unfold tool calls, tool results and thinking")
	return cmd
}

// printExport writes a one-file export to stdout (for claude, the main transcript; the
// subagent files need export --dir).
func (o *Options) printExport(st *wire.StateResponse, format string, opts exportOptions) error {
	files, err := exportFiles(&st.State, format, opts)
	if err != nil {
		return err
	}
	if w := leftOut(&st.State, format); w != "" {
		_, _ = fmt.Fprintln(o.err(), "warning: "+w)
	}
	if len(files) > 1 {
		_, _ = fmt.Fprintf(o.err(), "warning: %d subagent transcript(s) not printed; kubectl parley export -o claude --dir DIR writes them all\n", len(files)-1)
	}
	if len(files) == 0 {
		return nil
	}
	return writeAll(o.out(), files[0].Content)
}
