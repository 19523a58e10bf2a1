package bandtest

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// testPagination posts 21 messages and pages through them 7 at a time, so
// the last page is exactly full: has_more must be false there, not on an
// empty fourth page.
func testPagination(t *testing.T, e *env) {
	const n, limit, wantPages = 21, 7, 3
	a := e.RegisterAgent(t, "pages")
	room := e.CreateRoom(t, "pagination")
	e.AddParticipant(t, room, a.ID)
	posted := make([]string, n)
	for i := range posted {
		posted[i] = e.Post(t, room, fmt.Sprintf("page item %d", i), Mention{ID: a.ID})
	}
	newestFirst := slices.Clone(posted)
	slices.Reverse(newestFirst)

	cases := []struct {
		name string
		c    *client
		path string
		want []string
	}{
		{name: "owner history newest first", c: e.owner, path: meMessages(room), want: newestFirst},
		{name: "agent queue oldest first", c: e.agent(a), path: agentMessages(room), want: posted},
		{name: "agent context oldest first", c: e.agent(a), path: agentRoom(room) + "/context", want: posted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, pages := pageThrough(t, tc.c, tc.path, limit)
			seen := map[string]bool{}
			for _, id := range got {
				require.False(t, seen[id], "message %s appears on two pages", id)
				seen[id] = true
			}
			require.Equal(t, tc.want, got, "%s paged by %d", tc.path, limit)
			require.Equal(t, wantPages, pages, "pages of %d messages by %d", n, limit)
		})
	}

	bad := []struct {
		name  string
		query string
	}{
		{name: "invalid cursor", query: "?cursor=" + url.QueryEscape("bandtest-not-a-cursor")},
		{name: "cursor mixed with page", query: "?page=1&cursor=" + url.QueryEscape(firstCursor(t, e.owner, meMessages(room), limit))},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e.owner.do(t, http.MethodGet, meMessages(room)+tc.query, nil).expectError(t, http.StatusUnprocessableEntity, "")
		})
	}
}

// pageThrough follows next_cursor until has_more is false and returns the
// ids in the order served, and the number of pages.
func pageThrough(t *testing.T, c *client, path string, limit int) ([]string, int) {
	t.Helper()
	var all []string
	cursor := ""
	for pages := 1; ; pages++ {
		require.LessOrEqual(t, pages, 50, "%s: too many pages; is next_cursor advancing?", path)
		q := url.Values{"limit": {fmt.Sprint(limit)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		ms, meta := list[message](t, c.do(t, http.MethodGet, path+"?"+q.Encode(), nil).expect(t, http.StatusOK))
		require.LessOrEqual(t, len(ms), limit, "%s page %d is longer than limit", path, pages)
		require.Equal(t, limit, meta.Limit, "%s page %d: metadata.limit", path, pages)
		require.NotNil(t, meta.HasMore, "%s page %d: metadata.has_more", path, pages)
		all = append(all, ids(ms)...)
		if !*meta.HasMore {
			require.Nil(t, meta.NextCursor, "%s page %d: next_cursor must be null without more pages", path, pages)
			return all, pages
		}
		require.NotEmpty(t, ms, "%s page %d: has_more is true on an empty page", path, pages)
		require.NotNil(t, meta.NextCursor, "%s page %d: has_more without next_cursor", path, pages)
		require.NotEmpty(t, *meta.NextCursor, "%s page %d: empty next_cursor", path, pages)
		cursor = *meta.NextCursor
	}
}

func firstCursor(t *testing.T, c *client, path string, limit int) string {
	t.Helper()
	_, meta := list[message](t, c.do(t, http.MethodGet, fmt.Sprintf("%s?limit=%d", path, limit), nil).expect(t, http.StatusOK))
	require.NotNil(t, meta.NextCursor, "first page of %s has no next_cursor", path)
	return *meta.NextCursor
}
