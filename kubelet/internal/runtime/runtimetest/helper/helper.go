package helper

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"time"
)

// OS is what a script needs from where it runs. *fake.Process implements it, and so does the
// real process in helperbin.
type OS interface {
	Stdin() io.Reader
	Stdout() io.Writer
	Stderr() io.Writer
	Hostname() string
	// Signals subscribes to the stop signal; after the first call it no longer ends the process.
	Signals() <-chan string
	// Alloc allocates and touches n bytes, kept until the process ends.
	Alloc(n int64) error
	// Burn spends d of CPU time.
	Burn(d time.Duration)
	Listen(addr string) (net.Listener, error)
	Dial(ctx context.Context, addr string) (net.Conn, error)
	// TerminalSize is the size of the terminal on stdout; ok is false when it is not one.
	TerminalSize() (width, height int, ok bool)
}

// Main runs the script in args and returns the exit code. Steps:
//
//	print TEXT     line on stdout          eprint TEXT   line on stderr
//	hostname       print the hostname      exit CODE     end with CODE
//	sleep DUR      sleep (DUR may be "forever")
//	alloc MIB      allocate and touch MIB mebibytes
//	burn DUR       spin on the CPU for DUR
//	serve ADDR     answer every TCP connection with "hello from <hostname>"
//	await ADDR     wait for one TCP connection on ADDR, answer "ok", go on
//	dial ADDR      connect (retrying for 10 s), print the line received
//	onterm CODE    on the stop signal print "got <signal>" and exit CODE
//	ignoreterm     ignore the stop signal
//	cat            copy stdin to stdout until stdin ends
//	winsize WxH    wait until the terminal is W columns by H rows, print "size WxH"
//	               (exit 5 without a terminal)
//	echo ADDR      send back what every TCP connection on ADDR sends
//
// A script that runs out of steps exits 0; a bad script exits 64.
func Main(ctx context.Context, os OS, args []string) int {
	var sigs <-chan string
	termCode := -1 // -1: ignore signals once subscribed
	for i := 0; i < len(args); i++ {
		step := args[i]
		arg := ""
		if needsArg(step) {
			if i+1 >= len(args) {
				fmt.Fprintf(os.Stderr(), "helper: %s needs an argument\n", step)
				return 64
			}
			i++
			arg = args[i]
		}
		switch step {
		case "print":
			fmt.Fprintln(os.Stdout(), arg)
		case "eprint":
			fmt.Fprintln(os.Stderr(), arg)
		case "hostname":
			fmt.Fprintln(os.Stdout(), os.Hostname())
		case "exit":
			code, err := strconv.Atoi(arg)
			if err != nil {
				return 64
			}
			return code
		case "sleep":
			// A pending timer, not a nil channel, so Go's deadlock detector leaves a lone
			// process sleeping forever alone.
			d := time.Duration(math.MaxInt64)
			if arg != "forever" {
				var err error
				if d, err = time.ParseDuration(arg); err != nil {
					return 64
				}
			}
			wait := time.After(d)
			if code, done := sleep(ctx, os, wait, sigs, termCode); done {
				return code
			}
		case "alloc":
			mib, err := strconv.ParseInt(arg, 10, 64)
			if err != nil {
				return 64
			}
			if err := os.Alloc(mib << 20); err != nil {
				fmt.Fprintf(os.Stderr(), "alloc: %v\n", err)
				return 137
			}
		case "burn":
			d, err := time.ParseDuration(arg)
			if err != nil {
				return 64
			}
			os.Burn(d)
		case "serve":
			l, err := os.Listen(arg)
			if err != nil {
				fmt.Fprintf(os.Stderr(), "serve: %v\n", err)
				return 2
			}
			go serve(l, "hello from "+os.Hostname())
			fmt.Fprintf(os.Stdout(), "listening %s\n", arg)
		case "await":
			if code := await(ctx, os, arg); code != 0 {
				return code
			}
		case "dial":
			line, err := dial(ctx, os, arg)
			if err != nil {
				fmt.Fprintf(os.Stderr(), "dial: %v\n", err)
				return 3
			}
			fmt.Fprintln(os.Stdout(), line)
		case "onterm":
			code, err := strconv.Atoi(arg)
			if err != nil {
				return 64
			}
			termCode = code
			sigs = os.Signals()
			fmt.Fprintln(os.Stdout(), "trapping")
		case "cat":
			if code := cat(ctx, os); code != 0 {
				return code
			}
		case "winsize":
			if code := winsize(ctx, os, arg); code != 0 {
				return code
			}
		case "echo":
			l, err := os.Listen(arg)
			if err != nil {
				fmt.Fprintf(os.Stderr(), "echo: %v\n", err)
				return 2
			}
			go echo(l)
			fmt.Fprintf(os.Stdout(), "echoing %s\n", arg)
		case "ignoreterm":
			termCode = -1
			sigs = os.Signals()
			fmt.Fprintln(os.Stdout(), "ignoring")
		default:
			fmt.Fprintf(os.Stderr(), "helper: unknown step %q\n", step)
			return 64
		}
	}
	return 0
}

// sleep waits for wait; done says the process must end with code.
func sleep(ctx context.Context, os OS, wait <-chan time.Time, sigs <-chan string, termCode int) (code int, done bool) {
	for {
		select {
		case <-wait:
			return 0, false
		case sig := <-sigs:
			if termCode >= 0 {
				fmt.Fprintf(os.Stdout(), "got %s\n", sig)
				return termCode, true
			}
			// Ignored: keep sleeping.
		case <-ctx.Done():
			return 137, true
		}
	}
}

func needsArg(step string) bool {
	switch step {
	case "hostname", "ignoreterm", "cat":
		return false
	}
	return true
}

func serve(l net.Listener, greeting string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			fmt.Fprintln(c, greeting)
		}()
	}
}

func await(ctx context.Context, os OS, addr string) int {
	l, err := os.Listen(addr)
	if err != nil {
		fmt.Fprintf(os.Stderr(), "await: %v\n", err)
		return 2
	}
	defer l.Close()
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	c, err := l.Accept()
	if err != nil {
		return 137
	}
	fmt.Fprintln(c, "ok")
	c.Close()
	return 0
}

func dial(ctx context.Context, os OS, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		c, err := os.Dial(ctx, addr)
		if err == nil {
			defer c.Close()
			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil {
				return "", err
			}
			return line[:len(line)-1], nil
		}
		select {
		case <-ctx.Done():
			return "", err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func cat(ctx context.Context, os OS) int {
	done := make(chan error, 1)
	// A Read cannot be interrupted; a killed process leaves it to the end of its stdin.
	go func() {
		_, err := io.Copy(os.Stdout(), os.Stdin())
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintf(os.Stderr(), "cat: %v\n", err)
			return 1
		}
		return 0
	case <-ctx.Done():
		return 137
	}
}

func winsize(ctx context.Context, os OS, want string) int {
	for {
		w, h, ok := os.TerminalSize()
		if !ok {
			fmt.Fprintln(os.Stderr(), "winsize: not a terminal")
			return 5
		}
		if got := fmt.Sprintf("%dx%d", w, h); got == want {
			fmt.Fprintf(os.Stdout(), "size %s\n", got)
			return 0
		}
		select {
		case <-ctx.Done():
			return 137
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func echo(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_, _ = io.Copy(c, c)
		}()
	}
}
