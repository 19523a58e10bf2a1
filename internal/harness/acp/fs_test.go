package acp

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness/jsonrpc"
)

func TestConfineTo(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root, err := sessionRoot(base)
	require.NoError(t, err)
	outside := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "src", "a.go"), []byte("x"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "escape")))
	require.NoError(t, os.Symlink(filepath.Join(root, "src"), filepath.Join(root, "inner")))

	tests := []struct {
		name, path string
		want       string // "" means refused
	}{
		{name: "file", path: filepath.Join(root, "src", "a.go"), want: filepath.Join(root, "src", "a.go")},
		{name: "new nested file", path: filepath.Join(root, "new", "dir", "b.go"), want: filepath.Join(root, "new", "dir", "b.go")},
		{name: "the root itself", path: root, want: root},
		{name: "dot-dot inside", path: filepath.Join(root, "src", "..", "src", "a.go"), want: filepath.Join(root, "src", "a.go")},
		{name: "symlink inside", path: filepath.Join(root, "inner", "a.go"), want: filepath.Join(root, "src", "a.go")},
		{name: "dot-dot out", path: root + "/../x", want: ""},
		{name: "sibling with the root as prefix", path: root + "-other/x", want: ""},
		{name: "symlink out", path: filepath.Join(root, "escape", "secret"), want: ""},
		{name: "symlink out, new file", path: filepath.Join(root, "escape", "new", "file"), want: ""},
		{name: "relative", path: "src/a.go", want: ""},
		{name: "absolute elsewhere", path: "/etc/passwd", want: ""},
		{name: "nul byte", path: root + "/a\x00b", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := confineTo(root, tt.path)
			if tt.want == "" {
				var rpcErr *jsonrpc.Error
				require.True(t, errors.As(err, &rpcErr), "want a refusal, got %q, %v", got, err)
				require.Equal(t, jsonrpc.CodeInvalidParams, rpcErr.Code)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestChoose(t *testing.T) {
	t.Parallel()
	opts := []PermissionOption{{OptionID: "always", Kind: AllowAlways}, {OptionID: "once", Kind: AllowOnce}, {OptionID: "reject", Kind: RejectOnce}}
	require.Equal(t, PermissionOutcome{Outcome: "selected", OptionID: "once"}, choose(PolicyAllow, opts), "allow_once first, by kind")
	require.Equal(t, PermissionOutcome{Outcome: "selected", OptionID: "reject"}, choose(PolicyReject, opts))
	require.Equal(t, PermissionOutcome{Outcome: "selected", OptionID: "always"}, choose(PolicyAllow, opts[:1]))
	require.Equal(t, PermissionOutcome{Outcome: "cancelled"}, choose(PolicyReject, opts[:2]), "no option of an acceptable kind")
	_, err := ParsePolicy("maybe")
	require.Error(t, err)
}

func TestSliceLines(t *testing.T) {
	t.Parallel()
	n := func(i int) *int { return &i }
	s := "a\nb\nc\n"
	require.Equal(t, s, sliceLines(s, nil, nil))
	require.Equal(t, "b\nc\n", sliceLines(s, n(2), nil))
	require.Equal(t, "b\n", sliceLines(s, n(2), n(1)))
	require.Equal(t, "", sliceLines(s, n(9), n(1)))
	require.Equal(t, "a\n", sliceLines(s, nil, n(1)))
}

func TestWriteFileKeepsMode(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "x", "run.sh")
	require.NoError(t, writeFile(p, "one"))
	require.NoError(t, os.Chmod(p, 0o755))
	require.NoError(t, writeFile(p, "two"))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	b, _ := os.ReadFile(p)
	require.Equal(t, "two", string(b))
	require.Error(t, writeFile(filepath.Dir(p), "dir"), "not a regular file")
}
