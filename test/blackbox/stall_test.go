package blackbox_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stallBar is how long an append may wait behind a reader that never reads.
const stallBar = 2 * time.Second

// stalledReaderDelaysNothing: a caller asks for a large answer and never reads it; appends to
// the same conversation by another caller must not wait behind it.
func stalledReaderDelaysNothing(ctx context.Context, t *testing.T, e *env) {
	ns, path, agent := e.bigHistory(ctx, t, "stall")

	if peak, err := e.proc.PeakRSS(); err == nil {
		t.Logf("the manager's peak RSS while the history grew: %d MiB", peak>>20)
	}
	e.resetPeakRSS(t)
	reader := e.token(ctx, t, ns, "agent", time.Hour, audience, nil) // another token: its own identity cache entry
	for _, p := range []string{"/messages?limit=1000", "/resume", "/state", "/transcript"} {
		conn := e.neverReading(ctx, t)
		defer func() { _ = conn.Close() }()
		if _, err := fmt.Fprintf(conn, "GET %s%s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n", path, p, reader); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // the answers fill the buffers and block
	if peak, err := e.proc.PeakRSS(); err == nil {
		t.Logf("the manager's peak RSS once four answers stall: %d MiB", peak>>20)
	}

	var slowest time.Duration
	var failed []string
	for i := range 5 {
		began := time.Now()
		actx, cancel := context.WithTimeout(ctx, 10*stallBar)
		res, body, err := e.do(actx, http.MethodPost, path+"/messages", agent, appendBody(fmt.Sprintf("during%d", i), 1, "hello"))
		cancel()
		took := time.Since(began)
		if err != nil || res.StatusCode >= 300 {
			failed = append(failed, fmt.Sprintf("append %d after %s: %v %.100s", i, took.Round(time.Millisecond), err, body))
			break
		}
		slowest = max(slowest, took)
	}
	if len(failed) > 0 {
		t.Errorf("appends failed while a reader never reads: %v", failed)
	}
	t.Logf("the slowest of 5 appends while four answers stall: %s", slowest.Round(time.Millisecond))
	if slowest > stallBar {
		t.Errorf("an append waited %s behind a reader that never reads (bar %s)", slowest.Round(time.Millisecond), stallBar)
	}
}

// bigHistory makes a namespace of prefix with a conversation "big" whose first page (1,000
// messages of 16 KiB) is far larger than socket buffers, and returns its namespace, its path
// and an agent token of the namespace.
func (e *env) bigHistory(ctx context.Context, t *testing.T, prefix string) (ns, path, agent string) {
	t.Helper()
	ns = e.namespace(ctx, t, prefix)
	e.conversation(ctx, t, inBucket(ns, "big", e.store))
	agent = e.agentToken(ctx, t, ns)
	path = convPath(ns, "big")
	text := strings.Repeat("x", 16<<10)
	for i := range 10 {
		if res, body, err := e.do(ctx, http.MethodPost, path+"/messages", agent, appendBody(fmt.Sprintf("big%d", i), 100, text)); err != nil || res.StatusCode >= 300 {
			t.Fatalf("filling the history: %v %v %.200s", err, res, body)
		}
	}
	res, page, err := e.do(ctx, http.MethodGet, path+"/messages?limit=1000", agent, nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("a page of 1,000: %v %v", err, res)
	}
	t.Logf("a page of the history is %d MiB", len(page)>>20)
	if len(page) < 8<<20 {
		t.Fatalf("the page is %d bytes: too small to fill the socket buffers, the case tests nothing", len(page))
	}
	return ns, path, agent
}

// neverReading is a TLS connection to the Session API with a small receive buffer, whose
// caller never reads what the server sends.
func (e *env) neverReading(ctx context.Context, t *testing.T) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	raw, err := d.DialContext(ctx, "tcp", strings.TrimPrefix(e.url, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.http.Transport.(*http.Transport).TLSClientConfig.Clone()
	cfg.ServerName = "127.0.0.1"
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(ctx); err != nil {
		t.Fatal(err)
	}
	return conn
}
