package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/names"
)

// checkpoint is an existing Checkpoint of Conversation "c", created at created+age.
type checkpoint struct {
	name   string
	reason parleyv1alpha1.CheckpointReason
	age    time.Duration
	phase  parleyv1alpha1.CheckpointPhase
	turn   *int64
	seq    int64
}

func (c checkpoint) object() parleyv1alpha1.Checkpoint {
	return parleyv1alpha1.Checkpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: c.name, CreationTimestamp: metav1.NewTime(created.Add(c.age))},
		Spec: parleyv1alpha1.CheckpointSpec{
			ConversationRef: parleyv1alpha1.ConversationReference{Name: "c"}, Reason: c.reason, Turn: c.turn,
		},
		Status: parleyv1alpha1.CheckpointStatus{Phase: c.phase, Sequence: c.seq},
	}
}

func TestDecideCheckpoints(t *testing.T) {
	policy := func(p parleyv1alpha1.CheckpointPolicy) *parleyv1alpha1.Conversation {
		return testConv(func(c *parleyv1alpha1.Conversation) { c.Spec.Checkpoints = &p })
	}
	every3 := policy(parleyv1alpha1.CheckpointPolicy{EveryTurns: ptrTo(int32(3))})
	hourly := policy(parleyv1alpha1.CheckpointPolicy{Interval: dur(time.Hour)})
	ready, pending := parleyv1alpha1.CheckpointReady, parleyv1alpha1.CheckpointPending
	scheduled, manual := parleyv1alpha1.CheckpointScheduled, parleyv1alpha1.CheckpointManual

	tests := map[string]struct {
		conv     *parleyv1alpha1.Conversation
		existing []checkpoint
		now      time.Time
		turns    int
		sequence uint64

		wantCreate []string // "name" or "name@turn"
		wantPrune  []string
		wantLatest string
		wantNext   time.Time
	}{
		"no policy: nothing scheduled, latest still reported": {
			conv: testConv(), turns: 9, sequence: 20,
			existing:   []checkpoint{{name: "m1", reason: manual, phase: ready}},
			wantLatest: "m1",
		},
		"everyTurns: only the latest multiple, no back-fill": {
			conv: every3, turns: 7, sequence: 14,
			wantCreate: []string{"c-turn-6@6"},
		},
		"everyTurns: at the multiple itself": {
			conv: every3, turns: 3, sequence: 6,
			wantCreate: []string{"c-turn-3@3"},
		},
		"everyTurns: before the first multiple": {
			conv: every3, turns: 2, sequence: 4,
		},
		"everyTurns: not twice": {
			conv: every3, turns: 8, sequence: 16,
			existing: []checkpoint{{name: "c-turn-6", reason: scheduled, turn: ptrTo(int64(6)), phase: pending}},
		},
		"everyTurns zero is off": {
			conv: policy(parleyv1alpha1.CheckpointPolicy{EveryTurns: ptrTo(int32(0))}), turns: 8, sequence: 16,
		},
		"interval: not before the first interval": {
			conv: hourly, now: created.Add(30 * time.Minute), sequence: 5,
			wantNext: created.Add(time.Hour),
		},
		"interval: one for the current interval": {
			conv: hourly, now: created.Add(150 * time.Minute), sequence: 5,
			wantCreate: []string{"c-at-2"}, wantNext: created.Add(3 * time.Hour),
		},
		"interval: at the boundary itself": {
			conv: hourly, now: created.Add(time.Hour), sequence: 5,
			wantCreate: []string{"c-at-1"}, wantNext: created.Add(2 * time.Hour),
		},
		"interval: not for an empty history": {
			conv: hourly, now: created.Add(150 * time.Minute),
			wantNext: created.Add(3 * time.Hour),
		},
		"interval: not when the history did not move since the last one": {
			conv: hourly, now: created.Add(130 * time.Minute), sequence: 5,
			existing: []checkpoint{{name: "c-at-1", reason: scheduled, age: time.Hour, phase: ready, seq: 5}},
			wantNext: created.Add(3 * time.Hour), wantLatest: "c-at-1",
		},
		"interval: when it moved": {
			conv: hourly, now: created.Add(130 * time.Minute), sequence: 6,
			existing:   []checkpoint{{name: "c-at-1", reason: scheduled, age: time.Hour, phase: ready, seq: 5}},
			wantCreate: []string{"c-at-2"}, wantNext: created.Add(3 * time.Hour), wantLatest: "c-at-1",
		},
		"interval: compared with the newest interval checkpoint, not a turn one": {
			conv: policy(parleyv1alpha1.CheckpointPolicy{Interval: dur(time.Hour), EveryTurns: ptrTo(int32(100))}),
			now:  created.Add(190 * time.Minute), sequence: 9,
			existing: []checkpoint{
				{name: "c-at-1", reason: scheduled, age: time.Hour, phase: ready, seq: 4},
				{name: "c-at-2", reason: scheduled, age: 2 * time.Hour, phase: ready, seq: 9},
				{name: "c-turn-100", reason: scheduled, age: 150 * time.Minute, turn: ptrTo(int64(100)), phase: ready, seq: 3},
			},
			wantNext: created.Add(4 * time.Hour), wantLatest: "c-turn-100",
		},
		"interval: not twice in one interval": {
			conv: hourly, now: created.Add(150 * time.Minute), sequence: 9,
			existing: []checkpoint{{name: "c-at-2", reason: scheduled, age: 2 * time.Hour, phase: pending}},
			wantNext: created.Add(3 * time.Hour),
		},
		"keep: prunes the oldest of every reason, never a Pending one or the latest Ready": {
			conv:  policy(parleyv1alpha1.CheckpointPolicy{EveryTurns: ptrTo(int32(1)), Keep: ptrTo(int32(2))}),
			turns: 4, sequence: 8,
			existing: []checkpoint{
				{name: "m-old", reason: manual, age: -time.Hour, phase: ready},
				{name: "c-turn-2", reason: scheduled, age: 2 * time.Minute, turn: ptrTo(int64(2)), phase: ready},
				{name: "c-turn-1", reason: scheduled, age: time.Minute, turn: ptrTo(int64(1)), phase: ready},
				{name: "c-turn-3", reason: scheduled, age: 3 * time.Minute, turn: ptrTo(int64(3)), phase: pending},
				{name: "c-archive", reason: parleyv1alpha1.CheckpointArchive, age: -time.Minute, phase: ready},
			},
			wantCreate: []string{"c-turn-4@4"},
			wantPrune:  []string{"m-old", "c-archive", "c-turn-1"},
			wantLatest: "c-turn-2",
		},
		"keep: within the limit nothing goes": {
			conv:  policy(parleyv1alpha1.CheckpointPolicy{EveryTurns: ptrTo(int32(1)), Keep: ptrTo(int32(3))}),
			turns: 3, sequence: 6,
			existing: []checkpoint{
				{name: "c-turn-1", reason: scheduled, age: time.Minute, turn: ptrTo(int64(1)), phase: ready},
				{name: "c-turn-2", reason: scheduled, age: 2 * time.Minute, turn: ptrTo(int64(2)), phase: ready},
			},
			wantCreate: []string{"c-turn-3@3"}, wantLatest: "c-turn-2",
		},
		"keep: defaults to ten": {
			conv:  policy(parleyv1alpha1.CheckpointPolicy{EveryTurns: ptrTo(int32(1))}),
			turns: 11, sequence: 22,
			existing:   tenTurnCheckpoints(),
			wantCreate: []string{"c-turn-11@11"}, wantPrune: []string{"c-turn-1"}, wantLatest: "c-turn-10",
		},
		"no policy: keep defaults to ten, Crash and Manual ones too": {
			conv: testConv(), turns: 9, sequence: 20,
			existing:   crashAndManualCheckpoints(12),
			wantPrune:  []string{"k-00", "k-01"},
			wantLatest: "k-11",
		},
		"keep 2 of ten Crash and Manual ones": {
			conv:       policy(parleyv1alpha1.CheckpointPolicy{Keep: ptrTo(int32(2))}),
			existing:   crashAndManualCheckpoints(10),
			wantPrune:  []string{"k-00", "k-01", "k-02", "k-03", "k-04", "k-05", "k-06", "k-07"},
			wantLatest: "k-09",
		},
		"latest: newest Ready, same second ordered by name": {
			conv: testConv(),
			existing: []checkpoint{
				{name: "b", reason: manual, age: time.Minute, phase: ready},
				{name: "a", reason: manual, age: time.Minute, phase: ready},
				{name: "z-newer-but-pending", reason: manual, age: time.Hour, phase: pending},
				{name: "y-newer-but-failed", reason: manual, age: time.Hour, phase: parleyv1alpha1.CheckpointFailed},
				{name: "old", reason: manual, phase: ready},
			},
			wantLatest: "b",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			existing := make([]parleyv1alpha1.Checkpoint, 0, len(tc.existing))
			for _, c := range tc.existing {
				existing = append(existing, c.object())
			}
			now := tc.now
			if now.IsZero() {
				now = created.Add(10 * time.Minute)
			}
			plan := decideCheckpoints(tc.conv, existing, now, tc.turns, tc.sequence)
			gotCreate := make([]string, 0, len(plan.create))
			for _, c := range plan.create {
				s := c.name
				if c.turn != nil {
					s += fmt.Sprintf("@%d", *c.turn)
				}
				gotCreate = append(gotCreate, s)
			}
			if !slices.Equal(gotCreate, tc.wantCreate) {
				t.Errorf("create %v, want %v", gotCreate, tc.wantCreate)
			}
			if prune := plan.pruneAfter(len(plan.create)); !slices.Equal(prune, tc.wantPrune) {
				t.Errorf("prune %v, want %v", prune, tc.wantPrune)
			}
			if plan.latest != tc.wantLatest {
				t.Errorf("latest %q, want %q", plan.latest, tc.wantLatest)
			}
			if !plan.next.Equal(tc.wantNext) {
				t.Errorf("next %v, want %v", plan.next, tc.wantNext)
			}
		})
	}
}

// crashAndManualCheckpoints are n Ready Checkpoints k-00… of the reasons the policy does not
// create, alternately Crash and Manual, a minute apart.
func crashAndManualCheckpoints(n int) []checkpoint {
	out := make([]checkpoint, 0, n)
	for i := range n {
		reason := parleyv1alpha1.CheckpointCrash
		if i%2 == 1 {
			reason = parleyv1alpha1.CheckpointManual
		}
		out = append(out, checkpoint{
			name: fmt.Sprintf("k-%02d", i), reason: reason, age: time.Duration(i) * time.Minute,
			phase: parleyv1alpha1.CheckpointReady,
		})
	}
	return out
}

func tenTurnCheckpoints() []checkpoint {
	var out []checkpoint
	for i := int64(1); i <= 10; i++ {
		out = append(out, checkpoint{
			name: fmt.Sprintf("c-turn-%d", i), reason: parleyv1alpha1.CheckpointScheduled,
			age: time.Duration(i) * time.Minute, turn: ptrTo(i), phase: parleyv1alpha1.CheckpointReady,
		})
	}
	return out
}

func TestChildName(t *testing.T) {
	long := strings.Repeat("a", 250)
	dotted := strings.Repeat("abcdefghi.", 30)[:253] // DNS subdomain labels
	// The cut of a base to fit "-<hash>-at-3" keeps 253-len("at-3")-10 characters.
	cutOn := func(c string) string { return strings.Repeat("a", 253-len("at-3")-11) + c + strings.Repeat("b", 30) }
	tests := map[string]struct {
		base, suffix string
		want         string // exact, when set
	}{
		"short: base-suffix":             {base: "c", suffix: "archive", want: "c-archive"},
		"exactly the limit is kept":      {base: strings.Repeat("b", 253-len("-turn-7")), suffix: "turn-7", want: strings.Repeat("b", 253-len("-turn-7")) + "-turn-7"},
		"long: cut and hashed":           {base: long, suffix: "turn-12"},
		"long: labels":                   {base: dotted, suffix: "at-3"},
		"long: cut right after a dot":    {base: cutOn("."), suffix: "at-3"},
		"long: cut right after a hyphen": {base: cutOn("-"), suffix: "at-3"},
		"longest possible name":          {base: strings.Repeat("x", 253), suffix: "archive"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := childName(tc.base, tc.suffix)
			if tc.want != "" && got != tc.want {
				t.Errorf("childName = %q, want %q", got, tc.want)
			}
			if len(got) > names.MaxLength {
				t.Errorf("len %d > %d", len(got), names.MaxLength)
			}
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("%q is not a valid object name: %v", got, errs)
			}
			if !strings.HasSuffix(got, "-"+tc.suffix) {
				t.Errorf("%q does not end in -%s", got, tc.suffix)
			}
			if again := childName(tc.base, tc.suffix); again != got {
				t.Errorf("not deterministic: %q then %q", got, again)
			}
		})
	}
	// Bases that differ only past the cut still get distinct names.
	seen := map[string]string{}
	for _, base := range []string{long + "x", long + "y", long + "xy", long, dotted, dotted[:252] + "z", cutOn("."), cutOn("-")} {
		got := childName(base, "turn-1")
		if other, ok := seen[got]; ok {
			t.Errorf("%q and %q share the child name %q", other, base, got)
		}
		seen[got] = base
	}
}

func TestCheckpointNames(t *testing.T) {
	for got, want := range map[string]string{
		archiveCheckpointName("c"):      "c-archive",
		turnCheckpointName("c", 12):     "c-turn-12",
		intervalCheckpointName("c", 3):  "c-at-3",
		intervalCheckpointName("c", 10): "c-at-10",
	} {
		if got != want {
			t.Errorf("name %q, want %q", got, want)
		}
	}
}

func TestLabelSafe(t *testing.T) {
	for _, name := range []string{"c", strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("ab.-", 60) + "z"} {
		got := labelSafe(name)
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("labelSafe(%d chars) = %q: %v", len(name), got, errs)
		}
		if len(name) <= 63 && got != name {
			t.Errorf("labelSafe changed a short name: %q -> %q", name, got)
		}
		if labelSafe(name) != got {
			t.Errorf("labelSafe not deterministic for %q", name)
		}
	}
	if labelSafe(strings.Repeat("a", 70)) == labelSafe(strings.Repeat("a", 71)) {
		t.Error("distinct long names share a label value")
	}
}
