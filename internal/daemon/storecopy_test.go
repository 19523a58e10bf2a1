package daemon_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/cli"
	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/daemon"
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/postgres"
	"github.com/jamhq/jam/internal/store/postgres/pgtest"
	"github.com/jamhq/jam/internal/store/sqlite"
)

// runJam runs the jam command line in-process with env as the whole
// environment.
func runJam(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	io, _, out, errOut := cli.Test()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	code := cli.Main(ctx, args, io, cli.Deps{RunDaemon: daemon.RunCLI, RunHub: daemon.RunHub, CopyStore: daemon.CopyStore,
		Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	return code, out.String(), errOut.String()
}

// TestStoreCopy: "jam store copy" moves a stopped daemon's SQLite store
// into an empty PostgreSQL database with every row, verified; it refuses
// while the daemon runs and into a database that is not empty, and the
// password never shows.
func TestStoreCopy(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	r.waitReady(t)
	ctx := t.Context()
	_, err := r.client.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	_, err = r.client.RoomCreate(ctx, wire.RoomCreateRequest{Title: "lobby", Agents: []string{"coder"}})
	require.NoError(t, err)

	target := withUser(t, pgtest.URL(t), "postgres", "not-checked-pw")
	env := map[string]string{"HOME": cfg.DataDir, "JAM_STORE": target}
	code, out, errOut := runJam(t, env, "store", "copy", "--data-dir", cfg.DataDir)
	require.Equal(t, int(cli.ExitConflict), code, "the daemon runs: %s%s", out, errOut)
	require.Contains(t, errOut, "jam: stop jamd first: another jamd (pid ")

	err, _ = r.stop()
	require.NoError(t, err)
	// A durable job, sealed payload, result and error, goes along.
	job := enqueueStoppedJob(t, cfg)
	con := addStoppedConnection(t, cfg)
	op, evidence, dlv := addStoppedDelivery(t, cfg)
	del, delResult := addStoppedDelegation(t, cfg)
	code, out, errOut = runJam(t, env, "store", "copy", "--data-dir", cfg.DataDir)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Regexp(t, `^copied \d+ rows in \d+ tables to postgres 127\.0\.0\.1:\d+/jam_test_\w+; counts equal, [1-9]\d* sealed values open to the same content\n`, out)
	require.Contains(t, out, "  workspaces             1\n")
	require.Contains(t, out, "  accounts ")
	require.Contains(t, out, "  jobs                   1\n")
	require.NotContains(t, out+errOut, "not-checked-pw")

	// What the copy wrote reads back through the PostgreSQL store.
	pg, err := postgres.Open(ctx, postgres.Config{URL: target, Sealer: loadBox(t, cfg)})
	require.NoError(t, err)
	defer pg.Close()
	wss, err := pg.WorkspaceList(ctx)
	require.NoError(t, err)
	require.Len(t, wss, 1)
	evs, err := pg.EventList(ctx, wss[0].ID, 0, 1000)
	require.NoError(t, err)
	require.NotEmpty(t, evs)
	gotJob, err := pg.JobGet(ctx, job.WorkspaceID, job.ID)
	require.NoError(t, err)
	require.Equal(t, job, gotJob, "the job reads back the same through the PostgreSQL store")
	// The connection added, and the band connections of the account and
	// the agent (one version each).
	require.Contains(t, out, "  connections            3\n")
	require.Contains(t, out, "  credential_versions    4\n")
	pgPeer, err := pg.PeerGet(ctx, wss[0].ID, jam.PeerKey{Profile: "local", Scope: "coder"})
	require.NoError(t, err)
	require.NotEmpty(t, pgPeer.ConnectionID)
	require.Empty(t, pgPeer.KeySealed)
	agentKey, err := pg.CredentialCurrent(ctx, wss[0].ID, pgPeer.ConnectionID)
	require.NoError(t, err, "the agent's key opens in PostgreSQL")
	require.NotEmpty(t, agentKey.Secret)
	gotCon, err := pg.ConnectionGet(ctx, con.WorkspaceID, con.ID)
	require.NoError(t, err)
	require.Equal(t, con, gotCon)
	cred, err := pg.CredentialCurrent(ctx, con.WorkspaceID, con.ID)
	require.NoError(t, err)
	require.Equal(t, 2, cred.Version)
	require.Equal(t, "second-secret", string(cred.Secret), "the sealed secret opens to the same value in PostgreSQL")
	require.Contains(t, out, "  operations             1\n")
	require.Contains(t, out, "  operation_evidence     2\n")
	require.Contains(t, out, "  deliveries             1\n")
	gotOp, err := pg.OperationGet(ctx, op.WorkspaceID, op.ID)
	require.NoError(t, err)
	require.Equal(t, op, gotOp, "the operation reads back the same through the PostgreSQL store")
	gotEvidence, err := pg.EvidenceList(ctx, op.WorkspaceID, op.ID)
	require.NoError(t, err)
	require.Equal(t, evidence, gotEvidence)
	next, err := pg.EvidenceAppend(ctx, store.Evidence{OperationID: op.ID, WorkspaceID: op.WorkspaceID, Step: "follow", Event: store.EvidenceNote,
		At: time.Now()})
	require.NoError(t, err)
	require.Equal(t, 3, next.Seq, "evidence counts on after the copied entries")
	gotDlv, err := pg.DeliveryGet(ctx, dlv.WorkspaceID, dlv.ID)
	require.NoError(t, err)
	require.Equal(t, dlv, gotDlv, "the delivery (pull request flag and all) reads back the same through the PostgreSQL store")
	require.Contains(t, out, "  delegations            1\n")
	require.Contains(t, out, "  delegation_results     1\n")
	gotDel, err := pg.DelegationGet(ctx, del.WorkspaceID, del.ID)
	require.NoError(t, err)
	require.Equal(t, del, gotDel, "the delegation, sealed instructions and contract, reads back the same")
	gotResult, err := pg.DelegationResultGet(ctx, del.WorkspaceID, del.ID)
	require.NoError(t, err)
	require.Equal(t, delResult, gotResult, "the sealed result opens to the same value in PostgreSQL")

	// Twice: the target is not empty any more, and nothing changes.
	code, out, errOut = runJam(t, env, "store", "copy", "--data-dir", cfg.DataDir)
	require.Equal(t, int(cli.ExitConflict), code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.True(t, strings.HasPrefix(errOut, "jam: postgres store 127.0.0.1:"), errOut)
	require.Contains(t, errOut, "the target database is not empty")
	again, err := pg.EventList(ctx, wss[0].ID, 0, 1000)
	require.NoError(t, err)
	require.Equal(t, evs, again)

	// No target at all is a usage error.
	code, _, errOut = runJam(t, map[string]string{"HOME": cfg.DataDir}, "store", "copy", "--data-dir", cfg.DataDir)
	require.Equal(t, int(cli.ExitUsage), code)
	require.Contains(t, errOut, "no target")
}

// enqueueStoppedJob writes a job that has run and failed once into a
// stopped daemon's SQLite store, and returns it as stored.
func enqueueStoppedJob(t *testing.T, cfg config.Config) store.Job {
	t.Helper()
	ctx := t.Context()
	st, wss := openStopped(t, cfg)
	defer func() { require.NoError(t, st.Close()) }()
	require.NotEmpty(t, wss)
	at := time.Now()
	j, err := st.JobEnqueue(ctx, store.Job{ID: jam.New[jam.JobID](jam.NewMinter(nil, nil)), WorkspaceID: wss[0].ID, Kind: "github.comment",
		IdempotencyKey: "pr-1", Payload: []byte(`{"body":"hi"}`), MaxAttempts: 3, CreatedAt: at})
	require.NoError(t, err)
	c, err := st.JobClaim(ctx, store.JobClaimParams{WorkspaceID: j.WorkspaceID, Kinds: []string{j.Kind}, Owner: "w", Lease: time.Minute, At: at})
	require.NoError(t, err)
	j, err = st.JobFail(ctx, store.JobFailParams{WorkspaceID: j.WorkspaceID, ID: j.ID, Generation: c.Generation, Error: "502", RetryAt: at.Add(time.Minute), At: at})
	require.NoError(t, err)
	return j
}

// loadBox is the daemon key of a data directory.
func loadBox(t *testing.T, cfg config.Config) *secret.Box {
	t.Helper()
	box, err := secret.LoadOrCreate(filepath.Join(cfg.DataDir, "daemon.key"))
	require.NoError(t, err)
	return box
}

// addStoppedConnection writes a connection rotated once (two credential
// versions) into a stopped daemon's SQLite store and returns it.
func addStoppedConnection(t *testing.T, cfg config.Config) store.Connection {
	t.Helper()
	ctx := t.Context()
	st, wss := openStopped(t, cfg)
	defer func() { require.NoError(t, st.Close()) }()
	at := time.Now()
	c, err := st.ConnectionCreate(ctx, store.Connection{ID: jam.New[jam.ConnectionID](jam.NewMinter(nil, nil)), WorkspaceID: wss[0].ID,
		Provider: store.ProviderGitHub, Name: "work", CreatedAt: at}, []byte("first-secret"))
	require.NoError(t, err)
	c, err = st.ConnectionRotate(ctx, c.WorkspaceID, c.ID, []byte("second-secret"), at.Add(time.Second))
	require.NoError(t, err)
	return c
}

// addStoppedDelegation writes a submitted delegation and its result into
// a stopped daemon's SQLite store and returns them as stored.
func addStoppedDelegation(t *testing.T, cfg config.Config) (store.Delegation, store.DelegationResult) {
	t.Helper()
	ctx := t.Context()
	st, wss := openStopped(t, cfg)
	defer func() { require.NoError(t, st.Close()) }()
	m := jam.NewMinter(nil, nil)
	at := time.Now()
	d, err := st.DelegationCreate(ctx, store.Delegation{ID: jam.New[jam.DelegationID](m), WorkspaceID: wss[0].ID, Parent: jam.New[jam.SessionID](m),
		Role: jam.RoleReview, Agent: "local/coder", Instructions: "Review the change", Inputs: store.DelegationInputs{Commit: strings.Repeat("a", 40)},
		Contract: []byte(`{"type":"object"}`), ContractName: store.ContractReview, MaxAttempts: 3, CreatedAt: at})
	require.NoError(t, err)
	d, err = st.DelegationSetChild(ctx, store.DelegationSetChildParams{WorkspaceID: d.WorkspaceID, ID: d.ID, Child: jam.New[jam.SessionID](m), At: at})
	require.NoError(t, err)
	d, r, err := st.DelegationSubmit(ctx, store.DelegationSubmitParams{WorkspaceID: d.WorkspaceID, ID: d.ID, Child: d.Child,
		Result: []byte(`{"verdict":"approve","findings":[]}`), At: at})
	require.NoError(t, err)
	return d, r
}

// addStoppedDelivery writes a running deliver operation with two
// entries of evidence, and its delivery pushed with a pull request open,
// into a stopped daemon's SQLite store, and returns them as stored.
func addStoppedDelivery(t *testing.T, cfg config.Config) (store.Operation, []store.Evidence, store.Delivery) {
	t.Helper()
	ctx := t.Context()
	st, wss := openStopped(t, cfg)
	defer func() { require.NoError(t, st.Close()) }()
	m := jam.NewMinter(nil, nil)
	at := time.Now()
	dlvID := jam.New[jam.DeliveryID](m)
	op, err := st.OperationCreate(ctx, store.Operation{ID: jam.New[jam.OperationID](m), WorkspaceID: wss[0].ID, Kind: "deliver", Subject: string(dlvID),
		State: store.OperationRunning, Progress: "opening the pull request", Result: []byte(`{"commit":"abc"}`), Jobs: []jam.JobID{jam.New[jam.JobID](m)},
		CreatedAt: at})
	require.NoError(t, err)
	for _, e := range []store.Evidence{
		{Step: "push", Event: store.EvidenceStart},
		{Step: "push", Event: store.EvidenceEnd, Detail: []byte(`{"remote_sha":"` + strings.Repeat("a", 40) + `"}`)},
	} {
		e.OperationID, e.WorkspaceID, e.At = op.ID, op.WorkspaceID, at
		_, err := st.EvidenceAppend(ctx, e)
		require.NoError(t, err)
	}
	evidence, err := st.EvidenceList(ctx, op.WorkspaceID, op.ID)
	require.NoError(t, err)
	d, created, err := st.DeliveryCreate(ctx, store.Delivery{ID: dlvID, WorkspaceID: wss[0].ID, ChangeSetID: jam.New[jam.ChangeSetID](m),
		SessionID: jam.New[jam.SessionID](m), Remote: "https://github.com/acme/app.git", Branch: "jam/change-1", PR: true, Repo: "acme/app",
		Base: "main", Title: "Fix the parser", Operation: op.ID, CreatedAt: at})
	require.NoError(t, err)
	require.True(t, created)
	d.State, d.Commit, d.RemoteSHA, d.PRNumber, d.PRURL, d.PRState, d.UpdatedAt, d.FollowedAt =
		store.DeliveryPROpen, strings.Repeat("a", 40), strings.Repeat("a", 40), 7, "https://github.com/acme/app/pull/7", "open", at, at
	d, err = st.DeliveryUpdate(ctx, d)
	require.NoError(t, err)
	return op, evidence, d
}

// openStopped opens a stopped daemon's SQLite store with its key and
// returns it with its workspaces.
func openStopped(t *testing.T, cfg config.Config) (*sqlite.Store, []store.Workspace) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(cfg.DataDir, datadir.StoreFile), Sealer: loadBox(t, cfg)})
	require.NoError(t, err)
	wss, err := st.WorkspaceList(t.Context())
	if err != nil {
		st.Close()
	}
	require.NoError(t, err)
	return st, wss
}
