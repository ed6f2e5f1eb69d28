package tokens

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/tiktoken-go/tokenizer"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/test/support/benchcpu"
)

// BenchmarkCountText reports tokens/s of each tokenizer on the sample texts (prose, a real
// Claude SDK transcript, Go source). Tokens are counted with cl100k_base for every
// sub-benchmark, so the rates compare like for like: "how fast is a cl100k token's worth of
// text counted".
func BenchmarkCountText(b *testing.B) {
	corpus := benchCorpus(b)
	ref, err := NewTextCounter(Cl100kBase)
	if err != nil {
		b.Fatal(err)
	}
	refTokens := ref.CountText(corpus)
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) {
			c, err := NewTextCounter(name)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(corpus)))
			cpu := benchcpu.Start()
			for b.Loop() {
				c.CountText(corpus)
			}
			b.ReportMetric(float64(refTokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			cpu.Report(b, float64(refTokens), "tokens/cpu-s")
		})
	}
}

// BenchmarkCountState counts a 10,000-message state with each tokenizer, with the per-message
// cache warm and without it: what the Session API pays to recount a state after one append.
func BenchmarkCountState(b *testing.B) {
	lines := strings.Split(benchCorpus(b), "\n")
	state := conversation.State{System: &conversation.Message{ID: "sys", Role: conversation.RoleSystem, Blocks: []conversation.Block{text("You are helpful.")}}}
	for i := range 10_000 {
		state.Messages = append(state.Messages, conversation.Message{
			ID: fmt.Sprint(i), Role: conversation.RoleUser, Blocks: []conversation.Block{text(lines[i%len(lines)])},
		})
	}
	ref, err := New(Cl100kBase, WithCacheSize(0))
	if err != nil {
		b.Fatal(err)
	}
	refTokens := ref.CountState(&state)
	for _, name := range []string{Cl100kBase, Approximate} {
		for _, cache := range []int{DefaultCacheSize, 0} {
			label := "cached"
			if cache == 0 {
				label = "uncached"
			}
			b.Run(name+"/"+label, func(b *testing.B) {
				c, err := New(name, WithCacheSize(cache))
				if err != nil {
					b.Fatal(err)
				}
				c.CountState(&state) // warms the cache
				cpu := benchcpu.Start()
				for b.Loop() {
					c.CountState(&state)
				}
				b.ReportMetric(float64(refTokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
				cpu.Report(b, float64(refTokens), "tokens/cpu-s")
			})
		}
	}
}

func benchCorpus(b testing.TB) string {
	samples := sampleTexts(b)
	names := make([]string, 0, len(samples))
	for name := range samples {
		names = append(names, name)
	}
	sort.Strings(names)
	var sb strings.Builder
	for _, name := range names {
		sb.WriteString(samples[name])
	}
	return sb.String()
}

// BenchmarkBPEAgainstTheLibrary counts cl100k_base tokens with this package's encoder and with
// the library's, on the sample texts and on one 1,000-byte word (the Session API benchmark's
// message: a single piece, all merging), in the same run.
func BenchmarkBPEAgainstTheLibrary(b *testing.B) {
	texts := []struct{ name, text string }{
		{"samples", benchCorpus(b)},
		{"word", strings.Repeat("abcdefghij", 100)},
	}
	codec, err := tokenizer.Get(tokenizer.Cl100kBase)
	if err != nil {
		b.Fatal(err)
	}
	codec.SetErrorMode(tokenizer.ErrorModeReplace)
	tb, err := bpeTables[tokenizer.Cl100kBase]()
	if err != nil {
		b.Fatal(err)
	}
	counters := []struct {
		name  string
		count func(string) int
	}{
		{"parley", tb.count},
		{"library", func(s string) int { n, _ := codec.Count(s); return n }},
	}
	for _, text := range texts {
		for _, c := range counters {
			b.Run(text.name+"/"+c.name, func(b *testing.B) {
				b.SetBytes(int64(len(text.text)))
				b.ReportAllocs()
				for b.Loop() {
					c.count(text.text)
				}
			})
		}
	}
}

// BenchmarkLoadBPETable builds each encoding's tables as a process does at its first count,
// and reports the heap they keep (the library's own vocabulary, loaded before, not counted).
func BenchmarkLoadBPETable(b *testing.B) {
	for _, encoding := range []tokenizer.Encoding{tokenizer.Cl100kBase, tokenizer.O200kBase} {
		split := map[tokenizer.Encoding]splitter{tokenizer.Cl100kBase: splitCl100k, tokenizer.O200kBase: splitO200k}[encoding]
		b.Run(string(encoding), func(b *testing.B) {
			if _, err := tokenizer.Get(encoding); err != nil {
				b.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			kept, err := loadBPETable(encoding, split)
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(kept)
			for b.Loop() {
				if _, err := loadBPETable(encoding, split); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MiB")
		})
	}
}
