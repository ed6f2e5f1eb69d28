package render

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// DescribeInput is everything the describe page shows.
type DescribeInput struct {
	Conversation *parleyv1alpha1.Conversation
	// Checkpoints are the Conversation's Checkpoints (any order).
	Checkpoints []parleyv1alpha1.Checkpoint
	// Events are the Conversation's events (any order); the latest 10 are shown.
	Events []corev1.Event
	Now    time.Time
	// Location is the zone absolute times are shown in (UTC when nil).
	Location *time.Location
}

// Describe writes a Conversation the way an operator on call reads it: phase and session,
// expiry in human terms, history and the context bar, the agent's restarts and last failure,
// conditions, checkpoints and recent events.
func Describe(w io.Writer, in DescribeInput) error {
	w = terminalText{w}
	c := in.Conversation
	st := &c.Status
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	field := func(k, v string) { _, _ = fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	more := func(v string) { _, _ = fmt.Fprintf(tw, "\t%s\n", v) } // a field's next line
	when := func(t *metav1.Time) string {
		if t == nil {
			return "-"
		}
		return When(t.Time, in.Now, in.Location)
	}

	field("Name", c.Name)
	field("Namespace", c.Namespace)
	field("Session", orDash(st.SessionID))
	field("Phase", orDash(string(st.Phase)))
	field("Created", when(&c.CreationTimestamp))
	field("Expires", expiry(c, in.Now, in.Location))
	if st.LastActivityTime != nil {
		field("Last activity", when(st.LastActivityTime))
	}
	if c.Spec.IsSuspended() {
		field("Suspended", "yes (the agent pod is stopped; resume with kubectl parley resume "+c.Name+")")
	}
	if c.Spec.ForkFrom != nil {
		field("Forked from", "checkpoint "+c.Spec.ForkFrom.Checkpoint)
	}
	field("History", history(c))
	field("Context", contextLine(c))
	if lc := st.LastCompaction; lc != nil {
		field("Last compaction", compaction(lc, in.Now, in.Location))
	}
	if c.Spec.Agent != nil || st.Agent != nil {
		field("Agent", agent(c))
		if a := st.Agent; a != nil && a.LastFailure != nil {
			f := a.LastFailure
			line := orDash(f.Reason)
			if f.ExitCode != 0 {
				line += fmt.Sprintf(" (exit code %d)", f.ExitCode)
			}
			if f.Turn != 0 {
				line += fmt.Sprintf(" in turn %d", f.Turn)
			}
			if f.PodName != "" {
				line += " · pod " + f.PodName
			}
			if f.Time != nil {
				line += " · " + Relative(f.Time.Time, in.Now)
			}
			field("Last failure", line)
			if f.Message != "" {
				more(f.Message)
			}
			if a.FailuresAtTurn > 1 {
				more(fmt.Sprintf("%d crashes in a row at this turn (3 make a poison turn)", a.FailuresAtTurn))
			}
		}
		if a := st.Agent; a != nil && a.NextStartAt != nil && a.NextStartAt.After(in.Now) {
			field("Next start", when(a.NextStartAt))
		}
	}
	if as := st.AdapterState; as != nil {
		line := orDash(as.Type)
		if as.SessionID != "" {
			line += " · session " + as.SessionID
		}
		if as.Resumable {
			line += " · resumable"
		}
		field("Adapter", line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	p := &section{w: w}
	p.title("Conditions")
	conds := append([]metav1.Condition(nil), st.Conditions...)
	p.table([]string{"TYPE", "STATUS", "REASON", "SINCE", "MESSAGE"}, len(conds), func(i int) []string {
		cd := conds[i]
		return []string{cd.Type, string(cd.Status), cd.Reason, Duration(in.Now.Sub(cd.LastTransitionTime.Time)), cd.Message}
	})

	ckpts := append([]parleyv1alpha1.Checkpoint(nil), in.Checkpoints...)
	sort.SliceStable(ckpts, func(i, j int) bool {
		return ckpts[i].CreationTimestamp.Before(&ckpts[j].CreationTimestamp) ||
			ckpts[i].CreationTimestamp.Equal(&ckpts[j].CreationTimestamp) && ckpts[i].Name < ckpts[j].Name
	})
	p.title("Checkpoints")
	p.table([]string{"NAME", "REASON", "TURN", "PHASE", "MESSAGES", "TOKENS", "AGE"}, len(ckpts), func(i int) []string {
		k := &ckpts[i]
		return []string{
			k.Name, string(k.Spec.GetReason()), fmt.Sprint(k.Status.Turn), orDash(string(k.Status.Phase)),
			Count(k.Status.Messages), Count(k.Status.Tokens), Duration(in.Now.Sub(k.CreationTimestamp.Time)),
		}
	})

	events := append([]corev1.Event(nil), in.Events...)
	sort.SliceStable(events, func(i, j int) bool { return eventTime(&events[i]).Before(eventTime(&events[j])) })
	if len(events) > 10 {
		events = events[len(events)-10:]
	}
	p.title("Events")
	p.table([]string{"TYPE", "REASON", "AGE", "MESSAGE"}, len(events), func(i int) []string {
		e := &events[i]
		age := Duration(in.Now.Sub(eventTime(e)))
		if e.Count > 1 {
			age += fmt.Sprintf(" (x%d)", e.Count)
		}
		return []string{e.Type, e.Reason, age, e.Message}
	})
	return p.err
}

// expiry says when the session ends and why: "in 20h59m (…) · ttl 24h0m0s".
func expiry(c *parleyv1alpha1.Conversation, now time.Time, loc *time.Location) string {
	var rules []string
	if t := c.Spec.Lifetime.TTL; t != nil {
		rules = append(rules, "ttl "+Duration(t.Duration))
	}
	if t := c.Spec.Lifetime.IdleTimeout; t != nil {
		rules = append(rules, "idle timeout "+Duration(t.Duration))
	}
	if p := c.Spec.Lifetime.ExpirationPolicy; p != "" {
		rules = append(rules, "then "+string(p))
	}
	s := "-"
	if e := c.Status.ExpiresAt; e != nil {
		s = When(e.Time, now, loc)
		if !e.After(now) {
			s = "expired " + s
		}
	}
	if len(rules) > 0 {
		s += " · " + strings.Join(rules, ", ")
	}
	return s
}

func history(c *parleyv1alpha1.Conversation) string {
	h := c.Status.History
	if h == nil {
		return "- (not initialised yet)"
	}
	s := fmt.Sprintf("%s · %s · %s bytes · epoch %d · sequence %d",
		plural(int(h.Messages), "message"), plural(int(h.Turns), "turn"), Count(h.Bytes), h.Epoch, h.Sequence)
	if h.Location != "" {
		s += " · " + h.Location
	}
	return s
}

func contextLine(c *parleyv1alpha1.Conversation) string {
	var tokens, limit int64
	if cs := c.Status.Context; cs != nil {
		tokens, limit = cs.Tokens, cs.Limit
	}
	if limit == 0 && c.Spec.Context.MaxTokens != nil {
		limit = *c.Spec.Context.MaxTokens
	}
	s := ContextBar(tokens, limit, 20)
	if limit > 0 {
		if strategy := c.Spec.Context.GetStrategy(); strategy == parleyv1alpha1.CompactionNone {
			s += " · no compaction"
		} else {
			s += fmt.Sprintf(" · compacts at %d%% (%s)", c.Spec.Context.GetCompactAtPercent(), strategy)
		}
	}
	return s
}

func compaction(lc *parleyv1alpha1.CompactionRecord, now time.Time, loc *time.Location) string {
	var parts []string
	if lc.Time != nil {
		parts = append(parts, When(lc.Time.Time, now, loc))
	}
	if lc.Strategy != "" {
		parts = append(parts, string(lc.Strategy))
	}
	parts = append(parts, fmt.Sprintf("%s → %s tokens", Count(lc.TokensBefore), Count(lc.TokensAfter)),
		plural(int(lc.MessagesFolded), "message")+" folded")
	if lc.Checkpoint != "" {
		parts = append(parts, "checkpoint "+lc.Checkpoint)
	}
	return strings.Join(parts, " · ")
}

func agent(c *parleyv1alpha1.Conversation) string {
	a := c.Status.Agent
	if a == nil {
		return "no pod yet"
	}
	var parts []string
	if a.PodName != "" {
		parts = append(parts, "pod "+a.PodName)
	} else {
		parts = append(parts, "no pod")
	}
	parts = append(parts, fmt.Sprintf("attempt %d", a.Attempt))
	restarts := plural(int(a.Restarts), "restart")
	if c.Spec.Agent != nil && c.Spec.Agent.MaxRestarts != nil {
		restarts += fmt.Sprintf(" (at most %d)", *c.Spec.Agent.MaxRestarts)
	}
	parts = append(parts, restarts)
	if a.ResumedFrom != "" {
		parts = append(parts, "resumed from "+a.ResumedFrom)
	}
	return strings.Join(parts, " · ")
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.CreationTimestamp.Time
	}
}

// section writes the titled tables under the fields.
type section struct {
	w   io.Writer
	err error
}

func (s *section) title(t string) {
	if s.err == nil {
		_, s.err = fmt.Fprintf(s.w, "%s:\n", t)
	}
}

func (s *section) table(header []string, n int, row func(int) []string) {
	if s.err != nil {
		return
	}
	if n == 0 {
		_, s.err = io.WriteString(s.w, "  <none>\n")
		return
	}
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintf(tw, "  %s\n", strings.Join(header, "\t"))
	for i := range n {
		_, _ = fmt.Fprintf(tw, "  %s\n", strings.Join(row(i), "\t"))
	}
	_ = tw.Flush()
	// An empty last cell leaves the padding of its column: trim it.
	for l := range strings.SplitSeq(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if _, s.err = io.WriteString(s.w, strings.TrimRight(l, " ")+"\n"); s.err != nil {
			return
		}
	}
}
