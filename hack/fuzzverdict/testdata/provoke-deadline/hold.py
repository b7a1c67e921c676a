# Loaded by gdbexec.sh into gdb (non-stop mode): each thread that stops at the breakpoint is held
# for HOLD seconds and then resumed; the process's other threads never stop. gdb quits with the
# test binary's exit status.
import os
import threading

import gdb

HOLD = float(os.environ.get("HOLD", "0.05"))


def on_stop(ev):
    if not isinstance(ev, gdb.BreakpointEvent):
        return
    num = ev.inferior_thread.num if ev.inferior_thread else gdb.selected_thread().num

    def resume():
        gdb.execute("thread %d" % num, to_string=True)
        gdb.execute("continue &", to_string=True)

    threading.Timer(HOLD, lambda: gdb.post_event(resume)).start()


def on_exit(ev):
    code = ev.exit_code if hasattr(ev, "exit_code") else 1
    gdb.post_event(lambda: gdb.execute("quit %d" % code))


gdb.events.stop.connect(on_stop)
gdb.events.exited.connect(on_exit)
