package tokens

import (
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/dlclark/regexp2/v2"
	"github.com/tiktoken-go/tokenizer"
)

// The references for this package's byte-pair encoding:
//   - for the pre-tokenizers, tiktoken's split patterns run by regexp2's interpreter. The
//     library compiles the same patterns into generated matchers, which differ from the
//     patterns in two places: they leave U+007F (DEL) out of every class, dropping it from the
//     text, and where \s*[\r\n]+ backtracks they stop at the first line break of a run of
//     spaces instead of the last ("\n \n" is two pieces there, one in tiktoken);
//   - for the merges, the library's encoder, on every piece its own matcher leaves whole.

// encodings are the byte-pair encodings this package counts with.
var encodings = []tokenizer.Encoding{tokenizer.Cl100kBase, tokenizer.O200kBase}

// splitPatterns are tiktoken's split patterns, spelt as the library compiles them (the same
// strings select its generated matchers).
var splitPatterns = map[tokenizer.Encoding]string{
	tokenizer.Cl100kBase: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	tokenizer.O200kBase: `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|` +
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|` +
		`\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
}

// reference holds one encoding's references.
type reference struct {
	encoding tokenizer.Encoding
	table    *bpeTable
	codec    tokenizer.Codec
	// pattern is run by the interpreter (wrapped in a group: a string with no generated
	// matcher); generated is the library's matcher.
	pattern, generated *regexp2.Regexp
}

func newReference(t testing.TB, encoding tokenizer.Encoding) *reference {
	t.Helper()
	codec, err := tokenizer.Get(encoding)
	if err != nil {
		t.Fatal(err)
	}
	codec.SetErrorMode(tokenizer.ErrorModeReplace)
	return &reference{
		encoding: encoding, table: loadedTable(t, encoding), codec: codec,
		pattern:   regexp2.MustCompile("(?:"+splitPatterns[encoding]+")", regexp2.None),
		generated: regexp2.MustCompile(splitPatterns[encoding], regexp2.None),
	}
}

func loadedTable(t testing.TB, encoding tokenizer.Encoding) *bpeTable {
	t.Helper()
	tb, err := bpeTables[encoding]()
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func matches(t testing.TB, re *regexp2.Regexp, text string) []string {
	t.Helper()
	var out []string
	m, err := re.FindStringMatch(text)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func pieces(tb *bpeTable, text string) []string {
	var out []string
	for i := 0; i < len(text); {
		end := tb.split(text, i)
		out = append(out, text[i:end])
		i = end
	}
	return out
}

func ourTokens(tb *bpeTable, text string) []string {
	var out []string
	tb.encode(text, func(token string) { out = append(out, token) })
	return out
}

// check compares this package's pieces of text with the pattern's matches (BPE could hide a
// wrong boundary where both sides merge alike), the tokens of every piece with the library's,
// and the count with the tokens.
func (r *reference) check(t *testing.T, text string) {
	t.Helper()
	text = replaceInvalidUTF8(text)
	got := pieces(r.table, text)
	if want := matches(t, r.pattern, text); !slices.Equal(got, want) {
		t.Fatalf("%s: pieces of %q:\n got  %q\n want %q", r.encoding, text, got, want)
	}
	total := 0
	for _, piece := range got {
		tokens := ourTokens(r.table, piece)
		total += len(tokens)
		if whole := matches(t, r.generated, piece); len(whole) != 1 || whole[0] != piece {
			continue // the library would split this piece (see above): no reference for it
		}
		_, want, err := r.codec.Encode(piece)
		if err != nil {
			t.Fatalf("%s: the library failed on %q: %v", r.encoding, piece, err)
		}
		if !slices.Equal(tokens, want) {
			t.Fatalf("%s: tokens of the piece %q:\n got  %q\n want %q", r.encoding, piece, tokens, want)
		}
	}
	if n := r.table.count(text); n != total {
		t.Fatalf("%s: count(%q) = %d, the tokens of its pieces %d", r.encoding, text, n, total)
	}
}

// alphabet mixes every class the split patterns tell apart: ASCII letters, digits and
// symbols, contractions in both cases and the long s, spaces and line breaks of several kinds,
// letters of other scripts by case (Lu, Ll, Lt, Lm, Lo), combining marks, numbers that are not
// digits (No, Nl), emoji, DEL and invalid UTF-8.
var alphabet = []string{
	"a", "b", "Z", "Q", "x", "e", "0", "7", "42", "2024", ".", ",", "!", "?", "-", "_", "(", ")",
	"{", "}", "<", ">", "/", "\\", "\"", "`", "#", "@", "$", "%", "&", "*", "+", "=", "|", "~", ":", ";",
	"'", "'s", "'S", "'t", "'T", "'re", "'RE", "'rE", "'ve", "'Ve", "'m", "'M", "'ll", "'LL", "'lL", "'d", "'D", "'ſ", "'x",
	" ", " ", " ", "  ", "\t", "\n", "\n", "\r\n", "\r", "\v", "\f", "\u00a0", "\u0085", "\u2028", "\u3000", "\u1680", "\u001c",
	"é", "É", "ß", "ñ", "Ω", "ω", "Ж", "ж", "ǅ", "ʰ", "ª", "中", "文", "お", "ん", "ا", "ب", "क", "ि", "्",
	"\u0301", "\u0308", "\u200d", "٣", "²", "½", "Ⅻ", "😀", "👍🏽", "\ufffd", "\x7f", "\xff", "\xe2\x82", "\xc3", "\xed\xa0\x80",
	"hello", "World", "HTTP", "JSONDecoder", "iPhone", "McDonald", "don't", "I'M", "we'll", "func", "://", "...", "=>",
}

func randomText(rng *rand.Rand, maxParts int) string {
	var sb strings.Builder
	for range rng.IntN(maxParts + 1) {
		sb.WriteString(alphabet[rng.IntN(len(alphabet))])
	}
	return sb.String()
}

func TestBPEMatchesTheReference(t *testing.T) {
	samples := sampleTexts(t)
	names := make([]string, 0, len(samples))
	for name := range samples {
		names = append(names, name)
	}
	sort.Strings(names)
	edge := []string{
		"", "a", " ", "  ", "\n", "\n\n", " \n ", "\n \n", "\r\u00a0\r\nx", "a  b", "a \n b", "a\t\tb", "   x", "x   ",
		"\r\n\r\n  x", "'s", "'", "''", "'sa", "ab's", "AB'S", "'ſx", "1234567", "a1b2c3", "٣٣٣٣", "½½½", "a\x7fb",
		"HELLOworld", "HeLLo", "ǅungla", "ʰʰA", "中Z", "中Z x", "A\u0301B", "e\u0301\u0301x", "\u0301abc", " \u0301", "x/y//z\n/",
		strings.Repeat("abcdefghij", 100), strings.Repeat("a", 500), strings.Repeat("ab", 300),
		strings.Repeat("0123456789", 40), strings.Repeat("=", 200), strings.Repeat(" ", 300) + "x",
		strings.Repeat("QmFzZTY0IGJsb2Igb2YgYnl0ZXM", 20), strings.Repeat("日本語のテキスト", 30),
	}
	for _, encoding := range encodings {
		ref := newReference(t, encoding)
		for _, text := range edge {
			ref.check(t, text)
		}
		for _, name := range names {
			ref.check(t, samples[name])
			for line := range strings.Lines(samples[name]) {
				ref.check(t, line)
			}
		}
		rng := rand.New(rand.NewPCG(1, uint64(len(encoding))))
		for range 4000 {
			ref.check(t, randomText(rng, 40))
		}
	}
}

// FuzzBPEMatchesTheReference explores beyond the alphabet: go test -fuzz FuzzBPE.
func FuzzBPEMatchesTheReference(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 7))
	for range 64 {
		f.Add(randomText(rng, 30))
	}
	refs := make([]*reference, 0, len(encodings))
	for _, encoding := range encodings {
		refs = append(refs, newReference(f, encoding))
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, ref := range refs {
			ref.check(t, text)
		}
	})
}

func TestWhereTheLibraryDiffers(t *testing.T) {
	for _, encoding := range encodings {
		tb := loadedTable(t, encoding)
		// DEL is a symbol: it prefixes the word after it, then stands alone as a token.
		if got := ourTokens(tb, "a\x7fb"); !slices.Equal(got, []string{"a", "\x7f", "b"}) {
			t.Errorf("%s: tokens of a DEL b = %q", encoding, got)
		}
		// A run of spaces holding line breaks is one piece up to its last break.
		if got := pieces(tb, "x\n \n y"); !slices.Equal(got, []string{"x", "\n \n", " y"}) {
			t.Errorf("%s: pieces of a blank line with a space = %q", encoding, got)
		}
	}
}

func TestVocabularyLoadedWhole(t *testing.T) {
	// cl100k_base has 100,256 ordinary tokens, o200k_base 199,998 (tiktoken's n_vocab less
	// the special tokens).
	for encoding, want := range map[tokenizer.Encoding]int{tokenizer.Cl100kBase: 100256, tokenizer.O200kBase: 199998} {
		if got := loadedTable(t, encoding).ranks.len(); got != want {
			t.Errorf("%s: %d tokens, want %d", encoding, got, want)
		}
	}
}

func TestRankTableFindsEveryTokenAndNothingElse(t *testing.T) {
	for _, encoding := range encodings {
		vocabulary, err := loadVocabulary(encoding)
		if err != nil {
			t.Fatal(err)
		}
		ranks := newRankTable(vocabulary)
		for token, want := range vocabulary {
			if got, ok := ranks.get(token); !ok || got != want {
				t.Fatalf("%s: rank of %q = %d, %v; want %d", encoding, token, got, ok, want)
			}
			// The token with one byte more or less is a token only if the vocabulary says so.
			for _, other := range []string{token + "\x00", token[:len(token)-1], "\x00" + token} {
				want, isToken := vocabulary[other]
				if got, ok := ranks.get(other); ok != isToken || got != want {
					t.Fatalf("%s: rank of %q = %d, %v; want %d, %v", encoding, other, got, ok, want, isToken)
				}
			}
		}
	}
}

func TestCountingAllocatesNothing(t *testing.T) {
	tb := loadedTable(t, tokenizer.Cl100kBase)
	text := sampleTexts(t)["prose"] + strings.Repeat("abcdefghij", 100)
	tb.count(text)
	// Below one on average: a collection may empty the buffer pool once.
	if allocs := testing.AllocsPerRun(20, func() { tb.count(text) }); allocs >= 1 {
		t.Errorf("count allocates %.0f times per call", allocs)
	}
}
