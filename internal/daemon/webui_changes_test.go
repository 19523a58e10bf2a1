package daemon_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/changeset"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// hostileName is a file name that is markup; the page must show it as
// text.
const hostileName = `<img src=x onerror="window.__pwned='name'">.txt`

// changesRepo makes a git repository with two commits whose difference
// has every kind of file the change set view draws: a modified file with
// a space and a non-ASCII letter in its name, a rename with an edit, a
// binary file, a deleted file, a 600-line new file, and a file named as
// markup. A third commit, off the base, changes one line.
func changesRepo(t *testing.T) (dir, base, end, small string) {
	t.Helper()
	dir = t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	write := func(name, text string) {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	var seq strings.Builder
	for i := 1; i <= 20; i++ {
		seq.WriteString(strconv.Itoa(i) + "\n")
	}
	run("init", "-q", "-b", "main")
	write("a b ü.txt", "one\ntwo\n")
	write("old.txt", seq.String())
	write("bin.dat", "\x00\x01\x02")
	write("gone.txt", "keep\n")
	run("add", "-A")
	run("commit", "-q", "-m", "base")
	base = run("rev-parse", "HEAD")

	write("a b ü.txt", "one\nTWO\nthree\n")
	run("mv", "old.txt", "new.txt")
	write("new.txt", seq.String()+"21\n")
	write("bin.dat", "\x00\x05\x02\x07")
	run("rm", "-q", "gone.txt")
	var long strings.Builder
	for i := 1; i <= 600; i++ {
		long.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	write("long.txt", long.String())
	write(hostileName, "<script>window.__pwned='line'</script>\n")
	run("add", "-A")
	run("commit", "-q", "-m", "end")
	end = run("rev-parse", "HEAD")

	run("checkout", "-q", "-b", "other", base)
	write("gone.txt", "changed\n")
	run("commit", "-q", "-am", "small")
	small = run("rev-parse", "HEAD")
	return dir, base, end, small
}

// recordChangeSet captures the change set between two commits of gitDir
// with the change set package and records it, with its two checkpoints,
// in the daemon's store for turn of session, as the daemon does at a
// turn's end.
func recordChangeSet(t *testing.T, st store.Store, ws jam.WorkspaceID, session jam.SessionID, turn jam.TurnID, gitDir, base, end string, origin store.ChangeSetOrigin, opt changeset.Options) store.ChangeSet {
	t.Helper()
	ctx := t.Context()
	// After the checkpoints the daemon took itself (the demo agent's
	// notes): this change set is the turn's newest, the one its reply
	// links to.
	latest, err := st.CheckpointLatest(ctx, ws, session)
	require.NoError(t, err)
	seq := latest.Seq + 1
	m := jam.NewMinter(nil, nil)
	now := time.Now().UTC().Truncate(time.Microsecond)
	cps := make([]store.Checkpoint, 2)
	for i, commit := range []string{base, end} {
		tree, err := exec.Command("git", "-C", gitDir, "rev-parse", commit+"^{tree}").Output()
		require.NoError(t, err)
		phase := store.CheckpointTurnStart
		if i == 1 {
			phase = store.CheckpointTurnEnd
		}
		cp, err := st.CheckpointInsert(ctx, store.Checkpoint{ID: jam.New[jam.SnapshotID](m), WorkspaceID: ws, SessionID: session, Seq: seq + i, Turn: turn,
			Phase: phase, GitDir: gitDir, Ref: "refs/jam/checkpoints/" + string(session) + "/" + strconv.Itoa(seq+i), Commit: commit, Tree: strings.TrimSpace(string(tree)), BaseCommit: commit, CreatedAt: now})
		require.NoError(t, err)
		cps[i] = cp
	}
	cs, err := changeset.Capture(ctx, gitDir, base, end, opt)
	require.NoError(t, err)
	cs.ID, cs.WorkspaceID, cs.SessionID, cs.Turn, cs.Origin = jam.New[jam.ChangeSetID](m), ws, session, turn, origin
	cs.BaseCheckpoint, cs.EndCheckpoint, cs.CreatedAt = cps[0].ID, cps[1].ID, now
	got, err := st.ChangeSetInsert(ctx, cs)
	require.NoError(t, err)
	return got
}

// TestWebUI_turnChangeSets: an owned agent answers three messages; its
// turns left a change set each (a real capture of a real repository, in
// the daemon's store): six files of every kind, a salvage whose patch
// was too large to keep, and an empty one. The room links each reply
// to its change set ("6 files changed, +…"), except the empty one's; the
// session page lists the files with their kind and figures, marks the
// binary file, shows the diffs as text (a file named as markup stays a
// name), collapses the files after the third, cuts the long file at 400
// lines with a link to the raw patch, and says when the patch was not
// kept and when nothing changed. Screenshots at desktop and phone widths.
func TestWebUI_turnChangeSets(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	gitDir, base, end, small := changesRepo(t)

	cfg := testConfig(t)
	cfg.HTTPAddr = "127.0.0.1:0"
	r := start(t, cfg)
	status := r.waitReady(t)
	owner := ownerClient(t, status)
	ctx := t.Context()
	c := r.client
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow"}})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "Changes", Agents: []string{"demo"}})
	require.NoError(t, err)

	// Four turns, one after the other: the second is cancelled while it
	// runs, the others are answered in the room.
	var session wire.Session
	var turns []wire.Turn
	for i, text := range []string{"rework the files", "[slow] try something big", "fix one line", "look only"} {
		_, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" "+text, []protocol.Mention{{ID: agent.AgentID}})
		require.NoError(t, err)
		if i == 1 {
			require.Eventually(t, func() bool {
				ss, err := c.Sessions(ctx)
				require.NoError(t, err)
				return len(ss) == 1 && ss[0].CurrentTurnState == "running"
			}, 60*time.Second, 20*time.Millisecond, "the slow turn runs")
			ss, err := c.Sessions(ctx)
			require.NoError(t, err)
			require.NoError(t, c.CancelTurn(ctx, ss[0].CurrentTurn))
		}
		require.Eventually(t, func() bool {
			ss, err := c.Sessions(ctx)
			require.NoError(t, err)
			if len(ss) != 1 || ss[0].CurrentTurn != "" {
				return false
			}
			session = ss[0]
			turns, err = c.Turns(ctx, ss[0].ID)
			require.NoError(t, err)
			return len(turns) == i+1 && turns[i].State != "queued" && turns[i].State != "running"
		}, 60*time.Second, 20*time.Millisecond, "turn %d ended", i+1)
	}
	require.Len(t, turns, 4)
	require.Equal(t, []string{"succeeded", "cancelled", "succeeded", "succeeded"}, []string{turns[0].State, turns[1].State, turns[2].State, turns[3].State})

	st := openStore(t, cfg)
	sid, err := jam.ParseID[jam.SessionID](session.ID)
	require.NoError(t, err)
	turnID := func(i int) jam.TurnID {
		id, err := jam.ParseID[jam.TurnID](turns[i].ID)
		require.NoError(t, err)
		return id
	}
	full := recordChangeSet(t, st, status.Workspace.ID, sid, turnID(0), gitDir, base, end, store.ChangeSetTurn, changeset.Options{})
	big := recordChangeSet(t, st, status.Workspace.ID, sid, turnID(1), gitDir, base, end, store.ChangeSetSalvage, changeset.Options{MaxPatchBytes: 1024})
	one := recordChangeSet(t, st, status.Workspace.ID, sid, turnID(2), gitDir, base, small, store.ChangeSetTurn, changeset.Options{})
	empty := recordChangeSet(t, st, status.Workspace.ID, sid, turnID(3), gitDir, end, end, store.ChangeSetTurn, changeset.Options{})
	require.Len(t, full.Files, 6)
	require.True(t, big.PatchOmitted)
	require.True(t, empty.Empty())
	wantSummary := "6 files changed, +" + strconv.Itoa(full.Additions) + " \u2212" + strconv.Itoa(full.Deletions)
	require.Equal(t, "1 file changed, +1 \u22121", summaryOf(one), "the small change: one line")

	p := openBrowser(t)
	p.do(chromedp.EmulateViewport(1280, 800))
	p.signIn(signInLink(t, r))
	p.do(chromedp.Navigate(signInBase(t, r) + "#/rooms/" + room.ID))
	p.waitFor("the replies' change set links", `document.querySelectorAll('.timeline a[data-changeset-link]').length === 2 && document.querySelectorAll('.timeline .msg[data-sender=agent]').length === 3`)
	links := p.eval(`JSON.stringify([...document.querySelectorAll('.timeline a[data-changeset-link]')].map((a) => [a.dataset.changesetLink, a.textContent, a.getAttribute('href')]))`)
	var got [][3]string
	require.NoError(t, json.Unmarshal([]byte(links), &got))
	turnHref := func(i int) string { return "#/sessions/" + session.ID + "/turns/" + turns[i].ID }
	require.ElementsMatch(t, [][3]string{
		{string(full.ID), wantSummary, turnHref(0)},
		{string(one.ID), "1 file changed, +1 \u22121", turnHref(2)},
	}, got, "the empty change set's reply has no link")
	p.atWidths("webui-changes-room")

	// The session page of the first turn, through the reply's link.
	p.do(chromedp.Click(chromedp.CSS(`.timeline a[data-changeset-link=` + js(string(full.ID)) + `]`)))
	cs := `.changeset[data-changeset=` + js(string(full.ID)) + `]`
	p.waitFor("the change set's diffs", `document.querySelectorAll(`+js(cs+` pre.cs-diff`)+`).length >= 2`)
	require.Equal(t, wantSummary, p.eval(`document.querySelector(`+js(cs+` .cs-summary`)+`).textContent`))
	files := p.eval(`JSON.stringify([...document.querySelectorAll(` + js(cs+` .cs-file`) + `)].map((li) => [li.dataset.kind, li.querySelector('.cs-path').textContent, li.querySelector('summary > span:last-child').textContent, li.querySelector('details').open]))`)
	var rows [][4]any
	require.NoError(t, json.Unmarshal([]byte(files), &rows))
	require.Equal(t, [][4]any{
		{"added", hostileName, "+1 \u22120", true},
		{"modified", "a b ü.txt", "+2 \u22121", true},
		{"modified", "bin.dat", "binary", true},
		{"deleted", "gone.txt", "+0 \u22121", false},
		{"added", "long.txt", "+600 \u22120", false},
		{"renamed", "old.txt \u2192 new.txt", "+1 \u22120", false},
	}, rows, "the manifest in order, the first three open")

	// The markup-named file: its name and its line are text.
	require.Equal(t, "0", p.eval(`String(document.querySelectorAll(`+js(cs+` img, `+cs+` script, `+cs+` [onerror]`)+`).length)`))
	require.Equal(t, "undefined", p.eval(`String(window.__pwned)`))
	require.Contains(t, p.eval(`document.querySelector(`+js(cs+` .cs-file[data-kind=added] pre`)+`).textContent`), "+<script>window.__pwned='line'</script>")
	require.Contains(t, p.eval(`document.querySelector(`+js(cs+` .cs-file[data-path="a b ü.txt"] pre`)+`).textContent`), "-two")
	require.Contains(t, p.eval(`document.querySelector(`+js(cs+` .cs-file[data-path="bin.dat"] details`)+`).textContent`), "Binary file")

	// The long file: 400 lines drawn (the hunk header and 399), the rest
	// behind the raw patch, which the signed-in page can read.
	p.do(chromedp.Click(chromedp.CSS(cs + ` .cs-file[data-path="long.txt"] summary`)))
	long := cs + ` .cs-file[data-path="long.txt"]`
	p.waitFor("the long file open", `document.querySelector(`+js(long+` details`)+`).open`)
	require.Equal(t, "400", p.eval(`String(document.querySelectorAll(`+js(long+` .dl`)+`).length)`))
	require.Equal(t, "201 more lines not shown. Open the raw patch", p.eval(`document.querySelector(`+js(long+` .cs-truncated`)+`).textContent`))
	raw := p.eval(`fetch(document.querySelector(` + js(long+` .cs-truncated a`) + `).href).then(async (r) => r.status + ' ' + r.headers.get('Content-Type') + ' ' + (await r.arrayBuffer()).byteLength)`)
	require.Equal(t, "200 text/x-diff; charset=utf-8 "+strconv.Itoa(len(full.Patch)), raw)
	// The rename: old → new with its edit.
	p.do(chromedp.Click(chromedp.CSS(cs + ` .cs-file[data-kind=renamed] summary`)))
	require.Contains(t, p.eval(`document.querySelector(`+js(cs+` .cs-file[data-kind=renamed] pre`)+`).textContent`), "+21")
	require.Contains(t, p.eval(`document.querySelector('[data-turn=`+js(turns[0].ID)+`] a[data-changeset-link]').textContent`), wantSummary, "the turns table shows each turn's change set")
	p.atWidths("webui-changes-turn")

	// The salvage whose patch was not kept, and the empty change set.
	p.do(chromedp.Navigate(signInBase(t, r) + turnHref(1)))
	salvage := `.changeset[data-changeset=` + js(string(big.ID)) + `]`
	p.waitFor("the salvage", `document.querySelector(`+js(salvage+` .cs-omitted`)+`) !== null`)
	require.Equal(t, "salvage", p.eval(`document.querySelector(`+js(salvage+` .cs-salvage`)+`).textContent`))
	require.Contains(t, p.eval(`document.querySelector(`+js(salvage)+`).textContent`), "did not succeed")
	require.Contains(t, p.eval(`document.querySelector(`+js(salvage+` .cs-omitted`)+`).textContent`), "too large to keep")
	require.Equal(t, "6", p.eval(`String(document.querySelectorAll(`+js(salvage+` .cs-file`)+`).length)`), "the manifest still shows")
	require.Equal(t, "0", p.eval(`String(document.querySelectorAll(`+js(salvage+` pre, `+salvage+` a.cs-raw`)+`).length)`), "no diff, no raw patch")
	p.atWidths("webui-changes-salvage")
	p.do(chromedp.Navigate(signInBase(t, r) + turnHref(3)))
	p.waitFor("no changes", `document.querySelector('.changeset[data-changeset=`+js(string(empty.ID))+`] [data-role=no-changes]') !== null`)
	require.Equal(t, "no changes", p.eval(`document.querySelector('.changeset[data-changeset=`+js(string(empty.ID))+`] .cs-summary').textContent`))
}

func summaryOf(cs store.ChangeSet) string {
	n := len(cs.Files)
	word := "files"
	if n == 1 {
		word = "file"
	}
	return strconv.Itoa(n) + " " + word + " changed, +" + strconv.Itoa(cs.Additions) + " \u2212" + strconv.Itoa(cs.Deletions)
}

// parsed is what the page's patch parser makes of one file.
type parsed struct {
	OldPath   *string `json:"oldPath"`
	NewPath   *string `json:"newPath"`
	Binary    bool    `json:"binary"`
	Additions int     `json:"additions"`
	Deletions int     `json:"deletions"`
	Kinds     string  `json:"kinds"` // one letter per line: h(unk) a(dd) d(el) c(tx) n(ote)
}

// parseInPage runs the page's parser (static/js/changes.js) on each patch.
func parseInPage(t *testing.T, p *page, patches []string) [][]parsed {
	t.Helper()
	in, err := json.Marshal(patches)
	require.NoError(t, err)
	out := p.eval(`import(document.querySelector('script[type=module]').src.replace(/app\.js$/, 'changes.js')).then((m) => JSON.stringify(` + string(in) + `.map((text) =>
		m.parsePatch(text).map((f) => ({ oldPath: f.oldPath, newPath: f.newPath, binary: f.binary, additions: f.additions, deletions: f.deletions,
			kinds: f.lines.map((l) => ({ hunk: 'h', add: 'a', del: 'd', ctx: 'c', note: 'n' })[l.kind]).join('') })))))`)
	var got [][]parsed
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	return got
}

func sp(s string) *string { return &s }

// TestWebUI_patchParser runs the page's patch parser in Chromium: on a
// real capture its files and figures are git's own manifest, and a
// table of edge cases (quoted names, a deleted line that reads like a
// header, a rename without edits, a mode change, a short hunk, garbage)
// parses as it should. Then mutated patches (seeded, so a failure
// reproduces) never make it throw, and its counts always match its
// lines.
func TestWebUI_patchParser(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	gitDir, base, end, _ := changesRepo(t)
	cs, err := changeset.Capture(t.Context(), gitDir, base, end, changeset.Options{})
	require.NoError(t, err)

	_, p, _ := roomWithAttached(t)
	real := parseInPage(t, p, []string{string(cs.Patch)})[0]
	require.Len(t, real, len(cs.Files))
	byPath := map[string]parsed{}
	for _, f := range real {
		key := f.NewPath
		if key == nil {
			key = f.OldPath
		}
		require.NotNil(t, key)
		byPath[*key] = f
	}
	for _, f := range cs.Files {
		got, ok := byPath[f.Path]
		require.True(t, ok, "the parser names %q", f.Path)
		require.Equal(t, f.Binary, got.Binary, f.Path)
		require.Equal(t, f.Additions, got.Additions, f.Path)
		require.Equal(t, f.Deletions, got.Deletions, f.Path)
		switch f.Kind {
		case store.ChangeAdded:
			require.Nil(t, got.OldPath, f.Path)
		case store.ChangeDeleted:
			require.Nil(t, got.NewPath, f.Path)
		case store.ChangeRenamed:
			require.Equal(t, f.OldPath, *got.OldPath)
		}
	}

	cases := []struct {
		name  string
		patch string
		want  []parsed
	}{
		{name: "empty", patch: "", want: []parsed{}},
		{name: "garbage", patch: "hello\n@@ -1 +1 @@\n+x\n", want: []parsed{}},
		{name: "quoted octal name", patch: "diff --git \"a/\\303\\274 x.txt\" \"b/\\303\\274 x.txt\"\nindex 1..2 100644\n--- \"a/\\303\\274 x.txt\"\t\n+++ \"b/\\303\\274 x.txt\"\t\n@@ -1 +1 @@\n-a\n+b\n",
			want: []parsed{{OldPath: sp("ü x.txt"), NewPath: sp("ü x.txt"), Additions: 1, Deletions: 1, Kinds: "hda"}}},
		{name: "quoted escapes", patch: "diff --git \"a/t\\tq\\\"b\\\\\" \"b/t\\tq\\\"b\\\\\"\nnew file mode 100644\nindex 0..1\n--- /dev/null\n+++ \"b/t\\tq\\\"b\\\\\"\n@@ -0,0 +1 @@\n+x\n",
			want: []parsed{{NewPath: sp("t\tq\"b\\"), Additions: 1, Kinds: "ha"}}},
		{name: "deleted line reads as a header", patch: "diff --git a/f b/f\nindex 1..2 100644\n--- a/f\n+++ b/f\n@@ -1,3 +1,2 @@\n keep\n---- a/x\n-+++ b/y\n+@@ -9 +9 @@\n",
			want: []parsed{{OldPath: sp("f"), NewPath: sp("f"), Additions: 1, Deletions: 2, Kinds: "hcdda"}}},
		{name: "no newline at end", patch: "diff --git a/f b/f\nindex 1..2 100644\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n",
			want: []parsed{{OldPath: sp("f"), NewPath: sp("f"), Additions: 1, Deletions: 1, Kinds: "hdna"}}},
		{name: "rename without edits, spaces", patch: "diff --git a/x y b/z w\nsimilarity index 100%\nrename from x y\nrename to z w\n",
			want: []parsed{{OldPath: sp("x y"), NewPath: sp("z w")}}},
		{name: "same unquoted name with spaces", patch: "diff --git a/a b/c b/a b/c\nold mode 100644\nnew mode 100755\n",
			want: []parsed{{OldPath: sp("a b/c"), NewPath: sp("a b/c")}}},
		{name: "binary", patch: "diff --git a/b.bin b/b.bin\nindex 1..2 100644\nGIT binary patch\nliteral 3\nKcmZQzWC8#H2LJ>B\n\nliteral 3\nKcmZQzWC8#H2LJ>B\n\n",
			want: []parsed{{OldPath: sp("b.bin"), NewPath: sp("b.bin"), Binary: true}}},
		{name: "short hunk then next file", patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n a\ndiff --git a/g b/g\n--- a/g\n+++ b/g\n@@ -1 +1 @@\n-x\n+y\n",
			want: []parsed{{OldPath: sp("f"), NewPath: sp("f"), Kinds: "hc"}, {OldPath: sp("g"), NewPath: sp("g"), Additions: 1, Deletions: 1, Kinds: "hda"}}},
		{name: "bad quote", patch: "diff --git \"a/\\q\" \"b/\\q\"\n--- \"a/\\9\n+++ \"b/\n",
			want: []parsed{{OldPath: sp(`"a/\9`), NewPath: sp(`"b/`)}}},
	}
	patches := make([]string, len(cases))
	for i, tc := range cases {
		patches[i] = tc.patch
	}
	got := parseInPage(t, p, patches)
	for i, tc := range cases {
		require.Equal(t, tc.want, got[i], tc.name)
	}

	// Mutations of the real patch: lines dropped, doubled, cut short or
	// given a stray byte. The parser never throws, and each file's
	// counts are its lines'.
	for seed := 1; seed <= 4; seed++ {
		fuzz := p.eval(`import(document.querySelector('script[type=module]').src.replace(/app\.js$/, 'changes.js')).then((m) => {
		let seed = ` + strconv.Itoa(seed) + `;
		const rnd = (n) => { seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0; return seed % n; };
		const src = ` + js(string(cs.Patch)) + `.split('\n');
		const junk = ['+', '-', ' ', '\\', '@@ -1,2 +1 @@', 'diff --git ', '"', '--- ', '+++ /dev/null', 'GIT binary patch', '\u0000', '\t'];
		let runs = 0;
		for (; runs < 500; runs++) {
			const lines = src.slice();
			for (let k = 1 + rnd(6); k > 0; k--) {
				const at = rnd(lines.length);
				switch (rnd(4)) {
					case 0: lines.splice(at, 1); break;
					case 1: lines.splice(at, 0, lines[at] || ''); break;
					case 2: lines[at] = (lines[at] || '').slice(0, rnd(8)); break;
					default: lines[at] = junk[rnd(junk.length)] + (lines[at] || '').slice(rnd(4));
				}
			}
			let files;
			try { files = m.parsePatch(lines.join('\n')); } catch (e) { return 'run ' + runs + ' threw: ' + e; }
			for (const f of files) {
				const adds = f.lines.filter((l) => l.kind === 'add').length;
				const dels = f.lines.filter((l) => l.kind === 'del').length;
				if (adds !== f.additions || dels !== f.deletions) return 'run ' + runs + ': counts differ from lines';
			}
		}
		return 'ok ' + runs;
	})`)
		require.Equal(t, "ok 500", fuzz, "seed %d", seed)
	}
}
