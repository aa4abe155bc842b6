package fake

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"

	"minik8s.io/serverless/internal/imagestore"
)

// Build reads the context's Dockerfile step by step as the classic builder does: FROM needs
// its base in the store (or scratch), COPY needs its sources in the context, LABEL labels the
// image, RUN does what Run says; other instructions are kept in the image's history only. The
// output has the classic builder's lines, so what reads Docker's output reads the fake's.
func (s *Store) Build(ctx context.Context, buildContext io.Reader, ref string, progress func(string)) (string, error) {
	files, err := readContext(buildContext)
	if err != nil {
		return "", err
	}
	dockerfile, ok := files["Dockerfile"]
	if !ok {
		return "", &imagestore.BuildError{Message: "Cannot locate specified Dockerfile: Dockerfile"}
	}
	steps := instructions(string(dockerfile))
	say := func(line string) {
		if progress != nil {
			progress(line)
		}
	}
	var c config
	for i, step := range steps {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		say(fmt.Sprintf("Step %d/%d : %s", i+1, len(steps), step))
		if err := s.step(ctx, &c, step, i, files, say); err != nil {
			return "", err
		}
		say(" ---> " + shortID(newImage(c).id))
	}
	if len(steps) == 0 {
		return "", &imagestore.BuildError{Message: "the Dockerfile (Dockerfile) cannot be empty"}
	}
	img := newImage(c)
	ref = normalize(ref)
	s.mu.Lock()
	s.putLocked(img, ref)
	s.record("build %s", ref)
	s.mu.Unlock()
	say("Successfully built " + shortID(img.id))
	say("Successfully tagged " + ref)
	return img.id, nil
}

// step applies one instruction to the image's config.
func (s *Store) step(ctx context.Context, c *config, step string, i int, files map[string][]byte, say func(string)) error {
	keyword, args, _ := strings.Cut(step, " ")
	keyword, args = strings.ToUpper(keyword), strings.TrimSpace(args)
	if i == 0 && keyword != "FROM" {
		return &imagestore.BuildError{Message: "no build stage in current context"}
	}
	switch keyword {
	case "FROM":
		base, _, _ := strings.Cut(args, " ")
		if base == "scratch" {
			return nil
		}
		s.mu.Lock()
		img, err := s.lookupLocked(base)
		s.mu.Unlock()
		if err != nil {
			repo, _, _ := strings.Cut(base, ":")
			return &imagestore.BuildError{Message: fmt.Sprintf("pull access denied for %s, repository does not exist or may require 'docker login'", repo)}
		}
		c.Parent, c.Config.Labels = img.id, maps.Clone(img.labels)
	case "LABEL":
		if c.Config.Labels == nil {
			c.Config.Labels = map[string]string{}
		}
		for _, w := range words(args) {
			k, v, ok := strings.Cut(w, "=")
			if !ok || k == "" {
				return &imagestore.BuildError{Message: fmt.Sprintf("LABEL names %q without a value", w)}
			}
			c.Config.Labels[k] = v
		}
	case "COPY", "ADD":
		digest, err := copied(words(args), files)
		if err != nil {
			return err
		}
		step = keyword + " " + digest
	case "RUN":
		say(" ---> Running in " + shortID(newImage(*c).id))
		if s.Run != nil {
			out, code := s.Run(ctx, args)
			for _, l := range out {
				say(l)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if code != 0 {
				return &imagestore.BuildError{Message: fmt.Sprintf("The command '/bin/sh -c %s' returned a non-zero code: %d", args, code)}
			}
		}
	case "USER", "ENV", "WORKDIR", "CMD", "ENTRYPOINT", "EXPOSE", "VOLUME", "ARG", "STOPSIGNAL", "SHELL", "HEALTHCHECK":
	default:
		return &imagestore.BuildError{Message: fmt.Sprintf("dockerfile parse error line %d: unknown instruction: %s", i+1, keyword)}
	}
	c.History = append(c.History, step)
	return nil
}

// copied checks a COPY's sources are in the context and returns a digest of what they hold
// and where it goes, so other content makes another image.
func copied(args []string, files map[string][]byte) (string, error) {
	var plain []string
	for _, a := range args {
		if !strings.HasPrefix(a, "--") {
			plain = append(plain, a)
		}
	}
	if len(plain) < 2 {
		return "", &imagestore.BuildError{Message: "COPY requires at least two arguments"}
	}
	h := sha256.New()
	for _, src := range plain[:len(plain)-1] {
		src = path.Clean(src)
		var names []string
		for name := range files {
			if src == "." || name == src || strings.HasPrefix(name, src+"/") {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			return "", &imagestore.BuildError{Message: fmt.Sprintf("COPY failed: file not found in build context or excluded by .dockerignore: stat %s: file does not exist", src)}
		}
		slices.Sort(names)
		for _, n := range names {
			fmt.Fprintf(h, "%s\x00%d\x00", n, len(files[n]))
			h.Write(files[n])
		}
	}
	return hex.EncodeToString(h.Sum(nil)) + " " + plain[len(plain)-1], nil
}

// readContext reads a build context's regular files by their clean names.
func readContext(r io.Reader) (map[string][]byte, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read the build context: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("read the build context: %w", err)
		}
		files[path.Clean(hdr.Name)] = b
	}
}

// instructions are a Dockerfile's lines that are not blank or comments, trimmed.
func instructions(dockerfile string) []string {
	var out []string
	for _, l := range strings.Split(dockerfile, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// words splits an instruction's arguments as the builder does: at spaces outside double
// quotes, which are removed, with backslash escapes inside them.
func words(s string) []string {
	var out []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quoted && ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case ch == '"':
			quoted, inWord = !quoted, true
		case (ch == ' ' || ch == '\t') && !quoted:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// shortID is the 12 hex digits Docker prints of an id.
func shortID(id string) string { return strings.TrimPrefix(id, "sha256:")[:12] }
