// Package tokens counts the tokens of conversation text, messages and states.
//
// Three tokenizers are offered, named as in a Conversation's spec.context.tokenizer:
//
//   - cl100k_base and o200k_base: exact byte-pair encodings of OpenAI models. The
//     vocabularies come from github.com/tiktoken-go/tokenizer, compiled into the binary (no
//     download at run time); the pre-tokenizer and the merges are this package's own
//     (split.go, bpe.go, ranks.go), faster than the library's and allocation-free
//     (docs/benchmarks.md),
//     with the same tokens except where the library's compiled patterns stray from
//     tiktoken's (see bpe_test.go);
//   - approximate: one token per four bytes of UTF-8, rounded up. It costs nothing (the length
//     of a string) and is good enough to decide when to compact, with a margin. Against
//     cl100k_base on this package's samples (TestApproximateErrorAgainstCl100k) it over-counts
//     English prose and under-counts a Claude Agent SDK transcript (JSON) most; the test fails
//     past ±35 %. It under-counts JSON-heavy tool traffic, so leave compactAtPercent lower with it.
//
// Tokenizing costs CPU in proportion to the text (BenchmarkCountText), so counts are cached:
// per message version by MessageCounter, and per short text (up to 64 bytes: tool names, ids,
// placeholders) inside the exact counters.
//
// Other providers' models (Claude, Gemini) use tokenizers that are not public: cl100k_base is a
// fair stand-in for them, and the counts their APIs report are preferred when a message carries
// them (see MessageCounter).
package tokens
