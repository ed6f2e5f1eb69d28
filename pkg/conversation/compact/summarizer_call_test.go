package compact

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	future := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	cases := []struct {
		headers map[string]string
		min     time.Duration
		max     time.Duration
	}{
		{map[string]string{}, 0, 0},
		{map[string]string{"Retry-After": "3"}, 3 * time.Second, 3 * time.Second},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, 500 * time.Millisecond},
		{map[string]string{"Retry-After": "-1"}, 0, 0},
		{map[string]string{"Retry-After": "NaN"}, 0, 0},
		{map[string]string{"Retry-After": "soon"}, 0, 0},
		{map[string]string{"Retry-After": "1e300"}, math.MaxInt64, math.MaxInt64},
		{map[string]string{"Retry-After": future}, 59 * time.Minute, time.Hour},
		{map[string]string{"Retry-After": "Mon, 02 Jan 2006 15:04:05 GMT"}, 0, 0},
		{map[string]string{"retry-after-ms": "1500", "Retry-After": "9"}, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{map[string]string{"retry-after-ms": "nope", "Retry-After": "9"}, 9 * time.Second, 9 * time.Second},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.headers {
			h.Set(k, v)
		}
		if got := retryAfter(h); got < tc.min || got > tc.max {
			t.Errorf("retryAfter(%v) = %v, want in [%v, %v]", tc.headers, got, tc.min, tc.max)
		}
	}
}

func TestRetryableAnswer(t *testing.T) {
	cases := []struct {
		status int
		header string
		want   bool
	}{
		{200, "", false},
		{400, "", false},
		{404, "", false},
		{408, "", true},
		{409, "", true},
		{429, "", true},
		{500, "", true},
		{529, "", true},
		{400, "true", true},
		{503, "false", false},
	}
	for _, tc := range cases {
		res := &http.Response{StatusCode: tc.status, Header: http.Header{}}
		if tc.header != "" {
			res.Header.Set("X-Should-Retry", tc.header)
		}
		if got := retryableAnswer(res); got != tc.want {
			t.Errorf("%d x-should-retry=%q: %v, want %v", tc.status, tc.header, got, tc.want)
		}
	}
}

func TestDecodeOpenAIError(t *testing.T) {
	cases := map[string][2]string{
		openAIContextTooLong: {"invalid_request_error/context_length_exceeded", "This model's maximum context length is 128000 tokens."},
		`{"error":"boom"}`:   {"", "boom"},
		`{"error":{"message":"m","type":"t","code":"t"}}`:                       {"t", "m"},
		`{"error":{"message":"m","code":429}}`:                                  {"", "m"},
		`{"object":"error","message":"gone","type":"NotFoundError","code":404}`: {"NotFoundError", "gone"},
		`<html>`:        {"", ""},
		`{"error":[1]}`: {"", ""},
		``:              {"", ""},
	}
	for body, want := range cases {
		typ, msg := decodeOpenAIError([]byte(body))
		if typ != want[0] || !strings.HasPrefix(msg, want[1]) {
			t.Errorf("decodeOpenAIError(%s) = %q, %q; want %q, %q…", body, typ, msg, want[0], want[1])
		}
	}
}

func TestTruncateKeepsRunes(t *testing.T) {
	if got := truncate("  short  ", 10); got != "short" {
		t.Errorf("%q", got)
	}
	got := truncate(strings.Repeat("日", 10), 10) // 30 bytes
	if got != "日日日…" {
		t.Errorf("%q", got)
	}
}
