package historytest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/internal/engine"
)

// Environment of a child writer process.
const (
	envChild      = "PARLEY_HISTORYTEST_CHILD"
	envName       = "PARLEY_HISTORYTEST_NAME"
	envPrefix     = "PARLEY_HISTORYTEST_PREFIX"
	envCount      = "PARLEY_HISTORYTEST_COUNT"
	envWorkers    = "PARLEY_HISTORYTEST_WORKERS"
	envCrashAfter = "PARLEY_HISTORYTEST_CRASH_AFTER"
	envBigAt      = "PARLEY_HISTORYTEST_BIG_AT"
)

// RunChildIfRequested runs the writer role and exits when the process is a
// child started by the suite; otherwise it returns at once. Call it first in
// TestMain, with a function that opens the backend from the environment
// variables the Harness put in ChildEnv.
func RunChildIfRequested(open func() (history.Store, error)) {
	if os.Getenv(envChild) == "" {
		return
	}
	if err := runChild(open); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// runChild appends COUNT records with ids PREFIX-<n> from WORKERS goroutines
// and prints "ack <id> <seq>" for every acknowledged record. With
// CRASH_AFTER=k it kills itself with SIGKILL in its k-th commit, after what
// the commit writes before the index (tail objects, a seal) is durable and
// before the index moves. Record BIG_AT (when set) is a big one (bigID).
func runChild(open func() (history.Store, error)) error {
	count, _ := strconv.Atoi(os.Getenv(envCount))
	workers, _ := strconv.Atoi(os.Getenv(envWorkers))
	workers = max(workers, 1)
	prefix := os.Getenv(envPrefix)
	bigAt := -1
	if v := os.Getenv(envBigAt); v != "" {
		bigAt, _ = strconv.Atoi(v)
	}
	if k, _ := strconv.Atoi(os.Getenv(envCrashAfter)); k > 0 {
		var mu sync.Mutex
		hits := 0
		engine.Failpoint = func(name string) {
			if name != "tail-written" {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if hits++; hits == k {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
		}
	}
	store, err := open()
	if err != nil {
		return err
	}
	defer func() { _ = store.Close() }()
	ctx := context.Background()
	h, err := store.Open(ctx, os.Getenv(envName), history.OpenOptions{})
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	var outMu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < count; i += workers {
				id := fmt.Sprintf("%s-%d", prefix, i)
				if i == bigAt {
					id = bigID(id)
				}
				seqs, err := h.Append(ctx, []history.Record{{ID: id, Data: payload(id)}})
				if err != nil {
					errs <- fmt.Errorf("append %s: %w", id, err)
					return
				}
				outMu.Lock()
				_, _ = fmt.Fprintf(out, "ack %s %d\n", id, seqs[0])
				_ = out.Flush() // an ack counts only once the parent can see it
				outMu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// payload is a record's data derived from its id, so a reader can check it.
func payload(id string) []byte {
	n := 64
	if strings.HasSuffix(id, bigSuffix) {
		n = bigBytes
	}
	return fmt.Appendf(nil, `{"id":%q,"text":"%s"}`, id, strings.Repeat("x", n))
}

// A big record (300 KiB) is more than the index carries itself on any backend, so its
// commit writes a tail object before moving the index; it still fits a ConfigMap.
const (
	bigSuffix = ".big"
	bigBytes  = 300 << 10
)

func bigID(id string) string { return id + bigSuffix }

// child is a running writer process.
type child struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
}

func startChild(t *testing.T, h Harness, name, prefix string, count, workers, crashAfter int, extraEnv ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(os.Args[0], "-test.run=^$")}
	c.cmd.Env = append(os.Environ(), h.ChildEnv...)
	c.cmd.Env = append(c.cmd.Env,
		envChild+"=append", envName+"="+name, envPrefix+"="+prefix,
		envCount+"="+strconv.Itoa(count), envWorkers+"="+strconv.Itoa(workers),
		envCrashAfter+"="+strconv.Itoa(crashAfter))
	c.cmd.Env = append(c.cmd.Env, extraEnv...)
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	return c
}

// wait waits for the child and returns its acknowledged id → sequence.
func (c *child) wait(t *testing.T, wantKilled bool) map[string]uint64 {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		_ = c.cmd.Process.Kill()
		t.Fatalf("child did not finish; stderr:\n%s", c.stderr.String())
	}
	killed := false
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			killed = true
		}
	}
	switch {
	case wantKilled && !killed:
		t.Fatalf("child was to die by SIGKILL at the failpoint, got %v; stderr:\n%s", err, c.stderr.String())
	case !wantKilled && err != nil:
		t.Fatalf("child failed: %v; stderr:\n%s", err, c.stderr.String())
	}
	acks := map[string]uint64{}
	for l := range strings.SplitSeq(c.stdout.String(), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[0] == "ack" {
			seq, _ := strconv.ParseUint(f[2], 10, 64)
			acks[f[1]] = seq
		}
	}
	return acks
}
