package compact

import "github.com/parley-dev/parley/pkg/conversation"

// cutPoints reports, for every index i in 0..len(messages), whether the history may be cut
// before messages[i] (keeping messages[i:]):
//
//   - no tool call before i has its result at or after i (a pair is never split), and
//   - messages[i] holds no tool result (the kept part never starts with one).
//
// Cutting at len(messages) keeps nothing, and is valid when no pair straddles the end (a
// call still waiting for its result is not split by it). Results whose call appears nowhere
// before them were orphans on input; they block no cut but are never at the start of one.
func cutPoints(messages []conversation.Message) []bool {
	n := len(messages)
	calls := 0
	for i := range messages {
		for j := range messages[i].Blocks {
			if messages[i].Blocks[j].Type == conversation.BlockToolUse {
				calls++
			}
		}
	}
	callAt := make(map[string]int, calls) // sized up front: growing it dominated at 100k messages
	// straddle[i] > 0 after the prefix sum means some pair spans the cut before i.
	straddle := make([]int, n+2)
	for i := range messages {
		m := &messages[i]
		for j := range m.Blocks {
			b := &m.Blocks[j]
			switch b.Type {
			case conversation.BlockToolUse:
				if _, seen := callAt[b.ToolUseID]; !seen {
					callAt[b.ToolUseID] = i
				}
			case conversation.BlockToolResult:
				if at, ok := callAt[b.ToolUseID]; ok && at < i {
					straddle[at+1]++
					straddle[i+1]--
				}
			}
		}
	}
	ok := make([]bool, n+1)
	open := 0
	for i := 0; i <= n; i++ {
		open += straddle[i]
		ok[i] = open == 0 && (i == n || !messages[i].HasToolResult())
	}
	return ok
}

// isStandIn reports whether m is a notice or summary an earlier compaction inserted.
func isStandIn(m *conversation.Message) bool {
	return m.Role == conversation.RoleSystem &&
		(m.Flags.Has(conversation.FlagTruncationNotice) || m.Flags.Has(conversation.FlagCompactSummary))
}

// onlyStandIns reports whether every message is a stand-in (folding them again gains nothing).
func onlyStandIns(messages []conversation.Message) bool {
	for i := range messages {
		if !isStandIn(&messages[i]) {
			return false
		}
	}
	return true
}

// recentStart is the index of the first message that must be kept as it is.
func recentStart(n, keepRecent int) int {
	return max(n-max(keepRecent, 1), 0)
}

// chooseCut picks where to cut messages so that fixed plus the kept messages' tokens fit the
// budget: the smallest valid cut that fits (keeping as much as possible), or, when none at or
// before limit fits, the largest valid cut at or before limit (keeping as little as allowed).
// costs[i] is messages[i]'s token count. It returns 0 when nothing can be cut.
func chooseCut(valid []bool, costs []int, fixed, budget, limit int) int {
	n := len(costs)
	// suffix is the tokens kept when cutting at i; it shrinks as i grows.
	suffix := 0
	fitFrom := n + 1 // smallest i whose suffix fits
	for i := n; i >= 0; i-- {
		if i < n {
			suffix += costs[i]
		}
		if fixed+suffix > budget {
			break
		}
		fitFrom = i
	}
	best := 0
	for i := 1; i <= limit; i++ {
		if !valid[i] {
			continue
		}
		best = i
		if i >= fitFrom {
			break
		}
	}
	return best
}
