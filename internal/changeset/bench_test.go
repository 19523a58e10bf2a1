package changeset_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/changeset"
	"github.com/jamhq/jam/internal/git"
)

// The benchmarks' repository: benchFiles files of about benchBytes in
// all, a fifth of them binary, in benchDirs directories; and a change of
// benchTouched files. Everything is generated from fixed seeds, so every
// run measures the same trees. The setup runs only under -bench.
const (
	benchFiles   = 5000
	benchBinary  = 1000 // of benchFiles
	benchDirs    = 50
	benchTouched = 500
)

// benchWords are the vocabulary of the text files.
var benchWords = strings.Fields(`func return if else for range var const type struct interface map chan
go defer select case switch default break continue package import error nil true false string int byte
context ctx err value key index count total buffer reader writer path name file tree commit patch`)

// benchRepo is a repository whose HEAD is end and whose HEAD~1 is base.
type benchRepo struct {
	dir       string
	base, end string
	// ten is a commit on top of end that edits 10 text files; the
	// worktree stays at end.
	ten   string
	paths []string // the end tree's regular files, sorted as generated
}

// benchTime is the modification time of every generated file: far enough
// in the past that no index entry is racily clean, so git trusts the
// index's stat information as it does in a worktree at rest.
var benchTime = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

func textFile(r *rand.Rand, size int) []byte {
	var s strings.Builder
	s.Grow(size + 80)
	for s.Len() < size {
		for w := 4 + r.Intn(8); w > 0; w-- {
			s.WriteString(benchWords[r.Intn(len(benchWords))])
			s.WriteByte(' ')
		}
		fmt.Fprintf(&s, "%d\n", r.Intn(1_000_000))
	}
	return []byte(s.String())
}

func binaryFile(r *rand.Rand, size int) []byte {
	b := make([]byte, size)
	r.Read(b)
	b[0] = 0 // git's binary test: a NUL in the first 8,000 bytes
	return b
}

func writeBench(b *testing.B, dir, rel string, data []byte, mode os.FileMode) {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(b, os.WriteFile(p, data, mode))
	require.NoError(b, os.Chmod(p, mode))
	require.NoError(b, os.Chtimes(p, benchTime, benchTime))
}

func isBinaryPath(p string) bool { return strings.HasSuffix(p, ".bin") }

// newBenchRepo makes the repository in b.TempDir: a base commit of
// benchFiles files (text 2–18 KB, binary 20–100 KB; about 100 MB), then an
// end commit touching benchTouched of them: 300 text edits (2 of them
// also made executable), 40 binary edits, 100 added files (70 text, 30
// binary), 58 deleted, one pure rename and one renamed and edited.
func newBenchRepo(b *testing.B) benchRepo {
	b.Helper()
	dir := b.TempDir()
	gitT(b, dir, "init", "-q", "-b", "main")
	r := rand.New(rand.NewSource(1))
	var paths []string
	total := 0
	for i := 0; i < benchFiles; i++ {
		d := fmt.Sprintf("pkg%02d/sub%d", i%benchDirs, i%3)
		var rel string
		var data []byte
		if i%(benchFiles/benchBinary) == 0 {
			rel = fmt.Sprintf("%s/blob%04d.bin", d, i)
			data = binaryFile(r, 20_000+r.Intn(80_000))
		} else {
			rel = fmt.Sprintf("%s/file%04d.go", d, i)
			data = textFile(r, 2_000+r.Intn(16_000))
		}
		total += len(data)
		writeBench(b, dir, rel, data, 0o644)
		paths = append(paths, rel)
	}
	gitT(b, dir, "add", "-A")
	gitT(b, dir, "commit", "-q", "-m", "base")
	repo := benchRepo{dir: dir, base: gitT(b, dir, "rev-parse", "HEAD")}

	// The change, over paths picked from a fixed permutation.
	perm := r.Perm(len(paths))
	var text, bin []string
	for _, k := range perm {
		if isBinaryPath(paths[k]) {
			bin = append(bin, paths[k])
		} else {
			text = append(text, paths[k])
		}
	}
	gone := map[string]bool{}
	touched := 0
	for i, p := range text[:300] {
		full := filepath.Join(dir, filepath.FromSlash(p))
		data, err := os.ReadFile(full)
		require.NoError(b, err)
		lines := strings.SplitAfter(string(data), "\n")
		for k := 0; k < 3; k++ {
			lines[r.Intn(len(lines))] = string(textFile(r, 40))
		}
		mode := os.FileMode(0o644)
		if i < 2 {
			mode = 0o755
		}
		writeBench(b, dir, p, []byte(strings.Join(lines, "")), mode)
		touched++
	}
	for _, p := range bin[:40] {
		full := filepath.Join(dir, filepath.FromSlash(p))
		data, err := os.ReadFile(full)
		require.NoError(b, err)
		off := r.Intn(len(data) - 4096)
		r.Read(data[off : off+4096])
		writeBench(b, dir, p, data, 0o644)
		touched++
	}
	for i := 0; i < 100; i++ {
		d := fmt.Sprintf("new%02d", i%10)
		if i < 30 {
			writeBench(b, dir, fmt.Sprintf("%s/added%03d.bin", d, i), binaryFile(r, 20_000+r.Intn(80_000)), 0o644)
		} else {
			writeBench(b, dir, fmt.Sprintf("%s/added%03d.go", d, i), textFile(r, 2_000+r.Intn(16_000)), 0o644)
		}
		touched++
	}
	for _, p := range append(append([]string{}, text[300:348]...), bin[40:50]...) {
		require.NoError(b, os.Remove(filepath.Join(dir, filepath.FromSlash(p))))
		gone[p] = true
		touched++
	}
	for k, p := range text[348:350] {
		from := filepath.Join(dir, filepath.FromSlash(p))
		data, err := os.ReadFile(from)
		require.NoError(b, err)
		if k == 1 {
			data = append(data, "// moved\n"...)
		}
		require.NoError(b, os.Remove(from))
		writeBench(b, dir, "moved/"+filepath.Base(p), data, 0o644)
		gone[p] = true
		touched++
	}
	require.Equal(b, benchTouched, touched)
	gitT(b, dir, "add", "-A")
	gitT(b, dir, "commit", "-q", "-m", "end")
	repo.end = gitT(b, dir, "rev-parse", "HEAD")
	for _, p := range paths {
		if !gone[p] {
			repo.paths = append(repo.paths, p)
		}
	}
	edited := 0
	for _, p := range repo.paths {
		if edited == 10 || isBinaryPath(p) {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, filepath.FromSlash(p)), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(b, err)
		_, err = f.WriteString("// the ten\n")
		require.NoError(b, errors.Join(err, f.Close()))
		edited++
	}
	gitT(b, dir, "commit", "-q", "-a", "-m", "ten")
	repo.ten = gitT(b, dir, "rev-parse", "HEAD")
	gitT(b, dir, "reset", "-q", "--hard", repo.end)
	b.Logf("repository: %d files, %.1f MB in the base tree", benchFiles, float64(total)/1e6)
	return repo
}

// cpuTime is the CPU time, user and system, of this process and of its
// children that have been waited for (every git command run).
func cpuTime(b *testing.B) time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		require.NoError(b, syscall.Getrusage(who, &ru))
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total
}

// reportCPU runs loop and reports its CPU time an operation, git's
// included, as cpu-ms/op: on a shared machine it moves less with the
// load than the wall time does.
func reportCPU(b *testing.B, loop func()) {
	start := cpuTime(b)
	loop()
	b.ReportMetric(float64(cpuTime(b)-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// BenchmarkCapture captures the change set of newBenchRepo beside the
// one git diff that makes its patch. Both report the patch's size as
// their bytes, so MB/s compare directly.
func BenchmarkCapture(b *testing.B) {
	repo := newBenchRepo(b)
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		base, end string
		files     int
	}{{"500-paths", repo.base, repo.end, benchTouched}, {"10-files", repo.end, repo.ten, 10}} {
		cs, err := changeset.Capture(ctx, repo.dir, c.base, c.end, changeset.Options{})
		require.NoError(b, err)
		require.Len(b, cs.Files, c.files, "one entry a touched path, a rename one entry")
		require.False(b, cs.PatchOmitted)
		b.Logf("%s: %d files, +%d -%d lines, patch %.2f MB", c.name, len(cs.Files), cs.Additions, cs.Deletions, float64(cs.PatchBytes)/1e6)

		b.Run(c.name+"/baseline-git-diff", func(b *testing.B) {
			b.SetBytes(cs.PatchBytes)
			b.ReportAllocs()
			reportCPU(b, func() {
				for b.Loop() {
					cmd := exec.CommandContext(ctx, "git", "-C", repo.dir, "diff", "--binary", "--full-index", "-M", c.base, c.end)
					cmd.Stdout = io.Discard
					require.NoError(b, cmd.Run())
				}
			})
		})
		b.Run(c.name+"/capture", func(b *testing.B) {
			b.SetBytes(cs.PatchBytes)
			b.ReportAllocs()
			reportCPU(b, func() {
				for b.Loop() {
					got, err := changeset.Capture(ctx, repo.dir, c.base, c.end, changeset.Options{})
					require.NoError(b, err)
					require.Equal(b, cs.SubjectDigest, got.SubjectDigest)
				}
			})
		})
	}
}

// BenchmarkTakeSnapshot snapshots the end tree of newBenchRepo, checked
// out as the repository's working tree with its index current: with
// nothing changed, and after 10 files are touched (their stat
// information no longer matches the index, so git rehashes them; the
// rest it trusts, through the temporary index seeded from the
// worktree's). For a private git directory, the first snapshot (no index
// to seed from: every file hashed and stored) and the next after 10
// files are touched.
func BenchmarkTakeSnapshot(b *testing.B) {
	repo := newBenchRepo(b)
	ctx := context.Background()
	n := 0
	snap := func(b *testing.B, p git.SnapshotParams) git.Snapshot {
		n++
		p.Ref = fmt.Sprintf("refs/jam/bench/%d", n)
		p.Message = "bench"
		p.At = benchTime
		s, err := git.TakeSnapshot(ctx, p)
		require.NoError(b, err)
		return s
	}
	r := rand.New(rand.NewSource(2))
	touch := func(b *testing.B) {
		for _, k := range r.Perm(len(repo.paths))[:10] {
			p := repo.paths[k]
			full := filepath.Join(repo.dir, filepath.FromSlash(p))
			f, err := os.OpenFile(full, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(b, err)
			_, err = fmt.Fprintf(f, "touched %d\n", r.Int())
			require.NoError(b, err)
			require.NoError(b, f.Close())
		}
	}
	worktree := git.SnapshotParams{Repo: repo.dir, Path: repo.dir}

	b.Run("worktree/unchanged", func(b *testing.B) {
		s := snap(b, worktree)
		require.Equal(b, repo.end, s.Base)
		require.Equal(b, gitT(b, repo.dir, "rev-parse", repo.end+"^{tree}"), s.Tree, "nothing changed: HEAD's tree")
		reportCPU(b, func() {
			for b.Loop() {
				snap(b, worktree)
			}
		})
	})
	b.Run("worktree/10-touched", func(b *testing.B) {
		touch(b)
		s := snap(b, worktree)
		require.NotEqual(b, gitT(b, repo.dir, "rev-parse", repo.end+"^{tree}"), s.Tree)
		reportCPU(b, func() {
			for b.Loop() {
				snap(b, worktree)
			}
		})
	})
	b.Run("private/first", func(b *testing.B) {
		reportCPU(b, func() {
			for b.Loop() {
				b.StopTimer()
				p := git.SnapshotParams{GitDir: filepath.Join(b.TempDir(), "private.git"), Path: repo.dir}
				b.StartTimer()
				snap(b, p)
			}
		})
	})
	b.Run("private/10-touched", func(b *testing.B) {
		p := git.SnapshotParams{GitDir: filepath.Join(b.TempDir(), "private.git"), Path: repo.dir}
		snap(b, p)
		reportCPU(b, func() {
			for b.Loop() {
				b.StopTimer()
				touch(b)
				b.StartTimer()
				snap(b, p)
			}
		})
	})
}
