package fetch

import (
	"fmt"
	"os"
	"path"
	"slices"
)

// WriteFiles writes files (relative path -> content, as returned by ReadTar) under dir with
// mode 0600, creating dir and parent directories (0700): the checkpoints hold pod and container
// IDs, so they stay private. Writes go through os.Root, so no name (nor a symlink already in
// dir) can place a file outside dir.
func WriteFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names) // deterministic order, so a failure is reproducible
	for _, name := range names {
		if err := writeFile(root, name, files[name]); err != nil {
			return fmt.Errorf("write %s: %w", path.Join(dir, name), err)
		}
	}
	return nil
}

func writeFile(root *os.Root, name string, data []byte) error {
	if err := ValidatePaths([]string{name}); err != nil {
		return err
	}
	if parent := path.Dir(name); parent != "." {
		if err := root.MkdirAll(parent, 0o700); err != nil {
			return err
		}
	}
	if err := root.WriteFile(name, data, 0o600); err != nil {
		return err
	}
	// WriteFile keeps the mode of a file that already existed.
	return root.Chmod(name, 0o600)
}
