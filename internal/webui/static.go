package webui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strconv"
)

//go:embed static
var staticFS embed.FS

// assetPrefix is where the assets are served, followed by the version.
const assetPrefix = "/assets/"

// contentTypes are the types of the files the UI ships; a file of another
// kind is not served.
var contentTypes = map[string]string{
	".html":        "text/html; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".svg":         "image/svg+xml",
	".png":         "image/png",
	".webmanifest": "application/manifest+json",
}

// assets are the embedded files, by path under static/, and the page.
type assets struct {
	// version is a digest of every file: asset URLs carry it, so a
	// browser may cache them for good and still sees a new build at once.
	version string
	files   map[string]asset
	index   []byte
	pages   *template.Template
}

type asset struct {
	body        []byte
	contentType string
	etag        string
}

func loadAssets() (*assets, error) {
	a := &assets{files: map[string]asset{}}
	sum := sha256.New()
	var names []string
	err := fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("webui: read assets: %w", err)
	}
	sort.Strings(names)
	for _, p := range names {
		body, err := staticFS.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("webui: read asset %s: %w", p, err)
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			return nil, fmt.Errorf("webui: asset %s has no known content type", p)
		}
		fileSum := sha256.Sum256(body)
		rel := p[len("static/"):]
		a.files[rel] = asset{body: body, contentType: ct, etag: strconv.Quote(hex.EncodeToString(fileSum[:8]))}
		fmt.Fprintf(sum, "%s\x00%x\x00", rel, fileSum)
	}
	a.version = hex.EncodeToString(sum.Sum(nil)[:6])

	base := assetPrefix + a.version + "/"
	index, err := template.ParseFS(staticFS, "static/index.html")
	if err != nil {
		return nil, fmt.Errorf("webui: parse index: %w", err)
	}
	var buf bytes.Buffer
	if err := index.Execute(&buf, struct{ Base string }{base}); err != nil {
		return nil, fmt.Errorf("webui: render index: %w", err)
	}
	a.index = buf.Bytes()
	if a.pages, err = template.New("page").Parse(pageTemplate); err != nil {
		return nil, fmt.Errorf("webui: parse page: %w", err)
	}
	return a, nil
}

// handleAsset serves one embedded file. With the current version in the
// path it may be cached for a year; with another one (a page loaded
// before the daemon was upgraded) it is served but must be revalidated.
func (u *UI) handleAsset(w http.ResponseWriter, r *http.Request) {
	f, ok := u.assets.files[r.PathValue("path")]
	if !ok || path.Base(r.PathValue("path")) == "index.html" {
		u.handleNotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("ETag", f.etag)
	if r.PathValue("version") == u.assets.version {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	if match := r.Header.Get("If-None-Match"); match != "" && match == f.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(f.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(f.body)
	}
}

// signInPage is the small server-rendered page shown instead of the UI.
type signInPage struct {
	Title  string
	Reason string
	// Home links back to the UI instead of explaining how to sign in.
	Home bool
	// Token, when set, makes the page the sign-in step of a link: a form
	// whose button posts the token to /signin.
	Token string
	Base  string
}

func (u *UI) page(w http.ResponseWriter, status int, p signInPage) {
	if p.Title == "" {
		p.Title = "Sign in to jam"
	}
	p.Base = assetPrefix + u.assets.version + "/"
	var buf bytes.Buffer
	if err := u.assets.pages.Execute(&buf, p); err != nil {
		u.log.Error("render page", "err", err)
		http.Error(w, p.Reason, status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

const pageTemplate = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · jam</title>
<link rel="icon" href="{{.Base}}icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="{{.Base}}app.css">
</head>
<body class="plain">
<main id="main" class="signin">
<h1><img src="{{.Base}}icon.svg" alt="" width="32" height="32"> {{.Title}}</h1>
{{if .Token}}<p>Sign this browser in to the jam daemon on this machine. The link works once, and for a few minutes after it was printed.</p>
<form method="post" action="/signin">
<input type="hidden" name="token" value="{{.Token}}">
<p><button type="submit" id="signin" class="btn" autofocus>Sign in</button></p>
</form>
<p>Did not open this link yourself? Close this page.</p>
{{else}}<p>{{.Reason}}</p>
{{if .Home}}<p><a href="/">Go to jam</a></p>{{else}}
<p>Sign in with the one-time link the daemon prints when it starts (<code>jam up</code>), or get a new one on this machine with:</p>
<pre><code>jam ui</code></pre>
<p>The link works once, within 10 minutes: it signs this browser in with a cookie and then stops working.</p>{{end}}{{end}}
</main>
</body>
</html>
`
