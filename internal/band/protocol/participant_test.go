package protocol

import "testing"

func TestFindParticipant(t *testing.T) {
	t.Parallel()
	h := func(s string) *string { return &s }
	roster := []Participant{
		{ID: "0190a1b2-0000-4000-8000-00000000000a", Handle: h("owner/coder")},
		{ID: "0190a1b2-0000-4000-8000-00000000000b", Handle: h("Ann")},
		{ID: "0190a1b2-0000-4000-8000-00000000000c", Handle: h("bob/coder")},
		{ID: "0190a1b2-0000-4000-8000-00000000000d"},
	}
	tests := []struct {
		ref    string
		wantID string
		n      int
	}{
		{ref: "@owner/coder", wantID: roster[0].ID, n: 1},
		{ref: "ann", wantID: roster[1].ID, n: 1},
		{ref: " @ANN ", wantID: roster[1].ID, n: 1},
		{ref: "0190A1B2-0000-4000-8000-00000000000D", wantID: roster[3].ID, n: 1},
		{ref: "coder", n: 2}, // two agents answer to the slug: ambiguous
		{ref: "carol", n: 0},
		{ref: "", n: 0},
	}
	for _, tt := range tests {
		got, n := FindParticipant(roster, tt.ref)
		if n != tt.n || (n == 1 && got.ID != tt.wantID) {
			t.Errorf("FindParticipant(%q) = %s, %d; want %s, %d", tt.ref, got.ID, n, tt.wantID, tt.n)
		}
	}
	if roster[3].HandleText() != "" || roster[1].HandleText() != "Ann" {
		t.Error("HandleText")
	}
}
