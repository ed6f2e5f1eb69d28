package tokens

// rankTable maps a token's bytes to its rank.
//
// Almost every lookup the merges make is of a short string (a pair of short tokens), and in a
// Go map of 100,000 strings each one hashes the string, probes a control group, then follows
// the key's pointer to compare bytes: two or three cache misses once the table is cold, which
// it is whenever other work shares the cores (in the Session API benchmark's profile the lookups
// were most of counting's CPU; docs/benchmarks.md). Tokens of up to seven bytes therefore live in an
// open-addressing table keyed by the bytes themselves, packed into a uint64 with their length:
// one multiplication to hash, one cache line per probe, nothing to follow. Longer tokens stay
// in a map.
type rankTable struct {
	short []rankSlot // a power of two in length, at most half full
	shift uint       // 64 - log2(len(short)): the hash's top bits index short
	long  map[string]uint32
}

// rankSlot is one entry of rankTable.short; key 0 marks it empty (a packed key never is 0:
// its length byte is at least 1).
type rankSlot struct {
	key  uint64
	rank uint32
}

// maxPacked is the longest token kept in rankTable.short: seven bytes and a length byte.
const maxPacked = 7

func newRankTable(tokens map[string]uint32) *rankTable {
	shortCount := 0
	for token := range tokens {
		if len(token) <= maxPacked {
			shortCount++
		}
	}
	size, shift := 1, uint(64)
	for size < 2*shortCount {
		size <<= 1
		shift--
	}
	t := &rankTable{short: make([]rankSlot, size), shift: shift, long: map[string]uint32{}}
	for token, rank := range tokens {
		if len(token) == 0 || len(token) > maxPacked {
			t.long[token] = rank
			continue
		}
		key := packToken(token)
		i := t.slot(key)
		for t.short[i].key != 0 {
			i = (i + 1) & (len(t.short) - 1)
		}
		t.short[i] = rankSlot{key: key, rank: rank}
	}
	return t
}

func (t *rankTable) len() int {
	n := len(t.long)
	for _, s := range t.short {
		if s.key != 0 {
			n++
		}
	}
	return n
}

// get returns the rank of the token s, if s is one.
func (t *rankTable) get(s string) (uint32, bool) {
	if len(s) > maxPacked || len(s) == 0 {
		rank, ok := t.long[s]
		return rank, ok
	}
	key := packToken(s)
	for i := t.slot(key); ; i = (i + 1) & (len(t.short) - 1) {
		switch t.short[i].key {
		case key:
			return t.short[i].rank, true
		case 0:
			return 0, false
		}
	}
}

// slot is the first slot of key: Fibonacci hashing, the product's top bits.
func (t *rankTable) slot(key uint64) int {
	return int((key * 0x9E3779B97F4A7C15) >> t.shift)
}

// packToken packs 1 to 7 bytes and their count into a uint64.
func packToken(s string) uint64 {
	key := uint64(len(s)) << 56
	for i := range len(s) {
		key |= uint64(s[i]) << (8 * i)
	}
	return key
}
