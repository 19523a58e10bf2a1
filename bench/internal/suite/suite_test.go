package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/bench/internal/footprint"
	"github.com/jamhq/jam/bench/internal/harnessturn"
	"github.com/jamhq/jam/bench/internal/ingest"
	"github.com/jamhq/jam/bench/internal/measure"
	"github.com/jamhq/jam/bench/internal/recovery"
	"github.com/jamhq/jam/internal/realagent"
)

// TestMain doubles as the footprint child when a test re-executes the
// binary.
func TestMain(m *testing.M) {
	realagent.RunBridgeIfAsked()
	harnessturn.RunDemoIfAsked()
	if os.Getenv(footprint.ChildEnv) != "" || os.Getenv(recovery.ChildEnv) != "" {
		os.Exit(Main(context.Background(), nil, os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

func TestMain_flags(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	require.Equal(t, 2, Main(t.Context(), []string{"--only", "nope"}, &out, &errb))
	require.Contains(t, errb.String(), `unknown scenario "nope"`)
	require.Equal(t, 0, Main(t.Context(), []string{"--help"}, &out, &errb))
	require.Contains(t, errb.String(), "Usage: jambench")
	require.Equal(t, 2, Main(t.Context(), []string{"--bogus"}, &out, &errb))
}

// TestMain_quickFanout runs one real scenario through the command and
// checks the table and the JSON document.
func TestMain_quickFanout(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "out.json")
	var out, errb bytes.Buffer
	require.Equal(t, 0, Main(t.Context(), []string{"--quick", "--only", "fanout", "--json", file}, &out, &errb), errb.String())
	require.Contains(t, out.String(), "events/s to 10 subscribers")
	var rep Report
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	require.True(t, rep.Quick)
	require.Len(t, rep.Rows, 4)
	require.Positive(t, rep.Rows[0].Jam)
	require.NotEmpty(t, rep.Machine.LoadBefore)
}

// TestMain_quickHarnessTurn runs the harness-turn scenario as --quick
// does (the demo agent, no CLI) and checks its rows and its own table.
func TestMain_quickHarnessTurn(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	require.Equal(t, 0, Main(t.Context(), []string{"--quick", "--only", "harness-turn", "--turns", "3"}, &out, &errb), errb.String())
	require.Contains(t, out.String(), "turn through jam, demo, 3 turns")
	require.Contains(t, out.String(), "overhead p50 vs target (ms)")
	require.Contains(t, out.String(), "first turn jam")
	require.Equal(t, 2, Main(t.Context(), []string{"--harnesses", "emacs"}, &out, &errb))
	require.Contains(t, errb.String(), `unknown harness "emacs"`)
}

func TestTable(t *testing.T) {
	t.Parallel()
	rows := []Row{
		row("s", "acked msgs/s", "msgs/s", 12345.6, 500, "file spool", "higher"),
		row("s", "ack p99", "ms", 2, 4, "file spool", "lower"),
		row("t", "x", "n", 1, 0, "none", "higher"),
	}
	require.InDelta(t, 24.69, rows[0].Ratio, 0.01)
	var b strings.Builder
	require.NoError(t, printTable(&b, rows))
	require.Contains(t, b.String(), "12,346")
	require.Contains(t, b.String(), "24.7× ↑")
	require.Contains(t, b.String(), "0.50× ↓")
	require.Contains(t, b.String(), "—")
	b.Reset()
	markdownTable(&b, rows)
	require.Contains(t, b.String(), "| s | acked msgs/s (msgs/s) | 12,346 | 500 file spool | 24.7× ↑ |")
	require.Contains(t, b.String(), "|  | ack p99 (ms) | 2.00 | 4.00 file spool | 0.50× ↓ |", "a repeated scenario is left blank")
}

func TestMedian(t *testing.T) {
	t.Parallel()
	r := func(v float64) ingest.Result { return ingest.Result{Stats: measure.Stats{PerSec: v}} }
	require.InDelta(t, 2.0, median([]ingest.Result{r(3), r(1), r(2)}).PerSec, 0)
	require.InDelta(t, 1.0, median([]ingest.Result{r(3), r(1)}).PerSec, 0)
	require.InDelta(t, 5.0, median([]ingest.Result{r(5)}).PerSec, 0)
}
