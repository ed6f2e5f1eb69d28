package tokens

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// bpeTable is one byte-pair encoding: its pre-tokenizer and the rank of every token.
//
// The vocabularies come from github.com/tiktoken-go/tokenizer (compiled into the binary); the
// counting is this package's own: the library splits text with a backtracking regexp engine
// that allocates per piece, which made counting a visible cost of the Session API's append
// path, and more so for long words (docs/benchmarks.md). Counting here allocates nothing and gives the
// library's tokens (TestBPEMatchesTheReference) except where its generated matchers stray from
// tiktoken's patterns: it drops U+007F (DEL), and it ends a run of spaces at its first line
// break rather than its last. Here, as in tiktoken, neither happens.
type bpeTable struct {
	split splitter
	ranks *rankTable
}

var bpeTables = map[tokenizer.Encoding]func() (*bpeTable, error){
	tokenizer.Cl100kBase: sync.OnceValues(func() (*bpeTable, error) { return loadBPETable(tokenizer.Cl100kBase, splitCl100k) }),
	tokenizer.O200kBase:  sync.OnceValues(func() (*bpeTable, error) { return loadBPETable(tokenizer.O200kBase, splitO200k) }),
}

func loadBPETable(encoding tokenizer.Encoding, split splitter) (*bpeTable, error) {
	vocabulary, err := loadVocabulary(encoding)
	if err != nil {
		return nil, err
	}
	return &bpeTable{split: split, ranks: newRankTable(vocabulary)}, nil
}

// loadVocabulary reads the encoding's tokens and their ranks from the library, token by
// token: ids are dense from 0, so the first run of unknown ids ends it.
func loadVocabulary(encoding tokenizer.Encoding) (map[string]uint32, error) {
	codec, err := tokenizer.Get(encoding)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", encoding, err)
	}
	// Decoding one id gives that token's bytes unchanged (the codec's default error mode),
	// partial UTF-8 sequences included. They are kept in one string, the keys slices of it,
	// so the table is a few allocations rather than one per token.
	var all strings.Builder
	var ends []int
	for id, misses := 0, 0; misses < 1024; id++ {
		token, err := codec.Decode([]uint{uint(id)})
		if err != nil {
			misses++
			ends = append(ends, -1)
			continue
		}
		misses = 0
		all.WriteString(token)
		ends = append(ends, all.Len())
	}
	bytes := all.String()
	ranks := make(map[string]uint32, len(ends))
	start := 0
	for id, end := range ends {
		if end < 0 {
			continue
		}
		ranks[bytes[start:end]] = uint32(id)
		start = end
	}
	if len(ranks) < 256 {
		return nil, fmt.Errorf("load tokenizer %s: %d tokens", encoding, len(ranks))
	}
	return ranks, nil
}

// count returns the number of tokens text encodes to.
func (t *bpeTable) count(text string) int {
	n := 0
	t.encode(text, func(string) { n++ })
	return n
}

// encode calls token with each token of text, in order. Invalid UTF-8 is first replaced by
// U+FFFD, one per maximal invalid subpart, as tiktoken's errors="replace" does.
func (t *bpeTable) encode(text string, token func(string)) {
	text = replaceInvalidUTF8(text)
	buf := mergeBufs.Get().(*mergeBuf)
	defer buf.release()
	for i := 0; i < len(text); {
		end := t.split(text, i)
		piece := text[i:end]
		i = end
		if _, ok := t.ranks.get(piece); ok || len(piece) == 1 {
			token(piece)
			continue
		}
		bounds := t.merge(piece, buf)
		for k := range len(bounds) - 1 {
			token(piece[bounds[k]:bounds[k+1]])
		}
	}
}

// mergeBuf holds a merge's working memory, reused through mergeBufs.
type mergeBuf struct {
	bounds []int32
	ranks  []uint32
	nodes  []mergeNode
	heap   []uint64
}

var mergeBufs = sync.Pool{New: func() any { return new(mergeBuf) }}

// maxPooledPiece is the longest piece whose working memory goes back to the pool: one huge
// piece (a long base64 string) needs ~30 bytes per byte, better left to the collector.
const maxPooledPiece = 1 << 16

func (b *mergeBuf) release() {
	if cap(b.nodes) <= maxPooledPiece+1 {
		mergeBufs.Put(b)
	}
}

// noRank marks a pair that is not a token.
const noRank = ^uint32(0)

// scanMergeMax is the longest piece merged by scanning; longer ones use a heap. A scan costs
// O(n) per merge, but n is small for words and a scan touches less memory.
const scanMergeMax = 64

// merge returns the boundaries of the tokens byte-pair encoding merges piece into: offsets
// from 0 to len(piece). Repeatedly, the adjacent pair whose concatenation has the lowest rank
// merges, the leftmost of equals first, until no pair is a token.
func (t *bpeTable) merge(piece string, buf *mergeBuf) []int32 {
	if len(piece) <= scanMergeMax {
		return t.mergeByScan(piece, buf)
	}
	return t.mergeByHeap(piece, buf)
}

func (t *bpeTable) rank(s string) uint32 {
	if r, ok := t.ranks.get(s); ok {
		return r
	}
	return noRank
}

func (t *bpeTable) mergeByScan(piece string, buf *mergeBuf) []int32 {
	n := len(piece)
	bounds := grow(buf.bounds, n+1)
	ranks := grow(buf.ranks, n+1)
	buf.bounds, buf.ranks = bounds, ranks
	for i := range bounds {
		bounds[i] = int32(i)
		ranks[i] = noRank
	}
	// ranks[i] is the rank of the pair starting at bounds[i].
	for i := 0; i+2 < len(bounds); i++ {
		ranks[i] = t.rank(piece[i : i+2])
	}
	for len(bounds) > 2 {
		best, at := noRank, -1
		for i, r := range ranks[:len(bounds)-2] {
			if r < best {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		bounds = append(bounds[:at+1], bounds[at+2:]...)
		ranks = append(ranks[:at+1], ranks[at+2:]...)
		if at+2 < len(bounds) {
			ranks[at] = t.rank(piece[bounds[at]:bounds[at+2]])
		} else {
			ranks[at] = noRank
		}
		if at > 0 {
			ranks[at-1] = t.rank(piece[bounds[at-1]:bounds[at+1]])
		}
	}
	return bounds
}

// mergeNode is a token boundary in mergeByHeap's linked list; rank is that of the pair
// starting there, noRank once the boundary is merged away.
type mergeNode struct {
	prev, next int32
	rank       uint32
}

// mergeByHeap merges like mergeByScan in O(n log n): candidate pairs wait in a min-heap keyed
// by rank then offset (both in one uint64, so the leftmost of equal ranks comes first), and a
// candidate whose boundary has since changed rank is skipped when it surfaces.
func (t *bpeTable) mergeByHeap(piece string, buf *mergeBuf) []int32 {
	n := int32(len(piece))
	nodes := grow(buf.nodes, int(n)+1)
	heap := buf.heap[:0]
	for i := range nodes {
		nodes[i] = mergeNode{prev: int32(i) - 1, next: int32(i) + 1, rank: noRank}
	}
	nodes[n].next = -1
	pairRank := func(i int32) uint32 {
		j := nodes[i].next
		if j < 0 || nodes[j].next < 0 {
			return noRank
		}
		return t.rank(piece[i:nodes[j].next])
	}
	for i := range n - 1 {
		if r := t.rank(piece[i : i+2]); r != noRank {
			nodes[i].rank = r
			heap = append(heap, uint64(r)<<32|uint64(i))
		}
	}
	heapInit(heap)
	for len(heap) > 0 {
		var top uint64
		top, heap = heapPop(heap)
		i, r := int32(top&0xffffffff), uint32(top>>32)
		if nodes[i].rank != r {
			continue
		}
		j := nodes[i].next
		k := nodes[j].next
		nodes[j].rank = noRank
		nodes[i].next = k
		if k >= 0 {
			nodes[k].prev = i
		}
		for _, b := range [2]int32{i, nodes[i].prev} {
			if b < 0 {
				continue
			}
			if nodes[b].rank = pairRank(b); nodes[b].rank != noRank {
				heap = heapPush(heap, uint64(nodes[b].rank)<<32|uint64(b))
			}
		}
	}
	bounds := buf.bounds[:0]
	for i := int32(0); i >= 0; i = nodes[i].next {
		bounds = append(bounds, i)
	}
	buf.nodes, buf.heap, buf.bounds = nodes, heap, bounds
	return bounds
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func heapInit(h []uint64) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		heapDown(h, i)
	}
}

func heapPush(h []uint64, v uint64) []uint64 {
	h = append(h, v)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if h[parent] <= h[i] {
			break
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
	return h
}

func heapPop(h []uint64) (uint64, []uint64) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	heapDown(h, 0)
	return top, h
}

func heapDown(h []uint64, i int) {
	for {
		child := 2*i + 1
		if child >= len(h) {
			return
		}
		if right := child + 1; right < len(h) && h[right] < h[child] {
			child = right
		}
		if h[i] <= h[child] {
			return
		}
		h[i], h[child] = h[child], h[i]
		i = child
	}
}

// replaceInvalidUTF8 replaces each maximal subpart of an invalid UTF-8 sequence with U+FFFD
// (Unicode's recommended practice, Python's errors="replace").
func replaceInvalidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
			i += invalidSubpart(s[i:])
			continue
		}
		b.WriteString(s[i : i+n])
		i += n
	}
	return b.String()
}

// invalidSubpart returns the length of the invalid sequence at the start of s: the longest
// prefix that could begin a well-formed sequence, at least one byte.
func invalidSubpart(s string) int {
	need, lo, hi := 0, byte(0x80), byte(0xBF)
	switch c := s[0]; {
	case 0xC2 <= c && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case 0xE1 <= c && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case 0xF1 <= c && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(s); n++ {
		c := s[n]
		if n == 1 && (c < lo || c > hi) || n > 1 && (c < 0x80 || c > 0xBF) {
			break
		}
	}
	return n
}
