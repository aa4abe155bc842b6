package hostsfile

import (
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var hosts = map[string][]netip.Addr{
	"shop.example.com": {netip.MustParseAddr("10.96.0.80")},
	"api.example.com":  {netip.MustParseAddr("10.96.0.80"), netip.MustParseAddr("10.96.0.81")},
	"*.apps.test":      {netip.MustParseAddr("10.96.0.80")},
}

const block = Begin + " (written by kubeproxy from the cluster's Ingresses; edits here are lost)\n" +
	"10.96.0.80\tapi.example.com\n10.96.0.81\tapi.example.com\n10.96.0.80\tshop.example.com\n" + End + "\n"

func TestRender(t *testing.T) {
	base := "127.0.0.1\tlocalhost\n::1\tlocalhost\n"
	for _, tc := range []struct {
		name    string
		content string
		hosts   map[string][]netip.Addr
		want    string
	}{
		{"added at the end", base, hosts, base + block},
		{"added after a last line without newline", "127.0.0.1 localhost", hosts, "127.0.0.1 localhost\n" + block},
		{"empty file", "", hosts, block},
		{"replaced in place", base + Begin + "\n10.0.0.1\told.example.com\n" + End + "\n# mine\n", hosts, base + block + "# mine\n"},
		{"unchanged", base + block, hosts, base + block},
		{"removed when no host is left", base + block + "# mine\n", nil, base + "# mine\n"},
		{"nothing to remove", base, nil, base},
		{"only wildcards: no block", base, map[string][]netip.Addr{"*.a.test": {netip.MustParseAddr("10.96.0.1")}}, base},
		{"begin without end takes the rest", base + Begin + "\n10.0.0.1\told\n", hosts, base + block},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, string(Render([]byte(tc.content), tc.hosts))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(path, []byte("127.0.0.1\tlocalhost\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	for i, step := range []struct {
		hosts map[string][]netip.Addr
		wrote bool
		want  string
	}{
		{hosts, true, "127.0.0.1\tlocalhost\n" + block},
		{hosts, false, "127.0.0.1\tlocalhost\n" + block},
		{nil, true, "127.0.0.1\tlocalhost\n"},
	} {
		st, _ := os.Stat(path)
		wrote, err := Update(path, step.hosts)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if wrote != step.wrote {
			t.Errorf("step %d: wrote = %v, want %v", i, wrote, step.wrote)
		}
		got, _ := os.ReadFile(path)
		if diff := cmp.Diff(step.want, string(got)); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", i, diff)
		}
		after, _ := os.Stat(path)
		if after.Mode().Perm() != 0o640 {
			t.Errorf("step %d: mode %v, want 0640", i, after.Mode().Perm())
		}
		if !step.wrote && !os.SameFile(st, after) {
			t.Errorf("step %d: the file was replaced although nothing changed", i)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 2 { // hosts and its lock, no temporary files left
		t.Errorf("directory holds %d entries, want the file and its lock", len(entries))
	}
}

// TestUpdateShared: several kubeproxies on one machine write the same block at once; the
// file ends up with it exactly once and the rest of the file intact.
func TestUpdateShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(path, []byte("127.0.0.1\tlocalhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if _, err := Update(path, hosts); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, _ := os.ReadFile(path)
	if diff := cmp.Diff("127.0.0.1\tlocalhost\n"+block, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
