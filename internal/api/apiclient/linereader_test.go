package apiclient

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// readResult is one call of lineReader.next: a line, or a line's head with
// errLineTooLong, or the final error.
type readResult struct {
	line string
	err  error
}

// readAll calls next until it returns an error other than errLineTooLong.
func readAll(l *lineReader) []readResult {
	var out []readResult
	for {
		line, err := l.next()
		if err != nil && !errors.Is(err, errLineTooLong) {
			return append(out, readResult{err: err})
		}
		out = append(out, readResult{line: string(line), err: err})
	}
}

func TestLineReader(t *testing.T) {
	t.Parallel()
	eof := readResult{err: io.EOF}
	tests := []struct {
		name  string
		in    string
		max   int
		bufSz int
		want  []readResult
	}{
		{"empty", "", 8, 16, []readResult{eof}},
		{"one line", "abc\n", 8, 16, []readResult{{line: "abc"}, eof}},
		{"crlf", "abc\r\ndef\n", 8, 16, []readResult{{line: "abc"}, {line: "def"}, eof}},
		{"empty lines skipped", "\n\r\nabc\n\n", 8, 16, []readResult{{line: "abc"}, eof}},
		{"exactly max", "12345678\n", 8, 16, []readResult{{line: "12345678"}, eof}},
		{"exactly max with crlf", "12345678\r\n", 8, 16, []readResult{{line: "12345678"}, eof}},
		{"one over max", "123456789\nok\n", 8, 16, []readResult{{line: "123456789", err: errLineTooLong}, {line: "ok"}, eof}},
		{"one over max with crlf", "123456789\r\nok\n", 8, 16, []readResult{{line: "123456789", err: errLineTooLong}, {line: "ok"}, eof}},
		{
			"long line across buffer refills, head kept",
			strings.Repeat("x", 200) + "\nafter\n", 50, 16,
			[]readResult{{line: strings.Repeat("x", lineHead), err: errLineTooLong}, {line: "after"}, eof},
		},
		{"line longer than the buffer but within max", strings.Repeat("y", 40) + "\n", 50, 16, []readResult{{line: strings.Repeat("y", 40)}, eof}},
		{"cut mid-line", "abc\npartial", 8, 16, []readResult{{line: "abc"}, {err: io.ErrUnexpectedEOF}}},
		{"cut mid-way through a long line", "abc\n" + strings.Repeat("z", 100), 8, 16, []readResult{{line: "abc"}, {err: io.ErrUnexpectedEOF}}},
		{"lone carriage return kept inside", "a\rb\n", 8, 16, []readResult{{line: "a\rb"}, eof}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, readAll(newLineReaderSize(strings.NewReader(tt.in), tt.max, tt.bufSz)))
			// Byte-at-a-time delivery changes nothing.
			require.Equal(t, tt.want, readAll(newLineReaderSize(iotest.OneByteReader(strings.NewReader(tt.in)), tt.max, tt.bufSz)))
		})
	}
}

func TestLineReader_readError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	l := newLineReaderSize(io.MultiReader(strings.NewReader("abc\nde"), iotest.ErrReader(boom)), 8, 16)
	require.Equal(t, []readResult{{line: "abc"}, {err: boom}}, readAll(l))
}

func TestLeadingSeq(t *testing.T) {
	t.Parallel()
	tests := []struct {
		head string
		want int64
		ok   bool
	}{
		{`{"seq":42,"kind":"x"`, 42, true},
		{` {"seq":0,`, 0, true},
		{`{"seq":42`, 0, false}, // may continue past the head
		{`{"kind":"x","seq":42,`, 0, false},
		{`{"seq":-1,`, 0, false},
		{`{"seq":99999999999999999999,`, 0, false},
		{``, 0, false},
	}
	for _, tt := range tests {
		got, ok := leadingSeq([]byte(tt.head))
		require.Equal(t, tt.ok, ok, tt.head)
		require.Equal(t, tt.want, got, tt.head)
	}
}

// FuzzLineReader checks the reader against a plain split of the input:
// the same lines in the same order, over-long ones reported by their head,
// a trailing partial line reported as io.ErrUnexpectedEOF, and no line
// ever longer than the bound.
func FuzzLineReader(f *testing.F) {
	for _, seed := range []string{
		"", "a\n", "a\r\nb\n", "\n\n", "12345678\n123456789\n", "x\r", "abc\npartial",
		`{"seq":1,"kind":"reset","at":"2026-01-02T03:04:05Z"}` + "\n",
		strings.Repeat("q", 70) + "\n" + "tail\n",
	} {
		f.Add([]byte(seed), uint8(8))
	}
	f.Fuzz(func(t *testing.T, in []byte, maxLen uint8) {
		limit := int(maxLen%64) + 1
		got := readAll(newLineReaderSize(bytes.NewReader(in), limit, 16))

		var want []readResult
		parts := bytes.Split(in, []byte("\n"))
		for i, p := range parts {
			last := i == len(parts)-1
			if last {
				if len(p) == 0 {
					want = append(want, readResult{err: io.EOF})
				} else {
					want = append(want, readResult{err: io.ErrUnexpectedEOF})
				}
				break
			}
			p = bytes.TrimSuffix(p, []byte("\r"))
			switch {
			case len(p) == 0:
			case len(p) > limit:
				want = append(want, readResult{line: string(p[:min(len(p), lineHead)]), err: errLineTooLong})
			default:
				want = append(want, readResult{line: string(p)})
			}
		}
		require.Equal(t, want, got)
		for _, r := range got {
			require.LessOrEqual(t, len(r.line), max(limit, lineHead))
			require.NotContains(t, r.line, "\n")
		}
	})
}
