// Package managerproc builds the manager binary (./cmd/manager) and runs it as a child process
// that a test can stop or SIGKILL and start again, the way a node loses a replica.
package managerproc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Build compiles ./cmd/manager of the repository at root into dir, as `go build` does.
func Build(root, dir string) (string, error) {
	bin := filepath.Join(dir, "manager")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/manager")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/manager: %w\n%s", err, out)
	}
	return bin, nil
}

// Process is one running manager.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Start runs bin with args and the extra environment env; its output is appended to logPath
// after a line saying when it started, so the starts of one replica share a log.
func Start(bin string, args, env []string, logPath string) (*Process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	_, _ = fmt.Fprintf(logf, "==== managerproc: started at %s\n", time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Dies with the test process, even when `go test -timeout` kills it without running defers.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, err
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.exited)
	}()
	return p, nil
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed once the process is gone; Err then says how it ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is how the process ended (valid once Exited is closed).
func (p *Process) Err() error { return p.err }

// Kill ends the process with SIGKILL (no shutdown, no lease released, connections cut) and
// waits until it is gone.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Stop sends SIGTERM and, after grace, SIGKILL; it returns once the process is gone.
func (p *Process) Stop(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.Kill()
	}
}

// FreePort returns a loopback port nobody listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ErrExited says a process ended while it was awaited.
var ErrExited = errors.New("managerproc: the manager exited")

// PeakRSS is the most resident memory the process has used so far (VmHWM of /proc/PID/status).
func (p *Process) PeakRSS() (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID()))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/PID/status")
}

// clockTicks is the unit of /proc/PID/stat's CPU times (USER_HZ: 100 on every Linux ABI).
const clockTicks = 100

// CPUTime is the CPU time (user and system) the process has used so far (utime and stime of
// /proc/PID/stat).
func (p *Process) CPUTime() (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID()))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its closing parenthesis
	// start at field 3, so utime (14) and stime (15) are the 12th and 13th of them.
	_, rest, ok := strings.Cut(string(raw), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		return 0, errors.New("managerproc: /proc/PID/stat has no CPU times")
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
