// Package plugin is kubectl parley: the commands an operator on call and an agent author use
// on Conversations — read the transcript, follow it, describe, checkpoint, fork, rewind,
// compact, reset, export, import, suspend and resume, send a message and chat. It reads and
// writes Conversation and Checkpoint objects with the user's kubeconfig, and histories through
// the Session API (see connect.go for how it reaches it). cmd/kubectl-parley only calls NewCommand.
package plugin

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/plugin/render"
)

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(parleyv1alpha1.AddToScheme(scheme))
}

// Options are what every command shares: the streams, the kubeconfig flags, the Session API
// flags and the clock.
type Options struct {
	Streams genericiooptions.IOStreams
	Config  *genericclioptions.ConfigFlags
	API     APIFlags
	// Now is the clock (describe's ages, expiry in human terms).
	Now func() time.Time
}

// NewCommand is kubectl parley with all its subcommands.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	// The controller-runtime client logs nothing we want; without a logger it warns that none is set.
	logf.SetLogger(logr.Discard())
	o := &Options{Streams: streams, Config: genericclioptions.NewConfigFlags(true), Now: time.Now}
	root := &cobra.Command{
		Use:   "kubectl-parley",
		Short: "Read, follow, checkpoint, fork and move Parley conversations",
		Long: `kubectl parley works on Parley Conversations: it reads their history through the Session API
with your own credentials (your RBAC applies) and their objects with your kubeconfig.

The Session API is reached through the API server by default (the aggregated group
session.parley.dev, with your kubeconfig as kubectl uses it: certificate, token or exec plugin);
--session-api-url connects directly with a token (a port-forward, a manager run on your
machine). See docs/kubectl-parley.md.`,
		Example: `  # The transcript of a conversation, tool calls folded
  kubectl parley history my-agent -n team-a

  # Follow it as the agent writes
  kubectl parley tail -f my-agent

  # Status, checkpoints, restarts, expiry and the context bar
  kubectl parley describe my-agent`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl parley"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	o.Config.AddFlags(root.PersistentFlags())
	o.API.AddFlags(root.PersistentFlags())

	root.AddCommand(
		newHistoryCommand(o), newTailCommand(o), newDescribeCommand(o),
		newCheckpointCommand(o), newForkCommand(o), newRewindCommand(o),
		newCompactCommand(o), newResetCommand(o),
		newExportCommand(o), newImportCommand(o),
		newSuspendCommand(o, true), newSuspendCommand(o, false),
		newSendCommand(o), newChatCommand(o),
		newVersionCommand(o),
	)
	// cobra's completion command, made now so it gets an example like every other command.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Example = completionExample
		}
	}
	return root
}

// completionExample shows both ways to complete: the plugin's own script, and kubectl's
// plugin completion (kubectl 1.26+ runs kubectl_complete-parley from PATH).
const completionExample = `  # bash, for kubectl-parley run on its own
  source <(kubectl parley completion bash)

  # For "kubectl parley <TAB>": kubectl calls kubectl_complete-parley from your PATH
  cat > ~/bin/kubectl_complete-parley <<'SH'
  #!/bin/sh
  exec kubectl-parley __complete "$@"
  SH
  chmod +x ~/bin/kubectl_complete-parley`

// Execute runs kubectl parley with args and returns the exit code, printing an error the way
// kubectl does.
func Execute(ctx context.Context, streams genericiooptions.IOStreams, args []string) int {
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		printError(streams.ErrOut, err)
		return 1
	}
	return 0
}

func printError(w io.Writer, err error) {
	msg := err.Error()
	if !strings.HasPrefix(msg, "error: ") {
		msg = "error: " + msg
	}
	_, _ = fmt.Fprintln(w, render.Printable(msg))
}

// namespace is the namespace the command works in: -n, else the kubeconfig context's.
func (o *Options) namespace() (string, error) {
	ns, _, err := o.Config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace from your kubeconfig: %w (pass -n NAMESPACE)", err)
	}
	return ns, nil
}

func (o *Options) out() io.Writer { return o.Streams.Out }
func (o *Options) err() io.Writer { return o.Streams.ErrOut }
