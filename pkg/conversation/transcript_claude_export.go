package conversation

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/uuid"
)

// ClaudeExportOptions say where the exported session lives.
type ClaudeExportOptions struct {
	// SessionID is the session id to write (default State.SessionID). A fork writes a new id.
	SessionID string
	// CWD is the agent's working directory in the pod that resumes (default State.CWD). The
	// SDK finds a session only under the cwd it runs in.
	CWD string
	// RealPath, when set, resolves CWD to the path the CLI will see: the CLI files a session
	// under the real path of its working directory (symlinks resolved), and so must the
	// export. Pass filepath.EvalSymlinks where the directory exists (in the agent's pod); a
	// caller that cannot see that filesystem (the manager) leaves it nil and CWD is used as
	// given, so it must already be a real path.
	RealPath func(string) (string, error)
}

// ExportedFile is one file of an export, at a path relative to the Claude config directory
// (CLAUDE_CONFIG_DIR).
type ExportedFile struct {
	Path    string
	Content []byte
}

// ExportClaude writes the state as Claude Code transcripts in the layout the Claude Agent SDK
// reads, so resume=<session id> works: the main transcript first, then one file per
// subagent that has an agent id. Line uuids are the block ids; parentUuid is recomputed as a
// single chain so the SDK walks the whole history. The system prompt is not written: the SDK
// takes it from its options.
func ExportClaude(s *State, opts ClaudeExportOptions) ([]ExportedFile, error) {
	if opts.SessionID == "" {
		opts.SessionID = s.SessionID
	}
	if opts.CWD == "" {
		opts.CWD = s.CWD
	}
	if opts.SessionID == "" {
		return nil, fmt.Errorf("conversation: export to Claude needs a session id")
	}
	if !claudeFileID(opts.SessionID) {
		return nil, fmt.Errorf("conversation: session id %q cannot name a transcript file", opts.SessionID)
	}
	for _, id := range exportedThreads(s) {
		if !claudeFileID(id) {
			return nil, fmt.Errorf("conversation: subagent id %q cannot name a transcript file", id)
		}
	}
	if opts.RealPath != nil && opts.CWD != "" {
		resolved, err := opts.RealPath(opts.CWD)
		if err != nil {
			return nil, fmt.Errorf("conversation: resolve the working directory: %w", err)
		}
		opts.CWD = resolved
	}
	// A line keeps its own session id and cwd unless the export is for another session or
	// directory than the state's (a fork, another pod), which then replace them everywhere.
	keep := keptMembers{sessionID: opts.SessionID == s.SessionID, cwd: opts.CWD == s.CWD}
	main, err := exportClaudeThread(s.Messages, s.Records, "", opts, keep)
	if err != nil {
		return nil, err
	}
	files := []ExportedFile{{Path: ClaudeTranscriptPath(opts.CWD, opts.SessionID), Content: main}}
	written := map[string]bool{"": true}
	for _, sub := range flattenSubagents(s.Subagents) {
		if sub.AgentID == "" {
			continue
		}
		content, err := exportClaudeThread(sub.Messages, s.Records, sub.AgentID, opts, keep)
		if err != nil {
			return nil, fmt.Errorf("subagent %s: %w", sub.AgentID, err)
		}
		files = append(files, ExportedFile{Path: ClaudeSubagentPath(opts.CWD, opts.SessionID, sub.AgentID), Content: content})
		written[sub.AgentID] = true
	}
	// Records of a subagent transcript that held no message (only progress or system
	// lines) go back to a file of their own.
	for _, r := range s.Records {
		if written[r.Thread] {
			continue
		}
		written[r.Thread] = true
		content, _ := exportClaudeThread(nil, s.Records, r.Thread, opts, keep) // no messages: cannot fail
		files = append(files, ExportedFile{Path: ClaudeSubagentPath(opts.CWD, opts.SessionID, r.Thread), Content: content})
	}
	return files, nil
}

// keptMembers says which members a line read from a transcript keeps as they were.
type keptMembers struct {
	sessionID, cwd bool
}

type claudeWriter struct {
	buf      bytes.Buffer
	opts     ClaudeExportOptions
	keep     keptMembers
	agentID  string
	lastLine string
	// lastUUID is the uuid of the last line written that has one (message or raw line).
	lastUUID string
	// after are the records to write after a line of a message that is not its last, by the
	// line's uuid.
	after map[string][]jsontext.Value
	clock claudeClock
	// rawSince are the uuids of the raw lines written since the last message line. A message
	// line that followed one of them in its transcript keeps it as its parent: a compacted
	// session's summary stays below its compact_boundary line (whose null parent is where
	// the SDK stops loading history), a line below a progress line stays there.
	rawSince []string
}

func exportClaudeThread(messages []Message, records []RawRecord, thread string, opts ClaudeExportOptions, keep keptMembers) ([]byte, error) {
	w := &claudeWriter{opts: opts, keep: keep, agentID: thread, clock: newClaudeClock(messages), after: map[string][]jsontext.Value{}}
	known := make(map[string]bool, len(messages))
	for i := range messages {
		known[messages[i].ID] = true
	}
	after := map[string][]jsontext.Value{}
	var orphans []jsontext.Value
	for _, r := range records {
		switch {
		case r.Thread != thread:
		case r.AfterLine != "" && known[r.AfterID]:
			w.after[r.AfterID+"\x00"+r.AfterLine] = append(w.after[r.AfterID+"\x00"+r.AfterLine], r.Raw)
		case r.AfterID == "" || known[r.AfterID]:
			after[r.AfterID] = append(after[r.AfterID], r.Raw)
		default:
			orphans = append(orphans, r.Raw)
		}
	}
	w.raw(after[""])
	for i := range messages {
		if err := w.message(&messages[i]); err != nil {
			return nil, fmt.Errorf("message %s: %w", messages[i].ID, err)
		}
		w.raw(w.unwritten(messages[i].ID)) // records after a line the message no longer has
		w.raw(after[messages[i].ID])
	}
	w.raw(orphans)
	return w.buf.Bytes(), nil
}

func (w *claudeWriter) raw(lines []jsontext.Value) {
	for _, l := range lines {
		w.buf.Write(l)
		w.buf.WriteByte('\n')
		var head struct {
			UUID string `json:"uuid"`
		}
		if json.Unmarshal(l, &head, lenientJSON) == nil && head.UUID != "" {
			w.rawSince = append(w.rawSince, head.UUID)
			w.lastUUID = head.UUID
		}
	}
}

// unwritten takes the records kept after a line of the message that were not written after
// it (the line is gone or was regrouped).
func (w *claudeWriter) unwritten(messageID string) []jsontext.Value {
	var out []jsontext.Value
	for key, lines := range w.after {
		if strings.HasPrefix(key, messageID+"\x00") {
			out = append(out, lines...)
			delete(w.after, key)
		}
	}
	return out
}

// parentOf is the parentUuid of a message line: its own while the line that preceded it in
// its transcript is the line just written (the chain there is as the transcript had it);
// else the raw line it followed in its transcript when that line was just written, else the
// previous message line.
func (w *claudeWriter) parentOf(line jsontext.Value, rec *claudeLineRecord) jsontext.Value {
	if rec.Prev != nil && *rec.Prev == w.lastUUID {
		if own, ok := memberOf(line, "parentUuid"); ok {
			return own
		}
	}
	if len(w.rawSince) > 0 && len(line) > 0 {
		var head struct {
			ParentUUID string `json:"parentUuid"`
		}
		if json.Unmarshal(line, &head, lenientJSON) == nil && head.ParentUUID != "" && slices.Contains(w.rawSince, head.ParentUUID) {
			return mustString(head.ParentUUID)
		}
	}
	return w.parent()
}

// lineGroups splits a message's blocks into the transcript lines they came from, or one line
// per block when the message did not come from a transcript or its blocks changed since.
func lineGroups(m *Message) []claudeLineRecord {
	var recs []claudeLineRecord
	if m.Source.Kind == SourceClaudeCode && len(m.Source.Raw) > 0 {
		if json.Unmarshal(m.Source.Raw, &recs, lenientJSON) == nil {
			total := 0
			for _, r := range recs {
				if r.Blocks < 0 {
					total = -1
					break
				}
				total += r.Blocks
			}
			if total == len(m.Blocks) {
				return recs
			}
		}
		recs = nil
	}
	if len(m.Blocks) == 0 {
		return []claudeLineRecord{{}}
	}
	for range m.Blocks {
		recs = append(recs, claudeLineRecord{Blocks: 1})
	}
	return recs
}

func (w *claudeWriter) message(m *Message) error {
	next := 0
	for k, rec := range lineGroups(m) {
		blocks := sendable(inLineOrder(m.Blocks[next:next+rec.Blocks], rec.Order))
		next += rec.Blocks
		if len(blocks) == 0 && rec.Blocks > 0 {
			continue
		}
		id := lineUUID(m, blocks, k, rec.Line)
		var content jsontext.Value
		if !rec.KeepContent || len(rec.Line) == 0 {
			var err error
			if content, err = claudeContent(blocks, rec.StringContent); err != nil {
				return err
			}
		}
		var line jsontext.Value
		var err error
		if len(rec.Line) > 0 {
			line, err = w.rewriteLine(rec.Line, &rec, m, id, content)
		} else {
			line, err = w.newLine(m, id, content)
		}
		if err != nil {
			return err
		}
		w.buf.Write(line)
		w.buf.WriteByte('\n')
		w.lastLine, w.lastUUID = id, id
		w.rawSince = w.rawSince[:0]
		if src := lineUUIDOf(rec.Line); src != "" {
			key := m.ID + "\x00" + src
			w.raw(w.after[key])
			delete(w.after, key)
		}
	}
	return nil
}

// inLineOrder puts a line's blocks back in the order the line had them (see
// claudeLineRecord.Order); blocks whose count changed are left as they are.
func inLineOrder(blocks []Block, order []int) []Block {
	if len(order) != len(blocks) {
		return blocks
	}
	out := make([]Block, len(blocks))
	for k, pos := range order {
		if pos < 0 || pos >= len(out) || out[pos].Type != "" {
			return blocks
		}
		out[pos] = blocks[k]
	}
	return out
}

// lineUUIDOf is the uuid of a kept transcript line.
func lineUUIDOf(line jsontext.Value) string {
	if len(line) == 0 {
		return ""
	}
	var head struct {
		UUID string `json:"uuid"`
	}
	if json.Unmarshal(line, &head, lenientJSON) != nil {
		return ""
	}
	return head.UUID
}

// lineUUID is the uuid of an exported line: its first block's id when that is a UUID (the
// uuid of the line it came from), else, for a line without blocks, the uuid of the source
// line, else one derived from the block or message id.
func lineUUID(m *Message, blocks []Block, k int, source jsontext.Value) string {
	// The line it came from, while its blocks are still that line's (their ids derive from it).
	if src := lineUUIDOf(source); src != "" && (len(blocks) == 0 || blocks[0].ID == src || strings.HasPrefix(blocks[0].ID, src+"#")) {
		return src
	}
	for _, b := range blocks {
		if _, err := uuid.Parse(b.ID); err == nil && b.ID != "" {
			return b.ID
		}
	}
	if len(blocks) == 0 && len(source) > 0 {
		var head struct {
			UUID string `json:"uuid"`
		}
		if json.Unmarshal(source, &head, lenientJSON) == nil && head.UUID != "" {
			if _, err := uuid.Parse(head.UUID); err == nil {
				return head.UUID
			}
		}
	}
	if len(blocks) > 0 && blocks[0].ID != "" {
		return uuid.NewSHA1(uuid.NameSpaceURL, []byte("parley:"+blocks[0].ID)).String()
	}
	if k == 0 && m.ID != "" {
		if _, err := uuid.Parse(m.ID); err == nil {
			return m.ID
		}
	}
	return uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "parley:%s:%d", m.ID, k)).String()
}

func claudeContent(blocks []Block, asString bool) (jsontext.Value, error) {
	if asString && len(blocks) == 1 && blocks[0].Type == BlockText {
		return json.Marshal(blocks[0].Text, lenientJSON)
	}
	items := make([]jsontext.Value, 0, len(blocks))
	for i := range blocks {
		item, err := blockToAnthropic(&blocks[i])
		if err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	return json.Marshal(items, lenientJSON)
}

func (w *claudeWriter) parent() jsontext.Value {
	if w.lastLine == "" {
		return jsontext.Value("null")
	}
	v, _ := json.Marshal(w.lastLine, lenientJSON)
	return v
}

// rewriteLine writes a line read from a transcript: its members as read, with the blocks as
// message.content (unless the line held none: then as read), the chain (parentUuid, uuid),
// and what the CLI needs to resume that the line lacks (sessionId, cwd, timestamp).
func (w *claudeWriter) rewriteLine(line jsontext.Value, rec *claudeLineRecord, m *Message, id string, content jsontext.Value) (jsontext.Value, error) {
	set := []member{
		{"parentUuid", w.parentOf(line, rec)},
		{"uuid", mustString(id)},
	}
	if _, ok := memberOf(line, "sessionId"); !ok || !w.keep.sessionID {
		set = append(set, member{"sessionId", mustString(w.opts.SessionID)})
	}
	if _, ok := memberOf(line, "cwd"); w.opts.CWD != "" && (!ok || !w.keep.cwd) {
		set = append(set, member{"cwd", mustString(w.opts.CWD)})
	}
	if !w.clock.keep(line) {
		set = append(set, member{"timestamp", mustString(w.clock.stamp(m.CreatedAt))})
	}
	return rewriteObject(line, func(name string, v jsontext.Value) (jsontext.Value, error) {
		for _, m := range set {
			if m.name == name {
				return m.value, nil
			}
		}
		if name == "message" && v.Kind() == '{' && content != nil {
			return replaceMembers(v, member{"content", content})
		}
		return v, nil
	}, set...)
}

type claudeOutLine struct {
	ParentUUID       jsontext.Value `json:"parentUuid"`
	IsSidechain      bool           `json:"isSidechain"`
	UserType         string         `json:"userType"`
	CWD              string         `json:"cwd,omitzero"`
	SessionID        string         `json:"sessionId"`
	AgentID          string         `json:"agentId,omitzero"`
	Type             string         `json:"type"`
	Message          claudeOutMsg   `json:"message"`
	IsMeta           bool           `json:"isMeta,omitzero"`
	IsCompactSummary bool           `json:"isCompactSummary,omitzero"`
	UUID             string         `json:"uuid"`
	Timestamp        string         `json:"timestamp"`
}

// claudeSyntheticModel is the model Claude Code writes on assistant messages it made up.
const claudeSyntheticModel = "<synthetic>"

type claudeOutMsg struct {
	ID      string          `json:"id,omitzero"`
	Type    string          `json:"type,omitzero"`
	Role    string          `json:"role"`
	Model   string          `json:"model,omitzero"`
	Content jsontext.Value  `json:"content"`
	Usage   *anthropicUsage `json:"usage,omitzero"`
}

func (w *claudeWriter) newLine(m *Message, id string, content jsontext.Value) (jsontext.Value, error) {
	out := claudeOutLine{
		ParentUUID:       w.parent(),
		IsSidechain:      w.agentID != "" || m.Flags.Has(FlagSidechain),
		UserType:         "external",
		CWD:              w.opts.CWD,
		SessionID:        w.opts.SessionID,
		AgentID:          w.agentID,
		Type:             "user",
		Message:          claudeOutMsg{Role: "user", Content: content},
		IsMeta:           m.Flags.Has(FlagMeta),
		IsCompactSummary: m.Flags.Has(FlagCompactSummary),
		UUID:             id,
		Timestamp:        w.clock.stamp(m.CreatedAt),
	}
	if m.Role == RoleAssistant {
		out.Type = "assistant"
		apiID := ""
		if len(m.Source.IDs) > 0 {
			apiID = m.Source.IDs[0]
		}
		if apiID == "" || !strings.HasPrefix(apiID, "msg_") {
			apiID = "msg_parley_" + strings.ReplaceAll(uuid.NewSHA1(uuid.NameSpaceURL, []byte(m.ID)).String(), "-", "")
		}
		model := m.Model
		if model == "" {
			// Claude Code 2.1.197 hangs resuming a session whose assistant line has no model
			// (it reads every one); "<synthetic>" is the CLI's own mark for a message no
			// model wrote, which it skips there.
			model = claudeSyntheticModel
		}
		out.Message = claudeOutMsg{ID: apiID, Type: "message", Role: "assistant", Model: model, Content: content}
		if !m.Usage.IsZero() {
			out.Message.Usage = &anthropicUsage{InputTokens: m.Usage.Input, OutputTokens: m.Usage.Output, CacheReadInputTokens: m.Usage.CacheRead, CacheCreationInputTokens: m.Usage.CacheWrite}
		}
	}
	return json.Marshal(&out, lenientJSON)
}

// exportedThreads are the subagent threads ExportClaude writes a file for: subagents with an
// agent id, and the threads of records.
func exportedThreads(s *State) []string {
	var ids []string
	for _, sub := range flattenSubagents(s.Subagents) {
		if sub.AgentID != "" {
			ids = append(ids, sub.AgentID)
		}
	}
	for _, r := range s.Records {
		if r.Thread != "" {
			ids = append(ids, r.Thread)
		}
	}
	return ids
}
