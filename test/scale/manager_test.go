package scale

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/parley-dev/parley/test/support/managerproc"
)

// managerProcess is the real manager binary running against envtest.
type managerProcess struct {
	cmd        *exec.Cmd
	metricsURL string
	logPath    string
	exited     chan struct{}
	exitErr    error
}

// buildManager compiles ./cmd/manager into dir, as `go build ./cmd/manager` does.
func buildManager(root, dir string) (string, error) {
	bin := filepath.Join(dir, "manager")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/manager")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/manager: %w\n%s", err, out)
	}
	return bin, nil
}

// startManager runs the manager with leader election and probes off and metrics on a
// loopback port over plain HTTP; extra flags come last and win.
func startManager(bin, kubeconfig, logPath string, extra []string) (*managerProcess, []string, error) {
	port, err := managerproc.FreePort()
	if err != nil {
		return nil, nil, err
	}
	args := append([]string{
		"--leader-elect=false",
		"--health-probe-bind-address=0",
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port),
		"--metrics-secure=false",
		"--session-api-bind-address=0", // no agents here; and no clash with another run's port
	}, extra...)
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The manager dies with the harness even when `go test -timeout` kills it without running defers.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, nil, err
	}
	m := &managerProcess{cmd: cmd, metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), logPath: logPath, exited: make(chan struct{})}
	go func() {
		m.exitErr = cmd.Wait()
		_ = logf.Close()
		close(m.exited)
	}()
	return m, args, nil
}

func (m *managerProcess) pid() int { return m.cmd.Process.Pid }

// waitReady waits until the Conversation controller's workers run (its metrics appear).
func (m *managerProcess) waitReady(ctx context.Context, hc *http.Client) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-m.exited:
			return fmt.Errorf("manager exited: %w (log %s)", m.exitErr, m.logPath)
		default:
		}
		if ms, err := scrape(ctx, hc, m.metricsURL); err == nil &&
			ms.sum("controller_runtime_max_concurrent_reconciles", "controller", "conversation") > 0 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("the manager's Conversation controller did not start within 2 minutes (log " + m.logPath + ")")
}

// stop sends SIGTERM, then SIGKILL after 15 s; it returns once the process is gone.
func (m *managerProcess) stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(15 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
}
