package cli_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// The README's tutorial is kept true by running it. Each of its shell
// blocks is marked with a comment naming its step,
//
//	<!-- tutorial: NAME -->
//	```sh
//	...
//	```
//
// and TestREADMETutorial runs them all in order as one script, the
// "daemon" step in the background (it is the first terminal), each other
// step as a shell script that must succeed, with the checks of
// tutorialChecks after the step of that name. The "install" step is not
// run (the script runs jam itself); the "owned" step runs in a fresh git
// repository, and where the agent CLI its --harness names is not
// installed, with the demo harness in its place (its --env flags
// dropped): every other word of it is the README's.

// tutorialStep is one marked shell block of the README.
type tutorialStep struct {
	Name string
	Line int // of the marker
	Body string
}

var (
	tutorialMarker = regexp.MustCompile(`^<!-- tutorial: ([a-z][a-z0-9-]*) -->$`)
	harnessFlag    = regexp.MustCompile(`--harness ([a-z]+)`)
	envFlag        = regexp.MustCompile(` --env [A-Za-z_][A-Za-z0-9_]*(=[^ \n]*)?`)
)

// tutorialSteps reads the marked blocks of a README, in order.
func tutorialSteps(readme []byte) ([]tutorialStep, error) {
	var steps []tutorialStep
	sc := bufio.NewScanner(bytes.NewReader(readme))
	sc.Buffer(nil, 1<<20)
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return sc.Text(), true
	}
	for {
		l, ok := next()
		if !ok {
			break
		}
		m := tutorialMarker.FindStringSubmatch(l)
		if m == nil {
			if strings.Contains(l, "<!-- tutorial") {
				return nil, fmt.Errorf("README line %d: a tutorial marker is <!-- tutorial: NAME -->, not %q", line, l)
			}
			continue
		}
		st := tutorialStep{Name: m[1], Line: line}
		if fence, ok := next(); !ok || fence != "```sh" {
			return nil, fmt.Errorf("README line %d: the marker of step %s is not followed by a ```sh block", st.Line, st.Name)
		}
		var body strings.Builder
		for {
			l, ok := next()
			if !ok {
				return nil, fmt.Errorf("README line %d: the block of step %s does not end", st.Line, st.Name)
			}
			if l == "```" {
				break
			}
			body.WriteString(l + "\n")
		}
		st.Body = body.String()
		steps = append(steps, st)
	}
	return steps, sc.Err()
}

// tutorialChecks are the script lines run after a step: what the reader
// is told to expect, waited for where it comes later.
var tutorialChecks = map[string]string{
	"daemon": `exec jam status --wait 60s
waitmatch daemon.out '^  web ui +http://127\.0\.0\.1:[0-9]+/\?token=[0-9a-f]+ ' 30s
waitmatch daemon.out '^demo: agent @demo is in room "demo"' 60s
`,
	"demo": `stdout '^jamd is running'
exec sh -c 'while :; do jam room show demo > room.out; grep -q "You said" room.out && exit 0; sleep 0.1; done' &demoanswer&
waitmatch room.out '^    @owner You said: owner wrote in the room:$' 60s
wait demoanswer
exec jam room show demo
stdout '^#[0-9]+  [0-9-]+ [0-9:]+  owner  '
stdout '^    -> @owner/demo processed$'
`,
	"ui": `stdout '^http://127\.0\.0\.1:[0-9]+/\?token=[0-9a-f]+$'
`,
	"attached": `stdout '^added agent coder: handle owner/coder'
stdout ', mentioning @owner$'
stdout '^#[12]  [0-9-]+ [0-9:]+  owner  '
stdout '^    -> @owner/coder processed$'
stdout '^#[23]  [0-9-]+ [0-9:]+  coder  [0-9a-f]'
stdout '^    @owner hi, on it$'
`,
	"owned": `stdout '^added agent fixer'
exec sh -c 'while :; do jam room show "fix the build" > fix.out; grep -q "processed" fix.out && exit 0; sleep 0.1; done' &fixed&
waitmatch fix.out '^    -> @owner/fixer processed$' 180s
wait fixed
exec jam worktree list
stdout ' jam/sess_[0-9a-z]+ '
`,
}

// tutorialRequired are the steps the tutorial must keep.
var tutorialRequired = []string{"install", "daemon", "demo", "ui", "attached", "owned"}

func TestREADMETutorial(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := tutorialSteps(readme)
	if err != nil {
		t.Fatal(err)
	}
	script, err := tutorialScript(steps, exec.LookPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join("..", "..", "cmd", "jam", "main.go")); err != nil {
		t.Fatalf("the install step builds ./cmd/jam: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tutorial.txtar"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, scriptParams(dir))
}

// tutorialScript turns the README's steps into a testscript archive.
// lookPath finds an agent CLI (exec.LookPath, or a stand-in in tests).
func tutorialScript(steps []tutorialStep, lookPath func(string) (string, error)) (string, error) {
	seen := map[string]bool{}
	var order []string
	for _, st := range steps {
		if seen[st.Name] {
			return "", fmt.Errorf("README line %d: step %s is marked twice", st.Line, st.Name)
		}
		seen[st.Name] = true
		order = append(order, st.Name)
	}
	want := 0
	for _, name := range order {
		if want < len(tutorialRequired) && name == tutorialRequired[want] {
			want++
		}
	}
	if want < len(tutorialRequired) {
		return "", fmt.Errorf("the README's tutorial steps are %v; they must include %v in that order", order, tutorialRequired)
	}

	var sc, files strings.Builder
	sc.WriteString("# The README's tutorial, step by step (generated by TestREADMETutorial).\n")
	for _, st := range steps {
		file := "step-" + st.Name + ".sh"
		body := st.Body
		fmt.Fprintf(&sc, "\n# Step %s (README line %d).\n", st.Name, st.Line)
		switch st.Name {
		case "install":
			if !strings.Contains(body, "./cmd/jam") {
				return "", fmt.Errorf("README line %d: the install step does not build ./cmd/jam", st.Line)
			}
			sc.WriteString("# Not run: the script runs jam itself.\n")
			continue
		case "daemon":
			// One command, run by exec so that the daemon itself is the
			// background process: it gets the script's signals.
			cmd := shellCommands(body)
			if len(cmd) != 1 || !strings.HasPrefix(cmd[0], "jam up") {
				return "", fmt.Errorf("README line %d: the daemon step is not one jam up command: %q", st.Line, cmd)
			}
			body = "exec " + cmd[0] + "\n"
			// A loaded machine under the race detector stops the daemon's
			// agents slower than the default bound of a graceful stop.
			sc.WriteString("env JAM_SHUTDOWN_TIMEOUT=30s\n")
			fmt.Fprintf(&sc, "exec sh -c 'exec sh %s > daemon.out 2> daemon.err' &daemon&\n", file)
		case "owned":
			for _, m := range harnessFlag.FindAllStringSubmatch(body, -1) {
				cli := m[1]
				if _, err := lookPath(cli); err == nil || cli == "demo" {
					continue
				}
				fmt.Fprintf(&sc, "# %s is not installed: the demo harness stands in for it.\n", cli)
				body = strings.ReplaceAll(body, m[0], "--harness demo")
				body = envFlag.ReplaceAllString(body, "")
			}
			sc.WriteString("exec git init -q repo\n")
			sc.WriteString("exec git -C repo -c user.name=you -c user.email=you@example.com commit -q --allow-empty -m start\n")
			sc.WriteString("cd repo\n")
			fmt.Fprintf(&sc, "exec sh -e $WORK/%s\n", file)
			sc.WriteString("cd $WORK\n")
		default:
			fmt.Fprintf(&sc, "exec sh -e %s\n", file)
		}
		sc.WriteString(tutorialChecks[st.Name])
		fmt.Fprintf(&files, "-- %s --\n%s", file, body)
	}
	sc.WriteString("\n# Ctrl-C in the first terminal.\nstopdaemon $JAM_DATA_DIR 40s\nwait daemon\ngrep 'msg=\"jamd stopped\" component=jamd took=' daemon.err\nlogkeys daemon.err 5\n")
	return sc.String() + files.String(), nil
}

// shellCommands are a block's lines without their comments ("  # …"
// after a command, or a whole line) and blank lines.
func shellCommands(body string) []string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// TestTutorialScript: the README's blocks become the script's steps, its
// checks follow them, and a README that lost a step or broke a marker
// is refused.
func TestTutorialScript(t *testing.T) {
	t.Parallel()
	block := func(name, body string) string {
		return "<!-- tutorial: " + name + " -->\n```sh\n" + body + "```\n\n"
	}
	full := "# x\n" + block("install", "go install ./cmd/jam\n") + block("daemon", "jam up --demo     # the daemon\n") +
		block("demo", "jam status\n") + "text\n" + block("ui", "jam ui\n") + block("attached", "jam agent add coder\n") +
		block("owned", "jam agent add fixer --harness claude --repo \"$PWD\" --env ANTHROPIC_API_KEY --env X=1\njam session list\n")
	steps, err := tutorialSteps([]byte(full))
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 6 || steps[2].Name != "demo" || steps[2].Body != "jam status\n" || steps[2].Line != 12 {
		t.Fatalf("steps = %+v", steps)
	}
	missing := func(string) (string, error) { return "", exec.ErrNotFound }
	script, err := tutorialScript(steps, missing)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"env JAM_SHUTDOWN_TIMEOUT=30s\nexec sh -c 'exec sh step-daemon.sh > daemon.out 2> daemon.err' &daemon&\nexec jam status --wait 60s\n",
		"exec sh -e step-demo.sh\nstdout '^jamd is running'\n",
		"# claude is not installed: the demo harness stands in for it.\n",
		"-- step-owned.sh --\njam agent add fixer --harness demo --repo \"$PWD\"\njam session list\n",
		"-- step-ui.sh --\njam ui\n",
		"-- step-daemon.sh --\nexec jam up --demo\n",
		"stopdaemon $JAM_DATA_DIR 40s\nwait daemon\n",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	if strings.Contains(script, "-- step-install.sh --") {
		t.Errorf("the install step is in the script:\n%s", script)
	}
	found := func(string) (string, error) { return "/usr/bin/claude", nil }
	script, err = tutorialScript(steps, found)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(script, "--harness claude --repo \"$PWD\" --env ANTHROPIC_API_KEY --env X=1\n") {
		t.Errorf("an installed CLI was replaced:\n%s", script)
	}

	for name, readme := range map[string]string{
		"a step lost":         strings.Replace(full, block("ui", "jam ui\n"), "", 1),
		"steps out of order":  strings.Replace(full, block("install", "go install ./cmd/jam\n"), "", 1) + block("install", "go install ./cmd/jam\n"),
		"a step twice":        full + block("demo", "jam status\n"),
		"a marker without sh": full + "<!-- tutorial: more -->\n```\njam x\n```\n",
		"a misspelt marker":   full + "<!-- tutorial more -->\n",
		"a block not closed":  full + "<!-- tutorial: more -->\n```sh\njam x\n",
		"two daemon commands": strings.Replace(full, "jam up --demo     # the daemon\n", "jam up\njam up --demo\n", 1),
	} {
		steps, err := tutorialSteps([]byte(readme))
		if err == nil {
			_, err = tutorialScript(steps, missing)
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
