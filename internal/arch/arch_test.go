package arch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type layer int

const (
	vocabulary layer = iota + 1
	mechanism
	persistence
	domain
	adapter
	edge
	root
	command // package main under cmd/
)

func (l layer) String() string {
	return [...]string{"", "vocabulary", "mechanism", "persistence", "domain", "adapter", "edge", "root", "command"}[l]
}

// layers places every package of the module. A key ending in "/..." covers
// that directory and everything below it.
var layers = map[string]layer{
	"internal/jam":                 vocabulary,
	"internal/version":             mechanism,
	"internal/config":              mechanism,
	"internal/datadir":             mechanism,
	"internal/connlimit":           mechanism,
	"internal/arch":                mechanism,
	"internal/mention":             mechanism,
	"internal/band/phoenix":        mechanism,
	"internal/band/protocol":       mechanism,
	"internal/band/bandtest":       mechanism,
	"internal/openapicheck":        mechanism,
	"internal/harness":             mechanism,
	"internal/harness/harnesstest": mechanism,
	"internal/harness/jsonrpc":     mechanism,
	"internal/harness/procio":      mechanism,
	"internal/shellwords":          mechanism,
	"internal/proc":                mechanism,
	"internal/secret":              mechanism,
	"internal/sqlitedb":            mechanism,
	"internal/metrics":             mechanism,
	"internal/metrics/metricstest": mechanism,
	"internal/git":                 mechanism,
	"internal/git/gittest":         mechanism,
	"internal/fakemodel":           mechanism,
	"internal/realagent":           mechanism,
	"internal/store":               persistence,
	"internal/store/...":           persistence,
	"internal/spool":               domain,
	"internal/engine":              domain,
	"internal/working":             domain,
	"internal/session":             domain,
	"internal/worktree":            domain,
	"internal/changeset":           domain,
	"internal/connection":          domain,
	"internal/delegation":          domain,
	"internal/pricing":             domain,
	"internal/agentconf":           domain,
	"internal/roomfeed":            domain,
	"internal/events":              domain,
	"internal/approval":            domain,
	"internal/band":                adapter,
	"internal/hub":                 adapter,
	"internal/hub/...":             adapter,
	"internal/harness/acp":         adapter,
	"internal/harness/claude":      adapter,
	"internal/harness/codex":       adapter,
	"internal/demoagent":           adapter,
	"internal/forge":               adapter,
	"internal/forge/forgetest":     adapter,
	"internal/delivery":            adapter,
	"internal/mcp":                 adapter,
	"internal/job":                 domain,
	"internal/executor":            mechanism,
	"internal/executor/...":        adapter,
	"internal/api":                 edge,
	"internal/api/wire":            edge,
	"internal/api/apiclient":       edge,
	"internal/api/apitest":         edge,
	"internal/cli":                 edge,
	"internal/webui":               edge,
	"internal/daemon":              root,
	"internal/jamtest":             root,
	"cmd/...":                      command,
}

// cliForbidden are the packages nothing the CLI links may depend on.
var cliForbidden = []string{"internal/store", "internal/api", "internal/daemon"}

// pkg is the part of `go list -json` the rules read.
type pkg struct {
	ImportPath string
	Dir        string
	Name       string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

func listModule(t *testing.T) (module string, pkgs []pkg) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m").Output()
	require.NoError(t, err)
	module = strings.TrimSpace(string(out))
	cmd := exec.Command("go", "list", "-json", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	require.NoError(t, err, stderr.String())
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		require.NoError(t, dec.Decode(&p))
		pkgs = append(pkgs, p)
	}
	require.NotEmpty(t, pkgs)
	return module, pkgs
}

// layerOf finds the layer of a module-relative path.
func layerOf(table map[string]layer, rel string) (layer, bool) {
	if l, ok := table[rel]; ok {
		return l, true
	}
	best, found := "", false
	for k := range table {
		prefix, ok := strings.CutSuffix(k, "/...")
		if ok && (rel == prefix || strings.HasPrefix(rel, prefix+"/")) && len(prefix) > len(best) {
			best, found = k, true
		}
	}
	if !found {
		return 0, false
	}
	return table[best], true
}

// mayImport says whether a package in layer from may import one in layer to.
func mayImport(from, to layer) bool {
	switch from {
	case command, root:
		return true
	case edge:
		return to != adapter && to <= edge
	default:
		return to <= from
	}
}

// checkLayers returns one message per broken import rule.
func checkLayers(module string, pkgs []pkg, table map[string]layer) []string {
	var bad []string
	rel := func(path string) (string, bool) {
		if path == module {
			return ".", true
		}
		return strings.CutPrefix(path, module+"/")
	}
	for _, p := range pkgs {
		from, _ := rel(p.ImportPath)
		fl, ok := layerOf(table, from)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s is not in the layer table of internal/arch", from))
			continue
		}
		for _, imp := range p.Imports {
			to, internal := rel(imp)
			if !internal {
				if fl == vocabulary && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
					bad = append(bad, fmt.Sprintf("%s (vocabulary) imports %s: the vocabulary imports only the standard library", from, imp))
				}
				continue
			}
			tl, ok := layerOf(table, to)
			if !ok {
				continue // reported as that package's own violation
			}
			if !mayImport(fl, tl) {
				bad = append(bad, fmt.Sprintf("%s (%s) imports %s (%s)", from, fl, to, tl))
			}
			if to == "internal/daemon" && fl != command && from != "internal/jamtest" {
				bad = append(bad, fmt.Sprintf("%s imports internal/daemon: only the mains and internal/jamtest may", from))
			}
		}
		if from == "internal/cli" {
			for _, dep := range p.Deps {
				d, internal := rel(dep)
				if !internal {
					continue
				}
				for _, f := range cliForbidden {
					if d == f || strings.HasPrefix(d, f+"/") && !strings.HasPrefix(d, "internal/api/apiclient") && !strings.HasPrefix(d, "internal/api/wire") {
						bad = append(bad, fmt.Sprintf("internal/cli depends on %s: the CLI reaches the daemon only through internal/api/apiclient", d))
					}
				}
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// checkDocs returns one message per package without exactly one package
// comment, or whose comment does not start the conventional way.
func checkDocs(pkgs []pkg) []string {
	var bad []string
	for _, p := range pkgs {
		fset := token.NewFileSet()
		var docs []string
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", p.ImportPath, err))
				continue
			}
			if f.Doc != nil {
				docs = append(docs, name)
				want := "Package " + p.Name + " "
				if p.Name == "main" {
					want = "Command " + filepath.Base(p.Dir) + " "
				}
				if !strings.HasPrefix(f.Doc.Text(), want) {
					bad = append(bad, fmt.Sprintf("%s: package comment in %s must start with %q", p.ImportPath, name, want))
				}
			}
		}
		switch len(docs) {
		case 0:
			bad = append(bad, fmt.Sprintf("%s has no package comment", p.ImportPath))
		case 1:
		default:
			bad = append(bad, fmt.Sprintf("%s has %d package comments (%s); keep one, in doc.go when it is long", p.ImportPath, len(docs), strings.Join(docs, ", ")))
		}
	}
	sort.Strings(bad)
	return bad
}

func TestLayers(t *testing.T) {
	t.Parallel()
	module, pkgs := listModule(t)
	require.Empty(t, checkLayers(module, pkgs, layers), "import rules broken")
}

func TestPackageDocs(t *testing.T) {
	t.Parallel()
	_, pkgs := listModule(t)
	require.Empty(t, checkDocs(pkgs), "package comments")
}

// TestCheckLayers_catchesViolations proves the checker fails on each kind of
// broken rule, so a passing TestLayers means something.
func TestCheckLayers_catchesViolations(t *testing.T) {
	t.Parallel()
	const m = "example.com/jam"
	cases := []struct {
		name string
		pkgs []pkg
		want string
	}{
		{name: "vocabulary imports a module", pkgs: []pkg{{ImportPath: m + "/internal/jam", Imports: []string{"github.com/google/uuid"}}}, want: "the vocabulary imports only the standard library"},
		{name: "vocabulary imports a mechanism", pkgs: []pkg{{ImportPath: m + "/internal/jam", Imports: []string{m + "/internal/config"}}}, want: "internal/jam (vocabulary) imports internal/config (mechanism)"},
		{name: "domain imports adapter", pkgs: []pkg{{ImportPath: m + "/internal/spool", Imports: []string{m + "/internal/hub"}}}, want: "internal/spool (domain) imports internal/hub (adapter)"},
		{name: "edge imports adapter", pkgs: []pkg{{ImportPath: m + "/internal/api", Imports: []string{m + "/internal/hub"}}}, want: "internal/api (edge) imports internal/hub (adapter)"},
		{name: "store imports api", pkgs: []pkg{{ImportPath: m + "/internal/store/sqlite", Imports: []string{m + "/internal/api/wire"}}}, want: "(persistence) imports internal/api/wire (edge)"},
		{name: "cli links the store", pkgs: []pkg{{ImportPath: m + "/internal/cli", Deps: []string{m + "/internal/store/sqlite"}}}, want: "internal/cli depends on internal/store/sqlite"},
		{name: "cli links the api server", pkgs: []pkg{{ImportPath: m + "/internal/cli", Deps: []string{m + "/internal/api"}}}, want: "internal/cli depends on internal/api:"},
		{name: "edge imports daemon", pkgs: []pkg{{ImportPath: m + "/internal/cli", Imports: []string{m + "/internal/daemon"}}}, want: "only the mains and internal/jamtest may"},
		{name: "unplaced package", pkgs: []pkg{{ImportPath: m + "/internal/misc"}}, want: "internal/misc is not in the layer table"},
	}
	table := map[string]layer{}
	for k, v := range layers {
		table[k] = v
	}
	table["internal/spool"] = domain
	table["internal/hub"] = adapter
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bad := checkLayers(m, tc.pkgs, table)
			require.NotEmpty(t, bad)
			require.Contains(t, strings.Join(bad, "\n"), tc.want)
		})
	}
	t.Run("allowed imports pass", func(t *testing.T) {
		t.Parallel()
		ok := []pkg{
			{ImportPath: m + "/internal/cli", Imports: []string{m + "/internal/api/apiclient", m + "/internal/config"}, Deps: []string{m + "/internal/api/apiclient", m + "/internal/api/wire", m + "/internal/jam"}},
			{ImportPath: m + "/internal/daemon", Imports: []string{m + "/internal/hub", m + "/internal/api"}},
			{ImportPath: m + "/cmd/jamd", Imports: []string{m + "/internal/daemon"}},
			{ImportPath: m + "/internal/spool", Imports: []string{m + "/internal/store", m + "/internal/jam", "github.com/google/uuid"}},
		}
		require.Empty(t, checkLayers(m, ok, table))
	})
}

// TestCheckDocs_catchesViolations proves the doc checker fails on a package
// without a comment, with two, and with a misnamed one.
func TestCheckDocs_catchesViolations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, src string) {
		require.NoError(t, writeFile(filepath.Join(dir, name), src))
	}
	write("none.go", "package x\n")
	write("a.go", "// Package x does a.\npackage x\n")
	write("b.go", "// Package x does b.\npackage x\n")
	write("wrong.go", "// This package does things.\npackage x\n")
	cases := []struct {
		name  string
		files []string
		want  string
	}{
		{name: "no comment", files: []string{"none.go"}, want: "has no package comment"},
		{name: "two comments", files: []string{"a.go", "b.go"}, want: "has 2 package comments"},
		{name: "wrong start", files: []string{"wrong.go"}, want: `must start with "Package x "`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bad := checkDocs([]pkg{{ImportPath: "example.com/x", Dir: dir, Name: "x", GoFiles: tc.files}})
			require.Contains(t, strings.Join(bad, "\n"), tc.want)
		})
	}
	require.Empty(t, checkDocs([]pkg{{ImportPath: "example.com/x", Dir: dir, Name: "x", GoFiles: []string{"a.go", "none.go"}}}))
}
