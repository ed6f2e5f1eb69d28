package plugin

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// The commands the issue asks for; the help must list each one, and each must have an example.
var wantCommands = []string{
	"history", "tail", "describe", "checkpoint", "fork", "rewind", "compact", "reset",
	"export", "import", "suspend", "resume", "send", "chat", "version", "completion",
}

func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Execute(context.Background(), genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return out.String(), errOut.String(), code
}

func TestHelpListsEveryCommandWithAnExample(t *testing.T) {
	out, _, code := run(t, "--help")
	if code != 0 {
		t.Fatalf("--help exited %d", code)
	}
	if !strings.Contains(out, "kubectl parley [command]") {
		t.Errorf("the help does not name the command as kubectl parley:\n%s", out)
	}
	listed := map[string]bool{}
	inList := false
	for l := range strings.SplitSeq(out, "\n") {
		switch {
		case strings.HasPrefix(l, "Available Commands:"):
			inList = true
		case inList && strings.TrimSpace(l) == "":
			inList = false
		case inList:
			listed[strings.Fields(l)[0]] = true
		}
	}
	for _, c := range wantCommands {
		if !listed[c] {
			t.Errorf("kubectl parley --help does not list %s:\n%s", c, out)
		}
	}

	root := NewCommand(genericiooptions.NewTestIOStreamsDiscard())
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			out, _, code := run(t, c.Name(), "--help")
			if code != 0 {
				t.Fatalf("%s --help exited %d", c.Name(), code)
			}
			ex := examples(out)
			if !strings.Contains(ex, "kubectl parley "+c.Name()) {
				t.Errorf("%s --help has no example running it:\n%s", c.Name(), out)
			}
			for _, sub := range c.Commands() { // completion bash|zsh|fish|powershell
				if sub.Example == "" && sub.Long == "" {
					t.Errorf("%s %s has neither an example nor a description", c.Name(), sub.Name())
				}
			}
		})
	}
}

// examples is the Examples section of a help text.
func examples(help string) string {
	_, rest, ok := strings.Cut(help, "Examples:\n")
	if !ok {
		return ""
	}
	section, _, _ := strings.Cut(rest, "\n\n"+"Flags:")
	return section
}

func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		out, _, code := run(t, "completion", shell)
		if code != 0 || !strings.Contains(out, "kubectl-parley") {
			t.Errorf("completion %s exited %d or does not complete kubectl-parley:\n%.300s", shell, code, out)
		}
	}
}

func TestArgumentErrorsSayWhatToDo(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"history"}, "accepts 1 arg(s), received 0"},
		{[]string{"history", "x", "-o", "yaml"}, `unknown output format "yaml": use one of text, jsonl, json, claude, openai, opencode`},
		{[]string{"export", "x", "-o", "text"}, `unknown output format "text": use one of jsonl, json, claude, openai, opencode`},
		{[]string{"export", "x", "-o", "openai", "--dir", "d"}, "--dir is for -o claude (a CLAUDE_CONFIG_DIR); use -f FILE for openai"},
		{[]string{"rewind", "x", "three"}, `TURN must be a turn number, 1 or more (kubectl parley history x shows them), not "three"`},
		{[]string{"rewind", "x", "0"}, "TURN must be a turn number"},
		{[]string{"import", "f.jsonl", "x", "--format", "csv"}, `unknown output format "csv": use one of auto, claude, opencode, jsonl, json`},
		{[]string{"version", "-o", "xml"}, `unknown output format "xml": use json or yaml`},
		{[]string{"checkpoint", "x", "-o", "table"}, `unable to match a printer suitable for the output format "table"`},
	}
	for _, c := range cases {
		_, errOut, code := run(t, c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) || !strings.HasPrefix(errOut, "error: ") {
			t.Errorf("%v: exit %d, stderr %q; want an error holding %q", c.args, code, errOut, c.want)
		}
	}
}

func TestVersion(t *testing.T) {
	out, _, code := run(t, "version")
	if code != 0 || !strings.HasPrefix(out, "kubectl-parley ") {
		t.Fatalf("version: exit %d, %q", code, out)
	}
	out, _, code = run(t, "version", "-o", "json")
	if code != 0 || !strings.Contains(out, `"version": `) || !strings.Contains(out, `"goVersion": "go`) {
		t.Fatalf("version -o json: exit %d, %q", code, out)
	}
}
