package daemon

import (
	"context"
	"io"
	"log/slog"

	"github.com/jamhq/jam/internal/config"
)

// newLogger is jamd's logger: slog text or JSON on w, at the configured
// level, its lines naming component=jamd until a subsystem's logger names
// its own. Every line carries each key once: a key given again (a
// subsystem's component on the daemon's, a record's attribute on its
// logger's) replaces the earlier value, and an attribute whose value is
// nil (an err without an error) is left out.
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // validated by config
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(uniqueHandler{base: h}).With("component", "jamd")
}

// uniqueHandler keeps each attribute key once per group level. The
// attributes of the innermost level stay with it, not yet given to base,
// so that a later one can replace them; a group commits them.
type uniqueHandler struct {
	base  slog.Handler
	attrs []slog.Attr // each key once, none nil-valued
}

func (h uniqueHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.base.Enabled(ctx, l)
}

func (h uniqueHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return uniqueHandler{base: h.base, attrs: mergeAttrs(h.attrs, as)}
}

func (h uniqueHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return uniqueHandler{base: h.base.WithAttrs(h.attrs).WithGroup(name)}
}

func (h uniqueHandler) Handle(ctx context.Context, r slog.Record) error {
	own := make([]slog.Attr, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		own = append(own, a)
		return true
	})
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(mergeAttrs(h.attrs, own)...)
	return h.base.Handle(ctx, out)
}

// mergeAttrs returns have with add applied in order: an attribute whose
// key is there already replaces it in place, a new one is appended, and
// one whose value is nil is dropped. have is not changed.
func mergeAttrs(have, add []slog.Attr) []slog.Attr {
	out := make([]slog.Attr, len(have), len(have)+len(add))
	copy(out, have)
	for _, a := range add {
		if a.Value.Kind() == slog.KindAny && a.Value.Any() == nil {
			continue
		}
		replaced := false
		for i := range out {
			if out[i].Key == a.Key {
				out[i], replaced = a, true
				break
			}
		}
		if !replaced {
			out = append(out, a)
		}
	}
	return out
}
