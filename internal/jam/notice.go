package jam

import (
	"fmt"
	"strings"
)

// NoticePrefix starts the id of a local notice: a message jam queues and
// delivers to an agent like a Band message, but which never touches Band
// (nothing is claimed, posted or settled remotely).
const NoticePrefix = "jam-notice:"

// NoticeID is the message id of a local notice minted as m.
func NoticeID(m MessageID) PlatformMessageID { return PlatformMessageID(NoticePrefix + string(m)) }

// IsNotice reports whether id names a local notice.
func (id PlatformMessageID) IsNotice() bool { return strings.HasPrefix(string(id), NoticePrefix) }

// ParseMessageID parses the id of a queued message: a Band message UUID
// (returned in lower case) or a local notice id ("jam-notice:msg_…").
func ParseMessageID(s string) (PlatformMessageID, error) {
	body, ok := strings.CutPrefix(s, NoticePrefix)
	if !ok {
		return ParseUUID[PlatformMessageID](s)
	}
	if _, err := ParseID[MessageID](body); err != nil {
		return "", fmt.Errorf("%w: notice id %q: want %s followed by a message id", ErrInvalid, clip(s), NoticePrefix)
	}
	return PlatformMessageID(s), nil
}
