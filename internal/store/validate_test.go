package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// The validators are the limits every dialect enforces: these tables pin
// each rule (its sentinel and the words of its error) without a database,
// so a dialect that calls them may rely on them.

// vcase mutates a valid base record into one the validator refuses.
type vcase[T any] struct {
	name string
	mut  func(*T)
	want string // a part of the error text
	is   error  // the sentinel; jam.ErrInvalid when nil
}

// runTable checks that base passes and that every case fails as stated.
// A case must replace, not modify, a slice of the base.
func runTable[T any](t *testing.T, base T, check func(T) error, cases []vcase[T]) {
	t.Helper()
	require.NoError(t, check(base), "the base record is valid")
	prefix := strings.TrimPrefix(fmt.Sprintf("%T", base), "store.")
	for _, tc := range cases {
		t.Run(prefix+"/"+tc.name, func(t *testing.T) {
			v := base
			tc.mut(&v)
			err := check(v)
			is := tc.is
			if is == nil {
				is = jam.ErrInvalid
			}
			require.ErrorIs(t, err, is)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// canonical adapts a Canonical method to runTable.
func canonical[T any](f func(T) (T, error)) func(T) error {
	return func(v T) error { _, err := f(v); return err }
}

var (
	minter   = jam.NewMinter(nil, nil)
	ws       = jam.New[jam.WorkspaceID](minter)
	acct     = jam.New[jam.AccountID](minter)
	peer     = jam.PeerKey{Profile: "team", Scope: "agent"}
	now      = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	uuidA    = "5f0c6c8e-2f6b-4d8a-9b1e-0a4c7e2d9f31"
	uuidB    = "00000000-0000-4000-8000-000000000001"
	uuidC    = "00000000-0000-4000-8000-000000000002"
	badUTF8  = "a\xffb"
	withNUL  = "a\x00b"
	sealed   = []byte("sealed")
	tooLong  = func(n int) string { return strings.Repeat("x", n+1) }
	upperOfA = strings.ToUpper(uuidA)
)

func TestValidateFields(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"textUTF8", store.ValidateText("name", badUTF8), "name is not valid UTF-8"},
		{"textNUL", store.ValidateText("name", withNUL), "name contains a NUL byte"},
		{"requiredEmpty", store.ValidateRequiredText("alias", ""), "alias is empty"},
		{"requiredNUL", store.ValidateRequiredText("alias", withNUL), "alias contains a NUL byte"},
		{"zeroTime", store.ValidateTime("created at", time.Time{}), "created at is zero"},
		{"workspaceEmpty", store.ValidateWorkspaceID(""), "workspace id is empty"},
		{"workspaceMalformed", store.ValidateWorkspaceID("ws_x"), `id "ws_x"`},
		{"scopeZeroKey", store.ValidateScope(ws, jam.PeerKey{}), "peer key is empty"},
		{"scopeBadKey", store.ValidateScope(ws, jam.PeerKey{Profile: "p", Scope: "a/b"}), "character '/' is not allowed"},
		{"laneRoom", func() error { _, err := store.ValidateLane(ws, peer, "lobby"); return err }(), `room id "lobby" is not a UUID`},
		{"messageKey", func() error { _, err := store.ValidateMessageKey(ws, peer, ""); return err }(), "message id"},
		{"accountKeyProfile", store.ValidateAccountKey(ws, ""), "profile is empty"},
		{"accountRef", store.ValidateAccountRef(ws, "acct_x"), `id "acct_x"`},
		{"roomKey", func() error { _, err := store.ValidateRoomKey(ws, acct, ""); return err }(), "room id"},
		{"bindingKey", store.ValidateBindingKey(ws, ""), `lacks the prefix "bind`},
		{"settingKeyEmpty", store.ValidateSettingKey(ws, ""), "key is empty"},
		{"settingKeyLong", store.ValidateSettingKey(ws, tooLong(store.MaxSettingKeyLen)), "limit 128"},
		{"settingKeyNUL", store.ValidateSettingKey(ws, withNUL), "key contains a NUL byte"},
		{"worktreeState", store.ValidateWorktreeState("gone"), `worktree state "gone"`},
		{"eventKindEmpty", store.ValidateEventKind(""), "event kind is empty"},
		{"eventKindLong", store.ValidateEventKind(tooLong(store.MaxEventKindLen)), "longer than 64 bytes"},
		{"eventKindUpper", store.ValidateEventKind("Message.queued"), "character 'M' is not allowed"},
		{"sessionThreadNUL", store.ValidateSessionThread(withNUL, now), "provider thread contains a NUL byte"},
		{"sessionThreadTime", store.ValidateSessionThread("t", time.Time{}), "time is zero"},
		{"leaseEndReason", store.ValidateLeaseEnd(badUTF8, now), "reason is not valid UTF-8"},
		{"leaseEndTime", store.ValidateLeaseEnd("done", time.Time{}), "time is zero"},
		{"eventListLimitZero", store.ValidateEventListLimit(0), "limit 0 is outside 1 to 10000"},
		{"eventListLimitOver", store.ValidateEventListLimit(store.MaxEventListLimit + 1), "limit 10001 is outside 1 to 10000"},
		{"eventPruneKeep", store.ValidateEventPrune(0, now), "keep 0 must be positive"},
		{"eventPruneTime", store.ValidateEventPrune(1, time.Time{}), "zero time"},
		{"listLimitNegative", func() error { _, err := store.ListLimit(-1, 10); return err }(), "limit -1 is negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorIs(t, tt.err, jam.ErrInvalid)
			require.ErrorContains(t, tt.err, tt.want)
		})
	}
	for _, tt := range []struct{ limit, want int }{{0, 10}, {3, 3}, {10, 10}, {11, 10}} {
		got, err := store.ListLimit(tt.limit, 10)
		require.NoError(t, err)
		require.Equal(t, tt.want, got, "limit %d", tt.limit)
	}
	require.NoError(t, store.ValidateEventListLimit(store.MaxEventListLimit))
	room, err := store.ValidateLane(ws, peer, jam.RoomID(upperOfA))
	require.NoError(t, err)
	require.Equal(t, jam.RoomID(uuidA), room, "a room id comes back canonical")
}
