package jam_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
)

func TestTurnState_Terminal(t *testing.T) {
	t.Parallel()
	terminal := map[jam.TurnState]bool{
		jam.TurnSucceeded: true, jam.TurnFailed: true, jam.TurnCancelled: true, jam.TurnInterrupted: true,
	}
	require.Len(t, jam.TurnStates, 8)
	for _, s := range jam.TurnStates {
		require.Equal(t, terminal[s], s.Terminal(), "state %s", s)
	}
}

func TestParseEnum(t *testing.T) {
	t.Parallel()
	got, err := jam.ParseEnum("routing", "steer", jam.Routings)
	require.NoError(t, err)
	require.Equal(t, jam.RoutingSteer, got)

	_, err = jam.ParseEnum("routing", "shout", jam.Routings)
	require.ErrorIs(t, err, jam.ErrInvalid)
	require.ErrorContains(t, err, `unknown routing "shout"`)
}

func TestParseSessionRole(t *testing.T) {
	t.Parallel()
	for _, r := range jam.SessionRoles {
		got, err := jam.ParseSessionRole(string(r))
		require.NoError(t, err)
		require.Equal(t, r, got)
	}
	for _, bad := range []string{"", "Review", "reviewer", " review"} {
		_, err := jam.ParseSessionRole(bad)
		require.ErrorIs(t, err, jam.ErrInvalid, "%q", bad)
	}
}

func TestTurnState_moves(t *testing.T) {
	t.Parallel()
	for _, from := range jam.TurnStates {
		for _, to := range jam.TurnStates {
			ok := from.CanMoveTo(to)
			if from.Terminal() && ok {
				t.Errorf("terminal %s moves to %s", from, to)
			}
			if from == to && ok {
				t.Errorf("%s moves to itself", from)
			}
			if to == jam.TurnQueued && ok {
				t.Errorf("%s moves back to queued", from)
			}
		}
		if !from.Terminal() && !from.CanMoveTo(jam.TurnCancelled) && !from.CanMoveTo(jam.TurnCancelling) {
			t.Errorf("%s cannot be cancelled", from)
		}
	}
	if !jam.TurnRunning.CanMoveTo(jam.TurnInterrupted) || jam.TurnQueued.CanMoveTo(jam.TurnRunning) {
		t.Error("running must be interruptible and queued must prepare before it runs")
	}
	if !jam.TurnRunning.Active() || jam.TurnQueued.Active() || jam.TurnSucceeded.Active() {
		t.Error("active states")
	}
}
