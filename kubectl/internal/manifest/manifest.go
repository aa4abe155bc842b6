package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Object is one manifest object with where it came from, for error messages.
type Object struct {
	*unstructured.Unstructured
	Source string
}

// extensions are the file types a directory contributes, as with kubectl.
var extensions = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// Read reads every object named by paths: "-" is stdin, a directory contributes its manifest
// files (and those of subdirectories when recursive), anything else is a file.
func Read(paths []string, recursive bool, stdin io.Reader) ([]Object, error) {
	var out []Object
	for _, p := range paths {
		if p == "-" {
			data, err := io.ReadAll(stdin)
			if err != nil {
				return nil, fmt.Errorf("read stdin: %w", err)
			}
			objs, err := Split(data, "STDIN")
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
			continue
		}
		files, err := expand(p, recursive)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", f, err)
			}
			objs, err := Split(data, f)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
	}
	return out, nil
}

func expand(path string, recursive bool) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("the path %q does not exist", path)
		}
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != path && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		if extensions[strings.ToLower(filepath.Ext(p))] {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", path, err)
	}
	return files, nil
}

// Split decodes every document of data (YAML separated by ---, or JSON), skipping empty ones
// and expanding lists into their items.
func Split(data []byte, source string) ([]Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", source, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		jsonDoc, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("error parsing %s: %w", source, err)
		}
		if string(bytes.TrimSpace(jsonDoc)) == "null" {
			continue // a document of only comments
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(jsonDoc); err != nil {
			if missing := missingType(jsonDoc); missing != nil {
				return nil, fmt.Errorf("error validating %q: error validating data: [%s]", source, strings.Join(missing, ", "))
			}
			return nil, fmt.Errorf("error parsing %s: %w", source, err)
		}
		if missing := missingType(jsonDoc); missing != nil {
			return nil, fmt.Errorf("error validating %q: error validating data: [%s]", source, strings.Join(missing, ", "))
		}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("error parsing list in %s: %w", source, err)
			}
			for i := range list.Items {
				item := list.Items[i]
				if item.GetAPIVersion() == "" || item.GetKind() == "" {
					return nil, fmt.Errorf("error validating %q: items[%d]: apiVersion and kind must be set", source, i)
				}
				out = append(out, Object{Unstructured: &item, Source: source})
			}
			continue
		}
		out = append(out, Object{Unstructured: u, Source: source})
	}
}

func missingType(jsonDoc []byte) []string {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(jsonDoc, &tm); err != nil {
		return nil
	}
	var missing []string
	if tm.APIVersion == "" {
		missing = append(missing, "apiVersion not set")
	}
	if tm.Kind == "" {
		missing = append(missing, "kind not set")
	}
	return missing
}
