package hub

import (
	"encoding/base64"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodeCursor(t *testing.T) {
	t.Parallel()
	good := encodeCursor(cursor{Scope: "queue:r", Seq: 7})
	tests := []struct {
		name  string
		in    string
		scope string
		want  cursor
		ok    bool
	}{
		{name: "round trip", in: good, scope: "queue:r", want: cursor{Scope: "queue:r", Seq: 7}, ok: true},
		{name: "with key", in: encodeCursor(cursor{Scope: "s", Key: "00000000000000000042", Seq: 1}), scope: "s", want: cursor{Scope: "s", Key: "00000000000000000042", Seq: 1}, ok: true},
		{name: "other scope", in: good, scope: "queue:x"},
		{name: "not base64", in: "!!!", scope: "queue:r"},
		{name: "padded", in: base64.URLEncoding.EncodeToString([]byte(`{"s":"queue:r","q":17}`)), scope: "queue:r"},
		{name: "not json", in: base64.RawURLEncoding.EncodeToString([]byte(`hello`)), scope: "queue:r"},
		{name: "unknown field", in: base64.RawURLEncoding.EncodeToString([]byte(`{"s":"queue:r","q":7,"x":1}`)), scope: "queue:r"},
		{name: "trailing data", in: base64.RawURLEncoding.EncodeToString([]byte(`{"s":"queue:r","q":7} {}`)), scope: "queue:r"},
		{name: "zero seq", in: base64.RawURLEncoding.EncodeToString([]byte(`{"s":"queue:r","q":0}`)), scope: "queue:r"},
		{name: "negative seq", in: base64.RawURLEncoding.EncodeToString([]byte(`{"s":"queue:r","q":-3}`)), scope: "queue:r"},
		{name: "float seq", in: base64.RawURLEncoding.EncodeToString([]byte(`{"s":"queue:r","q":1.5}`)), scope: "queue:r"},
		{name: "too long", in: string(make([]byte, maxCursorLen+1)), scope: "queue:r"},
		{name: "empty", in: "", scope: "queue:r"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := decodeCursor(tt.in, tt.scope)
			if !tt.ok {
				require.ErrorIs(t, err, errBadCursor)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(cursor{Scope: "queue:r", Seq: 7}), "queue:r")
	f.Add(encodeCursor(cursor{Scope: "me_chats:inserted_at:desc", Key: "00000000000000000001", Seq: 3}), "me_chats:inserted_at:desc")
	f.Add("eyJzIjoicSIsInEiOjF9", "q")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, in, scope string) {
		c, err := decodeCursor(in, scope)
		if err != nil {
			return
		}
		if c.Scope != scope || c.Seq < 1 {
			t.Fatalf("accepted %q as %+v for scope %q", in, c, scope)
		}
		again, err := decodeCursor(encodeCursor(c), scope)
		if err != nil || again != c {
			t.Fatalf("round trip of %+v: %+v, %v", c, again, err)
		}
	})
}

func TestParsePaging(t *testing.T) {
	t.Parallel()
	cur := encodeCursor(cursor{Scope: "s", Seq: 4})
	tests := []struct {
		name  string
		query string
		want  paging
		code  string
	}{
		{name: "defaults", query: "", want: paging{page: 1, limit: 20}},
		{name: "limit clamped", query: "limit=500", want: paging{page: 1, limit: 100}},
		{name: "cursor", query: "limit=5&cursor=" + cur, want: paging{page: 1, limit: 5, after: cursor{Scope: "s", Seq: 4}}},
		{name: "legacy", query: "page=3&page_size=10", want: paging{legacy: true, page: 3, limit: 10}},
		{name: "mixed", query: "cursor=" + cur + "&page=1", code: codeInvalidPagination},
		{name: "bad cursor", query: "cursor=zzz", code: codeInvalidCursor},
		{name: "zero limit", query: "limit=0", code: codeValidation},
		{name: "bad page", query: "page=-1", code: codeValidation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, err := url.ParseQuery(tt.query)
			require.NoError(t, err)
			got, e := parsePaging(q, "s", 20)
			if tt.code != "" {
				require.NotNil(t, e)
				require.Equal(t, tt.code, e.code)
				require.NotEmpty(t, e.details)
				return
			}
			require.Nil(t, e)
			require.Equal(t, tt.want, got)
		})
	}
}
