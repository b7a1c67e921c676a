#!/usr/bin/env bash
# How ../deadline.txt was made: provokes Go's fuzzing-coordinator deadline race (golang/go#75804)
# on demand instead of waiting for a loaded machine to hit it. A `go test -exec` wrapper that runs
# the test binary under gdb in non-stop mode and holds, for 50 ms, any thread that reaches the loop
# of context.(*cancelCtx).cancel that cancels the children: the parent's Done channel is already
# closed there but the children are not cancelled yet, which is where an OS preemption under load
# leaves the coordinator. The coordinator sees its -fuzztime context done while fuzzCtx.Err() is
# still nil and fails the target with a bare "context deadline exceeded". Needs gdb (Debian: gdb):
#
#   go test -ldflags='-w=false -s=false' -exec "$PWD/hack/fuzzverdict/testdata/provoke-deadline/gdbexec.sh" \
#     -run '^$' -fuzz '^FuzzDecodeMemory$' -fuzztime 8s -fuzzminimizetime 2s ./pkg/decode
#
# (-ldflags keeps the DWARF that go test strips.) The same GOFLAGS drive hack/fuzz.sh through its
# retry and flaked paths.
set -u
bin=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
ctxgo="$(go env GOROOT)/src/context/context.go"
line=$(grep -n 'for child := range c.children {' "$ctxgo" | head -1 | cut -d: -f1)
out=$(mktemp)
log=$(mktemp)
# gdb reads its commands from a pipe held open until it quits (the last command only starts the
# program), so its event loop keeps running the holds.
exec 3< <(
  printf '%s\n' 'set non-stop on' 'set pagination off' 'set confirm off' \
    "break $ctxgo:$line" "source $here/hold.py" "run $* >$out 2>&1 &"
  sleep 3600
)
feeder=$!
gdb -q -nx "$bin" <&3 >"$log" 2>&1
rc=$?
kill "$feeder" 2>/dev/null
cat "$out"
rm -f "$out" "$log"
exit "$rc"
