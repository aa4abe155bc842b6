package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestKubectlCreateKinds runs create cronjob, create poddisruptionbudget and create
// priorityclass with both kubectls: each makes the same object and prints the same, and
// both refuse bad flags with the same message.
func TestKubectlCreateKinds(t *testing.T) {
	srv := sharedServer(t)
	type made struct {
		printed []string
		specs   []any
	}
	got := map[string]*made{}
	for _, k := range kubectls(t, srv) {
		t.Run(k.name, func(t *testing.T) {
			m := &made{}
			got[k.name] = m
			ns := "e2e-create-" + k.name
			createNamespace(t, k, ns)
			pc := "e2e-pc-" + k.name
			defer k.run(t, "delete", "priorityclass", pc, "--ignore-not-found")
			mask := func(s string) string {
				return commandFailed(strings.ReplaceAll(strings.ReplaceAll(s, ns, "NS"), pc, "PC"))
			}
			creates := [][]string{
				{"create", "cronjob", "hello", "-n", ns, "--image=minik8s/busybox:1.0", "--schedule=*/5 * * * *", "--", "sh", "-c", "date"},
				{"create", "cronjob", "never", "-n", ns, "--image=minik8s/busybox:1.0", "--schedule=@hourly", "--restart=Never"},
				{"create", "pdb", "web", "-n", ns, "--selector=app=web", "--min-available=50%"},
				{"create", "poddisruptionbudget", "db", "-n", ns, "--selector=app=db,tier in (a,b)", "--max-unavailable=1"},
				{"create", "priorityclass", pc, "--value=1000", "--description=high", "--preemption-policy=Never"},
			}
			for _, args := range creates {
				m.printed = append(m.printed, mask(k.ok(t, args...).stdout))
			}
			for _, obj := range [][]string{{"cronjob", "hello"}, {"cronjob", "never"}, {"pdb", "web"}, {"pdb", "db"}} {
				m.specs = append(m.specs, getJSON(t, k, ns, obj[0], obj[1])["spec"])
			}
			pcObj := getJSON(t, k, ns, "priorityclass", pc)
			m.specs = append(m.specs, []any{pcObj["value"], pcObj["description"], pcObj["preemptionPolicy"], pcObj["globalDefault"]})

			refusals := [][]string{
				{"create", "cronjob", "x", "-n", ns, "--schedule=* * * * *"},
				{"create", "cronjob", "x", "-n", ns, "--image=minik8s/busybox:1.0"},
				{"create", "pdb", "x", "-n", ns, "--min-available=1"},
				{"create", "pdb", "x", "-n", ns, "--selector=app=x"},
				{"create", "pdb", "x", "-n", ns, "--selector=app=x", "--min-available=1", "--max-unavailable=1"},
				{"create", "pdb", "x", "-n", ns, "--selector=app=x", "--min-available=1Gi"},
			}
			for _, args := range refusals {
				r := k.run(t, args...)
				if r.err == nil {
					t.Errorf("kubectl %s succeeded, want a refusal", strings.Join(args, " "))
				}
				m.printed = append(m.printed, mask(r.stderr))
			}
		})
	}
	real, ours := got["real"], got["ours"]
	if real == nil || ours == nil {
		t.Fatal("a kubectl did not run")
	}
	if d := cmp.Diff(real.printed, ours.printed); d != "" {
		t.Errorf("our kubectl printed differently (-real +ours):\n%s", d)
	}
	if d := cmp.Diff(real.specs, ours.specs); d != "" {
		t.Errorf("our kubectl made different objects (-real +ours):\n%s", d)
	}
	if len(real.specs) != 5 || real.specs[0] == nil {
		t.Errorf("the real kubectl's objects were not read: %v", real.specs)
	}
}

// klogFailure is how the real kubectl prints an error cobra found in the flags.
var klogFailure = regexp.MustCompile(`^E\d{4} [0-9:.]+ +\d+ [a-z_]+\.go:\d+\] "command failed" err=("(?:[^"\\]|\\.)*")\n$`)

// commandFailed turns the real kubectl's klog line for a flag error into "error: message",
// as our kubectl prints it, so the two compare; anything else is kept.
func commandFailed(s string) string {
	m := klogFailure.FindStringSubmatch(s)
	if m == nil {
		return s
	}
	msg, err := strconv.Unquote(m[1])
	if err != nil {
		return s
	}
	return "error: " + msg + "\n"
}
