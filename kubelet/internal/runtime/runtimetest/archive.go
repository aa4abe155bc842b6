package runtimetest

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"
)

// ImageArchive is a `docker save` archive of one tiny image tagged ref: one layer holding
// the file /loaded. The same ref gives the same bytes, so loading it again changes nothing.
func ImageArchive(ref string) []byte {
	layer := tarOf(map[string][]byte{"loaded": []byte(ref + "\n")})
	layerSum := sha256.Sum256(layer)
	config, _ := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      time.Unix(0, 0).UTC(),
		"config":       map[string]any{"Cmd": []string{"/loaded"}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(layerSum[:])}},
	})
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	layerName := hex.EncodeToString(layerSum[:]) + "/layer.tar"
	manifest, _ := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": []string{ref}, "Layers": []string{layerName}}})
	return tarOf(map[string][]byte{"manifest.json": manifest, configName: config, layerName: layer})
}

// tarOf makes a tar of files in sorted order with fixed times.
func tarOf(files map[string][]byte) []byte {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		_ = tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg})
		_, _ = tw.Write(files[n])
	}
	_ = tw.Close()
	return buf.Bytes()
}
