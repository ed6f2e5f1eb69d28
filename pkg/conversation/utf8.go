package conversation

import (
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Raw JSON values (Extra, Source.Raw, Block.Input/Raw/Extra, RawRecord.Raw) are held as read,
// but a snapshot and the journal write them with every byte that is not UTF-8 as U+FFFD. A
// value holding such bytes would not come back as held, so the model keeps raw values valid
// UTF-8: importers of foreign input (transcripts, provider wire forms) replace invalid bytes
// as the decoder does in strings, and Validate refuses what Parley's own formats carry.

// validUTF8 returns data with each byte that is not part of valid UTF-8 replaced by U+FFFD,
// one per byte, as jsontext does (in JSON such a byte can only be inside a string). Valid
// data is returned as is.
func validUTF8(data []byte) []byte {
	if utf8.Valid(data) {
		return data
	}
	out := make([]byte, 0, len(data)+16)
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		if r == utf8.RuneError && n == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, data[:n]...)
		}
		data = data[n:]
	}
	return out
}

// eachRawOfMessage calls f on every raw JSON value of a message and its blocks.
func eachRawOfMessage(m *Message, f func(*jsontext.Value)) {
	f(&m.Extra)
	f(&m.Source.Raw)
	eachRawOfBlocks(m.Blocks, f)
}

func eachRawOfBlocks(blocks []Block, f func(*jsontext.Value)) {
	for i := range blocks {
		eachRawOfBlock(&blocks[i], f)
	}
}

func eachRawOfBlock(b *Block, f func(*jsontext.Value)) {
	f(&b.Input)
	f(&b.Raw)
	f(&b.Extra)
	eachRawOfBlocks(b.Content, f)
}

// eachRawOfState calls f on every raw JSON value of a state but its adapter states (which
// DecodeAdapterState and AdapterStates check).
func eachRawOfState(s *State, f func(*jsontext.Value)) {
	f(&s.Extra)
	f(&s.Source.Raw)
	if s.System != nil {
		eachRawOfMessage(s.System, f)
	}
	for i := range s.Messages {
		eachRawOfMessage(&s.Messages[i], f)
	}
	eachRawOfSubagents(s.Subagents, f)
	for i := range s.Records {
		f(&s.Records[i].Raw)
	}
}

func eachRawOfSubagents(subs []Subagent, f func(*jsontext.Value)) {
	for i := range subs {
		f(&subs[i].Extra)
		for k := range subs[i].Messages {
			eachRawOfMessage(&subs[i].Messages[k], f)
		}
		eachRawOfSubagents(subs[i].Subagents, f)
	}
}

// makeRawUTF8 replaces the invalid bytes of every raw value of s (see validUTF8).
func makeRawUTF8(s *State) {
	eachRawOfState(s, func(v *jsontext.Value) { *v = validUTF8(*v) })
}

// rawUTF8 reports whether every raw value f visits is valid UTF-8.
func rawUTF8(each func(func(*jsontext.Value))) bool {
	ok := true
	each(func(v *jsontext.Value) { ok = ok && utf8.Valid(*v) })
	return ok
}
