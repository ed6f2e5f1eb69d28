package engine

import (
	"slices"
	"testing"
)

func TestParseDataKey(t *testing.T) {
	tests := map[string]struct {
		key  string
		want dataKey
		ok   bool
	}{
		"sealed":           {sealedKey("e2-abcdef", 1, 32), dataKey{tag: "e2-abcdef", first: 1, last: 32}, true},
		"tail":             {tailKey("e2-abcdef", 33, 33), dataKey{tag: "e2-abcdef", tail: true, first: 33, last: 33}, true},
		"index":            {"index", dataKey{}, false},
		"checkpoint":       {"ckpt.00ff", dataKey{}, false},
		"first after last": {"e1-x.s.000000000009-000000000003", dataKey{}, false},
		"sequence zero":    {"e1-x.s.000000000000-000000000003", dataKey{}, false},
		// Objects the engine never writes (a copy, another tool's file) are not its data.
		"unpadded":             {"e1-x.s.1-3", dataKey{}, false},
		"sealed with a suffix": {"e1-x.s.000000000001-000000000003.bak", dataKey{}, false},
		"tail without a nonce": {"e1-x.t.000000000001-000000000003", dataKey{}, false},
		"no tag":               {".s.000000000001-000000000003", dataKey{}, false},
		"a sign":               {"e1-x.s.+00000000001-000000000003", dataKey{}, false},
		"past 12 digits":       {sealedKey("e1-x", 1, 1234567890123), dataKey{tag: "e1-x", first: 1, last: 1234567890123}, true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := parseDataKey(tt.key)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("parseDataKey(%q) = %+v, %v; want %+v, %v", tt.key, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestRedundantSegments(t *testing.T) {
	k := func(first, last uint64) dataKey { return dataKey{tag: "e1-t", first: first, last: last} }
	tests := map[string]struct {
		keys    []dataKey
		through uint64
		want    []string
	}{
		"one chain": {[]dataKey{k(1, 10), k(11, 20)}, 20, nil},
		"duplicate from a crashed sealer": {
			[]dataKey{k(1, 10), k(11, 15), k(11, 20)}, 20, []string{sealedKey("e1-t", 11, 15)},
		},
		"past sealedThrough is kept (a seal may be committing it)": {
			[]dataKey{k(1, 10), k(11, 20)}, 10, nil,
		},
		"a gap keeps everything": {[]dataKey{k(1, 10), k(12, 20), k(12, 14)}, 20, nil},
		"a duplicate ending at sealedThrough": {
			[]dataKey{k(1, 10), k(11, 20), k(15, 20)}, 20, []string{sealedKey("e1-t", 15, 20)},
		},
		"the longest segments make the chain": {
			[]dataKey{k(1, 5), k(1, 10), k(6, 10)}, 10, []string{sealedKey("e1-t", 1, 5), sealedKey("e1-t", 6, 10)},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := redundantSegments("e1-t", tt.keys, tt.through)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGarbage(t *testing.T) {
	m := manifest{
		Epoch: 3, Tag: "e3-cur", LastSeq: 40, SealedThrough: 32,
		Tail: []tailRef{{Key: "e3-cur.t.000000000033-000000000040.live"}},
		Old:  []epochRef{{Epoch: 2, Tag: "e2-old", LastSeq: 5}},
	}
	keys := []string{
		"index",
		"e1-gone.s.000000000001-000000000005",       // dropped epoch
		"e2-old.s.000000000001-000000000005",        // retained epoch
		"e2-old.t.000000000001-000000000005.xxxx",   // old epochs are sealed
		"e3-cur.s.000000000001-000000000032",        // live segment
		"e3-cur.s.000000000001-000000000016",        // a shorter duplicate of it
		"e3-cur.t.000000000033-000000000040.live",   // in the tail
		"e3-cur.t.000000000033-000000000033.orphan", // lost its race
		"e3-cur.t.000000000040-000000000040.late",   // lost its race for the head
		"e3-cur.t.000000000041-000000000041.flight", // may still commit
		"e4-next.s.000000000001-000000000001",       // a swap in flight
		"e3-lost.s.000000000001-000000000001",       // a swap that lost
	}
	infos := make([]ObjectInfo, len(keys))
	for i, key := range keys {
		infos[i] = ObjectInfo{Key: key}
	}
	got := garbage(m, infos, nil)
	slices.Sort(got)
	want := []string{
		"e1-gone.s.000000000001-000000000005",
		"e2-old.t.000000000001-000000000005.xxxx",
		"e3-cur.s.000000000001-000000000016",
		"e3-cur.t.000000000033-000000000033.orphan",
		"e3-cur.t.000000000040-000000000040.late",
		"e3-lost.s.000000000001-000000000001",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("garbage %v, want %v", got, want)
	}
}
