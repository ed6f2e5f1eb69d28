package doctable

import (
	"slices"
	"testing"
)

func TestTables(t *testing.T) {
	text := "intro\n\n| a | b |\n|---|:--:|\n| `x|y` | 1 \\| 2 |\n| c |\n\ntext\n| h |\n|---|\n| r |\n"
	got := Tables(text)
	if len(got) != 2 {
		t.Fatalf("%d tables: %+v", len(got), got)
	}
	if !slices.Equal(got[0].Header, []string{"a", "b"}) || len(got[0].Rows) != 2 ||
		!slices.Equal(got[0].Rows[0], []string{"`x|y`", "1 | 2"}) {
		t.Errorf("first table %+v", got[0])
	}
	if col := got[0].Column("b"); !slices.Equal(col, []string{"1 | 2", ""}) {
		t.Errorf("column b %q", col)
	}
	if got[1].Header[0] != "h" || got[1].Rows[0][0] != "r" {
		t.Errorf("second table %+v", got[1])
	}
}

func TestCodes(t *testing.T) {
	got := Codes("the `a-{b,c}-role` and `x`, `{1,2}{3,4}`")
	want := []string{"a-b-role", "a-c-role", "x", "13", "14", "23", "24"}
	if !slices.Equal(got, want) {
		t.Errorf("Codes = %q, want %q", got, want)
	}
}

func TestSection(t *testing.T) {
	text := "## A\none\n**B** two\nthree\n## C\nfour"
	if got := Section(text, "**B**", "## ", "**"); got != "**B** two\nthree" {
		t.Errorf("Section = %q", got)
	}
	if got := Section(text, "## C", "## "); got != "## C\nfour" {
		t.Errorf("Section to the end = %q", got)
	}
}
