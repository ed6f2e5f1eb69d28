package tokens

import (
	"unicode"
	"unicode/utf8"
)

// A splitter returns the end of the pre-token that starts at byte i of s (i < len(s), s valid
// UTF-8). Byte-pair encoding merges bytes only within a pre-token.
//
// The splitters below are tiktoken's split patterns written out as code: the same pieces,
// found without a backtracking regexp engine, which allocated a match per piece and spent
// half of the counting time. Each alternative is tried in the pattern's order, and where the
// pattern backtracks the code says so. TestSplittersMatchTheReference compares them with the
// patterns themselves.
type splitter func(s string, i int) int

// splitCl100k follows cl100k_base's pattern:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func splitCl100k(s string, i int) int {
	r, n := runeAt(s, i)
	if r == '\'' {
		if end := contraction(s, i); end > i {
			return end
		}
	}
	if isLetter(r) {
		return skip(s, i+n, isLetter)
	}
	if canPrefixWord(r) && i+n < len(s) {
		if next, _ := runeAt(s, i+n); isLetter(next) {
			return skip(s, i+n, isLetter)
		}
	}
	if isNumber(r) {
		return skipUpTo(s, i, 3, isNumber)
	}
	if end, ok := symbols(s, i, r); ok {
		return skip(s, end, isLineBreak)
	}
	return whitespace(s, i)
}

// splitO200k follows o200k_base's pattern:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
func splitO200k(s string, i int) int {
	r, n := runeAt(s, i)
	prefixed := canPrefixWord(r) && i+n < len(s)
	// First alternative, the optional prefix taken, then not.
	if prefixed {
		if end, ok := casedWord(s, i+n); ok {
			return contraction(s, end)
		}
	}
	if end, ok := casedWord(s, i); ok {
		return contraction(s, end)
	}
	// Second alternative: a capitalised word, prefix taken, then not.
	if prefixed {
		if end, ok := capitalWord(s, i+n); ok {
			return contraction(s, end)
		}
	}
	if end, ok := capitalWord(s, i); ok {
		return contraction(s, end)
	}
	if isNumber(r) {
		return skipUpTo(s, i, 3, isNumber)
	}
	if end, ok := symbols(s, i, r); ok {
		return skip(s, end, isLineBreakOrSlash)
	}
	return whitespace(s, i)
}

// casedWord matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+ at i.
func casedWord(s string, i int) (int, bool) {
	upper := skip(s, i, isUpperish)
	if upper < len(s) {
		if r, _ := runeAt(s, upper); isLowerish(r) {
			return skip(s, upper, isLowerish), true
		}
	}
	// The pattern backtracks into the upper run: the word ends after its last rune that
	// the lower class also holds (Lm, Lo, M), since the rune after that is not lower.
	for end := upper; end > i; {
		r, n := utf8.DecodeLastRuneInString(s[i:end])
		if isLowerish(r) {
			return end, true
		}
		end -= n
	}
	return 0, false
}

// capitalWord matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]* at i.
func capitalWord(s string, i int) (int, bool) {
	upper := skip(s, i, isUpperish)
	if upper == i {
		return 0, false
	}
	return skip(s, upper, isLowerish), true
}

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, or i if there is none.
// Case folding makes the long s (ſ) an s too.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return i
	}
	j := i + 1
	switch s[j] | 0x20 {
	case 's', 't', 'm', 'd':
		return j + 1
	case 'r', 'v':
		if j+1 < len(s) && s[j+1]|0x20 == 'e' {
			return j + 2
		}
	case 'l':
		if j+1 < len(s) && s[j+1]|0x20 == 'l' {
			return j + 2
		}
	}
	if r, n := runeAt(s, j); r == 'ſ' {
		return j + n
	}
	return i
}

// symbols matches " ?[^\s\p{L}\p{N}]+" at i, whose first rune is r.
func symbols(s string, i int, r rune) (int, bool) {
	j := i
	if r == ' ' {
		j++
	}
	end := skip(s, j, isSymbol)
	return end, end > j
}

// whitespace matches \s*[\r\n]+|\s+(?!\S)|\s+ at i, whose first rune is a space.
func whitespace(s string, i int) int {
	end, lastBreak, lastRune := i, -1, i
	for end < len(s) {
		r, n := runeAt(s, end)
		if !isSpace(r) {
			break
		}
		if isLineBreak(r) {
			lastBreak = end
		}
		lastRune = end
		end += n
	}
	switch {
	case end == i:
		// Not a space: no alternative matches (cannot happen, every rune is a letter, a
		// number, a symbol or a space). One rune keeps the caller moving.
		_, n := runeAt(s, i)
		return i + n
	case lastBreak >= 0:
		// \s*[\r\n]+ backtracks to the run's last line break.
		return lastBreak + 1
	case end == len(s):
		return end
	case lastRune > i:
		// \s+(?!\S): the run but its last space, which then prefixes the next word.
		return lastRune
	default:
		return end
	}
}

func runeAt(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// skip returns the end of the run of runes in class from i.
func skip(s string, i int, class func(rune) bool) int {
	for i < len(s) {
		r, n := runeAt(s, i)
		if !class(r) {
			break
		}
		i += n
	}
	return i
}

// skipUpTo is skip for at most limit runes.
func skipUpTo(s string, i, limit int, class func(rune) bool) int {
	for ; limit > 0 && i < len(s); limit-- {
		r, n := runeAt(s, i)
		if !class(r) {
			break
		}
		i += n
	}
	return i
}

// The classes of the patterns: \p{L}, \p{N}, \s (Unicode White_Space, as unicode.IsSpace).
func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r|0x20 && r|0x20 <= 'z'
	}
	return unicode.IsLetter(r)
}

func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsNumber(r)
}

func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.IsSpace(r)
}

func isLineBreak(r rune) bool { return r == '\n' || r == '\r' }

func isLineBreakOrSlash(r rune) bool { return r == '\n' || r == '\r' || r == '/' }

// canPrefixWord is [^\r\n\p{L}\p{N}].
func canPrefixWord(r rune) bool { return !isLineBreak(r) && !isLetter(r) && !isNumber(r) }

// isSymbol is [^\s\p{L}\p{N}].
func isSymbol(r rune) bool { return !isSpace(r) && !isLetter(r) && !isNumber(r) }

// isUpperish is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}].
func isUpperish(r rune) bool {
	if r < utf8.RuneSelf {
		return 'A' <= r && r <= 'Z'
	}
	return unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M)
}

// isLowerish is [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func isLowerish(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z'
	}
	return unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M)
}
