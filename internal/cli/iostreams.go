package cli

import (
	"bytes"
	"io"
	"os"
)

// IOStreams are a command's standard streams.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// Interactive says a person answers on In and reads ErrOut: both are
	// terminals. Commands ask for confirmation only then.
	Interactive bool
	// Color says Out is a terminal that may be coloured (NO_COLOR unset).
	Color bool
}

// System returns the process's standard streams.
func System() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, Interactive: isTerminal(os.Stdin) && isTerminal(os.Stderr),
		Color: isTerminal(os.Stdout) && os.Getenv("NO_COLOR") == ""}
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Test returns streams backed by buffers: stdin, stdout, stderr.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}
