package delegation_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/delegation"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/sqlite"
)

// fakeChildren records the runtime calls; StartFunc, when set, answers
// Start.
type fakeChildren struct {
	minter    *jam.Minter
	StartFunc func(d store.Delegation) (jam.SessionID, error)
	// BeginErr, when set, is Begin's answer.
	BeginErr error

	mu      sync.Mutex
	started []store.Delegation
	begun   []jam.DelegationID
	notices []notice
}

type notice struct {
	parent jam.SessionID
	text   string
}

func (f *fakeChildren) Start(_ context.Context, d store.Delegation) (jam.SessionID, error) {
	f.mu.Lock()
	f.started = append(f.started, d)
	f.mu.Unlock()
	if f.StartFunc != nil {
		return f.StartFunc(d)
	}
	return jam.New[jam.SessionID](f.minter), nil
}

func (f *fakeChildren) Begin(_ context.Context, d store.Delegation) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d.Child == "" || d.State != store.DelegationRunning {
		return fmt.Errorf("begin %s: the child is not recorded (%s)", d.ID, d.State)
	}
	f.begun = append(f.begun, d.ID)
	return f.BeginErr
}

func (f *fakeChildren) Notify(_ context.Context, parent jam.SessionID, text string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notices = append(f.notices, notice{parent, text})
	return nil
}

func (f *fakeChildren) Notices() []notice {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]notice(nil), f.notices...)
}

type testBundle struct {
	svc      *delegation.Service
	st       *sqlite.Store
	children *fakeChildren
	minter   *jam.Minter
	ws       jam.WorkspaceID
	other    jam.WorkspaceID
	parent   jam.SessionID
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	dir := t.TempDir()
	box, err := secret.LoadOrCreate(filepath.Join(dir, "daemon.key"))
	require.NoError(t, err)
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(dir, "jam.db"), CheckpointInterval: time.Hour, Sealer: box})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	b := &testBundle{st: st, minter: jam.NewMinter(nil, nil)}
	for i, ws := range []*jam.WorkspaceID{&b.ws, &b.other} {
		w, err := st.WorkspaceEnsure(t.Context(), store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](b.minter), Name: "ws" + string(rune('a'+i)),
			At: time.Now()})
		require.NoError(t, err)
		*ws = w.ID
	}
	b.children = &fakeChildren{minter: b.minter}
	b.svc, err = delegation.New(delegation.Config{Minter: b.minter}, st, b.children)
	require.NoError(t, err)
	b.parent = jam.New[jam.SessionID](b.minter)
	return b
}

func (b *testBundle) review(t *testing.T) store.Delegation {
	t.Helper()
	d, err := b.svc.Create(t.Context(), delegation.CreateRequest{Workspace: b.ws, Parent: b.parent, Role: "review", Agent: "local/reviewer",
		Instructions: "Review the parser change.", Inputs: store.DelegationInputs{ChangeSetID: jam.New[jam.ChangeSetID](b.minter)}})
	require.NoError(t, err)
	return d
}

const (
	approve        = `{"verdict":"approve","summary":"fine","findings":[]}`
	requestChanges = `{"verdict":"request_changes","findings":[{"path":"a.go","line":3,"severity":"major","message":"nil map"},` +
		`{"path":"b.go","line":9,"severity":"minor","message":"typo"}]}`
	badLine = `{"verdict":"approve","findings":[{"path":"a.go","line":0,"severity":"info","message":"m"}]}`
)

func TestService_Create(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	d := b.review(t)
	require.Equal(t, store.DelegationRunning, d.State)
	require.NotEmpty(t, d.Child, "the child is recorded")
	require.Equal(t, store.ContractReview, d.ContractName, "a review delegation takes the review contract")
	require.Equal(t, delegation.DefaultMaxAttempts, d.MaxAttempts)
	require.Len(t, b.children.started, 1)
	require.Equal(t, d.ID, b.children.started[0].ID)
	require.Equal(t, "Review the parser change.", b.children.started[0].Instructions, "Start gets the instructions")

	st, err := b.svc.Status(ctx, b.ws, d.ID)
	require.NoError(t, err)
	require.Equal(t, d, st.Delegation)
	require.Nil(t, st.Result)
	list, err := b.svc.List(ctx, b.ws, b.parent, 0)
	require.NoError(t, err)
	require.Len(t, list, 1)
	_, err = b.svc.Status(ctx, b.other, d.ID)
	require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's")

	custom, err := b.svc.Create(ctx, delegation.CreateRequest{Workspace: b.ws, Parent: b.parent, Role: "research", Agent: "local/r",
		Instructions: "Find the spec.", Contract: "custom", Schema: json.RawMessage(`{"type":"object","required":["url"]}`), MaxAttempts: 1})
	require.NoError(t, err)
	require.Equal(t, store.ContractCustom, custom.ContractName)
	require.Equal(t, 1, custom.MaxAttempts)

	for _, tt := range []struct {
		name string
		mod  func(*delegation.CreateRequest)
	}{
		{"unknown role", func(r *delegation.CreateRequest) { r.Role = "reviewer" }},
		{"agent not a peer key", func(r *delegation.CreateRequest) { r.Agent = "reviewer" }},
		{"no instructions", func(r *delegation.CreateRequest) { r.Instructions = "  \n" }},
		{"review of nothing", func(r *delegation.CreateRequest) { r.Inputs = store.DelegationInputs{} }},
		{"bad commit", func(r *delegation.CreateRequest) { r.Inputs.Commit = "HEAD" }},
		{"research names no contract", func(r *delegation.CreateRequest) { r.Role = "research" }},
		{"custom without schema", func(r *delegation.CreateRequest) { r.Contract = "custom" }},
		{"built-in with schema", func(r *delegation.CreateRequest) { r.Contract, r.Schema = "review", json.RawMessage(`{}`) }},
		{"remote ref", func(r *delegation.CreateRequest) {
			r.Contract, r.Schema = "custom", json.RawMessage(`{"$ref":"https://example.com/s.json"}`)
		}},
		{"too many attempts", func(r *delegation.CreateRequest) { r.MaxAttempts = store.MaxDelegationAttempts + 1 }},
		{"no parent", func(r *delegation.CreateRequest) { r.Parent = "" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := delegation.CreateRequest{Workspace: b.ws, Parent: b.parent, Role: "review", Agent: "local/reviewer", Instructions: "Review.",
				Inputs: store.DelegationInputs{Commit: strings.Repeat("a", 40)}}
			tt.mod(&req)
			_, err := b.svc.Create(t.Context(), req)
			require.ErrorIs(t, err, jam.ErrInvalid)
		})
	}
}

func TestService_Create_startFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.children.StartFunc = func(store.Delegation) (jam.SessionID, error) { return "", errors.New("no such agent") }
	_, err := b.svc.Create(t.Context(), delegation.CreateRequest{Workspace: b.ws, Parent: b.parent, Role: "test", Agent: "local/tester",
		Instructions: "Run the tests.", Inputs: store.DelegationInputs{Commit: strings.Repeat("a", 40)}})
	require.ErrorContains(t, err, "no such agent")
	list, err := b.svc.List(t.Context(), b.ws, b.parent, 0)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, store.DelegationFailed, list[0].State)
	require.Equal(t, delegation.ReasonStartFailed, list[0].Reason)
	require.Equal(t, "no such agent", list[0].Error)
}

// TestService_Create_beginsAfterTheChildIsRecorded: the child's first
// turn is queued only once the delegation names it (so its submit finds
// itself the child); a first turn that cannot be queued fails the
// delegation; Changed sees every write.
func TestService_Create_beginsAfterTheChildIsRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var mu sync.Mutex
	var seen []string
	svc, err := delegation.New(delegation.Config{Minter: b.minter, Changed: func(d store.Delegation) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, string(d.State))
	}}, b.st, b.children)
	require.NoError(t, err)
	d, err := svc.Create(t.Context(), delegation.CreateRequest{Workspace: b.ws, Parent: b.parent, Role: "review", Agent: "local/reviewer",
		Instructions: "Review it.", Inputs: store.DelegationInputs{Commit: strings.Repeat("b", 40)}})
	require.NoError(t, err)
	require.Equal(t, []jam.DelegationID{d.ID}, b.children.begun, "Begin saw the child recorded (the fake refuses otherwise)")
	_, err = svc.Submit(t.Context(), b.ws, d.Child, d.ID, json.RawMessage(badLine))
	require.ErrorIs(t, err, jam.ErrInvalid)
	_, err = svc.Submit(t.Context(), b.ws, d.Child, d.ID, json.RawMessage(approve))
	require.NoError(t, err)

	b.children.BeginErr = errors.New("the room refused the notice")
	_, err = svc.Create(t.Context(), delegation.CreateRequest{Workspace: b.ws, Parent: b.parent, Role: "review", Agent: "local/reviewer",
		Instructions: "Review it again.", Inputs: store.DelegationInputs{Commit: strings.Repeat("c", 40)}})
	require.ErrorContains(t, err, "the room refused the notice")
	list, err := svc.List(t.Context(), b.ws, b.parent, 1)
	require.NoError(t, err)
	require.Equal(t, store.DelegationFailed, list[0].State)
	require.Equal(t, delegation.ReasonStartFailed, list[0].Reason)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"pending", "running", "running", "submitted", "pending", "failed"}, seen)
}

func TestService_Submit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	d := b.review(t)

	_, err := b.svc.Submit(ctx, b.ws, b.parent, d.ID, json.RawMessage(approve))
	require.ErrorIs(t, err, jam.ErrNotFound, "the parent is not the child")
	_, err = b.svc.Submit(ctx, b.ws, jam.New[jam.SessionID](b.minter), d.ID, json.RawMessage(approve))
	require.ErrorIs(t, err, jam.ErrNotFound, "nor is any other session")
	_, err = b.svc.Submit(ctx, b.other, d.Child, d.ID, json.RawMessage(approve))
	require.ErrorIs(t, err, jam.ErrNotFound, "nor another workspace")

	_, err = b.svc.Submit(ctx, b.ws, d.Child, d.ID, json.RawMessage(badLine))
	require.ErrorIs(t, err, jam.ErrInvalid)
	var invalid *delegation.InvalidResultError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, []delegation.Problem{{Location: "/findings/0/line", Message: "must be >= 1, got 0"}}, invalid.Problems)
	require.Equal(t, 2, invalid.Remaining)
	require.Contains(t, err.Error(), "/findings/0/line: must be >= 1, got 0")
	require.Contains(t, err.Error(), "2 attempts remain")
	st, err := b.svc.Status(ctx, b.ws, d.ID)
	require.NoError(t, err)
	require.Equal(t, 1, st.Delegation.Attempts)
	require.Equal(t, store.DelegationRunning, st.Delegation.State)
	require.Empty(t, b.children.Notices(), "an invalid result is the child's to fix")
	approved, err := b.svc.Verdict(ctx, b.ws, d.ID)
	require.NoError(t, err)
	require.False(t, approved, "no verdict before a result")

	r, err := b.svc.Submit(ctx, b.ws, d.Child, d.ID, json.RawMessage(requestChanges))
	require.NoError(t, err)
	require.JSONEq(t, requestChanges, string(r.Result))
	require.Len(t, r.Digest, 64)
	require.Equal(t, []notice{{b.parent, `Delegation ` + string(d.ID) + ` (review by local/reviewer) submitted: request_changes, 2 findings. ` +
		`Read it with delegation_status("` + string(d.ID) + `").`}}, b.children.Notices())

	_, err = b.svc.Submit(ctx, b.ws, d.Child, d.ID, json.RawMessage(approve))
	require.ErrorIs(t, err, jam.ErrAlreadyExists, "a second result is refused")
	st, err = b.svc.Status(ctx, b.ws, d.ID)
	require.NoError(t, err)
	require.Equal(t, store.DelegationSubmitted, st.Delegation.State)
	require.NotNil(t, st.Result)
	require.Equal(t, r, *st.Result, "the first result stands")
	approved, err = b.svc.Verdict(ctx, b.ws, d.ID)
	require.NoError(t, err)
	require.False(t, approved, "request_changes does not approve")
	_, err = b.svc.Cancel(ctx, b.ws, "", d.ID)
	require.ErrorIs(t, err, jam.ErrConflict, "a submitted delegation is final")
}

func TestService_Submit_attemptsExhausted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	d := b.review(t)
	for i := 1; i <= d.MaxAttempts; i++ {
		_, err := b.svc.Submit(ctx, b.ws, d.Child, d.ID, json.RawMessage(`{"verdict":"maybe","findings":[]}`))
		var invalid *delegation.InvalidResultError
		require.ErrorAs(t, err, &invalid, "attempt %d", i)
		require.Equal(t, d.MaxAttempts-i, invalid.Remaining)
	}
	_, err := b.svc.Submit(ctx, b.ws, d.Child, d.ID, json.RawMessage(`{"verdict":"maybe","findings":[]}`))
	require.ErrorIs(t, err, jam.ErrConflict, "a failed delegation takes nothing more")
	require.Contains(t, (&delegation.InvalidResultError{Delegation: d.ID}).Error(), "No attempts remain")
	st, err := b.svc.Status(ctx, b.ws, d.ID)
	require.NoError(t, err)
	require.Equal(t, store.DelegationFailed, st.Delegation.State)
	require.Equal(t, store.ReasonAttemptsExhausted, st.Delegation.Reason)
	notices := b.children.Notices()
	require.Len(t, notices, 1)
	require.Equal(t, b.parent, notices[0].parent)
	require.Contains(t, notices[0].text, string(d.ID)+" (review by local/reviewer) failed: 3 results did not satisfy its review contract")
	_, err = b.svc.Submit(ctx, b.ws, d.Child, d.ID, json.RawMessage(approve))
	require.ErrorIs(t, err, jam.ErrConflict, "nor a valid result after it failed")
	approved, err := b.svc.Verdict(ctx, b.ws, d.ID)
	require.NoError(t, err)
	require.False(t, approved)
}

func TestService_Verdict(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	d := b.review(t)
	_, err := b.svc.Submit(ctx, b.ws, d.Child, d.ID, json.RawMessage(approve))
	require.NoError(t, err)
	approved, err := b.svc.Verdict(ctx, b.ws, d.ID)
	require.NoError(t, err)
	require.True(t, approved, "a submitted review that approves")
	_, err = b.svc.Verdict(ctx, b.other, d.ID)
	require.ErrorIs(t, err, jam.ErrNotFound)

	// A custom contract with a verdict field is no review.
	custom, err := b.svc.Create(ctx, delegation.CreateRequest{Workspace: b.ws, Parent: b.parent, Role: "review", Agent: "local/r",
		Instructions: "Review.", Inputs: store.DelegationInputs{Commit: strings.Repeat("b", 40)}, Contract: "custom",
		Schema: json.RawMessage(`{"type":"object"}`)})
	require.NoError(t, err)
	_, err = b.svc.Submit(ctx, b.ws, custom.Child, custom.ID, json.RawMessage(`{"verdict":"approve"}`))
	require.NoError(t, err)
	approved, err = b.svc.Verdict(ctx, b.ws, custom.ID)
	require.NoError(t, err)
	require.False(t, approved, "only the review contract's verdict counts")

	tests, err := b.svc.Create(ctx, delegation.CreateRequest{Workspace: b.ws, Parent: b.parent, Role: "test", Agent: "local/t",
		Instructions: "Test.", Inputs: store.DelegationInputs{Commit: strings.Repeat("c", 40)}})
	require.NoError(t, err)
	_, err = b.svc.Submit(ctx, b.ws, tests.Child, tests.ID, json.RawMessage(`{"passed":false,"commands":["make"],"failures":[{"name":"T","message":"m"}]}`))
	require.NoError(t, err)
	notices := b.children.Notices()
	require.Contains(t, notices[len(notices)-1].text, "submitted: failed, 1 failure.")
}

func TestService_Cancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	d := b.review(t)
	_, err := b.svc.Cancel(ctx, b.ws, d.Child, d.ID)
	require.ErrorIs(t, err, jam.ErrNotFound, "only the parent (or the person) cancels")
	got, err := b.svc.Cancel(ctx, b.ws, b.parent, d.ID)
	require.NoError(t, err)
	require.Equal(t, store.DelegationCancelled, got.State)
	_, err = b.svc.Submit(ctx, b.ws, d.Child, d.ID, json.RawMessage(approve))
	require.ErrorIs(t, err, jam.ErrConflict, "a cancelled delegation takes no result")
	_, err = b.svc.Cancel(ctx, b.ws, "", d.ID)
	require.ErrorIs(t, err, jam.ErrConflict)
}

// TestService_Submit_concurrent: of many valid submits of one child at
// once, exactly one is recorded and the parent is told once.
func TestService_Submit_concurrent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.review(t)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			result := approve
			if i%2 == 1 {
				result = requestChanges
			}
			_, errs[i] = b.svc.Submit(t.Context(), b.ws, d.Child, d.ID, json.RawMessage(result))
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		require.ErrorIs(t, err, jam.ErrAlreadyExists)
	}
	require.Equal(t, 1, won)
	require.Len(t, b.children.Notices(), 1)
}

func TestNew(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := delegation.New(delegation.Config{}, b.st, b.children)
	require.ErrorIs(t, err, jam.ErrInvalid, "no minter")
	_, err = delegation.New(delegation.Config{Minter: b.minter, MaxAttempts: 11}, b.st, b.children)
	require.ErrorIs(t, err, jam.ErrInvalid)
	_, err = delegation.New(delegation.Config{Minter: b.minter}, b.st, nil)
	require.ErrorIs(t, err, jam.ErrInvalid)
}

// TestService_ChildClosed: closing a running delegation's child fails it
// (child_closed) and tells the parent; a session that is no running
// delegation's child changes nothing, nor does a delegation that ended.
func TestService_ChildClosed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	d := b.review(t)
	require.NoError(t, b.svc.ChildClosed(ctx, b.ws, jam.New[jam.SessionID](b.minter)))
	require.NoError(t, b.svc.ChildClosed(ctx, b.other, d.Child), "another workspace's session")
	st, err := b.svc.Status(ctx, b.ws, d.ID)
	require.NoError(t, err)
	require.Equal(t, store.DelegationRunning, st.Delegation.State)

	require.NoError(t, b.svc.ChildClosed(ctx, b.ws, d.Child))
	st, err = b.svc.Status(ctx, b.ws, d.ID)
	require.NoError(t, err)
	require.Equal(t, store.DelegationFailed, st.Delegation.State)
	require.Equal(t, delegation.ReasonChildClosed, st.Delegation.Reason)
	notices := b.children.Notices()
	require.Len(t, notices, 1)
	require.Equal(t, b.parent, notices[0].parent)
	require.Contains(t, notices[0].text, "child session was closed")
	require.NoError(t, b.svc.ChildClosed(ctx, b.ws, d.Child), "closing again changes nothing")
	require.Len(t, b.children.Notices(), 1)

	done := b.review(t)
	_, err = b.svc.Submit(ctx, b.ws, done.Child, done.ID, json.RawMessage(approve))
	require.NoError(t, err)
	require.NoError(t, b.svc.ChildClosed(ctx, b.ws, done.Child))
	st, err = b.svc.Status(ctx, b.ws, done.ID)
	require.NoError(t, err)
	require.Equal(t, store.DelegationSubmitted, st.Delegation.State, "a submitted delegation stays submitted")
}
