package conversation

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Claude Code / Claude Agent SDK transcripts: one JSON object per line. A message line has
// type "user" or "assistant", a uuid, a parentUuid and a message; one API message is written
// as several lines, one content block each, sharing message.id. Every other line (queue
// operations, summaries, file-history snapshots, progress, system notices, types not invented
// yet) is kept untouched as a RawRecord.
//
// Each imported message keeps, in Source.Raw, its lines without message.content (see
// claudeLineRecord) so the export writes back every field Parley does not model.

// claudeLineRecord is one transcript line of a message, as stored in Message.Source.Raw.
type claudeLineRecord struct {
	// Line is the transcript line with message.content removed (kept when it held no block).
	Line jsontext.Value `json:"line"`
	// Blocks is how many of the message's blocks, in order, the line carried.
	Blocks int `json:"blocks"`
	// StringContent records that message.content was a plain string, not a list of blocks.
	StringContent bool `json:"stringContent,omitzero"`
	// KeepContent records that message.content is still in Line, as read (it held no block:
	// null, [] or absent), so it is written back untouched.
	KeepContent bool `json:"keepContent,omitzero"`
	// Order is where each of the line's blocks stood in message.content when the model
	// holds them in another order (tool results first): block k of the line was item Order[k].
	Order []int `json:"order,omitzero"`
	// Prev is the uuid of the line with a uuid before this one in its transcript ("" for
	// none); nil in records written before it was kept. While the export writes the line
	// right after that one, the line keeps its own parentUuid.
	Prev *string `json:"prev,omitzero"`
}

type claudeLine struct {
	Type       string `json:"type"`
	UUID       string `json:"uuid"`
	ParentUUID string `json:"parentUuid"`
	// LogicalParentUUID links a compact_boundary line (whose parentUuid is null) to the last
	// line before the compaction.
	LogicalParentUUID string         `json:"logicalParentUuid"`
	SessionID         string         `json:"sessionId"`
	Timestamp         string         `json:"timestamp"`
	CWD               string         `json:"cwd"`
	IsSidechain       bool           `json:"isSidechain"`
	IsCompactSummary  bool           `json:"isCompactSummary"`
	IsMeta            bool           `json:"isMeta"`
	AgentID           string         `json:"agentId"`
	Message           *claudeMessage `json:"message"`
	ToolUseResult     agentRef       `json:"toolUseResult"`
}

// agentRef reads only toolUseResult.agentId, skipping the rest (often a whole file's text)
// without copying it.
type agentRef struct{ AgentID string }

// UnmarshalJSONFrom implements json.UnmarshalerFrom.
func (a *agentRef) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() != '{' {
		return dec.SkipValue()
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if name.String() == "agentId" && dec.PeekKind() == '"' {
			v, err := dec.ReadToken()
			if err != nil {
				return err
			}
			a.AgentID = v.String()
			continue
		}
		if err := dec.SkipValue(); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}

type claudeMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Model   string          `json:"model"`
	Content jsontext.Value  `json:"content"`
	Usage   *anthropicUsage `json:"usage"`
}

type anthropicUsage struct {
	InputTokens              int64 `json:"input_tokens,omitzero"`
	OutputTokens             int64 `json:"output_tokens,omitzero"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens,omitzero"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens,omitzero"`
}

func (u *anthropicUsage) toUsage() Usage {
	if u == nil {
		return Usage{}
	}
	return Usage{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens}
}

// ErrTruncatedTranscript reports a Claude transcript whose last line stops in the middle of
// its JSON object with no newline after it: the writer crashed (or is still writing) while
// appending it. It wraps ErrTranscript. Unlike every other error of the importers, it comes
// with the state of all the complete lines, which the caller may use: the cut line is the only
// thing missing.
var ErrTruncatedTranscript = fmt.Errorf("%w: last line cut short", ErrTranscript)

// ClaudeSubagentFile is one subagent transcript (agent-<AgentID>.jsonl) of a session.
type ClaudeSubagentFile struct {
	AgentID string
	Data    []byte
}

// ImportClaudeJSONL reads a Claude Code / Agent SDK transcript. Sidechain lines in it (older
// Claude Code versions wrote subagents into the main file) become subagent threads. Errors
// are as ImportClaudeSession's: a last line cut mid-write gives the state of the complete
// lines with an ErrTruncatedTranscript error.
func ImportClaudeJSONL(data []byte) (State, error) {
	return ImportClaudeSession(data)
}

// ImportClaudeSession reads a session's main transcript and its subagent transcripts
// (<sessionId>/subagents/agent-<id>.jsonl). A subagent is linked to the Task tool call that
// started it through the tool result's toolUseResult.agentId.
//
// A file whose last line was cut short (see ErrTruncatedTranscript) is read up to that line;
// the state is returned with an error wrapping ErrTruncatedTranscript. Any other error returns
// an empty state.
//
// Bytes that are not UTF-8 (a file cut mid-character) are read as U+FFFD, in the lines kept
// raw as in the decoded strings: a checkpoint would write them so.
func ImportClaudeSession(main []byte, subagents ...ClaudeSubagentFile) (State, error) {
	imp := newClaudeImporter()
	var truncated []error
	if err := imp.readFile(validUTF8(main), ""); errors.Is(err, ErrTruncatedTranscript) {
		truncated = append(truncated, err)
	} else if err != nil {
		return State{}, err
	}
	for _, f := range subagents {
		err := imp.readFile(validUTF8(f.Data), f.AgentID)
		if err != nil {
			err = fmt.Errorf("subagent %s: %w", f.AgentID, err)
		}
		if errors.Is(err, ErrTruncatedTranscript) {
			truncated = append(truncated, err)
		} else if err != nil {
			return State{}, err
		}
	}
	return imp.finish(), errors.Join(truncated...)
}

type claudeImporter struct {
	state   State
	threads map[string]*claudeThread
	order   []string
	// agentTool maps a subagent's agentId to the id of the tool call that started it.
	agentTool map[string]string
	// lastUUID is the uuid of the last line read with one, by thread (see claudeLineRecord.Prev).
	lastUUID map[string]string
}

type claudeThread struct {
	messages []Message
	records  [][]claudeLineRecord
	// byAPIID finds the message an assistant line continues.
	byAPIID map[string]int
	// lineOwner maps every line uuid to the ID of the message that holds it.
	lineOwner map[string]string
	// lastLine is the uuid of the last line of each message.
	lastLine []string
}

func newClaudeImporter() *claudeImporter {
	return &claudeImporter{
		state:     NewState(""),
		threads:   map[string]*claudeThread{},
		agentTool: map[string]string{},
		lastUUID:  map[string]string{},
	}
}

func (imp *claudeImporter) thread(key string) *claudeThread {
	t, ok := imp.threads[key]
	if !ok {
		t = &claudeThread{byAPIID: map[string]int{}, lineOwner: map[string]string{}}
		imp.threads[key] = t
		imp.order = append(imp.order, key)
	}
	return t
}

// readFile reads one file. agentID is "" for the main transcript.
func (imp *claudeImporter) readFile(data []byte, agentID string) error {
	lines, truncated := parseClaudeLines(data)
	if truncated != nil && !errors.Is(truncated, ErrTruncatedTranscript) {
		return truncated
	}
	abandoned := abandonedBranches(lines)
	for i := range lines {
		pl := &lines[i]
		if !pl.decoded || abandoned[i] {
			uuid := pl.line.UUID
			if !pl.decoded {
				uuid = lineUUIDOf(pl.raw) // as the export reads it back
			}
			imp.keepRaw(pl.raw, threadOf(&pl.line, agentID), uuid)
			continue
		}
		if err := imp.readLine(pl.raw, &pl.line, agentID); err != nil {
			return fmt.Errorf("%w: line %d: %w", ErrTranscript, pl.number, err)
		}
	}
	return truncated
}

// parsedLine is one non-empty transcript line; decoded is false for valid JSON of a shape
// the importer does not know.
type parsedLine struct {
	raw     []byte
	number  int
	line    claudeLine
	decoded bool
}

// parseClaudeLines splits a transcript into lines and decodes them. A UTF-8 byte order mark
// before the first line is skipped. Invalid JSON is an ErrTranscript error, except where it
// is what a crash leaves, reported with an ErrTruncatedTranscript error and the lines that
// are whole:
//   - a last line that ends inside its JSON value, with no newline after it;
//   - a line that is the cut-off start of a line followed by a complete one (the session
//     was resumed and appended to the file the crash left): the complete one is read;
//   - zero bytes at the end of the file (what a file system can leave of a lost write).
func parseClaudeLines(data []byte) ([]parsedLine, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	var cuts []error
	if n := len(data); n > 0 && data[n-1] == 0 {
		data = bytes.TrimRight(data, "\x00")
		cuts = append(cuts, fmt.Errorf("%w: %d zero bytes at the end", ErrTruncatedTranscript, n-len(data)))
	}
	lines := make([]parsedLine, 0, bytes.Count(data, []byte{'\n'})+1)
	lineNo := 0
	for len(data) > 0 {
		var line []byte
		last := false
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data, last = data, nil, true
		}
		lineNo++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		pl := parsedLine{raw: line, number: lineNo}
		if err := json.Unmarshal(line, &pl.line, lenientJSON); err != nil {
			pl.line = claudeLine{} // valid JSON of a shape we do not know: kept raw
			if err := validJSON(line); err != nil {
				if last && errors.Is(err, io.ErrUnexpectedEOF) {
					cuts = append(cuts, fmt.Errorf("%w: line %d (%d bytes, no newline): %w", ErrTruncatedTranscript, lineNo, len(line), err))
					return lines, errors.Join(cuts...)
				}
				k := gluedLine(line)
				if k == 0 {
					return nil, fmt.Errorf("%w: line %d: %w", ErrTranscript, lineNo, err)
				}
				cuts = append(cuts, fmt.Errorf("%w: line %d starts with %d bytes of a cut line", ErrTruncatedTranscript, lineNo, k))
				pl.raw = line[k:]
				if pl.decoded = json.Unmarshal(pl.raw, &pl.line, lenientJSON) == nil; !pl.decoded {
					pl.line = claudeLine{}
				}
			}
		} else {
			pl.decoded = true
		}
		lines = append(lines, pl)
	}
	return lines, errors.Join(cuts...)
}

// gluedLine finds, in an invalid line, a complete JSON value appended to the cut-off start
// of another: the offset of a `{"` where the bytes before end inside a JSON value and the
// bytes from it are one. It returns 0 when there is none. Offsets right after '[', ',' or
// ':' (where an object nested in the cut line starts) are not tried, and at most 16 are.
func gluedLine(line []byte) int {
	tries := 0
	for k := 1; k < len(line) && tries < 16; k++ {
		j := bytes.Index(line[k:], []byte(`{"`))
		if j < 0 {
			return 0
		}
		k += j
		if c := line[k-1]; c == '[' || c == ',' || c == ':' {
			continue
		}
		tries++
		if validJSON(line[k:]) == nil && errors.Is(validJSON(line[:k]), io.ErrUnexpectedEOF) {
			return k
		}
	}
	return 0
}

// validJSON reports why a line is not one valid JSON value (nil when it is).
func validJSON(line []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(line), lenientJSON)
	if _, err := dec.ReadValue(); err != nil {
		return err
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("data after the JSON value at offset %d", dec.InputOffset())
	}
	return nil
}

// threadOf is the thread a line belongs to: the subagent file's, a sidechain's agent, or the
// main thread ("").
func threadOf(l *claudeLine, fileAgent string) string {
	if fileAgent != "" || !l.IsSidechain {
		return fileAgent
	}
	if l.AgentID != "" {
		return l.AgentID
	}
	return "sidechain"
}

func (imp *claudeImporter) readLine(line []byte, l *claudeLine, fileAgent string) error {
	if imp.state.SessionID == "" {
		if l.SessionID != "" && !claudeFileID(l.SessionID) {
			return fmt.Errorf("%w: session id %q cannot name a transcript file", ErrTranscript, l.SessionID)
		}
		imp.state.SessionID = l.SessionID
	}
	if imp.state.CWD == "" && fileAgent == "" {
		imp.state.CWD = l.CWD
	}
	threadKey := threadOf(l, fileAgent)
	if threadKey != "" && !claudeFileID(threadKey) {
		return fmt.Errorf("%w: agent id %q cannot name a transcript file", ErrTranscript, threadKey)
	}
	if (l.Type != "user" && l.Type != "assistant") || l.UUID == "" || l.Message == nil {
		imp.keepRaw(line, threadKey, l.UUID)
		return nil
	}
	if t, ok := imp.threads[threadKey]; ok && t.lineOwner[l.UUID] != "" {
		// The same line written twice (it happens when a session is resumed): one message
		// per uuid, the copy kept as a record.
		imp.keepRaw(line, threadKey, l.UUID)
		return nil
	}
	cm := l.Message
	blocks, stringContent, err := claudeBlocks(cm.Content, l.UUID)
	if err != nil {
		// Content no known writer produces (a number, a block that is not an object, a
		// tool_result whose content is an object): valid JSON of an unknown shape, kept.
		imp.keepRaw(line, threadKey, l.UUID)
		return nil //nolint:nilerr // kept as a record, not refused
	}
	prev := imp.lastUUID[threadKey]
	rec := claudeLineRecord{Line: line, Blocks: len(blocks), StringContent: stringContent, KeepContent: true, Prev: &prev}
	if len(blocks) > 0 {
		if rec.Line, err = stripContent(line); err != nil {
			return err
		}
		rec.KeepContent = false
	}
	imp.lastUUID[threadKey] = l.UUID
	t := imp.thread(threadKey)
	if l.Type == "assistant" && cm.ID != "" {
		// A line continues the message before it (lines of one API message share its id);
		// one written after another message is a message of its own, so order is kept.
		if i, ok := t.byAPIID[cm.ID]; ok && i == len(t.messages)-1 {
			m := &t.messages[i]
			m.Blocks = append(m.Blocks, blocks...)
			if u := cm.Usage.toUsage(); !u.IsZero() {
				m.Usage = u
			}
			t.records[i] = append(t.records[i], rec)
			t.lineOwner[l.UUID] = m.ID
			t.lastLine[i] = l.UUID
			return nil
		}
	}
	m := Message{
		ID:     messageID(t, l.UUID, cm.ID, l.Type),
		Role:   RoleUser,
		Blocks: blocks,
		Model:  cm.Model,
		Usage:  cm.Usage.toUsage(),
		Source: Source{Kind: SourceClaudeCode},
	}
	if p, ok := t.lineOwner[l.ParentUUID]; ok {
		m.ParentID = p
	} else {
		m.ParentID = l.ParentUUID
	}
	if ts, err := time.Parse(time.RFC3339Nano, l.Timestamp); err == nil {
		m.CreatedAt = ts
	}
	if cm.ID != "" {
		m.Source.IDs = []string{cm.ID}
	}
	m.Flags = claudeFlags(l)
	switch {
	case l.Type == "assistant":
		m.Role = RoleAssistant
	case hasBlock(blocks, BlockToolResult):
		m.Role = RoleTool
		m.Blocks, rec.Order = resultsFirstOrder(blocks)
		imp.linkSubagent(l, m.Blocks)
	}
	t.messages = append(t.messages, m)
	t.records = append(t.records, []claudeLineRecord{rec})
	t.lastLine = append(t.lastLine, l.UUID)
	t.lineOwner[l.UUID] = m.ID
	if m.Role == RoleAssistant && cm.ID != "" {
		t.byAPIID[cm.ID] = len(t.messages) - 1
	}
	return nil
}

// messageIndex is the index of the last message with the id (ids are unique in a thread).
func messageIndex(msgs []Message, id string) int {
	for k := len(msgs) - 1; k >= 0; k-- {
		if msgs[k].ID == id {
			return k
		}
	}
	return -1
}

// encodeLineRecords writes records as json.Marshal would, without validating the lines
// again (they were validated when read): a tenth of the import's time otherwise.
func encodeLineRecords(recs []claudeLineRecord) jsontext.Value {
	n := 2
	for _, r := range recs {
		n += len(r.Line) + 48
	}
	buf := make([]byte, 0, n)
	buf = append(buf, '[')
	for k, r := range recs {
		if k > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"line":`...)
		buf = append(buf, r.Line...)
		buf = append(buf, `,"blocks":`...)
		buf = strconv.AppendInt(buf, int64(r.Blocks), 10)
		if r.StringContent {
			buf = append(buf, `,"stringContent":true`...)
		}
		if r.KeepContent {
			buf = append(buf, `,"keepContent":true`...)
		}
		if len(r.Order) > 0 {
			buf = append(buf, `,"order":[`...)
			for i, o := range r.Order {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = strconv.AppendInt(buf, int64(o), 10)
			}
			buf = append(buf, ']')
		}
		if r.Prev != nil {
			buf = append(buf, `,"prev":`...)
			if q, err := jsontext.AppendQuote(buf, *r.Prev); err == nil {
				buf = q
			} else {
				buf = append(buf, mustString(*r.Prev)...) // invalid UTF-8, kept as read
			}
		}
		buf = append(buf, '}')
	}
	return append(buf, ']')
}

// messageID is the API message id for an assistant message (the same id its streamed events
// carry), else the line's uuid.
func messageID(t *claudeThread, lineID, apiID, lineType string) string {
	if lineType != "assistant" || apiID == "" {
		return lineID
	}
	if _, used := t.byAPIID[apiID]; used {
		return lineID
	}
	return apiID
}

func claudeFlags(l *claudeLine) Flags {
	var f Flags
	if l.IsSidechain {
		f |= FlagSidechain
	}
	if l.IsCompactSummary {
		f |= FlagCompactSummary
	}
	if l.IsMeta {
		f |= FlagMeta
	}
	return f
}

// linkSubagent remembers which tool call started a subagent, from the result line's
// toolUseResult.agentId.
func (imp *claudeImporter) linkSubagent(l *claudeLine, blocks []Block) {
	if l.ToolUseResult.AgentID != "" && len(blocks) > 0 {
		imp.agentTool[l.ToolUseResult.AgentID] = blocks[0].ToolUseID
	}
}

// keepRaw keeps a line as a record after the message line read last in its thread.
func (imp *claudeImporter) keepRaw(line []byte, threadKey, uuid string) {
	r := RawRecord{Thread: threadKey, Raw: bytes.Clone(line)}
	if t, ok := imp.threads[threadKey]; ok && len(t.messages) > 0 {
		r.AfterID = t.messages[len(t.messages)-1].ID
		r.AfterLine = t.lastLine[len(t.messages)-1] // cleared in finish when it is the message's last line
	}
	imp.state.Records = append(imp.state.Records, r)
	if uuid != "" {
		imp.lastUUID[threadKey] = uuid
	}
}

func (imp *claudeImporter) finish() State {
	s := imp.state
	// A record names the line it followed only when that is not its message's last line
	// (lines of one message with other lines between them).
	for i := range s.Records {
		r := &s.Records[i]
		if r.AfterLine == "" {
			continue
		}
		t := imp.threads[r.Thread]
		if k := messageIndex(t.messages, r.AfterID); k >= 0 && t.lastLine[k] == r.AfterLine {
			r.AfterLine = ""
		}
	}
	for _, key := range imp.order {
		t := imp.threads[key]
		for i := range t.messages {
			t.messages[i].Source.Raw = encodeLineRecords(t.records[i])
		}
		NumberTurns(t.messages)
		for i := range t.messages {
			t.messages[i].Seq = int64(i + 1)
		}
		if key == "" {
			s.Messages = t.messages
			continue
		}
		sub := Subagent{AgentID: key, ToolUseID: imp.agentTool[key], Status: SubagentRunning, Messages: t.messages}
		if sub.ToolUseID != "" {
			sub.Status = SubagentCompleted
			sub.Description = taskDescription(imp.threads[""], sub.ToolUseID)
		}
		s.Subagents = append(s.Subagents, sub)
	}
	return s
}

// claudeBlocks decodes message.content: a string (one text block) or a list of blocks.
// Blocks get ids from the line's uuid so the reducer can address them.
func claudeBlocks(content jsontext.Value, lineID string) ([]Block, bool, error) {
	switch content.Kind() {
	case '"':
		var text string
		if err := json.Unmarshal(content, &text, lenientJSON); err != nil {
			return nil, false, err
		}
		return []Block{{Type: BlockText, ID: lineID, Text: text}}, true, nil
	case '[':
		if blocks, ok := knownBlocks(content, lineID); ok {
			return blocks, false, nil
		}
		var items []jsontext.Value
		if err := json.Unmarshal(content, &items, lenientJSON); err != nil {
			return nil, false, err
		}
		blocks := make([]Block, 0, len(items))
		for k, item := range items {
			b, err := blockFromAnthropic(item)
			if err != nil {
				return nil, false, err
			}
			b.ID = lineBlockID(lineID, k)
			blocks = append(blocks, b)
		}
		return blocks, false, nil
	case 0, 'n':
		return nil, false, nil
	default:
		return nil, false, fmt.Errorf("message.content is a JSON %v", content.Kind())
	}
}

func lineBlockID(lineID string, k int) string {
	if k == 0 {
		return lineID
	}
	return fmt.Sprintf("%s#%d", lineID, k)
}

// stripContent returns a copy of the line without message.content, cutting the member's
// bytes out (the line was validated when it was decoded).
func stripContent(line []byte) (jsontext.Value, error) {
	start, end, err := contentRange(line)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(line)-(end-start))
	out = append(out, line[:start]...)
	out = append(out, line[end:]...)
	// A name written twice (the last one counts): every copy goes. Rare, so looked for only
	// when the name appears again.
	for start != end && bytes.Contains(out[start:], []byte(`"content"`)) {
		if start, end, err = contentRange(out); err != nil {
			return nil, err
		}
		out = append(out[:start], out[end:]...)
	}
	return out, nil
}

// contentRange finds the bytes of message.content: from the end of the member before it
// (so its comma goes too) or, when it is the first member, up to and including the comma
// after it. It returns an empty range when there is no content.
func contentRange(line []byte) (int, int, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(line), lenientJSON)
	if _, err := dec.ReadToken(); err != nil {
		return 0, 0, err
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return 0, 0, err
		}
		if name.String() != "message" || dec.PeekKind() != '{' {
			if err := dec.SkipValue(); err != nil {
				return 0, 0, err
			}
			continue
		}
		if _, err := dec.ReadToken(); err != nil {
			return 0, 0, err
		}
		first := true
		for dec.PeekKind() == '"' {
			before := int(dec.InputOffset())
			name, err := dec.ReadToken()
			if err != nil {
				return 0, 0, err
			}
			isContent := name.String() == "content"
			if err := dec.SkipValue(); err != nil {
				return 0, 0, err
			}
			if !isContent {
				first = false
				continue
			}
			end := int(dec.InputOffset())
			if first {
				rest := bytes.TrimLeft(line[end:], " \t\r\n")
				if len(rest) > 0 && rest[0] == ',' {
					end = len(line) - len(rest) + 1
				}
			}
			return before, end, nil
		}
		if _, err := dec.ReadToken(); err != nil { // the message's '}': look at the next one
			return 0, 0, err
		}
	}
	return 0, 0, nil
}

// taskDescription is the description argument of the Task call that started a subagent.
func taskDescription(t *claudeThread, toolUseID string) string {
	if t == nil {
		return ""
	}
	for i := range t.messages {
		for _, b := range t.messages[i].Blocks {
			if b.Type == BlockToolUse && b.ToolUseID == toolUseID {
				var in struct {
					Description string `json:"description"`
				}
				_ = json.Unmarshal(b.Input, &in, lenientJSON)
				return in.Description
			}
		}
	}
	return ""
}
