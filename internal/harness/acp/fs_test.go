package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/jsonrpc"
)

// fileService is an Agent with one session open on dir, whose file
// requests the test makes as the agent would.
type fileService struct {
	a    *Agent
	root string // dir with its symlinks resolved
}

func serveFiles(t *testing.T, dir string) *fileService {
	t.Helper()
	root, err := sessionRoot(dir)
	require.NoError(t, err)
	a := &Agent{cfg: Config{Logger: slog.New(slog.DiscardHandler)}, sessions: map[string]*session{}}
	require.NoError(t, a.openSession("s", root))
	t.Cleanup(a.closeSessions)
	return &fileService{a: a, root: root}
}

func (f *fileService) read(path string) (string, error) {
	params, _ := json.Marshal(ReadTextFileParams{SessionID: "s", Path: path})
	return f.readParams(context.Background(), params)
}

// readParams makes a read request and decodes its answer, as the agent
// would once it is written.
func (f *fileService) readParams(ctx context.Context, params json.RawMessage) (string, error) {
	res, err := f.a.handle(ctx, MethodReadTextFile, params)
	if err != nil {
		return "", err
	}
	enc := res.(*jsonrpc.Encoded)
	enc.Written()
	var out ReadTextFileResult
	if err := json.Unmarshal(enc.JSON, &out); err != nil {
		return "", err
	}
	return out.Content, nil
}

func (f *fileService) write(path, content string) error {
	params, _ := json.Marshal(WriteTextFileParams{SessionID: "s", Path: path, Content: content})
	_, err := f.a.handle(context.Background(), MethodWriteTextFile, params)
	return err
}

// reason is the stable reason of a refused file request, or why err is
// not one.
func reason(err error) string {
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) {
		return fmt.Sprintf("not a JSON-RPC error: %v", err)
	}
	var data struct{ Reason string }
	if json.Unmarshal(rpcErr.Data, &data) != nil || data.Reason == "" {
		return fmt.Sprintf("no reason: %v", err)
	}
	want := jsonrpc.CodeInvalidParams
	if data.Reason == ReasonNotFound {
		want = CodeResourceNotFound
	}
	if rpcErr.Code != want {
		return fmt.Sprintf("code %d for %s", rpcErr.Code, data.Reason)
	}
	return data.Reason
}

// tree builds a session directory with links in and out, a .git
// directory and a link to it, beside an outside directory holding a
// secret.
func tree(t *testing.T) (f *fileService, outside string) {
	t.Helper()
	f = serveFiles(t, t.TempDir())
	outside, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	root := f.root
	must := func(err error) { t.Helper(); require.NoError(t, err) }
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o600))
	must(os.MkdirAll(filepath.Join(root, "src"), 0o755))
	must(os.WriteFile(filepath.Join(root, "src", "a.go"), []byte("x"), 0o644))
	must(os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755))
	must(os.WriteFile(filepath.Join(root, ".git", "config"), []byte("[core]\n"), 0o644))
	must(os.Symlink(outside, filepath.Join(root, "escape")))
	must(os.Symlink("../../"+filepath.Base(outside), filepath.Join(root, "src", "up")))
	must(os.Symlink("src", filepath.Join(root, "inner")))
	must(os.Symlink(filepath.Join(root, "src"), filepath.Join(root, "absinner")))
	must(os.Symlink(".git", filepath.Join(root, "gitlink")))
	must(os.Symlink("src/../.GIT", filepath.Join(root, "gitlink2")))
	must(os.Symlink("loop", filepath.Join(root, "loop")))
	return f, outside
}

func TestFileService_read(t *testing.T) {
	t.Parallel()
	f, outside := tree(t)
	root := f.root
	tests := []struct {
		name, path string
		want       string // the content, or the reason of the refusal
	}{
		{name: "file", path: root + "/src/a.go", want: "x"},
		{name: "dot-dot inside", path: root + "/src/../src/a.go", want: "x"},
		{name: "relative link inside", path: root + "/inner/a.go", want: "x"},
		{name: "absolute link inside", path: root + "/absinner/a.go", want: "x"},
		{name: "dot-dot out", path: root + "/../x", want: ReasonOutside},
		{name: "sibling with the root as prefix", path: root + "-other/x", want: ReasonOutside},
		{name: "absolute link out", path: root + "/escape/secret", want: ReasonOutside},
		{name: "relative link out", path: root + "/src/up/secret", want: ReasonOutside},
		{name: "relative", path: "src/a.go", want: ReasonOutside},
		{name: "absolute elsewhere", path: outside + "/secret", want: ReasonOutside},
		{name: "nul byte", path: root + "/a\x00b", want: ReasonOutside},
		{name: "link loop", path: root + "/loop", want: ReasonOutside},
		{name: ".git itself", path: root + "/.git", want: ReasonGit},
		{name: ".git config", path: root + "/.git/config", want: ReasonGit},
		{name: ".git in any case", path: root + "/.GIT/config", want: ReasonGit},
		{name: ".git deeper, not there", path: root + "/src/.git/HEAD", want: ReasonGit},
		{name: ".git with a trailing dot", path: root + "/.git./config", want: ReasonGit},
		{name: ".git's short name", path: root + "/GIT~1/config", want: ReasonGit},
		{name: ".git with an HFS+ ignorable", path: root + "/.g\u200cit/config", want: ReasonGit},
		{name: "link to .git", path: root + "/gitlink/config", want: ReasonGit},
		{name: "link through dot-dot to .GIT", path: root + "/gitlink2/config", want: ReasonGit},
		{name: "the root itself", path: root, want: ReasonNotRegular},
		{name: "a directory", path: root + "/src", want: ReasonNotRegular},
		{name: "missing", path: root + "/nope.txt", want: ReasonNotFound},
		{name: ".gitignore is no .git", path: root + "/.gitignore", want: ReasonNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := f.read(tt.path)
			if err != nil {
				require.Equal(t, tt.want, reason(err), "%s: %v", tt.path, err)
				return
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestFileService_write(t *testing.T) {
	t.Parallel()
	f, outside := tree(t)
	root := f.root
	tests := []struct {
		name, path string
		want       string // "" written, else the reason of the refusal
		check      string // a path that must then hold "new", relative to root
	}{
		{name: "new nested file", path: root + "/new/dir/b.go", check: "new/dir/b.go"},
		{name: "through a link inside", path: root + "/inner/c.go", check: "src/c.go"},
		{name: "through an absolute link inside", path: root + "/absinner/d.go", check: "src/d.go"},
		{name: "a link out", path: root + "/escape/secret", want: ReasonOutside},
		{name: "a new file through a link out", path: root + "/escape/new/file", want: ReasonOutside},
		{name: "dot-dot out", path: root + "/../planted", want: ReasonOutside},
		{name: "a .git file at the root", path: root + "/.git", want: ReasonGit},
		{name: "a .git file in any case", path: root + "/.Git", want: ReasonGit},
		{name: "a gitdir's config", path: root + "/.git/config", want: ReasonGit},
		{name: "a hook", path: root + "/.git/hooks/post-commit", want: ReasonGit},
		{name: "a nested .git", path: root + "/sub/.git", want: ReasonGit},
		{name: "a link to .git", path: root + "/gitlink/config", want: ReasonGit},
		{name: "a directory", path: root + "/src", want: ReasonNotRegular},
		{name: "the root", path: root, want: ReasonNotRegular},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := f.write(tt.path, "new")
			if tt.want != "" {
				require.Equal(t, tt.want, reason(err), "%s: %v", tt.path, err)
				return
			}
			require.NoError(t, err)
			b, err := os.ReadFile(filepath.Join(root, tt.check))
			require.NoError(t, err)
			require.Equal(t, "new", string(b))
		})
	}
	t.Cleanup(func() {
		// Nothing reached outside, .git kept its content, no nested .git
		// or directory for one was made.
		entries, err := os.ReadDir(outside)
		require.NoError(t, err)
		require.Len(t, entries, 1, "outside holds only its secret")
		b, err := os.ReadFile(filepath.Join(root, ".git", "config"))
		require.NoError(t, err)
		require.Equal(t, "[core]\n", string(b))
		require.NoFileExists(t, filepath.Join(root, ".git", "hooks", "post-commit"))
		require.NoDirExists(t, filepath.Join(root, "sub"))
		require.NoFileExists(t, filepath.Join(filepath.Dir(root), "planted"))
	})
}

// TestFileService_swappedDirectoryCannotEscape: a directory of the session
// swapped for a link to outside is refused when the link is there before
// the request, and a swapper racing reads and writes never lets one reach
// outside.
func TestFileService_swappedDirectoryCannotEscape(t *testing.T) {
	t.Parallel()
	f := serveFiles(t, t.TempDir())
	outside, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	d, saved := filepath.Join(f.root, "d"), filepath.Join(f.root, "d.saved")
	require.NoError(t, os.WriteFile(filepath.Join(outside, "f"), []byte("OUTSIDE"), 0o600))
	require.NoError(t, os.Mkdir(d, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(d, "f"), []byte("inside"), 0o600))

	swap := func() { // d becomes a link to outside
		require.NoError(t, os.Rename(d, saved))
		require.NoError(t, os.Symlink(outside, d))
	}
	unswap := func() {
		require.NoError(t, os.Remove(d))
		require.NoError(t, os.Rename(saved, d))
	}
	swap()
	_, err = f.read(d + "/f")
	require.Equal(t, ReasonOutside, reason(err))
	require.Equal(t, ReasonOutside, reason(f.write(d+"/w", "planted")))
	unswap()

	const rounds = 5000
	var done atomic.Int64 // requests made
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		// A write made while d is briefly absent creates it as a
		// directory: each step clears whatever is in the way.
		retry := func(what string, op func() error) bool {
			for range 1000 {
				if err := op(); err == nil {
					return true
				}
				_ = os.RemoveAll(d)
			}
			t.Errorf("%s kept failing", what)
			return false
		}
		last := int64(-1)
		for {
			select {
			case <-stop:
				return
			default:
			}
			// One swap and back for each request, racing it.
			if n := done.Load(); n == last {
				runtime.Gosched()
				continue
			} else {
				last = n
			}
			if !retry("swap", func() error { return os.Rename(d, saved) }) ||
				!retry("link", func() error { return os.Symlink(outside, d) }) {
				return
			}
			runtime.Gosched()
			_ = os.RemoveAll(d)
			if !retry("unswap", func() error { return os.Rename(saved, d) }) {
				return
			}
		}
	})
	escaped, inside := 0, 0
	for i := range rounds {
		got, err := f.read(d + "/f")
		switch {
		case got == "OUTSIDE":
			escaped++
		case err == nil:
			inside++
		}
		_ = f.write(fmt.Sprintf("%s/sub%d/w", d, i%7), "planted")
		done.Add(1)
	}
	close(stop)
	wg.Wait()
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"f"}, names, "writes reached outside")
	require.Zero(t, escaped, "reads that returned the outside file's content, of %d", rounds)
	t.Logf("%d of %d reads saw the directory; none escaped", inside, rounds)
}

// TestFileService_largeSparseFileRefusedWithoutReading: a sparse 256 MiB
// file costs no disk, and once cost jamd 3 GB of memory to answer; now it
// is refused on its size, before a byte is read.
func TestFileService_largeSparseFileRefusedWithoutReading(t *testing.T) {
	// Not parallel: it measures the allocations of the whole process.
	f := serveFiles(t, t.TempDir())
	big := filepath.Join(f.root, "big.bin")
	fh, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, fh.Truncate(256<<20))
	require.NoError(t, fh.Close())

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = f.read(big)
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated answering the read")
	require.Equal(t, ReasonTooLarge, reason(err), "%v", err)
	require.Contains(t, err.Error(), "268435456 bytes")
}

// TestFileService_readBounds: a file of exactly MaxReadBytes is read (and
// its lines sliced); one byte more is refused; so is a smaller file whose
// answer would be too large as JSON.
func TestFileService_readBounds(t *testing.T) {
	t.Parallel()
	f := serveFiles(t, t.TempDir())
	full := strings.Repeat("abcdefg\n", MaxReadBytes/8)
	require.NoError(t, os.WriteFile(filepath.Join(f.root, "full"), []byte(full), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(f.root, "over"), []byte(full+"!"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(f.root, "nuls"), make([]byte, MaxReadBytes/2), 0o644))

	got, err := f.read(f.root + "/full")
	require.NoError(t, err)
	require.Len(t, got, MaxReadBytes)
	line, limit := 3, 2
	params, _ := json.Marshal(ReadTextFileParams{SessionID: "s", Path: f.root + "/full", Line: &line, Limit: &limit})
	got, err = f.readParams(t.Context(), params)
	require.NoError(t, err)
	require.Equal(t, "abcdefg\nabcdefg\n", got, "line and limit still honoured")

	_, err = f.read(f.root + "/over")
	require.Equal(t, ReasonTooLarge, reason(err))
	_, err = f.read(f.root + "/nuls")
	require.Equal(t, ReasonTooLarge, reason(err), "4 MiB of NULs is 24 MiB of JSON")
	require.ErrorContains(t, err, "bytes of JSON")
}

// TestFileService_fifoAndDeviceRefusedWithoutBlocking: reading a FIFO
// nobody writes once blocked the request (and its handler) for ever; a
// device node read as a file.
func TestFileService_fifoAndDeviceRefusedWithoutBlocking(t *testing.T) {
	t.Parallel()
	f := serveFiles(t, t.TempDir())
	fifo := filepath.Join(f.root, "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	done := make(chan error, 1)
	go func() {
		_, err := f.read(fifo)
		done <- err
	}()
	select {
	case err := <-done:
		require.Equal(t, ReasonNotRegular, reason(err))
	case <-time.After(10 * time.Second):
		// Release the blocked read: a writer opens the FIFO and leaves.
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			w.Close()
		}
		<-done
		t.Fatal("reading a FIFO blocked")
	}
	require.Equal(t, ReasonNotRegular, reason(f.write(fifo, "x")))

	if os.Geteuid() != 0 {
		t.Log("not root: no device node made")
		return
	}
	null := filepath.Join(f.root, "null")
	require.NoError(t, syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3)) // as /dev/null
	_, err := f.read(null)
	require.Equal(t, ReasonNotRegular, reason(err))
}

// TestFileService_readsInFlightAreBounded: answers not yet written hold
// their slots, so an agent that floods reads without reading its answers
// holds at most maxReadsInFlight of them in memory; the next read waits.
func TestFileService_readsInFlightAreBounded(t *testing.T) {
	t.Parallel()
	f := serveFiles(t, t.TempDir())
	require.NoError(t, os.WriteFile(filepath.Join(f.root, "a"), []byte("a"), 0o644))
	params, _ := json.Marshal(ReadTextFileParams{SessionID: "s", Path: f.root + "/a"})
	var held []*jsonrpc.Encoded
	for range maxReadsInFlight {
		res, err := f.a.handle(t.Context(), MethodReadTextFile, params)
		require.NoError(t, err)
		held = append(held, res.(*jsonrpc.Encoded))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := f.a.handle(ctx, MethodReadTextFile, params)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a read beyond the bound waits")
	held[0].Written()
	got, err := f.read(f.root + "/a")
	require.NoError(t, err)
	require.Equal(t, "a", got, "a slot freed by a written answer is used")
	held[1].Written()
}

func TestFileService_writeKeepsModeAndLeavesNoTemporary(t *testing.T) {
	t.Parallel()
	f := serveFiles(t, t.TempDir())
	p := filepath.Join(f.root, "x", "run.sh")
	require.NoError(t, f.write(p, "one"))
	require.NoError(t, os.Chmod(p, 0o755))
	require.NoError(t, f.write(p, "two"))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	b, _ := os.ReadFile(p)
	require.Equal(t, "two", string(b))
	entries, err := os.ReadDir(filepath.Dir(p))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left")
}

// TestFileService_followsADirectoryMadeAgain: a worktree archived and
// restored is a new directory at the same path; the session's requests
// reach it, and a link put in its place is not followed.
func TestFileService_followsADirectoryMadeAgain(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "wt")
	require.NoError(t, os.Mkdir(dir, 0o755))
	f := serveFiles(t, dir)
	require.NoError(t, f.write(dir+"/a", "one"))

	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, f.write(dir+"/a", "two"))
	b, err := os.ReadFile(filepath.Join(dir, "a"))
	require.NoError(t, err)
	require.Equal(t, "two", string(b))
	got, err := f.read(dir + "/a")
	require.NoError(t, err)
	require.Equal(t, "two", got)

	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "a"), []byte("OUTSIDE"), 0o644))
	require.NoError(t, os.Rename(dir, dir+".moved"))
	require.NoError(t, os.Symlink(outside, dir))
	got, err = f.read(dir + "/a")
	require.NotEqual(t, "OUTSIDE", got, "a link in the directory's place is not followed")
	require.Equal(t, "two", got, "the directory open is still served")
	require.NoError(t, err)
}

func TestFileService_unknownSession(t *testing.T) {
	t.Parallel()
	f := serveFiles(t, t.TempDir())
	params, _ := json.Marshal(ReadTextFileParams{SessionID: "other", Path: f.root + "/x"})
	_, err := f.a.handle(t.Context(), MethodReadTextFile, params)
	require.ErrorContains(t, err, "unknown session")
}

func TestIsGitName(t *testing.T) {
	t.Parallel()
	for _, n := range []string{".git", ".GIT", ".Git", ".git.", ".git ", ".git. .", "git~1", "GIT~1", ".g\u200cit", "\ufeff.git"} {
		require.True(t, isGitName(n), "%q", n)
	}
	for _, n := range []string{"", "git", ".gi", ".gitignore", ".git-x", "x.git", "git~2", "..git"} {
		require.False(t, isGitName(n), "%q", n)
	}
}

func TestJSONLen(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "a\"b\\c", "\x00\x01\n\t\r\b\f", "<a>&", "é€😀", "\xff\xfe", "\u2028\u2029", strings.Repeat("x\x00", 100)} {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, len(b), jsonLen(s), "%q", s)
	}
}

// FuzzResolve: whatever path an agent sends, resolve either refuses it
// with a stable reason or returns a path inside the directory, with no
// link on it and no .git component.
func FuzzResolve(f *testing.F) {
	dir := f.TempDir()
	outside := f.TempDir()
	root, err := sessionRoot(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, step := range []error{
		os.MkdirAll(filepath.Join(root, "src", "deep"), 0o755),
		os.MkdirAll(filepath.Join(root, ".git"), 0o755),
		os.WriteFile(filepath.Join(root, "src", "a.go"), nil, 0o644),
		os.Symlink(outside, filepath.Join(root, "out")),
		os.Symlink("../..", filepath.Join(root, "src", "up2")),
		os.Symlink("..", filepath.Join(root, "src", "deep", "up")),
		os.Symlink(".git", filepath.Join(root, "g")),
		os.Symlink(root+"/src", filepath.Join(root, "abs")),
		os.Symlink("loop", filepath.Join(root, "loop")),
	} {
		if step != nil {
			f.Fatal(step)
		}
	}
	sfs, err := openSessionFS(root)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = sfs.close() })
	for _, s := range []string{"src/a.go", "src/deep/up/a.go", "src/up2/x", "g/config", "abs/deep", "out/x", ".GIT/x", "loop", "../x", "/etc/passwd", "a/../../b", "", "."} {
		f.Add(s)
	}
	reasons := map[string]bool{ReasonOutside: true, ReasonGit: true, ReasonNotFound: true}
	f.Fuzz(func(t *testing.T, p string) {
		path := p
		if !strings.HasPrefix(p, "/") {
			path = root + "/" + p
		}
		rel, err := sfs.resolve(sfs.current(), path)
		if err != nil {
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) {
				t.Fatalf("%q: error of type %T: %v", p, err, err)
			}
			var data struct{ Reason string }
			if rpcErr.Code != jsonrpc.CodeInternalError && (json.Unmarshal(rpcErr.Data, &data) != nil || !reasons[data.Reason]) {
				t.Fatalf("%q: refusal without a known reason: %v", p, err)
			}
			return
		}
		if rel != "." && !filepath.IsLocal(rel) {
			t.Fatalf("%q resolved to %q, not inside", p, rel)
		}
		cur := ""
		for _, c := range strings.Split(rel, "/") {
			if isGitName(c) {
				t.Fatalf("%q resolved to %q, through .git", p, rel)
			}
			cur = filepath.Join(cur, c)
			if fi, err := os.Lstat(filepath.Join(root, cur)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				t.Fatalf("%q resolved to %q, through the link %s", p, rel, cur)
			}
		}
	})
}

func TestChoose(t *testing.T) {
	t.Parallel()
	opts := []PermissionOption{{OptionID: "always", Kind: AllowAlways}, {OptionID: "once", Kind: AllowOnce}, {OptionID: "reject", Kind: RejectOnce}}
	require.Equal(t, PermissionOutcome{Outcome: "selected", OptionID: "once"}, choose(harness.AllowOnce, opts), "allow_once first, by kind")
	require.Equal(t, PermissionOutcome{Outcome: "selected", OptionID: "reject"}, choose(harness.Reject, opts))
	require.Equal(t, PermissionOutcome{Outcome: "selected", OptionID: "always"}, choose(harness.AllowOnce, opts[:1]))
	require.Equal(t, PermissionOutcome{Outcome: "cancelled"}, choose(harness.Reject, opts[:2]), "no option of an acceptable kind")
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
	require.Equal(t, s, sliceLines(s, n(-3), n(-1)))
}
