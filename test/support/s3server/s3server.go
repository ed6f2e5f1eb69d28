// Package s3server runs a real S3-compatible server (versitygw) on loopback
// for the S3 backend's tests and benchmarks: a free 127.0.0.1 port, a
// temporary directory, killed with the test process.
package s3server

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/parley-dev/parley/test/support/repopath"
)

// EnvBinary names the versitygw binary; `make test` sets it.
const EnvBinary = "PARLEY_VERSITYGW"

// Server is a running versitygw.
type Server struct {
	// Endpoint is "127.0.0.1:<port>".
	Endpoint  string
	AccessKey string
	SecretKey string
	// CAPEM is the certificate to trust when the server runs with TLS.
	CAPEM []byte

	cmd *exec.Cmd
	dir string
}

// Options for Start.
type Options struct {
	// TLS serves HTTPS with a fresh self-signed certificate for 127.0.0.1
	// and localhost.
	TLS bool
	// VirtualDomain enables virtual-host addressing under that domain.
	VirtualDomain string
}

// Start starts versitygw and waits until it accepts connections.
func Start(opts Options) (*Server, error) {
	bin, err := binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "parley-versitygw-")
	if err != nil {
		return nil, err
	}
	s := &Server{AccessKey: "parleytest", SecretKey: "parleytestsecret", dir: dir}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s.Endpoint = fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{"--port", s.Endpoint, "--quiet", "--keep-alive"}
	if opts.TLS {
		certFile, keyFile, caPEM, err := writeSelfSigned(dir)
		if err != nil {
			return nil, err
		}
		s.CAPEM = caPEM
		args = append(args, "--cert", certFile, "--key", keyFile)
	}
	if opts.VirtualDomain != "" {
		args = append(args, "--virtual-domain", opts.VirtualDomain)
	}
	args = append(args, "posix", filepath.Join(dir, "data"))
	s.cmd = exec.Command(bin, args...)
	s.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
	s.cmd.Stdout, s.cmd.Stderr = os.Stderr, os.Stderr
	// Dies with the test process, even when that one is killed.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	if err := waitListening(s.Endpoint, 30*time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop kills the server and removes its data.
// PID is the server process's id (for its CPU time), or 0 before Start.
func (s *Server) PID() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
	_ = os.RemoveAll(s.dir)
}

func binary() (string, error) {
	bin := os.Getenv(EnvBinary)
	if bin == "" {
		if root, err := repopath.Root(); err == nil {
			bin = filepath.Join(root, "bin", "s3", "versitygw")
		}
	}
	if _, err := os.Stat(bin); bin == "" || err != nil {
		return "", fmt.Errorf("no versitygw at %q; run `make test`, which builds bin/s3/versitygw and sets %s "+
			"(or run `make s3-server` and set %s=$PWD/bin/s3/versitygw)", bin, EnvBinary, EnvBinary)
	}
	return bin, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitListening(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("versitygw did not listen on %s within %s: %w", addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
