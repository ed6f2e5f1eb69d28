//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// managerProcess is the manager built from ./cmd/manager, run as a host process against the
// local cluster the way `make run-local` runs it. The same binary, log and Session API address
// serve every start, so a spec can kill it and start another (a manager restart): agent pods
// made by the first keep the API URL they were given.
type managerProcess struct {
	bin, kubeconfig, logPath string
	// apiAddr is the Session API's address on the pod network's bridge (host:port).
	apiAddr string

	starts int
	cmd    *exec.Cmd
	exited chan error
	log    *os.File
}

// buildManager builds ./cmd/manager and picks the Session API's address; start runs it.
func buildManager(ctx context.Context, kubeconfig string) *managerProcess {
	bin := filepath.Join(GinkgoT().TempDir(), "manager")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/manager")
	build.Dir, build.Stdout, build.Stderr = repoRoot, GinkgoWriter, GinkgoWriter
	Expect(build.Run()).To(Succeed())

	logDir, err := localCluster(ctx, "logs")
	Expect(err).NotTo(HaveOccurred())
	// The Session API listens on the pod network's bridge address so agent pods reach it, in
	// plain HTTP (a local run: --session-api-insecure); a free port, kept across restarts.
	probe, err := net.Listen("tcp", bridgeAddress+":0")
	Expect(err).NotTo(HaveOccurred())
	addr := probe.Addr().String()
	Expect(probe.Close()).To(Succeed())
	return &managerProcess{bin: bin, kubeconfig: kubeconfig, logPath: filepath.Join(logDir, "e2e-manager.log"), apiAddr: addr}
}

// start runs the manager; its output is appended to e2e-manager.log.
func (m *managerProcess) start() {
	Expect(m.cmd).To(BeNil(), "the manager is already running")
	// The first start of a suite run truncates the log; a restart appends to it.
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if m.starts == 0 {
		flags |= os.O_TRUNC
	}
	m.starts++
	logFile, err := os.OpenFile(m.logPath, flags, 0o644)
	Expect(err).NotTo(HaveOccurred())
	_, _ = fmt.Fprintf(logFile, "==== e2e: manager started at %s\n", time.Now().UTC().Format(time.RFC3339Nano))
	// Leader election keeps this manager from fighting one that `make run-local` left running on
	// a cluster the suite reuses (it then waits for the lease); on the suite's own cluster it
	// leads at once. After a SIGKILL the next start waits for the dead one's lease to expire.
	cmd := exec.Command(m.bin, "--leader-elect", "--leader-election-namespace=kube-system",
		"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0",
		"--session-api-bind-address="+m.apiAddr, "--session-api-insecure", "--agent-api-url=http://"+m.apiAddr)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+m.kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Dies with the test process, even when `go test` times out and skips the cleanup.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	Expect(cmd.Start()).To(Succeed())
	GinkgoWriter.Printf("manager pid %d, log %s\n", cmd.Process.Pid, m.logPath)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	m.cmd, m.exited, m.log = cmd, exited, logFile
}

// stop ends the manager the way Kubernetes does: SIGTERM, then SIGKILL after 10 s.
func (m *managerProcess) stop() {
	m.end(syscall.SIGTERM, 10*time.Second)
}

// kill ends the manager at once with SIGKILL: no lease released, no status write finished, as
// when its node dies or the OOM killer takes it.
func (m *managerProcess) kill() {
	m.end(syscall.SIGKILL, 0)
}

func (m *managerProcess) end(sig syscall.Signal, grace time.Duration) {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(sig)
	var err error
	if sig == syscall.SIGKILL {
		err = <-m.exited
	} else {
		select {
		case err = <-m.exited:
		case <-time.After(grace):
			_ = m.cmd.Process.Kill()
			err = <-m.exited
		}
	}
	GinkgoWriter.Printf("manager pid %d ended (%s): %v\n", m.cmd.Process.Pid, sig, err)
	_, _ = fmt.Fprintf(m.log, "==== e2e: manager ended by %s at %s: %v\n", sig, time.Now().UTC().Format(time.RFC3339Nano), err)
	_ = m.log.Close()
	m.cmd, m.exited = nil, nil
}
