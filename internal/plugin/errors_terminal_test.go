package plugin

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// An error may quote what a server answered (a problem's detail, a store's message): it is
// printed as text, never as escape sequences the terminal would act on.
func TestErrorsCannotDriveTheTerminal(t *testing.T) {
	var out bytes.Buffer
	printError(&out, errors.New("the store said \x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\rdone"))
	if s := out.String(); strings.ContainsAny(s, "\x1b\x07\r") || !strings.Contains(s, "done") {
		t.Fatalf("printed %q", s)
	}
}
