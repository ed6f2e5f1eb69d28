package plugin

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/plugin/render"
	"github.com/parley-dev/parley/pkg/conversation"
)

func newExportCommand(o *Options) *cobra.Command {
	var format, dir, file, cwd, sessionID string
	cmd := &cobra.Command{
		Use:   "export CONVERSATION",
		Short: "Write a conversation's history as neutral JSONL, a Claude Code transcript, OpenAI messages or an OpenCode export",
		Long: `Write a conversation's history in a format other tools read, with pkg/conversation's own
exporters (what an import kept is written back: docs/transcripts.md):

  jsonl     neutral: the system prompt, then one message per line (what spec.seed reads)
  json      the whole state: system prompt, messages, subagent threads, transcript records
  claude    Claude Code transcript; with --dir, every file in the CLI's layout under a
            CLAUDE_CONFIG_DIR (projects/<cwd>/<session>.jsonl and the subagents' files), so
            claude --resume <session> continues it from --cwd
  openai    an OpenAI chat completions messages array
  opencode  an OpenCode session export

The output goes to stdout, to -f FILE, or (claude) to the files under --dir. Control
characters, bidi controls and line separators in the history are written as \uXXXX escapes
in every format: the same text for every JSON reader, and nothing a terminal acts on.`,
		Example: `  # Neutral JSONL, to use as another Conversation's seed
  kubectl parley export my-agent > seed.jsonl

  # A Claude Code session you can resume locally
  kubectl parley export my-agent -o claude --dir ~/.claude --cwd "$PWD"
  claude --resume "$(kubectl get conv my-agent -o jsonpath='{.status.sessionID}')"

  # OpenAI messages into a file
  kubectl parley export my-agent -o openai -f messages.json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeConversations,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, exportFormats); err != nil {
				return err
			}
			if dir != "" && format != formatClaude {
				return fmt.Errorf("--dir is for -o claude (a CLAUDE_CONFIG_DIR); use -f FILE for %s", format)
			}
			if dir != "" && file != "" {
				return fmt.Errorf("give --dir or -f, not both")
			}
			t, err := o.open(cmd.Context(), args[0], needAPI)
			if err != nil {
				return err
			}
			st, err := t.api.State(cmd.Context(), t.ns, t.name)
			if err != nil {
				return o.apiError(err, t.ns, t.name)
			}
			opts := exportOptions{sessionID: st.State.SessionID, cwd: cwd}
			if sessionID != "" {
				opts.sessionID = sessionID
			}
			files, err := exportFiles(&st.State, format, opts)
			if err != nil {
				return err
			}
			if w := leftOut(&st.State, format); w != "" {
				_, _ = fmt.Fprintln(o.err(), "warning: "+w)
			}
			switch {
			case dir != "":
				return writeExportDir(o.out(), dir, files)
			case len(files) > 1:
				_, _ = fmt.Fprintf(o.err(), "warning: %d subagent transcript(s) not written; --dir DIR writes them all\n", len(files)-1)
			}
			if file != "" {
				return os.WriteFile(file, files[0].Content, 0o600)
			}
			return writeAll(o.out(), files[0].Content)
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", formatJSONL, "Format: jsonl, json, claude, openai or opencode")
	cmd.Flags().StringVar(&dir, "dir", "", "With -o claude: write every transcript file under this CLAUDE_CONFIG_DIR")
	cmd.Flags().StringVarP(&file, "file", "f", "", "Write to this file instead of stdout")
	cmd.Flags().StringVar(&cwd, "cwd", "", "claude, opencode: the working directory the session is resumed in (default: the one recorded)")
	cmd.Flags().StringVar(&sessionID, "session-id", "", "claude, opencode: the session id to write (default: the conversation's)")
	return cmd
}

// writeExportDir writes the files under dir and prints their paths. The paths hold the
// session and agent ids, which the history's writers chose: pkg/conversation refuses an id
// that is not one path component, and a path that would still leave dir is refused here
// before anything is written. A path is printed as text (render.Printable), as an id may
// hold control characters.
func writeExportDir(out io.Writer, dir string, files []conversation.ExportedFile) error {
	for _, f := range files {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) {
			return fmt.Errorf("the export would write %q outside --dir", f.Path)
		}
	}
	for _, f := range files {
		path := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, f.Content, 0o600); err != nil {
			return err
		}
		_, _ = fmt.Fprintln(out, render.Printable(path))
	}
	return nil
}
