package datadir_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/jam"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPrepare(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	file := filepath.Join(root, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))

	cases := []struct {
		name    string
		dir     string
		wantErr string
	}{
		{name: "new nested", dir: filepath.Join(root, "a", "b")},
		{name: "existing", dir: root},
		{name: "is a file", dir: file, wantErr: "is not a directory"},
		{name: "under a file", dir: filepath.Join(file, "sub"), wantErr: "cannot be created: not a directory"},
		{name: "read-only file system", dir: "/proc/jam-test", wantErr: "cannot be created"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := datadir.Prepare(tc.dir)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, jam.ErrInvalid)
				require.ErrorContains(t, err, "data directory "+tc.dir+" "+tc.wantErr)
				return
			}
			require.NoError(t, err)
			st, err := os.Stat(tc.dir)
			require.NoError(t, err)
			require.True(t, st.IsDir())
		})
	}
}

func TestPrepare_newDirIsPrivate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "d")
	require.NoError(t, datadir.Prepare(dir))
	st, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())
}

func TestAcquire_excludesSecondHolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := datadir.Acquire(dir)
	require.NoError(t, err)
	require.Equal(t, os.Getpid(), datadir.HolderPID(dir))

	// flock locks belong to open file descriptions, so a second open in
	// the same process conflicts just as another process would.
	_, err = datadir.Acquire(dir)
	require.ErrorIs(t, err, datadir.ErrLocked)
	require.ErrorContains(t, err, "is already running on "+dir)

	require.NoError(t, l.Release())
	require.NoError(t, l.Release(), "release twice")
	require.Zero(t, datadir.HolderPID(dir))

	l2, err := datadir.Acquire(dir)
	require.NoError(t, err)
	require.NoError(t, l2.Release())
}

// TestPrepare_existingLooseDirIsMadePrivate: a directory made beforehand
// with a umask of 022 (mode 0755) is tightened to 0700.
func TestPrepare_existingLooseDirIsMadePrivate(t *testing.T) {
	t.Parallel()
	for _, mode := range []os.FileMode{0o755, 0o777, 0o710} {
		dir := filepath.Join(t.TempDir(), "d")
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, os.Chmod(dir, mode))
		require.NoError(t, datadir.Prepare(dir))
		st, err := os.Stat(dir)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), st.Mode().Perm(), "from %o", mode)
	}
}

// TestListenUnix_socketIsPrivateFromTheStart: the socket file is open to
// its owner only from the moment bind creates it, before any chmod, even
// under a permissive umask, and mode 0600 once ListenUnix returns.
func TestListenUnix_socketIsPrivateFromTheStart(t *testing.T) {
	dir, err := os.MkdirTemp("", "jamdd") // short: unix socket paths are limited
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	old := syscall.Umask(0o000)
	defer syscall.Umask(old)
	var atBind os.FileMode
	defer datadir.SetAfterBind(func(path string) {
		if st, err := os.Stat(path); err == nil {
			atBind = st.Mode()
		}
	})()
	path := filepath.Join(dir, "s.sock")
	l, err := datadir.ListenUnix(path)
	require.NoError(t, err)
	defer l.Close()
	require.Equal(t, os.ModeSocket, atBind.Type())
	require.Zero(t, atBind.Perm()&0o077, "mode %04o right after bind", atBind.Perm())
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	require.Equal(t, 0o000, syscall.Umask(0o000), "the process umask is restored")
}
