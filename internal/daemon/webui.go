package daemon

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/jamhq/jam/internal/api"
	"github.com/jamhq/jam/internal/webui"
)

// newUI builds the web UI of the HTTP listener; nil when it is off.
func (d *daemon) newUI() (api.UI, error) {
	if d.cfg.HTTPAddr == "" {
		return nil, nil
	}
	ui, err := webui.New(webui.Config{StatePath: filepath.Join(d.cfg.DataDir, webui.StateFile), Logger: d.log})
	if err != nil {
		return nil, fmt.Errorf("start web ui: %w", err)
	}
	return ui, nil
}

// printUILink prints a one-time sign-in link to the web UI, if it is on.
func (d *daemon) printUILink(w io.Writer) {
	url, err := d.api.UILoginURL()
	if err != nil {
		return
	}
	fmt.Fprintf(w, "  web ui       %s (one-time sign-in link; jam ui prints another)\n", url)
}
