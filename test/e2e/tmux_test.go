//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// tmuxSession is one command in a real terminal: a tmux pane on a server of its own (its own
// socket), so the spec neither sees nor touches anyone's tmux. The pane stays after the
// command exits (remain-on-exit), so its last screen can be read. The exit status is written
// by the pane's shell to a file: tmux 3.3 sometimes leaves the exited command a zombie it never
// reaps, and then #{pane_dead_status} stays empty.
type tmuxSession struct {
	socket, conf, status string
}

const tmuxTarget = "e2e"

// newTmux skips the spec when tmux is not installed, and kills its server when the spec ends.
func newTmux() *tmuxSession {
	if _, err := exec.LookPath("tmux"); err != nil {
		Skip("tmux is not installed, so kubectl parley chat cannot be run in a real terminal: apt-get install -y tmux")
	}
	dir := GinkgoT().TempDir()
	// The server reads conf when it starts, before the session's command runs.
	t := &tmuxSession{
		socket: filepath.Join(dir, "tmux.sock"), conf: filepath.Join(dir, "tmux.conf"),
		status: filepath.Join(dir, "exit-status"),
	}
	Expect(os.WriteFile(t.conf, []byte("set -g remain-on-exit on\nset -g history-limit 5000\n"), 0o600)).To(Succeed())
	DeferCleanup(func() {
		GinkgoWriter.Printf("the terminal at the end:\n%s\n", t.screen())
		_ = exec.Command("tmux", "-S", t.socket, "kill-server").Run()
	})
	return t
}

// start runs argv in a new 200×50 pane with env; the pane's shell then writes its exit status.
func (t *tmuxSession) start(env []string, argv ...string) {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	cmd := exec.Command("tmux", "-S", t.socket, "-f", t.conf, "new-session", "-d", "-s", tmuxTarget, "-x", "200", "-y", "50",
		strings.Join(quoted, " ")+"; echo $? > "+shellQuote(t.status))
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "tmux new-session: %s", out)
}

func (t *tmuxSession) tmux(args ...string) {
	out, err := exec.Command("tmux", append([]string{"-S", t.socket}, args...)...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "tmux %s: %s", strings.Join(args, " "), out)
}

// typeLine types line and presses Enter, as a person at the keyboard.
func (t *tmuxSession) typeLine(line string) {
	t.tmux("send-keys", "-t", tmuxTarget, "-l", line)
	t.tmux("send-keys", "-t", tmuxTarget, "Enter")
}

// ctrlD presses Ctrl-D (end of input at the start of a line).
func (t *tmuxSession) ctrlD() {
	t.tmux("send-keys", "-t", tmuxTarget, "C-d")
}

// screen is the pane's whole content, its scrollback included, wrapped lines joined.
func (t *tmuxSession) screen() string {
	out, err := exec.Command("tmux", "-S", t.socket, "capture-pane", "-p", "-J", "-S", "-", "-t", tmuxTarget).CombinedOutput()
	if err != nil {
		return "(no pane: " + err.Error() + ": " + string(out) + ")"
	}
	return string(out)
}

// waitFor waits until the pane shows text.
func (t *tmuxSession) waitFor(ctx context.Context, text string) {
	Eventually(t.screen).WithContext(ctx).WithTimeout(podTimeout).WithPolling(poll).Should(ContainSubstring(text))
}

// exitStatus waits for the pane's command to exit and returns its exit status.
func (t *tmuxSession) exitStatus(ctx context.Context) int {
	var status int
	Eventually(func(g Gomega) {
		b, err := os.ReadFile(t.status)
		g.Expect(err).NotTo(HaveOccurred(), "the command still runs")
		status, err = strconv.Atoi(strings.TrimSpace(string(b)))
		g.Expect(err).NotTo(HaveOccurred(), "the shell is writing the status")
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
	return status
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
