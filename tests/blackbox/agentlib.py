"""Shared helpers of the agents' tests (test_agents.py, test_tools.py): agent ids,
the agent URLs and making an agent."""

import itertools
import os
import urllib.parse

import harness
from harness import eq, expect

_n = itertools.count(1)


def new_id(prefix="ag"):
    """An agent id of this process not used before: PREFIX-PID-N."""
    return "%s-%d-%d" % (prefix, os.getpid(), next(_n))


def agent_url(aid, tail=""):
    return "/v1/agents/%s%s" % (aid, tail)


def files_url(aid, path):
    """URL of an agent file by the path the agent sees ('/workspace/a.txt')."""
    return agent_url(aid, "/files" + urllib.parse.quote(path, safe="/"))


def make_agent(srv, aid, key=harness._ABSENT, **body):
    """PUT of agent `aid` with `body`; asserts 201 and the id it answers with.
    Returns the answer."""
    j = expect(srv.put(agent_url(aid), json=body, key=key), 201).json()
    eq(j.get("id"), aid, "created agent id")
    return j
