package harnessturn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/bench/internal/measure"
	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/demoagent"
	"github.com/jamhq/jam/internal/executor/local"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/acp"
	"github.com/jamhq/jam/internal/harness/claude"
	"github.com/jamhq/jam/internal/harness/codex"
	"github.com/jamhq/jam/internal/jamtest"
	"github.com/jamhq/jam/internal/realagent"
)

// Harnesses are the harnesses a run measures, in order: the demo agent
// (no model, no CLI to install) first.
var Harnesses = []string{"demo", "claude", "codex", "copilot", "opencode"}

// DemoEnv, set to a state directory, makes the benchmark's own
// executable serve the demo agent on its stdio (see RunDemoIfAsked).
const DemoEnv = "JAM_BENCH_DEMO_AGENT"

// RunDemoIfAsked serves the demo agent on stdio and exits, when the
// environment asks for it; otherwise it returns at once. jambench's main
// and this package's TestMain call it first.
func RunDemoIfAsked() {
	dir := os.Getenv(DemoEnv)
	if dir == "" {
		return
	}
	err := demoagent.Run(context.Background(), demoagent.Config{StateDir: dir}, os.Stdin, os.Stdout)
	if err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintln(os.Stderr, "demo agent:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Options configure a run.
type Options struct {
	// Harnesses to measure; default all of Harnesses. One whose CLI is
	// not installed is skipped (Result.Skipped says why).
	Harnesses []string
	// Turns is how many measured turns each way takes; default 30.
	Turns int
	// Warm is how many turns each way takes first, unmeasured (the first
	// starts the process); default 2.
	Warm int
	// Dir holds the daemons' data directories; default the system's
	// temporary directory. Keep it short (unix socket paths).
	Dir string
	// Log receives progress; nil discards it.
	Log io.Writer
	// Gap is the pause before each turn, either way; default 250 ms. A
	// CLI keeps working for a while after its turn has ended (Claude Code
	// writes its transcript, among other things): without the pause that
	// work falls into the next turn, the other way's, and on two cores
	// it skews the comparison (it cost jam's Claude turns about 100 ms
	// at the median; each way alone, the overhead was 35-40 ms).
	Gap time.Duration
	// Step bounds one turn and one process start; default 3 minutes.
	Step time.Duration
	// DaemonLog, when set, receives the daemons' log at debug level
	// (timestamps of each step of a turn); it slows them a little.
	DaemonLog io.Writer
}

func (o Options) withDefaults() Options {
	if len(o.Harnesses) == 0 {
		o.Harnesses = Harnesses
	}
	if o.Turns <= 0 {
		o.Turns = 30
	}
	if o.Warm <= 0 {
		o.Warm = 2
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Step <= 0 {
		o.Step = 3 * time.Minute
	}
	if o.Gap <= 0 {
		o.Gap = 250 * time.Millisecond
	}
	return o
}

// Figures are one way's turn times.
type Figures struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

func figures(lat []time.Duration) Figures {
	s := slices.Clone(lat)
	slices.Sort(s)
	f := Figures{Count: len(s)}
	if len(s) > 0 {
		f.P50, f.P90, f.P99, f.Max = measure.Quantile(s, 0.5), measure.Quantile(s, 0.9), measure.Quantile(s, 0.99), s[len(s)-1]
	}
	return f
}

// Result is one harness's run.
type Result struct {
	Harness string `json:"harness"`
	// Skipped, when set, says why the harness was not measured.
	Skipped string `json:"skipped,omitempty"`
	// Direct is the adapter driving the CLI with no daemon: from the
	// prompt sent to the turn's end with its answer.
	Direct Figures `json:"direct"`
	// Reply is through jam: from the person's post until the agent's
	// reply is in the room; Settled until the message shows processed
	// for the agent.
	Reply   Figures `json:"reply"`
	Settled Figures `json:"settled"`
	// FirstDirect and FirstReply are the first warm-up turn of each way,
	// which includes the CLI's start (in jam, the lease's too).
	FirstDirect time.Duration `json:"first_direct_ns"`
	FirstReply  time.Duration `json:"first_reply_ns"`
	// Phases split the measured turns through jam by the daemon's own
	// event stream (see Phases), median of each.
	Phases []Phase `json:"phases"`
	// The raw turn times, in the order they were taken.
	DirectTurns  []time.Duration `json:"direct_turns_ns"`
	ReplyTurns   []time.Duration `json:"reply_turns_ns"`
	SettledTurns []time.Duration `json:"settled_turns_ns"`
}

// Phase is one step of a turn through jam: the median time from one
// point to the next, over the measured turns.
type Phase struct {
	Name   string        `json:"name"`
	Median time.Duration `json:"median_ns"`
	// Turns is how many turns had both points in the event stream.
	Turns int `json:"turns"`
}

// phasePoints are the points of a turn through jam, in order: the post
// and the reply seen on the person's socket (taken by the benchmark), and
// between and after them jamd's events for the message (their times are
// jamd's own, taken as each was published). Each Phase runs from one
// point to the next.
var phasePoints = []struct{ kind, phase string }{
	{"post", ""},
	{"message.spooled", "post → spooled"},
	{"message.delivered", "spooled → delivered"},
	{"turn.running", "delivered → turn running"},
	{"seen", "turn running → reply seen"},
	{"message.settled", "reply seen → settled"},
}

// Overhead is Reply's median and p99 over Direct's.
func (r Result) Overhead() (p50, p99 time.Duration) {
	return r.Reply.P50 - r.Direct.P50, r.Reply.P99 - r.Direct.P99
}

// Run measures each harness in turn.
func Run(ctx context.Context, o Options) ([]Result, error) {
	o = o.withDefaults()
	var out []Result
	for _, name := range o.Harnesses {
		r, err := runOne(ctx, o, name)
		if err != nil {
			return out, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// subject is one harness set up against the fake model: the same argv
// and environment serve both ways.
type subject struct {
	h       harness.Harness
	kind    string // the runtime's harness key; "" is acp
	argv    []string
	env     []string
	secrets []string
	// check says whether an answer is the echo of prompt.
	check func(answer, prompt string) bool
}

func contains(answer, prompt string) bool { return strings.Contains(answer, prompt) }

// prepare sets harness name up against model; errSkipped when its CLI is
// not installed.
func prepare(f *fixture, name string, model *fakemodel.Server) (s subject, err error) {
	err = guard(func() {
		switch name {
		case "demo":
			exe, err := os.Executable()
			if err != nil {
				f.Fatal(err)
			}
			s = subject{h: acp.Harness{}, argv: []string{exe}, env: []string{"PATH=" + os.Getenv("PATH"), DemoEnv + "=" + f.TempDir()}}
		case "claude":
			cl := realagent.NewClaude(f, model)
			s = subject{h: claude.Harness{}, kind: claude.Name, argv: cl.Command(), env: cl.Env}
		case "codex":
			cx := realagent.NewCodex(f, model)
			s = subject{h: codex.Harness{}, kind: codex.Name, argv: cx.Command(), env: cx.Env, secrets: []string{realagent.CodexKey}}
		case "copilot":
			cp := realagent.NewCopilot(f, model)
			s = subject{h: acp.Copilot, kind: acp.Copilot.Name(), argv: cp.Command(), env: cp.Env}
		case "opencode":
			oc := realagent.NewOpenCode(f, model)
			s = subject{h: acp.OpenCode, kind: acp.OpenCode.Name(), argv: oc.KindCommand(), env: oc.Env}
		default:
			f.Fatalf("unknown harness %q (have %s)", name, strings.Join(Harnesses, ", "))
		}
	})
	s.check = contains
	return s, err
}

func runOne(ctx context.Context, o Options, name string) (Result, error) {
	res := Result{Harness: name}
	f := &fixture{}
	defer f.close()
	model := fakemodel.New(fakemodel.Config{})
	if err := model.Start(); err != nil {
		return res, err
	}
	f.Cleanup(model.Stop)
	s, err := prepare(f, name, model)
	if errors.Is(err, errSkipped) {
		res.Skipped = err.Error()
		fmt.Fprintf(o.Log, "%-8s skipped: %v\n", name, err)
		return res, nil
	}
	if err != nil {
		return res, err
	}
	repo, err := gitRepo(f)
	if err != nil {
		return res, err
	}
	d, err := startDirect(ctx, o, s, repo)
	if err != nil {
		return res, fmt.Errorf("direct: %w", err)
	}
	defer d.stop()
	j, err := startJam(ctx, o, s, repo)
	if err != nil {
		return res, fmt.Errorf("through jam: %w", err)
	}
	defer j.stop()

	for i := range o.Warm + o.Turns {
		prompt := fmt.Sprintf("turn %03d: say hello", i)
		var dt, rt, st time.Duration
		var derr, jerr error
		// Alternate which way goes first, so that neither always follows
		// the other's work.
		directTurn := func() {
			if derr = pause(ctx, o.Gap); derr == nil {
				dt, derr = d.turn(ctx, o, j.promptText(prompt), prompt)
			}
		}
		jamTurn := func() {
			if jerr = pause(ctx, o.Gap); jerr == nil {
				rt, st, jerr = j.turn(ctx, o, prompt)
			}
		}
		if i%2 == 0 {
			directTurn()
			jamTurn()
		} else {
			jamTurn()
			directTurn()
		}
		if err := errors.Join(derr, jerr); err != nil {
			return res, fmt.Errorf("turn %d: %w", i, err)
		}
		switch {
		case i == 0:
			res.FirstDirect, res.FirstReply = dt, rt
		case i >= o.Warm:
			res.DirectTurns = append(res.DirectTurns, dt)
			res.ReplyTurns = append(res.ReplyTurns, rt)
			res.SettledTurns = append(res.SettledTurns, st)
		}
		fmt.Fprintf(o.Log, "%-8s turn %2d: direct %7.1f ms  through jam: reply %7.1f ms, settled %7.1f ms\n",
			name, i, measure.Ms(dt), measure.Ms(rt), measure.Ms(st))
	}
	res.Direct, res.Reply, res.Settled = figures(res.DirectTurns), figures(res.ReplyTurns), figures(res.SettledTurns)
	res.Phases = j.phases(o.Warm)
	return res, errors.Join(d.stop(), j.stop())
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// gitRepo makes a git repository with one commit, the direct way's
// working directory and the owned agent's repository.
func gitRepo(f *fixture) (string, error) {
	dir := filepath.Join(f.TempDir(), "app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("app\n"), 0o644); err != nil {
		return "", err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git %s: %v: %s", args[0], err, out)
		}
	}
	return dir, nil
}

// direct is the adapter driving one long-lived process, no daemon.
type direct struct {
	p      harness.Process
	thread harness.Thread
	check  func(answer, prompt string) bool
}

func startDirect(ctx context.Context, o Options, s subject, repo string) (*direct, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Step)
	defer cancel()
	p, err := s.h.Launch(ctx, harness.LaunchSpec{Argv: s.argv, Executor: local.New(), Dir: repo, Env: s.env,
		Secrets: s.secrets, Logger: slog.New(slog.DiscardHandler), HandshakeTimeout: o.Step, Policy: harness.PolicyAllow})
	if err != nil {
		return nil, err
	}
	thread, err := p.Open(ctx, repo)
	if err != nil {
		return nil, errors.Join(err, p.Stop(context.Background()))
	}
	return &direct{p: p, thread: thread, check: s.check}, nil
}

// turn gives the CLI text, the prompt as jam gives it (see promptText).
func (d *direct) turn(ctx context.Context, o Options, text, prompt string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Step)
	defer cancel()
	start := time.Now()
	out, err := d.p.Prompt(ctx, d.thread, harness.Input{Text: text}, nil)
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("direct: %w", err)
	}
	if out.StopReason != harness.StopCompleted || !d.check(out.Text, prompt) {
		return 0, fmt.Errorf("direct: turn ended %s with %q, not the echo of %q", out.Reason(), out.Text, prompt)
	}
	return took, nil
}

func (d *direct) stop() error {
	if d.p == nil {
		return nil
	}
	p := d.p
	d.p = nil
	return p.Stop(context.Background())
}

// jam is a daemon on its embedded hub with an owned agent of the harness
// in one room, watched by the person's own socket on the hub (as the web
// UI of a person watches a room): the reply and the settlement are seen
// when the hub pushes them, not by polling.
type jam struct {
	d     *jamtest.Daemon
	owner *band.Client
	agent wire.Agent
	room  string
	seen  map[string]bool // the agent's messages already counted
	check func(answer, prompt string) bool
	// sender is the person's name as the hub shows it on their posts,
	// which jam's prompt to the agent names.
	sender string

	pushes     chan push // the room's message pushes, as they arrive
	stopFeed   context.CancelFunc
	feed       sync.WaitGroup
	feedErr    error // set by the feed's goroutine, read after feed.Wait
	feedUp     chan struct{}
	feedUpOnce sync.Once

	events    *apiclient.EventStream
	eventsRun sync.WaitGroup
	mu        sync.Mutex
	points    map[string]map[string]time.Time // guarded by mu: by message, the first time of each point
	pointed   chan struct{}                   // a point was added
	turns     []string                        // the turns' messages, in order
}

// push is one message the hub pushed, with when it arrived.
type push struct {
	at  time.Time
	msg protocol.Message
}

func startJam(ctx context.Context, o Options, s subject, repo string) (_ *jam, err error) {
	dir, err := os.MkdirTemp(o.Dir, "jb-ht")
	if err != nil {
		return nil, err
	}
	jo := jamtest.Options{DataDir: dir}
	if o.DaemonLog != nil {
		jo.Log, jo.LogLevel = o.DaemonLog, "debug"
	}
	d, err := jamtest.Start(ctx, jo)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	j := &jam{d: d, seen: map[string]bool{}, check: s.check, pushes: make(chan push, 1024), feedUp: make(chan struct{}),
		points: map[string]map[string]time.Time{}, pointed: make(chan struct{}, 1)}
	defer func() {
		if err != nil {
			err = errors.Join(err, j.stop())
		}
	}()
	if j.owner, err = d.Owner(); err != nil {
		return nil, err
	}
	me, err := j.owner.Profile(ctx)
	if err != nil {
		return nil, fmt.Errorf("the person's profile: %w", err)
	}
	j.sender = me.Handle // until a post of theirs shows the name
	// The same command and environment as the direct way, on the local
	// executor: what differs is jam alone (see the package doc).
	rt := &wire.AgentRuntime{Harness: s.kind, Command: s.argv, Env: s.env, Permission: "allow", Sandbox: "local",
		Repo: repo, HandshakeTimeout: o.Step.String()}
	if j.agent, err = d.Client.AgentAdd(ctx, wire.AgentAddRequest{Name: "bench", Runtime: rt}); err != nil {
		return nil, fmt.Errorf("add agent: %w", err)
	}
	room, err := d.Client.RoomCreate(ctx, wire.RoomCreateRequest{Title: "bench", Agents: []string{"bench"}})
	if err != nil {
		return nil, fmt.Errorf("create room: %w", err)
	}
	j.room = room.ID
	feed, err := band.NewHumanFeed(band.HumanFeedConfig{Client: j.owner, Logger: slog.New(slog.DiscardHandler)}, me.ID, j.onEvent)
	if err != nil {
		return nil, err
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	j.stopFeed = cancel
	j.feed.Go(func() { j.feedErr = feed.Run(fctx) })
	select {
	case <-j.feedUp:
	case <-time.After(o.Step):
		return nil, errors.New("the person's socket did not come up")
	}
	if err := feed.Pin(ctx, j.room); err != nil {
		return nil, fmt.Errorf("watch the room: %w", err)
	}
	if j.events, err = d.Client.Events(fctx, wire.EventsRequest{After: wire.EventsLive}); err != nil {
		return nil, fmt.Errorf("jamd's events: %w", err)
	}
	j.eventsRun.Go(j.readEvents)
	return j, nil
}

// readEvents keeps the first time of each of a message's points, until
// the stream ends.
func (j *jam) readEvents() {
	for {
		ev, err := j.events.Next()
		if err != nil {
			return
		}
		if ev.MessageID != "" {
			j.point(ev.MessageID, ev.Kind, ev.At)
		}
	}
}

func (j *jam) point(msg, kind string, at time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	m := j.points[msg]
	if m == nil {
		m = map[string]time.Time{}
		j.points[msg] = m
	}
	if _, ok := m[kind]; !ok {
		m[kind] = at
		select {
		case j.pointed <- struct{}{}:
		default:
		}
	}
}

// complete says whether the last turn has all its points: jamd's events
// reach the stream after the hub's pushes, so the last ones may still be
// on their way when the turns are done.
func (j *jam) complete() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.turns) == 0 {
		return true
	}
	last := j.points[j.turns[len(j.turns)-1]]
	for _, p := range phasePoints {
		if _, ok := last[p.kind]; !ok {
			return false
		}
	}
	return true
}

// phases are the medians of each phase over the turns after the first
// warm, once the last turn's events are in (or after a few seconds).
func (j *jam) phases(warm int) []Phase {
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for !j.complete() {
		select {
		case <-j.pointed:
			continue
		case <-deadline.C:
		}
		break
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []Phase
	for i := 1; i < len(phasePoints); i++ {
		var ds []time.Duration
		for _, msg := range j.turns[min(warm, len(j.turns)):] {
			from, ok1 := j.points[msg][phasePoints[i-1].kind]
			to, ok2 := j.points[msg][phasePoints[i].kind]
			if ok1 && ok2 {
				ds = append(ds, to.Sub(from))
			}
		}
		out = append(out, Phase{Name: phasePoints[i].phase, Median: figures(ds).P50, Turns: len(ds)})
	}
	return out
}

// onEvent is the person's feed: it keeps the room's message pushes. A
// push that finds the buffer full is dropped, which the turn's timeout
// then shows (a turn reads them as they come, so it never fills).
func (j *jam) onEvent(e band.HumanEvent) {
	switch {
	case e.Kind == band.HumanState && e.State == band.StateUp:
		j.feedUpOnce.Do(func() { close(j.feedUp) })
	case e.Kind == band.HumanUpsert && e.Room == j.room && e.Message != nil:
		select {
		case j.pushes <- push{at: time.Now(), msg: *e.Message}:
		default:
		}
	}
}

// promptText is the text jam gives the CLI for the person's post of
// prompt (runtime's prompt: the sender, then the message as posted), so
// that both ways give the CLI the same input.
func (j *jam) promptText(prompt string) string {
	return fmt.Sprintf("%s wrote in the room:\n@%s %s", j.sender, j.agent.Handle, prompt)
}

// turn posts prompt to the agent and reads the room's pushes until the
// agent's reply is there and the message is processed: the times from
// the post to each.
func (j *jam) turn(ctx context.Context, o Options, prompt string) (reply, settled time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, o.Step)
	defer cancel()
	// What an earlier turn left (its own late pushes) is not this turn's.
	for len(j.pushes) > 0 {
		p := <-j.pushes
		if p.msg.SenderID == j.agent.AgentID {
			j.seen[p.msg.ID] = true
		}
	}
	start := time.Now()
	sent, err := j.owner.SendChatMessage(ctx, j.room, "@"+j.agent.Handle+" "+prompt, []protocol.Mention{{ID: j.agent.AgentID}})
	if err != nil {
		return 0, 0, fmt.Errorf("post: %w", err)
	}
	j.point(sent.ID, "post", start)
	j.turns = append(j.turns, sent.ID)
	for reply == 0 || settled == 0 {
		var p push
		select {
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("no reply and settlement within %s (reply %v, settled %v)", o.Step, reply, settled)
		case p = <-j.pushes:
		}
		m := p.msg
		switch {
		case m.SenderID == j.agent.AgentID && m.MessageType == protocol.MessageText && !j.seen[m.ID] && reply == 0:
			j.seen[m.ID] = true
			if !j.check(m.Content, prompt) {
				return 0, 0, fmt.Errorf("reply %q is not the echo of %q", m.Content, prompt)
			}
			reply = p.at.Sub(start)
			j.point(sent.ID, "seen", p.at)
		case m.ID == sent.ID && settled == 0:
			if m.SenderName != "" {
				j.sender = m.SenderName
			}
			switch m.Metadata.DeliveryStatus[j.agent.AgentID].Status {
			case "processed":
				settled = p.at.Sub(start)
			case "failed":
				return 0, 0, fmt.Errorf("message %s failed on the hub", sent.ID)
			}
		}
	}
	return reply, settled, nil
}

func (j *jam) stop() error {
	if j.d == nil {
		return nil
	}
	var ferr error
	if j.stopFeed != nil {
		j.stopFeed()
		if j.events != nil {
			j.events.Close()
			j.eventsRun.Wait()
		}
		j.feed.Wait()
		if j.feedErr != nil && !errors.Is(j.feedErr, context.Canceled) {
			ferr = fmt.Errorf("the person's socket: %w", j.feedErr)
		}
	}
	d := j.d
	j.d = nil
	return errors.Join(ferr, d.Stop())
}
