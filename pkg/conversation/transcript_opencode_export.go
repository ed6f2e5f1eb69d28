package conversation

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// OpenCodeExportOptions say which session an OpenCode export is for.
type OpenCodeExportOptions struct {
	// SessionID is the session id to write (default State.SessionID). A fork writes a new id;
	// the imported session id is then replaced wherever the export held it.
	SessionID string
	// Directory is the session's working directory (default State.CWD).
	Directory string
}

// ExportOpenCode writes the state as an OpenCode session export, the JSON `opencode export`
// prints. What was imported with ImportOpenCode is written back from what the import kept
// (State.Source, each message's Source.Raw) with the model's values laid over it: an export
// of an unchanged import is the same JSON as the file read, and a block that changed (a
// result cleared by compaction) or a message added since is written from the model.
//
// A tool_use block and its tool_result become one tool part (completed, or error when the
// result is an error, or running when it has none). Thinking becomes reasoning. Blocks with
// no OpenCode form (images, documents, redacted thinking, blocks kept raw from another
// provider), tool results whose call is not in the conversation, the system prompt, raw
// Claude records and subagent threads (child sessions are exported on their own) are left
// out. A RoleSystem message (a compaction summary) is written as a user message.
func ExportOpenCode(s *State, opts OpenCodeExportOptions) ([]byte, error) {
	w := &openCodeWriter{sessionID: opts.SessionID, results: pairResults(s.Messages)}
	if w.sessionID == "" {
		w.sessionID = s.SessionID
	}
	dir := opts.Directory
	if dir == "" {
		dir = s.CWD
	}
	top, err := w.session(s, dir)
	if err != nil {
		return nil, fmt.Errorf("conversation: OpenCode export: session info: %w", err)
	}
	entries := make([]jsontext.Value, 0, len(s.Messages))
	for i := range s.Messages {
		entry, err := w.message(&s.Messages[i])
		if err != nil {
			return nil, fmt.Errorf("conversation: OpenCode export: message %s: %w", s.Messages[i].ID, err)
		}
		if entry != nil {
			entries = append(entries, entry)
		}
	}
	out, err := fillArray(top, "messages", entries)
	if err != nil {
		return nil, fmt.Errorf("conversation: OpenCode export: %w", err)
	}
	if err := out.Indent(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true), jsontext.WithIndent("  ")); err != nil {
		return nil, fmt.Errorf("conversation: OpenCode export: %w", err)
	}
	return append(out, '\n'), nil
}

type openCodeWriter struct {
	sessionID string
	// oldSession is the session id of the imported export; members holding it are renamed
	// to sessionID when the two differ (a fork).
	oldSession string
	// results are the tool results by the call (its block) they answer.
	results map[*Block]*Block
}

// pairResults pairs every tool result with the call it answers: the first call before it
// with its id that has no result yet, or the one whose part the result was imported from
// (ids can repeat).
func pairResults(msgs []Message) map[*Block]*Block {
	pairs := map[*Block]*Block{}
	open := map[string][]*Block{}
	for i := range msgs {
		for k := range msgs[i].Blocks {
			b := &msgs[i].Blocks[k]
			switch {
			case b.Type == BlockToolUse && msgs[i].Role != RoleTool:
				open[b.ToolUseID] = append(open[b.ToolUseID], b)
			case b.Type == BlockToolResult && msgs[i].Role == RoleTool:
				calls := open[b.ToolUseID]
				if len(calls) == 0 {
					continue // answers no call: OpenCode has no place for it
				}
				j := 0 // the first open call, or the one whose part the result came from
				for c := range calls {
					if calls[c].ID+"/result" == b.ID {
						j = c
						break
					}
				}
				pairs[calls[j]] = b
				open[b.ToolUseID] = slices.Delete(calls, j, j+1)
			}
		}
	}
	return pairs
}

// fillArray sets obj's member name to the items. A member the import left null or absent
// stays so when there are no items, so a round trip writes it back as it was.
func fillArray(obj jsontext.Value, name string, items []jsontext.Value) (jsontext.Value, error) {
	if len(items) == 0 {
		if v, ok := memberOf(obj, name); !ok || v.Kind() != '[' {
			return obj, nil
		}
	}
	if items == nil {
		items = []jsontext.Value{}
	}
	arr, err := json.Marshal(items, lenientJSON)
	if err != nil {
		return nil, err
	}
	return replaceMembers(obj, member{name, arr})
}

// session is the export object without its messages: the imported one with the session id
// and directory laid over it, or a new one.
func (w *openCodeWriter) session(s *State, dir string) (jsontext.Value, error) {
	if s.Source.Kind == SourceOpenCode && s.Source.Raw.Kind() == '{' {
		top := s.Source.Raw
		var head struct {
			Info openCodeSession `json:"info"`
		}
		if err := json.Unmarshal(top, &head, lenientJSON); err != nil {
			return nil, err
		}
		w.oldSession = head.Info.ID
		var edits []pathEdit
		if w.sessionID != "" && w.sessionID != head.Info.ID {
			edits = append(edits, pathEdit{[]string{"info", "id"}, mustString(w.sessionID)})
		}
		if dir != "" && dir != head.Info.Directory {
			edits = append(edits, pathEdit{[]string{"info", "directory"}, mustString(dir)})
		}
		return editPaths(top, edits...)
	}
	info := openCodeOutSession{ID: w.sessionID, Title: sessionTitle(s), Directory: dir}
	if n := len(s.Messages); n > 0 {
		info.Time.Created = s.Messages[0].CreatedAt.UnixMilli()
		info.Time.Updated = s.Messages[n-1].CreatedAt.UnixMilli()
		if s.Messages[0].CreatedAt.IsZero() {
			info.Time.Created = 0
		}
		if s.Messages[n-1].CreatedAt.IsZero() {
			info.Time.Updated = 0
		}
	}
	raw, err := json.Marshal(&info, lenientJSON)
	if err != nil {
		return nil, err
	}
	return replaceMembers(jsontext.Value(`{}`), member{"info", raw}, member{"messages", jsontext.Value(`[]`)})
}

type openCodeOutSession struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Directory string `json:"directory,omitzero"`
	Time      struct {
		Created int64 `json:"created,omitzero"`
		Updated int64 `json:"updated,omitzero"`
	} `json:"time"`
}

// sessionTitle is the first line of the first prompt, as OpenCode titles a new session.
func sessionTitle(s *State) string {
	for i := range s.Messages {
		if s.Messages[i].Role != RoleUser {
			continue
		}
		title, _, _ := strings.Cut(strings.TrimSpace(s.Messages[i].Text()), "\n")
		if r := []rune(title); len(r) > 80 {
			title = string(r[:80])
		}
		return title
	}
	return ""
}

// message is the export entry of a message, or nil when it has nothing OpenCode holds. A
// RoleTool message's results go into the tool parts of their calls; other blocks it holds
// (user text a provider sent with the results) become a user message.
func (w *openCodeWriter) message(m *Message) (jsontext.Value, error) {
	if m.Role == RoleTool {
		rest := Message{ID: m.ID, ParentID: m.ParentID, Role: RoleUser, CreatedAt: m.CreatedAt}
		for _, b := range m.Blocks {
			if b.Type != BlockToolResult {
				rest.Blocks = append(rest.Blocks, b)
			}
		}
		if len(rest.Blocks) == 0 {
			return nil, nil
		}
		m = &rest
	}
	var src openCodeSource
	if m.Source.Kind != SourceOpenCode || json.Unmarshal(m.Source.Raw, &src, lenientJSON) != nil {
		src = openCodeSource{}
	}
	shell, records := src.Entry, src.Layout
	if shell.Kind() != '{' && src.Info.Kind() == '{' {
		// Kept by schema 1.0: the info, and only the parts that became no block.
		var err error
		if shell, err = replaceMembers(jsontext.Value(`{}`), member{"info", src.Info}, member{"parts", jsontext.Value(`[]`)}); err != nil {
			return nil, err
		}
		for _, p := range src.Parts {
			records = append(records, openCodePartRecord{Part: p})
		}
	}
	var info jsontext.Value
	oldID := m.ID
	if v, ok := memberOf(shell, "info"); ok && shell.Kind() == '{' {
		var oi openCodeInfo
		if err := json.Unmarshal(v, &oi, lenientJSON); err != nil {
			return nil, err
		}
		oldID = oi.ID
		var err error
		if info, err = w.patchInfo(v, &oi, m); err != nil {
			return nil, err
		}
	} else {
		shell, records = jsontext.Value(`{"info":{},"parts":[]}`), nil
		var err error
		if info, err = w.newInfo(m); err != nil {
			return nil, err
		}
	}
	parts, err := w.parts(m, records, oldID)
	if err != nil {
		return nil, err
	}
	if shell, err = replaceMembers(shell, member{"info", info}); err != nil {
		return nil, err
	}
	return fillArray(shell, "parts", parts)
}

func openCodeRoleName(r Role) string {
	if r == RoleAssistant {
		return "assistant"
	}
	return "user"
}

// renames are the edits that follow a fork (a new session id) or a renamed message: members
// that held the old id get the new one.
func (w *openCodeWriter) renames(sessionID, messageID, oldMessageID, newMessageID string) []pathEdit {
	var edits []pathEdit
	if w.oldSession != "" && w.sessionID != "" && w.sessionID != w.oldSession && sessionID == w.oldSession {
		edits = append(edits, pathEdit{[]string{"sessionID"}, mustString(w.sessionID)})
	}
	if messageID != "" && messageID == oldMessageID && newMessageID != oldMessageID {
		edits = append(edits, pathEdit{[]string{"messageID"}, mustString(newMessageID)})
	}
	return edits
}

// patchInfo lays the message's header over the imported info: a member is rewritten only
// where the model no longer says what the import read from it.
func (w *openCodeWriter) patchInfo(info jsontext.Value, oi *openCodeInfo, m *Message) (jsontext.Value, error) {
	var head struct {
		SessionID string `json:"sessionID"`
	}
	_ = json.Unmarshal(info, &head, lenientJSON)
	edits := w.renames(head.SessionID, "", "", "")
	set := func(value string, path ...string) {
		var v jsontext.Value
		if value != "" {
			v = mustString(value)
		}
		edits = append(edits, pathEdit{path, v})
	}
	if oi.ID != m.ID {
		set(m.ID, "id")
	}
	if r, _ := openCodeRole(oi.Role); r != m.Role && oi.Role != openCodeRoleName(m.Role) {
		set(openCodeRoleName(m.Role), "role")
	}
	if oi.ParentID != m.ParentID {
		set(m.ParentID, "parentID")
	}
	if oi.ModelID != m.Model {
		set(m.Model, "modelID")
	}
	if !m.CreatedAt.IsZero() && !oi.createdAt().Equal(m.CreatedAt) {
		edits = append(edits, pathEdit{[]string{"time", "created"}, mustInt(m.CreatedAt.UnixMilli())})
	}
	if u := m.Usage; oi.Tokens.toUsage() != u {
		edits = append(edits,
			pathEdit{[]string{"tokens", "input"}, mustInt(u.Input)},
			pathEdit{[]string{"tokens", "output"}, mustInt(u.Output)},
			pathEdit{[]string{"tokens", "reasoning"}, mustInt(0)},
			pathEdit{[]string{"tokens", "cache", "read"}, mustInt(u.CacheRead)},
			pathEdit{[]string{"tokens", "cache", "write"}, mustInt(u.CacheWrite)})
	}
	return editPaths(info, edits...)
}

type openCodeOutInfo struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID,omitzero"`
	Role      string `json:"role"`
	Time      struct {
		Created int64 `json:"created,omitzero"`
	} `json:"time"`
	ParentID string         `json:"parentID,omitzero"`
	ModelID  string         `json:"modelID,omitzero"`
	Tokens   *openCodeUsage `json:"tokens,omitzero"`
}

func (w *openCodeWriter) newInfo(m *Message) (jsontext.Value, error) {
	info := openCodeOutInfo{ID: m.ID, SessionID: w.sessionID, Role: openCodeRoleName(m.Role), ParentID: m.ParentID, ModelID: m.Model}
	if !m.CreatedAt.IsZero() {
		info.Time.Created = m.CreatedAt.UnixMilli()
	}
	if u := m.Usage; !u.IsZero() {
		info.Tokens = &openCodeUsage{Input: u.Input, Output: u.Output}
		info.Tokens.Cache.Read, info.Tokens.Cache.Write = u.CacheRead, u.CacheWrite
	}
	return json.Marshal(&info, lenientJSON)
}

// parts writes the message's parts: the kept ones in their order, each part that became a
// block laid over with that block (found by the part's id), and blocks with no kept part
// (added since the import) as new parts where they stand among the others.
func (w *openCodeWriter) parts(m *Message, records []openCodePartRecord, oldID string) ([]jsontext.Value, error) {
	heads := make([]openCodePart, len(records))
	assigned := make([]int, len(records))
	claimed := make([]bool, len(m.Blocks))
	cursor := 0
	for r := range records {
		assigned[r] = -1
		if !records[r].Block {
			continue
		}
		if err := json.Unmarshal(records[r].Part, &heads[r], lenientJSON); err != nil {
			return nil, err
		}
		if k := matchBlock(m.Blocks, claimed, cursor, &heads[r]); k >= 0 {
			assigned[r], claimed[k], cursor = k, true, k+1
		}
	}
	out := make([]jsontext.Value, 0, len(records)+len(m.Blocks))
	next := 0
	flush := func(upTo int) {
		for ; next < upTo; next++ {
			if !claimed[next] {
				if p, ok := w.newPart(m, next); ok {
					out = append(out, p)
				}
			}
		}
	}
	for r, rec := range records {
		if !rec.Block {
			var head openCodePart
			_ = json.Unmarshal(rec.Part, &head, lenientJSON)
			p, err := editPaths(rec.Part, w.renames(head.SessionID, head.MessageID, oldID, m.ID)...)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
			continue
		}
		k := assigned[r]
		if k < 0 {
			continue // its block is gone (edited out of the conversation)
		}
		flush(k)
		if next == k {
			next++
		}
		p, err := w.blockPart(rec, &heads[r], &m.Blocks[k], m, oldID)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	flush(len(m.Blocks))
	return out, nil
}

// matchBlock finds the unclaimed block a kept part became: same id, a block kind the part
// type makes; the search starts at cursor so that parts sharing an id match in order.
func matchBlock(blocks []Block, claimed []bool, cursor int, head *openCodePart) int {
	n := len(blocks)
	for i := range n {
		k := (cursor + i) % n
		if !claimed[k] && blocks[k].ID == head.ID && partBlockType(head.Type) == blocks[k].Type {
			return k
		}
	}
	return -1
}

func partBlockType(partType string) BlockType {
	switch partType {
	case "text":
		return BlockText
	case "reasoning":
		return BlockThinking
	case "tool":
		return BlockToolUse
	}
	return ""
}

// blockPart lays a block over the part it came from: the held members are written from the
// block, the others only where the block no longer says what the import read.
func (w *openCodeWriter) blockPart(rec openCodePartRecord, head *openCodePart, b *Block, m *Message, oldID string) (jsontext.Value, error) {
	held := map[string]bool{}
	for _, h := range rec.Held {
		held[h] = true
	}
	edits := w.renames(head.SessionID, head.MessageID, oldID, m.ID)
	if head.ID != b.ID {
		edits = append(edits, pathEdit{[]string{"id"}, mustString(b.ID)})
	}
	if b.Type != BlockToolUse {
		if held["text"] || b.Text != "" {
			edits = append(edits, pathEdit{[]string{"text"}, mustString(b.Text)})
		}
		return editPaths(rec.Part, edits...)
	}
	if head.CallID != b.ToolUseID {
		edits = append(edits, pathEdit{[]string{"callID"}, mustString(b.ToolUseID)})
	}
	if head.Tool != b.ToolName {
		edits = append(edits, pathEdit{[]string{"tool"}, mustString(b.ToolName)})
	}
	if held["state.input"] || len(b.Input) > 0 {
		edits = append(edits, pathEdit{[]string{"state", "input"}, toolInput(b)})
	}
	status := ""
	if head.State != nil {
		status = head.State.Status
	}
	res := w.results[b]
	want := toolStatus(res, status)
	if want != status {
		edits = append(edits, pathEdit{[]string{"state", "status"}, mustString(want)})
	}
	if res != nil {
		key := "output"
		if res.IsError {
			key = "error"
		}
		if text := resultText(res); held["state."+key] || text != "" || want != status {
			edits = append(edits, pathEdit{[]string{"state", key}, mustString(text)})
		}
	}
	return editPaths(rec.Part, edits...)
}

// toolStatus is the status a tool part has with the result res: the imported status while
// it still says the same (completed: a result; error: an error result; anything else: none).
func toolStatus(res *Block, imported string) string {
	switch {
	case res == nil && (imported == "completed" || imported == "error"):
		return "running"
	case res == nil:
		return imported
	case res.IsError:
		return "error"
	default:
		return "completed"
	}
}

// resultText is a tool result as the one string OpenCode holds.
func resultText(b *Block) string {
	if b.Content == nil {
		return b.Text
	}
	var texts []string
	for i := range b.Content {
		if b.Content[i].Type == BlockText {
			texts = append(texts, b.Content[i].Text)
		}
	}
	return strings.Join(texts, "\n")
}

type openCodeOutPart struct {
	ID        string            `json:"id"`
	SessionID string            `json:"sessionID,omitzero"`
	MessageID string            `json:"messageID"`
	Type      string            `json:"type"`
	Text      *string           `json:"text,omitzero"`
	CallID    string            `json:"callID,omitzero"`
	Tool      string            `json:"tool,omitzero"`
	State     *openCodeOutState `json:"state,omitzero"`
}

type openCodeOutState struct {
	Status string         `json:"status"`
	Input  jsontext.Value `json:"input"`
	Output *string        `json:"output,omitzero"`
	Error  *string        `json:"error,omitzero"`
}

// newPart writes block k of m as a new part; false for a block with no OpenCode form.
func (w *openCodeWriter) newPart(m *Message, k int) (jsontext.Value, bool) {
	b := &m.Blocks[k]
	p := openCodeOutPart{ID: b.ID, SessionID: w.sessionID, MessageID: m.ID}
	if p.ID == "" {
		sum := sha256.Sum256(fmt.Appendf(nil, "parley:%s:%d", m.ID, k))
		p.ID = "prt_parley_" + hex.EncodeToString(sum[:12])
	}
	switch {
	case len(b.Raw) > 0:
		return nil, false
	case b.Type == BlockText:
		p.Type, p.Text = "text", &b.Text
	case b.Type == BlockThinking:
		p.Type, p.Text = "reasoning", &b.Text
	case b.Type == BlockToolUse:
		p.Type, p.CallID, p.Tool = "tool", b.ToolUseID, b.ToolName
		res := w.results[b]
		p.State = &openCodeOutState{Status: toolStatus(res, "running"), Input: toolInput(b)}
		if res != nil {
			text := resultText(res)
			if res.IsError {
				p.State.Error = &text
			} else {
				p.State.Output = &text
			}
		}
	default:
		return nil, false
	}
	v, err := json.Marshal(&p, lenientJSON)
	return v, err == nil
}

func mustInt(n int64) jsontext.Value {
	v, _ := json.Marshal(n)
	return v
}
