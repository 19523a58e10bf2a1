// Package proc reads what Linux's /proc says of a process and keeps the
// ledger of the agent process groups a daemon started, so that the next
// daemon can end those a dead one left running.
//
// A process is named by its pid and its start time (field 22 of
// /proc/<pid>/stat, in clock ticks since boot) on one boot (the kernel's
// boot_id): a pid the kernel recycled has another start time, and a
// record from an earlier boot names nothing that runs now. Nothing this
// package kills is named by a pid alone.
//
// Ledger invariants:
//   - a record is a file of its own, <pid>.json under the ledger's
//     directory, written 0600 and atomically (a temporary file renamed
//     into place), before the process gets any work;
//   - a record is removed only after its group was killed or found gone;
//   - Reap, at start, ends every recorded group that still runs (SIGTERM,
//     then SIGKILL after a grace) and removes every record; an unreadable
//     record is removed and logged, never acted on.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/jamhq/jam/internal/jam"
)

// Stat is the part of /proc/<pid>/stat this package reads.
type Stat struct {
	Pid       int
	State     byte // R, S, D, Z, T, ...
	Ppid      int
	Pgid      int
	Sid       int
	StartTime uint64 // clock ticks after boot
}

// ParseStat decodes the content of /proc/<pid>/stat. The command name
// (field 2) is in parentheses and may hold anything, spaces and
// parentheses included, so the fields are read after its last ')'.
func ParseStat(b []byte) (Stat, error) {
	bad := func(what string) (Stat, error) {
		return Stat{}, fmt.Errorf("%w: /proc stat: %s", jam.ErrInvalid, what)
	}
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return bad("no command name")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:open])))
	if err != nil || pid <= 0 {
		return bad("bad pid")
	}
	f := strings.Fields(string(b[end+1:]))
	// f[0] is field 3 (state); field n is f[n-3]; starttime is field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return bad("too few fields")
	}
	st := Stat{Pid: pid, State: f[0][0]}
	ints := []*int{&st.Ppid, &st.Pgid, &st.Sid}
	for i, p := range ints {
		v, err := strconv.Atoi(f[1+i])
		if err != nil || v < 0 {
			return bad("bad field " + strconv.Itoa(4+i))
		}
		*p = v
	}
	st.StartTime, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return bad("bad start time")
	}
	return st, nil
}

// ReadStat reads /proc/<pid>/stat; a process that does not exist is
// jam.ErrNotFound.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if os.IsNotExist(err) || isESRCH(err) {
			return Stat{}, fmt.Errorf("%w: process %d", jam.ErrNotFound, pid)
		}
		return Stat{}, err
	}
	return ParseStat(b)
}

// BootID is the kernel's id of the current boot.
func BootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// Pids lists the pids /proc shows now.
func Pids() ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// isESRCH: a process that ended while its file was read.
func isESRCH(err error) bool { return errors.Is(err, syscall.ESRCH) }
