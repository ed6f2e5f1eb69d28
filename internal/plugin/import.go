package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/plugin/render"
	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
)

// Request bounds of an import: under the Session API's 500 messages and 4 MiB per request.
const (
	importMaxBatch = 200
	importMaxBytes = 2 << 20
	// progressAt is the number of items from which --progress=auto shows a bar on a terminal.
	progressAt = 500
)

type importOptions struct {
	format, subagents, like, systemPrompt, sessionID, progress string
	noAgent, existing                                          bool
	timeout                                                    time.Duration
}

func newImportCommand(o *Options) *cobra.Command {
	pf := genericclioptions.NewPrintFlags("imported").WithTypeSetter(scheme)
	var io importOptions
	cmd := &cobra.Command{
		Use:   "import FILE NAME",
		Short: "Import a Claude Code or OpenCode transcript into a new conversation",
		Long: `Create the Conversation NAME and append the transcript in FILE to it through the Session API,
with your credentials: its messages in order (batched, with a progress bar on large files) and
its subagent threads as reducer events. Formats: a Claude Code / Agent SDK transcript (its
subagent files are read from <file without .jsonl>/subagents/ or --subagents), an OpenCode
export (opencode export), and kubectl parley export's jsonl and json. Each message keeps what
its importer kept of it (docs/transcripts.md); transcript lines that are no message and the
session's own fields have no Session API call yet and are reported as not carried.

The new conversation's spec is --like's (history backend, lifetime, context, agent) or a
ConfigMap history. One with an agent is created suspended and resumed once the transcript is
in, so the agent starts from the whole history. An import cut short is finished with the
same command and --existing: every message and event has its id, and what is stored already
is not stored twice.`,
		Example: `  # A Claude Code session, with its subagents
  kubectl parley import ~/.claude/projects/-home-me-repo/0b7e1a3c-5f2d-4c8e-9a41-6d2f0e8b7c15.jsonl my-session

  # An OpenCode export, into a conversation shaped like an existing one
  opencode export ses_123 > session.json
  kubectl parley import session.json my-session --like my-agent`,
		Args: cobra.ExactArgs(2),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return nil, cobra.ShellCompDirectiveDefault // a file
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			printer, err := pf.ToPrinter()
			if err != nil {
				return err
			}
			if err := checkFormat(io.format, importFormats); err != nil {
				return err
			}
			t, err := o.target(args[1])
			if err != nil {
				return err
			}
			tr, err := readImportFile(args[0], io.format, io.subagents)
			if err != nil {
				return err
			}
			for _, w := range tr.warnings {
				_, _ = fmt.Fprintln(o.err(), "warning: "+w)
			}
			conv, err := o.importTranscript(cmd.Context(), t, tr, io)
			if err != nil {
				return err
			}
			if err := printer.PrintObj(conv, o.out()); err != nil {
				return err
			}
			if *pf.OutputFormat != "" {
				return nil
			}
			s := &tr.state
			_, _ = fmt.Fprintf(o.out(), "  %s: %s messages, %d subagent thread(s) from %s%s\n", tr.format,
				render.Count(int64(len(s.Messages))), len(s.Subagents), args[0], subagentNote(tr.subagentFiles))
			if nc := notCarried(s); nc != "" && !tr.carried {
				_, _ = fmt.Fprintf(o.err(), "warning: not carried (this manager's Session API has no import: messages and events only): %s\n", nc)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&io.format, "format", importAuto, "Format of FILE: auto, claude, opencode, jsonl or json")
	f.StringVar(&io.subagents, "subagents", "", "claude: folder of the subagent transcripts (agent-<id>.jsonl)")
	f.StringVar(&io.like, "like", "", "Copy the spec (history backend, lifetime, context, agent) of this Conversation")
	f.BoolVar(&io.noAgent, "no-agent", false, "With --like: leave out spec.agent")
	f.BoolVar(&io.existing, "existing", false,
		"Append to the existing Conversation NAME instead of creating it (finishes an import cut short: what is stored already is not stored twice)")
	f.StringVar(&io.systemPrompt, "system-prompt", "", "System prompt of the new conversation (default: the transcript's, if it has one)")
	f.StringVar(&io.sessionID, "session-id", "", "Pin spec.sessionID (a UUID); default: the controller mints one")
	f.StringVar(&io.progress, "progress", "auto", "Progress bar on stderr: auto (a terminal and a large file), always or never")
	f.DurationVar(&io.timeout, "timeout", 2*time.Minute, "How long to wait for the new conversation's history")
	pf.AddFlags(cmd)
	return cmd
}

func subagentNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" and %d subagent file(s)", n)
}

// importSpec is the new conversation's spec: --like's (without what belongs to it alone), or
// a ConfigMap history; the system prompt given, or the transcript's.
func importSpec(like *parleyv1alpha1.ConversationSpec, s *conversation.State, io importOptions) parleyv1alpha1.ConversationSpec {
	spec := parleyv1alpha1.ConversationSpec{History: parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{}}}
	if like != nil {
		spec = *like.DeepCopy()
		spec.SessionID, spec.Seed, spec.ForkFrom, spec.Suspend = "", nil, nil, nil
		if io.noAgent {
			spec.Agent = nil
		}
	}
	spec.SessionID = io.sessionID
	switch {
	case io.systemPrompt != "":
		spec.SystemPrompt = &parleyv1alpha1.SystemPrompt{Text: io.systemPrompt}
	case s.System != nil && s.System.Text() != "":
		spec.SystemPrompt = &parleyv1alpha1.SystemPrompt{Text: s.System.Text()}
	}
	return spec
}

func (o *Options) importTranscript(ctx context.Context, t target, tr *importFile, io importOptions) (*parleyv1alpha1.Conversation, error) {
	kc, err := o.kube()
	if err != nil {
		return nil, err
	}
	api, err := o.sessionAPI(ctx)
	if err != nil {
		return nil, err
	}
	if io.existing {
		conv, err := o.getConversation(ctx, kc, t)
		if err != nil {
			return nil, err
		}
		carried, err := o.appendState(ctx, api, t, tr, io.progress)
		if err != nil {
			return nil, fmt.Errorf("%w; run it again to append the rest", err)
		}
		tr.carried = carried
		return conv, nil
	}
	var like *parleyv1alpha1.ConversationSpec
	if io.like != "" {
		src, err := o.getConversation(ctx, kc, target{ns: t.ns, name: io.like})
		if err != nil {
			return nil, err
		}
		like = &src.Spec
	}
	conv := &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: t.ns, Name: t.name},
		Spec:       importSpec(like, &tr.state, io),
	}
	// An agent must not start on half a history: suspended until the transcript is in.
	hold := conv.Spec.Agent != nil
	if hold {
		conv.Spec.Suspend = ptr.To(true)
	}
	if err := kc.Create(ctx, conv); err != nil {
		return nil, kubeError(err, "creating conversation "+t.String())
	}
	if conv, err = waitHistory(ctx, kc, t, io.timeout); err != nil {
		return nil, err
	}
	carried, err := o.appendState(ctx, api, t, tr, io.progress)
	if err != nil {
		return nil, fmt.Errorf("%w; conversation %s holds what was appended so far: the same import with --existing appends the rest", err, t)
	}
	tr.carried = carried
	if hold {
		if err := kc.Patch(ctx, conv, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))); err != nil {
			return nil, kubeError(err, "resuming conversation "+t.String()+" (kubectl parley resume "+t.name+" does it)")
		}
	}
	return conv, nil
}

// appendState appends the whole state through POST …/import, in parts that journal them as a
// seed or a fork is (records that are no message and the transcript's own fields included).
// Against a manager without that endpoint it falls back to messages and reducer events, and
// says so: carried is false then.
func (o *Options) appendState(ctx context.Context, api *parleyclient.Client, t target, tr *importFile, progress string) (carried bool, err error) {
	parts := importParts(&tr.state, importPartLimits)
	weight := func(p *conversation.State) int { return max(1, wire.ImportItems(p)) }
	total := 0
	for i := range parts {
		total += weight(&parts[i])
	}
	bar := o.progressBar(int64(total), progress)
	defer func() { _ = bar.Finish() }()
	for i := range parts {
		_, err := api.Import(ctx, t.ns, t.name, wire.ImportRequest{ID: tr.digest, Part: i, State: parts[i]})
		if i == 0 && noEndpoint(err) {
			return false, o.appendMessagesAndEvents(ctx, api, t, tr, bar)
		}
		if err != nil {
			return true, fmt.Errorf("importing part %d of %d: %w", i+1, len(parts), o.apiError(err, t.ns, t.name))
		}
		_ = bar.Add(weight(&parts[i]))
	}
	return true, nil
}

// appendMessagesAndEvents appends the main thread as messages and the subagent threads as the
// reducer events that rebuild them, in batches, with ids that make a repeated import a no-op.
func (o *Options) appendMessagesAndEvents(ctx context.Context, api *parleyclient.Client, t target, tr *importFile, bar *progressbar.ProgressBar) error {
	s := &tr.state
	msgs := make([]conversation.Message, len(s.Messages))
	for i := range s.Messages {
		msgs[i] = s.Messages[i]
		msgs[i].Seq, msgs[i].Turn = 0, 0 // the Session API numbers them
	}
	replay := conversation.Events(&conversation.State{Subagents: s.Subagents})
	events := make([]wire.Event, 0, len(replay))
	for i, e := range replay {
		// The file's digest in the id: the same file again is a no-op, another file's events are not.
		events = append(events, wire.Event{ID: fmt.Sprintf("import:%s:%d", tr.digest, i), Event: e})
	}
	bar.ChangeMax(len(msgs) + len(events))
	for _, b := range batches(len(msgs), importMaxBatch, importMaxBytes, func(i int) int { return jsonSize(&msgs[i]) }) {
		if _, err := api.Append(ctx, t.ns, t.name, msgs[b.start:b.end]); err != nil {
			return fmt.Errorf("appending messages %d-%d of %d: %w", b.start+1, b.end, len(msgs), o.apiError(err, t.ns, t.name))
		}
		_ = bar.Add(b.end - b.start)
	}
	for _, b := range batches(len(events), importMaxBatch, importMaxBytes, func(i int) int { return jsonSize(&events[i]) }) {
		if _, err := api.AppendEvents(ctx, t.ns, t.name, events[b.start:b.end]); err != nil {
			return fmt.Errorf("appending the subagent threads (events %d-%d of %d): %w", b.start+1, b.end, len(events), o.apiError(err, t.ns, t.name))
		}
		_ = bar.Add(b.end - b.start)
	}
	return nil
}

func jsonSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}

// progressBar is a bar on stderr for always, or for auto on a terminal with enough to do;
// otherwise one that writes nothing.
func (o *Options) progressBar(total int64, mode string) *progressbar.ProgressBar {
	show := mode == "always"
	if mode == "auto" && total >= progressAt {
		f, ok := o.err().(*os.File)
		show = ok && term.IsTerminal(int(f.Fd()))
	}
	w := io.Discard
	if show {
		w = o.err()
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("importing"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString("items"),
		progressbar.OptionShowIts(),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionOnCompletion(func() { _, _ = fmt.Fprintln(w) }),
	)
}
