package store_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

func validDelegation(m *jam.Minter) store.Delegation {
	return store.Delegation{ID: jam.New[jam.DelegationID](m), WorkspaceID: jam.New[jam.WorkspaceID](m), Parent: jam.New[jam.SessionID](m),
		Role: jam.RoleReview, Agent: "local/reviewer", Instructions: "Review it.",
		Inputs:   store.DelegationInputs{ChangeSetID: jam.New[jam.ChangeSetID](m), Commit: strings.Repeat("a", 40)},
		Contract: []byte(`{"type":"object"}`), ContractName: store.ContractReview, MaxAttempts: 3, CreatedAt: deliveriesAt}
}

func TestDelegation_Canonical(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(time.Now, nil)
	ok := validDelegation(m)

	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		d := ok
		d.UpdatedAt, d.Generation = deliveriesAt.Add(time.Hour), 9
		got, err := d.Canonical()
		require.NoError(t, err)
		require.Equal(t, store.DelegationPending, got.State)
		require.Equal(t, int64(1), got.Generation)
		require.Equal(t, deliveriesAt.UTC().Truncate(time.Microsecond), got.CreatedAt)
		require.Equal(t, got.CreatedAt, got.UpdatedAt)
	})

	runValidatorCases(t, ok, func(d store.Delegation) error { _, err := d.Canonical(); return err }, []validatorCase[store.Delegation]{
		{"valid", func(*store.Delegation) {}, true},
		{"no inputs", func(d *store.Delegation) { d.Inputs = store.DelegationInputs{} }, true},
		{"a sha-256 commit", func(d *store.Delegation) { d.Inputs.Commit = strings.Repeat("b", 64) }, true},
		{"custom contract", func(d *store.Delegation) { d.ContractName = store.ContractCustom }, true},
		{"most attempts", func(d *store.Delegation) { d.MaxAttempts = store.MaxDelegationAttempts }, true},
		{"longest instructions", func(d *store.Delegation) { d.Instructions = strings.Repeat("x", store.MaxDelegationInstructions) }, true},
		{"bad id", func(d *store.Delegation) { d.ID = "dlv_x" }, false},
		{"no workspace", func(d *store.Delegation) { d.WorkspaceID = "" }, false},
		{"no parent", func(d *store.Delegation) { d.Parent = "" }, false},
		{"a child already", func(d *store.Delegation) { d.Child = jam.New[jam.SessionID](m) }, false},
		{"created running", func(d *store.Delegation) { d.State = store.DelegationRunning }, false},
		{"unknown role", func(d *store.Delegation) { d.Role = "reviewer" }, false},
		{"agent not a peer key", func(d *store.Delegation) { d.Agent = "reviewer" }, false},
		{"no instructions", func(d *store.Delegation) { d.Instructions = "" }, false},
		{"instructions too long", func(d *store.Delegation) { d.Instructions = strings.Repeat("x", store.MaxDelegationInstructions+1) }, false},
		{"instructions not UTF-8", func(d *store.Delegation) { d.Instructions = "\xff" }, false},
		{"bad change set", func(d *store.Delegation) { d.Inputs.ChangeSetID = "cs" }, false},
		{"short commit", func(d *store.Delegation) { d.Inputs.Commit = "abc" }, false},
		{"no contract", func(d *store.Delegation) { d.Contract = nil }, false},
		{"contract not JSON", func(d *store.Delegation) { d.Contract = []byte(`{`) }, false},
		{"contract an array", func(d *store.Delegation) { d.Contract = []byte(`[]`) }, false},
		{"contract too large", func(d *store.Delegation) {
			d.Contract = []byte(`{"description":"` + strings.Repeat("x", store.MaxDelegationContract) + `"}`)
		}, false},
		{"unknown contract name", func(d *store.Delegation) { d.ContractName = "audit" }, false},
		{"a reason", func(d *store.Delegation) { d.Reason = "start_failed" }, false},
		{"an attempt", func(d *store.Delegation) { d.Attempts = 1 }, false},
		{"no attempts allowed", func(d *store.Delegation) { d.MaxAttempts = 0 }, false},
		{"too many attempts", func(d *store.Delegation) { d.MaxAttempts = store.MaxDelegationAttempts + 1 }, false},
		{"no time", func(d *store.Delegation) { d.CreatedAt = time.Time{} }, false},
	})
}

func TestDelegationInputs_encode(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(time.Now, nil)
	for _, in := range []store.DelegationInputs{{}, {ChangeSetID: jam.New[jam.ChangeSetID](m)}, {Commit: strings.Repeat("c", 40)}} {
		got, err := store.DecodeDelegationInputs(in.Encode())
		require.NoError(t, err)
		require.Equal(t, in, got)
	}
	require.Equal(t, `{}`, store.DelegationInputs{}.Encode())
	_, err := store.DecodeDelegationInputs(`[`)
	require.Error(t, err)
}

func TestDelegationSubmitParams_Canonical(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(time.Now, nil)
	ok := store.DelegationSubmitParams{WorkspaceID: jam.New[jam.WorkspaceID](m), ID: jam.New[jam.DelegationID](m), Child: jam.New[jam.SessionID](m),
		Result: []byte(` {"passed":true}`), At: deliveriesAt}

	t.Run("digest", func(t *testing.T) {
		t.Parallel()
		r, err := ok.Canonical()
		require.NoError(t, err)
		sum := sha256.Sum256(ok.Result)
		require.Equal(t, hex.EncodeToString(sum[:]), r.Digest, "the digest of exactly the bytes stored")
		require.Equal(t, ok.Result, r.Result)
		require.Equal(t, deliveriesAt.UTC().Truncate(time.Microsecond), r.At)
	})

	runValidatorCases(t, ok, func(p store.DelegationSubmitParams) error { _, err := p.Canonical(); return err },
		[]validatorCase[store.DelegationSubmitParams]{
			{"valid", func(*store.DelegationSubmitParams) {}, true},
			{"largest", func(p *store.DelegationSubmitParams) {
				p.Result = []byte(`{"s":"` + strings.Repeat("x", store.MaxDelegationResult-8) + `"}`)
			}, true},
			{"no child", func(p *store.DelegationSubmitParams) { p.Child = "" }, false},
			{"no result", func(p *store.DelegationSubmitParams) { p.Result = nil }, false},
			{"not an object", func(p *store.DelegationSubmitParams) { p.Result = []byte(`"approve"`) }, false},
			{"not JSON", func(p *store.DelegationSubmitParams) { p.Result = []byte(`{"a":`) }, false},
			{"too large", func(p *store.DelegationSubmitParams) {
				p.Result = []byte(`{"s":"` + strings.Repeat("x", store.MaxDelegationResult) + `"}`)
			}, false},
			{"no time", func(p *store.DelegationSubmitParams) { p.At = time.Time{} }, false},
		})
}

func TestDelegationParams_Validate(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(time.Now, nil)
	ws, id := jam.New[jam.WorkspaceID](m), jam.New[jam.DelegationID](m)
	end := store.DelegationEndParams{WorkspaceID: ws, ID: id, Reason: "cancelled", Error: "the parent asked", At: deliveriesAt}
	runValidatorCases(t, end, store.DelegationEndParams.Validate, []validatorCase[store.DelegationEndParams]{
		{"valid", func(*store.DelegationEndParams) {}, true},
		{"no reason", func(p *store.DelegationEndParams) { p.Reason = "" }, false},
		{"bad reason", func(p *store.DelegationEndParams) { p.Reason = "Start Failed" }, false},
		{"error too long", func(p *store.DelegationEndParams) { p.Error = strings.Repeat("x", store.MaxDelegationErrorLen+1) }, false},
		{"no time", func(p *store.DelegationEndParams) { p.At = time.Time{} }, false},
	})
	attempt := store.DelegationAttemptParams{WorkspaceID: ws, ID: id, Generation: 2, At: deliveriesAt}
	runValidatorCases(t, attempt, store.DelegationAttemptParams.Validate, []validatorCase[store.DelegationAttemptParams]{
		{"valid", func(*store.DelegationAttemptParams) {}, true},
		{"generation 0", func(p *store.DelegationAttemptParams) { p.Generation = 0 }, false},
		{"bad id", func(p *store.DelegationAttemptParams) { p.ID = "del" }, false},
	})
	child := store.DelegationSetChildParams{WorkspaceID: ws, ID: id, Child: jam.New[jam.SessionID](m), At: deliveriesAt}
	runValidatorCases(t, child, store.DelegationSetChildParams.Validate, []validatorCase[store.DelegationSetChildParams]{
		{"valid", func(*store.DelegationSetChildParams) {}, true},
		{"no child", func(p *store.DelegationSetChildParams) { p.Child = "" }, false},
		{"no time", func(p *store.DelegationSetChildParams) { p.At = time.Time{} }, false},
	})
	list := store.DelegationListParams{WorkspaceID: ws}
	for _, tt := range []struct {
		name string
		p    store.DelegationListParams
		want int
	}{
		{"default", list, store.DefaultDelegationLimit},
		{"limit", store.DelegationListParams{WorkspaceID: ws, Limit: 7}, 7},
		{"parent", store.DelegationListParams{WorkspaceID: ws, Parent: jam.New[jam.SessionID](m), Limit: store.MaxDelegationLimit}, store.MaxDelegationLimit},
		{"too many", store.DelegationListParams{WorkspaceID: ws, Limit: store.MaxDelegationLimit + 1}, 0},
		{"bad parent", store.DelegationListParams{WorkspaceID: ws, Parent: "sess"}, 0},
		{"child", store.DelegationListParams{WorkspaceID: ws, Child: jam.New[jam.SessionID](m)}, store.DefaultDelegationLimit},
		{"bad child", store.DelegationListParams{WorkspaceID: ws, Child: jam.SessionID(jam.New[jam.DelegationID](m))}, 0},
		{"change set", store.DelegationListParams{WorkspaceID: ws, ChangeSet: jam.New[jam.ChangeSetID](m)}, store.DefaultDelegationLimit},
		{"bad change set", store.DelegationListParams{WorkspaceID: ws, ChangeSet: "cs"}, 0},
		{"state", store.DelegationListParams{WorkspaceID: ws, State: store.DelegationSubmitted}, store.DefaultDelegationLimit},
		{"bad state", store.DelegationListParams{WorkspaceID: ws, State: "done"}, 0},
		{"all filters", store.DelegationListParams{WorkspaceID: ws, Parent: jam.New[jam.SessionID](m), Child: jam.New[jam.SessionID](m),
			ChangeSet: jam.New[jam.ChangeSetID](m), State: store.DelegationRunning, Limit: 3}, 3},
	} {
		got, err := tt.p.Bound()
		if tt.want == 0 {
			require.ErrorIs(t, err, jam.ErrInvalid, tt.name)
			continue
		}
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.want, got, tt.name)
	}
}

// TestDelegationListParams_Lead: a list leads with its most selective
// filter: the child, then the change set, the parent, the state.
func TestDelegationListParams_Lead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    store.DelegationListParams
		want store.DelegationListLead
	}{
		{store.DelegationListParams{}, store.LeadNone},
		{store.DelegationListParams{State: store.DelegationRunning}, store.LeadState},
		{store.DelegationListParams{Parent: "sess_p", State: store.DelegationRunning}, store.LeadParent},
		{store.DelegationListParams{Parent: "sess_p", ChangeSet: "cs_x"}, store.LeadChangeSet},
		{store.DelegationListParams{Parent: "sess_p", ChangeSet: "cs_x", Child: "sess_c", State: store.DelegationRunning}, store.LeadChild},
	} {
		require.Equal(t, tc.want, tc.p.Lead(), "%+v", tc.p)
	}
}
