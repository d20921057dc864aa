// Package subreaper makes deskd the child subreaper of its descendants
// (prctl PR_SET_CHILD_SUBREAPER): a process an MCP server detaches
// (setsid, outside the server's process group, which deskd kills with the
// server) and leaves behind when the server exits is reparented to deskd
// rather than to init, so that it does not outlive deskd outside
// systemd's cgroup. deskd reaps those of them that exit while it runs, and
// ends the others when it stops, once its own work is done (the MCP
// servers closed, the turns ended).
package subreaper

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Like the kill grace of an MCP server, these are the operating system's
// times, not a desk's: they bound processes, so they run on the wall
// clock, whatever deskd's clock is.
const (
	// orphanScan is how often deskd looks for the orphans it adopted
	// that have exited. A child of deskd that is a zombie at two scans in
	// a row is not one deskd started itself (each of those is waited for
	// as it exits): it is reaped.
	orphanScan = time.Minute
	// orphanGrace is how long the orphans left at shutdown have to exit
	// after SIGTERM, before SIGKILL.
	orphanGrace = 2 * time.Second
	// orphanPoll is how often the shutdown looks whether they have.
	orphanPoll = 20 * time.Millisecond
)

// Reaper reaps the orphans deskd adopts; Shutdown ends those left.
type Reaper struct {
	pid  int
	stop chan struct{}
	done chan struct{}
}

// Become makes this process the child subreaper of its descendants
// (prctl PR_SET_CHILD_SUBREAPER) and starts reaping the adopted orphans
// that exit, every orphanScan. Call it once, from main.
func Become() (*Reaper, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("become the child subreaper of deskd's descendants: %w", err)
	}
	r := &Reaper{pid: os.Getpid(), stop: make(chan struct{}), done: make(chan struct{})}
	go r.reapExited()
	return r, nil
}

// reapExited reaps, every orphanScan, the children that were zombies at
// the scan before too, until stop.
func (r *Reaper) reapExited() {
	defer close(r.done)
	t := time.NewTicker(orphanScan)
	defer t.Stop()
	var before map[child]bool
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		now := map[child]bool{}
		for _, c := range children(r.pid) {
			if !c.zombie {
				continue
			}
			if before[c] {
				reap(c.pid)
			} else {
				now[c] = true
			}
		}
		before = now
	}
}

// Shutdown stops the reaping and ends every child deskd still has: at
// the end of deskd, each is an orphan it adopted (or a descendant of one,
// adopted as its parent ends). They get SIGTERM, then, after orphanGrace,
// SIGKILL, and each is reaped. It returns how many it ended.
func (r *Reaper) Shutdown() int {
	close(r.stop)
	<-r.done
	ended := 0
	termed := map[child]bool{}
	kill := time.Now().Add(orphanGrace)
	giveUp := kill.Add(orphanGrace) // a process that even SIGKILL does not end (in uninterruptible sleep)
	for {
		kids := children(r.pid)
		if len(kids) == 0 || time.Now().After(giveUp) {
			return ended
		}
		late := time.Now().After(kill)
		for _, c := range kids {
			switch {
			case c.zombie:
				reap(c.pid)
				ended++
			case late:
				_ = unix.Kill(c.pid, unix.SIGKILL)
			case !termed[c]:
				termed[c] = true
				_ = unix.Kill(c.pid, unix.SIGTERM)
			}
		}
		time.Sleep(orphanPoll)
	}
}

// reap collects the exit of pid, a child of deskd that has exited.
func reap(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// child is a child process of deskd, as /proc shows it: its PID, its
// start time (so that a PID used again is another child) and whether it
// has exited and waits to be reaped.
type child struct {
	pid    int
	start  uint64
	zombie bool
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []child {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []child
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // it has gone
		}
		if c, ppid, ok := parseStat(p, string(b)); ok && ppid == pid {
			out = append(out, c)
		}
	}
	return out
}

// parseStat reads a /proc/<pid>/stat line: the state, the parent's PID
// and the start time, after the command's name (in parentheses, which it
// may contain itself).
func parseStat(pid int, line string) (child, int, bool) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return child{}, 0, false
	}
	f := strings.Fields(line[i+1:])
	// f[0] is field 3 of proc(5) (state), f[1] field 4 (ppid), f[19]
	// field 22 (starttime).
	if len(f) < 20 {
		return child{}, 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return child{}, 0, false
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return child{}, 0, false
	}
	return child{pid: pid, start: start, zombie: f[0] == "Z"}, ppid, true
}
