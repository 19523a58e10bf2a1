package harnessturn

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/realagent"
)

// TestMain doubles as the demo agent and as realagent's network bridge
// when a run re-executes the test binary.
func TestMain(m *testing.M) {
	realagent.RunBridgeIfAsked()
	RunDemoIfAsked()
	os.Exit(m.Run())
}

// TestRun_demo runs a few turns each way with the demo agent, which needs
// no CLI: every turn is answered both ways, the reply before the
// settlement, and the figures are taken over the measured turns only.
func TestRun_demo(t *testing.T) {
	var log strings.Builder
	res, err := Run(t.Context(), Options{Harnesses: []string{"demo"}, Turns: 4, Warm: 1, Log: &log})
	require.NoError(t, err, log.String())
	require.Len(t, res, 1)
	r := res[0]
	require.Empty(t, r.Skipped)
	require.Len(t, r.DirectTurns, 4)
	require.Len(t, r.ReplyTurns, 4)
	require.Equal(t, 4, r.Direct.Count)
	for i := range r.ReplyTurns {
		require.Positive(t, r.DirectTurns[i])
		require.Positive(t, r.ReplyTurns[i])
		require.LessOrEqual(t, r.ReplyTurns[i], r.SettledTurns[i], "turn %d", i)
	}
	require.Positive(t, r.FirstReply)
	// Every measured turn has every point in jamd's event stream.
	require.Len(t, r.Phases, len(phasePoints)-1)
	for _, p := range r.Phases {
		require.Equal(t, 4, p.Turns, p.Name)
	}
	t.Log(log.String())
}

// TestRun_missingCLI: a harness whose CLI is not installed is skipped
// with the reason, not failed.
func TestRun_missingCLI(t *testing.T) {
	t.Setenv(realagent.EnvClaude, "")
	t.Setenv(realagent.EnvRequireClaude, "")
	res, err := Run(t.Context(), Options{Harnesses: []string{"claude"}, Turns: 1})
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.Contains(t, res[0].Skipped, realagent.EnvClaude)
}

// TestRun_unknownHarness is an error naming the known ones.
func TestRun_unknownHarness(t *testing.T) {
	_, err := Run(t.Context(), Options{Harnesses: []string{"emacs"}, Turns: 1})
	require.ErrorContains(t, err, "unknown harness")
	require.ErrorContains(t, err, "claude")
}

// BenchmarkHarnessTurn measures every installed harness (b.N is
// ignored: each runs Options' default turns); the figures are reported
// per harness as metrics.
func BenchmarkHarnessTurn(b *testing.B) {
	for range b.N {
		res, err := Run(b.Context(), Options{})
		require.NoError(b, err)
		for _, r := range res {
			if r.Skipped != "" {
				b.Logf("%s: %s", r.Harness, r.Skipped)
				continue
			}
			p50, p99 := r.Overhead()
			b.ReportMetric(float64(r.Direct.P50.Microseconds())/1000, r.Harness+"-direct-p50-ms")
			b.ReportMetric(float64(r.Reply.P50.Microseconds())/1000, r.Harness+"-jam-p50-ms")
			b.ReportMetric(float64(p50.Microseconds())/1000, r.Harness+"-overhead-p50-ms")
			b.ReportMetric(float64(p99.Microseconds())/1000, r.Harness+"-overhead-p99-ms")
		}
	}
}

// TestRun_one runs the harness JAM_BENCH_HARNESS names for a few turns
// (skipped when unset): a quick look at one real CLI.
func TestRun_one(t *testing.T) {
	name := os.Getenv("JAM_BENCH_HARNESS")
	if name == "" {
		t.Skip("JAM_BENCH_HARNESS is not set")
	}
	var log strings.Builder
	o := Options{Harnesses: []string{name}, Turns: 3, Warm: 1, Log: &log}
	if n, err := strconv.Atoi(os.Getenv("JAM_BENCH_TURNS")); err == nil {
		o.Turns = n
	}
	if path := os.Getenv("JAM_BENCH_DAEMON_LOG"); path != "" {
		f, err := os.Create(path)
		require.NoError(t, err)
		defer f.Close()
		o.DaemonLog = f
	}
	res, err := Run(t.Context(), o)
	t.Log(log.String())
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.Empty(t, res[0].Skipped)
}

func TestWriteTable(t *testing.T) {
	r := Result{Harness: "claude", Direct: Figures{Count: 3, P50: 80 * time.Millisecond, P90: 90 * time.Millisecond, P99: 95 * time.Millisecond},
		Reply:   Figures{Count: 3, P50: 230 * time.Millisecond, P90: 250 * time.Millisecond, P99: 300 * time.Millisecond},
		Settled: Figures{Count: 3, P50: 240 * time.Millisecond, P99: 310 * time.Millisecond}}
	var b strings.Builder
	require.NoError(t, WriteTable(&b, []Result{r, {Harness: "codex", Skipped: "not installed: JAM_CODEX is not set"}}, true))
	require.Contains(t, b.String(), "| claude | 3 | 80 | 90 | 95 | 230 | 250 | 300 | 240 | 310 | +150 | +205 | no |")
	require.Contains(t, b.String(), "| codex | — | skipped: not installed: JAM_CODEX is not set |")
	b.Reset()
	r.Reply.P50 = 150 * time.Millisecond
	require.NoError(t, WriteTable(&b, []Result{r}, false))
	require.Contains(t, b.String(), "+70")
	require.Contains(t, b.String(), "yes")
}

// TestGuard: the fixture's Skip and Fatal end the guarded function as an
// errSkipped and as an error, its Cleanup runs last first, and any other
// panic passes through.
func TestGuard(t *testing.T) {
	f := &fixture{}
	var order []int
	f.Cleanup(func() { order = append(order, 1) })
	f.Cleanup(func() { order = append(order, 2) })
	err := guard(func() { f.Skipf("no %s", "cli"); t.Fatal("not reached") })
	require.ErrorIs(t, err, errSkipped)
	require.ErrorContains(t, err, "no cli")
	err = guard(func() { f.Fatalf("bad %d", 1) })
	require.EqualError(t, err, "bad 1")
	require.False(t, errors.Is(err, errSkipped))
	require.NoError(t, guard(func() {}))
	require.PanicsWithValue(t, "other", func() { _ = guard(func() { panic("other") }) })
	dir := f.TempDir()
	require.DirExists(t, dir)
	f.close()
	require.Equal(t, []int{2, 1}, order[:2])
	require.NoDirExists(t, dir)
}
