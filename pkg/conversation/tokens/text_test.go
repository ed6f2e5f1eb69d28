package tokens

import (
	"os"
	"strings"
	"testing"

	"github.com/parley-dev/parley/test/fixtures"
)

func TestNewTextCounterNames(t *testing.T) {
	for _, name := range Names() {
		c, err := NewTextCounter(name)
		if err != nil {
			t.Fatalf("NewTextCounter(%q): %v", name, err)
		}
		if c.Name() != name {
			t.Errorf("Name() = %q, want %q", c.Name(), name)
		}
		if got := c.CountText(""); got != 0 {
			t.Errorf("%s: CountText(\"\") = %d, want 0", name, got)
		}
	}
}

func TestNewTextCounterUnknownName(t *testing.T) {
	for _, name := range []string{"", "gpt2", "CL100K_BASE", "p50k_base"} {
		_, err := NewTextCounter(name)
		if err == nil {
			t.Fatalf("NewTextCounter(%q): want an error", name)
		}
		for _, want := range append(Names(), "unknown tokenizer") {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
	}
	if _, err := New("nope"); err == nil {
		t.Fatal("New(\"nope\"): want an error")
	}
}

// Reference counts published in OpenAI's cookbook ("How to count tokens with tiktoken").
func TestBPECountsMatchTiktoken(t *testing.T) {
	cases := []struct {
		encoding, text string
		want           int
	}{
		{Cl100kBase, "tiktoken is great!", 6},
		{Cl100kBase, "hello world", 2},
		{O200kBase, "hello world", 2},
		{Cl100kBase, "antidisestablishmentarianism", 6},
		{Cl100kBase, "2 + 2 = 4", 7},
		{Cl100kBase, "お誕生日おめでとう", 9},
	}
	for _, tc := range cases {
		c, err := NewTextCounter(tc.encoding)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.CountText(tc.text); got != tc.want {
			t.Errorf("%s(%q) = %d, want %d", tc.encoding, tc.text, got, tc.want)
		}
	}
}

func TestBPECountsInvalidUTF8(t *testing.T) {
	c, err := NewTextCounter(Cl100kBase)
	if err != nil {
		t.Fatal(err)
	}
	// Invalid bytes are replaced by U+FFFD before counting, never an error or zero.
	if got := c.CountText("ok \xff\xfe done"); got == 0 {
		t.Fatal("invalid UTF-8 counted as 0 tokens")
	}
}

func TestApproximateCountText(t *testing.T) {
	cases := map[string]int{"": 0, "a": 1, "abcd": 1, "abcde": 2, "ééé": 2, strings.Repeat("x", 400): 100}
	for text, want := range cases {
		if got := (ApproximateCounter{}).CountText(text); got != want {
			t.Errorf("CountText(%q) = %d, want %d", text, got, want)
		}
	}
}

// approximateTolerance is the error of the approximate counter against cl100k_base that the
// package documentation promises on the samples below.
const approximateTolerance = 0.35

func TestApproximateErrorAgainstCl100k(t *testing.T) {
	exact, err := NewTextCounter(Cl100kBase)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range sampleTexts(t) {
		e, a := exact.CountText(text), ApproximateCounter{}.CountText(text)
		ratio := float64(a) / float64(e)
		t.Logf("%s: cl100k_base %d, approximate %d, ratio %.2f", name, e, a, ratio)
		if ratio < 1-approximateTolerance || ratio > 1+approximateTolerance {
			t.Errorf("%s: approximate/cl100k = %.2f, outside ±%.0f%%", name, ratio, approximateTolerance*100)
		}
	}
}

// sampleTexts are English prose, a real Claude Agent SDK transcript (JSON) and Go source (a
// frozen copy of message.go).
func sampleTexts(tb testing.TB) map[string]string {
	tb.Helper()
	files := map[string]string{
		"prose":      "testdata/prose.txt",
		"transcript": fixtures.Path(fixtures.ClaudeSDKMessages),
		"go source":  "testdata/go-source.txt",
	}
	out := map[string]string{}
	for name, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		out[name] = string(b)
	}
	return out
}

func TestBPEShortTextsAreRemembered(t *testing.T) {
	c, err := newBPECounter("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	short, long := "[tool output cleared]", strings.Repeat("word ", 20)
	first := c.CountText(short)
	if n, ok := c.short.get(cacheKey{id: short}); !ok || n != first {
		t.Fatalf("short text not remembered: %d %v", n, ok)
	}
	if c.CountText(short) != first {
		t.Error("remembered count differs")
	}
	c.CountText(long)
	if _, ok := c.short.get(cacheKey{id: long}); ok {
		t.Error("long text remembered")
	}
}
