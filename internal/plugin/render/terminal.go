package render

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// terminalText writes to a person's terminal text that others chose: what an agent, its
// tools and a summarizer wrote into the history, what a store or an endpoint answered (quoted
// in condition messages), the Events anyone may create in the namespace. A control character
// is shown as a symbol and never reaches the terminal, which would act on it: an escape
// sequence can set the clipboard, retitle the window, or move the cursor to rewrite lines
// already shown; a carriage return can write over a line; a bidi override shows text in
// another order than it is. Newlines and tabs, which the layout itself writes, pass.
type terminalText struct{ w io.Writer }

func (t terminalText) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, Printable(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Printable is s with every code point that disguises (see disguises) but newline and tab,
// and every byte that is not UTF-8, replaced by a visible stand-in: C0 controls and DEL by
// their Unicode control pictures (ESC is ␛), the others by \uXXXX, invalid bytes by U+FFFD.
func Printable(s string) string {
	if !needsReplacing(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20:
			b.WriteRune(0x2400 + r) // ␀ … ␟
		case r == 0x7f:
			b.WriteRune('␡')
		case disguises(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func needsReplacing(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return true
			}
		}
		if disguises(r) && r != '\n' && r != '\t' {
			return true
		}
	}
	return false
}

// disguises reports whether r, written raw, can make a terminal show something other than
// the text: a control character (C0, DEL, C1: ESC and the 8-bit CSI start escape sequences,
// a carriage return writes over a line), a bidi control (the embeddings, overrides and
// isolates, and the marks LRM, RLM and ALM) that shows the text around it in another order
// or hides where it is, or a line or paragraph separator (U+2028, U+2029) that some
// terminals and editors break the line at. Printable and JSON replace these code points.
func disguises(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
}
