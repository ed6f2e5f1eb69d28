package scale

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/parley-dev/parley/test/support/managerproc"
	"github.com/parley-dev/parley/test/support/metricstext"
)

// managerProcess is the real manager binary running against envtest.
type managerProcess struct {
	*managerproc.Process
	metricsURL string
	logPath    string
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
	p, err := managerproc.Start(bin, args, []string{"KUBECONFIG=" + kubeconfig}, logPath)
	if err != nil {
		return nil, nil, err
	}
	return &managerProcess{Process: p, metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), logPath: logPath}, args, nil
}

// waitReady waits until the Conversation controller's workers run (its metrics appear).
func (m *managerProcess) waitReady(ctx context.Context, hc *http.Client) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-m.Exited():
			return fmt.Errorf("manager exited: %w (log %s)", m.Err(), m.logPath)
		default:
		}
		if ms, err := metricstext.Scrape(ctx, hc, m.metricsURL); err == nil &&
			ms.Sum("controller_runtime_max_concurrent_reconciles", "controller", "conversation") > 0 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("the manager's Conversation controller did not start within 2 minutes (log " + m.logPath + ")")
}

// stop sends SIGTERM, then SIGKILL after 15 s; it returns once the process is gone.
func (m *managerProcess) stop() { m.Stop(15 * time.Second) }
