package sessionapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/parley-dev/parley/pkg/wire"
)

// An import part of many tiny items (a transcript's records, subagent threads) fits in
// a body yet would become as many history records, each far larger than the item it came
// from: a part is refused with 413 past wire.MaxImportItems, before any record is made or
// stored, and one at the bound is taken.
func TestImportPartOfTooManyItemsIsRefused(t *testing.T) {
	repeat := func(item string, n int) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }
	for name, tc := range map[string]struct {
		state string
		want  int
	}{
		"records past the bound":               {`{"records":[` + repeat(`{"raw":1}`, wire.MaxImportItems+1) + `]}`, http.StatusRequestEntityTooLarge},
		"subagent threads past it":             {`{"subagents":[` + repeat(`{}`, wire.MaxImportItems+1) + `]}`, http.StatusRequestEntityTooLarge},
		"records and threads past it together": {`{"records":[` + repeat(`{"raw":1}`, wire.MaxImportItems/2) + `],"subagents":[` + repeat(`{}`, wire.MaxImportItems/2+1) + `]}`, http.StatusRequestEntityTooLarge},
		"records at the bound":                 {`{"records":[` + repeat(`{"raw":1}`, wire.MaxImportItems) + `]}`, http.StatusOK},
	} {
		t.Run(name, func(t *testing.T) {
			srv, _ := testServer(t)
			srv.Limits.MaxBodyBytes = 8 << 20
			before := historyLength(t, srv)
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, "/v1/namespaces/ns/conversations/c/import",
				strings.NewReader(`{"id":"i","part":0,"state":`+tc.state+`}`))
			req.Header.Set("Authorization", "Bearer writer")
			srv.Handler().ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("%d %.300s, want %d", rec.Code, rec.Body, tc.want)
			}
			if tc.want != http.StatusOK {
				if !strings.Contains(rec.Body.String(), "items in one part") {
					t.Errorf("problem %.300s does not say the part holds too many items", rec.Body)
				}
				if after := historyLength(t, srv); after != before {
					t.Errorf("the history went from %d to %d records on a refused part", before, after)
				}
			}
		})
	}
}

// historyLength is the last sequence of testServer's history.
func historyLength(t *testing.T, srv *Server) uint64 {
	t.Helper()
	h, err := srv.Sessions.Stores.Open(t.Context(), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	head, err := h.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return head.Sequence
}
