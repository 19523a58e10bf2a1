package claude_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/harness/harnesstest"
)

// Environment of the scripted fake claude (the test binary, started
// again): fakeEnv turns it on, edgeEnv names the harnesstest.Edge it
// plays, pidFileEnv where it records its pid, stateEnv the directory its
// sessions are kept in.
const (
	fakeEnv    = "JAM_CLAUDE_TEST_FAKE"
	edgeEnv    = "JAM_CLAUDE_TEST_EDGE"
	pidFileEnv = "JAM_CLAUDE_TEST_PID_FILE"
	stateEnv   = "JAM_CLAUDE_TEST_STATE"
)

// fakeSession is what the fake keeps of a session across processes.
type fakeSession struct {
	Prompts []string `json:"prompts"`
	Cost    float64  `json:"cost"`
}

// runFakeClaudeIfAsked plays Claude Code's stream-json side when the
// test binary was started as the fake: it answers initialize and
// get_usage, answers "echo: " and the prompt in two text deltas, asks
// can_use_tool for a prompt containing "[tool]", thinks aloud for one
// containing "[slow]" until interrupted (then says "after cancel" and ends
// error_during_execution), keeps each session's prompts in the state
// directory (the "history" a resumed session's model sees, recorded in
// <id>.seen), and refuses --resume of a session it does not have as the
// real CLI does.
func runFakeClaudeIfAsked() {
	if os.Getenv(fakeEnv) != "1" {
		return
	}
	os.Exit(fakeClaude())
}

func fakeClaude() int {
	edge := harnesstest.Edge(os.Getenv(edgeEnv))
	if edge == harnesstest.EdgeSilentHandshake {
		_ = os.WriteFile(os.Getenv(pidFileEnv), []byte(strconv.Itoa(os.Getpid())), 0o600)
		go func() { _, _ = bufio.NewReader(os.Stdin).WriteTo(&bytes.Buffer{}) }()
		time.Sleep(time.Hour)
		return 0
	}
	state := os.Getenv(stateEnv)
	var sid string
	resume := false
	args := os.Args[1:]
	for i, a := range args {
		if (a == "--session-id" || a == "--resume") && i+1 < len(args) {
			sid, resume = args[i+1], a == "--resume"
		}
	}
	file := filepath.Join(state, sid+".json")
	var sess fakeSession
	if b, err := os.ReadFile(file); err == nil {
		_ = json.Unmarshal(b, &sess)
	} else if resume {
		fmt.Println(`{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":0,"session_id":"` + sid + `","total_cost_usd":0}`)
		fmt.Fprintln(os.Stderr, "No conversation found with session ID: "+sid)
		return 1
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		mu.Lock()
		defer mu.Unlock()
		_, _ = out.Write(append(b, '\n'))
		_ = out.Flush()
	}
	raw := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = out.WriteString(s)
		_ = out.Flush()
	}
	delta := func(kind, text string) {
		d := map[string]any{"type": kind}
		if kind == "thinking_delta" {
			d["thinking"] = text
		} else {
			d["text"] = text
		}
		send(map[string]any{"type": "stream_event", "session_id": sid, "parent_tool_use_id": nil,
			"event": map[string]any{"type": "content_block_delta", "index": 0, "delta": d}})
	}
	result := func(subtype string, isError bool, text string) {
		sess.Cost += 0.01
		b, _ := json.Marshal(sess)
		_ = os.WriteFile(file, b, 0o600)
		send(map[string]any{"type": "result", "subtype": subtype, "is_error": isError, "result": text, "session_id": sid,
			"stop_reason": "end_turn", "total_cost_usd": sess.Cost,
			"usage":      map[string]any{"input_tokens": 11, "output_tokens": 7, "cache_creation_input_tokens": 2, "cache_read_input_tokens": 3},
			"modelUsage": map[string]any{"fake-claude-model": map[string]any{"outputTokens": 7}}, "extra_field": []int{1}})
	}
	// Control responses and interrupts arrive while a turn runs: one
	// goroutine reads stdin, turns run on this one.
	users := make(chan string, 4)
	interrupts := make(chan struct{}, 4)
	var answersMu sync.Mutex
	answers := map[string]chan json.RawMessage{}
	go func() {
		defer close(users)
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m struct {
				Type      string `json:"type"`
				RequestID string `json:"request_id"`
				Request   struct {
					Subtype string `json:"subtype"`
				} `json:"request"`
				Response struct {
					RequestID string          `json:"request_id"`
					Response  json.RawMessage `json:"response"`
				} `json:"response"`
				Message struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"message"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			switch m.Type {
			case "control_request":
				switch m.Request.Subtype {
				case "initialize":
					send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": m.RequestID,
						"response": map[string]any{"commands": []any{}}}})
				case "get_usage":
					send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": m.RequestID,
						"response": map[string]any{"session": map[string]any{"total_cost_usd": sess.Cost}}}})
				case "interrupt":
					send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": m.RequestID, "response": map[string]any{}}})
					interrupts <- struct{}{}
				}
			case "control_response":
				answersMu.Lock()
				if c := answers[m.Response.RequestID]; c != nil {
					c <- m.Response.Response
				}
				answersMu.Unlock()
			case "user":
				if len(m.Message.Content) > 0 {
					users <- m.Message.Content[0].Text
				}
			}
		}
	}()
	var late sync.WaitGroup
	n := 0
	for text := range users {
		late.Wait() // late output goes out before the next turn starts
		n++
		// The history the model gets: every earlier prompt.
		_ = os.WriteFile(filepath.Join(state, sid+".seen"), []byte(strings.Join(sess.Prompts, "\n")), 0o600)
		sess.Prompts = append(sess.Prompts, text)
		send(map[string]any{"type": "system", "subtype": "init", "session_id": sid, "model": "fake-claude-model", "claude_code_version": "0.0.1-fake",
			"tools": []string{"Bash", "Write"}})
		send(map[string]any{"type": "system", "subtype": "status", "status": "requesting"})
		send(map[string]any{"type": "something_new", "payload": map[string]any{"x": 1}})
		switch {
		case strings.Contains(text, "[slow]"):
			for stopped := false; !stopped; {
				delta("thinking_delta", "hm ")
				select {
				case <-interrupts:
					stopped = true
				case <-time.After(20 * time.Millisecond):
				}
			}
			if edge == harnesstest.EdgeOutputAfterCancel {
				result("error_during_execution", true, "")
				late.Go(func() {
					time.Sleep(20 * time.Millisecond)
					for range 20 {
						delta("text_delta", "late after cancel ")
						delta("thinking_delta", "late thought ")
					}
				})
				continue
			}
			delta("text_delta", "after cancel")
			send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "[Request interrupted by user]"}})
			result("error_during_execution", true, "")
		case edge == harnesstest.EdgeMalformedLine:
			delta("text_delta", "echo: ")
			raw("this is not stream-json\n")
			time.Sleep(time.Hour)
		case edge == harnesstest.EdgeOversizeLine:
			delta("text_delta", "echo: ")
			raw(`{"type":"stream_event","event":{"x":"`)
			chunk := strings.Repeat("x", 64<<10)
			for {
				mu.Lock()
				_, err := out.WriteString(chunk)
				mu.Unlock()
				if err != nil {
					return 1
				}
			}
		case strings.Contains(text, "[tool]"):
			id := fmt.Sprintf("perm-%d", n)
			c := make(chan json.RawMessage, 1)
			answersMu.Lock()
			answers[id] = c
			answersMu.Unlock()
			input := map[string]any{"file_path": "NOTES.md", "content": "note"}
			send(map[string]any{"type": "control_request", "request_id": id, "request": map[string]any{"subtype": "can_use_tool",
				"tool_name": "Write", "input": input, "tool_use_id": "toolu_" + strconv.Itoa(n)}})
			send(map[string]any{"type": "assistant", "session_id": sid, "parent_tool_use_id": nil, "message": map[string]any{"role": "assistant",
				"content": []any{map[string]any{"type": "tool_use", "id": "toolu_" + strconv.Itoa(n), "name": "Write", "input": input}}}})
			var ans struct {
				Behavior     string          `json:"behavior"`
				UpdatedInput json.RawMessage `json:"updatedInput"`
			}
			_ = json.Unmarshal(<-c, &ans)
			denied := ans.Behavior != "allow"
			send(map[string]any{"type": "user", "session_id": sid, "parent_tool_use_id": nil, "message": map[string]any{"role": "user",
				"content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_" + strconv.Itoa(n), "is_error": denied, "content": "done"}}}})
			delta("text_delta", "echo: ")
			delta("text_delta", text+" ("+ans.Behavior+" "+string(ans.UpdatedInput)+")")
			result("success", false, "echo: "+text+" ("+ans.Behavior+")")
		default:
			delta("text_delta", "echo: ")
			delta("text_delta", text)
			// A sub-agent's text is not the answer.
			send(map[string]any{"type": "stream_event", "session_id": sid, "parent_tool_use_id": "toolu_sub",
				"event": map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "SUB"}}})
			send(map[string]any{"type": "assistant", "session_id": sid, "parent_tool_use_id": nil, "message": map[string]any{"role": "assistant",
				"content": []any{map[string]any{"type": "text", "text": "echo: " + text}}}})
			result("success", false, "echo: "+text)
		}
	}
	late.Wait()
	return 0
}
