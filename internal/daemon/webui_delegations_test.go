package daemon_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/changeset"
	"github.com/jamhq/jam/internal/delegation"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// TestWebUI_delegations: three owned demo agents have sessions in two
// rooms; the daemon's store holds three delegations between them: a
// review of the coder's change set by the reviewer in another room,
// submitted with two findings after one invalid result; a test by the
// tester, running; and a review the tester asked for in turn, running. The
// room shows them as a tree (the tester's own delegation under the test),
// each with its agents, role, state and verdict in words, the attempts,
// and a link to a child's room elsewhere; a room without any shows no
// panel. The review's page shows its instructions, its inputs (the change
// set links to its turn) and its findings; Cancel in the room and on a
// page cancels a running delegation. Screenshots at desktop and phone
// widths.
func TestWebUI_delegations(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	gitDir, base, end, _ := changesRepo(t)
	cfg := testConfig(t)
	cfg.HTTPAddr = "127.0.0.1:0"
	r := start(t, cfg)
	status := r.waitReady(t)
	ctx := t.Context()
	c := r.client
	owner := ownerClient(t, status)

	agents := map[string]wire.Agent{}
	for _, name := range []string{"coder", "reviewer", "tester"} {
		a, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: name, Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow"}})
		require.NoError(t, err)
		agents[name] = a
	}
	work, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "Work", Agents: []string{"coder", "reviewer", "tester"}})
	require.NoError(t, err)
	review, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "Review", Agents: []string{"reviewer"}})
	require.NoError(t, err)
	quiet, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "Quiet", Agents: []string{"coder"}})
	require.NoError(t, err)

	// One message in each room gives every agent there a turn of its
	// session: three in Work, the reviewer's in Review.
	mention := func(names ...string) (string, []protocol.Mention) {
		var text []string
		var ms []protocol.Mention
		for _, n := range names {
			text = append(text, "@"+agents[n].Handle)
			ms = append(ms, protocol.Mention{ID: agents[n].AgentID})
		}
		return strings.Join(text, " ") + " note start", ms
	}
	text, ms := mention("coder", "reviewer", "tester")
	_, err = owner.SendChatMessage(ctx, work.ID, text, ms)
	require.NoError(t, err)
	text, ms = mention("reviewer")
	_, err = owner.SendChatMessage(ctx, review.ID, text, ms)
	require.NoError(t, err)
	sessions := map[string]wire.Session{} // "agent room" -> session
	require.Eventually(t, func() bool {
		ss, err := c.Sessions(ctx)
		require.NoError(t, err)
		for _, s := range ss {
			if s.Room == quiet.ID {
				continue // the coder's, idle
			}
			ts, err := c.Turns(ctx, s.ID)
			require.NoError(t, err)
			if s.CurrentTurn != "" || len(ts) != 1 || ts[0].State != "succeeded" {
				return false
			}
			for n, a := range agents {
				if a.Peer == s.Agent {
					sessions[n+" "+s.Room] = s
				}
			}
		}
		return len(sessions) == 4
	}, 60*time.Second, 20*time.Millisecond, "four sessions in Work and Review, their first turns ended")
	sid := func(agent string, room wire.Room) jam.SessionID {
		s, ok := sessions[agent+" "+room.ID]
		require.True(t, ok, "%s has a session in %s", agent, room.Title)
		id, err := jam.ParseID[jam.SessionID](s.ID)
		require.NoError(t, err)
		return id
	}
	coder, tester := sid("coder", work), sid("tester", work)

	// The coder's turn left a change set: the review's subject.
	st := openStore(t, cfg)
	ws := status.Workspace.ID
	turns, err := c.Turns(ctx, string(coder))
	require.NoError(t, err)
	require.Len(t, turns, 1)
	turn, err := jam.ParseID[jam.TurnID](turns[0].ID)
	require.NoError(t, err)
	cs := recordChangeSet(t, st, ws, coder, turn, gitDir, base, end, store.ChangeSetTurn, changeset.Options{})

	m := jam.NewMinter(nil, nil)
	at := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
	// running creates a delegation of parent to agent's session child and
	// starts it.
	running := func(parent jam.SessionID, role jam.SessionRole, agent string, child jam.SessionID, instructions string, in store.DelegationInputs, n int) store.Delegation {
		d, err := st.DelegationCreate(ctx, store.Delegation{ID: jam.New[jam.DelegationID](m), WorkspaceID: ws, Parent: parent, Role: role,
			Agent: agents[agent].Peer, Instructions: instructions, Inputs: in, Contract: mustContract(t, string(role)).Doc, ContractName: string(role),
			MaxAttempts: delegation.DefaultMaxAttempts, CreatedAt: at.Add(time.Duration(n) * time.Second)})
		require.NoError(t, err)
		d, err = st.DelegationSetChild(ctx, store.DelegationSetChildParams{WorkspaceID: ws, ID: d.ID, Child: child, At: d.CreatedAt})
		require.NoError(t, err)
		return d
	}
	const instructions = "Review the parser change.\nLook hard at the error paths."
	reviewed := running(coder, jam.RoleReview, "reviewer", sid("reviewer", review), instructions,
		store.DelegationInputs{ChangeSetID: cs.ID, Commit: end}, 0)
	reviewed, err = st.DelegationRecordAttempt(ctx, store.DelegationAttemptParams{WorkspaceID: ws, ID: reviewed.ID, Generation: reviewed.Generation, At: at})
	require.NoError(t, err)
	result := `{"verdict":"request_changes","summary":"Two problems.","findings":[` +
		`{"path":"parser.go","line":42,"severity":"major","message":"the error of Close is dropped"},` +
		`{"path":"parser_test.go","line":7,"severity":"minor","message":"no test of an empty input"}]}`
	require.Empty(t, delegation.Validate(mustContract(t, store.ContractReview), json.RawMessage(result)), "the result keeps the review contract")
	reviewed, _, err = st.DelegationSubmit(ctx, store.DelegationSubmitParams{WorkspaceID: ws, ID: reviewed.ID, Child: reviewed.Child, Result: []byte(result), At: at})
	require.NoError(t, err)
	tested := running(coder, jam.RoleTest, "tester", tester, "Run the parser's tests.", store.DelegationInputs{Commit: end}, 1)
	nested := running(tester, jam.RoleReview, "reviewer", sid("reviewer", work), "Review the failing test's fixture.", store.DelegationInputs{}, 2)

	p := openBrowser(t)
	p.do(chromedp.EmulateViewport(1280, 800))
	p.signIn(signInLink(t, r))

	// A room without delegations draws no panel.
	p.do(chromedp.Navigate(signInBase(t, r) + "#/rooms/" + quiet.ID))
	p.waitFor("the quiet room", `document.querySelector('#compose') !== null && document.querySelector('.room-head h1').textContent === 'Quiet'`)
	p.waitFor("its delegations read", `performance.getEntriesByType('resource').some((e) => e.name.includes('/v1/delegations'))`)
	require.Equal(t, "true 0", p.eval(`[document.querySelector('.delegations').hidden, document.querySelectorAll('.dlg-node').length].join(' ')`))

	node := func(d store.Delegation) string { return `.dlg-node[data-delegation=` + js(string(d.ID)) + `]` }
	rowText := func(d store.Delegation) string {
		return p.eval(`document.querySelector(` + js(node(d)+` > .dlg-row`) + `).textContent`)
	}
	p.do(chromedp.Navigate(signInBase(t, r) + "#/rooms/" + work.ID))
	p.waitFor("the tree, its agents named", `document.querySelectorAll('.delegations:not([hidden]) .dlg-node').length === 3 && [...document.querySelectorAll('.dlg-who')].every((e) => e.textContent.startsWith('@'))`)
	tree := p.eval(`JSON.stringify([...document.querySelectorAll('#dlg-tree > .dlg-node')].map((li) => [li.dataset.delegation, [...li.querySelectorAll(':scope > .dlg-children > .dlg-node')].map((x) => x.dataset.delegation)]))`)
	require.JSONEq(t, `[[`+js(string(tested.ID))+`,[`+js(string(nested.ID))+`]],[`+js(string(reviewed.ID))+`,[]]]`, tree,
		"newest first; the tester's delegation under the test it works on")
	require.Equal(t, "Delegations (3, 2 active)", p.eval(`document.querySelector('.dlg-toggle').textContent`))
	h := func(n string) string { return "@" + agents[n].Handle }
	require.Equal(t, h("coder")+" → "+h("reviewer")+"reviewstate submittedverdict changes requested1 of 3 invalidin Review", rowText(reviewed))
	require.Equal(t, "false", p.eval(`document.querySelector(`+js(node(reviewed)+` .dlg-verdict`)+`).dataset.good`), "request_changes is drawn red")
	require.Equal(t, "#/rooms/"+review.ID, p.eval(`document.querySelector(`+js(node(reviewed)+` a[data-child-room]`)+`).getAttribute('href')`))
	require.Equal(t, h("coder")+" → "+h("tester")+"teststate runningCancel", rowText(tested), "in this room: no room link; no verdict yet")
	require.Equal(t, h("tester")+" → "+h("reviewer")+"reviewstate runningCancel", rowText(nested))
	require.Equal(t, "Cancel the test by "+h("tester")+" for "+h("coder"),
		p.eval(`document.querySelector(`+js(node(tested)+` > .dlg-row button[data-cancel-delegation]`)+`).getAttribute('aria-label')`))
	require.Equal(t, "review by "+h("reviewer")+" for "+h("coder")+": submitted, changes requested. Details",
		p.eval(`document.querySelector(`+js(node(reviewed)+` a.dlg-link`)+`).getAttribute('aria-label')`))
	require.Equal(t, "0", p.eval(`String(document.querySelectorAll(`+js(node(reviewed)+` > .dlg-row button`)+`).length)`), "a submitted one has no Cancel")
	p.atWidths("webui-delegations-room")
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	require.Equal(t, "true", p.eval(`String(document.documentElement.scrollWidth <= innerWidth && document.querySelector('.delegations').scrollWidth <= document.querySelector('.delegations').clientWidth)`), "the tree fits a phone")
	p.do(chromedp.EmulateViewport(1280, 800))

	// The panel folds and unfolds.
	p.clickNow(`.dlg-toggle`)
	require.Equal(t, "false true", p.eval(`[document.querySelector('.dlg-toggle').getAttribute('aria-expanded'), document.querySelector('#dlg-tree').hidden].join(' ')`))
	p.clickNow(`.dlg-toggle`)
	require.Equal(t, "true false", p.eval(`[document.querySelector('.dlg-toggle').getAttribute('aria-expanded'), document.querySelector('#dlg-tree').hidden].join(' ')`))

	// The review's page: instructions, inputs, findings; no Cancel.
	p.do(chromedp.Click(chromedp.CSS(node(reviewed) + ` a.dlg-link`)))
	p.waitFor("the findings", `document.querySelectorAll('.dlg-findings li').length === 2`)
	require.Equal(t, "Review by "+h("reviewer"), p.eval(`document.querySelector('#page-title').textContent`))
	require.Equal(t, instructions, p.eval(`document.querySelector('[data-role=instructions]').textContent`))
	require.Equal(t, "parser.go:42 major the error of Close is dropped\nparser_test.go:7 minor no test of an empty input",
		p.eval(`[...document.querySelectorAll('.dlg-findings li')].map((li) => li.textContent).join('\n')`))
	require.Equal(t, "Two problems.", p.eval(`document.querySelector('.dlg-summary').textContent`))
	p.waitFor("the change set's link", `document.querySelector('[data-role=inputs] a[data-changeset-link]') !== null`)
	require.Equal(t, "#/sessions/"+string(coder)+"/turns/"+string(turn), p.eval(`document.querySelector('[data-role=inputs] a[data-changeset-link]').getAttribute('href')`))
	require.Contains(t, p.eval(`document.querySelector('[data-role=inputs]').textContent`), "Commit"+end[:12])
	require.Contains(t, p.eval(`document.querySelector('.dlg-badges').textContent`), "1 of 3 invalid")
	require.Equal(t, "0", p.eval(`String(document.querySelectorAll('[data-cancel-delegation]').length)`))
	require.Equal(t, "#/rooms/"+work.ID, p.eval(`document.querySelector('.delegation > header a').getAttribute('href')`), "back to the parent's room")
	p.atWidths("webui-delegation-review")

	// Cancel in the room: the test ends, the nested review runs on.
	p.do(chromedp.Navigate(signInBase(t, r) + "#/rooms/" + work.ID))
	p.waitFor("the tree again", `document.querySelectorAll('.delegations .dlg-node').length === 3`)
	p.clickNow(node(tested) + ` > .dlg-row button[data-cancel-delegation]`)
	p.waitFor("the test cancelled", `document.querySelector(`+js(node(tested))+`).dataset.state === 'cancelled' && document.querySelector(`+js(node(tested)+` > .dlg-row button`)+`) === null`)
	require.Equal(t, h("coder")+" → "+h("tester")+"teststate cancelled", rowText(tested))
	require.Equal(t, "Delegations (3, 1 active)", p.eval(`document.querySelector('.dlg-toggle').textContent`))
	got, err := st.DelegationGet(ctx, ws, tested.ID)
	require.NoError(t, err)
	require.Equal(t, store.DelegationCancelled, got.State)
	got, err = st.DelegationGet(ctx, ws, nested.ID)
	require.NoError(t, err)
	require.Equal(t, store.DelegationRunning, got.State)

	// The test's page lists the review its child asked for; Cancel there
	// is on the review's own page.
	p.do(chromedp.Click(chromedp.CSS(node(tested) + ` a.dlg-link`)))
	p.waitFor("the test's page", `document.querySelector('#page-title').textContent === 'Test by `+h("tester")+`' && document.querySelector('.dlg-further .dlg-node') !== null`)
	require.Contains(t, p.eval(`document.querySelector('[data-role=no-result]').textContent`), "No result: the delegation cancelled")
	require.Equal(t, "0", p.eval(`String(document.querySelectorAll('[data-cancel-delegation]').length)`))
	require.Equal(t, string(nested.ID)+" review by "+h("reviewer")+" for "+h("tester")+"state running",
		p.eval(`(() => { const li = document.querySelector('.dlg-further .dlg-node'); return li.dataset.delegation + ' ' + li.textContent; })()`))
	p.do(chromedp.Click(chromedp.CSS(`.dlg-further a.dlg-link`)))
	p.waitFor("the nested review's page", `document.querySelector('.turn-actions [data-cancel-delegation]') !== null`)
	require.Contains(t, p.eval(`document.querySelector('[data-role=no-result]').textContent`), "is working on it")
	p.clickNow(`.turn-actions [data-cancel-delegation]`)
	p.waitFor("the review cancelled", `document.querySelector('.dlg-badges .dlg-state').dataset.state === 'cancelled' && document.querySelector('[data-cancel-delegation]') === null`)
	require.Equal(t, "", p.eval(`document.querySelector('[data-role=delegation-action]').textContent`))
	got, err = st.DelegationGet(ctx, ws, nested.ID)
	require.NoError(t, err)
	require.Equal(t, store.DelegationCancelled, got.State)

	// A delegation made while the room is open comes with its event.
	p.do(chromedp.Navigate(signInBase(t, r) + "#/rooms/" + work.ID))
	p.waitFor("the tree again", `document.querySelectorAll('.delegations .dlg-node').length === 3`)
	late, err := st.DelegationCreate(ctx, store.Delegation{ID: jam.New[jam.DelegationID](m), WorkspaceID: ws, Parent: coder, Role: jam.RoleTest,
		Agent: agents["tester"].Peer, Instructions: "Run them again.", Contract: mustContract(t, store.ContractTest).Doc, ContractName: store.ContractTest,
		MaxAttempts: delegation.DefaultMaxAttempts, CreatedAt: time.Now()})
	require.NoError(t, err)
	require.Equal(t, "ok", p.eval(`(async () => {
		const { feed } = await import(document.querySelector('script[type=module]').src.replace(/app\.js$/, 'events.js'));
		const res = await fetch('/v1/delegations/`+string(late.ID)+`', { credentials: 'same-origin' });
		feed.handle({ kind: 'delegation.created', data: (await res.json()).delegation });
		return 'ok';
	})()`))
	p.waitFor("the new delegation, first", `document.querySelector('#dlg-tree > .dlg-node').dataset.delegation === `+js(string(late.ID)))
	require.Equal(t, h("coder")+" → "+h("tester")+"teststate pendingCancel", rowText(late))
	require.Equal(t, "Delegations (4, 1 active)", p.eval(`document.querySelector('.dlg-toggle').textContent`))

	// The review's child room lists it alone.
	p.do(chromedp.Navigate(signInBase(t, r) + "#/rooms/" + review.ID))
	p.waitFor("the review room's tree", `document.querySelector('.room-head h1').textContent === 'Review' && document.querySelectorAll('.delegations:not([hidden]) .dlg-node').length === 1`)
	require.Equal(t, string(reviewed.ID), p.eval(`document.querySelector('.dlg-node').dataset.delegation`))
	require.Equal(t, "0", p.eval(`String(document.querySelectorAll('.dlg-node a[data-child-room]').length)`), "its child is in this room")
	require.Equal(t, "from Work #/rooms/"+work.ID, p.eval(`(() => { const a = document.querySelector('.dlg-node a[data-parent-room]'); return a.textContent + ' ' + a.getAttribute('href'); })()`))
}

// mustContract is the built-in contract of that name.
func mustContract(t *testing.T, name string) *delegation.Contract {
	t.Helper()
	c, err := delegation.Builtin(name)
	require.NoError(t, err)
	return c
}
