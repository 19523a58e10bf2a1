package jam_test

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIDs_doNotMix type-checks this package together with code that passes
// one kind of ID where another is expected, and requires the compiler to
// refuse it.
func TestIDs_doNotMix(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		code string
	}{
		{name: "turn as session", code: `func takeSession(SessionID) {}
func _() { var t TurnID; takeSession(t) }`},
		{name: "room as identity", code: `func takeIdentity(IdentityID) {}
func _() { var r RoomID; takeIdentity(r) }`},
		{name: "message as platform message", code: `func takePlatform(PlatformMessageID) {}
func _() { var m MessageID; takePlatform(m) }`},
		{name: "string as peer key", code: `func takePeer(PeerKey) {}
func _() { takePeer("default/coder") }`},
	}
	files := parsePackage(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fset := token.NewFileSet()
			var all []*ast.File
			for name, src := range files {
				f, err := parser.ParseFile(fset, name, src, 0)
				require.NoError(t, err)
				all = append(all, f)
			}
			extra, err := parser.ParseFile(fset, "mix.go", "package jam\n"+tc.code, 0)
			require.NoError(t, err)
			all = append(all, extra)
			conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
			_, err = conf.Check("jam", fset, all, nil)
			require.Error(t, err, "mixing ID kinds must not compile")
			require.Contains(t, err.Error(), "cannot use")
		})
	}
}

func parsePackage(t *testing.T) map[string][]byte {
	t.Helper()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	files := map[string][]byte{}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		b, err := os.ReadFile(n)
		require.NoError(t, err)
		files[n] = b
	}
	return files
}
