package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/journal"
	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/fixtures"
)

var claudeFixture = fixtures.Path(fixtures.ClaudeMain)

func sourceSpec() *parleyv1alpha1.ConversationSpec {
	return &parleyv1alpha1.ConversationSpec{
		SessionID:    "0b7e1a3c-5f2d-4c8e-9a41-6d2f0e8b7c15",
		SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: "be brief"},
		Seed:         &parleyv1alpha1.SeedSource{ConfigMapKeyRef: parleyv1alpha1.ConfigMapKeyReference{Name: "seed", Key: "k"}},
		History:      parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{MaxBytes: ptr.To(resource.MustParse("2Mi"))}},
		Lifetime:     parleyv1alpha1.LifetimeSpec{TTL: &metav1.Duration{Duration: 3600e9}},
		Context:      parleyv1alpha1.ContextSpec{MaxTokens: ptr.To[int64](1000)},
		Agent:        &parleyv1alpha1.AgentSpec{Adapter: parleyv1alpha1.AdapterClaudeAgentSDK},
		ForkFrom:     &parleyv1alpha1.ForkSource{Checkpoint: "older"},
		Suspend:      ptr.To(true),
	}
}

func TestForkSpec(t *testing.T) {
	cases := map[string]struct {
		opts forkOptions
		edit func(want *parleyv1alpha1.ConversationSpec)
	}{
		"same spec, own session, from the checkpoint, running": {
			edit: func(*parleyv1alpha1.ConversationSpec) {},
		},
		"without the agent": {
			opts: forkOptions{noAgent: true},
			edit: func(w *parleyv1alpha1.ConversationSpec) { w.Agent = nil },
		},
		"suspended": {
			opts: forkOptions{suspend: true},
			edit: func(w *parleyv1alpha1.ConversationSpec) { w.Suspend = ptr.To(true) },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := sourceSpec()
			want := *sourceSpec()
			want.SessionID, want.Seed, want.Suspend = "", nil, nil
			want.ForkFrom = &parleyv1alpha1.ForkSource{Checkpoint: "ckpt-3", Conversation: "source"}
			tc.edit(&want)
			got := forkSpec(src, "source", "ckpt-3", tc.opts)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("forkSpec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(sourceSpec(), src); diff != "" {
				t.Fatalf("the source spec changed:\n%s", diff)
			}
		})
	}
}

func TestImportSpec(t *testing.T) {
	withSystem := &conversation.State{System: &conversation.Message{Role: conversation.RoleSystem, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: "from the file"}}}}
	configMap := parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{}}
	cases := map[string]struct {
		like  *parleyv1alpha1.ConversationSpec
		state *conversation.State
		opts  importOptions
		want  parleyv1alpha1.ConversationSpec
	}{
		"nothing given: a ConfigMap history": {
			state: &conversation.State{}, want: parleyv1alpha1.ConversationSpec{History: configMap},
		},
		"the transcript's system prompt": {
			state: withSystem,
			want:  parleyv1alpha1.ConversationSpec{History: configMap, SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: "from the file"}},
		},
		"the flag wins over the transcript, the session id is pinned": {
			state: withSystem, opts: importOptions{systemPrompt: "given", sessionID: "5d0c1a7e-3b1f-4c2e-9a6d-0f4e8b2c7a11"},
			want: parleyv1alpha1.ConversationSpec{
				History: configMap, SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: "given"},
				SessionID: "5d0c1a7e-3b1f-4c2e-9a6d-0f4e8b2c7a11",
			},
		},
		"like another: its spec without session, seed, fork, suspend": {
			like: sourceSpec(), state: &conversation.State{},
			want: func() parleyv1alpha1.ConversationSpec {
				w := *sourceSpec()
				w.SessionID, w.Seed, w.ForkFrom, w.Suspend = "", nil, nil, nil
				return w
			}(),
		},
		"like another, without its agent": {
			like: sourceSpec(), state: &conversation.State{}, opts: importOptions{noAgent: true},
			want: func() parleyv1alpha1.ConversationSpec {
				w := *sourceSpec()
				w.SessionID, w.Seed, w.ForkFrom, w.Suspend, w.Agent = "", nil, nil, nil, nil
				return w
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, importSpec(tc.like, tc.state, tc.opts)); diff != "" {
				t.Fatalf("importSpec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBatches(t *testing.T) {
	cases := map[string]struct {
		sizes              []int
		maxItems, maxBytes int
		want               []batch
	}{
		"none":                    {nil, 3, 100, nil},
		"by count":                {[]int{1, 1, 1, 1, 1, 1, 1}, 3, 100, []batch{{0, 3}, {3, 6}, {6, 7}}},
		"by bytes":                {[]int{40, 40, 40, 10, 90}, 10, 100, []batch{{0, 2}, {2, 4}, {4, 5}}},
		"an oversized item alone": {[]int{10, 500, 10}, 10, 100, []batch{{0, 1}, {1, 2}, {2, 3}}},
		"exactly the bytes":       {[]int{50, 50, 1}, 10, 100, []batch{{0, 2}, {2, 3}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := batches(len(tc.sizes), tc.maxItems, tc.maxBytes, func(i int) int { return tc.sizes[i] })
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(batch{})); diff != "" {
				t.Fatalf("batches (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDetectFormat(t *testing.T) {
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := map[string]struct {
		data []byte
		want string
	}{
		"a Claude Code transcript":                   {read(claudeFixture), importClaude},
		"an OpenCode export":                         {read(fixtures.Path(fixtures.OpenCode)), importOpenCode},
		"a Parley state":                             {[]byte("\n {\"schemaVersion\":\"1.1\",\"messages\":[]}"), importJSON},
		"neutral JSONL":                              {[]byte("\xef\xbb\xbf\n{\"id\":\"m1\",\"role\":\"user\",\"blocks\":[]}\n"), importJSONL},
		"a JSON object, one line, that is a message": {[]byte(`{"id":"m1","role":"user"}`), importJSONL},
	}
	for name, tc := range cases {
		if got := detectFormat(tc.data); got != tc.want {
			t.Errorf("%s: detectFormat = %q, want %q", name, got, tc.want)
		}
	}
}

func TestReadTranscript(t *testing.T) {
	tr, err := readImportFile(claudeFixture, importAuto, "")
	if err != nil {
		t.Fatal(err)
	}
	if tr.format != importClaude || tr.subagentFiles != 1 || len(tr.state.Subagents) != 1 || len(tr.state.Subagents[0].Messages) == 0 {
		t.Fatalf("claude: format %s, %d subagent files, %d threads", tr.format, tr.subagentFiles, len(tr.state.Subagents))
	}
	if len(tr.state.Messages) == 0 || len(tr.warnings) != 0 {
		t.Fatalf("claude: %d messages, warnings %v", len(tr.state.Messages), tr.warnings)
	}

	// The same file without its subagent folder: the subagent is only what the main file says.
	dir := t.TempDir()
	lone := filepath.Join(dir, "s.jsonl")
	data, _ := os.ReadFile(claudeFixture)
	if err := os.WriteFile(lone, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if tr, err := readImportFile(lone, importAuto, ""); err != nil || tr.subagentFiles != 0 {
		t.Fatalf("without subagent files: %v, %d files", err, tr.subagentFiles)
	}

	// A last line cut by a crash: the complete lines, and a warning.
	cut := filepath.Join(dir, "cut.jsonl")
	if err := os.WriteFile(cut, append(append([]byte{}, data...), []byte(`{"type":"user","uuid":"x","message":{"role":"us`)...), 0o600); err != nil {
		t.Fatal(err)
	}
	tr2, err := readImportFile(cut, importClaude, "")
	if err != nil || len(tr2.warnings) != 1 || len(tr2.state.Messages) != len(tr.state.Messages) {
		t.Fatalf("cut transcript: err %v, warnings %v, %d messages (want %d)", err, tr2.warnings, len(tr2.state.Messages), len(tr.state.Messages))
	}

	oc, err := readImportFile(fixtures.Path(fixtures.OpenCode), importAuto, "")
	if err != nil || oc.format != importOpenCode || len(oc.state.Messages) == 0 || len(oc.state.Source.Raw) == 0 {
		t.Fatalf("opencode: %v", err)
	}
	if nc := notCarried(&oc.state); !strings.Contains(nc, "opencode session info") {
		t.Fatalf("notCarried(opencode) = %q", nc)
	}

	for _, bad := range []struct{ format, data, want string }{
		{importJSONL, "not json\n", "is not neutral JSONL"},
		{importOpenCode, `{"messages": 3}`, "is not a readable OpenCode export"},
		{importJSON, `[1]`, "is not a conversation state"},
		{importClaude, "{\"uuid\":\"a\"}\n{oops}\n{\"uuid\":\"b\"}\n", "is not a readable Claude Code transcript"},
	} {
		p := filepath.Join(dir, "bad")
		if err := os.WriteFile(p, []byte(bad.data), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readImportFile(p, bad.format, ""); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err %v, want %q", bad.format, err, bad.want)
		}
	}
	if _, err := readImportFile(filepath.Join(dir, "missing"), importAuto, ""); err == nil || !strings.Contains(err.Error(), "reading the transcript") {
		t.Errorf("missing file: %v", err)
	}
}

// TestAggregatedPaths: without --session-api-url the plugin calls the aggregated group on the
// API server with the kubeconfig's transport (its token reaches the API server in
// Authorization, as every kubectl call's does), a follow reads the log subresource, and no
// request carries Parley-Authorization.
func TestAggregatedPaths(t *testing.T) {
	var mu sync.Mutex
	var seen []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Clone(context.Background()))
		mu.Unlock()
		if r.URL.Query().Get("follow") == "true" {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: epoch\ndata: {}\n\n")
			return
		}
		_, _ = io.WriteString(w, `{"namespace":"a","name":"b"}`)
	}))
	defer srv.Close()
	c, err := aggregatedClient(&rest.Config{Host: srv.URL, BearerToken: "kube-token"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Conversation(ctx, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if err := c.Follow(ctx, "a", "b", 0, func(conversation.Message) error { return nil }); !errors.Is(err, parleyclient.ErrEpochChanged) {
		t.Fatalf("follow: %v", err)
	}
	want := []string{"/apis/session.parley.dev/v1alpha1/namespaces/a/conversations/b", "/apis/session.parley.dev/v1alpha1/namespaces/a/conversations/b/log"}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != len(want) {
		t.Fatalf("%d requests, want %d", len(seen), len(want))
	}
	for i, r := range seen {
		if r.URL.Path != want[i] {
			t.Errorf("request %d to %s, want %s", i, r.URL.Path, want[i])
		}
		if r.Header.Get("Authorization") != "Bearer kube-token" || r.Header.Get("Parley-Authorization") != "" {
			t.Errorf("request %d: Authorization %q, Parley-Authorization %q; want the kubeconfig's token for the API server only",
				i, r.Header.Get("Authorization"), r.Header.Get("Parley-Authorization"))
		}
	}
}

func TestNoEndpoint(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{&wire.Problem{Status: 404, Type: wire.ProblemNotFound, Detail: "no such endpoint: POST /v1/namespaces/a/conversations/b/reset"}, true},
		{&wire.Problem{Status: 405, Title: "405 Method Not Allowed"}, true},
		{&wire.Problem{Status: 404, Type: wire.ProblemNotFound, Detail: "conversation a/b does not exist"}, false},
		{&wire.Problem{Status: 403, Type: wire.ProblemForbidden}, false},
		{os.ErrNotExist, false},
		{nil, false},
	}
	for _, c := range cases {
		if got := noEndpoint(c.err); got != c.want {
			t.Errorf("noEndpoint(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestExportFormats(t *testing.T) {
	tr, err := readImportFile(claudeFixture, importClaude, "")
	if err != nil {
		t.Fatal(err)
	}
	s := &tr.state
	for _, f := range exportFormats {
		files, err := exportFiles(s, f, exportOptions{sessionID: s.SessionID})
		if err != nil || len(files) == 0 || len(files[0].Content) == 0 {
			t.Fatalf("%s: %v", f, err)
		}
		if f == formatClaude && (len(files) != 2 || !strings.HasSuffix(files[1].Path, "subagents/agent-a9b844f.jsonl")) {
			t.Errorf("claude: want the main and the subagent file, got %d", len(files))
		}
		if f != formatClaude && files[0].Path != "" {
			t.Errorf("%s: a path for a one-file format", f)
		}
	}
	if w := leftOut(s, formatJSONL); !strings.Contains(w, "1 subagent thread(s)") {
		t.Errorf("leftOut(jsonl) = %q", w)
	}
	if w := leftOut(s, formatJSON); w != "" {
		t.Errorf("leftOut(json) = %q", w)
	}
	if _, err := exportFiles(s, "yaml", exportOptions{}); err == nil {
		t.Error("an unknown format was accepted")
	}
	// jsonl is the format a seed reads: the system prompt first, then every message.
	s.System = &conversation.Message{ID: "system", Role: conversation.RoleSystem, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: "sys"}}}
	b, err := neutralJSONL(s)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != len(s.Messages)+1 || !strings.Contains(lines[0], `"role":"system"`) {
		t.Fatalf("jsonl: %d lines for %d messages; first %q", len(lines), len(s.Messages), lines[0])
	}
}

// Appending the parts' records in order gives the whole state's records, whatever the cut.
func TestImportPartsKeepTheRecordsOrder(t *testing.T) {
	claude, err := readImportFile(claudeFixture, importClaude, "")
	must(t, err)
	oc, err := readImportFile(fixtures.Path(fixtures.OpenCode), importOpenCode, "")
	must(t, err)
	// Records everywhere: before the first message, interleaved after messages, in a thread.
	busy := claude.state
	raw := func(after, thread, typ string) conversation.RawRecord {
		return conversation.RawRecord{AfterID: after, Thread: thread, Raw: []byte(`{"type":"` + typ + `"}`)}
	}
	m := busy.Messages
	busy.Records = append([]conversation.RawRecord{
		raw("", "", "first"), raw(m[2].ID, "", "after-2"), raw(m[0].ID, "", "after-0"), raw("sub-msg", "a9b844f", "in-thread"),
		raw(m[2].ID, "", "after-2-again"), raw(m[len(m)-1].ID, "", "after-last"),
		raw("sub-msg-2", "a9b844f", "in-thread-2"), raw("sub-msg", "a9b844f", "in-thread-again"),
	}, busy.Records...)
	busy.Adapters = conversation.AdapterStates{&conversation.ClaudeAgentSDKState{SessionID: "sdk"}}
	busy.CWD = "/work"

	// Many small records after one message, in a thread and before any message: more than a
	// part holds.
	many := claude.state
	many.Records = slices.Clone(many.Records)
	for i := range 3 * wire.MaxImportItems / 2 {
		many.Records = append(many.Records, raw(m[i%2].ID, "", "progress"), raw("", "", "queue"), raw("sub-msg", "a9b844f", "in-thread"))
	}

	for name, s := range map[string]*conversation.State{"claude": &claude.state, "opencode": &oc.state, "records everywhere": &busy, "many records": &many} {
		whole, err := journal.StateRecords(s, "x:")
		must(t, err)
		for _, limits := range []importLimits{{1, 1 << 20, 1 << 20}, {2, 1 << 20, 1 << 20}, {500, 1 << 20, 300}, {500, 2, 1 << 20}, {3, 5, 1 << 20}, importPartLimits} {
			var got []string
			parts := importParts(s, limits)
			for i := range parts {
				if n := len(parts[i].Messages); n > limits.messages {
					t.Fatalf("%s: part %d holds %d messages", name, i, n)
				}
				if n := wire.ImportItems(&parts[i]); n > limits.items {
					t.Fatalf("%s: part %d holds %d items", name, i, n)
				}
				recs, err := journal.StateRecords(&parts[i], fmt.Sprintf("p%d:", i))
				must(t, err)
				for _, r := range recs {
					got = append(got, string(r.Data))
				}
			}
			want := make([]string, len(whole))
			for i, r := range whole {
				want[i] = string(r.Data)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%s, limits %v: the parts' records differ from the whole's (-whole +parts):\n%s", name, limits, diff)
			}
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Against a manager without POST …/import, the state goes as messages and events, and the
// import says that it was not carried whole.
func TestAppendStateFallsBackToMessagesAndEvents(t *testing.T) {
	tr, err := readImportFile(claudeFixture, importClaude, "")
	must(t, err)
	var mu sync.Mutex
	calls := map[string]int{}
	var messages, events int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		path := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		calls[path]++
		switch path {
		case "messages":
			var body wire.AppendRequest
			must(t, json.NewDecoder(r.Body).Decode(&body))
			messages += len(body.Messages)
			_, _ = w.Write([]byte(`{"epoch":1,"sequences":[]}`))
		case "events":
			var body wire.EventsRequest
			must(t, json.NewDecoder(r.Body).Decode(&body))
			events += len(body.Events)
			_, _ = w.Write([]byte(`{"sequences":[]}`))
		default: // the router of a Session API without the endpoint
			w.Header().Set("Content-Type", wire.ProblemContentType)
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"type":"` + wire.ProblemNotFound + `","title":"Not Found","status":404,"detail":"no such endpoint: POST ` + r.URL.Path + `"}`))
		}
	}))
	defer srv.Close()
	api, err := parleyclient.New(parleyclient.Options{URL: srv.URL, Token: "t"})
	must(t, err)
	o := &Options{Streams: genericiooptions.NewTestIOStreamsDiscard()}
	carried, err := o.appendState(t.Context(), api, target{ns: "ns", name: "c"}, tr, "never")
	must(t, err)
	if carried || calls["import"] != 1 || messages != len(tr.state.Messages) || events != len(conversation.Events(&conversation.State{Subagents: tr.state.Subagents})) {
		t.Fatalf("carried %v, calls %v, %d messages, %d events", carried, calls, messages, events)
	}
}
