package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
)

// ErrEpochChanged ends Follow when the conversation was compacted: sequences restart in the new
// epoch, so the caller re-reads it from the start.
var ErrEpochChanged = errors.New("parley client: the conversation moved to a new epoch")

// Follow calls fn for every message after the sequence after, as it is appended, until ctx
// ends, fn returns an error, or the epoch changes (ErrEpochChanged). A dropped stream is
// resumed from the last message seen (Last-Event-ID), with backoff.
func (c *Client) Follow(ctx context.Context, namespace, name string, after uint64, fn func(conversation.Message) error) error {
	backoff := 100 * time.Millisecond
	for {
		seen, err := c.followOnce(ctx, namespace, name, after, func(seq uint64, m conversation.Message) error {
			after = seq
			return fn(m)
		})
		if err != nil && (ctx.Err() != nil || errors.Is(err, ErrEpochChanged) || !retryable(err)) {
			return err
		}
		if seen {
			backoff = 100 * time.Millisecond
		}
		if err := c.sleep(ctx, backoff); err != nil {
			return err
		}
		backoff = min(backoff*2, c.opts.MaxBackoff)
	}
}

// errCallback marks an error returned by the caller's function: never retried.
type errCallback struct{ err error }

func (e errCallback) Error() string { return e.err.Error() }
func (e errCallback) Unwrap() error { return e.err }

func retryable(err error) bool {
	var cb errCallback
	if errors.As(err, &cb) {
		return false
	}
	var p *wire.Problem
	if errors.As(err, &p) {
		return p.Status == 429 || p.Status >= 500
	}
	return true
}

func (c *Client) followOnce(ctx context.Context, namespace, name string, after uint64, fn func(uint64, conversation.Message) error) (bool, error) {
	// Through the API server a follow reads the log subresource: the API server cuts requests
	// to other subresources at its request timeout.
	endpoint := "/messages"
	if c.opts.Aggregated {
		endpoint = "/log"
	}
	path := c.conversationPath(namespace, name) + endpoint + "?follow=true"
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + c.conversationPath(namespace, name) + endpoint
	u.RawQuery = "follow=true"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", strconv.FormatUint(after, 10))
	token, err := c.token()
	if err != nil {
		return false, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	stream := *c.http
	stream.Timeout = 0 // a stream lasts; ctx ends it
	resp, err := stream.Do(req)
	if err != nil {
		return false, fmt.Errorf("parley client: GET %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return false, problemOf(resp, data)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var event, id, data string
	seen := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if event == "epoch" {
				return seen, ErrEpochChanged
			}
			if event == "message" && data != "" {
				seq, _ := strconv.ParseUint(id, 10, 64)
				var m conversation.Message
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					return seen, fmt.Errorf("parley client: decoding a followed message: %w", err)
				}
				if err := fn(seq, m); err != nil {
					return seen, errCallback{err}
				}
				seen = true
			}
			event, id, data = "", "", ""
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "id: "):
			id = line[len("id: "):]
		case strings.HasPrefix(line, "data: "):
			data += line[len("data: "):]
		}
	}
	return seen, sc.Err()
}
