// Command krewmanifest renders the krew plugin manifest template (krew/nodestate.yaml.tmpl) with
// the version, download URI and sha256 of every release archive listed in a checksums file.
//
//	go run ./hack/krewmanifest -template krew/nodestate.yaml.tmpl -checksums dist/checksums.txt \
//	    -version v0.1.0 -url-base https://github.com/.../releases/download/v0.1.0 -o dist/nodestate.yaml
//
// Archives are recognised by name, kubectl-nodestate_<version>_<os>_<arch>.tar.gz (.zip on
// windows); other lines of the checksums file are ignored. It is used by hack/dist.sh.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"text/template"
)

// Platform is one entry of spec.platforms.
type Platform struct {
	OS, Arch string
	Archive  string // file name of the archive
	URI      string
	SHA256   string
	Bin      string // the executable inside the archive, also spec.platforms[].bin
}

// Data is what the template sees.
type Data struct {
	Version   string
	Platforms []Platform
}

// osOrder gives the manifest a stable, readable order: linux, darwin, windows, then the rest.
var osOrder = map[string]int{"linux": 0, "darwin": 1, "windows": 2}

var (
	semverRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	shaRE    = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

func main() {
	var (
		tmplPath  = flag.String("template", "krew/nodestate.yaml.tmpl", "manifest template (Go text/template)")
		checksums = flag.String("checksums", "dist/checksums.txt", "sha256sum-style file listing the archives")
		version   = flag.String("version", "", "plugin version, vMAJOR.MINOR.PATCH[-pre] (required)")
		urlBase   = flag.String("url-base", "", "URL the archive names are appended to (required)")
		out       = flag.String("o", "-", "output file, - for stdout")
	)
	flag.Parse()
	if err := run(*tmplPath, *checksums, *version, *urlBase, *out); err != nil {
		fmt.Fprintln(os.Stderr, "krewmanifest: "+err.Error())
		os.Exit(1)
	}
}

func run(tmplPath, checksums, version, urlBase, out string) error {
	if !semverRE.MatchString(version) {
		return fmt.Errorf("-version %q is not a krew version (vMAJOR.MINOR.PATCH[-pre][+build])", version)
	}
	if urlBase == "" {
		return errors.New("-url-base is required")
	}
	sums, err := os.ReadFile(checksums)
	if err != nil {
		return err
	}
	platforms, err := parsePlatforms(sums, version, strings.TrimRight(urlBase, "/"))
	if err != nil {
		return fmt.Errorf("%s: %w", checksums, err)
	}
	tmpl, err := template.New("").Option("missingkey=error").ParseFiles(tmplPath)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := tmpl.ExecuteTemplate(&buf, tmplNameOf(tmplPath), Data{Version: version, Platforms: platforms}); err != nil {
		return err
	}
	if out == "-" {
		_, err = os.Stdout.Write(buf.Bytes())
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

func tmplNameOf(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[i+1:]
	}
	return path
}

// parsePlatforms reads "<sha256>  <file>" lines and keeps the archives of this version.
func parsePlatforms(sums []byte, version, urlBase string) ([]Platform, error) {
	archiveRE := regexp.MustCompile(`^kubectl-nodestate_` + regexp.QuoteMeta(version) + `_([a-z0-9]+)_([a-z0-9]+)\.(tar\.gz|zip)$`)
	var platforms []Platform
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 || !shaRE.MatchString(fields[0]) {
			return nil, fmt.Errorf("line %d: want \"<sha256>  <file>\", got %q", line, sc.Text())
		}
		name := strings.TrimPrefix(fields[1], "*") // sha256sum's binary-mode marker
		m := archiveRE.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		p := Platform{OS: m[1], Arch: m[2], Archive: name, URI: urlBase + "/" + name, SHA256: fields[0], Bin: "kubectl-nodestate"}
		if p.OS == "windows" {
			p.Bin += ".exe"
			if m[3] != "zip" {
				return nil, fmt.Errorf("line %d: the windows archive must be a .zip: %s", line, name)
			}
		}
		key := p.OS + "/" + p.Arch
		if seen[key] {
			return nil, fmt.Errorf("line %d: a second archive for %s: %s", line, key, name)
		}
		seen[key] = true
		platforms = append(platforms, p)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(platforms) == 0 {
		return nil, fmt.Errorf("no kubectl-nodestate_%s_<os>_<arch> archive listed", version)
	}
	sort.Slice(platforms, func(i, j int) bool {
		a, b := platforms[i], platforms[j]
		oa, oka := osOrder[a.OS]
		ob, okb := osOrder[b.OS]
		if !oka {
			oa = len(osOrder)
		}
		if !okb {
			ob = len(osOrder)
		}
		if oa != ob {
			return oa < ob
		}
		if a.OS != b.OS {
			return a.OS < b.OS
		}
		return a.Arch < b.Arch
	})
	return platforms, nil
}
