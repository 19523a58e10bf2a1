package daemon

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/agentconf"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// TestSessionOverrides: a room's configuration is validated as a
// template's is, a per-process key is refused under placement shared when
// it differs from the template's, and what the session records is only
// what it runs differently.
func TestSessionOverrides(t *testing.T) {
	t.Parallel()
	shared := store.TemplateConfig{Harness: "acp", Command: []string{"agent", "--acp"}, Repo: "/src/main", Placement: jam.PlacementShared, Permission: "allow"}
	dedicated := shared
	dedicated.Placement = jam.PlacementDedicated
	for _, tc := range []struct {
		name    string
		desired store.TemplateConfig
		in      wire.SessionOverrides
		want    store.SessionOverrides
		wantErr error
		msg     string
	}{
		{name: "nothing", desired: shared},
		{name: "repository, shared", desired: shared, in: wire.SessionOverrides{Repo: "/src/other"}, want: store.SessionOverrides{Repo: "/src/other"}},
		{name: "repository, dedicated", desired: dedicated, in: wire.SessionOverrides{Repo: "/src/other"}, want: store.SessionOverrides{Repo: "/src/other"}},
		{name: "relative repository", desired: shared, in: wire.SessionOverrides{Repo: "src/other"}, wantErr: jam.ErrInvalid, msg: "not an absolute path"},
		{name: "relative repository, dedicated", desired: dedicated, in: wire.SessionOverrides{Repo: "./x"}, wantErr: jam.ErrInvalid, msg: "not an absolute path"},
		{name: "command, dedicated", desired: dedicated, in: wire.SessionOverrides{Command: []string{"agent", "--fast"}}, want: store.SessionOverrides{Command: []string{"agent", "--fast"}}},
		{name: "command and repository, dedicated", desired: dedicated, in: wire.SessionOverrides{Command: []string{"other"}, Repo: "/r"},
			want: store.SessionOverrides{Command: []string{"other"}, Repo: "/r"}},
		{name: "other command, shared", desired: shared, in: wire.SessionOverrides{Command: []string{"agent", "--fast"}}, wantErr: jam.ErrIncompatible, msg: "placement=dedicated"},
		{name: "other command and a repository, shared", desired: shared, in: wire.SessionOverrides{Command: []string{"x"}, Repo: "/r"}, wantErr: jam.ErrIncompatible},
		{name: "same command, shared, not recorded", desired: shared, in: wire.SessionOverrides{Command: []string{"agent", "--acp"}}},
		{name: "same command with a repository, shared", desired: shared, in: wire.SessionOverrides{Command: []string{"agent", "--acp"}, Repo: "/r"},
			want: store.SessionOverrides{Repo: "/r"}},
		{name: "blank program", desired: dedicated, in: wire.SessionOverrides{Command: []string{"  ", "x"}}, wantErr: jam.ErrInvalid, msg: "needs a command"},
		{name: "blank program, shared", desired: shared, in: wire.SessionOverrides{Command: []string{""}}, wantErr: jam.ErrInvalid},
		{name: "empty command", desired: dedicated, in: wire.SessionOverrides{Command: []string{}}, wantErr: jam.ErrInvalid, msg: "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := sessionOverrides(tc.desired, tc.in)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				if tc.wantErr == jam.ErrIncompatible {
					require.NotErrorIs(t, err, jam.ErrInvalid, "a refusal by placement is not bad input")
				}
				require.ErrorContains(t, err, tc.msg)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// FuzzSessionOverrides: whatever a room asks for, an accepted answer is a
// configuration the agent's placement can run and agentconf.Validate accepts,
// and a refusal carries a stable code.
func FuzzSessionOverrides(f *testing.F) {
	f.Add(false, "", "", "")
	f.Add(true, "/src/other", "agent", "--fast")
	f.Add(false, "rel/path", "agent", "--acp")
	f.Add(false, "/r", " ", "")
	f.Add(true, "/r\x00x", "a\xffb", "")
	f.Fuzz(func(t *testing.T, dedicated bool, repo, program, arg string) {
		c := store.TemplateConfig{Harness: "acp", Command: []string{"agent", "--acp"}, Repo: "/src/main", Placement: jam.PlacementShared, Permission: "allow"}
		if dedicated {
			c.Placement = jam.PlacementDedicated
		}
		in := wire.SessionOverrides{Repo: repo}
		if program != "" || arg != "" {
			in.Command = []string{program}
			if arg != "" {
				in.Command = append(in.Command, arg)
			}
		}
		got, err := sessionOverrides(c, in)
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) && !errors.Is(err, jam.ErrIncompatible) {
				t.Fatalf("an unclassified refusal: %v", err)
			}
			return
		}
		if !dedicated && len(got.Command) > 0 {
			t.Fatalf("a shared room recorded its own command %q", got.Command)
		}
		if got.DiffersPerProcess(c) && !dedicated {
			t.Fatalf("accepted a command the shared process does not run")
		}
		if _, err := agentconf.Validate(harnesses, agentconf.Of(got.Apply(c))); err != nil {
			t.Fatalf("accepted %+v, which is not a valid configuration: %v", got, err)
		}
	})
}
