package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// operationAt is a deliver operation of the bundle's workspace created at
// epoch plus d.
func operationAt(b *msgBundle, kind, subject string, d time.Duration) store.Operation {
	return store.Operation{ID: jam.New[jam.OperationID](b.minter), WorkspaceID: b.ws, Kind: kind, Subject: subject, CreatedAt: epoch.Add(d)}
}

func createOperation(t *testing.T, b *msgBundle, o store.Operation) store.Operation {
	t.Helper()
	got, err := b.st.OperationCreate(t.Context(), o)
	require.NoError(t, err)
	return got
}

func evidenceOf(o store.Operation, step string, ev store.EvidenceEvent, detail string, d time.Duration) store.Evidence {
	e := store.Evidence{OperationID: o.ID, WorkspaceID: o.WorkspaceID, Step: step, Event: ev, At: epoch.Add(d)}
	if detail != "" {
		e.Detail = []byte(detail)
	}
	return e
}

func ptr[T any](v T) *T { return &v }

// operationCases checks [store.Operations] on one handle, then appends
// evidence and adds jobs through two handles at once.
func operationCases(t *testing.T, db Opener[store.Store]) {
	open := single(db)
	t.Run("Operation_createGetList", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		dlv := string(jam.New[jam.DeliveryID](b.minter))
		o := operationAt(b, "deliver", dlv, 0)
		o.Progress, o.Result, o.Jobs = "queued", []byte(`{"branch":"jam/x"}`), []jam.JobID{jam.New[jam.JobID](b.minter)}
		got, err := b.st.OperationCreate(ctx, o)
		require.NoError(t, err)
		want := o
		want.State, want.CreatedAt = store.OperationPending, epoch.UTC().Truncate(time.Microsecond)
		want.UpdatedAt = want.CreatedAt
		require.Equal(t, want, got, "stored pending, times in UTC microseconds")
		again, err := b.st.OperationGet(ctx, b.ws, o.ID)
		require.NoError(t, err)
		require.Equal(t, want, again)

		merge := createOperation(t, b, operationAt(b, "merge", dlv, time.Second))
		require.Nil(t, merge.Jobs)
		require.Nil(t, merge.Result)
		bare, err := b.st.OperationGet(ctx, b.ws, merge.ID)
		require.NoError(t, err)
		require.Nil(t, bare.Jobs, "no jobs reads back as none")
		require.Nil(t, bare.Result, "no result reads back as none")
		other := createOperation(t, b, operationAt(b, "deliver", "", 2*time.Second))

		all, err := b.st.OperationList(ctx, store.OperationListParams{WorkspaceID: b.ws})
		require.NoError(t, err)
		require.Equal(t, []jam.OperationID{other.ID, merge.ID, o.ID}, operationIDs(all), "newest first")
		byKind, err := b.st.OperationList(ctx, store.OperationListParams{WorkspaceID: b.ws, Kind: "deliver"})
		require.NoError(t, err)
		require.Equal(t, []jam.OperationID{other.ID, o.ID}, operationIDs(byKind))
		bySubject, err := b.st.OperationList(ctx, store.OperationListParams{WorkspaceID: b.ws, Subject: dlv})
		require.NoError(t, err)
		require.Equal(t, []jam.OperationID{merge.ID, o.ID}, operationIDs(bySubject))
		both, err := b.st.OperationList(ctx, store.OperationListParams{WorkspaceID: b.ws, Kind: "deliver", Subject: dlv})
		require.NoError(t, err)
		require.Equal(t, []store.Operation{want}, both)
		one, err := b.st.OperationList(ctx, store.OperationListParams{WorkspaceID: b.ws, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, []jam.OperationID{other.ID}, operationIDs(one))
		foreign, err := b.st.OperationList(ctx, store.OperationListParams{WorkspaceID: b.other})
		require.NoError(t, err)
		require.Empty(t, foreign)
		_, err = b.st.OperationGet(ctx, b.other, o.ID)
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's operation")
		_, err = b.st.OperationGet(ctx, b.ws, jam.New[jam.OperationID](b.minter))
		require.ErrorIs(t, err, jam.ErrNotFound)

		dup := operationAt(b, "merge", "", 0)
		dup.ID = o.ID
		_, err = b.st.OperationCreate(ctx, dup)
		require.ErrorIs(t, err, jam.ErrAlreadyExists, "an id is taken once")
		stray := operationAt(b, "deliver", "", 0)
		stray.WorkspaceID = jam.New[jam.WorkspaceID](b.minter)
		_, err = b.st.OperationCreate(ctx, stray)
		require.ErrorIs(t, err, jam.ErrNotFound, "a workspace that does not exist")
		failed := operationAt(b, "deliver", "", 3*time.Second)
		failed.State, failed.ErrorCode, failed.Error = store.OperationFailed, "remote_unreachable", "dial: refused ü"
		require.Equal(t, failed.Error, createOperation(t, b, failed).Error)
		got, err = b.st.OperationGet(ctx, b.ws, failed.ID)
		require.NoError(t, err)
		require.Equal(t, "remote_unreachable", got.ErrorCode)
		require.Equal(t, "dial: refused ü", got.Error)
	})

	t.Run("Operation_updateStates", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		o := createOperation(t, b, operationAt(b, "deliver", "", 0))
		upd := func(p store.OperationUpdateParams) (store.Operation, error) {
			p.WorkspaceID, p.ID = b.ws, o.ID
			if p.At.IsZero() {
				p.At = epoch.Add(time.Minute)
			}
			return b.st.OperationUpdate(ctx, p)
		}

		_, err := upd(store.OperationUpdateParams{From: []store.OperationState{store.OperationRunning}, State: store.OperationSucceeded})
		require.ErrorIs(t, err, jam.ErrConflict, "a pending operation is not in From")
		require.ErrorContains(t, err, "pending")
		r, err := upd(store.OperationUpdateParams{From: []store.OperationState{store.OperationPending}, State: store.OperationRunning,
			Progress: ptr("building the commit"), At: epoch.Add(time.Second)})
		require.NoError(t, err)
		require.Equal(t, store.OperationRunning, r.State)
		require.Equal(t, "building the commit", r.Progress)
		requireTime(t, epoch.Add(time.Second), r.UpdatedAt)
		requireTime(t, epoch, r.CreatedAt)

		// State "" keeps the state; a nil Progress keeps the line.
		r, err = upd(store.OperationUpdateParams{Result: []byte(`{"commit":"abc"}`)})
		require.NoError(t, err)
		require.Equal(t, store.OperationRunning, r.State)
		require.Equal(t, "building the commit", r.Progress)
		require.Equal(t, []byte(`{"commit":"abc"}`), r.Result)
		r, err = upd(store.OperationUpdateParams{Progress: ptr("")})
		require.NoError(t, err)
		require.Empty(t, r.Progress, "an empty progress replaces the line")
		require.Equal(t, []byte(`{"commit":"abc"}`), r.Result, "a nil result keeps it")

		// Failed: the failure is written; cleared when another state is
		// set, kept while State is "".
		f, err := upd(store.OperationUpdateParams{State: store.OperationFailed, ErrorCode: "credential_invalid", Error: "401 Bad credentials"})
		require.NoError(t, err)
		require.Equal(t, store.OperationFailed, f.State)
		require.Equal(t, "credential_invalid", f.ErrorCode)
		require.Equal(t, "401 Bad credentials", f.Error)
		_, err = upd(store.OperationUpdateParams{State: store.OperationRunning})
		require.ErrorIs(t, err, jam.ErrConflict, "no From: a terminal state is not moved")
		require.ErrorContains(t, err, "failed")
		_, err = upd(store.OperationUpdateParams{Progress: ptr("x")})
		require.ErrorIs(t, err, jam.ErrConflict, "no From: a terminal operation is not written at all")
		kept, err := upd(store.OperationUpdateParams{From: []store.OperationState{store.OperationFailed}, Progress: ptr("retrying")})
		require.NoError(t, err)
		require.Equal(t, "credential_invalid", kept.ErrorCode, "no State: the failure is kept")
		require.Equal(t, "401 Bad credentials", kept.Error)
		retry, err := upd(store.OperationUpdateParams{From: []store.OperationState{store.OperationFailed}, State: store.OperationRunning,
			ErrorCode: "ignored", Error: "ignored"})
		require.NoError(t, err)
		require.Equal(t, store.OperationRunning, retry.State, "a From naming the terminal state moves it")
		require.Empty(t, retry.ErrorCode, "another state clears the failure")
		require.Empty(t, retry.Error)
		done, err := upd(store.OperationUpdateParams{State: store.OperationSucceeded})
		require.NoError(t, err)
		require.Equal(t, store.OperationSucceeded, done.State)
		_, err = upd(store.OperationUpdateParams{State: store.OperationCancelled})
		require.ErrorIs(t, err, jam.ErrConflict)
		require.ErrorContains(t, err, "succeeded")
		final, err := b.st.OperationGet(ctx, b.ws, o.ID)
		require.NoError(t, err)
		require.Equal(t, done, final, "the refused updates changed nothing")

		_, err = b.st.OperationUpdate(ctx, store.OperationUpdateParams{WorkspaceID: b.ws, ID: jam.New[jam.OperationID](b.minter), At: epoch})
		require.ErrorIs(t, err, jam.ErrNotFound, "an unknown operation")
		_, err = b.st.OperationUpdate(ctx, store.OperationUpdateParams{WorkspaceID: b.other, ID: o.ID, At: epoch})
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's operation")
	})

	t.Run("Operation_addJob", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		o := createOperation(t, b, operationAt(b, "deliver", "", 0))
		add := func(j jam.JobID) (store.Operation, error) {
			return b.st.OperationUpdate(ctx, store.OperationUpdateParams{WorkspaceID: b.ws, ID: o.ID, AddJob: j, At: epoch})
		}
		first, second := jam.New[jam.JobID](b.minter), jam.New[jam.JobID](b.minter)
		r, err := add(first)
		require.NoError(t, err)
		require.Equal(t, []jam.JobID{first}, r.Jobs)
		r, err = add(second)
		require.NoError(t, err)
		require.Equal(t, []jam.JobID{first, second}, r.Jobs, "in the order they were added")
		r, err = add(first)
		require.NoError(t, err)
		require.Equal(t, []jam.JobID{first, second}, r.Jobs, "a job there already is not added again")
		for len(r.Jobs) < store.MaxOperationJobs {
			r, err = add(jam.New[jam.JobID](b.minter))
			require.NoError(t, err)
		}
		require.Len(t, r.Jobs, store.MaxOperationJobs)
		_, err = add(jam.New[jam.JobID](b.minter))
		require.ErrorIs(t, err, jam.ErrConflict, "a job over the bound")
		require.ErrorContains(t, err, "jobs")
		r, err = add(second)
		require.NoError(t, err, "a job there already is no job over the bound")
		got, err := b.st.OperationGet(ctx, b.ws, o.ID)
		require.NoError(t, err)
		require.Equal(t, r, got)
		require.Len(t, got.Jobs, store.MaxOperationJobs)

		// AddJob with a move: both or neither.
		third := jam.New[jam.JobID](b.minter)
		o2 := createOperation(t, b, operationAt(b, "deliver", "", time.Second))
		_, err = b.st.OperationUpdate(ctx, store.OperationUpdateParams{WorkspaceID: b.ws, ID: o2.ID, From: []store.OperationState{store.OperationRunning},
			State: store.OperationSucceeded, AddJob: third, At: epoch})
		require.ErrorIs(t, err, jam.ErrConflict)
		got, err = b.st.OperationGet(ctx, b.ws, o2.ID)
		require.NoError(t, err)
		require.Nil(t, got.Jobs, "a refused move adds no job")
		got, err = b.st.OperationUpdate(ctx, store.OperationUpdateParams{WorkspaceID: b.ws, ID: o2.ID, State: store.OperationRunning, AddJob: third, At: epoch})
		require.NoError(t, err)
		require.Equal(t, []jam.JobID{third}, got.Jobs)
	})

	t.Run("Evidence_appendList", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		o := createOperation(t, b, operationAt(b, "deliver", "", 0))
		other := createOperation(t, b, operationAt(b, "deliver", "", time.Second))
		entries := []store.Evidence{
			evidenceOf(o, "build", store.EvidenceStart, "", time.Second),
			evidenceOf(o, "build", store.EvidenceEnd, `{"commit":"`+strings.Repeat("a", 40)+`","files":3}`, 2*time.Second),
			evidenceOf(o, "push", store.EvidenceError, `{"code":"remote_rejected","request_id":"AB:12","nested":{"a":[1,"ü"]}}`, 3*time.Second),
			evidenceOf(o, "pull_request", store.EvidenceNote, `{}`, 4*time.Second),
		}
		var want []store.Evidence
		for i, e := range entries {
			e.Seq = 99 // the store assigns it
			got, err := b.st.EvidenceAppend(ctx, e)
			require.NoError(t, err)
			require.Equal(t, i+1, got.Seq, "seq counts 1, 2, ...")
			e.Seq, e.At = i+1, e.At.UTC().Truncate(time.Microsecond)
			require.Equal(t, e, got)
			want = append(want, e)
		}
		got, err := b.st.EvidenceAppend(ctx, evidenceOf(other, "build", store.EvidenceStart, "", time.Second))
		require.NoError(t, err)
		require.Equal(t, 1, got.Seq, "seq counts per operation")

		list, err := b.st.EvidenceList(ctx, b.ws, o.ID)
		require.NoError(t, err)
		require.Equal(t, want, list, "by seq, the detail as it was given")
		require.Nil(t, list[0].Detail, "no detail reads back as none")
		foreign, err := b.st.EvidenceList(ctx, b.other, o.ID)
		require.NoError(t, err)
		require.Empty(t, foreign, "another workspace sees none of it")
		none, err := b.st.EvidenceList(ctx, b.ws, jam.New[jam.OperationID](b.minter))
		require.NoError(t, err)
		require.Empty(t, none)

		_, err = b.st.EvidenceAppend(ctx, evidenceOf(store.Operation{ID: jam.New[jam.OperationID](b.minter), WorkspaceID: b.ws}, "build",
			store.EvidenceStart, "", 0))
		require.ErrorIs(t, err, jam.ErrNotFound, "an unknown operation")
		stray := evidenceOf(o, "build", store.EvidenceStart, "", 0)
		stray.WorkspaceID = b.other
		_, err = b.st.EvidenceAppend(ctx, stray)
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's operation")
		list, err = b.st.EvidenceList(ctx, b.ws, o.ID)
		require.NoError(t, err)
		require.Len(t, list, len(want), "the refused appends stored nothing")
	})

	t.Run("Evidence_bound", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		o := createOperation(t, b, operationAt(b, "deliver", "", 0))
		for i := range store.MaxEvidence {
			e, err := b.st.EvidenceAppend(ctx, evidenceOf(o, "follow", store.EvidenceNote, fmt.Sprintf(`{"n":%d}`, i), time.Duration(i)))
			require.NoError(t, err)
			require.Equal(t, i+1, e.Seq)
		}
		_, err := b.st.EvidenceAppend(ctx, evidenceOf(o, "follow", store.EvidenceNote, "", time.Hour))
		require.ErrorIs(t, err, jam.ErrConflict, "an operation holds at most MaxEvidence entries")
		list, err := b.st.EvidenceList(ctx, b.ws, o.ID)
		require.NoError(t, err)
		require.Len(t, list, store.MaxEvidence)
		require.Equal(t, store.MaxEvidence, list[len(list)-1].Seq)
		big := evidenceOf(o, "follow", store.EvidenceNote, `{"a":"`+strings.Repeat("d", store.MaxEvidenceDetail-8)+`"}`, 0)
		big.OperationID = createOperation(t, b, operationAt(b, "deliver", "", time.Second)).ID
		got, err := b.st.EvidenceAppend(ctx, big)
		require.NoError(t, err, "a detail at the bound")
		require.Equal(t, big.Detail, got.Detail)
	})

	t.Run("Operation_invalid", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		o := createOperation(t, b, operationAt(b, "deliver", "", 0))
		create := func(mod func(*store.Operation)) func() error {
			return func() error {
				v := operationAt(b, "deliver", "", time.Second)
				mod(&v)
				return errOf(b.st.OperationCreate(ctx, v))
			}
		}
		update := func(mod func(*store.OperationUpdateParams)) func() error {
			return func() error {
				p := store.OperationUpdateParams{WorkspaceID: b.ws, ID: o.ID, State: store.OperationRunning, Progress: ptr("x"), At: epoch}
				mod(&p)
				return errOf(b.st.OperationUpdate(ctx, p))
			}
		}
		appendEv := func(mod func(*store.Evidence)) func() error {
			return func() error {
				e := evidenceOf(o, "build", store.EvidenceStart, `{}`, 0)
				mod(&e)
				return errOf(b.st.EvidenceAppend(ctx, e))
			}
		}
		job := jam.New[jam.JobID](b.minter)
		tests := []struct {
			name string
			call func() error
		}{
			{"create malformed id", create(func(v *store.Operation) { v.ID = "op_x" })},
			{"create id of another prefix", create(func(v *store.Operation) { v.ID = jam.OperationID(jam.New[jam.JobID](b.minter)) })},
			{"create empty workspace", create(func(v *store.Operation) { v.WorkspaceID = "" })},
			{"create bad kind", create(func(v *store.Operation) { v.Kind = "Deliver" })},
			{"create long subject", create(func(v *store.Operation) { v.Subject = strings.Repeat("s", store.MaxOperationSubjectLen+1) })},
			{"create unknown state", create(func(v *store.Operation) { v.State = "done" })},
			{"create progress of two lines", create(func(v *store.Operation) { v.Progress = "a\nb" })},
			{"create long progress", create(func(v *store.Operation) { v.Progress = strings.Repeat("p", store.MaxOperationText+1) })},
			{"create result not JSON", create(func(v *store.Operation) { v.Result = []byte("ok") })},
			{"create error while pending", create(func(v *store.Operation) { v.ErrorCode = "x" })},
			{"create bad error code", create(func(v *store.Operation) { v.State, v.ErrorCode = store.OperationFailed, "X" })},
			{"create a job twice", create(func(v *store.Operation) { v.Jobs = []jam.JobID{job, job} })},
			{"create too many jobs", create(func(v *store.Operation) { v.Jobs = make([]jam.JobID, store.MaxOperationJobs+1) })},
			{"create zero time", create(func(v *store.Operation) { v.CreatedAt = time.Time{} })},
			{"update malformed id", update(func(p *store.OperationUpdateParams) { p.ID = "op_x" })},
			{"update empty workspace", update(func(p *store.OperationUpdateParams) { p.WorkspaceID = "" })},
			{"update unknown state", update(func(p *store.OperationUpdateParams) { p.State = "done" })},
			{"update unknown from", update(func(p *store.OperationUpdateParams) { p.From = []store.OperationState{"done"} })},
			{"update progress of two lines", update(func(p *store.OperationUpdateParams) { p.Progress = ptr("a\r\nb") })},
			{"update result not JSON", update(func(p *store.OperationUpdateParams) { p.Result = []byte{} })},
			{"update long error", update(func(p *store.OperationUpdateParams) {
				p.State, p.Error = store.OperationFailed, strings.Repeat("e", store.MaxOperationError+1)
			})},
			{"update malformed job", update(func(p *store.OperationUpdateParams) { p.AddJob = "job_x" })},
			{"update zero time", update(func(p *store.OperationUpdateParams) { p.At = time.Time{} })},
			{"get malformed id", func() error { return errOf(b.st.OperationGet(ctx, b.ws, "op_x")) }},
			{"get empty workspace", func() error { return errOf(b.st.OperationGet(ctx, "", o.ID)) }},
			{"list bad kind", func() error {
				return errOf(b.st.OperationList(ctx, store.OperationListParams{WorkspaceID: b.ws, Kind: "A"}))
			}},
			{"list limit over the bound", func() error {
				return errOf(b.st.OperationList(ctx, store.OperationListParams{WorkspaceID: b.ws, Limit: store.MaxOperationLimit + 1}))
			}},
			{"list negative limit", func() error {
				return errOf(b.st.OperationList(ctx, store.OperationListParams{WorkspaceID: b.ws, Limit: -1}))
			}},
			{"list empty workspace", func() error { return errOf(b.st.OperationList(ctx, store.OperationListParams{})) }},
			{"append bad step", appendEv(func(e *store.Evidence) { e.Step = "Push" })},
			{"append unknown event", appendEv(func(e *store.Evidence) { e.Event = "done" })},
			{"append detail not an object", appendEv(func(e *store.Evidence) { e.Detail = []byte(`[1]`) })},
			{"append detail not JSON", appendEv(func(e *store.Evidence) { e.Detail = []byte(`{`) })},
			{"append detail over the bound", appendEv(func(e *store.Evidence) {
				e.Detail = []byte(`{"a":"` + strings.Repeat("d", store.MaxEvidenceDetail) + `"}`)
			})},
			{"append zero time", appendEv(func(e *store.Evidence) { e.At = time.Time{} })},
			{"append malformed operation", appendEv(func(e *store.Evidence) { e.OperationID = "op_x" })},
			{"list evidence malformed operation", func() error { return errOf(b.st.EvidenceList(ctx, b.ws, "op_x")) }},
			{"list evidence empty workspace", func() error { return errOf(b.st.EvidenceList(ctx, "", o.ID)) }},
		}
		for _, tt := range tests {
			require.ErrorIs(t, tt.call(), jam.ErrInvalid, tt.name)
		}
		list, err := b.st.OperationList(ctx, store.OperationListParams{WorkspaceID: b.ws})
		require.NoError(t, err)
		require.Equal(t, []store.Operation{o}, list, "no refused call stored or changed an operation")
		ev, err := b.st.EvidenceList(ctx, b.ws, o.ID)
		require.NoError(t, err)
		require.Empty(t, ev, "no refused append stored evidence")
	})

	operationRaces(t, db)
}

func operationIDs(os []store.Operation) []jam.OperationID {
	out := make([]jam.OperationID, len(os))
	for i, o := range os {
		out[i] = o.ID
	}
	return out
}

// operationRaces appends evidence to one operation, and adds jobs to it,
// through two handles at once. A handle knows nothing of the other's
// appends: only the database (the write lock, the row lock of the
// operation, the primary key of the evidence) keeps two entries from
// taking one seq, or one added job from overwriting another.
func operationRaces(t *testing.T, db Opener[store.Store]) {
	t.Run("EvidenceAppend_twoHandles", func(t *testing.T) {
		t.Parallel()
		b, other := twoHandles(t, db)
		ctx := t.Context()
		handles := [2]store.Store{b.st, other}
		const perHandle = 20
		for round := range 5 {
			o := createOperation(t, b, operationAt(b, "deliver", "", time.Duration(round)*time.Second))
			var seqs [2][]int
			var errs [2]error
			fns := make([]func(), 0, 2*perHandle)
			results := make(chan struct {
				h   int
				seq int
				err error
			}, 2*perHandle)
			for h := range 2 {
				for i := range perHandle {
					fns = append(fns, func() {
						e, err := handles[h].EvidenceAppend(ctx, evidenceOf(o, "push", store.EvidenceNote, fmt.Sprintf(`{"h":%d,"i":%d}`, h, i), 0))
						results <- struct {
							h   int
							seq int
							err error
						}{h, e.Seq, err}
					})
				}
			}
			race(fns...)
			close(results)
			for r := range results {
				if r.err != nil && errs[r.h] == nil {
					errs[r.h] = r.err
				}
				seqs[r.h] = append(seqs[r.h], r.seq)
			}
			require.NoError(t, errs[0], "round %d", round)
			require.NoError(t, errs[1], "round %d", round)
			all := slices.Concat(seqs[0], seqs[1])
			slices.Sort(all)
			want := make([]int, 2*perHandle)
			for i := range want {
				want[i] = i + 1
			}
			require.Equal(t, want, all, "round %d: 40 appends took 40 distinct seqs 1..40", round)
			list, err := other.EvidenceList(ctx, b.ws, o.ID)
			require.NoError(t, err)
			require.Len(t, list, 2*perHandle, "round %d", round)
			for i, e := range list {
				require.Equal(t, i+1, e.Seq, "round %d: stored by seq without a gap", round)
			}
		}
	})

	t.Run("OperationUpdate_addJobTwoHandles", func(t *testing.T) {
		t.Parallel()
		b, other := twoHandles(t, db)
		ctx := t.Context()
		handles := [2]store.Store{b.st, other}
		o := createOperation(t, b, operationAt(b, "deliver", "", 0))
		const perHandle = 10
		var added [2][]jam.JobID
		var errs [2]error
		adder := func(h int) func() {
			return func() {
				for range perHandle {
					j := jam.New[jam.JobID](b.minter)
					if _, err := handles[h].OperationUpdate(ctx, store.OperationUpdateParams{WorkspaceID: b.ws, ID: o.ID, AddJob: j, At: epoch}); err != nil {
						errs[h] = errors.Join(errs[h], err)
					}
					added[h] = append(added[h], j)
				}
			}
		}
		race(adder(0), adder(1))
		require.NoError(t, errs[0])
		require.NoError(t, errs[1])
		got, err := b.st.OperationGet(ctx, b.ws, o.ID)
		require.NoError(t, err)
		require.ElementsMatch(t, slices.Concat(added[0], added[1]), got.Jobs, "every job added through either handle is there once")
	})
}
