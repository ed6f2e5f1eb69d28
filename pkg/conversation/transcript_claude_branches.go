package conversation

import "bytes"

// abandonedBranches finds the message lines a rewind left behind. Claude Code never deletes
// lines: editing an earlier prompt appends a new user line whose parentUuid is the edited
// prompt's parent, and the SDK resumes along the chain that leads to the newest line. So where
// a line on that chain has a child off the chain, in the same thread, that is a user prompt
// (see isPrompt), the prompt and everything below it is an abandoned branch: kept as raw
// records (written back on export), left out of the conversation. Forks anywhere else (tool
// results, progress lines, meta lines) are left alone: file order stands, nothing is dropped
// on a guess.
//
// A uuid written again (a resumed session replays lines) is one node of the tree, its first
// line: a replayed prompt is not a second child, and a copy is abandoned only with its
// original.
func abandonedBranches(lines []parsedLine) map[int]bool {
	index := make(map[string]int, len(lines))
	children := make(map[string][]int, len(lines))
	replayed := false
	for i := range lines {
		l := &lines[i].line
		if l.UUID == "" {
			continue
		}
		if _, seen := index[l.UUID]; seen {
			replayed = true
			continue
		}
		index[l.UUID] = i
		if p := chainParent(l); p != "" {
			children[p] = append(children[p], i)
		}
	}
	onChain := map[int]bool{}
	var abandoned map[int]bool
	// One chain per thread: main, and each sidechain kept in the main file.
	leaves := map[string]int{}
	for i := range lines {
		l := &lines[i].line
		// The newest line is the last one written for the first time: a replay of older
		// lines does not move the conversation back.
		if lines[i].decoded && l.UUID != "" && (l.Type == "user" || l.Type == "assistant") && index[l.UUID] == i {
			leaves[threadOf(l, "")] = i
		}
	}
	for _, leaf := range leaves {
		for i, ok := leaf, true; ok && !onChain[i]; i, ok = index[chainParent(&lines[i].line)] {
			onChain[i] = true
		}
	}
	for i := range lines {
		if !onChain[i] {
			continue
		}
		thread := threadOf(&lines[i].line, "")
		for _, c := range children[lines[i].line.UUID] {
			if onChain[c] || !isPrompt(&lines[c].line) || threadOf(&lines[c].line, "") != thread {
				continue
			}
			if abandoned == nil {
				abandoned = map[int]bool{}
			}
			markSubtree(lines, children, c, abandoned)
		}
	}
	if replayed && abandoned != nil {
		for i := range lines {
			if u := lines[i].line.UUID; u != "" && abandoned[index[u]] {
				abandoned[i] = true
			}
		}
	}
	return abandoned
}

// chainParent is the line a line follows: its parentUuid, or for a compaction boundary
// (parentUuid null) the last line before the compaction, so a rewind made before a
// compaction is still seen.
func chainParent(l *claudeLine) string {
	if l.ParentUUID == "" {
		return l.LogicalParentUUID
	}
	return l.ParentUUID
}

// isPrompt reports whether a line is something a person typed: a user line that carries no
// tool result and was not injected by Claude Code (isMeta, isCompactSummary). Only such a
// line starts an abandoned branch; anything else off the chain is kept.
func isPrompt(l *claudeLine) bool {
	return l.Type == "user" && l.Message != nil && !l.IsMeta && !l.IsCompactSummary &&
		!bytes.Contains(l.Message.Content, []byte("tool_result"))
}

func markSubtree(lines []parsedLine, children map[string][]int, root int, marked map[int]bool) {
	stack := []int{root}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if marked[i] {
			continue
		}
		marked[i] = true
		stack = append(stack, children[lines[i].line.UUID]...)
	}
}
