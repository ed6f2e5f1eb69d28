package conversation

// resultsFirst orders tool_result blocks before the others (the canonical RoleTool layout),
// keeping the relative order within each group.
func resultsFirst(blocks []Block) []Block {
	if len(blocks) == 0 || blocks[0].Type == BlockToolResult && allResults(blocks) {
		return blocks
	}
	out := make([]Block, 0, len(blocks))
	for _, b := range blocks {
		if b.Type == BlockToolResult {
			out = append(out, b)
		}
	}
	for _, b := range blocks {
		if b.Type != BlockToolResult {
			out = append(out, b)
		}
	}
	return out
}

// allResults reports whether every block is a tool_result.
func allResults(blocks []Block) bool {
	for i := range blocks {
		if blocks[i].Type != BlockToolResult {
			return false
		}
	}
	return true
}

// resultsFirstOrder is resultsFirst, with where each block stood before when it moved.
func resultsFirstOrder(blocks []Block) ([]Block, []int) {
	out := resultsFirst(blocks)
	order := make([]int, 0, len(blocks))
	moved := false
	for _, results := range []bool{true, false} {
		for k := range blocks {
			if (blocks[k].Type == BlockToolResult) == results {
				moved = moved || k != len(order)
				order = append(order, k)
			}
		}
	}
	if !moved {
		return out, nil
	}
	return out, order
}
