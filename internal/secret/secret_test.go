package secret

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testBox returns a Box with a fresh key file in a temp dir.
func testBox(t testing.TB) *Box {
	t.Helper()
	b, err := LoadOrCreate(filepath.Join(t.TempDir(), "jam.key"))
	require.NoError(t, err)
	return b
}

func TestLoadOrCreate_createsPrivateKeyAndReloadsIt(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "jam.key")
	first, err := LoadOrCreate(path)
	require.NoError(t, err)

	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.Equal(t, int64(KeySize), fi.Size())
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")

	sealed := first.Seal([]byte("hello"), []byte("aad"))
	second, err := LoadOrCreate(path)
	require.NoError(t, err)
	plain, err := second.Open(sealed, []byte("aad"))
	require.NoError(t, err)
	require.Equal(t, []byte("hello"), plain)
}

func TestLoadOrCreate_concurrentCreatorsShareOneKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "jam.key")
	const n = 8
	boxes := make([]*Box, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { boxes[i], errs[i] = LoadOrCreate(path) })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
	}
	sealed := boxes[0].Seal([]byte("x"), nil)
	for i, b := range boxes {
		_, err := b.Open(sealed, nil)
		require.NoError(t, err, "box %d has another key", i)
	}
}

func TestLoadOrCreate_refuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
		wantErr string
	}{
		{
			name:    "group readable",
			prepare: func(t *testing.T, path string) { writeKey(t, path, KeySize, 0o640) },
			wantErr: "has mode 0640, readable by group or others; run chmod 600 ",
		},
		{
			name:    "world readable",
			prepare: func(t *testing.T, path string) { writeKey(t, path, KeySize, 0o604) },
			wantErr: "run chmod 600",
		},
		{
			name:    "short",
			prepare: func(t *testing.T, path string) { writeKey(t, path, 16, 0o600) },
			wantErr: "has 16 bytes, want 32",
		},
		{
			name:    "long",
			prepare: func(t *testing.T, path string) { writeKey(t, path, 64, 0o600) },
			wantErr: "has 33 bytes, want 32",
		},
		{
			name:    "directory",
			prepare: func(t *testing.T, path string) { require.NoError(t, os.Mkdir(path, 0o700)) },
			wantErr: "is not a regular file",
		},
		{
			name:    "missing directory",
			prepare: func(t *testing.T, path string) { require.NoError(t, os.Remove(filepath.Dir(path))) },
			wantErr: "create key file",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			require.NoError(t, os.Mkdir(dir, 0o700))
			path := filepath.Join(dir, "jam.key")
			tt.prepare(t, path)
			b, err := LoadOrCreate(path)
			require.ErrorContains(t, err, tt.wantErr)
			require.ErrorContains(t, err, path, "the error names the file")
			require.Nil(t, b)
		})
	}
}

func writeKey(t *testing.T, path string, size int, mode os.FileMode) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte{7}, size), 0o600))
	require.NoError(t, os.Chmod(path, mode)) // WriteFile's mode is subject to the umask
}

func TestBox_sealOpen(t *testing.T) {
	t.Parallel()
	b := testBox(t)
	tests := []struct {
		name      string
		plaintext []byte
		aad       []byte
	}{
		{"empty", nil, nil},
		{"no aad", []byte("message"), nil},
		{"aad", []byte("message"), []byte("ws|peer|msg")},
		{"binary", []byte{0, 1, 2, 255}, []byte{0}},
		{"large", bytes.Repeat([]byte("x"), 1<<20), []byte("big")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sealed := b.Seal(tt.plaintext, tt.aad)
			require.Len(t, sealed, len(tt.plaintext)+Overhead)
			require.Equal(t, version1, sealed[0])
			if len(tt.plaintext) > 8 {
				require.NotContains(t, string(sealed), string(tt.plaintext))
			}
			plain, err := b.Open(sealed, tt.aad)
			require.NoError(t, err)
			require.True(t, bytes.Equal(tt.plaintext, plain))

			again := b.Seal(tt.plaintext, tt.aad)
			require.NotEqual(t, sealed, again, "each seal has a fresh nonce")
		})
	}
}

func TestBox_openRejects(t *testing.T) {
	t.Parallel()
	b := testBox(t)
	other := testBox(t)
	aad := []byte("ws|peer|msg")
	sealed := b.Seal([]byte("the message"), aad)
	flip := func(i int) []byte {
		out := bytes.Clone(sealed)
		out[i] ^= 0x01
		return out
	}
	tests := []struct {
		name   string
		box    *Box
		sealed []byte
		aad    []byte
	}{
		{"empty", b, nil, aad},
		{"shorter than the envelope", b, sealed[:Overhead-1], aad},
		{"truncated", b, sealed[:len(sealed)-1], aad},
		{"extended", b, append(bytes.Clone(sealed), 0), aad},
		{"version", b, flip(0), aad},
		{"nonce", b, flip(1), aad},
		{"ciphertext", b, flip(14), aad},
		{"tag", b, flip(len(sealed) - 1), aad},
		{"wrong aad", b, sealed, []byte("ws|peer|other")},
		{"missing aad", b, sealed, nil},
		{"wrong key", other, sealed, aad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			plain, err := tt.box.Open(tt.sealed, tt.aad)
			require.ErrorIs(t, err, ErrCorrupt)
			require.Nil(t, plain)
		})
	}
}

// FuzzOpen checks that Open never panics, that it opens exactly what Seal
// produced, and that no change to a sealed value, its aad, or arbitrary
// input ever opens: with a key drawn fresh for each run, the only way for
// foreign bytes to open is a forgery.
func FuzzOpen(f *testing.F) {
	b := testBox(f)
	f.Add([]byte("message"), []byte("aad"), []byte{}, uint(0), byte(1), uint(0))
	f.Add([]byte{}, []byte{}, []byte{1}, uint(13), byte(0x80), uint(1))
	f.Add([]byte("a longer message body"), []byte(nil), bytes.Repeat([]byte{1}, Overhead+4), uint(40), byte(0xff), uint(5))
	f.Fuzz(func(t *testing.T, plaintext, aad, raw []byte, pos uint, mask byte, cut uint) {
		sealed := b.Seal(plaintext, aad)
		plain, err := b.Open(sealed, aad)
		if err != nil || !bytes.Equal(plain, plaintext) {
			t.Fatalf("round trip: %v", err)
		}

		if mask != 0 {
			tampered := bytes.Clone(sealed)
			tampered[pos%uint(len(tampered))] ^= mask
			mustNotOpen(t, b, tampered, aad, "flipped byte")
		}
		if c := cut % uint(len(sealed)); c > 0 {
			mustNotOpen(t, b, sealed[:uint(len(sealed))-c], aad, "truncated")
		}
		if len(raw) > 0 {
			mustNotOpen(t, b, append(bytes.Clone(sealed), raw...), aad, "extended")
		}
		mustNotOpen(t, b, sealed, append(bytes.Clone(aad), 0), "longer aad")
		if len(aad) > 0 {
			mustNotOpen(t, b, sealed, aad[:len(aad)-1], "shorter aad")
		}
		mustNotOpen(t, b, raw, aad, "arbitrary input")
	})
}

func mustNotOpen(t *testing.T, b *Box, sealed, aad []byte, what string) {
	t.Helper()
	plain, err := b.Open(sealed, aad)
	if err == nil {
		t.Fatalf("%s opened: %q", what, plain)
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: error %v does not wrap ErrCorrupt", what, err)
	}
	if plain != nil {
		t.Fatalf("%s: failed open returned %d bytes", what, len(plain))
	}
}
