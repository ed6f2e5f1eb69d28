package conversation

import (
	"reflect"
	"testing"

	"github.com/go-json-experiment/json"
)

func TestFindResumable(t *testing.T) {
	old := &ClaudeAgentSDKState{SessionID: "old"}
	empty := &ClaudeAgentSDKState{}
	other := &GenericAdapterState{AdapterType: AdapterOpenAI, SessionID: "o", CanResume: true}
	states := []AdapterState{old, other, empty, nil}
	got, ok := FindResumable(states, AdapterClaudeAgentSDK)
	if !ok || got != old {
		t.Errorf("got %v %v, want the latest resumable Claude state", got, ok)
	}
	if _, ok := FindResumable(states, "langgraph"); ok {
		t.Error("found a state of a type never reported")
	}
	if got, _ := FindResumable(states, AdapterOpenAI); got != other {
		t.Errorf("generic: got %v", got)
	}
}

func TestAdapterStatesJSON(t *testing.T) {
	in := AdapterStates{
		&ClaudeAgentSDKState{SessionID: "s", WorkspacePath: "/w", PromptName: "p", MessageCount: 3, IsComplete: true},
		&GenericAdapterState{AdapterType: "langgraph", SessionID: "t", CanResume: true, Data: []byte(`{"k":1}`)},
	}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out AdapterStates
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || *out[0].(*ClaudeAgentSDKState) != *in[0].(*ClaudeAgentSDKState) || out[1].Session() != "t" || !out[1].Resumable() {
		t.Errorf("round trip: %s", data)
	}
	for _, bad := range []string{`[{"type":"","state":{}}]`, `[{"type":"x","state":{"adapterType":"y"}}]`, `[{"type":"claude-agent-sdk","state":[]}]`, `[{"type":"x","state":7}]`, `{}`} {
		var out AdapterStates
		if err := json.Unmarshal([]byte(bad), &out); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
	if _, err := json.Marshal(AdapterStates{nil}); err == nil {
		t.Error("a nil adapter state encoded")
	}
}

// FuzzDecodeAdapterState: a state decodes or is refused; one that decodes is of the type it
// was decoded as, and survives the AdapterStates envelope (how snapshots carry it) unchanged.
func FuzzDecodeAdapterState(f *testing.F) {
	f.Add(AdapterClaudeAgentSDK, []byte(`{"sessionId":"s1","createdAt":"2026-01-02T03:04:05Z","workspacePath":"/w","messageCount":3,"isComplete":true,"forkedFrom":"s0"}`))
	f.Add("langgraph", []byte(`{"adapterType":"langgraph","sessionId":"g","resumable":true,"data":{"thread":1}}`))
	f.Add(AdapterOpenAI, []byte(`{"sessionId":"o"}`))
	f.Add("langgraph", []byte(`{"adapterType":"other"}`))
	f.Fuzz(func(t *testing.T, adapterType string, data []byte) {
		s, err := DecodeAdapterState(adapterType, data)
		if err != nil {
			return
		}
		if s.Type() != adapterType {
			t.Fatalf("decoded as %q, reports type %q", adapterType, s.Type())
		}
		encoded, err := json.Marshal(AdapterStates{s})
		if err != nil {
			t.Fatalf("a decoded state does not encode: %v", err)
		}
		var back AdapterStates
		if err := json.Unmarshal(encoded, &back); err != nil {
			t.Fatalf("encoded state %s does not decode: %v", encoded, err)
		}
		if len(back) != 1 || !reflect.DeepEqual(back[0], s) {
			t.Fatalf("round trip changed the state:\n got %#v\nwant %#v", back, s)
		}
		if back[0].Resumable() != s.Resumable() || back[0].Session() != s.Session() {
			t.Fatalf("round trip changed resumability or session: %#v", back[0])
		}
	})
}
