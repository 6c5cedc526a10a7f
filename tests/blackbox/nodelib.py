"""Shared helpers of the cross-node tests (test_nodes*.py); the nodes themselves
are harness.nodes / harness.node."""

import threading


def start_together(nodes):
    """Starts the (not started) nodes at once, a thread each, as a fleet comes up
    together; returns the exceptions of those that did not start ([] = all did)."""
    errs = []

    def up(s):
        try:
            s.start()
        except Exception as e:   # returned: the test says what it expected
            errs.append(e)
    ts = [threading.Thread(target=up, args=(s,)) for s in nodes]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errs
