package store_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

func TestJob_Canonical(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(time.Now, nil)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6789, time.FixedZone("x", 3600))
	ok := store.Job{ID: jam.New[jam.JobID](m), WorkspaceID: jam.New[jam.WorkspaceID](m), Kind: "github.comment", Payload: []byte(`{}`),
		MaxAttempts: 1, CreatedAt: at}

	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		j := ok
		j.State, j.Attempt, j.Generation, j.Owner, j.Result, j.Error = store.JobDead, 7, 9, "x", []byte(`1`), "e"
		got, err := j.Canonical()
		require.NoError(t, err)
		require.Equal(t, store.JobQueued, got.State)
		require.Zero(t, got.Attempt)
		require.Zero(t, got.Generation)
		require.Empty(t, got.Owner)
		require.Nil(t, got.Result)
		require.Empty(t, got.Error)
		require.Equal(t, at.UTC().Truncate(time.Microsecond), got.CreatedAt)
		require.Equal(t, got.CreatedAt, got.RunAfter, "due at once")
		require.Equal(t, got.CreatedAt, got.UpdatedAt)
		require.Equal(t, time.UTC, got.RunAfter.Location())
	})

	tests := []struct {
		name string
		mod  func(*store.Job)
		ok   bool
	}{
		{"as given", func(*store.Job) {}, true},
		{"kind of one letter", func(j *store.Job) { j.Kind = "a" }, true},
		{"kind at the bound", func(j *store.Job) { j.Kind = "a" + strings.Repeat("b", store.MaxJobKindLen-1) }, true},
		{"kind over the bound", func(j *store.Job) { j.Kind = "a" + strings.Repeat("b", store.MaxJobKindLen) }, false},
		{"kind with digits, dots and underscores", func(j *store.Job) { j.Kind = "a0._9" }, true},
		{"empty kind", func(j *store.Job) { j.Kind = "" }, false},
		{"kind from a dot", func(j *store.Job) { j.Kind = ".a" }, false},
		{"kind with a space", func(j *store.Job) { j.Kind = "a b" }, false},
		{"kind not ASCII", func(j *store.Job) { j.Kind = "aé" }, false},
		{"no payload", func(j *store.Job) { j.Payload = nil }, true},
		{"payload at the bound", func(j *store.Job) { j.Payload = []byte(`"` + strings.Repeat("x", store.MaxJobPayload-2) + `"`) }, true},
		{"payload over the bound", func(j *store.Job) { j.Payload = []byte(`"` + strings.Repeat("x", store.MaxJobPayload-1) + `"`) }, false},
		{"payload not JSON", func(j *store.Job) { j.Payload = []byte(`{`) }, false},
		{"payload of two values", func(j *store.Job) { j.Payload = []byte(`1 2`) }, false},
		{"empty payload", func(j *store.Job) { j.Payload = []byte{} }, false},
		{"max attempts 0", func(j *store.Job) { j.MaxAttempts = 0 }, false},
		{"max attempts at the bound", func(j *store.Job) { j.MaxAttempts = store.MaxJobAttempts }, true},
		{"max attempts over the bound", func(j *store.Job) { j.MaxAttempts = store.MaxJobAttempts + 1 }, false},
		{"negative max attempts", func(j *store.Job) { j.MaxAttempts = -1 }, false},
		{"key at the bound", func(j *store.Job) { j.IdempotencyKey = strings.Repeat("k", store.MaxJobKeyLen) }, true},
		{"key over the bound", func(j *store.Job) { j.IdempotencyKey = strings.Repeat("k", store.MaxJobKeyLen+1) }, false},
		{"key not UTF-8", func(j *store.Job) { j.IdempotencyKey = "\xff" }, false},
		{"zero creation", func(j *store.Job) { j.CreatedAt = time.Time{} }, false},
		{"no id", func(j *store.Job) { j.ID = "" }, false},
		{"no workspace", func(j *store.Job) { j.WorkspaceID = "" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := ok
			tt.mod(&j)
			_, err := j.Canonical()
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, jam.ErrInvalid)
		})
	}
}

func TestJobParams_Validate(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(time.Now, nil)
	ws, id := jam.New[jam.WorkspaceID](m), jam.New[jam.JobID](m)
	at := time.Unix(1700000000, 0)
	claim := func(mod func(*store.JobClaimParams)) func() error {
		return func() error {
			p := store.JobClaimParams{WorkspaceID: ws, Kinds: []string{"a", "b.c"}, Owner: "host:1", Lease: time.Minute, At: at}
			mod(&p)
			return p.Validate()
		}
	}
	complete := func(mod func(*store.JobCompleteParams)) func() error {
		return func() error {
			p := store.JobCompleteParams{WorkspaceID: ws, ID: id, Generation: 1, Result: []byte(`[]`), At: at}
			mod(&p)
			return p.Validate()
		}
	}
	fail := func(mod func(*store.JobFailParams)) func() error {
		return func() error {
			p := store.JobFailParams{WorkspaceID: ws, ID: id, Generation: 1, Error: "boom", At: at}
			mod(&p)
			_, err := p.Canonical()
			return err
		}
	}
	list := func(mod func(*store.JobListParams)) func() error {
		return func() error {
			p := store.JobListParams{WorkspaceID: ws}
			mod(&p)
			_, err := p.Bound()
			return err
		}
	}
	tests := []struct {
		name string
		call func() error
		ok   bool
	}{
		{"claim", claim(func(*store.JobClaimParams) {}), true},
		{"claim kinds at the bound", claim(func(p *store.JobClaimParams) { p.Kinds = make([]string, store.MaxJobClaimKinds); fill(p.Kinds) }), true},
		{"claim kinds over the bound", claim(func(p *store.JobClaimParams) { p.Kinds = make([]string, store.MaxJobClaimKinds+1); fill(p.Kinds) }), false},
		{"claim no kinds", claim(func(p *store.JobClaimParams) { p.Kinds = nil }), false},
		{"claim bad kind", claim(func(p *store.JobClaimParams) { p.Kinds = []string{"a", ""} }), false},
		{"claim no owner", claim(func(p *store.JobClaimParams) { p.Owner = "" }), false},
		{"claim owner at the bound", claim(func(p *store.JobClaimParams) { p.Owner = strings.Repeat("o", store.MaxJobOwnerLen) }), true},
		{"claim owner over the bound", claim(func(p *store.JobClaimParams) { p.Owner = strings.Repeat("o", store.MaxJobOwnerLen+1) }), false},
		{"claim owner with NUL", claim(func(p *store.JobClaimParams) { p.Owner = "a\x00" }), false},
		{"claim lease at the bound", claim(func(p *store.JobClaimParams) { p.Lease = store.MaxJobLease }), true},
		{"claim lease over the bound", claim(func(p *store.JobClaimParams) { p.Lease = store.MaxJobLease + 1 }), false},
		{"claim lease below a microsecond", claim(func(p *store.JobClaimParams) { p.Lease = time.Nanosecond }), false},
		{"claim negative lease", claim(func(p *store.JobClaimParams) { p.Lease = -time.Second }), false},
		{"claim zero time", claim(func(p *store.JobClaimParams) { p.At = time.Time{} }), false},
		{"complete", complete(func(*store.JobCompleteParams) {}), true},
		{"complete no result", complete(func(p *store.JobCompleteParams) { p.Result = nil }), true},
		{"complete result over the bound", complete(func(p *store.JobCompleteParams) {
			p.Result = []byte(`"` + strings.Repeat("r", store.MaxJobResult-1) + `"`)
		}), false},
		{"complete result not JSON", complete(func(p *store.JobCompleteParams) { p.Result = []byte(`nope`) }), false},
		{"complete generation 0", complete(func(p *store.JobCompleteParams) { p.Generation = 0 }), false},
		{"complete bad id", complete(func(p *store.JobCompleteParams) { p.ID = "job_" }), false},
		{"fail", fail(func(*store.JobFailParams) {}), true},
		{"fail error at the bound", fail(func(p *store.JobFailParams) { p.Error = strings.Repeat("e", store.MaxJobError) }), true},
		{"fail error over the bound", fail(func(p *store.JobFailParams) { p.Error = strings.Repeat("e", store.MaxJobError+1) }), false},
		{"fail error with NUL", fail(func(p *store.JobFailParams) { p.Error = "\x00" }), false},
		{"fail negative generation", fail(func(p *store.JobFailParams) { p.Generation = -1 }), false},
		{"fail zero time", fail(func(p *store.JobFailParams) { p.At = time.Time{} }), false},
		{"heartbeat", func() error { return store.ValidateJobHeartbeat(ws, id, 1, at) }, true},
		{"heartbeat zero time", func() error { return store.ValidateJobHeartbeat(ws, id, 1, time.Time{}) }, false},
		{"heartbeat generation 0", func() error { return store.ValidateJobHeartbeat(ws, id, 0, at) }, false},
		{"move", func() error { return store.ValidateJobMove(ws, id, at) }, true},
		{"move bad workspace", func() error { return store.ValidateJobMove("ws_x", id, at) }, false},
		{"list", list(func(*store.JobListParams) {}), true},
		{"list state and kind", list(func(p *store.JobListParams) { p.State, p.Kind = store.JobDead, "a" }), true},
		{"list unknown state", list(func(p *store.JobListParams) { p.State = "paused" }), false},
		{"list bad kind", list(func(p *store.JobListParams) { p.Kind = "A" }), false},
		{"list limit at the bound", list(func(p *store.JobListParams) { p.Limit = store.MaxJobLimit }), true},
		{"list limit over the bound", list(func(p *store.JobListParams) { p.Limit = store.MaxJobLimit + 1 }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.call()
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, jam.ErrInvalid)
		})
	}

	t.Run("fail defaults the retry time", func(t *testing.T) {
		t.Parallel()
		p, err := store.JobFailParams{WorkspaceID: ws, ID: id, Generation: 1, At: at}.Canonical()
		require.NoError(t, err)
		require.Equal(t, at, p.RetryAt)
	})
	t.Run("list default limit", func(t *testing.T) {
		t.Parallel()
		n, err := store.JobListParams{WorkspaceID: ws}.Bound()
		require.NoError(t, err)
		require.Equal(t, store.DefaultJobLimit, n)
	})
}

// fill names kinds k0, k1, ...
func fill(kinds []string) {
	for i := range kinds {
		kinds[i] = "k" + strings.Repeat("x", i%5) + string(rune('a'+i%26))
	}
}

var jobKindRE = regexp.MustCompile(`^[a-z][a-z0-9_.]{0,63}$`)

// FuzzValidateJobKind: the kind check accepts exactly the documented
// pattern, and refuses with jam.ErrInvalid.
func FuzzValidateJobKind(f *testing.F) {
	for _, s := range []string{"", "a", "github.comment", "A", "1a", "a-b", "a\x00", "é", strings.Repeat("a", 64), strings.Repeat("a", 65)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, kind string) {
		err := store.ValidateJobKind(kind)
		if jobKindRE.MatchString(kind) {
			if err != nil {
				t.Fatalf("%q refused: %v", kind, err)
			}
			return
		}
		if !errors.Is(err, jam.ErrInvalid) {
			t.Fatalf("%q: got %v, want ErrInvalid", kind, err)
		}
	})
}
