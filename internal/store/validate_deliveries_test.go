package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// validatorCase is one row of a validator's table: a change to a valid
// value and whether the result is accepted.
type validatorCase[T any] struct {
	name string
	mod  func(*T)
	ok   bool
}

func runValidatorCases[T any](t *testing.T, valid T, check func(T) error, tests []validatorCase[T]) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := valid
			tt.mod(&v)
			err := check(v)
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, jam.ErrInvalid)
		})
	}
}

var deliveriesAt = time.Date(2026, 1, 2, 3, 4, 5, 6789, time.FixedZone("x", 3600))

func validOperation(m *jam.Minter) store.Operation {
	return store.Operation{ID: jam.New[jam.OperationID](m), WorkspaceID: jam.New[jam.WorkspaceID](m), Kind: "deliver",
		Subject: string(jam.New[jam.DeliveryID](m)), Progress: "building", Result: []byte(`{"ok":true}`), Jobs: []jam.JobID{jam.New[jam.JobID](m)},
		CreatedAt: deliveriesAt}
}

func TestOperation_Canonical(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(time.Now, nil)
	ok := validOperation(m)

	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		o := ok
		o.UpdatedAt = deliveriesAt.Add(time.Hour)
		got, err := o.Canonical()
		require.NoError(t, err)
		require.Equal(t, store.OperationPending, got.State, "pending when no state is given")
		require.Equal(t, deliveriesAt.UTC().Truncate(time.Microsecond), got.CreatedAt)
		require.Equal(t, got.CreatedAt, got.UpdatedAt)
		require.Equal(t, time.UTC, got.CreatedAt.Location())
		o.Jobs = []jam.JobID{}
		got, err = o.Canonical()
		require.NoError(t, err)
		require.Nil(t, got.Jobs, "no jobs is nil")
	})

	jobs := func(n int) []jam.JobID {
		out := make([]jam.JobID, n)
		for i := range out {
			out[i] = jam.New[jam.JobID](m)
		}
		return out
	}
	job := jam.New[jam.JobID](m)
	runValidatorCases(t, ok, func(o store.Operation) error { _, err := o.Canonical(); return err }, []validatorCase[store.Operation]{
		{"as given", func(*store.Operation) {}, true},
		{"running", func(o *store.Operation) { o.State = store.OperationRunning }, true},
		{"unknown state", func(o *store.Operation) { o.State = "done" }, false},
		{"failed with a code", func(o *store.Operation) {
			o.State, o.ErrorCode, o.Error = store.OperationFailed, "remote_unreachable", "dial tcp: refused"
		}, true},
		{"error while running", func(o *store.Operation) { o.State, o.Error = store.OperationRunning, "x" }, false},
		{"error code while pending", func(o *store.Operation) { o.ErrorCode = "x" }, false},
		{"error code from a digit", func(o *store.Operation) { o.State, o.ErrorCode = store.OperationFailed, "1x" }, false},
		{"error code with a dot", func(o *store.Operation) { o.State, o.ErrorCode = store.OperationFailed, "a.b" }, false},
		{"error code at the bound", func(o *store.Operation) {
			o.State, o.ErrorCode = store.OperationFailed, "a"+strings.Repeat("_", store.MaxErrorCodeLen-1)
		}, true},
		{"error code over the bound", func(o *store.Operation) {
			o.State, o.ErrorCode = store.OperationFailed, "a"+strings.Repeat("_", store.MaxErrorCodeLen)
		}, false},
		{"error at the bound", func(o *store.Operation) {
			o.State, o.Error = store.OperationFailed, strings.Repeat("e", store.MaxOperationError)
		}, true},
		{"error over the bound", func(o *store.Operation) {
			o.State, o.Error = store.OperationFailed, strings.Repeat("e", store.MaxOperationError+1)
		}, false},
		{"error not UTF-8", func(o *store.Operation) { o.State, o.Error = store.OperationFailed, "\xff" }, false},
		{"kind with a dot", func(o *store.Operation) { o.Kind = "deliver.retry" }, true},
		{"empty kind", func(o *store.Operation) { o.Kind = "" }, false},
		{"upper-case kind", func(o *store.Operation) { o.Kind = "Deliver" }, false},
		{"kind over the bound", func(o *store.Operation) { o.Kind = "a" + strings.Repeat("b", store.MaxOperationKindLen) }, false},
		{"no subject", func(o *store.Operation) { o.Subject = "" }, true},
		{"subject at the bound", func(o *store.Operation) { o.Subject = strings.Repeat("s", store.MaxOperationSubjectLen) }, true},
		{"subject over the bound", func(o *store.Operation) { o.Subject = strings.Repeat("s", store.MaxOperationSubjectLen+1) }, false},
		{"subject with NUL", func(o *store.Operation) { o.Subject = "a\x00" }, false},
		{"progress at the bound", func(o *store.Operation) { o.Progress = strings.Repeat("p", store.MaxOperationText) }, true},
		{"progress over the bound", func(o *store.Operation) { o.Progress = strings.Repeat("p", store.MaxOperationText+1) }, false},
		{"progress of two lines", func(o *store.Operation) { o.Progress = "a\nb" }, false},
		{"progress with a carriage return", func(o *store.Operation) { o.Progress = "a\rb" }, false},
		{"progress with a tab", func(o *store.Operation) { o.Progress = "a\tb" }, true},
		{"no result", func(o *store.Operation) { o.Result = nil }, true},
		{"result at the bound", func(o *store.Operation) {
			o.Result = []byte(`"` + strings.Repeat("r", store.MaxOperationResult-2) + `"`)
		}, true},
		{"result over the bound", func(o *store.Operation) {
			o.Result = []byte(`"` + strings.Repeat("r", store.MaxOperationResult-1) + `"`)
		}, false},
		{"result not JSON", func(o *store.Operation) { o.Result = []byte(`{`) }, false},
		{"empty result", func(o *store.Operation) { o.Result = []byte{} }, false},
		{"jobs at the bound", func(o *store.Operation) { o.Jobs = jobs(store.MaxOperationJobs) }, true},
		{"jobs over the bound", func(o *store.Operation) { o.Jobs = jobs(store.MaxOperationJobs + 1) }, false},
		{"a job twice", func(o *store.Operation) { o.Jobs = []jam.JobID{job, job} }, false},
		{"a malformed job", func(o *store.Operation) { o.Jobs = []jam.JobID{"job_x"} }, false},
		{"a job of another prefix", func(o *store.Operation) { o.Jobs = []jam.JobID{jam.JobID(jam.New[jam.TurnID](m))} }, false},
		{"zero creation", func(o *store.Operation) { o.CreatedAt = time.Time{} }, false},
		{"no id", func(o *store.Operation) { o.ID = "" }, false},
		{"id of another prefix", func(o *store.Operation) { o.ID = jam.OperationID(jam.New[jam.JobID](m)) }, false},
		{"no workspace", func(o *store.Operation) { o.WorkspaceID = "" }, false},
	})
}

func TestOperationUpdateParams_Validate(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(time.Now, nil)
	line := "pushing"
	ok := store.OperationUpdateParams{WorkspaceID: jam.New[jam.WorkspaceID](m), ID: jam.New[jam.OperationID](m),
		From: []store.OperationState{store.OperationPending}, State: store.OperationRunning, Progress: &line, AddJob: jam.New[jam.JobID](m), At: deliveriesAt}
	long, twoLines := strings.Repeat("p", store.MaxOperationText+1), "a\nb"
	runValidatorCases(t, ok, store.OperationUpdateParams.Validate, []validatorCase[store.OperationUpdateParams]{
		{"as given", func(*store.OperationUpdateParams) {}, true},
		{"nothing but the time", func(p *store.OperationUpdateParams) { p.From, p.State, p.Progress, p.AddJob = nil, "", nil, "" }, true},
		{"from a terminal state", func(p *store.OperationUpdateParams) { p.From = []store.OperationState{store.OperationFailed} }, true},
		{"from an unknown state", func(p *store.OperationUpdateParams) { p.From = []store.OperationState{"done"} }, false},
		{"from an empty state", func(p *store.OperationUpdateParams) { p.From = []store.OperationState{""} }, false},
		{"to an unknown state", func(p *store.OperationUpdateParams) { p.State = "done" }, false},
		{"failed with a code", func(p *store.OperationUpdateParams) {
			p.State, p.ErrorCode, p.Error = store.OperationFailed, "credential_invalid", "401"
		}, true},
		{"bad error code", func(p *store.OperationUpdateParams) { p.State, p.ErrorCode = store.OperationFailed, "Bad" }, false},
		{"error over the bound", func(p *store.OperationUpdateParams) {
			p.State, p.Error = store.OperationFailed, strings.Repeat("e", store.MaxOperationError+1)
		}, false},
		{"empty progress", func(p *store.OperationUpdateParams) { empty := ""; p.Progress = &empty }, true},
		{"progress over the bound", func(p *store.OperationUpdateParams) { p.Progress = &long }, false},
		{"progress of two lines", func(p *store.OperationUpdateParams) { p.Progress = &twoLines }, false},
		{"a result", func(p *store.OperationUpdateParams) { p.Result = []byte(`[1]`) }, true},
		{"result not JSON", func(p *store.OperationUpdateParams) { p.Result = []byte(`x`) }, false},
		{"malformed job", func(p *store.OperationUpdateParams) { p.AddJob = "job_x" }, false},
		{"zero time", func(p *store.OperationUpdateParams) { p.At = time.Time{} }, false},
		{"no id", func(p *store.OperationUpdateParams) { p.ID = "" }, false},
		{"malformed workspace", func(p *store.OperationUpdateParams) { p.WorkspaceID = "ws_x" }, false},
	})

	t.Run("FromStates", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, []string{"pending", "running"}, store.OperationUpdateParams{}.FromStates(), "no From: the states that are not terminal")
		require.Equal(t, []string{"failed"}, store.OperationUpdateParams{From: []store.OperationState{store.OperationFailed}}.FromStates())
	})
}

func TestEvidence_Canonical(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(time.Now, nil)
	ok := store.Evidence{OperationID: jam.New[jam.OperationID](m), WorkspaceID: jam.New[jam.WorkspaceID](m), Seq: 7, Step: "push",
		Event: store.EvidenceEnd, Detail: []byte(`{"remote_sha":"abc"}`), At: deliveriesAt}
	got, err := ok.Canonical()
	require.NoError(t, err)
	require.Zero(t, got.Seq, "the store assigns the seq")
	require.Equal(t, deliveriesAt.UTC().Truncate(time.Microsecond), got.At)

	runValidatorCases(t, ok, func(e store.Evidence) error { _, err := e.Canonical(); return err }, []validatorCase[store.Evidence]{
		{"as given", func(*store.Evidence) {}, true},
		{"each event", func(e *store.Evidence) { e.Event = store.EvidenceNote }, true},
		{"start", func(e *store.Evidence) { e.Event = store.EvidenceStart }, true},
		{"error", func(e *store.Evidence) { e.Event = store.EvidenceError }, true},
		{"unknown event", func(e *store.Evidence) { e.Event = "finish" }, false},
		{"no event", func(e *store.Evidence) { e.Event = "" }, false},
		{"step with a dot and underscore", func(e *store.Evidence) { e.Step = "pull_request.open" }, true},
		{"no step", func(e *store.Evidence) { e.Step = "" }, false},
		{"step with a dash", func(e *store.Evidence) { e.Step = "pull-request" }, false},
		{"no detail", func(e *store.Evidence) { e.Detail = nil }, true},
		{"detail with space before the object", func(e *store.Evidence) { e.Detail = []byte(" {}") }, true},
		{"detail an array", func(e *store.Evidence) { e.Detail = []byte(`[1]`) }, false},
		{"detail a string", func(e *store.Evidence) { e.Detail = []byte(`"x"`) }, false},
		{"detail not JSON", func(e *store.Evidence) { e.Detail = []byte(`{`) }, false},
		{"empty detail", func(e *store.Evidence) { e.Detail = []byte{} }, false},
		{"detail not UTF-8", func(e *store.Evidence) { e.Detail = []byte("{\"a\":\"\xff\"}") }, false},
		{"detail at the bound", func(e *store.Evidence) {
			e.Detail = []byte(`{"a":"` + strings.Repeat("d", store.MaxEvidenceDetail-8) + `"}`)
		}, true},
		{"detail over the bound", func(e *store.Evidence) {
			e.Detail = []byte(`{"a":"` + strings.Repeat("d", store.MaxEvidenceDetail-7) + `"}`)
		}, false},
		{"zero time", func(e *store.Evidence) { e.At = time.Time{} }, false},
		{"no operation", func(e *store.Evidence) { e.OperationID = "" }, false},
		{"no workspace", func(e *store.Evidence) { e.WorkspaceID = "" }, false},
	})
}

func TestOperationListParams_Bound(t *testing.T) {
	t.Parallel()
	ws := jam.New[jam.WorkspaceID](jam.NewMinter(time.Now, nil))
	n, err := store.OperationListParams{WorkspaceID: ws}.Bound()
	require.NoError(t, err)
	require.Equal(t, store.DefaultOperationLimit, n)
	runValidatorCases(t, store.OperationListParams{WorkspaceID: ws, Kind: "deliver", Subject: "dlv_x", Limit: 3},
		func(p store.OperationListParams) error { _, err := p.Bound(); return err }, []validatorCase[store.OperationListParams]{
			{"as given", func(*store.OperationListParams) {}, true},
			{"limit at the bound", func(p *store.OperationListParams) { p.Limit = store.MaxOperationLimit }, true},
			{"limit over the bound", func(p *store.OperationListParams) { p.Limit = store.MaxOperationLimit + 1 }, false},
			{"negative limit", func(p *store.OperationListParams) { p.Limit = -1 }, false},
			{"bad kind", func(p *store.OperationListParams) { p.Kind = "A" }, false},
			{"long subject", func(p *store.OperationListParams) { p.Subject = strings.Repeat("s", store.MaxOperationSubjectLen+1) }, false},
			{"no workspace", func(p *store.OperationListParams) { p.WorkspaceID = "" }, false},
		})
}

func validDelivery(m *jam.Minter) store.Delivery {
	return store.Delivery{ID: jam.New[jam.DeliveryID](m), WorkspaceID: jam.New[jam.WorkspaceID](m), ChangeSetID: jam.New[jam.ChangeSetID](m),
		SessionID: jam.New[jam.SessionID](m), Turn: jam.New[jam.TurnID](m), Remote: "https://github.com/acme/app.git", Branch: "jam/cs-1",
		ConnectionID: jam.New[jam.ConnectionID](m), PR: true, Repo: "acme/app", Base: "main", Title: "Fix the parser",
		Operation: jam.New[jam.OperationID](m), CreatedAt: deliveriesAt}
}

func TestDelivery_Canonical(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(time.Now, nil)
	ok := validDelivery(m)

	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		d := ok
		d.Generation, d.UpdatedAt = 9, deliveriesAt.Add(time.Hour)
		got, err := d.Canonical()
		require.NoError(t, err)
		require.Equal(t, store.DeliveryPending, got.State)
		require.Equal(t, int64(1), got.Generation)
		require.Equal(t, deliveriesAt.UTC().Truncate(time.Microsecond), got.CreatedAt)
		require.Equal(t, got.CreatedAt, got.UpdatedAt)
	})

	sha1, sha256 := strings.Repeat("a1", 20), strings.Repeat("0f", 32)
	runValidatorCases(t, ok, func(d store.Delivery) error { _, err := d.Canonical(); return err }, []validatorCase[store.Delivery]{
		{"as given", func(*store.Delivery) {}, true},
		{"no turn", func(d *store.Delivery) { d.Turn = "" }, true},
		{"no connection", func(d *store.Delivery) { d.ConnectionID = "" }, true},
		{"no session", func(d *store.Delivery) { d.SessionID = "" }, false},
		{"no change set", func(d *store.Delivery) { d.ChangeSetID = "" }, false},
		{"malformed turn", func(d *store.Delivery) { d.Turn = "turn_x" }, false},
		{"malformed connection", func(d *store.Delivery) { d.ConnectionID = "con_x" }, false},
		{"no operation", func(d *store.Delivery) { d.Operation = "" }, false},
		{"no id", func(d *store.Delivery) { d.ID = "" }, false},
		{"id of another prefix", func(d *store.Delivery) { d.ID = jam.DeliveryID(jam.New[jam.OperationID](m)) }, false},
		{"no workspace", func(d *store.Delivery) { d.WorkspaceID = "" }, false},
		{"zero creation", func(d *store.Delivery) { d.CreatedAt = time.Time{} }, false},
		{"ssh URL", func(d *store.Delivery) { d.Remote = "ssh://git@github.com/acme/app.git" }, true},
		{"scp-like ssh", func(d *store.Delivery) { d.Remote = "git@github.com:acme/app.git" }, true},
		{"local path", func(d *store.Delivery) { d.Remote = "/srv/git/app.git" }, true},
		{"file URL", func(d *store.Delivery) { d.Remote = "file:///srv/git/app.git" }, true},
		{"empty remote", func(d *store.Delivery) { d.Remote = "" }, false},
		{"remote at the bound", func(d *store.Delivery) { d.Remote = "/" + strings.Repeat("r", store.MaxDeliveryRemoteLen-1) }, true},
		{"remote over the bound", func(d *store.Delivery) { d.Remote = "/" + strings.Repeat("r", store.MaxDeliveryRemoteLen) }, false},
		{"remote of two lines", func(d *store.Delivery) { d.Remote = "/srv/a\n/srv/b" }, false},
		{"remote with NUL", func(d *store.Delivery) { d.Remote = "/srv/a\x00" }, false},
		{"remote with a password", func(d *store.Delivery) { d.Remote = "https://user:ghp_secret@github.com/acme/app.git" }, false},
		{"ssh remote with a password", func(d *store.Delivery) { d.Remote = "ssh://git:pw@github.com/acme/app.git" }, false},
		{"remote with an empty password", func(d *store.Delivery) { d.Remote = "https://user:@github.com/acme/app.git" }, false},
		{"https remote with a token as the user", func(d *store.Delivery) { d.Remote = "https://ghp_secret@github.com/acme/app.git" }, false},
		{"remote with a query", func(d *store.Delivery) { d.Remote = "https://github.com/acme/app.git?access_token=x" }, false},
		{"remote with an empty query", func(d *store.Delivery) { d.Remote = "https://github.com/acme/app.git?" }, false},
		{"remote with a fragment", func(d *store.Delivery) { d.Remote = "https://github.com/acme/app.git#x" }, false},
		{"remote not a URL", func(d *store.Delivery) { d.Remote = "https://github.com/%zz" }, false},
		{"empty branch", func(d *store.Delivery) { d.Branch = "" }, false},
		{"branch at the bound", func(d *store.Delivery) { d.Branch = strings.Repeat("b", store.MaxDeliveryBranchLen) }, true},
		{"branch over the bound", func(d *store.Delivery) { d.Branch = strings.Repeat("b", store.MaxDeliveryBranchLen+1) }, false},
		{"branch with a space", func(d *store.Delivery) { d.Branch = "jam/a b" }, false},
		{"branch with a tab", func(d *store.Delivery) { d.Branch = "jam/a\tb" }, false},
		{"branch with a no-break space", func(d *store.Delivery) { d.Branch = "jam/a\u00a0b" }, false},
		{"branch with a control", func(d *store.Delivery) { d.Branch = "jam/a\x1bb" }, false},
		{"branch from a dash", func(d *store.Delivery) { d.Branch = "-f" }, false},
		{"branch not ASCII", func(d *store.Delivery) { d.Branch = "jam/é" }, true},
		{"no pull request, no repo or base", func(d *store.Delivery) { d.PR, d.Repo, d.Base, d.Title = false, "", "", "" }, true},
		{"pull request without a repo", func(d *store.Delivery) { d.Repo = "" }, false},
		{"pull request without a base", func(d *store.Delivery) { d.Base = "" }, false},
		{"pull request without a title", func(d *store.Delivery) { d.Title = "" }, true},
		{"repo without a name", func(d *store.Delivery) { d.Repo = "acme/" }, false},
		{"repo without a slash", func(d *store.Delivery) { d.Repo = "acme" }, false},
		{"repo of three parts", func(d *store.Delivery) { d.Repo = "acme/app/x" }, false},
		{"repo owner at the bound", func(d *store.Delivery) { d.Repo = strings.Repeat("o", 39) + "/app" }, true},
		{"repo owner over the bound", func(d *store.Delivery) { d.Repo = strings.Repeat("o", 40) + "/app" }, false},
		{"repo owner with a dot", func(d *store.Delivery) { d.Repo = "ac.me/app" }, false},
		{"repo name with dots, dashes and underscores", func(d *store.Delivery) { d.Repo = "Acme-1/app.v2_x-y" }, true},
		{"repo name over the bound", func(d *store.Delivery) { d.Repo = "acme/" + strings.Repeat("n", 101) }, false},
		{"bad repo without a pull request", func(d *store.Delivery) { d.PR, d.Repo = false, "acme" }, false},
		{"base with a space", func(d *store.Delivery) { d.Base = "ma in" }, false},
		{"title at the bound", func(d *store.Delivery) { d.Title = strings.Repeat("t", store.MaxDeliveryTitleLen) }, true},
		{"title over the bound", func(d *store.Delivery) { d.Title = strings.Repeat("t", store.MaxDeliveryTitleLen+1) }, false},
		{"title of two lines", func(d *store.Delivery) { d.Title = "a\nb" }, false},
		{"api base URL", func(d *store.Delivery) { d.APIBaseURL = "https://ghe.example.com/api/v3" }, true},
		{"api base URL with userinfo", func(d *store.Delivery) { d.APIBaseURL = "https://u@ghe.example.com/api/v3" }, false},
		{"api base URL with a query", func(d *store.Delivery) { d.APIBaseURL = "https://ghe.example.com/api/v3?x=1" }, false},
		{"api base URL relative", func(d *store.Delivery) { d.APIBaseURL = "/api/v3" }, false},
		{"api base URL not http", func(d *store.Delivery) { d.APIBaseURL = "ftp://ghe.example.com" }, false},
		{"unknown state", func(d *store.Delivery) { d.State = "done" }, false},
		{"a commit", func(d *store.Delivery) { d.State, d.Commit = store.DeliveryPushing, sha1 }, true},
		{"a SHA-256 commit", func(d *store.Delivery) { d.Commit = sha256 }, true},
		{"an upper-case commit", func(d *store.Delivery) { d.Commit = strings.ToUpper(sha1) }, false},
		{"a short commit", func(d *store.Delivery) { d.Commit = sha1[:39] }, false},
	})
}

func TestDelivery_ValidateUpdate(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(time.Now, nil)
	ok := validDelivery(m)
	ok.State, ok.Commit, ok.RemoteSHA, ok.PRNumber, ok.PRURL, ok.PRState, ok.PRHeadSHA, ok.Checks =
		store.DeliveryPROpen, strings.Repeat("a", 40), strings.Repeat("a", 40), 42, "https://github.com/acme/app/pull/42", "open", strings.Repeat("b", 64), "pending"
	ok.Generation, ok.UpdatedAt = 3, deliveriesAt
	ok.Remote, ok.Branch = "", "" // intent fields are not checked by an update
	sha := strings.Repeat("c", 40)
	runValidatorCases(t, ok, store.Delivery.ValidateUpdate, []validatorCase[store.Delivery]{
		{"as given", func(*store.Delivery) {}, true},
		{"every state", func(d *store.Delivery) { d.State = store.DeliveryMerged }, true},
		{"closed", func(d *store.Delivery) { d.State, d.PRState = store.DeliveryClosed, "closed" }, true},
		{"failed", func(d *store.Delivery) {
			d.State, d.ErrorCode, d.Error = store.DeliveryFailed, "push_rejected", "non-fast-forward"
		}, true},
		{"no state", func(d *store.Delivery) { d.State = "" }, false},
		{"unknown state", func(d *store.Delivery) { d.State = "opened" }, false},
		{"remote sha not hex", func(d *store.Delivery) { d.RemoteSHA = strings.Repeat("g", 40) }, false},
		{"no remote sha", func(d *store.Delivery) { d.RemoteSHA = "" }, true},
		{"head sha upper-case", func(d *store.Delivery) { d.PRHeadSHA = strings.ToUpper(sha) }, false},
		{"commit of 41", func(d *store.Delivery) { d.Commit = sha + "a" }, false},
		{"pr number 0", func(d *store.Delivery) { d.PRNumber, d.PRURL = 0, "" }, true},
		{"negative pr number", func(d *store.Delivery) { d.PRNumber = -1 }, false},
		{"pr url at the bound", func(d *store.Delivery) { d.PRURL = strings.Repeat("u", store.MaxDeliveryPRURLLen) }, true},
		{"pr url over the bound", func(d *store.Delivery) { d.PRURL = strings.Repeat("u", store.MaxDeliveryPRURLLen+1) }, false},
		{"pr url of two lines", func(d *store.Delivery) { d.PRURL = "a\nb" }, false},
		{"pr state merged", func(d *store.Delivery) { d.PRState = "merged" }, true},
		{"pr state unknown", func(d *store.Delivery) { d.PRState = "draft" }, false},
		{"checks success", func(d *store.Delivery) { d.Checks = "success" }, true},
		{"checks failure", func(d *store.Delivery) { d.Checks = "failure" }, true},
		{"checks none", func(d *store.Delivery) { d.Checks = "" }, true},
		{"checks unknown", func(d *store.Delivery) { d.Checks = "neutral" }, false},
		{"bad error code", func(d *store.Delivery) { d.ErrorCode = "Push" }, false},
		{"error over the bound", func(d *store.Delivery) { d.Error = strings.Repeat("e", store.MaxDeliveryErrorLen+1) }, false},
		{"error not UTF-8", func(d *store.Delivery) { d.Error = "\xff" }, false},
		{"generation 0", func(d *store.Delivery) { d.Generation = 0 }, false},
		{"zero update time", func(d *store.Delivery) { d.UpdatedAt = time.Time{} }, false},
		{"a follow time", func(d *store.Delivery) { d.FollowedAt = deliveriesAt }, true},
		{"no id", func(d *store.Delivery) { d.ID = "" }, false},
		{"no workspace", func(d *store.Delivery) { d.WorkspaceID = "" }, false},
	})
}

func TestDeliveryListParams_Bound(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(time.Now, nil)
	ws := jam.New[jam.WorkspaceID](m)
	n, err := store.DeliveryListParams{WorkspaceID: ws}.Bound()
	require.NoError(t, err)
	require.Equal(t, store.DefaultDeliveryLimit, n)
	runValidatorCases(t, store.DeliveryListParams{WorkspaceID: ws, ChangeSetID: jam.New[jam.ChangeSetID](m), State: store.DeliveryPushed, Limit: 2},
		func(p store.DeliveryListParams) error { _, err := p.Bound(); return err }, []validatorCase[store.DeliveryListParams]{
			{"as given", func(*store.DeliveryListParams) {}, true},
			{"limit at the bound", func(p *store.DeliveryListParams) { p.Limit = store.MaxDeliveryLimit }, true},
			{"limit over the bound", func(p *store.DeliveryListParams) { p.Limit = store.MaxDeliveryLimit + 1 }, false},
			{"negative limit", func(p *store.DeliveryListParams) { p.Limit = -1 }, false},
			{"malformed change set", func(p *store.DeliveryListParams) { p.ChangeSetID = "cs_x" }, false},
			{"unknown state", func(p *store.DeliveryListParams) { p.State = "done" }, false},
			{"no workspace", func(p *store.DeliveryListParams) { p.WorkspaceID = "" }, false},
		})
}

// FuzzDeliveryCanonical: Canonical never panics, and what it accepts it
// accepts again, unchanged.
func FuzzDeliveryCanonical(f *testing.F) {
	for _, s := range [][4]string{
		{"https://github.com/acme/app.git", "jam/cs-1", "acme/app", "main"},
		{"git@github.com:acme/app.git", "feature/x", "", ""},
		{"https://user:pw@github.com/a/b", "b", "a/b", "main"},
		{"ssh://git@host:22/a/b?x#y", "-x", "a/", "ma in"},
		{"/srv/git/app.git", "jam/é", "o/n", "base"},
		{"https://github.com/%zz", "b\x00", "a//b", ""},
		{"://", "\u2028", "A-1/x.y_z", "main\n"},
	} {
		f.Add(s[0], s[1], s[2], s[3], true, "Title", "")
	}
	f.Add("https://x", "b", "", "", false, "", "https://api.example.com")
	m := jam.NewMinter(time.Now, nil)
	base := validDelivery(m)
	f.Fuzz(func(t *testing.T, remote, branch, repo, prBase string, pr bool, title, api string) {
		d := base
		d.Remote, d.Branch, d.Repo, d.Base, d.PR, d.Title, d.APIBaseURL = remote, branch, repo, prBase, pr, title, api
		got, err := d.Canonical()
		if err != nil {
			require.ErrorIs(t, err, jam.ErrInvalid)
			require.NotContains(t, err.Error(), "pw@", "the error never repeats a credential")
			return
		}
		again, err := got.Canonical()
		require.NoError(t, err, "an accepted delivery is accepted again")
		require.Equal(t, got, again, "Canonical is idempotent")
		require.NoError(t, got.ValidateUpdate(), "its outcome fields pass an update's checks")
	})
}
