package cli

import (
	"slices"
	"testing"
)

// The command after -- is the container's command, or its args with --arguments-only; the
// flags make the rest, as kubectl debug does.
func TestDebugContainer(t *testing.T) {
	f := debugFlags{image: "busybox", target: "app", pullPolicy: "IfNotPresent"}
	f.session.stdin, f.session.tty = true, true
	ec := debugContainer("dbg", []string{"sh", "-c", "ps"}, f)
	if ec.Name != "dbg" || ec.Image != "busybox" || ec.TargetContainerName != "app" || !ec.Stdin || !ec.TTY ||
		ec.ImagePullPolicy != "IfNotPresent" || !slices.Equal(ec.Command, []string{"sh", "-c", "ps"}) || ec.Args != nil {
		t.Fatalf("debug container: %+v", ec)
	}
	f.argumentsOnly = true
	if ec := debugContainer("dbg", []string{"-c", "ps"}, f); ec.Command != nil || !slices.Equal(ec.Args, []string{"-c", "ps"}) {
		t.Fatalf("with --arguments-only: command %v args %v", ec.Command, ec.Args)
	}
}
