package stubmodel

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

var fixed = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newStub(t *testing.T, script ...Reply) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(script, func() time.Time { return fixed })
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); hs.Close() })
	return s, hs
}

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// events splits a server-sent event stream into its data payloads, decoded.
func events(t *testing.T, stream string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stream))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

var weather = ToolCall{ID: "call_1", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)}

func TestAnthropicConversationAndReplies(t *testing.T) {
	stub, hs := newStub(t, Reply{ToolCalls: []ToolCall{weather}}, Reply{Text: "sunny"})
	first := `{"model":"m","stream":true,"system":"be brief","messages":[{"role":"user","content":"weather?"}]}`
	resp, body := post(t, hs.URL+"/v1/messages?beta=true", first)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	types := make([]string, 0, 6)
	var partial string
	for _, e := range events(t, body) {
		types = append(types, e["type"].(string))
		if d, ok := e["delta"].(map[string]any); ok && d["type"] == "input_json_delta" {
			partial += d["partial_json"].(string)
		}
		if d, ok := e["delta"].(map[string]any); ok && e["type"] == "message_delta" && d["stop_reason"] != "tool_use" {
			t.Errorf("stop_reason %v, want tool_use", d["stop_reason"])
		}
	}
	want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if !reflect.DeepEqual(types, want) {
		t.Errorf("events %v, want %v", types, want)
	}
	if partial != `{"city":"Paris"}` {
		t.Errorf("tool input %q", partial)
	}

	second := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"weather?"}]},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"x"},{"type":"tool_use","id":"call_1","name":"get_weather","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"18C"}]}]}]}`
	_, body = post(t, hs.URL+"/v1/messages", second)
	var msg struct {
		Content    []map[string]any `json:"content"`
		StopReason string           `json:"stop_reason"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != "end_turn" || len(msg.Content) != 1 || msg.Content[0]["text"] != "sunny" {
		t.Errorf("reply %s", body)
	}

	got := stub.Requests()
	if len(got) != 2 || got[0].API != AnthropicMessages || !got[0].Stream || got[1].Stream || got[0].Path != "/v1/messages?beta=true" {
		t.Fatalf("record %+v", got)
	}
	wantConv := []Entry{
		{Role: "user", Kind: KindText, Text: "weather?"},
		{Role: "assistant", Kind: KindToolUse, Name: "get_weather", CallID: "call_1"},
		{Role: "user", Kind: KindToolResult, CallID: "call_1", Text: "18C"},
	}
	if !reflect.DeepEqual(got[1].Conversation, wantConv) {
		t.Errorf("conversation %+v, want %+v", got[1].Conversation, wantConv)
	}
	if string(got[1].Body) != second || !got[1].Time.Equal(fixed) || got[1].Seq != 2 {
		t.Errorf("record keeps the body, time and sequence: %+v", got[1])
	}
}

func TestResponsesConversationAndReplies(t *testing.T) {
	stub, hs := newStub(t, Reply{Text: "let me look", ToolCalls: []ToolCall{weather}}, Reply{Text: "sunny"})
	_, body := post(t, hs.URL+"/v1/responses", `{"model":"m","instructions":"be brief","input":"weather?"}`)
	var resp struct {
		Status string           `json:"status"`
		Output []map[string]any `json:"output"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Status != "completed" || len(resp.Output) != 2 || resp.Output[0]["type"] != "message" ||
		resp.Output[1]["type"] != "function_call" || resp.Output[1]["call_id"] != "call_1" || resp.Output[1]["arguments"] != `{"city":"Paris"}` {
		t.Fatalf("response %s", body)
	}

	second := `{"model":"m","stream":true,"input":[{"role":"system","content":"x"},{"role":"user","content":"weather?"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"let me look"}]},` +
		`{"type":"reasoning","summary":[]},` +
		`{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{}"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"18C"}]}`
	_, body = post(t, hs.URL+"/v1/responses", second)
	evs := events(t, body)
	last := evs[len(evs)-1]
	if evs[0]["type"] != "response.created" || last["type"] != "response.completed" {
		t.Fatalf("stream %s", body)
	}
	out := last["response"].(map[string]any)["output"].([]any)
	if len(out) != 1 || out[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"] != "sunny" {
		t.Errorf("completed response %v", last)
	}
	wantConv := []Entry{
		{Role: "user", Kind: KindText, Text: "weather?"},
		{Role: "assistant", Kind: KindText, Text: "let me look"},
		{Role: "assistant", Kind: KindToolUse, Name: "get_weather", CallID: "call_1"},
		{Role: "tool", Kind: KindToolResult, CallID: "call_1", Text: "18C"},
	}
	if got := stub.Requests(); !reflect.DeepEqual(got[1].Conversation, wantConv) || got[1].API != OpenAIResponses {
		t.Errorf("conversation %+v, want %+v", got[1].Conversation, wantConv)
	}
}

func TestChatConversationAndReplies(t *testing.T) {
	stub, hs := newStub(t, Reply{ToolCalls: []ToolCall{weather}}, Reply{Text: "sunny"})
	_, body := post(t, hs.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"system","content":"x"},{"role":"user","content":"weather?"}]}`)
	var resp struct {
		Choices []struct {
			Message      map[string]any `json:"message"`
			FinishReason string         `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].FinishReason != "tool_calls" || len(resp.Choices[0].Message["tool_calls"].([]any)) != 1 {
		t.Fatalf("response %s", body)
	}
	second := `{"model":"m","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"weather?"}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"18C"}]}`
	_, body = post(t, hs.URL+"/v1/chat/completions", second)
	if !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("stream does not end with [DONE]: %s", body)
	}
	evs := events(t, body)
	delta := evs[0]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	if delta["content"] != "sunny" {
		t.Errorf("first chunk %v", evs[0])
	}
	wantConv := []Entry{
		{Role: "user", Kind: KindText, Text: "weather?"},
		{Role: "assistant", Kind: KindToolUse, Name: "get_weather", CallID: "call_1"},
		{Role: "tool", Kind: KindToolResult, CallID: "call_1", Text: "18C"},
	}
	if got := stub.Requests(); !reflect.DeepEqual(got[1].Conversation, wantConv) || got[1].API != OpenAIChat {
		t.Errorf("conversation %+v, want %+v", got[1].Conversation, wantConv)
	}
}

func TestHoldKeepsTheRequestOpenUntilTheClientLeaves(t *testing.T) {
	stub, hs := newStub(t, Reply{Hold: true}, Reply{Text: "after"})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/v1/responses", strings.NewReader(`{"model":"m","input":"u1"}`))
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(stub.Requests()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("a held request was answered: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("held request ended with %v", err)
	}
	_, body := post(t, hs.URL+"/v1/responses", `{"model":"m","input":"u1"}`)
	if !strings.Contains(body, `"after"`) {
		t.Errorf("the request after the hold takes the next reply: %s", body)
	}
	got := stub.Requests()
	if !got[0].Held || got[1].Held {
		t.Errorf("held flags %+v", got)
	}
}

func TestRecordAndScriptEndpoints(t *testing.T) {
	_, hs := newStub(t)
	resp, body := post(t, hs.URL+"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"u1"}]}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "no reply for request 1") {
		t.Errorf("an exhausted script answers 400: %d %s", resp.StatusCode, body)
	}

	put := func(script string) int {
		req, _ := http.NewRequest(http.MethodPut, hs.URL+"/_stub/script", strings.NewReader(script))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := put(`[{"text":"x","hold":true}]`); code != http.StatusBadRequest {
		t.Errorf("a hold with content is refused: %d", code)
	}
	if code := put(`[{"toolCalls":[{"id":"c","name":"t","input":[1]}]}]`); code != http.StatusBadRequest {
		t.Errorf("tool input that is no object is refused: %d", code)
	}
	if code := put(`[{"text":"hello"}]`); code != http.StatusNoContent {
		t.Fatalf("script: %d", code)
	}
	if _, body := post(t, hs.URL+"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"u2"}]}`); !strings.Contains(body, `"hello"`) {
		t.Errorf("reply %s", body)
	}

	r, err := http.Get(hs.URL + "/_stub/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Body.Close() }()
	var record []Request
	if err := json.NewDecoder(r.Body).Decode(&record); err != nil {
		t.Fatal(err)
	}
	if len(record) != 2 || record[0].Conversation[0].Text != "u1" || record[1].Conversation[0].Text != "u2" {
		t.Errorf("record %+v", record)
	}
}
