#!/usr/bin/env bash
# Rewrites testdata/kubelet/MANIFEST from the vectors on disk: one line per checkpoint file, with
# the hashed texts its expectation has. Run it after a generator (hack/restorevec) adds or
# replaces vectors; pkg/decode's conformance fails while the tree and the list differ, so a
# vanished vector shows as a removed line in review.
set -euo pipefail
cd "$(dirname "$0")/../testdata/kubelet"
{
  printf '%s\n' '# The vectors: one line per checkpoint file under testdata/kubelet, with the expectation files' \
    '# it has under expected/ (<case>.json always; hashed = <case>.hashed.txt, data-hashed =' \
    '# <case>.data-hashed.txt). pkg/decode checks that the tree holds exactly these, no more, no fewer.' \
    '# Rewritten by hack/vectors-manifest.sh.'
  find . -path ./expected -prune -o -type f -name '*.json' -print | sed 's|^\./||' | LC_ALL=C sort |
    while read -r f; do
      stem=expected/${f%.json} line=$f
      [ -f "$stem.hashed.txt" ] && line="$line hashed"
      [ -f "$stem.data-hashed.txt" ] && line="$line data-hashed"
      echo "$line"
    done
} >MANIFEST
echo "testdata/kubelet/MANIFEST: $(grep -vc '^#' MANIFEST) vectors" >&2
