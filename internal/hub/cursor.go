package hub

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
)

// cursor is an opaque keyset position: the sort key and seq of the last
// item a page returned, bound to the listing (scope) that issued it, so a
// cursor from another room, listing or sort order is rejected rather than
// silently misread. On the wire it is unpadded base64url of its JSON.
type cursor struct {
	Scope string `json:"s"`
	Key   string `json:"k,omitempty"`
	Seq   int64  `json:"q"`
}

// maxCursorLen bounds what decodeCursor reads; real cursors are far
// shorter.
const maxCursorLen = 512

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c) // three plain fields always marshal
	return base64.RawURLEncoding.EncodeToString(b)
}

// errBadCursor marks a cursor the hub did not issue for this listing.
var errBadCursor = fmt.Errorf("%w: invalid cursor", jam.ErrInvalid)

// decodeCursor parses s and checks it belongs to scope.
func decodeCursor(s, scope string) (cursor, error) {
	if len(s) > maxCursorLen {
		return cursor{}, errBadCursor
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return cursor{}, errBadCursor
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c cursor
	if err := dec.Decode(&c); err != nil {
		return cursor{}, errBadCursor
	}
	if dec.More() || c.Scope != scope || c.Seq < 1 {
		return cursor{}, errBadCursor
	}
	// Anything after the one JSON value is garbage, not padding.
	if rest, _ := jsonRest(dec); len(bytes.TrimSpace(rest)) > 0 {
		return cursor{}, errBadCursor
	}
	return c, nil
}

func jsonRest(dec *json.Decoder) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(dec.Buffered())
	return b.Bytes(), err
}

// paging is a parsed pagination request: the cursor form (limit + cursor)
// or Band's deprecated offset form (page + page_size).
type paging struct {
	legacy bool
	page   int
	limit  int // page size in both forms
	after  cursor
}

func (p paging) offset() int {
	if !p.legacy {
		return 0
	}
	return (p.page - 1) * p.limit
}

// parsePaging reads cursor, limit, page and page_size. Mixing the two
// forms, a bad number or a cursor of another listing is a 422.
func parsePaging(q url.Values, scope string, defLimit int) (paging, *apiError) {
	cursorForm := q.Get("cursor") != "" || q.Has("limit")
	pageForm := q.Has("page") || q.Has("page_size")
	if cursorForm && pageForm {
		return paging{}, errInvalidMsg(codeInvalidPagination, msgInvalidOrMixedPaginator, "/cursor", "cannot be combined with page or page_size")
	}
	p := paging{limit: defLimit, page: 1, legacy: pageForm}
	var e *apiError
	if pageForm {
		if p.page, e = intParam(q, "page", 1); e != nil {
			return paging{}, e
		}
		if p.limit, e = intParam(q, "page_size", defLimit); e != nil {
			return paging{}, e
		}
		return p, nil
	}
	if p.limit, e = intParam(q, "limit", defLimit); e != nil {
		return paging{}, e
	}
	if s := q.Get("cursor"); s != "" {
		c, err := decodeCursor(s, scope)
		if err != nil {
			return paging{}, errInvalidMsg(codeInvalidCursor, "Invalid pagination cursor", "/cursor", "is invalid")
		}
		p.after = c
	}
	return p, nil
}

// parseOffset reads page and page_size for the offset-only listings.
func parseOffset(q url.Values, defSize int) (paging, *apiError) {
	p := paging{legacy: true}
	var e *apiError
	if p.page, e = intParam(q, "page", 1); e != nil {
		return paging{}, e
	}
	if p.limit, e = intParam(q, "page_size", defSize); e != nil {
		return paging{}, e
	}
	return p, nil
}

// intParam reads a positive integer; sizes above Band's maximum are
// clamped to it.
func intParam(q url.Values, name string, def int) (int, *apiError) {
	s := q.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, errInvalid(codeValidation, "/"+name, "must be a positive integer")
	}
	if name != "page" {
		n = min(n, protocol.MaxPageLimit)
	}
	return n, nil
}

// listBody is a list response. Metadata is a map because Band's listings
// each carry a different subset of fields, some of them required-but-null
// (next_cursor), which a struct with omitempty cannot express.
type listBody[T any] struct {
	Data     []T            `json:"data"`
	Metadata map[string]any `json:"metadata"`
	Meta     map[string]any `json:"meta,omitempty"`
}

// cursorMeta is the metadata of a cursor-form page, plus the offset fields
// on the legacy path.
func cursorMeta(p paging, hasMore bool, next *string, total int) map[string]any {
	m := map[string]any{"has_more": hasMore, "next_cursor": next, "limit": p.limit}
	if p.legacy {
		m["page"], m["page_size"], m["total_count"], m["total_pages"] = p.page, p.limit, total, totalPages(total, p.limit)
	}
	return m
}

// offsetMeta is the metadata of the offset-only listings.
func offsetMeta(p paging, total int) map[string]any {
	return map[string]any{"page": p.page, "page_size": p.limit, "total_count": total, "total_pages": totalPages(total, p.limit)}
}

func totalPages(total, size int) int {
	if total == 0 {
		return 0
	}
	return (total + size - 1) / size
}

// sortKey is an item's position in an in-memory listing.
type sortKey struct {
	key string
	seq int64
}

func compareKeys(a, b sortKey) int {
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// pageSlice pages items, already sorted by key (descending when desc),
// in either form. It returns the page and its metadata.
func pageSlice[T any](items []T, keyOf func(T) sortKey, p paging, scope string, desc bool) ([]T, map[string]any) {
	if p.legacy {
		start := min(p.offset(), len(items))
		end := min(start+p.limit, len(items))
		return items[start:end], cursorMeta(p, end < len(items), nil, len(items))
	}
	start := 0
	if p.after.Seq > 0 {
		at := sortKey{p.after.Key, p.after.Seq}
		start = len(items)
		for i, it := range items {
			c := compareKeys(keyOf(it), at)
			if (!desc && c > 0) || (desc && c < 0) {
				start = i
				break
			}
		}
	}
	end := min(start+p.limit, len(items))
	page := items[start:end]
	var next *string
	hasMore := end < len(items)
	if hasMore && len(page) > 0 {
		k := keyOf(page[len(page)-1])
		s := encodeCursor(cursor{Scope: scope, Key: k.key, Seq: k.seq})
		next = &s
	}
	return page, cursorMeta(p, hasMore, next, len(items))
}

// pageOffset pages items for the offset-only listings.
func pageOffset[T any](items []T, p paging) ([]T, map[string]any) {
	start := min(p.offset(), len(items))
	end := min(start+p.limit, len(items))
	return items[start:end], offsetMeta(p, len(items))
}

// microsKey renders a time so that string order is time order.
func microsKey(us int64) string { return fmt.Sprintf("%020d", us) }
