package render

import (
	"fmt"
	"unicode/utf8"
)

// JSON is the JSON text b (a document or JSON lines) with every code point that disguises
// (see disguises) but the whitespace between tokens written as a \uXXXX escape, and every
// byte that is not UTF-8 as \ufffd. An export is meant for other programs, but it is also
// printed to terminals and opened in editors, and a JSON encoder escapes only the C0
// controls: an 8-bit CSI or a bidi override in a message would reach the terminal raw.
//
// The data is unchanged for every JSON reader. Outside strings, valid JSON holds only ASCII
// tokens and the whitespace space, tab, newline and carriage return, which pass; so every
// other code point replaced here is inside a string, where its escape decodes to the same
// code point. A byte that is not UTF-8 decodes to U+FFFD in a reader that accepts it at all,
// and the journal already stores such bytes as U+FFFD.
func JSON(b []byte) []byte {
	if !jsonNeedsEscaping(b) {
		return b
	}
	out := make([]byte, 0, len(b)+64)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, `\ufffd`...)
		case jsonEscapes(r):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

func jsonNeedsEscaping(b []byte) bool {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 || jsonEscapes(r) {
			return true
		}
		i += size
	}
	return false
}

// jsonEscapes: the code points JSON writes as escapes, all that disguise but JSON whitespace.
func jsonEscapes(r rune) bool {
	return disguises(r) && r != ' ' && r != '\t' && r != '\n' && r != '\r'
}
