import hashlib
import json
import re


def slug(s):
    return re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(65536), b""):
            h.update(block)
    return h.hexdigest()


def load(path):
    with open(path) as f:
        return json.load(f)


ESCAPES = "\x1b[0m\x1b[1m"
