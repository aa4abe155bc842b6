package e2e

// Interactive kubectl sessions for the stream tests: a command watched while it runs, and a
// pseudo-terminal opened with the standard library's ioctls.

import (
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// session is a kubectl that runs while the test watches its output.
type session struct {
	name string
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
	err  error
	// For sessions in a terminal: its master end, its path, and closed once all output is read.
	master  *os.File
	pts     string
	drained chan struct{}
}

func (s *session) watch() {
	s.done = make(chan struct{})
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
}

func (s *session) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// waitFor waits until the output matches re; kubectl exiting first fails the test.
func (s *session) waitFor(t *testing.T, what string, re *regexp.Regexp) {
	t.Helper()
	s.untilSeen(t, what, "", re)
}

// untilSeen types input (if any) every two seconds until the output since the first try
// matches re, for effects that take an unknown time to arrive (a resize, a first prompt).
func (s *session) untilSeen(t *testing.T, what, input string, re *regexp.Regexp) {
	t.Helper()
	from := 0
	if input != "" {
		from = len(s.out.String())
	}
	deadline := time.Now().Add(streamWait)
	for retype := time.Now(); ; sleep(t, 100*time.Millisecond) {
		if input != "" && !time.Now().Before(retype) {
			s.send(t, input)
			retype = time.Now().Add(2 * time.Second)
		}
		switch out := s.out.String(); {
		case re.MatchString(out[from:]):
			return
		case s.exited():
			t.Fatalf("%s kubectl exited (%v) before showing %s; output:\n%q", s.name, s.err, what, out)
		case time.Now().After(deadline):
			t.Fatalf("%s kubectl did not show %s within %s; output:\n%q", s.name, what, streamWait, out)
		}
	}
}

func (s *session) send(t *testing.T, input string) {
	t.Helper()
	if _, err := io.WriteString(s.master, input); err != nil {
		t.Fatalf("type into %s kubectl's terminal: %v", s.name, err)
	}
}

// wait waits for kubectl to exit, and for the last of its output, and returns how it
// ended.
func (s *session) wait(t *testing.T) error {
	t.Helper()
	deadline := time.After(streamWait)
	select {
	case <-s.done:
	case <-deadline:
		_ = s.cmd.Process.Kill()
		<-s.done
		t.Fatalf("%s kubectl did not exit within %s; output:\n%q", s.name, streamWait, s.out.String())
	}
	if s.drained != nil {
		select {
		case <-s.drained:
		case <-deadline:
			t.Fatalf("%s kubectl's terminal still open %s after it exited", s.name, streamWait)
		}
	}
	return s.err
}

// stop ends kubectl with SIGTERM, as a user's kill would.
func (s *session) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !s.exited() {
		t.Fatal(err)
	}
	_ = s.wait(t)
}

// startSession starts kubectl with its output watched and, when asked, a pipe to its stdin.
func startSession(t *testing.T, k kubectl, withStdin bool, args ...string) (s *session, errOut *lockedBuffer, stdin io.WriteCloser) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	s = &session{name: k.name, cmd: k.command(ctx, args...), out: &lockedBuffer{}}
	errOut = &lockedBuffer{}
	s.cmd.Stdout, s.cmd.Stderr = s.out, errOut
	if withStdin {
		var err error
		if stdin, err = s.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.watch()
	return s, errOut, stdin
}

// startInTerminal starts kubectl in a new pseudo-terminal of rows x cols, as its session
// leader with the terminal as its controlling one (so a resize signals it). kubectl holds
// the terminal's only open end, so its output is all read once it has exited.
func startInTerminal(t *testing.T, k kubectl, rows, cols uint16, args ...string) *session {
	t.Helper()
	master, pts := openPTY(t)
	setWinsize(t, master, rows, cols)
	slave, err := os.OpenFile(pts, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pty's terminal: %v", err)
	}
	defer slave.Close()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	cmd := k.command(ctx, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &session{name: k.name, cmd: cmd, out: &lockedBuffer{}, master: master, pts: pts, drained: make(chan struct{})}
	s.watch()
	// Reading the master fails (EIO) once no one has the terminal open.
	go func() {
		_, _ = io.Copy(s.out, master)
		close(s.drained)
	}()
	return s
}

// openPTY opens a pseudo-terminal with the kernel's interface (posix_openpt, unlockpt,
// ptsname): the master end, closed at cleanup, and the terminal's path.
func openPTY(t *testing.T) (master *os.File, pts string) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	var unlock int32
	if err := ioctl(master, syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); err != nil {
		t.Fatalf("unlock the pty: %v", err)
	}
	var num uint32
	if err := ioctl(master, syscall.TIOCGPTN, uintptr(unsafe.Pointer(&num))); err != nil {
		t.Fatalf("pty number: %v", err)
	}
	return master, "/dev/pts/" + strconv.Itoa(int(num))
}

func setWinsize(t *testing.T, f *os.File, rows, cols uint16) {
	t.Helper()
	ws := struct{ rows, cols, x, y uint16 }{rows, cols, 0, 0}
	if err := ioctl(f, syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&ws))); err != nil {
		t.Fatalf("set the terminal size: %v", err)
	}
}

// canonical reports whether the terminal is in canonical (line) mode, as before kubectl
// made it raw.
func (s *session) canonical(t *testing.T) bool {
	t.Helper()
	f, err := os.OpenFile(s.pts, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pty's terminal: %v", err)
	}
	defer f.Close()
	var tio syscall.Termios
	if err := ioctl(f, syscall.TCGETS, uintptr(unsafe.Pointer(&tio))); err != nil {
		t.Fatalf("read the terminal's mode: %v", err)
	}
	return tio.Lflag&syscall.ICANON != 0
}

// ioctl goes through the file's raw connection, which (unlike Fd) leaves a terminal that
// is being read in non-blocking mode.
func ioctl(f *os.File, req uint, arg uintptr) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, uintptr(req), arg)
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}
