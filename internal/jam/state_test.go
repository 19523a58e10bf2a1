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
